package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/agentd/agentd/session"
)

// ask answers a question of the conversation in words (/ask, or a line
// that starts with ?): the model reads the workspace with the read-only
// tools and answers; no plan is made and nothing is written. The answer
// prints as it streams in, and the chat keeps the turn (session.ChatStore.Ask,
// as the editors' agentd/chat/ask). A sensitive file the model wants to
// read is left out (the model is told), since nobody is asked mid-answer.
func (c *chat) ask(question string) {
	if strings.TrimSpace(question) == "" {
		c.con.Println("ask what? /ask how is the discount computed?  (or: ? how is the discount computed?)")
		return
	}
	ws, err := session.OpenWorkspace(c.root, 0)
	if err != nil {
		c.con.Println(fmt.Sprintf("agentd chat: %v", err))
		return
	}
	defer ws.Close()
	models, err := session.LoadModels(session.ModelOptions{Root: c.root, Model: c.o.model, StateDir: c.o.w.stateDir,
		Logger: slog.New(frontLog{say: func(line string) { c.con.Println("agentd chat: " + line) },
			next: slog.NewTextHandler(io.Discard, nil)})})
	if err != nil {
		c.con.Println(fmt.Sprintf("agentd chat: %v", err))
		return
	}
	defer models.Close()
	progress := func(line string) { c.con.Println(c.con.paint("90", "  "+line)) }
	started := false
	// The chat starts with its first turn, a question too (the same
	// session rule as a plan turn's NewChat).
	t, _, id, err := c.chats.Ask(c.a.ctx, session.ChatQuestion{ChatID: c.chatID, NewChat: true, Where: "at the terminal", Question: question,
		Answer: models.Answerer(ws, nil, progress), OnText: func(_ int, piece string) {
			c.con.Write(func() {
				started = true
				io.WriteString(c.a.stdout, piece)
			})
		}})
	c.started(id)
	if tn := (*session.TurnNotKeptError)(nil); errors.As(err, &tn) {
		c.con.Println("agentd chat: " + tn.Error())
		return
	}
	if started {
		c.con.Println("")
	}
	used := models.Planner.Used()
	switch {
	case err != nil && c.a.ctx.Err() != nil:
		c.con.Println("the answer was stopped; the chat keeps what was said")
	case err != nil:
		c.con.Println(fmt.Sprintf("agentd chat: no answer: %v", chatErr(err)))
	default:
		c.turns = append(c.turns, &chatTurn{Turn: t, tokens: used.InputTokens + used.OutputTokens, costUSD: used.CostUSD})
		if !started {
			c.con.Println(t.Answer)
		}
		if len(t.Read) > 0 {
			c.con.Println(c.con.paint("90", "read: "+strings.Join(t.Read, "; ")))
		}
	}
	if n := used.InputTokens + used.OutputTokens; n > 0 {
		c.con.Println(c.con.paint("90", fmt.Sprintf("turn %d (a question): %d tokens, $%.4f", len(c.turns), n, used.CostUSD)))
	}
}
