package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentd/agentd/gitops"
)

// Journal is a workspace's record of its runs, plans, pending change sets
// and remembered approval rules, kept in the state dir beside the
// workspace's shadow repository (never inside the workspace). Every front
// end (the editor server, agentd run, later ones) writes and reads the
// same journal, so a restarted daemon and `agentd runs` find what any of
// them did. Each record is written atomically (temp file, fsync, rename,
// fsync of the directory) before the save returns: what a front end
// acknowledges is on disk. A save that fails returns an error naming the
// file and what to do.
type Journal struct {
	dir   string
	log   *slog.Logger
	rules *ApprovalRules
}

// JournalInterval is the shortest time between two saves of a running
// run's state (each one fsyncs); the first and the final state are always
// saved.
var JournalInterval = time.Second

// JournalDir is where the journal of the workspace at root lives under
// stateDir ("" = the default state dir): beside its shadow repository.
func JournalDir(stateDir, root string) string {
	return filepath.Join(gitops.StoreDir(stateDir, root), "journal")
}

// OpenJournal opens (creating it if needed) the journal of the workspace
// at root, the workspace's real path (workspace.Workspace.Root). log
// receives warnings about damaged records; nil discards them.
func OpenJournal(stateDir, root string, log *slog.Logger) (*Journal, error) {
	if root == "" {
		return nil, errors.New("journal: no workspace root")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stateDir == "" {
		stateDir = gitops.DefaultStateDir()
	}
	dir := JournalDir(stateDir, root)
	// Earlier builds kept the server's state in rpc/ beside the shadow
	// repository, and before that under a hash of their own.
	sum := sha256.Sum256([]byte(root))
	for _, old := range []string{
		filepath.Join(gitops.StoreDir(stateDir, root), "rpc"),
		filepath.Join(stateDir, "workspaces", hex.EncodeToString(sum[:8]), "rpc"),
	} {
		moveOnce(old, dir, log)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: creating %s: %w (check that the state dir is writable, or choose another with --state-dir or AGENTD_STATE_DIR)", dir, err)
	}
	j := &Journal{dir: dir, log: log}
	j.rules = &ApprovalRules{path: filepath.Join(dir, "rules.json")}
	return j, nil
}

// moveOnce moves state an older build kept at old to dir, if dir does not
// exist yet; the newer state wins and the older is left for the user.
func moveOnce(old, dir string, log *slog.Logger) {
	if _, err := os.Stat(old); err != nil {
		return
	}
	if _, err := os.Lstat(dir); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		log.Warn("could not move the workspace's saved state; it stays where it is", "from", old, "to", dir, "err", err)
		return
	}
	if err := os.Rename(old, dir); err != nil {
		log.Warn("could not move the workspace's saved state; it stays where it is", "from", old, "to", dir, "err", err)
		return
	}
	_ = os.Remove(filepath.Dir(old)) // only if empty
	log.Info("moved the workspace's saved state", "from", old, "to", dir)
}

// Dir is the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// Rules is the workspace's store of remembered approval rules.
func (j *Journal) Rules() *ApprovalRules { return j.rules }

func safeName(id string) string {
	return strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace(id)
}

// RecordName is the file name (without .json) of the record of id.
func RecordName(id string) string { return safeName(id) }

// Warn logs a problem with a record of the journal, naming its file.
func (j *Journal) Warn(msg, file string, err error) { j.log.Warn(msg, "file", file, "err", err) }

// Save writes v as JSON to name (a slash path inside the journal, such as
// "policy.json") atomically.
func (j *Journal) Save(name string, v any) error {
	return writeJSONFile(filepath.Join(j.dir, filepath.FromSlash(name)), v)
}

// Load reads name into v; false when there is no such record.
func (j *Journal) Load(name string, v any) (bool, error) {
	path := filepath.Join(j.dir, filepath.FromSlash(name))
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s is damaged: %w (move it away to start afresh)", path, err)
	}
	return true, nil
}

// writeJSONFile writes v to path atomically: temp file, fsync, rename,
// fsync of the directory. The error names the file and what to do.
func writeJSONFile(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return writeFileAtomic(path, data)
}

// writeFileAtomic writes data to path: temp file, fsync, rename, fsync of
// the directory. The error names the file and what to do.
func writeFileAtomic(path string, data []byte) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("saving %s: %w (check that the state dir is writable and has space, or choose another with --state-dir or AGENTD_STATE_DIR)", path, err)
		}
	}()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readRecords decodes every *.json record of sub, sorted by name. A record
// that cannot be read is left out and logged with its file name.
func readRecords[T any](j *Journal, sub string) ([]T, error) {
	dir := filepath.Join(j.dir, sub)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	sort.Slice(ents, func(a, b int) bool { return ents[a].Name() < ents[b].Name() })
	var out []T
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			j.log.Warn("a saved record cannot be read; leaving it out", "file", path, "err", err)
			continue
		}
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			j.log.Warn("a saved record is damaged; leaving it out (move it away to silence this)", "file", path, "err", err)
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

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
	recs, err := readRecords[journalRun](j, "runs")
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
				j.log.Error("could not record that a run ended with its process", "run", st.RunID, "err", err)
			}
		}
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
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// SavePlan records a plan's latest version, in PlanFile(p.ID).
func (j *Journal) SavePlan(p *Plan) error {
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
	return writeFileAtomic(path, b.Bytes())
}

// PlanFile is the file that holds the record of the plan id: the one name
// every front end shows the user for a saved plan.
func (j *Journal) PlanFile(id string) string {
	return filepath.Join(j.dir, "plans", safeName(id)+".json")
}

// Plans returns every recorded plan.
func (j *Journal) Plans() ([]*Plan, error) { return readRecords[*Plan](j, "plans") }

// SaveChange records a change set and its review state (v is the front
// end's record of it).
func (j *Journal) SaveChange(id string, v any) error {
	return j.Save("changes/"+safeName(id)+".json", v)
}

// Changes returns every recorded change set, undecoded.
func (j *Journal) Changes() ([]json.RawMessage, error) {
	return readRecords[json.RawMessage](j, "changes")
}

// Record is one record of the journal, undecoded, with its file.
type Record struct {
	File string
	Data json.RawMessage
}

// ChangesExcept returns the recorded change sets whose record name
// (RecordName) is not in known, reading only those files: a front end
// picks up what another process recorded since it last looked.
func (j *Journal) ChangesExcept(known map[string]bool) ([]Record, error) {
	dir := filepath.Join(j.dir, "changes")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var out []Record
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if e.IsDir() || !ok || strings.HasPrefix(name, ".") || known[name] {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			j.log.Warn("a saved record cannot be read; leaving it out", "file", path, "err", err)
			continue
		}
		out = append(out, Record{File: path, Data: data})
	}
	return out, nil
}

// runJournal keeps one run's record up to date: it is a subscriber of the
// run (so saves never slow the scheduler) that saves the full state at
// most every JournalInterval on step transitions; the scheduler saves the
// first and the final state through it.
type runJournal struct {
	j   *Journal
	r   *Run
	log *slog.Logger

	mu    sync.Mutex
	last  time.Time
	final bool // the final state is saved: nothing older may replace it
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
	due := !rj.final && (status || time.Since(rj.last) >= JournalInterval)
	if due {
		rj.last = time.Now()
	}
	rj.mu.Unlock()
	if !due {
		return
	}
	// State is taken without rj.mu: the scheduler may be saving the final
	// state through rj and not answering.
	st := rj.r.State()
	if err := rj.save(st, false); err != nil {
		rj.log.Error("the run's journal could not be saved; a crash now would lose its progress", "err", err)
	}
}
