package engine

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// sched is one run's scheduler. Its loop goroutine owns every field below
// (except the read-only configuration that workers use); workers and other
// goroutines talk to it only by posting functions to r.inbox.
type sched struct {
	e   *Engine
	cfg Config
	log *slog.Logger
	r   *Run

	opts        RunOptions
	policy      ApprovalPolicy
	maxParallel int
	review      ReviewMode
	maxRePlans  int
	stepTimeout time.Duration
	budget      *RunBudget

	baseCtx   context.Context
	ctx       context.Context // cancelled by stop: every worker derives from it
	cancelRun context.CancelFunc
	snapOrder sync.Mutex // serialises snapshots so the list is in time order

	plan     *Plan
	original *Plan
	// skippedFailures counts failed steps the user chose to skip; the run
	// then ends partial, not completed.
	skippedFailures int
	nodes           []*node
	byID            map[string]*node
	ready           nodeHeap
	outputs         Outputs
	counts          map[StepStatus]int
	current         map[*node]struct{}

	running  int // workers in flight
	async    int // planner/handler calls and retry timers in flight
	holds    int // >0: start no new steps (recovery or re-planning)
	paused   bool
	stopping bool
	finished bool
	status   RunStatus // final status once decided
	errMsg   string

	llmCalls, toolCalls int
	rePlans             int
	replanOff           bool
	replanBusy          bool
	replanQueue         []replanAsk
	durSum              time.Duration
	durN                int
	lastEnd             time.Time // when the last step that ran ended
	start               time.Time
	rollback            *RestoreInfo
	files               []string
	filesSeen           map[string]bool
	wg                  sync.WaitGroup
}

// node is one step of the current plan and its run state.
type node struct {
	step       *Step
	idx        int // position in the plan (tie-break)
	deps       []*node
	badDeps    []string
	dependents []*node
	waiting    int // dependencies not yet completed
	st         StepState
	tries      int // attempts since the last reset (retry policy)
	gen        int // bumped on reset; stale timers are ignored
	cancel     context.CancelFunc
	timer      *time.Timer
	recoveries int
	started    time.Time // current attempt
}

type nodeHeap []*node

