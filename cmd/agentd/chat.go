package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// agentd chat: a conversation at the terminal. Each turn makes a plan from
// what the user typed (with the repository map and exploration, as agentd
// plan does), shows it and runs it with the usual review (runWith); the
// turn (plan, review decisions and reasons, results, failures) is handed
// to the next turn's planner as context (session.Conversation, which ACP
// sessions use too). Wiring only: planning, running, reviewing, undoing
// and what a turn tells the next are the core's.

type chatOptions struct {
	w       wsFlags
	model   string
	yes     bool
	review  string
	verbose bool
	explore int
	resume  string // --resume: the chat to continue
	list    bool   // --list: list the chats and end
}

// chatTurn is one turn: what the core keeps of it for the next turns, and
// its planning's token use and cost for the terminal's usage line.
type chatTurn struct {
	*session.Turn
	plan    *plans.Plan
	tokens  int
	costUSD float64
}

const chatHelp = `Type what you want changed; each turn makes a plan, shows it and runs it with the review.
  /ask Q, ? Q   ask a question: answered in words from the workspace, no plan, nothing written
  /plan         show the last plan; the next plan waits for [r]un/[e]dit/[q]uit before it runs
  /undo         undo the last run (the same undo as agentd undo)
  /diff         what the last turn's run changed (from its start snapshot to now)
  /runs         the runs of this workspace
  /model [M]    show or set the model (provider:model or a profile)
  /help         this help
  f             after a turn that failed: hand the failure back to the model ("fix it")
  Ctrl-D        end the conversation`

func newChatCmd(a *app) *cobra.Command {
	var o chatOptions
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "a conversation: each request is planned, shown, run and reviewed, and kept as context",
		Long: `A conversation with the model at the terminal (also 'agentd' with no arguments on a
terminal). Each turn makes a plan from your request, with the repository map and exploration,
shows it and runs it with the usual review; the turn (plan, your review decisions and
reasons, results, failures) is context for the next. /help lists the commands.

The conversation is kept as a chat of the workspace, the same chats the editors (VS Code,
Neovim) and ACP sessions show: --list lists them, --resume CHAT continues one, wherever it
was started.`,
		Args: noArgs,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			return cmdChat(a, o)
		}),
	}
	fs := cmd.Flags()
	addWSFlags(fs, &o.w)
	fs.StringVar(&o.model, "model", "", "the `MODEL` (provider:model or a profile; default AGENTD_MODEL or the config file)")
	fs.BoolVar(&o.yes, "yes", false, "answer yes to every approval and review")
	fs.StringVar(&o.review, "review", "", "show file changes `MODE`: before, after or none (default: before)")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "show the model's text as it streams in while it plans")
	fs.StringVar(&o.resume, "resume", "", "continue the chat `CHAT` (agentd chat --list shows them), started here, in an editor or over ACP")
	fs.BoolVar(&o.list, "list", false, "list the workspace's chats, the latest first, and end")
	fs.IntVar(&o.explore, "explore", 0, "let the model read and search the workspace for up to `N` rounds before each plan (default 6; -1: none)")
	completeDirs(cmd, "workspace", "state-dir")
	completeWords(cmd, "review", "before", "after", "none")
	return cmd
}

type chat struct {
	a       *app
	o       chatOptions
	root    string
	j       *engine.Journal
	con     *console
	turns   []*chatTurn
	chats   *session.ChatStore
	chatID  string // the chat this conversation is kept as ("" until its first turn)
	confirm bool   // /plan: the next plan waits for r/e/q
}

func cmdChat(a *app, o chatOptions) int {
	// The workspace is accepted (not /, not the home directory, a state
	// dir outside it) before anything reaches a model: the first turn's
	// planner sends the file listing, so refusing only when a plan runs
	// is too late. The same rules as plan, map and run.
	if !checkPlaces("chat", o.w.dir, o.w.stateDir, o.w.allowBroad, a.stderr) {
		return exitUsage
	}
	ws, err := workspace.Open(o.w.dir, workspace.Options{})
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd chat: workspace %s: %v\n", o.w.dir, err)
		return exitUsage
	}
	root := ws.Root()
	ws.Close()
	if o.list {
		return listChats(a, o, root)
	}
	if !chatModelReady(root, o.model, a.stderr) {
		return exitUsage
	}
	j, err := session.OpenJournal(o.w.stateDir, root, nil)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd chat: %v\n", err)
		return exitFailed
	}
	c := &chat{a: a, o: o, root: root, j: j, con: newConsole(a.stdout, stdin), chats: session.NewChatStore(j)}
	resumed := ""
	if o.resume != "" {
		ch, err := c.chats.Get(o.resume)
		if err != nil {
			fmt.Fprintf(a.stderr, "agentd chat --resume: %v\n", chatErr(err))
			return exitUsage
		}
		c.chatID = ch.ID
		resumed = fmt.Sprintf("\ncontinuing chat %s %q (%d turn%s before this one)", ch.ID, ch.Title, len(ch.Turns), plural(len(ch.Turns)))
	}
	c.con.Println(c.con.paint("1", "agentd chat") + " in " + root + c.modelNote() + resumed + "\n/help lists the commands; Ctrl-D ends the conversation.")
	for {
		q := "›"
		if c.failed() != nil {
			q = "› (f + Enter: fix it)"
		}
		line, err := c.con.Prompt(a.ctx, "", q)
		switch {
		case errors.Is(err, errNoAnswer):
			c.con.Println(fmt.Sprintf("end of the conversation (%d turn%s)", len(c.turns), plural(len(c.turns))))
			return exitOK
		case err != nil:
			return exitCancelled
		}
		if a.ctx.Err() != nil {
			return exitCancelled
		}
		c.command(line)
	}
}

