package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	agentsession "github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// maxShownOutput is how much of a step's output a tool call shows (the
// tail; the step's full output stays in the run state).
const maxShownOutput = 64 << 10

// shownText is the last maxShownOutput bytes of text, of total bytes in
// all, with a line saying what is not shown when that is not all.
func shownText(text string, total int) string {
	text = lastBytes(text, maxShownOutput)
	if total > len(text) {
		text = fmt.Sprintf("[… the first %d of %d bytes are not shown: a tool call shows the last %d …]\n", total-len(text), total, maxShownOutput) + text
	}
	return text
}

// lastBytes is at most the last n bytes of s, from a rune's start.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// watcher turns one run's engine events into session/update
// notifications: the plan (whole list each time), a tool call per step,
// its diffs and output, the model's text and the usage.
type watcher struct {
	s *session

	ready chan struct{} // closed by setRun

	mu      sync.Mutex
	run     *engine.Run
	plan    *plans.Plan
	status  map[string]engine.StepStatus
	content map[string][]sdk.ToolCallContent
	output  map[string]*strings.Builder
	// streamed counts the bytes of each step's output, shown or not.
	streamed map[string]int
	talking  string // the step whose model text was streamed last
	// pendingSeen counts the approvalPending events of each tool call.
	pendingSeen map[sdk.ToolCallId]int
}

func newWatcher(s *session, plan *plans.Plan) *watcher {
	return &watcher{s: s, ready: make(chan struct{}), plan: plan.Clone(), status: map[string]engine.StepStatus{}, pendingSeen: map[sdk.ToolCallId]int{},
		content: map[string][]sdk.ToolCallContent{}, output: map[string]*strings.Builder{},
		streamed: map[string]int{}}
}

func (w *watcher) setRun(r *engine.Run) {
	w.mu.Lock()
	w.run = r
	w.mu.Unlock()
	close(w.ready)
}

func (w *watcher) callID(runID, stepID string) sdk.ToolCallId {
	return sdk.ToolCallId(runID + "/" + stepID)
}

// OnEvent runs on the run's subscriber goroutine, in order.
func (w *watcher) OnEvent(ev engine.Event) {
	s := w.s
	if ev.Type == engine.EventPlanUpdated || ev.Type == engine.EventChangeProposed {
		// Events that need the run may come before Start has returned it.
		<-w.ready
	}
	w.mu.Lock()
	run := w.run
	w.mu.Unlock()
	switch ev.Type {
	case engine.EventPlanUpdated:
		if run != nil {
			if p := run.Plan(); p != nil {
				w.mu.Lock()
				w.plan = p
				w.mu.Unlock()
			}
		}
		w.sendPlan()
	case engine.EventRunStarted:
		w.sendPlan()
	case engine.EventStepStarted, engine.EventStepRetrying:
		w.setStatus(ev.StepID, engine.StepRunning)
		w.toolCall(ev, sdk.ToolCallStatusInProgress)
		w.sendPlan()
	case engine.EventApprovalPending:
		// The event can reach us after the approval was answered (it goes
		// through the scheduler; the request goes straight out): a
		// pending after the answer would be stale.
		id := w.callID(ev.RunID, ev.StepID)
		w.mu.Lock()
		w.pendingSeen[id]++
		seen := w.pendingSeen[id]
		w.mu.Unlock()
		if w.s.approvalsAnswered(id) < seen {
			w.toolCall(ev, sdk.ToolCallStatusPending)
		}
	case engine.EventStepProgress:
		if ev.Status == string(engine.StepRunning) {
			w.toolCall(ev, sdk.ToolCallStatusInProgress)
		}
	case engine.EventStepOutput:
		if ev.Stream == "model" {
			w.mu.Lock()
			first := w.talking != ev.StepID
			w.talking = ev.StepID
			w.mu.Unlock()
			s.chunk(ev.Text, first)
			break
		}
		w.addOutput(ev)
	case engine.EventChangeProposed:
		if run != nil {
			if cs, ok := run.Change(ev.ChangeID); ok {
				w.addDiffs(ev, cs)
			}
		}
	case engine.EventStepFinished:
		w.finish(ev, engine.StepCompleted, sdk.ToolCallStatusCompleted, "")
	case engine.EventStepFailed:
		w.finish(ev, engine.StepFailed, sdk.ToolCallStatusFailed, ev.Error)
	case engine.EventStepSkipped:
		// The engine skips a step that did not do its work (its approval
		// or its change set rejected, or recovery gave it up): ACP has no
		// skipped, and completed would claim the work was done.
		w.finish(ev, engine.StepSkipped, sdk.ToolCallStatusFailed, "skipped: "+ev.Reason)
	case engine.EventStepBlocked:
		w.finish(ev, engine.StepBlocked, sdk.ToolCallStatusFailed, "blocked: "+ev.Reason)
	case engine.EventStepCancelled:
		w.finish(ev, engine.StepCancelled, sdk.ToolCallStatusFailed, "cancelled")
	case engine.EventRunFinished:
		w.sendPlan()
	}
}

