package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed ask_user.md
var askUserDesc string

// AskUserArgs are ask_user's arguments.
type AskUserArgs struct {
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
}

// AskUserOutput is ask_user's output.
type AskUserOutput struct {
	Answer string `json:"answer"`
}

const askUserSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "question": {"type": "string", "minLength": 1, "description": "The question, in one or two sentences."},
    "options": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true, "description": "Answers to choose from; omit for a free-text answer."}
  },
  "required": ["question"],
  "additionalProperties": false
}`

type askUserTool struct{ spec }

func newAskUser() Tool {
	return &askUserTool{spec{name: "ask_user", desc: askUserDesc, category: CategoryInput, risk: RiskLow, schema: askUserSchema}}
}

func (t *askUserTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[AskUserArgs](t.name, raw)
	d := Description{Title: "Ask: " + a.Question}
	if len(a.Options) > 0 {
		d.Detail = "options: " + strings.Join(a.Options, ", ")
	}
	return d
}

func (t *askUserTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[AskUserArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Question) == "" {
		return nil, errorf(CodeInvalidArgs, "ask_user: question is empty")
	}
	if env == nil || env.Ask == nil {
		return nil, errorf(CodeNoInteraction, "ask_user: nobody can answer %q: this run has no interactive front end (headless); run the plan from an editor or answer it in the plan instead", shorten(a.Question, 80))
	}
	answer, err := env.Ask(ctx, a.Question, a.Options)
	if err != nil {
		return nil, fmt.Errorf("ask_user: %w", err)
	}
	return &Result{Output: AskUserOutput{Answer: answer}}, nil
}
