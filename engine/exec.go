package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

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
	step    *Step
	outs    Outputs
	attempt int
}

// stepResult is what a worker reports when an attempt ends.
type stepResult struct {
	output     json.RawMessage
	err        error
	skipped    string // approval denied: the step is skipped with this reason
	changeIDs  []string
	snapshotID string
	needsMore  bool
	suggestion string
	llmCalls   int
	toolCalls  int
	aborted    bool // the user aborted the run in a review
	applied    bool // files were changed
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
	case KindTool:
		err = w.toolStep(ctx)
	case KindLLM, KindAgent:
		err = w.modelStep(ctx)
	case KindValidation:
		err = w.validationStep()
	case KindInput:
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

func (w *worker) snapshot(ctx context.Context) {
	s := w.s
	s.snapOrder.Lock()
	defer s.snapOrder.Unlock()
	id, err := s.cfg.Snapshots.Snapshot(context.WithoutCancel(ctx), SnapshotRequest{
		RunID: s.r.id, StepID: w.j.step.ID, Label: "after " + w.j.step.ID})
	if err != nil {
		s.log.Warn("snapshot after step failed", "step", w.j.step.ID, "err", err)
		w.output("log", fmt.Sprintf("agentd: snapshot after step %s failed: %v\n", w.j.step.ID, err))
		return
	}
	s.r.addSnapshot(id)
	w.res.snapshotID = id
	w.emit(Event{Type: EventSnapshotTaken, SnapshotID: id, Reason: "after step"})
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
	args, err := ResolveArgs(step.Args, w.j.outs)
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
	if out.skipped != "" {
		w.res.skipped = out.skipped
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
	risk := riskOf(t, args)
	if step.Risk != "" {
		risk = tools.Risk(step.Risk)
	}
	desc := commandOf(t, args)
	dry := s.opts.DryRun
	if dry && (cat == tools.CategoryCommand || cat == tools.CategoryGit || cat == tools.CategoryNetwork) {
		return &toolOutcome{dryRun: true, output: map[string]any{
			"tool": name, "command": desc.Command, "args": args, "executed": false}}, nil
	}
	if !dry && cat != tools.CategoryWrite && cat != tools.CategoryDelete {
		if why, err := w.approve(ctx, t, cat, risk, desc, ""); err != nil || why != "" {
			return &toolOutcome{skipped: why}, err
		}
	}
	if mayChangeFiles(t, cat, args) {
		w.mu.Lock()
		w.res.mayChange = true
		w.mu.Unlock()
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

// riskOf is the risk of one call: the tool's RiskOf when it assesses calls
// (git: reads low, commit and apply high), else its fixed Risk.
func riskOf(t tools.Tool, args json.RawMessage) tools.Risk {
	if ra, ok := t.(tools.RiskAssessor); ok {
		if r := ra.RiskOf(args); r != "" {
			return r
		}
	}
	return t.Risk()
}

// mayChangeFiles reports whether a call may change the workspace other than
// through a change set: commands may write anything, and git's actions
// other than its low-risk reads (status, diff, log) change the working tree
// or the repository. Such calls get a snapshot after their step, so that
// restore and rollback know the agent's own work from the user's.
func mayChangeFiles(t tools.Tool, cat tools.Category, args json.RawMessage) bool {
	switch cat {
	case tools.CategoryCommand:
		return true
	case tools.CategoryGit:
		return riskOf(t, args) != tools.RiskLow
	}
	return false
}

// approve applies the policy and asks the Approver if needed. It returns
// a non-empty reason when the call must not happen.
func (w *worker) approve(ctx context.Context, t tools.Tool, cat tools.Category, risk tools.Risk, desc tools.Description, changeID string) (string, error) {
	s, step := w.s, w.j.step
	v, why := s.policy.decide(cat, risk, step.Approval, desc.Command)
	switch v {
	case verdictAllow:
		return "", nil
	case verdictDeny:
		return "denied by the approval policy: " + why, nil
	}
	title := desc.Title
	if title == "" {
		if desc.Command != "" {
			title = "Run " + desc.Command
		} else {
			title = fmt.Sprintf("%s (step %s)", t.Name(), step.ID)
		}
	}
	detail := desc.Detail
	if detail == "" {
		detail = step.Description
	}
	req := ApprovalRequest{
		RunID: s.r.id, StepID: step.ID, Tool: t.Name(), Category: cat, Risk: risk,
		Title: title, Detail: detail, Command: desc.Command, Cwd: desc.Cwd, ChangeID: changeID,
	}
	dec, err := w.ask(ctx, req, why)
	if err != nil {
		return "", fmt.Errorf("step %q: asking for approval: %w", step.ID, err)
	}
	if !dec.Allow {
		r := "approval denied"
		if dec.Reason != "" {
			r += ": " + dec.Reason
		}
		return r, nil
	}
	return "", nil
}

// ask answers req from the workspace's remembered rules, else asks the
// Approver (and remembers an "always" answer).
func (w *worker) ask(ctx context.Context, req ApprovalRequest, why string) (ApprovalDecision, error) {
	s := w.s
	var rules *ApprovalRules
	if s.cfg.Journal != nil {
		rules = s.cfg.Journal.Rules()
	}
	if rules != nil {
		r, err := rules.Match(req)
		if err != nil {
			// Asking is the safe side; the user learns why they are asked.
			s.log.Error("remembered approval rules unreadable; asking", "err", err)
			w.output("log", fmt.Sprintf("agentd: %v; asking instead\n", err))
		} else if r != nil {
			reason := "remembered rule " + r.ID
			if r.Reason != "" {
				reason += ": " + r.Reason
			}
			return ApprovalDecision{Allow: r.Allow, Reason: reason}, nil
		}
	}
	w.waiting(true, Event{Type: EventApprovalPending, Reason: why, ChangeID: req.ChangeID})
	dec, err := s.cfg.Approver.Approve(ctx, req)
	w.waiting(false, Event{Type: EventStepProgress, Reason: "approval answered"})
	if err != nil {
		return dec, err
	}
	if dec.Always && rules != nil {
		r, err := rules.Remember(req, dec.Allow, dec.Reason)
		if err != nil {
			s.log.Error("could not remember an approval", "err", err)
			w.output("log", fmt.Sprintf("agentd: this answer applies now but is not remembered: %v\n", err))
		} else {
			s.log.Info("remembered approval rule", "rule", r.ID, "category", r.Category, "tool", r.Tool, "command", r.Command, "allow", r.Allow)
		}
	}
	return dec, nil
}

func (w *worker) askFunc() func(ctx context.Context, question string, options []string) (string, error) {
	in := w.s.cfg.Inputter
	if in == nil {
		return nil
	}
	return func(ctx context.Context, question string, options []string) (string, error) {
		w.waiting(true, Event{Type: EventStepProgress, Reason: "asking: " + question})
		defer w.waiting(false, Event{Type: EventStepProgress, Reason: "answered"})
		return in.Ask(ctx, InputRequest{RunID: w.s.r.id, StepID: w.j.step.ID, Question: question, Options: options})
	}
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
		return nil
	}
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
			return nil
		}
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
		if len(oc.Applied) > 0 {
			w.res.applied = true
			w.res.files = append(w.res.files, appliedPaths(cs, oc.Applied)...)
		}
		if oc.Aborted {
			w.res.aborted = true
		}
		w.mu.Unlock()
		return nil
	}
	if s.cfg.WS == nil {
		return fmt.Errorf("step %q: no workspace to apply change %s to (Config.WS is nil)", step.ID, cs.ID)
	}
	ar, err := s.cfg.WS.Apply(ctx, cs, nil, s.cfg.Writer)
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
		paths := make([]string, len(ar.Conflicts))
		for i, c := range ar.Conflicts {
			paths[i] = c.Path
		}
		return fmt.Errorf("step %q: change %s not applied to %s: changed since the change was computed; review and retry the step",
			step.ID, cs.ID, strings.Join(paths, ", "))
	}
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

// modelStep runs an llm or agent step through Config.Model.
func (w *worker) modelStep(ctx context.Context) error {
	s, step := w.s, w.j.step
	if s.cfg.Model == nil {
		return fmt.Errorf("step %q (%s): %w: configure one with `agentd run --model PROVIDER/MODEL` (or AGENTD_MODEL), or initializationOptions.model in the editor",
			step.ID, step.EffectiveKind(), ErrNoModel)
	}
	prompt, err := Interpolate(step.Prompt, w.j.outs)
	if err != nil {
		return fmt.Errorf("step %q: resolving references in prompt: %w", step.ID, err)
	}
	sb := &stepBudget{run: s.budget}
	if err := sb.Reserve(estimateTokens(prompt), 0); err != nil {
		return fmt.Errorf("step %q: %w", step.ID, err)
	}
	call := ModelCall{
		RunID: s.r.id, Step: step, Prompt: prompt, Model: step.Model, Budget: sb,
		Output: func(text string) { w.output("model", text) },
	}
	var rejected []HunkRejection
	var rmu sync.Mutex
	if step.EffectiveKind() == KindAgent {
		allowed := map[string]bool{}
		if len(step.Tools) == 0 {
			for _, t := range s.cfg.Tools.List() {
				call.Tools = append(call.Tools, t)
				allowed[t.Name()] = true
			}
		} else {
			for _, name := range step.Tools {
				t, ok := s.cfg.Tools.Get(name)
				if !ok {
					return fmt.Errorf("step %q: unknown tool %q in tools", step.ID, name)
				}
				call.Tools = append(call.Tools, t)
				allowed[name] = true
			}
		}
		call.Exec = func(ctx context.Context, tool string, args json.RawMessage) (*ToolCallResult, error) {
			if !allowed[tool] {
				return &ToolCallResult{Error: fmt.Sprintf("tool %q is not available to this step", tool)}, nil
			}
			out, err := w.callTool(ctx, tool, args)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				r := &ToolCallResult{Error: err.Error()}
				if out != nil {
					r.Output = out.value()
				}
				return r, nil
			}
			w.mu.Lock()
			aborted := w.res.aborted
			w.mu.Unlock()
			if aborted {
				return nil, errAborted
			}
			if out.skipped != "" {
				return &ToolCallResult{Error: "not done: " + out.skipped}, nil
			}
			r := &ToolCallResult{Output: out.value()}
			if out.review != nil {
				r.Rejected = out.review.Rejected
				rmu.Lock()
				rejected = append(rejected, out.review.Rejected...)
				rmu.Unlock()
			}
			return r, nil
		}
	}
	var mr *ModelResult
	err = w.withTimeout(ctx, func(ctx context.Context) error {
		var err error
		mr, err = s.cfg.Model.RunStep(ctx, call)
		return err
	})
	calls := 1
	if mr != nil && mr.Calls > 0 {
		calls = mr.Calls
	}
	w.mu.Lock()
	w.res.llmCalls += calls
	aborted := w.res.aborted
	w.mu.Unlock()
	if mr != nil {
		sb.settle(mr.Usage)
	}
	if aborted {
		return fmt.Errorf("step %q: %w", step.ID, errAborted)
	}
	if err != nil {
		return fmt.Errorf("step %q: model: %w", step.ID, err)
	}
	if mr == nil {
		mr = &ModelResult{}
	}
	o := map[string]any{"text": mr.Text}
	w.mu.Lock()
	if len(w.res.changeIDs) > 0 {
		o["changes"] = w.res.changeIDs
	}
	w.mu.Unlock()
	if len(rejected) > 0 {
		o["rejected"] = rejected
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.res.output = raw
	w.res.needsMore, w.res.suggestion = mr.NeedsMoreContext, mr.ContextSuggestion
	w.mu.Unlock()
	return nil
}

func (w *worker) validationStep() error {
	step := w.j.step
	for i, c := range step.Checks {
		ok, err := EvalCondition(c.Expr, w.j.outs)
		if err != nil {
			return fmt.Errorf("step %q: check %d (%s): %w", step.ID, i+1, c.Expr, err)
		}
		if !ok {
			msg := c.Message
			if msg == "" {
				msg = fmt.Sprintf("%s does not hold", c.Expr)
			}
			return fmt.Errorf("step %q: check failed: %s", step.ID, msg)
		}
	}
	raw, _ := json.Marshal(map[string]any{"passed": len(step.Checks)})
	w.res.output = raw
	return nil
}

func (w *worker) inputStep(ctx context.Context) error {
	step := w.j.step
	q, err := Interpolate(step.Question, w.j.outs)
	if err != nil {
		return fmt.Errorf("step %q: resolving references in question: %w", step.ID, err)
	}
	ask := w.askFunc()
	if ask == nil {
		return fmt.Errorf("step %q asks %q but nobody can answer in this session: run the plan from an editor or a terminal, or replace the step with a fixed value", step.ID, q)
	}
	ans, err := ask(ctx, q, step.Options)
	if err != nil {
		return fmt.Errorf("step %q: asking the user: %w", step.ID, err)
	}
	raw, _ := json.Marshal(ans)
	w.res.output = raw
	return nil
}
