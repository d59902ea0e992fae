package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/internal/platform"
	"github.com/agentd/agentd/journal"
)

// Journal is the workspace's journal (package journal) as the engine reads
// it: runs as RunState, plans as Plan, and the store of remembered approval
// rules. Every front end gets it from the session (package session).
type Journal struct {
	*journal.Journal
	rules *approval.ApprovalRules
}

// JournalInterval is the shortest time between two saves of a running
// run's state (each one fsyncs); the first and the final state are always
// saved.
var JournalInterval = time.Second

// JournalDir is where the journal of the workspace at root lives under
// stateDir ("" = the default state dir): beside its shadow repository.
func JournalDir(stateDir, root string) string { return journal.Dir(stateDir, root) }

// OpenJournal opens (creating it if needed) the journal of the workspace
// at root, the workspace's real path (workspace.Workspace.Root). log
// receives warnings about damaged records; nil discards them.
func OpenJournal(stateDir, root string, log *slog.Logger) (*Journal, error) {
	j, err := journal.Open(stateDir, root, log)
	if err != nil {
		return nil, err
	}
	return WrapJournal(j), nil
}

// WrapJournal is the engine's view of j.
func WrapJournal(j *journal.Journal) *Journal {
	return &Journal{Journal: j, rules: approval.NewRules(j.Dir() + string(os.PathSeparator) + "rules.json")}
}

// Rules is the workspace's store of remembered approval rules.
func (j *Journal) Rules() *approval.ApprovalRules { return j.rules }

func safeName(id string) string { return journal.RecordName(id) }

// journalRun is a run's record: its state and the process running it, so
// that a run whose process died is not shown as running forever.
type journalRun struct {
	RunState
	PID int `json:"pid,omitempty"`
	// Proc tells the process from a later one with the same id (see
	// procIdentity); empty where the system cannot say.
	Proc string `json:"proc,omitempty"`
}

// SaveRun records a run's state, as the process running it.
func (j *Journal) SaveRun(st RunState) error {
	return j.Save("runs/"+safeName(st.RunID)+".json", journalRun{RunState: st, PID: os.Getpid(), Proc: selfIdentity()})
}

var selfIdentity = sync.OnceValue(func() string { return procIdentity(os.Getpid()) })

// Runs returns every recorded run, newest first. A run recorded as
// running or paused by a process that is gone is failed (and recorded so):
// it can never finish.
func (j *Journal) Runs() ([]RunState, error) {
	recs, err := journal.Records[journalRun](j.Journal, "runs")
	if err != nil {
		return nil, err
	}
	out := make([]RunState, 0, len(recs))
	for _, r := range recs {
		st := r.RunState
		if (st.Status == RunRunning || st.Status == RunPaused) && !processAlive(r.PID, r.Proc) {
			st.Status = RunFailed
			st.Error = "the agentd process running it stopped before the run ended; start the plan again"
			if err := j.Save("runs/"+safeName(st.RunID)+".json", journalRun{RunState: st, PID: r.PID, Proc: r.Proc}); err != nil {
				j.Log().Error("could not record that a run ended with its process", "run", st.RunID, "err", err)
			}
		}
		st.Undone = j.undone(st)
		out = append(out, st)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].StartTime.Equal(out[b].StartTime) {
			return out[a].StartTime.After(out[b].StartTime)
		}
		return out[a].RunID < out[b].RunID
	})
	return out, nil
}

// processAlive reports whether pid names a live process (0: unknown, an
// older record: not alive) that is the one whose identity was proc: the id
// of a process that ended is given to later ones, and a daemon started
// anew in a container often gets the same id as the one that crashed.
func processAlive(pid int, proc string) bool {
	if pid <= 0 {
		return false
	}
	if proc != "" {
		if now := procIdentity(pid); now != "" {
			return now == proc
		}
	}
	if pid == os.Getpid() {
		return proc == "" || proc == selfIdentity()
	}
	return platform.ProcessExists(pid)
}

// SavePlan records a plan's latest version, in PlanFile(p.ID).
func (j *Journal) SavePlan(p *plans.Plan) error {
	if p.ID == "" {
		return errors.New("journal: a plan without an id cannot be recorded")
	}
	// Indented and with & < > as they are: people open this file (agentd
	// run --request prints its path and offers to edit it).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	path := j.PlanFile(p.ID)
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return journal.WriteFileAtomic(path, b.Bytes())
}

// PlanFile is the file that holds the record of the plan id: the one name
// every front end shows the user for a saved plan.
func (j *Journal) PlanFile(id string) string {
	return filepath.Join(j.Dir(), "plans", safeName(id)+".json")
}

