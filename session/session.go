// Package session builds what a workspace needs once, for every front end
// (the editor server, ACP, the terminal): the workspace, its snapshot
// store, its journal, the review book, the engine's wiring and the
// approval policy. It owns the operations whose meaning must not depend on
// where the user stands: restore (recorded), undo the last run, undo the
// last restore, and the policy. Front ends keep only their wire or screen.
package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// Options say how to open a session.
type Options struct {
	// Root is the workspace folder; WS, if set, is it already open.
	Root string
	WS   *workspace.Workspace
	// StateDir is where the shadow repository and the journal live (""
	// is the default state dir).
	StateDir string
	Logger   *slog.Logger
	// Background opens the snapshot store in the background (Open returns
	// at once; Store waits for it). A daemon also watches the tree and
	// prunes the store every GCInterval while ctx lives.
	Background bool
	Daemon     bool
	GCInterval time.Duration
	// JournalOptional opens the session without a journal when it cannot
	// be opened (logged): snapshot commands work on the store alone.
	JournalOptional bool
	// NoSnapshots opens no store (a terminal run with snapshots off).
	NoSnapshots bool
	// MaxFileSize, if set, is the largest file tools read and snapshots
	// keep, over the config's maxFileSize (ConfigMaxFileSize); with WS
	// set, snapshots keep what WS reads (OpenWorkspace gives it the
	// config's limit).
	MaxFileSize int64
	// AllowBroadWorkspace lets Root be / or the home directory
	// (workspace.CheckRoot).
	AllowBroadWorkspace bool
	// OpenWorkspace and OpenStore replace workspace.Open and gitops.Open
	// (tests).
	OpenWorkspace func(root string) (*workspace.Workspace, error)
	OpenStore     func(ctx context.Context, ws *workspace.Workspace, stateDir string) (*gitops.Store, error)
	// Plans, if set, is the store of plans the front end kept before the
	// workspace was open (an editor server's, NewPlanStore(nil, ...)): the
	// session keeps its plans in the journal from now on (Session.Plans).
	Plans *PlanStore
}

// Session is one workspace's session.
type Session struct {
	WS      *workspace.Workspace
	Journal *engine.Journal // nil when it could not be opened (logged)
	Book    *review.Book
	log     *slog.Logger

	storeReady chan struct{}
	store      *gitops.Store
	storeErr   error
	bg         sync.WaitGroup

	// Buffers, if set, is the front end's read and write of its editor's
	// buffers: restores and undos go around the buffers the user edited
	// (buffers.go) and give the others the new text through it.
	Buffers EditorBuffers

	policyMu sync.Mutex

	// chats are the workspace's chats (chat.go), in its journal.
	chats *ChatStore

	// plans are the workspace's plans (plans.go), in its journal; loaded
	// at the first use (plansOnce).
	plans     *PlanStore
	plansOnce sync.Once

	// userGit holds, per run in progress, the user's repository as it was
	// at the run's start (usergit.go).
	userGitMu sync.Mutex
	userGit   map[string]*userGitRun

	// liveRuns are the runs this session started, until they end
	// (*engine.Run by id): a chat's "now" cancels its turn's run.
	liveRuns sync.Map
}