func (w *watcher) setStatus(id string, st engine.StepStatus) {
	w.mu.Lock()
	w.status[id] = st
	w.mu.Unlock()
}

func (w *watcher) sendPlan() {
	w.mu.Lock()
	entries := planEntries(w.plan, w.status)
	w.mu.Unlock()
	w.s.send(sdk.UpdatePlan(entries...), true)
}

// planEntries mirrors the plan's steps and their statuses. ACP knows only
// pending, in_progress and completed; how a finished step ended is said
// in the entry's text.
func planEntries(p *plans.Plan, status map[string]engine.StepStatus) []sdk.PlanEntry {
	out := make([]sdk.PlanEntry, 0, len(p.Steps))
	for _, st := range p.Steps {
		e := sdk.PlanEntry{Content: st.ID + ": " + stepTitle(st), Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusPending}
		if !st.IsCritical() {
			e.Priority = sdk.PlanEntryPriorityLow
		}
		switch s := status[st.ID]; s {
		case engine.StepRunning, engine.StepRetrying, engine.StepWaiting:
			e.Status = sdk.PlanEntryStatusInProgress
		case engine.StepCompleted:
			e.Status = sdk.PlanEntryStatusCompleted
		case engine.StepFailed, engine.StepSkipped, engine.StepBlocked, engine.StepCancelled:
			e.Status = sdk.PlanEntryStatusCompleted
			e.Content += " (" + string(s) + ")"
		}
		out = append(out, e)
	}
	return out
}

// stepTitle is a step's description, or what it does.
func stepTitle(st *plans.Step) string {
	if st.Description != "" {
		return st.Description
	}
	if st.Tool != "" {
		return st.Tool
	}
	return string(st.EffectiveKind()) + " step"
}

func (w *watcher) step(id string) *plans.Step {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.plan == nil {
		return nil
	}
	return w.plan.Step(id)
}

// toolKind maps a step to ACP's tool kinds.
func toolKind(st *plans.Step) sdk.ToolKind {
	if st == nil {
		return sdk.ToolKindOther
	}
	switch st.EffectiveKind() {
	case plans.KindTool:
	case plans.KindLLM, plans.KindAgent:
		return sdk.ToolKindThink
	default:
		return sdk.ToolKindOther
	}
	switch st.Tool {
	case "move_file":
		return sdk.ToolKindMove
	case "delete_file":
		return sdk.ToolKindDelete
	case "search_code", "search_files":
		return sdk.ToolKindSearch
	}
	if t, ok := agentsession.BuiltinTools().Get(st.Tool); ok {
		switch t.Category() {
		case agentsession.CategoryRead:
			return sdk.ToolKindRead
		case agentsession.CategoryWrite:
			return sdk.ToolKindEdit
		case agentsession.CategoryDelete:
			return sdk.ToolKindDelete
		case agentsession.CategoryCommand, agentsession.CategoryGit:
			return sdk.ToolKindExecute
		case agentsession.CategoryNetwork:
			return sdk.ToolKindFetch
		}
	}
	return sdk.ToolKindOther
}

// toolCall sends the step's tool_call the first time, then updates.
func (w *watcher) toolCall(ev engine.Event, status sdk.ToolCallStatus) {
	id := w.callID(ev.RunID, ev.StepID)
	if w.s.startCall(id, w.starter(ev.RunID, ev.StepID, status)) {
		return
	}
	w.s.send(sdk.UpdateToolCall(id, sdk.WithUpdateStatus(status)), false)
}

// starter builds a step's tool_call, for whoever shows it first: the
// watcher, or a permission request about the step (outbox.go).
func (w *watcher) starter(runID, stepID string, status sdk.ToolCallStatus) func() sdk.SessionUpdate {
	return func() sdk.SessionUpdate {
		st := w.step(stepID)
		title, kind := stepID, toolKind(st)
		var raw any
		var locs []sdk.ToolCallLocation
		if st != nil {
			title = stepTitle(st)
			if m, ok := w.s.mcpTool(st.Tool); ok {
				title = fmt.Sprintf("%s (MCP server %s: %s)", title, m.Server(), m.MCPName())
				if m.ReadOnly() {
					kind = sdk.ToolKindRead
				}
			}
			if len(st.Args) > 0 {
				raw = json.RawMessage(st.Args)
			}
			locs = w.locations(st)
		}
		return sdk.StartToolCall(w.callID(runID, stepID), title, sdk.WithStartKind(kind), sdk.WithStartStatus(status),
			sdk.WithStartRawInput(raw), sdk.WithStartLocations(locs))
	}
}

// locations are the files a step names in its args, at the line it
// names (read_file's startLine, a "line" argument), so a client following
// along opens them there.
func (w *watcher) locations(st *plans.Step) []sdk.ToolCallLocation {
	var a map[string]any
	if json.Unmarshal(st.Args, &a) != nil {
		return nil
	}
	var line *int
	for _, k := range []string{"startLine", "line"} {
		if n, ok := a[k].(float64); ok && n >= 1 {
			v := int(n)
			line = &v
			break
		}
	}
	var out []sdk.ToolCallLocation
	for _, k := range []string{"path", "from", "to"} {
		if p, ok := a[k].(string); ok && p != "" && !strings.Contains(p, "$") {
			out = append(out, sdk.ToolCallLocation{Path: filepath.Join(w.s.ws.Root(), filepath.FromSlash(p)), Line: line})
		}
	}
	return out
}