func (c *chat) modelNote() string {
	if c.o.model != "" {
		return " (model " + c.o.model + ")"
	}
	return ""
}

// failed is the last turn when it failed and was not undone.
func (c *chat) failed() *session.Turn {
	if c.chatID == "" {
		return nil
	}
	ch, err := c.chats.Get(c.chatID)
	if err != nil {
		return nil
	}
	return ch.Failed()
}

// started notes the chat id that a first turn started (a plan or a
// question: session's NewChat), and says how to continue it.
func (c *chat) started(id string) {
	if id != "" && c.chatID == "" {
		c.chatID = id
		c.con.Println(c.con.paint("90", fmt.Sprintf("chat %s (agentd chat --resume %s continues it, here or in an editor)", id, id)))
	}
}

// errNoPlan is a turn whose planning failed; makePlan said why.
var errNoPlan = errors.New("no plan")

// chatErr words a chat store error for the terminal.
func chatErr(err error) error {
	var nf *session.ChatNotFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("no chat %q in this workspace: agentd chat --list shows the chats", nf.ID)
	}
	return err
}

// listChats prints the workspace's chats, the latest first.
func listChats(a *app, o chatOptions, root string) int {
	j, err := session.OpenJournal(o.w.stateDir, root, nil)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd chat: %v\n", err)
		return exitFailed
	}
	list, err := session.NewChatStore(j).List()
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd chat --list: %v\n", err)
		return exitFailed
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "no chats in this workspace yet; agentd chat starts one")
		return exitOK
	}
	for _, ch := range list {
		fmt.Fprintf(a.stdout, "%s  %s  %2d turn%s  %s\n", ch.ID, ch.UpdatedAt.Local().Format("2006-01-02 15:04"), ch.Turns, plural(ch.Turns), orDash(ch.Title))
	}
	fmt.Fprintln(a.stdout, "agentd chat --resume CHAT continues one")
	return exitOK
}

func (c *chat) wsArgs(args ...string) []string {
	args = append(args, "--workspace", c.root)
	if c.o.w.stateDir != "" {
		args = append(args, "--state-dir", c.o.w.stateDir)
	}
	return args
}

// sub runs another agentd command in this process (undo, runs, snapshot
// diff), so the chat means by them what they mean everywhere.
func (c *chat) sub(args ...string) int {
	var code int
	c.con.Hold(func() { code = runCLI(c.a.ctx, args, stdin, c.a.stdout, c.a.stderr) })
	return code
}

func (c *chat) command(line string) {
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case line == "":
		return
	case word == "/help" || word == "/?" || line == "?":
		c.con.Println(chatHelp)
	case word == "/undo":
		if c.sub(c.wsArgs("undo")...) == exitOK {
			for i := len(c.turns) - 1; i >= 0; i-- {
				if !c.turns[i].Undone && c.turns[i].StartSnapshot != "" {
					c.turns[i].Undone = true
					break
				}
			}
		}
	case word == "/ask":
		c.ask(rest)
	case strings.HasPrefix(line, "?") && line != "?":
		c.ask(strings.TrimSpace(line[1:]))
	case word == "/runs":
		c.sub(c.wsArgs("runs")...)
	case word == "/diff":
		var last *chatTurn
		for i := len(c.turns) - 1; i >= 0 && last == nil; i-- {
			if c.turns[i].StartSnapshot != "" {
				last = c.turns[i]
			}
		}
		if last == nil {
			c.con.Println("no run of this conversation took a snapshot yet: nothing to diff")
			return
		}
		c.sub(c.wsArgs("snapshot", "diff", last.StartSnapshot)...)
	case word == "/model":
		if rest != "" {
			c.o.model = rest
		}
		if c.o.model == "" {
			c.con.Println("the model is the configured one (AGENTD_MODEL or the config file); /model provider:model sets it")
		} else {
			c.con.Println("model: " + c.o.model)
		}
	case word == "/plan":
		if n := len(c.turns); n > 0 && c.turns[n-1].plan != nil {
			showPlan(c.con, c.turns[n-1].plan)
		}
		c.confirm = true
		c.con.Println("the next plan will wait for [r]un, [e]dit or [q]uit before it runs")
	case strings.HasPrefix(word, "/"):
		c.con.Println(fmt.Sprintf("unknown command %s; /help lists them", word))
	case (line == "f" || line == "F") && c.failed() != nil:
		// The failure (step, error, the end of its output) is in the
		// context, under the last turn's "What failed".
		c.turn("fix it", session.FixRequest)
	default:
		c.turn(line, line)
	}
}