// Open opens the session of the workspace at opts.Root (or opts.WS).
func Open(ctx context.Context, opts Options) (*Session, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Where agentd works and writes, before anything is opened or
	// written (issue 24): front ends that must refuse before they ask
	// anything else call CheckPlaces first, and name their own field.
	root := opts.Root
	if opts.WS != nil {
		root = opts.WS.Root()
	}
	if err := CheckPlaces(root, opts.StateDir, opts.AllowBroadWorkspace); err != nil {
		return nil, err
	}
	ws := opts.WS
	if ws == nil {
		open := opts.OpenWorkspace
		if open == nil {
			open = func(root string) (*workspace.Workspace, error) { return OpenWorkspace(root, opts.MaxFileSize) }
		}
		var err error
		if ws, err = open(opts.Root); err != nil {
			return nil, err
		}
	}
	maxSize := opts.MaxFileSize
	if maxSize <= 0 {
		maxSize = ws.MaxFileSize() // what tools read, snapshots keep
	}
	s := &Session{WS: ws, log: log, storeReady: make(chan struct{}), userGit: map[string]*userGitRun{}, plans: opts.Plans}
	if s.plans == nil {
		s.plans = NewPlanStore(nil, log)
	}
	j, err := engine.OpenJournal(opts.StateDir, ws.Root(), log)
	if err == nil {
		s.chats = NewChatStore(j)
	} else {
		s.chats = NewChatStore(nil)
	}
	s.chats.cancelRun = func(runID string) bool {
		r, ok := s.liveRuns.Load(runID)
		if ok {
			r.(*engine.Run).Cancel()
		}
		return ok
	}
	s.chats.guideRun = func(runID, text string) (bool, []string) {
		r, ok := s.liveRuns.Load(runID)
		if !ok {
			return false, nil
		}
		return true, r.(*engine.Run).Guide(text)
	}
	s.Book = NewBook(j, func(cs string, err error) {
		log.Error("the review of a change set is not recorded", "change", cs, "err", err)
	})
	if err != nil {
		if !opts.Background && !opts.JournalOptional {
			if opts.WS == nil {
				ws.Close()
			}
			return nil, err
		}
		log.Error("the workspace's journal cannot be opened; plans, runs, rules and undo will not be kept", "error", err)
	} else {
		s.Journal = j
	}
	if opts.NoSnapshots {
		s.storeErr = errors.New("snapshots are off")
		close(s.storeReady)
		return s, nil
	}
	// Every write a review decision makes is the agent's (engine.Ledger).
	s.Book.RecordEdits(engine.LedgerRecorder(engine.StoreLedger(s.Store)))
	openStore := opts.OpenStore
	if openStore == nil {
		openStore = func(ctx context.Context, ws *workspace.Workspace, dir string) (*gitops.Store, error) {
			return gitops.Open(ctx, ws, gitops.Options{StateDir: dir, Logger: log.With("component", "gitops"), MaxFileSize: maxSize})
		}
	}
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = gitops.DefaultStateDir()
	}
	openIt := func() {
		defer close(s.storeReady)
		store, err := openStore(ctx, ws, stateDir)
		if err != nil {
			s.storeErr = fmt.Errorf("the snapshot store of %s cannot be opened: %w", ws.Root(), err)
			return
		}
		s.store = store
		if opts.Daemon {
			// The watcher's dirty set spares snapshots a walk of the
			// tree; a periodic full walk stays the truth.
			if err := store.Watch(ctx); err != nil {
				log.Warn("file watcher off; snapshots walk the tree", "root", ws.Root(), "error", err)
			}
			if opts.GCInterval > 0 {
				s.bg.Add(1)
				go func() {
					defer s.bg.Done()
					store.GCLoop(ctx, opts.GCInterval)
				}()
			}
		}
	}
	if opts.Background {
		go openIt()
		return s, nil
	}
	openIt()
	if s.storeErr != nil {
		return nil, s.storeErr
	}
	return s, nil
}

// Plans is the workspace's store of plans, for every front end (the one
// version rule: PlanStore). The first call loads the plans the journal
// recorded.
func (s *Session) Plans() *PlanStore {
	s.plansOnce.Do(func() { s.plans.keep(s.Journal, s.log) })
	return s.plans
}

// Store is the snapshot store, waiting for it if it is being opened.
func (s *Session) Store() (*gitops.Store, error) {
	<-s.storeReady
	if s.store == nil {
		if s.storeErr != nil {
			return nil, fmt.Errorf("snapshots unavailable: %w", s.storeErr)
		}
		return nil, errors.New("snapshots unavailable")
	}
	return s.store, nil
}

// Wait waits for the session's background work (the store's pruning),
// which ends with the context Open was given.
func (s *Session) Wait() {
	<-s.storeReady // the store's opening adds the pruning
	s.bg.Wait()
}

// Close closes the store and the workspace.
func (s *Session) Close() error {
	s.chats.Close()
	<-s.storeReady
	s.bg.Wait()
	var err error
	if s.store != nil {
		err = s.store.Close()
	}
	return errors.Join(err, s.WS.Close())
}

// Config is the engine configuration of this session: workspace,
// journal, review book, snapshots (with the agent's unsaved buffers) and
// the approval policy; the front end adds its hooks (approver, reviewer,
// writer...), planner and model.
func (s *Session) Config() engine.Config {
	cfg := engine.Config{WS: s.WS, Journal: s.Journal, Book: s.Book, Snapshots: Snapshotter{s}, Ledger: sessionLedger{engine.StoreLedger(s.Store), s},
		Subscribers: []engine.Subscriber{userGitRecorder{s}, chatRecorder{s}}}
	if pol, err := s.Policy(); err == nil {
		cfg.Approval = &pol
	} else {
		s.log.Error("the approval policy cannot be read; using the default", "error", err)
	}
	return cfg
}

// Snapshotter is the one snapshot adapter of every front end: a snapshot
// records the agent's unsaved buffer contents (what the agent left is the
// agent's, saved or not), and a rollback restores around the buffers the
// user edited.
type Snapshotter struct{ S *Session }

