package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// job is one attempt of one step, handed to a worker goroutine. The worker
// reads only the job, the scheduler's read-only configuration and
// concurrency-safe parts (budget, run's change and snapshot lists); it
// reports state changes by posting to the scheduler.
type job struct {
	n       *node
	gen     int
	step    *plans.Step
	outs    plans.Outputs
	attempt int
}

// stepResult is what a worker reports when an attempt ends.
type stepResult struct {
	output  json.RawMessage
	err     error
	skipped string // approval denied: the step is skipped with this reason
	// declined is set when the step was skipped because the user (or the
	// approval policy) said no: a rejected change set, a denied approval,
	// or no answer. The run then ends partial, never completed.
	declined bool
	dry      bool // dry run: a command was not run or a change not applied
	// wouldRun is the reason of a step a dry run only pretends to run (a
	// command, a question): shown as "would run", not as done.
	wouldRun string
	// rejectedIDs are change sets the user rejected as a whole.
	rejectedIDs []string
	// partlyIDs are change sets the user applied only some hunks of;
	// partlyNote says how many hunks were left out.
	partlyIDs  []string
	partlyNote string
	// hunksApplied and hunksRejected count the units (hunks, whole
	// files) of the step's reviewed change sets (status.go).
	hunksApplied, hunksRejected int
	// conflictIDs are change sets that hit a conflict on accept (a file
	// changed since the change was computed): the step fails.
	conflictIDs []string
	// rejectReason is why the step's first change set rejected in full
	// was rejected (the user's reason, or the approval's).
	rejectReason string
	// unappliedIDs are change sets neither applied nor rejected (the run
	// stopped during their review, or applying them failed).
	unappliedIDs []string
	changeIDs    []string
	snapshotID   string
	// ignoredChanged names ignored files the step's commands changed
	// (or created and could not record): undo cannot take them back.
	ignoredChanged []string
	needsMore      bool
	suggestion     string
	llmCalls       int
	toolCalls      int
	aborted        bool // the user aborted the run in a review
	applied        bool // files were changed
	// mayChange is set when a tool that can change the workspace behind
	// the change-set path ran (a command, a write action of git): the step
	// gets a snapshot after it even though it proposed no change set.
	mayChange bool
	files     []string // paths the applied changes touched
}

// worker runs one job.
type worker struct {
	s   *sched
	j   *job
	mu  sync.Mutex // guards res against agent tool calls made concurrently
	res *stepResult
	// cmdFrom is the run's snapshot from before the step's first command
	// (step_snapshot.go), ignored the ignored files then (ignored.go);
	// under s.snapOrder.mu.
	cmdFrom string
	// cmdSaves numbers the editor's saves before the step's first command
	// (workspace.SaveSeq): later ones are the user's, not the command's.
	cmdSaves uint64
	ignored  map[string]fileStamp
	// unchecked names the tools of the step's calls that run outside
	// agentd (tools.UncheckedWriter: MCP tools); under mu.
	unchecked []string
}

// timeoutError is a step's own timeout; it is retryable.
type timeoutError struct {
	step string
	d    time.Duration
	err  error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("step %q timed out after %s (raise the step's timeout): %v", e.step, e.d, e.err)
}
func (e *timeoutError) Unwrap() error     { return e.err }
func (e *timeoutError) IsRetryable() bool { return true }

// isRetryable: errors saying IsRetryable() true (tools.Error{Retryable}),
// a step's own timeout, or anything Temporary() true.
func isRetryable(err error) bool {
	var r interface{ IsRetryable() bool }
	if errors.As(err, &r) {
		return r.IsRetryable()
	}
	var t interface{ Temporary() bool }
	if errors.As(err, &t) {
		return t.Temporary()
	}
	return false
}

var errAborted = errors.New("aborted by the user")

// RejectedReason is the reason of a step skipped because the user rejected
// its change set; the user's own reason, if any, follows after ": ".
const RejectedReason = "change rejected"