// turn plans from request (with the conversation so far), shows the plan,
// runs it with the review, and keeps what happened.
func (c *chat) turn(shown, request string) {
	t := &chatTurn{}
	budget := engine.NewBudget(0, 0)
	var used engine.Usage
	// The chat's turns before this one, as every conversation's planner
	// is told them (session.ChatStore.PlanTurn); the chat starts with
	// the first turn that makes a plan.
	p, id, err := c.chats.PlanTurn(c.a.ctx, session.ChatTurn{ChatID: c.chatID, NewChat: true, Where: "at the terminal",
		Request: shown, Ask: request,
		Plan: func(ctx context.Context, request string) (*plans.Plan, error) {
			p, _ := makePlan(ctx, "chat", request, c.root, c.o.model, c.a.stderr,
				planOpts{stateDir: c.o.w.stateDir, budget: budget, used: &used, verbose: c.o.verbose, explore: c.o.explore,
					con: c.con, yes: c.o.yes})
			if p == nil {
				return nil, errNoPlan // makePlan said why
			}
			return p, nil
		},
		Keep: func(p *plans.Plan) (*plans.Plan, error) {
			p.ID = requestPlanID(shown, time.Now())
			return p, nil
		}})
	t.tokens, t.costUSD = used.InputTokens+used.OutputTokens, used.CostUSD
	c.started(id)
	if tn := (*session.TurnNotKeptError)(nil); errors.As(err, &tn) {
		c.con.Println("agentd chat: " + tn.Error())
		err = nil
	}
	if err != nil && !errors.Is(err, errNoPlan) {
		c.con.Println(fmt.Sprintf("agentd chat: %v", chatErr(err)))
	}
	if p == nil {
		c.con.Println("no plan this turn; say it another way, or /help")
		return
	}
	t.plan = p
	t.Turn = &session.Turn{Request: shown}
	t.SetPlan(p)
	c.turns = append(c.turns, t)
	if c.confirm {
		c.confirm = false
		hint := func(args ...string) string { return hintCommand(c.root, c.o.w.stateDir, args...) }
		np, _ := confirmPlan(c.a.ctx, c.con, p, c.j, c.o.yes, hint)
		if np == nil {
			t.Status = "not run"
			c.usage(t, nil)
			return
		}
		p, t.plan = np, np
		t.SetPlan(np)
		c.chats.PlanChanged(c.a.ctx, np)
	} else {
		if _, err := session.NewPlanStore(c.j, nil).Store(p, "model", "created from a request"); err != nil {
			c.con.Println(fmt.Sprintf("agentd chat: cannot save the plan: %v", err))
			return
		}
		showPlan(c.con, p)
	}
	lvl, file := planLogLevel(c.o.verbose).String(), ""
	ro := runOptions{planPath: c.j.PlanFile(p.ID), wsDir: c.root, stateDir: c.o.w.stateDir, review: c.o.review, yes: c.o.yes,
		allowBroad: c.o.w.allowBroad,
		model:      c.o.model, parallel: 4, stepTimeout: plans.DefaultStepTimeout, log: logFlags{file: &file, level: &lvl}, brief: true}
	c.con.Hold(func() { runWith(c.a.ctx, ro, c.a.stdout, c.a.stderr) })
	st := c.runOf(p.ID)
	t.Learn(c.j, st)
	c.chats.LearnRun(context.WithoutCancel(c.a.ctx), st) // the chat's turn, as the run's own session learned it
	c.usage(t, st)
}

// usage prints the turn's token use and cost (planning and run).
func (c *chat) usage(t *chatTurn, st *engine.RunState) {
	tokens, cost := t.tokens, t.costUSD
	if st != nil {
		tokens += st.Tokens
		cost += st.CostUSD
	}
	line := fmt.Sprintf("turn %d: %s; %d token%s, $%.4f", len(c.turns), orDash(string(t.Status)), tokens, plural(tokens), cost)
	c.con.Println(c.con.paint("90", line))
	if t.Failure != "" {
		c.con.Println(c.con.paint("33", "the turn failed; f + Enter hands the failure back to the model (fix it), /undo undoes the run"))
	}
}

// runOf is the newest run of the plan id in the journal.
func (c *chat) runOf(planID string) *engine.RunState {
	runs, err := c.j.Runs()
	if err != nil {
		return nil
	}
	for i := range runs {
		if runs[i].PlanID == planID {
			return &runs[i]
		}
	}
	return nil
}