// Snapshot implements engine.Snapshotter.
func (a Snapshotter) Snapshot(ctx context.Context, req engine.SnapshotRequest) (engine.SnapshotInfo, error) {
	store, err := a.S.Store()
	if err != nil {
		return engine.SnapshotInfo{}, err
	}
	sn, err := store.Snapshot(ctx, gitops.SnapshotOptions{RunID: req.RunID, StepID: req.StepID, Label: req.Label,
		Limit: req.Limit, Contents: a.S.WS.AgentContents()})
	if err != nil {
		return engine.SnapshotInfo{}, err
	}
	if req.StepID == "" && req.Label == engine.LabelRunStart {
		// The start snapshot is what undo returns the workspace to; the
		// user's repository as it is now is what the run's leftovers
		// are counted from (usergit.go).
		a.S.userGitBefore(ctx, req.RunID)
	}
	return engine.SnapshotInfo{ID: sn.ID, Skipped: sn.Skipped}, nil
}

// ChangedPaths implements engine.SnapshotDiffer: the paths that differ
// between snapshots from and to (both paths of a rename).
func (a Snapshotter) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	store, err := a.S.Store()
	if err != nil {
		return nil, err
	}
	diffs, err := store.Diff(ctx, from, to)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range diffs {
		for _, p := range []string{d.OldPath, d.NewPath} {
			if p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// FileAt implements engine.SnapshotReader: one file of a snapshot
// (gitops.Store.FileAt).
func (a Snapshotter) FileAt(ctx context.Context, id, path string) ([]byte, fs.FileMode, bool, error) {
	store, err := a.S.Store()
	if err != nil {
		return nil, 0, false, err
	}
	return store.FileAt(ctx, id, path)
}

// KeepPreImages implements engine.PreImageKeeper: the ignored files a
// step is about to change are kept in snapshots from then on
// (gitops.Store.Keep).
func (a Snapshotter) KeepPreImages(ctx context.Context, paths []string) error {
	store, err := a.S.Store()
	if err != nil {
		return err
	}
	_, err = store.Keep(ctx, paths)
	return err
}

// Restore implements engine.Snapshotter (a run's rollback on failure).
func (a Snapshotter) Restore(ctx context.Context, req engine.RestoreRequest) (*engine.RestoreInfo, error) {
	res, err := a.S.restore(ctx, req.SnapshotID, gitops.RestoreOptions{Paths: req.Paths, Overwrite: req.Overwrite})
	info := &engine.RestoreInfo{SnapshotID: req.SnapshotID}
	if res != nil {
		info.Restored = append(append(append(info.Restored, res.Restored...), res.Created...), res.Deleted...)
		for _, c := range res.Conflicts {
			info.Conflicts = append(info.Conflicts, c.Path)
		}
	}
	if err != nil {
		info.Error = err.Error()
		return info, fmt.Errorf("restoring snapshot %s: %w", req.SnapshotID, err)
	}
	return info, nil
}

// OpenJournal opens the journal of the workspace at root (its real path)
// alone, for a front end that reads or records plans, runs and rules
// without a whole session (agentd runs, agentd rules, a plan's
// confirmation). It checks the state dir as Open does.
func OpenJournal(stateDir, root string, log *slog.Logger) (*engine.Journal, error) {
	if err := checkStateDir(stateDir, root); err != nil {
		return nil, err
	}
	return engine.OpenJournal(stateDir, root, log)
}

// NewBook is a review book whose sets and decisions are kept in the
// journal j (none kept when j is nil); unrecorded is told of each set the
// journal could not record.
func NewBook(j *engine.Journal, unrecorded func(cs string, err error)) *review.Book {
	b := review.NewBook()
	if j != nil {
		b.Keep(j.Journal, unrecorded)
	}
	return b
}

// RecordBookEdits makes what book writes (a decision at `agentd review`,
// outside any run's process) recorded as its run's edits in the snapshot
// store of ws, as a run records them, so that undo takes them back. The
// returned func closes the store; the Recovery is what the store's
// opening did about an interrupted operation (Session.Recovered), for the
// caller to say first. An error means the store cannot be opened:
// decisions would then not be undoable, and the caller says so.
func RecordBookEdits(ctx context.Context, book *review.Book, ws *workspace.Workspace, stateDir string) (func(), *Recovery, error) {
	if stateDir == "" {
		stateDir = gitops.DefaultStateDir()
	}
	store, err := gitops.Open(ctx, ws, gitops.Options{StateDir: stateDir, MaxFileSize: ws.MaxFileSize()})
	if err != nil {
		return func() {}, nil, err
	}
	book.RecordEdits(engine.LedgerRecorder(engine.StoreLedger(func() (*gitops.Store, error) { return store, nil })))
	var j *journal.Journal
	if ej, err := OpenJournal(stateDir, ws.Root(), nil); err == nil {
		j = ej.Journal
	}
	rec, err := recoveryOf(ctx, store, j, slog.New(slog.DiscardHandler))
	if err != nil {
		rec = nil // the report could not be read: the store's own log says so
	}
	return func() { store.Close() }, rec, nil
}