// outputLocations are the places a finished step's output points at:
// search matches (path and line), the lines read_file read.
func (w *watcher) outputLocations(out json.RawMessage) []sdk.ToolCallLocation {
	var o struct {
		Path      string `json:"path"`
		StartLine int    `json:"startLine"`
		Matches   []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"matches"`
	}
	if json.Unmarshal(out, &o) != nil {
		return nil
	}
	var locs []sdk.ToolCallLocation
	abs := func(p string) string { return filepath.Join(w.s.ws.Root(), filepath.FromSlash(p)) }
	for i, m := range o.Matches {
		if i == 50 || m.Path == "" {
			break
		}
		l := sdk.ToolCallLocation{Path: abs(m.Path)}
		if m.Line > 0 {
			l.Line = sdk.Ptr(m.Line)
		}
		locs = append(locs, l)
	}
	if o.Path != "" && o.StartLine > 0 && len(locs) == 0 {
		locs = append(locs, sdk.ToolCallLocation{Path: abs(o.Path), Line: sdk.Ptr(o.StartLine)})
	}
	return locs
}

func (w *watcher) addOutput(ev engine.Event) {
	w.mu.Lock()
	b := w.output[ev.StepID]
	if b == nil {
		b = &strings.Builder{}
		w.output[ev.StepID] = b
	}
	b.WriteString(ev.Text)
	w.streamed[ev.StepID] += len(ev.Text)
	if b.Len() > maxShownOutput {
		tail := lastBytes(b.String(), maxShownOutput)
		b.Reset()
		b.WriteString(tail)
	}
	text := shownText(b.String(), w.streamed[ev.StepID])
	content := append(append([]sdk.ToolCallContent(nil), w.content[ev.StepID]...), sdk.ToolContent(sdk.TextBlock("```\n"+text+"\n```")))
	w.mu.Unlock()
	w.toolCall(ev, sdk.ToolCallStatusInProgress)
	w.s.send(sdk.UpdateToolCall(w.callID(ev.RunID, ev.StepID), sdk.WithUpdateContent(content)), false)
}

// addDiffs shows a change set as diff content (path, oldText, newText).
func (w *watcher) addDiffs(ev engine.Event, cs *workspace.ChangeSet) {
	diffs, locs := changeContent(w.s.ws.Root(), cs)
	w.mu.Lock()
	w.content[ev.StepID] = append(w.content[ev.StepID], diffs...)
	content := append([]sdk.ToolCallContent(nil), w.content[ev.StepID]...)
	w.mu.Unlock()
	w.toolCall(ev, sdk.ToolCallStatusInProgress)
	w.s.send(sdk.UpdateToolCall(w.callID(ev.RunID, ev.StepID), sdk.WithUpdateContent(content), sdk.WithUpdateLocations(locs)), true)
}

// finish sends a step's final status (the tool call first if the step
// never started: skipped and blocked steps).
func (w *watcher) finish(ev engine.Event, st engine.StepStatus, status sdk.ToolCallStatus, note string) {
	w.setStatus(ev.StepID, st)
	w.mu.Lock()
	content := append([]sdk.ToolCallContent(nil), w.content[ev.StepID]...)
	if st == engine.StepSkipped {
		content = nil // its proposed diffs were not applied
	}
	if b := w.output[ev.StepID]; b != nil && b.Len() > 0 {
		content = append(content, sdk.ToolContent(sdk.TextBlock("```\n"+shownText(b.String(), w.streamed[ev.StepID])+"\n```")))
	}
	w.mu.Unlock()
	w.s.startCall(w.callID(ev.RunID, ev.StepID), w.starter(ev.RunID, ev.StepID, status))
	if note != "" {
		content = append(content, sdk.ToolContent(sdk.TextBlock(note)))
	}
	opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(status)}
	if len(content) > 0 {
		opts = append(opts, sdk.WithUpdateContent(content))
	}
	if st == engine.StepCompleted {
		if out := w.stepOutput(ev.StepID); out != nil {
			opts = append(opts, sdk.WithUpdateRawOutput(out))
			if locs := w.outputLocations(out); len(locs) > 0 {
				opts = append(opts, sdk.WithUpdateLocations(locs))
			}
		}
	}
	w.s.send(sdk.UpdateToolCall(w.callID(ev.RunID, ev.StepID), opts...), true)
	w.sendPlan()
}

func (w *watcher) stepOutput(id string) json.RawMessage {
	w.mu.Lock()
	run := w.run
	w.mu.Unlock()
	if run == nil {
		return nil
	}
	for _, st := range run.State().Steps {
		if st.ID == id && len(st.Output) > 0 && len(st.Output) < maxShownOutput {
			return st.Output
		}
	}
	return nil
}