// Plans returns every recorded plan.
func (j *Journal) Plans() ([]*plans.Plan, error) {
	return journal.Records[*plans.Plan](j.Journal, "plans")
}

// runJournal keeps one run's record up to date: it is a subscriber of the
// run (so saves never slow the scheduler) that saves the full state at
// most every JournalInterval on step transitions; a transition that comes
// sooner is saved once the interval is over (the run may send nothing more
// for long: paused, or running one slow step), so the record never lags
// by more than the interval. The scheduler saves the first and the final
// state through it.
type runJournal struct {
	j   *Journal
	r   *Run
	log *slog.Logger

	mu    sync.Mutex
	last  time.Time
	final bool        // the final state is saved: nothing older may replace it
	later *time.Timer // the save of a transition that came within the interval
}

// save records st; once the final state is saved, earlier ones are dropped.
func (rj *runJournal) save(st RunState, final bool) error {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if rj.final {
		return nil
	}
	rj.final = final
	return rj.j.SaveRun(st)
}

func (rj *runJournal) OnEvent(ev Event) {
	switch ev.Type {
	case EventStepStarted, EventStepFinished, EventStepFailed, EventStepSkipped, EventStepBlocked,
		EventStepCancelled, EventRunPaused, EventRunResumed, EventPlanUpdated, EventSnapshotTaken:
	default:
		return
	}
	rj.mu.Lock()
	// A pause or resume is the run's status, which other processes list
	// and one-run-at-a-time (Start) reads: saved at once.
	status := ev.Type == EventRunPaused || ev.Type == EventRunResumed
	wait := JournalInterval - time.Since(rj.last)
	due := !rj.final && (status || wait <= 0)
	if due {
		rj.last = time.Now()
		if rj.later != nil {
			rj.later.Stop() // this save takes its state
			rj.later = nil
		}
	} else if !rj.final && rj.later == nil {
		rj.later = time.AfterFunc(wait, rj.saveLater)
	}
	rj.mu.Unlock()
	if due {
		rj.saveNow()
	}
}

// saveLater saves the state a transition left unsaved within the interval.
func (rj *runJournal) saveLater() {
	rj.mu.Lock()
	rj.later = nil
	if rj.final {
		rj.mu.Unlock()
		return
	}
	rj.last = time.Now()
	rj.mu.Unlock()
	rj.saveNow()
}

func (rj *runJournal) saveNow() {
	// State is taken without rj.mu: the scheduler may be saving the final
	// state through rj and not answering.
	st := rj.r.State()
	if err := rj.save(st, false); err != nil {
		rj.log.Error("the run's journal could not be saved; a crash now would lose its progress", "err", err)
	}
}

// undone says whether and how st was undone: by an undo recorded in the
// journal, or by its own rollback on failure.
func (j *Journal) undone(st RunState) *journal.Undone {
	if u := j.UndoneOf(st.RunID); u != nil {
		return u
	}
	if r := st.Rollback; r != nil && r.Error == "" && len(r.Conflicts) == 0 {
		return &journal.Undone{At: st.StartTime.Add(time.Duration(st.ElapsedMs) * time.Millisecond).UTC(), How: journal.HowRollback}
	}
	return nil
}

// RunToUndo is the run an undo restores the start of (journal.RunToUndo,
// the one rule for every front end): with id "" the newest run not yet
// undone, else the run whose ID is id or starts with it.
func (j *Journal) RunToUndo(id string) (*RunState, error) {
	runs, err := j.Runs()
	if err != nil {
		return nil, err
	}
	heads := make([]journal.RunHead, len(runs))
	for i, r := range runs {
		heads[i] = journal.RunHead{RunID: r.RunID, Status: string(r.Status), StartTime: r.StartTime, Snapshots: r.Snapshots, DryRun: r.DryRun, Undone: r.Undone}
	}
	h, err := journal.RunToUndo(heads, id)
	if err != nil {
		return nil, err
	}
	for i := range runs {
		if runs[i].RunID == h.RunID {
			return &runs[i], nil
		}
	}
	return nil, fmt.Errorf("run %q: %w", id, journal.ErrNoSuchRun)
}

// Why a run cannot be undone (journal's errors, named here for the
// engine's callers).
var (
	ErrNoSuchRun      = journal.ErrNoSuchRun
	ErrAmbiguousRun   = journal.ErrAmbiguousRun
	ErrNothingToUndo  = journal.ErrNothingToUndo
	ErrRunStillActive = journal.ErrRunStillActive
)
