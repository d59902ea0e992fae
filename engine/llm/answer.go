package llm

import (
	"context"
	"errors"
	"strings"

	"github.com/agentd/agentd/engine/plans"
)

// Answer is the model's answer to a question (Planner.Answer).
type Answer struct {
	// Text is the answer, in the model's words (Markdown).
	Text string
	// Context is what the model read to answer, in the order it read it.
	Context []plans.ContextItem
	// Read says each of them for people: "Read cart/cart.go (why)".
	Read []string
}

// answerGuide tells the model how to explore before it answers.
const answerGuide = `Before you answer you may call the read-only tools read_file, list_dir, search_files and search_code
to look at the workspace, for at most %d rounds; give each call a short "why". Then answer in words, without tool calls.`

// finalAnswerCall asks for the answer when the exploration is over.
const finalAnswerCall = "The exploration is over (%s). Answer the question now, in words, with no tool calls."

var wordsAnswer = answerKind{what: "answer", system: (*Planner).answerSystem,
	final: finalAnswerCall, asking: "writing the answer"}

func (p *Planner) answerSystem() string {
	return "You are agentd's assistant. The user asks a question about their workspace; answer it from what you read there, " +
		"briefly and exactly, in Markdown, naming the files (and lines) you rely on. You cannot change anything while you answer: " +
		"if the user wants a change, say what it would be and that they can ask for it as a request, which agentd makes into a plan " +
		"they review before it runs. Say so when you do not know."
}

// Answer answers a question (req.Request, with the conversation before it
// already composed in by the caller as for Create) in words: the model may
// read the workspace with the exploration tools, through the same gates
// as planning (sensitive files ask, ignore rules, unsaved buffers), then
// answers. No plan is made and nothing is written. req.OnText gets the
// answer as it streams in, req.OnProgress each read. Without a model the
// error wraps engine.ErrNoModel.
func (p *Planner) Answer(ctx context.Context, req CreateRequest) (*Answer, error) {
	if strings.TrimSpace(req.Request) == "" {
		return nil, errors.New("answer: the question is empty; say what you want to know")
	}
	if _, err := p.settings.Resolve(p.Model); err != nil {
		return nil, err
	}
	if err := p.settings.CheckImages(p.Model, req.Images); err != nil {
		return nil, err
	}
	user, err := p.userMessage(ctx, req, "Question", answerGuide)
	if err != nil {
		return nil, err
	}
	_, text, items, err := p.exploreFor(ctx, req, user, wordsAnswer)
	if err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, errors.New("answer: the model answered with no text; ask again, or say it another way")
	}
	a := &Answer{Text: text, Context: items}
	for i := range items {
		line := p.describeCall(&items[i])
		if items[i].Why != "" {
			line += " (" + items[i].Why + ")"
		}
		a.Read = append(a.Read, line)
	}
	return a, nil
}