func (s *sched) execute(ctx context.Context, j *job) (res *stepResult) {
	w := &worker{s: s, j: j, res: &stepResult{}}
	res = w.res
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("step panicked", "step", j.step.ID, "panic", v, "stack", string(debug.Stack()))
			w.mu.Lock()
			res.err = fmt.Errorf("step %q panicked: %v", j.step.ID, v)
			w.mu.Unlock()
		}
	}()
	var err error
	switch k := j.step.EffectiveKind(); k {
	case plans.KindTool:
		err = w.toolStep(ctx)
	case plans.KindLLM, plans.KindAgent:
		err = w.modelStep(ctx)
	case plans.KindValidation:
		err = w.validationStep()
	case plans.KindInput:
		err = w.inputStep(ctx)
	default:
		err = fmt.Errorf("step %q: unknown kind %q (use tool, llm, agent, validation, input or decision)", j.step.ID, k)
	}
	w.mu.Lock()
	res.err = err
	changed := res.applied || res.mayChange
	w.mu.Unlock()
	if changed && s.cfg.Snapshots != nil && !s.opts.DryRun {
		w.snapshot(ctx)
	}
	return res
}

// emit posts an event about this step.
func (w *worker) emit(ev Event) {
	ev.StepID = w.j.step.ID
	w.s.post(func(s *sched) { s.emit(ev) })
}

func (w *worker) output(stream, text string) {
	if text == "" {
		return
	}
	w.emit(Event{Type: EventStepOutput, Stream: stream, Text: text})
}

// waiting marks the step as waiting for the user (approval, review,
// input) or running again, with an event.
func (w *worker) waiting(on bool, ev Event) {
	n, gen := w.j.n, w.j.gen
	ev.StepID = w.j.step.ID
	w.s.post(func(s *sched) {
		if n.gen != gen || (n.st.Status != StepRunning && n.st.Status != StepWaiting) {
			return
		}
		st := StepRunning
		if on {
			st = StepWaiting
		}
		s.setStatus(n, st)
		ev.Status = string(st)
		s.emit(ev)
	})
}

func (w *worker) timeout() time.Duration { return w.j.step.TimeoutOr(w.s.stepTimeout) }

// withTimeout runs f under the step's timeout; a timeout of the step
// itself (not of the run) becomes a retryable *timeoutError.
func (w *worker) withTimeout(ctx context.Context, f func(ctx context.Context) error) error {
	d := w.timeout()
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := f(tctx)
	if err != nil && errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return &timeoutError{step: w.j.step.ID, d: d, err: err}
	}
	return err
}

func (w *worker) toolStep(ctx context.Context) error {
	step := w.j.step
	args, err := plans.ResolveArgs(step.Args, w.j.outs)
	if err != nil {
		return fmt.Errorf("step %q: resolving references in args: %w", step.ID, err)
	}
	out, err := w.callTool(ctx, step.Tool, args)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if out != nil {
			w.res.output, _ = out.marshal()
		}
		return err
	}
	if out.skipped == "" && out.review != nil && len(out.review.Applied) == 0 && len(out.review.Rejected) > 0 {
		// The user rejected the step's whole change: the step did not do
		// its work, so it is skipped, not completed.
		out.skipped = RejectedReason
		if r := out.review.Rejected[0].Reason; r != "" {
			out.skipped += ": " + r
		}
	}
	if out.skipped != "" {
		w.res.skipped = out.skipped
		w.res.declined = true
		if out.review != nil {
			// Keep the review outcome (the user's reasons) for planners
			// and front ends.
			w.res.output, _ = out.marshal()
		}
		return nil
	}
	w.res.output, err = out.marshal()
	if err != nil {
		return fmt.Errorf("step %q: tool %s returned output that is not JSON: %w", step.ID, step.Tool, err)
	}
	w.res.needsMore, w.res.suggestion = out.needsMore, out.suggestion
	return nil
}

