package engine

import (
	"container/heap"
	"context"
	"fmt"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"log/slog"
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
	policy      approval.ApprovalPolicy
	maxParallel int
	review      ReviewMode
	stepTimeout time.Duration
	budget      *RunBudget

	baseCtx   context.Context
	ctx       context.Context // cancelled by stop: every worker derives from it
	cancelRun context.CancelFunc
	snapOrder stepSnapshots // serialises snapshots and decides their limits (step_snapshot.go)

	plan     *plans.Plan
	original *plans.Plan
	// skippedFailures counts failed steps the user chose to skip; the run
	// then ends partial, not completed.
	skippedFailures int
	nodes           []*node
	byID            map[string]*node
	ready           nodeHeap
	outputs         plans.Outputs
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
	replan              replanState
	timing              timing
	rollback            *RestoreInfo
	journal             *runJournal // nil without Config.Journal
	files               []string
	filesSeen           map[string]bool
	wg                  sync.WaitGroup
}

// replanState is the run's bounded re-planning (recovery.go).
type replanState struct {
	max   int  // RunOptions.MaxRePlans or plans.DefaultMaxRePlans
	done  int  // re-plans made
	off   bool // re-planning stopped (the bound reached or a planner failure)
	busy  bool // a re-plan is in flight; later asks queue
	queue []replanAsk
}

// timing is what the run's progress estimate (runstate.go) reads.
type timing struct {
	start   time.Time
	lastEnd time.Time // when the last step that ran ended
	durSum  time.Duration
	durN    int
}

// node is one step of the current plan and its run state.
type node struct {
	step       *plans.Step
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
	// declined: the last attempt was skipped because the user (or the
	// approval policy) said no; the run then ends partial.
	declined bool
	// unreal: in a dry run, the step's effects were only proposed (a
	// command not run, a change not applied) or it would run.
	unreal bool
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

func newSched(e *Engine, ctx context.Context, p *plans.Plan, opts RunOptions) *sched {
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
		outputs:   plans.Outputs{},
		counts:    map[StepStatus]int{},
		current:   map[*node]struct{}{},
		filesSeen: map[string]bool{},
		budget:    NewBudget(opts.MaxTokens, opts.MaxCostUSD),
		timing:    timing{start: time.Now()},
	}
	s.ctx, s.cancelRun = context.WithCancel(ctx)
	if pl := opts.Planning; pl != nil {
		s.budget.mu.Lock()
		s.budget.calls += pl.Calls
		s.budget.add(pl.Usage)
		s.budget.mu.Unlock()
	}
	switch {
	case opts.Approval != nil:
		s.policy = opts.Approval.WithDefaults()
	case cfg.Approval != nil:
		s.policy = cfg.Approval.WithDefaults()
	default:
		s.policy = approval.DefaultApprovalPolicy()
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
	s.replan.max = plans.DefaultMaxRePlans
	if opts.MaxRePlans != nil {
		s.replan.max = *opts.MaxRePlans
	}
	s.stepTimeout = opts.StepTimeout
	if s.stepTimeout <= 0 {
		s.stepTimeout = plans.DefaultStepTimeout
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
			why := "the run's context was cancelled"
			if c := context.Cause(s.baseCtx); c != nil && c != context.Canceled {
				// The front end said why (Ctrl-C, "q", closed input).
				why = c.Error()
			}
			s.stop(RunCancelled, why)
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
		ok, err := plans.EvalCondition(step.When, s.outputs)
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
	if step.EffectiveKind() == plans.KindDecision {
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
func (s *sched) outputsFor(step *plans.Step) plans.Outputs {
	out := plans.Outputs{}
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
	n.st.RejectedChangeIDs = append(n.st.RejectedChangeIDs, res.rejectedIDs...)
	n.st.PartlyRejectedChangeIDs = append(n.st.PartlyRejectedChangeIDs, res.partlyIDs...)
	n.st.UnappliedChangeIDs = append(n.st.UnappliedChangeIDs, res.unappliedIDs...)
	for _, f := range res.files {
		if !s.filesSeen[f] {
			s.filesSeen[f] = true
			s.files = append(s.files, f)
		}
	}
	if res.snapshotID != "" {
		n.st.SnapshotID = res.snapshotID
	}
	n.st.IgnoredChanged = append(n.st.IgnoredChanged, res.ignoredChanged...)
	if j.gen != n.gen {
		return
	}
	if res.aborted {
		s.stop(RunCancelled, fmt.Sprintf("aborted by the user while reviewing step %q", n.step.ID))
	}
	if res.dry {
		n.unreal = true
	}
	switch {
	case s.stopping && res.err != nil:
		s.cancelled(n, "the run was stopped")
	case res.skipped != "":
		n.declined = res.declined
		if res.output != nil {
			n.st.Output = res.output
		}
		s.skip(n, res.skipped)
	case res.err == nil:
		note := res.wouldRun
		if note == "" {
			note = res.partlyNote
		}
		s.completeWith(n, res.output, res.needsMore, res.suggestion, note)
	default:
		n.st.Output = res.output // what the failed attempt produced, for people and planners
		s.stepError(n, res.err)
	}
}