func (h nodeHeap) Len() int           { return len(h) }
func (h nodeHeap) Less(i, j int) bool { return h[i].idx < h[j].idx }
func (h nodeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)        { *h = append(*h, x.(*node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return n
}

func newSched(e *Engine, ctx context.Context, p *Plan, opts RunOptions) *sched {
	cfg := e.cfg
	if cfg.Approver == nil {
		cfg.Approver = denyApprover{}
	}
	if cfg.OnFailure == nil {
		cfg.OnFailure = abortOnFailure{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler) // no global logger in a library
	}
	s := &sched{
		e: e, cfg: cfg, opts: opts,
		log:     log.With("run", opts.RunID),
		baseCtx: ctx,
		plan:    p, original: p.Clone(),
		byID:      map[string]*node{},
		outputs:   Outputs{},
		counts:    map[StepStatus]int{},
		current:   map[*node]struct{}{},
		filesSeen: map[string]bool{},
		budget:    NewBudget(opts.MaxTokens, opts.MaxCostUSD),
		start:     time.Now(),
	}
	s.ctx, s.cancelRun = context.WithCancel(ctx)
	switch {
	case opts.Approval != nil:
		s.policy = opts.Approval.withDefaults()
	case cfg.Approval != nil:
		s.policy = cfg.Approval.withDefaults()
	default:
		s.policy = DefaultApprovalPolicy()
	}
	s.maxParallel = opts.MaxParallel
	if s.maxParallel <= 0 {
		s.maxParallel = DefaultMaxParallel
	}
	if opts.Mode == "sequential" {
		s.maxParallel = 1
	}
	s.review = opts.Review
	if s.review == "" {
		if cfg.Reviewer != nil {
			s.review = ReviewBefore
		} else {
			s.review = ReviewNone
		}
	}
	s.maxRePlans = DefaultMaxRePlans
	if opts.MaxRePlans != nil {
		s.maxRePlans = *opts.MaxRePlans
	}
	s.stepTimeout = opts.StepTimeout
	if s.stepTimeout <= 0 {
		s.stepTimeout = DefaultStepTimeout
	}
	s.r = &Run{
		id:    opts.RunID,
		inbox: make(chan func(*sched), 256),
		cmds:  make(chan func(*sched)),
		done:  make(chan struct{}),
		ev:    newBroker(),
	}
	return s
}

// post hands f to the scheduler goroutine. Only goroutines the scheduler
// waits for (workers, async calls, armed timers) may post, so the loop is
// always there to receive.
func (s *sched) post(f func(*sched)) { s.r.inbox <- f }

func (s *sched) loop() {
	s.emit(Event{Type: EventRunStarted, Status: string(RunRunning)})
	if snaps := s.r.snapshots(); len(snaps) > 0 {
		s.emit(Event{Type: EventSnapshotTaken, SnapshotID: snaps[0], Reason: "run start"})
	}
	s.rebuild()
	ctxDone := s.baseCtx.Done()
	for {
		s.dispatch()
		if s.running == 0 && s.async == 0 && (s.stopping || s.counts[StepReady] == 0) {
			break
		}
		select {
		case f := <-s.r.inbox:
			f(s)
		case f := <-s.r.cmds:
			f(s)
		case <-ctxDone:
			ctxDone = nil
			s.stop(RunCancelled, "the run's context was cancelled")
		}
	}
	s.finish()
}

// dispatch starts ready steps, lowest plan position first, while slots
// are free.
func (s *sched) dispatch() {
	for !s.stopping && !s.paused && s.holds == 0 && s.running < s.maxParallel && s.ready.Len() > 0 {
		n := heap.Pop(&s.ready).(*node)
		if n.st.Status != StepReady {
			continue // skipped or blocked while queued
		}
		s.startStep(n)
	}
}

func (s *sched) startStep(n *node) {
	step := n.step
	if step.Skip {
		s.skip(n, "skipped in the plan")
		return
	}
	if step.When != "" {
		ok, err := EvalCondition(step.When, s.outputs)
		if err != nil {
			s.begin(n)
			s.fail(n, fmt.Errorf("step %q: evaluating when %q: %w", step.ID, step.When, err))
			return
		}
		if !ok {
			s.skip(n, fmt.Sprintf("condition %s is false", step.When))
			return
		}
	}
	if step.EffectiveKind() == KindDecision {
		s.begin(n)
		s.decide(n)
		return
	}
	s.begin(n)
	ctx, cancel := context.WithCancel(s.ctx)
	n.cancel = cancel
	j := &job{n: n, gen: n.gen, step: step, outs: s.outputsFor(step), attempt: n.st.Attempts}
	s.running++
	s.wg.Add(1)
	go s.work(ctx, j)
}

// begin marks an attempt as started.
func (s *sched) begin(n *node) {
	now := time.Now()
	n.tries++
	n.st.Attempts++
	n.started = now
	if n.st.StartedAt == nil {
		n.st.StartedAt = &now
	}
	n.st.Error = ""
	s.setStatus(n, StepRunning)
	s.emit(Event{Type: EventStepStarted, StepID: n.step.ID, Attempt: n.st.Attempts, Status: string(StepRunning)})
}

// outputsFor copies what a step may refer to, so the worker never reads
// the scheduler's map.
func (s *sched) outputsFor(step *Step) Outputs {
	out := Outputs{}
	add := func(id string) {
		if v, ok := s.outputs[id]; ok {
			out[id] = v
		}
	}
	for _, id := range step.DependsOn {
		add(id)
	}
	for _, id := range s.plan.References(step) {
		add(id)
	}
	return out
}

func (s *sched) work(ctx context.Context, j *job) {
	defer s.wg.Done()
	res := s.execute(ctx, j)
	s.post(func(s *sched) { s.finishStep(j, res) })
}

func (s *sched) finishStep(j *job, res *stepResult) {
	s.running--
	n := j.n
	if n.cancel != nil {
		n.cancel()
		n.cancel = nil
	}
	s.toolCalls += res.toolCalls
	s.llmCalls += res.llmCalls
	n.st.ChangeIDs = append(n.st.ChangeIDs, res.changeIDs...)
	for _, f := range res.files {
		if !s.filesSeen[f] {
			s.filesSeen[f] = true
			s.files = append(s.files, f)
		}
	}
	if res.snapshotID != "" {
		n.st.SnapshotID = res.snapshotID
	}
	if j.gen != n.gen {
		return
	}
	if res.aborted {
		s.stop(RunCancelled, fmt.Sprintf("aborted by the user while reviewing step %q", n.step.ID))
	}
	switch {
	case s.stopping && res.err != nil:
		s.cancelled(n, "the run was stopped")
	case res.skipped != "":
		s.skip(n, res.skipped)
	case res.err == nil:
		s.complete(n, res.output, res.needsMore, res.suggestion)
	default:
		n.st.Output = res.output // what the failed attempt produced, for people and planners
		s.stepError(n, res.err)
	}
}

func (s *sched) end(n *node) {
	now := time.Now()
	n.st.EndedAt = &now
	if n.st.StartedAt != nil {
		n.st.DurationMs = now.Sub(*n.st.StartedAt).Milliseconds()
	}
	if !n.started.IsZero() {
		s.durSum += now.Sub(n.started)
		s.durN++
		s.lastEnd = now
	}
}

func (s *sched) complete(n *node, output json.RawMessage, needsMore bool, suggestion string) {
	s.end(n)
	n.st.Output = output
	n.st.Error = ""
	if output != nil {
		s.outputs[n.step.ID] = output
	} else {
		s.outputs[n.step.ID] = json.RawMessage("null")
	}
	s.setStatus(n, StepCompleted)
	s.emit(Event{Type: EventStepFinished, StepID: n.step.ID, Attempt: n.st.Attempts, Status: string(StepCompleted)})
	for _, d := range n.dependents {
		if d.st.Status == StepPending && d.waiting > 0 {
			d.waiting--
			if d.waiting == 0 {
				s.evaluate(d)
			}
		}
	}
	if s.stopping {
		return
	}
	s.applyRules(n)
	if needsMore {
		s.startRePlan(n, suggestion)
	}
}

// stepError decides between a retry and a failure.
func (s *sched) stepError(n *node, err error) {
	max, delay, maxDelay := n.step.RetryPolicy()
	if !s.stopping && isRetryable(err) && n.tries <= max {
		d := backoff(delay, maxDelay, n.tries-1)
		n.st.Error = err.Error()
		s.setStatus(n, StepRetrying)
		s.emit(Event{Type: EventStepRetrying, StepID: n.step.ID, Attempt: n.st.Attempts,
			Error: err.Error(), DelayMs: d.Milliseconds(), Status: string(StepRetrying)})
		s.async++
		gen := n.gen
		n.timer = time.AfterFunc(d, func() { s.post(func(s *sched) { s.retryDue(n, gen) }) })
		return
	}
	s.fail(n, err)
}

func (s *sched) retryDue(n *node, gen int) {
	s.async--
	n.timer = nil
	if gen != n.gen || n.st.Status != StepRetrying {
		return
	}
	s.setStatus(n, StepReady)
	heap.Push(&s.ready, n)
}

// backoff is min(delay*2^n, maxDelay).
func backoff(delay, maxDelay time.Duration, n int) time.Duration {
	d := delay
	for i := 0; i < n && d > 0; i++ {
		d *= 2
		if maxDelay > 0 && d >= maxDelay {
			return maxDelay
		}
	}
	if maxDelay > 0 && d > maxDelay {
		d = maxDelay
	}
	return d
}

// fail records a step's failure and applies the failure policy
// (plan-format.md "When a step fails", after retries).
func (s *sched) fail(n *node, err error) {
	s.end(n)
	n.st.Error = err.Error()
	s.setStatus(n, StepFailed)
	s.emit(Event{Type: EventStepFailed, StepID: n.step.ID, Attempt: n.st.Attempts,
		Error: err.Error(), Status: string(StepFailed)})
	if s.stopping {
		s.blockDependents(n)
		return
	}
	if !n.step.IsCritical() {
		s.blockDependents(n)
		s.applyRules(n)
		return
	}
	s.recoverOrAsk(n, err)
}

func (s *sched) skip(n *node, reason string) {
	if n.st.Status == StepPending || n.st.Status == StepReady {
		// never started
	} else {
		s.end(n)
	}
	n.st.Reason = reason
	s.setStatus(n, StepSkipped)
	s.emit(Event{Type: EventStepSkipped, StepID: n.step.ID, Reason: reason, Status: string(StepSkipped)})
	s.blockDependents(n)
}

func (s *sched) cancelled(n *node, reason string) {
	if n.st.Status == StepRunning || n.st.Status == StepWaiting || n.st.Status == StepRetrying {
		s.end(n)
	}
	n.st.Reason = reason
	s.setStatus(n, StepCancelled)
	s.emit(Event{Type: EventStepCancelled, StepID: n.step.ID, Reason: reason, Status: string(StepCancelled)})
}

func (s *sched) block(n *node, reason string) {
	if n.st.Status == StepBlocked {
		return
	}
	n.st.Reason = reason
	s.setStatus(n, StepBlocked)
	s.emit(Event{Type: EventStepBlocked, StepID: n.step.ID, Reason: reason, Status: string(StepBlocked)})
	s.blockDependents(n)
}

func (s *sched) blockDependents(n *node) {
	for _, d := range n.dependents {
		if d.st.Status == StepPending || d.st.Status == StepReady {
			s.block(d, fmt.Sprintf("dependency %q %s", n.step.ID, statusVerb(n.st.Status)))
		}
	}
}

func statusVerb(st StepStatus) string {
	switch st {
	case StepFailed:
		return "failed"
	case StepSkipped:
		return "was skipped"
	case StepBlocked:
		return "is blocked"
	case StepCancelled:
		return "was cancelled"
	}
	return "is " + string(st)
}

// evaluate decides whether a step that has not started is blocked,
// waiting or ready.
func (s *sched) evaluate(n *node) {
	if len(n.badDeps) > 0 {
		s.block(n, fmt.Sprintf("depends on unknown step %q", n.badDeps[0]))
		return
	}
	waiting := 0
	for _, d := range n.deps {
		switch d.st.Status {
		case StepCompleted:
		case StepFailed, StepSkipped, StepBlocked, StepCancelled:
			s.block(n, fmt.Sprintf("dependency %q %s", d.step.ID, statusVerb(d.st.Status)))
			return
		default:
			waiting++
		}
	}
	n.waiting = waiting
	if waiting == 0 {
		s.setStatus(n, StepReady)
		heap.Push(&s.ready, n)
		return
	}
	if n.st.Status != StepPending {
		n.st.Reason = ""
		s.setStatus(n, StepPending)
		s.emit(Event{Type: EventStepProgress, StepID: n.step.ID, Status: string(StepPending)})
	}
}

func (s *sched) setStatus(n *node, st StepStatus) {
	old := n.st.Status
	if old == st {
		return
	}
	s.counts[old]--
	s.counts[st]++
	n.st.Status = st
	if isActive(st) {
		s.current[n] = struct{}{}
	} else {
		delete(s.current, n)
	}
}

func isActive(st StepStatus) bool {
	return st == StepRunning || st == StepWaiting || st == StepRetrying
}

func isDone(st StepStatus) bool {
	switch st {
	case StepCompleted, StepFailed, StepSkipped, StepBlocked, StepCancelled:
		return true
	}
	return false
}

// rebuild makes the graph match s.plan: nodes of steps that still exist
// keep their state; steps that have not started are re-evaluated in
// dependency order (a blocked step whose dependency is retried becomes
// pending again).
func (s *sched) rebuild() {
	old := s.byID
	s.byID = make(map[string]*node, len(s.plan.Steps))
	s.nodes = make([]*node, 0, len(s.plan.Steps))
	for i, st := range s.plan.Steps {
		n := old[st.ID]
		if n == nil {
			n = &node{st: StepState{ID: st.ID, Status: StepPending}}
		}
		n.step, n.idx = st, i
		n.deps, n.dependents, n.badDeps = nil, nil, nil
		s.byID[st.ID] = n
		s.nodes = append(s.nodes, n)
	}
	for _, n := range s.nodes {
		for _, id := range n.step.DependsOn {
			d := s.byID[id]
			if d == nil {
				n.badDeps = append(n.badDeps, id)
				continue
			}
			n.deps = append(n.deps, d)
			d.dependents = append(d.dependents, n)
		}
	}
	clear(s.counts)
	clear(s.current)
	for _, n := range s.nodes {
		s.counts[n.st.Status]++
		if isActive(n.st.Status) {
			s.current[n] = struct{}{}
		}
	}
	s.ready = s.ready[:0]
	for _, n := range topoOrder(s.nodes) {
		switch n.st.Status {
		case StepReady:
			// Re-queue: the heap was cleared.
			s.counts[StepReady]--
			s.counts[StepPending]++
			n.st.Status = StepPending
			s.evaluate(n)
		case StepPending, StepBlocked:
			s.evaluate(n)
		}
	}
}

// topoOrder returns nodes dependencies first (Kahn); nodes on cycles come
// last in plan order.
func topoOrder(nodes []*node) []*node {
	indeg := make(map[*node]int, len(nodes))
	for _, n := range nodes {
		indeg[n] = len(n.deps)
	}
	order := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		if indeg[n] == 0 {
			order = append(order, n)
		}
	}
	for i := 0; i < len(order); i++ {
		for _, d := range order[i].dependents {
			indeg[d]--
			if indeg[d] == 0 {
				order = append(order, d)
			}
		}
	}
	if len(order) < len(nodes) {
		for _, n := range nodes {
			if indeg[n] > 0 {
				order = append(order, n)
			}
		}
	}
	return order
}

// reset makes a failed, skipped, blocked or cancelled step pending again.
func (s *sched) reset(n *node) {
	n.gen++
	n.tries = 0
	n.st.Error, n.st.Reason = "", ""
	n.st.EndedAt = nil
	if n.timer != nil && n.timer.Stop() {
		s.async--
	}
	n.timer = nil
	delete(s.outputs, n.step.ID)
	n.st.Output = nil
	if n.st.Status != StepPending {
		s.setStatus(n, StepPending)
		s.emit(Event{Type: EventStepProgress, StepID: n.step.ID, Status: string(StepPending), Reason: "retry"})
	}
}

func (s *sched) pause() {
	if s.stopping || s.paused {
		return
	}
	s.paused = true
	s.emit(Event{Type: EventRunPaused, Status: string(RunPaused)})
}

func (s *sched) resume() {
	if !s.paused {
		return
	}
	s.paused = false
	s.emit(Event{Type: EventRunResumed, Status: string(RunRunning)})
}

// stop ends the run: running steps' contexts are cancelled, steps not
// started are cancelled, and the loop ends once every worker is back.
func (s *sched) stop(status RunStatus, reason string) {
	if s.stopping {
		return
	}
	s.stopping = true
	s.status = status
	if s.errMsg == "" && status != RunCancelled {
		s.errMsg = reason
	} else if s.errMsg == "" && status == RunCancelled && reason != "cancelled" {
		s.errMsg = reason
	}
	s.cancelRun()
	for _, n := range s.nodes {
		switch n.st.Status {
		case StepPending, StepReady:
			s.cancelled(n, reason)
		case StepRetrying:
			if n.timer != nil && n.timer.Stop() {
				s.async--
				n.timer = nil
			}
			s.cancelled(n, reason)
		}
	}
}

func (s *sched) retryStep(id string, args json.RawMessage) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("retry step %q: no such step in plan version %d", id, s.plan.Version)
	}
	if s.stopping {
		return fmt.Errorf("retry step %q: the run is stopping", id)
	}
	switch n.st.Status {
	case StepFailed, StepSkipped, StepCancelled:
	case StepBlocked:
		for _, d := range n.deps {
			if d.st.Status != StepCompleted && isDone(d.st.Status) {
				return fmt.Errorf("retry step %q: it is blocked because %q %s; retry that step first", id, d.step.ID, statusVerb(d.st.Status))
			}
		}
	default:
		return fmt.Errorf("retry step %q: it is %s; only failed, blocked or skipped steps can be retried", id, n.st.Status)
	}
	if len(args) > 0 {
		p := s.plan.Clone()
		i := stepIndex(p, id)
		if i < 0 {
			return fmt.Errorf("retry step %q: not in the plan", id)
		}
		st := p.Steps[i].Clone()
		st.Args = append(json.RawMessage(nil), args...)
		p.Steps[i] = st
		if probs := ValidatePlan(p, s.cfg.Tools, s.cfg.MaxSteps); len(probs) > 0 {
			return fmt.Errorf("retry step %q with new args: %w", id, &ValidationError{Problems: probs})
		}
		s.reset(n)
		s.setPlan(p, PlanUpdate{Source: "user", Reason: "retry with new args", Action: "update", StepIDs: []string{id}})
		return nil
	}
	s.reset(n)
	s.rebuild()
	return nil
}