// toolOutcome is one tool call's outcome.
type toolOutcome struct {
	output     any
	skipped    string
	changes    *workspace.ChangeSet
	dryRun     bool
	applied    []string
	review     *ReviewOutcome
	needsMore  bool
	suggestion string
}

// marshal is the step output: the tool's output, with the review outcome
// (before mode) and dry-run details merged in when there are any.
func (o *toolOutcome) marshal() (json.RawMessage, error) {
	v := o.value()
	return json.Marshal(v)
}

func (o *toolOutcome) value() any {
	extra := map[string]any{}
	if o.review != nil {
		extra["review"] = o.review
	}
	if o.dryRun {
		extra["dryRun"] = true
		if o.changes != nil {
			extra["proposed"] = changeSummary(o.changes)
		}
	}
	if len(extra) == 0 {
		return o.output
	}
	raw, err := json.Marshal(o.output)
	if err == nil {
		var obj map[string]any
		if json.Unmarshal(raw, &obj) == nil && obj != nil {
			for k, v := range extra {
				obj[k] = v
			}
			return obj
		}
	}
	extra["result"] = o.output
	return extra
}

type fileSummary struct {
	Path    string       `json:"path"`
	OldPath string       `json:"oldPath,omitempty"`
	Op      workspace.Op `json:"op"`
}

func changeSummary(cs *workspace.ChangeSet) map[string]any {
	files := make([]fileSummary, 0, len(cs.Files))
	for _, f := range cs.Files {
		files = append(files, fileSummary{Path: f.Path, OldPath: f.OldPath, Op: f.Op})
	}
	return map[string]any{"changeId": cs.ID, "files": files}
}

