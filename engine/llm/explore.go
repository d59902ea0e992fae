package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
)

// DefaultExploreRounds is how many rounds of read-only tool calls the
// planner's model may make before it answers with the plan.
var DefaultExploreRounds = 6

// DefaultExploreTokens bounds what the exploration's tool results may add
// to the conversation (a token is taken as 4 characters); when it is used
// up the model is asked for the plan.
var DefaultExploreTokens = 24000

// ExploreTools are the tools the planner's model may call before it plans:
// read-only, through the same workspace (sandbox, ignore rules, unsaved
// buffers) as a plan's steps.
var ExploreTools = []string{"read_file", "list_dir", "search_files", "search_code"}

// Progress is what the planner reports while it makes a plan.
type Progress struct {
	// Message is for people: "mapping the repository", "Read engine/plan.go".
	Message string
	// Round of Rounds is the exploration round (1-based; 0 outside it).
	Round, Rounds int
}

// exploreGuide tells the model how to use exploration and what it implies
// for edits.
const exploreGuide = `Before you answer with the plan you may call the read-only tools read_file, list_dir, search_files and search_code
to look at the workspace, for at most %d rounds; give each call a short "why". Then answer with the plan as JSON only, without tool calls.
Edits that need a file's current text: plan them as "agent" steps (the model sees the file when it edits), or as edit_file steps whose
oldText you copied exactly from what you read here. Never guess an oldText. Write tools cannot run while you plan: put changes in the plan.`

// finalCall asks for the plan when the exploration is over.
const finalCall = "The exploration is over (%s). Answer now with the plan as JSON only, with no tool calls."

// exploreDefs are the exploration tools as the model sees them: each
// tool's schema with a "why" property added.
func (p *Planner) exploreDefs() []ToolDef {
	var defs []ToolDef
	for _, name := range ExploreTools {
		t, ok := p.tools.Get(name)
		if !ok {
			continue
		}
		schema := t.Schema()
		var m map[string]any
		if json.Unmarshal(schema, &m) == nil {
			props, _ := m["properties"].(map[string]any)
			if props != nil {
				props["why"] = map[string]any{"type": "string", "description": "Why you look at this, in a few words (shown to the user)."}
			}
			delete(m, "$schema")
			if data, err := json.Marshal(m); err == nil {
				schema = data
			}
		}
		defs = append(defs, ToolDef{Name: name, Description: t.Description(), Schema: schema})
	}
	return defs
}