func (s *sched) skipByUser(id string) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("skip step %q: no such step in plan version %d", id, s.plan.Version)
	}
	if n.st.Status != StepPending && n.st.Status != StepReady {
		return fmt.Errorf("skip step %q: it is %s; only steps that have not started can be skipped", id, n.st.Status)
	}
	s.skip(n, "skipped by the user")
	return nil
}

// setPlan installs a new plan version (p is a fresh clone owned by the
// scheduler) and announces it.
func (s *sched) setPlan(p *Plan, upd PlanUpdate) {
	p.Version = s.plan.Version + 1
	upd.Version = p.Version
	upd.Time = time.Now()
	p.History = append(p.History, upd)
	s.plan = p
	s.rebuild()
	s.emit(Event{Type: EventPlanUpdated, PlanVersion: p.Version, Reason: upd.Reason,
		StepID: firstOr(upd.StepIDs)})
}

func firstOr(ids []string) string {
	if len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// decide runs a decision step: the first branch whose condition holds is
// taken and the steps of the other branches are skipped.
func (s *sched) decide(n *node) {
	chosen := -1
	for i, b := range n.step.Branches {
		if b.When == "" {
			chosen = i
			break
		}
		ok, err := EvalCondition(b.When, s.outputs)
		if err != nil {
			s.fail(n, fmt.Errorf("step %q: branch %d: evaluating %q: %w", n.step.ID, i, b.When, err))
			return
		}
		if ok {
			chosen = i
			break
		}
	}
	keep := map[string]bool{}
	var taken []string
	if chosen >= 0 {
		taken = n.step.Branches[chosen].Steps
		for _, id := range taken {
			keep[id] = true
		}
	}
	for i, b := range n.step.Branches {
		if i == chosen {
			continue
		}
		for _, id := range b.Steps {
			if m := s.byID[id]; m != nil && !keep[id] && (m.st.Status == StepPending || m.st.Status == StepReady) {
				s.skip(m, fmt.Sprintf("not chosen by decision %q", n.step.ID))
			}
		}
	}
	out, _ := json.Marshal(map[string]any{"branch": chosen, "steps": nonNil(taken)})
	s.complete(n, out, false, "")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *sched) copyOutputs() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(s.outputs))
	for k, v := range s.outputs {
		m[k] = v
	}
	return m
}

