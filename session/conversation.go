package session

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/review"
)

// A conversation is a run of turns (agentd chat at the terminal, an ACP
// session's prompts): each turn makes a plan from a request and runs it.
// The next turn's planner is told what the turns before it asked, planned,
// what the user decided at the review and why, what failed (with the end
// of the commands' output) and which turns the user undid; never the
// turns the user rewound (a chat's restore to before a turn), which the
// conversation keeps, to show and to bring back. The rule of
// what it is told lives here, once, for every front end that converses.

// Turn is what the next turns are told about one turn. A front end keeps
// it with its conversation (ACP saves it with the session).
type Turn struct {
	Request string `json:"request"`
	// PlanID is the plan made for the turn (a chat's turns: the run of
	// that plan, from any front end, is learned into the turn).
	PlanID    string   `json:"planId,omitempty"`
	PlanTitle string   `json:"planTitle,omitempty"`
	PlanSteps []string `json:"planSteps,omitempty"` // "id [tool] what it acts on"
	RunID     string   `json:"runId,omitempty"`
	// Status is the run's (running, completed, partial, failed,
	// cancelled); before it, TurnPlanning while the plan is made, and
	// cancelled or failed (with Failure, no PlanID) when the planning was
	// stopped or failed (ChatStore.PlanTurn). A question turn's is
	// cancelled when its answer was stopped.
	Status  engine.RunStatus `json:"status,omitempty"`
	Steps   []string         `json:"steps,omitempty"`   // "step w: completed", with reasons and errors
	Review  []string         `json:"review,omitempty"`  // "change X (step w): rejected, the user's reason: ..."
	Failure string           `json:"failure,omitempty"` // the failed steps with their errors and output
	Undone  bool             `json:"undone,omitempty"`
	// StartSnapshot is the run's start snapshot ("" without snapshots).
	StartSnapshot string `json:"startSnapshot,omitempty"`
	// Question marks a turn that asked a question: it was answered in
	// words (Answer), after reading what Read names, with no plan and no
	// change to the workspace.
	Question bool     `json:"question,omitempty"`
	Answer   string   `json:"answer,omitempty"`
	Read     []string `json:"read,omitempty"` // "read_file cart/cart.go (why)"
	// Rewound marks a turn taken back from the conversation (a chat's
	// restore to before a turn, what "conversation"): kept and shown, not
	// told to the planner of the next turns; RewindID is the rewind, whose
	// undo (ChatStore.Unrewind) brings it back.
	Rewound  bool   `json:"rewound,omitempty"`
	RewindID string `json:"rewindId,omitempty"`
	// Tokens is what the turn's model requests took (plan or answer),
	// when the provider reports usage.
	Tokens *TurnTokens `json:"tokens,omitempty"`
	// Guidance are the words the user gave the turn while it was going
	// (ChatStore.Queue with QueueGuidance), in order; the next turns'
	// planner is told them.
	Guidance []string `json:"guidance,omitempty"`
}

// TurnTokens are a turn's model tokens, summed over its requests.
type TurnTokens struct {
	Input  int `json:"input"`
	Output int `json:"output"`
	// Cost is what the requests cost in USD by the models' price tables
	// (llm.CostTable), 0 (omitted) when a model's price is unknown.
	Cost float64 `json:"cost,omitempty"`
}

// Conversation is a conversation's turns, oldest first.
type Conversation struct {
	Turns []*Turn `json:"turns,omitempty"`
}

// Add starts a turn for request with the plan made for it.
func (c *Conversation) Add(request string, plan *plans.Plan) *Turn {
	t := &Turn{Request: request}
	t.SetPlan(plan)
	c.Turns = append(c.Turns, t)
	return t
}

// AddAnswer records a question turn (t.Request the question, t.Answer,
// t.Read; t.Status "cancelled" when the user stopped the answer).
func (c *Conversation) AddAnswer(t Turn) *Turn {
	t.Question = true
	c.Turns = append(c.Turns, &t)
	return &t
}

// SetPlan records the plan the turn runs (after an edit, the edited one).
func (t *Turn) SetPlan(plan *plans.Plan) {
	if plan == nil {
		return
	}
	t.PlanTitle, t.PlanSteps = plan.Title, nil
	for _, s := range plan.Steps {
		t.PlanSteps = append(t.PlanSteps, fmt.Sprintf("%s [%s] %s", s.ID, dash(s.Tool), plans.StepTarget(s)))
	}
}

// Failed is the last turn when it failed and was not undone ("fix it"
// hands it back to the model), else nil.
func (c *Conversation) Failed() *Turn {
	told, _ := c.told()
	if n := len(told); n > 0 && told[n-1].Failure != "" && !told[n-1].Undone && !told[n-1].planless() {
		return told[n-1]
	}
	return nil
}