// callTool runs one tool call through policy, approval, dry run, timeout
// and review; plan tool steps and agent tool calls share it.
func (w *worker) callTool(ctx context.Context, name string, args json.RawMessage) (*toolOutcome, error) {
	s, step := w.s, w.j.step
	t, ok := s.cfg.Tools.Get(name)
	if !ok {
		return nil, fmt.Errorf("step %q: unknown tool %q (agentd tools lists them)", step.ID, name)
	}
	w.mu.Lock()
	w.res.toolCalls++
	w.mu.Unlock()
	cat := t.Category()
	risk := approval.RiskOf(t, args)
	if step.Risk != "" {
		risk = tools.Risk(step.Risk)
	}
	desc := approval.CommandOf(t, args)
	dry := s.opts.DryRun
	if dry && (cat == tools.CategoryCommand || cat == tools.CategoryGit || cat == tools.CategoryNetwork) {
		w.mu.Lock()
		w.res.dry = true
		if w.j.step.EffectiveKind() == plans.KindTool {
			w.res.wouldRun = WouldRunPrefix + ": a dry run runs no command"
		}
		w.mu.Unlock()
		return &toolOutcome{dryRun: true, output: map[string]any{
			"tool": name, "command": desc.Command, "args": args, "executed": false}}, nil
	}
	if !dry && cat != tools.CategoryWrite && cat != tools.CategoryDelete {
		why, handled, err := w.approveSensitive(ctx, t, args)
		// The sensitive question answers for a read; a command that names
		// a sensitive file is asked about as a command too.
		if err == nil && why == "" && (!handled || cat != tools.CategoryRead) {
			why, err = w.approve(ctx, t, cat, risk, desc, "")
		}
		if err != nil || why != "" {
			return &toolOutcome{skipped: why}, err
		}
	}
	if approval.MayChangeFiles(t, cat, args) {
		w.mu.Lock()
		w.res.mayChange = true
		if u, ok := t.(tools.UncheckedWriter); ok && u.WritesUnchecked() && !slices.Contains(w.unchecked, name) {
			w.unchecked = append(w.unchecked, name)
		}
		w.mu.Unlock()
		defer w.commandStarted(ctx)()
	}
	env := &tools.Env{
		WS:     s.cfg.WS,
		RunID:  s.r.id,
		StepID: step.ID,
		Output: w.output,
		Ask:    w.askFunc(),
		Logger: s.log.With("step", step.ID, "tool", name),
	}
	var res *tools.Result
	err := w.withTimeout(ctx, func(ctx context.Context) error {
		var err error
		res, err = t.Run(ctx, env, args)
		return err
	})
	if err != nil {
		// Keep what a failed call produced (a command's exit code and
		// output): the step state shows it and an agent's model sees it.
		var partial *toolOutcome
		if res != nil && res.Output != nil {
			partial = &toolOutcome{output: res.Output}
		}
		if strings.HasPrefix(err.Error(), name+": ") {
			// Tools name themselves in their errors already.
			return partial, fmt.Errorf("step %q: %w", step.ID, err)
		}
		return partial, fmt.Errorf("step %q: %s: %w", step.ID, name, err)
	}
	if res == nil {
		res = &tools.Result{}
	}
	out := &toolOutcome{output: res.Output, needsMore: res.NeedsMoreContext, suggestion: res.ContextSuggestion}
	if res.Changes != nil && len(res.Changes.Files) > 0 {
		if err := w.handleChanges(ctx, t, cat, risk, desc, res.Changes, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// handleChanges announces a proposed change set and applies it as the
// review mode says (DryRun: never).
func (w *worker) handleChanges(ctx context.Context, t tools.Tool, cat tools.Category, risk tools.Risk, desc tools.Description, cs *workspace.ChangeSet, out *toolOutcome) error {
	s, step := w.s, w.j.step
	cs.RunID, cs.StepID = s.r.id, step.ID
	if cs.ID == "" {
		cs.ID = newChangeID(s.r.id, step.ID)
	}
	s.r.addChange(cs)
	out.changes = cs
	w.mu.Lock()
	w.res.changeIDs = append(w.res.changeIDs, cs.ID)
	w.mu.Unlock()
	w.emit(Event{Type: EventChangeProposed, ChangeID: cs.ID, Reason: fmt.Sprintf("%d file(s)", len(cs.Files))})
	if s.opts.DryRun {
		out.dryRun = true
		w.mu.Lock()
		w.res.dry = true
		w.mu.Unlock()
		return nil
	}
	// Whatever happens below, a change set that ends neither applied nor
	// rejected is recorded as such, so the summary never lists it as done.
	settled := false
	defer func() {
		if !settled {
			w.mu.Lock()
			w.res.unappliedIDs = append(w.res.unappliedIDs, cs.ID)
			w.mu.Unlock()
		}
	}()
	// In review mode before, the review is the question: do not ask twice.
	if s.review != ReviewBefore || step.Approval == "ask" {
		if desc.Title == "" {
			desc.Title = fmt.Sprintf("%s wants to change %d file(s)", step.ID, len(cs.Files))
		}
		if desc.Detail == "" {
			var b strings.Builder
			for _, f := range cs.Files {
				fmt.Fprintf(&b, "%s %s\n", f.Op, f.Path)
			}
			desc.Detail = b.String()
		}
		why, err := w.approve(ctx, t, cat, risk, desc, cs.ID)
		if err != nil {
			return err
		}
		if why != "" {
			out.skipped = why
			settled = true
			w.mu.Lock()
			w.res.rejectedIDs = append(w.res.rejectedIDs, cs.ID)
			if w.res.rejectReason == "" {
				w.res.rejectReason = why
			}
			w.mu.Unlock()
			return nil
		}
	}
	// Ignored files the change touches get their pre-images kept before
	// anything (the review's accept included) writes them.
	if err := w.keepPreImages(ctx, cs); err != nil {
		return err
	}
	if s.review == ReviewBefore {
		if s.cfg.Reviewer == nil {
			return fmt.Errorf("step %q: review mode %q needs a front end to review changes; use review %q or %q for headless runs",
				step.ID, ReviewBefore, ReviewAfter, ReviewNone)
		}
		w.waiting(true, Event{Type: EventStepProgress, Reason: "waiting for review", ChangeID: cs.ID})
		oc, err := s.cfg.Reviewer.ReviewBefore(ctx, cs)
		w.waiting(false, Event{Type: EventStepProgress, Reason: "reviewed", ChangeID: cs.ID})
		if err != nil {
			return fmt.Errorf("step %q: reviewing change %s: %w", step.ID, cs.ID, err)
		}
		if oc == nil {
			oc = &ReviewOutcome{}
		}
		out.review = oc
		w.mu.Lock()
		w.recordReview(cs, oc)
		if len(oc.Applied) == 0 && len(oc.Rejected) > 0 && len(oc.Conflicts) == 0 {
			settled = true
		}
		if len(oc.Applied) > 0 {
			settled = true
			w.res.applied = true
			w.res.files = append(w.res.files, appliedPaths(cs, oc.Applied)...)
		}
		if oc.Aborted {
			w.res.aborted = true
		}
		w.mu.Unlock()
		if len(oc.Conflicts) > 0 && !oc.Aborted {
			return conflictError(step.ID, cs.ID, oc.Conflicts)
		}
		return nil
	}
	if s.cfg.WS == nil {
		return fmt.Errorf("step %q: no workspace to apply change %s to (Config.WS is nil)", step.ID, cs.ID)
	}
	// Recorded as the agent's before it is written (ledger.go).
	ar, err := s.cfg.WS.Apply(ctx, cs, nil, s.cfg.WS.RecordingWriter(s.cfg.Writer, s.recorder(), s.r.id, step.ID))
	if bs, ok := s.cfg.Writer.(BufferSaver); ok && ar != nil && len(ar.Applied) > 0 {
		// Applied at once: on disk at once (BufferSaver).
		reason := fmt.Sprintf("step %s applied its change at once (review %s)", step.ID, s.review)
		if left := bs.SaveWritten(ctx, ar.Applied, reason); len(left) > 0 {
			w.output("log", fmt.Sprintf("not on disk yet, unsaved in the editor (they also hold your unsaved edits): %s; save them so the disk has the change",
				strings.Join(left, ", ")))
		}
	}
	if ar != nil && len(ar.Applied) > 0 {
		out.applied = ar.Applied
		w.mu.Lock()
		w.res.applied = true
		w.res.files = append(w.res.files, ar.Applied...)
		w.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("step %q: applying change %s: %w", step.ID, cs.ID, err)
	}
	if ar != nil && len(ar.Conflicts) > 0 {
		settled = len(ar.Applied) > 0
		paths := make([]string, len(ar.Conflicts))
		for i, c := range ar.Conflicts {
			paths[i] = c.Path
		}
		return fmt.Errorf("step %q: change %s not applied to %s: changed since the change was computed; review and retry the step",
			step.ID, cs.ID, strings.Join(paths, ", "))
	}
	settled = true
	if s.review == ReviewAfter && s.cfg.Reviewer != nil {
		if err := s.cfg.Reviewer.OfferAfter(ctx, cs); err != nil {
			s.log.Warn("offering change for review failed", "step", step.ID, "change", cs.ID, "err", err)
		}
	}
	return nil
}

// appliedPaths maps a review's applied hunk ids (or paths) to file paths.
func appliedPaths(cs *workspace.ChangeSet, applied []string) []string {
	set := map[string]bool{}
	for _, a := range applied {
		set[a] = true
	}
	var paths []string
	for _, f := range cs.Files {
		hit := set[f.Path]
		if !hit && f.Diff != nil {
			for _, h := range f.Diff.Hunks {
				if set[h.ID] {
					hit = true
					break
				}
			}
		}
		if hit {
			paths = append(paths, f.Path)
		}
	}
	return paths
}

var changeSeq struct {
	sync.Mutex
	n int
}

func newChangeID(runID, stepID string) string {
	changeSeq.Lock()
	changeSeq.n++
	n := changeSeq.n
	changeSeq.Unlock()
	return fmt.Sprintf("%s/%s/%d", runID, stepID, n)
}