func (s *sched) runStatus() RunStatus {
	switch {
	case s.finished:
		return s.status
	case s.paused:
		return RunPaused
	}
	return RunRunning
}

// compactState is the run state without Steps.
func (s *sched) compactState() RunState {
	// The plan's steps, not s.nodes: runStarted is emitted before the first
	// rebuild and must already show the totals.
	total := len(s.plan.Steps)
	done := s.counts[StepCompleted] + s.counts[StepFailed] + s.counts[StepSkipped] +
		s.counts[StepBlocked] + s.counts[StepCancelled]
	st := RunState{
		RunID:            s.r.id,
		PlanID:           s.plan.ID,
		PlanVersion:      s.plan.Version,
		Status:           s.runStatus(),
		CompletedSteps:   s.counts[StepCompleted],
		FailedSteps:      s.counts[StepFailed],
		SkippedSteps:     s.counts[StepSkipped],
		BlockedSteps:     s.counts[StepBlocked],
		TotalSteps:       total,
		CurrentSteps:     s.currentIDs(),
		StartTime:        s.start,
		ElapsedMs:        time.Since(s.start).Milliseconds(),
		LLMCalls:         s.llmCalls + s.budget.Calls(), // steps' and the planner's
		ToolCalls:        s.toolCalls,
		RePlans:          s.rePlans,
		RePlanIterations: s.rePlans,
		Snapshots:        s.r.snapshots(),
		Error:            s.errMsg,
	}
	st.Tokens, st.CostUSD = s.budget.Used()
	if total > 0 {
		st.Progress = float64(done) / float64(total)
	} else {
		st.Progress = 1
	}
	if s.durN > 0 && total > done {
		// The remaining steps at the mean step time, divided by the
		// parallelism seen so far: the step time finished per unit of time
		// until the last step ended (1 for a chain, up to maxParallel).
		par := 1.0
		if span := s.lastEnd.Sub(s.start); span > 0 {
			par = float64(s.durSum) / float64(span)
		}
		par = min(max(par, 1), float64(s.maxParallel))
		mean := float64(s.durSum) / float64(s.durN)
		eta := time.Duration(mean * float64(total-done) / par).Milliseconds()
		st.EtaMs = &eta
	}
	return st
}