// told are the turns the next request is told, with their positions
// (1-based) among all the turns: every turn but the rewound ones.
func (c *Conversation) told() ([]*Turn, []int) {
	var told []*Turn
	var pos []int
	for i, t := range c.Turns {
		if !t.Rewound {
			told, pos = append(told, t), append(pos, i+1)
		}
	}
	return told, pos
}

// Undid marks the turn whose run was runID as undone (an undo of the last
// run, from this front end or another); false when no turn ran it.
func (c *Conversation) Undid(runID string) bool {
	for _, t := range c.Turns {
		if t.RunID == runID && runID != "" {
			t.Undone = true
			return true
		}
	}
	return false
}

// Learn records what the turn's run did: the steps' statuses, reasons and
// errors, the review's decisions with the user's reasons (from the
// journal j), and the failures with the end of the commands' output.
func (t *Turn) Learn(j *engine.Journal, st *engine.RunState) {
	if st == nil {
		return
	}
	t.RunID, t.Status = st.RunID, st.Status
	t.Steps, t.Review = nil, nil
	if len(st.Snapshots) > 0 {
		t.StartSnapshot = st.Snapshots[0]
	}
	var fail strings.Builder
	for _, s := range st.Steps {
		line := fmt.Sprintf("step %s: %s", s.ID, s.Status)
		if s.Reason != "" {
			line += " (" + s.Reason + ")"
		}
		if s.Error != "" {
			line += ": " + s.Error
		}
		t.Steps = append(t.Steps, line)
		if s.Status == engine.StepFailed {
			fmt.Fprintf(&fail, "%s\n", line)
			var out struct {
				Stdout string `json:"stdout"`
				Stderr string `json:"stderr"`
			}
			if json.Unmarshal(s.Output, &out) == nil && (out.Stdout != "" || out.Stderr != "") {
				fmt.Fprintf(&fail, "its output (the end):\n%s\n", tailLines(out.Stdout+out.Stderr, 40))
			}
		}
	}
	if st.Status == engine.RunFailed && fail.Len() == 0 && st.Error != "" {
		fmt.Fprintf(&fail, "the run failed: %s\n", st.Error)
	}
	t.Failure = strings.TrimSpace(fail.String())
	if j == nil {
		return
	}
	sets, _ := review.Recorded(j.Journal, st.RunID)
	for _, s := range sets {
		line := fmt.Sprintf("change %s (step %s): %s", s.ID, dash(s.StepID), s.Status())
		if s.Reason != "" {
			line += ", the user's reason: " + s.Reason
		}
		said := map[string]bool{s.Reason: true}
		for _, r := range s.Rejected {
			if k := r.Path + "\x00" + r.Reason; r.Reason != "" && !said[r.Reason] && !said[k] {
				said[k] = true
				line += fmt.Sprintf("; %s rejected, the user's reason: %s", r.Path, r.Reason)
			}
		}
		t.Review = append(t.Review, line)
	}
}

// Context is the conversation so far, for the planner, to put before the
// new request (where names the front end: "at the terminal", "in the
// editor"); "" before the first turn.
func (c *Conversation) Context(where string) string {
	return c.context(where, "\nNow the user asks (plan only this, in the light of the turns above):\n")
}

// QuestionContext is Context for a question the user asks now: it is to
// be answered in words, with no plan.
func (c *Conversation) QuestionContext(where string) string {
	return c.context(where, "\nNow the user asks a question (answer it in words, in the light of the turns above; make no plan):\n")
}

// answerLines bounds how much of an earlier answer the next turns are told.
const answerLines = 60

func (c *Conversation) context(where, now string) string {
	blocks, condensed := c.blocks()
	if len(blocks) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This request is one turn of a conversation %s. The turns so far, oldest first:\n", where)
	if len(condensed) > 0 {
		which := "Turns " + turnList(condensed) + " are"
		if len(condensed) == 1 {
			which = fmt.Sprintf("Turn %d is", condensed[0])
		}
		fmt.Fprintf(&b, "(%s condensed to fit: the requests, plans, results, failed steps, the user's review decisions and undos "+
			"are all here; the other step lines, command output and answers past %d lines are left out.)\n", which, condensedAnswerLines)
	}
	for _, bl := range blocks {
		b.WriteString(bl)
	}
	b.WriteString(now)
	return b.String()
}

// ChatContextTokens bounds what the turns before a request may take of it
// (a token taken as 4 characters). Over it, the oldest turns are condensed,
// one by one, oldest first, until the rest fits (Condensed); the newest
// keepWhole turns are never condensed, and what a condensed turn keeps (its
// request, plan, result, failed steps, the user's review decisions and
// reasons, its undo) is never left out, even when the whole stays over.
// Condensing is worked out anew for each request from the turns as the
// chat keeps them, which it never changes: nothing is lost, and a chat
// that shrinks (a deleted branch) or a larger bound gets them whole again.
var ChatContextTokens = 16000