// exploreCall runs one tool call of the exploration and returns what goes
// back to the model and, if the call read something, the context item.
func (p *Planner) exploreCall(ctx context.Context, req CreateRequest, tc ToolCall) (string, *plans.ContextItem, error) {
	ws := req.Workspace
	if !slices.Contains(ExploreTools, tc.Name) {
		if t, ok := p.tools.Get(tc.Name); ok && t.Category() != tools.CategoryRead {
			return fmt.Sprintf(`{"error": "%s is not available while planning: only %s may be called now. Put changes in the plan as steps."}`,
				tc.Name, strings.Join(ExploreTools, ", ")), nil, nil
		}
		return fmt.Sprintf(`{"error": "unknown tool %q while planning; use %s"}`, tc.Name, strings.Join(ExploreTools, ", ")), nil, nil
	}
	if ws == nil {
		return `{"error": "no workspace is open; answer with the plan"}`, nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(orEmptyObject(tc.Args), &raw); err != nil {
		return fmt.Sprintf(`{"error": %q}`, "the arguments are not a JSON object: "+err.Error()), nil, nil
	}
	why := ""
	if w, ok := raw["why"]; ok {
		_ = json.Unmarshal(w, &why)
		delete(raw, "why")
	}
	args, _ := json.Marshal(raw)
	probe := &plans.Plan{Steps: []*plans.Step{{ID: "explore", Tool: tc.Name, Args: args}}}
	if probs := plans.ValidatePlan(probe, p.tools, 0); len(probs) > 0 {
		var msgs []string
		for _, pr := range probs {
			msgs = append(msgs, pr.Field+": "+pr.Message)
		}
		return fmt.Sprintf(`{"error": %q}`, tc.Name+": "+strings.Join(msgs, "; ")), nil, nil
	}
	t, _ := p.tools.Get(tc.Name)
	// The one gate for what a model reads (approval.ReadGate): a sensitive
	// file asks the user through the front end, or is left out.
	v, err := req.readGate().Check(ctx, tc.Name, approval.ReadPaths(t, args))
	if err != nil {
		return "", nil, err
	}
	if !v.Allowed {
		req.progress(Progress{Message: "not read: " + v.Reason})
		return toolResultText(&engine.ToolCallResult{Error: "not read: " + v.Reason}), nil, nil
	}
	res, err := t.Run(ctx, &tools.Env{WS: ws, RunID: "plan", StepID: "explore"}, args)
	item := &plans.ContextItem{Tool: tc.Name, Args: args, Why: why}
	if err != nil {
		return toolResultText(&engine.ToolCallResult{Error: tools.ModelText(err)}), nil, nil
	}
	var out any
	if res != nil {
		out = res.Output
	}
	return toolResultText(&engine.ToolCallResult{Output: out}), item, nil
}

// readGate is the request's approval.ReadGate: the one rule for what a
// model may read, asking through the front end's hook.
func (req CreateRequest) readGate() approval.ReadGate {
	return approval.ReadGate{WS: req.Workspace, RunID: "plan", StepID: "explore", Planning: true, Ask: req.Approve}
}

// progress reports pr when the caller listens.
func (req CreateRequest) progress(pr Progress) {
	if req.OnProgress != nil {
		req.OnProgress(pr)
	}
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// describeCall is the progress line of a tool call.
func (p *Planner) describeCall(item *plans.ContextItem) string {
	if t, ok := p.tools.Get(item.Tool); ok {
		if d, ok := t.(tools.Describer); ok {
			desc := d.Describe(item.Args)
			if desc.Title != "" {
				return desc.Title
			}
		}
	}
	return item.Tool + " " + string(item.Args)
}

// explore runs the conversation up to the model's plan answer: rounds of
// read-only tool calls (each recorded as context), then, if the model is
// still exploring when the rounds or the exploration budget are used up,
// one final call that asks for the plan now. It returns the messages so
// far (for a repair round) and the answer's text.
func (p *Planner) explore(ctx context.Context, req CreateRequest, user string) ([]Message, string, []plans.ContextItem, error) {
	return p.exploreFor(ctx, req, user, planAnswer)
}

// answerKind is what an exploration ends with: a plan (JSON, by the plan
// schema) or an answer in words (Answer).
type answerKind struct {
	what   string // "plan" or "answer": the word in errors
	system func(p *Planner) string
	json   *OutputSchema
	final  string // the text asking for it when the exploration is over
	asking string // the progress line for that call
}

var planAnswer = answerKind{what: "plan", system: (*Planner).system,
	json: &OutputSchema{Name: "plan", Schema: planSchema}, final: finalCall, asking: "asking for the plan"}

func (p *Planner) exploreFor(ctx context.Context, req CreateRequest, user string, kind answerKind) ([]Message, string, []plans.ContextItem, error) {
	rounds := req.ExploreRounds
	if rounds == 0 {
		rounds = DefaultExploreRounds
	}
	rounds = max(rounds, 0)
	budget := req.ExploreTokens
	if budget <= 0 {
		budget = DefaultExploreTokens
	}
	progress := func(pr Progress) {
		if req.OnProgress != nil {
			req.OnProgress(pr)
		}
	}
	msgs := []Message{{Role: "user", Content: user, Images: req.Images}}
	var items []plans.ContextItem
	used := 0
	over := ""
	for round := 0; ; round++ {
		r := &Request{System: kind.system(p), Messages: msgs}
		final := round >= rounds || over != ""
		if !final {
			r.Tools = p.exploreDefs()
		} else {
			r.JSON = kind.json
			if rounds > 0 {
				if over == "" {
					over = fmt.Sprintf("all %d rounds are used", rounds)
				}
				msgs = append(msgs, Message{Role: "user", Content: fmt.Sprintf(kind.final, over)})
				r.Messages = msgs
				progress(Progress{Message: kind.asking})
			}
		}
		if req.Guidance != nil {
			for _, g := range req.Guidance() {
				msgs = append(msgs, Message{Role: "user", Content: engine.GuidancePrefix + g})
			}
			r.Messages = msgs
		}
		r.OnText = req.OnText
		if !final || rounds == 0 {
			// A slow or hung model shows as this, with the time it takes.
			pr := Progress{Message: "waiting for the model"}
			if !final {
				pr.Round, pr.Rounds = round+1, rounds
			}
			progress(pr)
		}
		resp, err := p.call(ctx, req.Budget, r)
		if err != nil {
			if round > 0 {
				return nil, "", items, fmt.Errorf("%s (exploration round %d): %w", kind.what, round+1, err)
			}
			return nil, "", items, fmt.Errorf("%s: %w", kind.what, err)
		}
		if len(resp.ToolCalls) == 0 {
			return msgs, resp.Text, items, nil
		}
		if final {
			return nil, "", items, fmt.Errorf("%s: the model kept calling tools after %s and the call that asked for the %s; "+
				"use a model that follows tool-use instructions, or set the exploration rounds to 0", kind.what, over, kind.what)
		}
		msgs = append(msgs, Message{Role: "assistant", Content: resp.Text, ToolCalls: resp.ToolCalls})
		for i, tc := range resp.ToolCalls {
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("explore_%d_%d", round, i)
				resp.ToolCalls[i].ID = tc.ID
			}
			var content string
			var item *plans.ContextItem
			if over != "" {
				content = `{"error": "the exploration budget is used up; answer with the ` + kind.what + `"}`
			} else {
				var err error
				content, item, err = p.exploreCall(ctx, req, tc)
				if err == nil {
					err = ctx.Err()
				}
				if err != nil {
					return nil, "", items, err
				}
			}
			if item != nil {
				items = append(items, *item)
				progress(Progress{Message: p.describeCall(item), Round: round + 1, Rounds: rounds})
			}
			used += len(content) / 4
			if used > budget && over == "" {
				over = fmt.Sprintf("the exploration budget of %d tokens is used", budget)
			}
			msgs = append(msgs, Message{Role: "tool", ToolCallID: tc.ID, Content: content})
		}
	}
}

// String is the progress line: the message, with the round when exploring.
func (p Progress) String() string {
	if p.Round > 0 && p.Rounds > 0 {
		return fmt.Sprintf("exploring (round %d of %d): %s", p.Round, p.Rounds, p.Message)
	}
	return p.Message
}