func (s *sched) currentIDs() []string {
	ns := make([]*node, 0, len(s.current))
	for n := range s.current {
		ns = append(ns, n)
	}
	slices.SortFunc(ns, func(a, b *node) int { return a.idx - b.idx })
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = n.step.ID
	}
	return ids
}

// fullState is the run state with a copy of every step's state.
func (s *sched) fullState() RunState {
	st := s.compactState()
	st.Steps = make([]StepState, len(s.nodes))
	for i, n := range s.nodes {
		ss := n.st
		ss.ChangeIDs = slices.Clone(n.st.ChangeIDs)
		st.Steps[i] = ss
	}
	st.Rollback = s.rollback
	st.FilesChanged = slices.Clone(s.files)
	return st
}

// emit publishes ev with the compact state, if anyone listens.
func (s *sched) emit(ev Event) {
	if !s.r.ev.active() {
		return
	}
	ev.RunID = s.r.id
	ev.Time = time.Now()
	st := s.compactState()
	ev.State = &st
	s.r.ev.publish(ev)
}

// finish settles the run's status, rolls back if asked, and publishes the
// final state.
func (s *sched) finish() {
	for _, n := range s.nodes {
		if n.st.Status == StepPending || n.st.Status == StepReady {
			if s.stopping {
				s.cancelled(n, "the run was stopped")
			} else {
				s.block(n, "its dependencies can never complete")
			}
		}
	}
	if s.status == "" {
		if s.counts[StepFailed] > 0 || s.skippedFailures > 0 {
			s.status = RunPartial
		} else {
			s.status = RunCompleted
		}
	}
	s.cancelRun()
	s.wg.Wait()
	if s.status == RunFailed && s.opts.RollbackOnFailure && s.cfg.Snapshots != nil {
		s.doRollback()
	}
	s.finished = true
	final := s.fullState()
	final.Status = s.status
	final.OriginalPlan = s.original
	final.FinalPlan = s.plan.Clone()
	final.Summary = Summary(final.FinalPlan, final)
	s.emit(Event{Type: EventRunFinished, Status: string(s.status), Error: s.errMsg})
	s.r.final = final
	s.r.finalPlan = s.plan
	s.r.ev.close()
	close(s.r.done)
}

func (s *sched) doRollback() {
	snaps := s.r.snapshots()
	if len(snaps) == 0 {
		return
	}
	ctx := context.WithoutCancel(s.baseCtx)
	info, err := s.cfg.Snapshots.Restore(ctx, RestoreRequest{SnapshotID: snaps[0], Since: snaps[len(snaps)-1]})
	if info == nil {
		info = &RestoreInfo{SnapshotID: snaps[0]}
	}
	if info.SnapshotID == "" {
		info.SnapshotID = snaps[0]
	}
	if err != nil {
		info.Error = fmt.Sprintf("rolling back to %s: %v", snaps[0], err)
		s.log.Error("rollback failed", "snapshot", snaps[0], "err", err)
	}
	s.rollback = info
}