const (
	keepWhole            = 2 // the newest turns never condensed
	condensedAnswerLines = 5 // what a condensed question turn keeps of its answer
)

// Condensed lists the turns (1-based, positions in Turns) the next
// request condenses to keep the conversation within ChatContextTokens;
// nil when it fits whole. A chat view shows it before the user sends.
func (c *Conversation) Condensed() []int {
	_, cond := c.blocks()
	if len(cond) == 0 {
		return nil
	}
	_, pos := c.told()
	out := make([]int, len(cond))
	for i, n := range cond {
		out[i] = pos[n-1]
	}
	return out
}

// blocks renders every turn told (not rewound) for the next request,
// numbered as told, condensing the oldest ones while the whole is over
// ChatContextTokens; the condensed are numbered as told too.
func (c *Conversation) blocks() ([]string, []int) {
	told, _ := c.told()
	blocks := make([]string, len(told))
	size := 0
	for i, t := range told {
		blocks[i] = t.block(i+1, false)
		size += EstimateTokens(blocks[i])
	}
	var condensed []int
	for i := 0; i < len(told)-keepWhole && size > ChatContextTokens; i++ {
		short := told[i].block(i+1, true)
		if len(short) >= len(blocks[i]) {
			continue
		}
		size += EstimateTokens(short) - EstimateTokens(blocks[i])
		blocks[i] = short
		condensed = append(condensed, i+1)
	}
	return blocks, condensed
}

// block is turn n as the next request is told it; condensed leaves out its
// step lines but the failed ones, the commands' output and the answer past
// condensedAnswerLines lines.
func (t *Turn) block(n int, condensed bool) string {
	var b strings.Builder
	if t.Question {
		fmt.Fprintf(&b, "\nTurn %d. The user asked a question: %s\n", n, t.Request)
		if len(t.Read) > 0 && !condensed {
			fmt.Fprintf(&b, "Read to answer it: %s\n", strings.Join(t.Read, "; "))
		}
		if t.Answer != "" {
			lines := answerLines
			if condensed {
				lines = condensedAnswerLines
			}
			fmt.Fprintf(&b, "The answer given:\n%s\n", headLines(t.Answer, lines))
		}
		if t.Status == engine.RunCancelled {
			b.WriteString("The user stopped the answer there.\n")
		}
		return b.String()
	}
	fmt.Fprintf(&b, "\nTurn %d. The user asked: %s\n", n, t.Request)
	for _, g := range t.Guidance {
		fmt.Fprintf(&b, "While it went, the user added (given to it as guidance): %s\n", g)
	}
	if t.planless() {
		switch t.Status {
		case TurnPlanning:
			b.WriteString("Its plan was still being made when this request was sent: no plan yet, nothing ran.\n")
		case engine.RunCancelled:
			b.WriteString("The user stopped the planning: no plan was made, nothing ran.\n")
		default:
			fmt.Fprintf(&b, "No plan was made, nothing ran: %s\n", t.Failure)
		}
		return b.String()
	}
	if t.PlanTitle != "" || len(t.PlanSteps) > 0 {
		fmt.Fprintf(&b, "The plan %q:\n", t.PlanTitle)
		for _, s := range t.PlanSteps {
			fmt.Fprintf(&b, "  - %s\n", s)
		}
	}
	if t.Status != "" {
		fmt.Fprintf(&b, "Result: %s\n", t.Status)
	}
	for _, s := range t.Steps {
		if !condensed || strings.Contains(s, ": "+string(engine.StepFailed)) {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	if len(t.Review) > 0 {
		b.WriteString("The user's review of its changes:\n")
		for _, r := range t.Review {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	if t.Failure != "" && !condensed {
		fmt.Fprintf(&b, "What failed:\n%s\n", t.Failure)
	}
	if t.Undone {
		b.WriteString("The user undid this turn's run: the workspace is back as it was before it.\n")
	}
	return b.String()
}

// planless is a plan turn whose plan was not made: still planning, or its
// planning stopped or failed (ChatStore.PlanTurn).
func (t *Turn) planless() bool {
	return !t.Question && t.PlanID == "" && t.PlanTitle == "" && len(t.PlanSteps) == 0 && t.RunID == "" &&
		(t.Status == TurnPlanning || t.Status == engine.RunCancelled || t.Status == engine.RunFailed)
}

// turnList says turns as "1-3, 5".
func turnList(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		} else {
			parts = append(parts, fmt.Sprint(ns[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// FixRequest is the request that hands a failed turn back to the model
// ("fix it"); its failure is in the context under "What failed".
const FixRequest = "The last turn failed (see what failed above). Fix what made it fail, without undoing what it did right."

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// headLines is the first n lines of s, with a line saying how many were
// left out.
func headLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n(%d more lines of the answer left out)", len(lines)-n)
	}
	return strings.Join(lines, "\n")
}
