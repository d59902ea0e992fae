//go:build unix

package session

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// The stateful random test of undo (issue 38): sequences of runs (edits,
// creates, deletes, moves, commands) in review modes before, after and
// none with accepts and rejects, user edits before, during (while a
// change set waits for review), between and after runs, undo of the
// newest run, of an older run, undo of an undo, and SIGKILLs of a child
// process in the middle of an undo. After each undo it checks:
//
//   - every line the user wrote (a unique marker line "U<n>") is on
//     disk, or was taken by a run that is still in effect (its delete or
//     whole-file write), or its file is named in the undo's result
//     (conflict kept, or overwritten with a safety snapshot that holds
//     it: the way back is checked);
//   - every line of a run the undo names as undone ("A<run>-<n>") is gone
//     from every file the result does not name as a conflict;
//   - a refused undo (a conflict, no choice) changed nothing at all;
//   - after a kill and a reopen, no .agentd-*.tmp file is left.
//
// Seeds are printed on failure (seed=N) and replayed with
// AGENTD_UNDO_SEED=N; AGENTD_UNDO_SEQS says how many sequences run.
// `make soak-undo` runs thousands.

const (
	undoSeedEnv = "AGENTD_UNDO_SEED"
	undoSeqsEnv = "AGENTD_UNDO_SEQS"
	undoBaseEnv = "AGENTD_UNDO_BASE"
)

func TestUndoRandomSequences(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("sh is needed for the command steps: %v", err)
	}
	// make test runs the full 300 without -race (Makefile, gotest); under
	// -race, 100 keep go test -race ./...
	// within its time; make soak-undo runs thousands.
	seqs := 300
	if raceOn {
		seqs = 100
	}
	if v := os.Getenv(undoSeqsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of sequences", undoSeqsEnv, v)
		}
		seqs = n
	}
	var seeds []uint64
	if v := os.Getenv(undoSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want the seed a failure printed", undoSeedEnv, v)
		}
		seeds = []uint64{n}
	} else {
		// A fixed base in go test and make test, so the same sequences
		// run every time (a failure is the code's, never the draw's);
		// make soak-undo draws new ones (AGENTD_UNDO_BASE=time, or a
		// number to replay a soak's whole draw).
		base := uint64(1)
		switch v := os.Getenv(undoBaseEnv); v {
		case "":
		case "time":
			base = uint64(time.Now().UnixNano())
		default:
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: want a number or \"time\"", undoBaseEnv, v)
			}
			base = n
		}
		t.Logf("%s=%d", undoBaseEnv, base)
		for i := range seqs {
			seeds = append(seeds, base+uint64(i)*7919)
		}
	}
	actions, failed := 0, 0
	for _, seed := range seeds {
		w := newWorld(t, seed)
		ok := w.play()
		actions += len(w.trace)
		if ok {
			w.close()
			continue
		}
		failed++
		if failed <= 3 { // the first few in full; the rest by seed and first failure
			t.Errorf("seed=%d failed (replay: %s=%d go test -run TestUndoRandomSequences ./session/)\n%s",
				seed, undoSeedEnv, seed, w.report())
		} else {
			t.Errorf("seed=%d failed: %s", seed, w.failures[0])
		}
		w.close()
	}
	t.Logf("%d sequences, %d actions, %d failed", len(seeds), actions, failed)
}

// world is one sequence: a workspace, its session and the model.
type world struct {
	t         *testing.T
	seed      uint64
	rng       *rand.Rand
	ctx       context.Context
	ws, state string
	s         *Session
	// showLater: undos wait for Shown, as agentd undo's (the killed child).
	showLater bool
	reviewer  *randReviewer
	trace     []string // what happened, for the failure report
	failures  []string
	userSeq   int
	agentSeq  int
	fileSeq   int
	runs      []*runRec
	owed      map[string]bool     // every user marker written
	typedIn   map[string]string   // marker -> the file the user typed it into
	removedBy map[string][]string // marker -> runs whose writes took it
	parked    map[string]string   // marker -> where the way back keeps it
	undoCount int
	killCount int
	// keptFiles are files an applied undo kept as they were (conflicts
	// the user chose to keep): what they hold is the user's from then on.
	keptFiles map[string]bool
}

type runRec struct {
	id     string
	review engine.ReviewMode
	// targets are the files a whole-file step of the run (write over,
	// delete) took, with the markers they held then.
	wholeFile map[string]bool
}

func newWorld(t *testing.T, seed uint64) *world {
	w := &world{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 38)), ctx: context.Background(),
		ws: t.TempDir(), state: t.TempDir(), owed: map[string]bool{}, typedIn: map[string]string{}, removedBy: map[string][]string{}, parked: map[string]string{}}
	for i := range 4 {
		name := fmt.Sprintf("f%d.txt", i)
		lines := []string{"K" + name}
		for range 3 {
			lines = append(lines, w.newMarker())
		}
		w.writeLines(name, lines)
	}
	w.open()
	return w
}

func (w *world) open() {
	s, err := Open(w.ctx, Options{Root: w.ws, StateDir: w.state})
	if err != nil {
		w.fail("opening the session: %v", err)
		return
	}
	w.s = s
	w.reviewer = &randReviewer{book: s.Book, before: make(chan *review.Set)}
}

func (w *world) close() {
	if w.s != nil {
		w.s.Close()
		w.s = nil
	}
}

func (w *world) newMarker() string {
	w.userSeq++
	m := fmt.Sprintf("U%d", w.userSeq)
	w.owed[m] = true
	return m
}

func (w *world) say(f string, a ...any) { w.trace = append(w.trace, fmt.Sprintf(f, a...)) }

func (w *world) fail(f string, a ...any) {
	w.failures = append(w.failures, fmt.Sprintf(f, a...))
	w.say("FAIL: "+f, a...)
}

func (w *world) report() string {
	var b strings.Builder
	for i, l := range w.trace {
		fmt.Fprintf(&b, "  %3d %s\n", i, l)
	}
	fmt.Fprintf(&b, "workspace now:\n")
	for _, f := range w.files() {
		fmt.Fprintf(&b, "  %s: %s\n", f, strings.Join(w.readLines(f), " "))
	}
	w.reportLedger(&b)
	return b.String()
}

// reportLedger writes every ledger entry (owner, step, path, the file's
// lines before and after the write) into a failure's report.
func (w *world) reportLedger(b *strings.Builder) {
	if w.s == nil {
		return
	}
	store, err := w.s.Store()
	if err != nil {
		return
	}
	owners, err := store.LedgerOwners(w.ctx)
	if err != nil {
		return
	}
	blob := func(r *gitops.BlobRef) string {
		if r == nil {
			return "<absent>"
		}
		out, err := exec.Command("git", "--git-dir="+store.Dir(), "cat-file", "-p", r.Hash).Output()
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return strings.Join(strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), " ")
	}
	fmt.Fprintf(b, "ledger:\n")
	for _, o := range owners {
		es, _ := store.Ledger(w.ctx, o)
		for _, e := range es {
			fmt.Fprintf(b, "  %s %s %s: [%s] -> [%s]\n", o, e.Step, e.Path, blob(e.Before), blob(e.After))
		}
	}
}

// Files on disk ---------------------------------------------------------

func (w *world) abs(rel string) string { return filepath.Join(w.ws, filepath.FromSlash(rel)) }

func (w *world) files() []string {
	var out []string
	entries, _ := os.ReadDir(w.ws)
	for _, e := range entries {
		// Not a killed undo's temporary file: the user does not edit
		// agentd's temporaries (the reopen must remove them).
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".agentd-") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func (w *world) readLines(rel string) []string {
	data, err := os.ReadFile(w.abs(rel))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func (w *world) writeLines(rel string, lines []string) {
	if err := os.WriteFile(w.abs(rel), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		w.fail("writing %s: %v", rel, err)
	}
}

// disk maps each file to its bytes.
func (w *world) disk() map[string]string {
	m := map[string]string{}
	for _, f := range w.files() {
		b, _ := os.ReadFile(w.abs(f))
		m[f] = string(b)
	}
	return m
}

// where maps every marker on disk to its file.
func (w *world) where() map[string]string {
	m := map[string]string{}
	for _, f := range w.files() {
		for _, l := range w.readLines(f) {
			if strings.HasPrefix(l, "U") {
				m[l] = f
			}
		}
	}
	return m
}

// agentLines maps every agent line on disk to its file.
func (w *world) agentLines() map[string]string {
	m := map[string]string{}
	for _, f := range w.files() {
		for _, l := range w.readLines(f) {
			if strings.HasPrefix(l, "A") {
				m[l] = f
			}
		}
	}
	return m
}

// The user ---------------------------------------------------------------

// userEdit is one edit of the user: a marker line inserted anywhere in a
// file, an agent line replaced by a marker (a conflict for its undo), or
// a new file of the user's.
func (w *world) userEdit(when string) {
	files := w.files()
	switch r := w.rng.IntN(10); {
	case r < 6 && len(files) > 0:
		f := files[w.rng.IntN(len(files))]
		lines := w.readLines(f)
		at := w.rng.IntN(len(lines) + 1)
		m := w.newMarker()
		lines = slices.Insert(lines, at, m)
		w.writeLines(f, lines)
		w.typedIn[m] = f
		w.say("user (%s): %s into %s at line %d", when, m, f, at+1)
	case r < 8:
		var agent []string
		for l := range w.agentLines() {
			agent = append(agent, l)
		}
		sort.Strings(agent)
		if len(agent) == 0 {
			return
		}
		a := agent[w.rng.IntN(len(agent))]
		f := w.agentLines()[a]
		lines := w.readLines(f)
		m := w.newMarker()
		lines[slices.Index(lines, a)] = m
		w.writeLines(f, lines)
		w.typedIn[m] = f
		w.say("user (%s): %s replaces the agent's %s in %s", when, m, a, f)
	default:
		w.fileSeq++
		f := fmt.Sprintf("u%d.txt", w.fileSeq)
		m := w.newMarker()
		w.writeLines(f, []string{"K" + f, m})
		w.typedIn[m] = f
		w.say("user (%s): creates %s with %s", when, f, m)
	}
}

// The agent --------------------------------------------------------------

type stepSpec struct {
	ID   string         `json:"id"`
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// planSteps makes 1-3 steps on distinct files from what is on disk.
func (w *world) planSteps(run int, rec *runRec) []stepSpec {
	var steps []stepSpec
	used := map[string]bool{}
	agent := w.agentLines()
	n := 1 + w.rng.IntN(3)
	for i := 0; len(steps) < n && i < 10; i++ {
		files := w.files()
		var free []string
		for _, f := range files {
			if !used[f] {
				free = append(free, f)
			}
		}
		id := fmt.Sprintf("s%d", len(steps)+1)
		newLine := func() string { w.agentSeq++; return fmt.Sprintf("A%d-%d", run, w.agentSeq) }
		r := w.rng.IntN(14)
		if len(free) == 0 {
			r = 6
		}
		var f string
		if len(free) > 0 {
			f = free[w.rng.IntN(len(free))]
		}
		anchor := ""
		for _, l := range w.readLines(f) {
			if strings.HasPrefix(l, "K") {
				anchor = l
				break
			}
		}
		switch {
		case r < 4 && anchor != "": // insert after the anchor
			l := newLine()
			steps = append(steps, stepSpec{id, "edit_file", map[string]any{"path": f, "edits": []map[string]string{{"oldText": anchor + "\n", "newText": anchor + "\n" + l + "\n"}}}})
		case r < 6: // change an agent line
			var mine []string
			for a, af := range agent {
				if af == f {
					mine = append(mine, a)
				}
			}
			if len(mine) == 0 {
				continue
			}
			sort.Strings(mine)
			a := mine[w.rng.IntN(len(mine))]
			steps = append(steps, stepSpec{id, "edit_file", map[string]any{"path": f, "edits": []map[string]string{{"oldText": a + "\n", "newText": newLine() + "\n"}}}})
		case r < 8: // create
			w.fileSeq++
			nf := fmt.Sprintf("n%d.txt", w.fileSeq)
			f = nf
			steps = append(steps, stepSpec{id, "write_file", map[string]any{"path": nf, "content": "K" + nf + "\n" + newLine() + "\n"}})
		case r < 9: // write over
			rec.wholeFile[f] = true
			steps = append(steps, stepSpec{id, "write_file", map[string]any{"path": f, "content": anchor + "\n" + newLine() + "\n"}})
		case r < 10: // delete
			rec.wholeFile[f] = true
			steps = append(steps, stepSpec{id, "delete_file", map[string]any{"path": f}})
		case r < 12: // move
			w.fileSeq++
			to := fmt.Sprintf("m%d.txt", w.fileSeq)
			used[to] = true
			steps = append(steps, stepSpec{id, "move_file", map[string]any{"from": f, "to": to}})
		default: // a command appends a line
			steps = append(steps, stepSpec{id, "run_command", map[string]any{"command": fmt.Sprintf("printf '%%s\\n' %s >> %s", newLine(), f)}})
		}
		used[f] = true
	}
	return steps
}

// randReviewer is the front end: a `before` set waits for the driver's
// decision; an `after` set is offered and decided later (or never).
type randReviewer struct {
	book   *review.Book
	before chan *review.Set
	mu     sync.Mutex
	after  []*review.Set
}

func (r *randReviewer) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	set := review.New(cs, engine.ReviewBefore)
	r.book.Put(set)
	select {
	case r.before <- set:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.book.Wait(ctx, set)
}

func (r *randReviewer) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error {
	set := review.New(cs, engine.ReviewAfter)
	r.book.Put(set)
	r.mu.Lock()
	r.after = append(r.after, set)
	r.mu.Unlock()
	return nil
}

// agentRun runs one plan, the user editing while sets wait for review.
func (w *world) agentRun() {
	runN := len(w.runs) + 1
	rec := &runRec{wholeFile: map[string]bool{}}
	steps := w.planSteps(runN, rec)
	if len(steps) == 0 {
		return
	}
	rec.review = []engine.ReviewMode{engine.ReviewBefore, engine.ReviewAfter, engine.ReviewNone}[w.rng.IntN(3)]
	plan, _ := json.Marshal(map[string]any{"title": "random", "steps": steps})
	p, err := plans.ParsePlan("random.json", plan)
	if err != nil {
		w.fail("plan: %v\n%s", err, plan)
		return
	}
	cfg := w.s.Config()
	cfg.Tools, cfg.Approver, cfg.Reviewer = tools.Builtin(), approval.AllowAll{}, w.reviewer
	before, beforeIn := w.where(), w.markersIn()
	run, err := engine.New(cfg).Start(w.ctx, p, engine.RunOptions{Review: rec.review, Mode: "sequential"})
	if err != nil {
		w.fail("starting run %d: %v", runN, err)
		return
	}
	rec.id = run.ID()
	w.runs = append(w.runs, rec)
	w.say("run %d (%s, review %s): %s", runN, rec.id, rec.review, plan)
	for done := false; !done; {
		select {
		case set := <-w.reviewer.before:
			if w.rng.IntN(2) == 0 {
				w.userEdit("during the review of " + set.ID)
			}
			w.decide(set, w.rng.IntN(3) != 0)
		case <-run.Done():
			done = true
		}
	}
	st, _ := run.Wait(w.ctx)
	w.say("run %d ended %s %s", runN, st.Status, st.Error)
	// The after sets: decided now, later, or never.
	w.reviewer.mu.Lock()
	after := w.reviewer.after
	w.reviewer.after = nil
	w.reviewer.mu.Unlock()
	for _, set := range after {
		if w.rng.IntN(2) == 0 {
			w.userEdit("before deciding " + set.ID)
		}
		if w.rng.IntN(4) != 0 {
			w.decide(set, w.rng.IntN(2) == 0)
		}
	}
	w.attribute(before, rec)
	// A whole-file step that took a file's markers charges them to the
	// run even when a copy is left elsewhere (an undo that kept a moved
	// file): losing the copy later, the run's undo still brings them back.
	afterIn := w.markersIn()
	for f := range rec.wholeFile {
		for _, m := range beforeIn[f] {
			if !slices.Contains(afterIn[f], m) && !slices.Contains(w.removedBy[m], rec.id) {
				w.removedBy[m] = append(w.removedBy[m], rec.id)
			}
		}
	}
}

// markersIn maps each file to the user's markers it holds.
func (w *world) markersIn() map[string][]string {
	m := map[string][]string{}
	for _, f := range w.files() {
		for _, l := range w.readLines(f) {
			if strings.HasPrefix(l, "U") {
				m[f] = append(m[f], l)
			}
		}
	}
	return m
}

func (w *world) decide(set *review.Set, accept bool) {
	a := review.Reject
	if accept {
		a = review.Accept
	}
	res, err := w.s.Book.Resolve(w.ctx, review.Files{WS: w.s.WS}, set, []review.Decision{{Action: a}}, "random")
	if err != nil {
		w.fail("deciding %s (%s): %v", set.ID, a, err)
		return
	}
	w.say("review %s: %s (%d conflicts)", set.ID, a, len(res.Conflicts))
}

// attribute charges the markers that went during run rec to it: only a
// whole-file step (write over, delete) of the file may take them; any
// other loss is a failure at once (a write that took a line the user
// typed during the review).
func (w *world) attribute(before map[string]string, rec *runRec) {
	now := w.where()
	for m, f := range before {
		if _, ok := now[m]; ok {
			continue
		}
		if rec.wholeFile[f] {
			w.removedBy[m] = append(w.removedBy[m], rec.id)
			continue
		}
		w.fail("run %s took the user's %s from %s, which none of its steps wrote whole", w.runLabel(rec.id), m, f)
	}
	// Markers written during the run (during a review) must be on disk
	// too, unless a whole-file step took them.
	for m := range w.owed {
		if _, was := before[m]; was {
			continue
		}
		if _, ok := now[m]; ok || w.parked[m] != "" || len(w.removedBy[m]) > 0 {
			continue
		}
		if rec.wholeFile[w.typedIn[m]] {
			// Typed before the step that writes the file whole was
			// proposed (or during its review): the agent's write took it.
			w.removedBy[m] = append(w.removedBy[m], rec.id)
		} else {
			w.fail("the user's %s, typed during run %s, is gone", m, w.runLabel(rec.id))
		}
	}
}

// active says whether run id is in effect (not undone), by the journal.
func (w *world) active(id string) bool {
	return w.s.Journal.UndoneOf(id) == nil
}

// Undo -------------------------------------------------------------------

func (w *world) choice() gitops.ConflictChoice {
	return []gitops.ConflictChoice{gitops.RefuseOnConflict, gitops.RefuseOnConflict, gitops.KeepConflicts, gitops.OverwriteConflicts}[w.rng.IntN(4)]
}

// undo undoes the newest run, an older one, or the newest undo.
func (w *world) undo() {
	w.undoCount++
	var activeRuns []*runRec
	for _, r := range w.runs {
		if w.active(r.id) {
			activeRuns = append(activeRuns, r)
		}
	}
	choice := w.choice()
	before, beforeWhere, beforeAgent := w.disk(), w.where(), w.agentLines()
	var out *undoOut
	var err error
	var target *runRec
	switch r := w.rng.IntN(10); {
	case r < 3 && w.undoCount > 1:
		w.say("undo of the newest undo (%q)", choice)
		out, err = w.undoUndo(choice)
	case r < 6 && len(activeRuns) > 1:
		target = activeRuns[w.rng.IntN(len(activeRuns)-1)]
		w.say("undo of older run %s (%q)", w.runLabel(target.id), choice)
		out, err = w.undoRun(target.id, choice)
	default:
		if len(activeRuns) > 0 {
			target = activeRuns[len(activeRuns)-1]
		}
		w.say("undo (%q)", choice)
		out, err = w.undoRun("", choice)
	}
	if err != nil {
		w.say("undo: %v", err)
		if !slices.Equal(mapKeys(before), mapKeys(w.disk())) || !mapsEqual(before, w.disk()) {
			w.fail("the undo failed (%v) yet changed the workspace", err)
		}
		return
	}
	w.say("  -> %s", out)
	w.checkUndo(out, target, choice, before, beforeWhere, beforeAgent)
}

// checkUndo is the invariant after an undo.
func (w *world) checkUndo(out *undoOut, target *runRec, choice gitops.ConflictChoice, before map[string]string, beforeWhere, beforeAgent map[string]string) {
	named := map[string]bool{}
	for _, p := range slices.Concat(out.conflicts, out.kept, out.overwritten, out.leftAlone) {
		named[p] = true
	}
	if !out.applied {
		if len(out.conflicts) == 0 {
			w.fail("the undo was not applied and names no conflict")
		}
		if !mapsEqual(before, w.disk()) {
			w.fail("a refused undo changed the workspace: %s", diffDisks(before, w.disk()))
		}
		return
	}
	// The way back of overwritten files: the safety snapshot holds them.
	for _, p := range out.overwritten {
		for m, f := range beforeWhere {
			if f != p {
				continue
			}
			if out.safety == "" {
				w.fail("%s was overwritten with the user's %s and there is no safety snapshot", p, m)
				continue
			}
			if !w.snapshotHas(out.safety, p, m) {
				w.fail("%s was overwritten and its safety snapshot %s does not hold the user's %s", p, short(out.safety), m)
				continue
			}
			w.parked[m] = fmt.Sprintf("snapshot %s, %s", short(out.safety), p)
		}
	}
	// A kept conflict: the user's lines an agent's whole-file write took
	// are not on disk, but the conflict names the file with a diff to the
	// state before the agent's first edit, which holds them, and undoing
	// the run again with overwrite brings them back.
	w.parkKeptDiffs(out, beforeWhere)
	w.checkMarkers(fmt.Sprintf("after undo %s", out.what), named, beforeWhere)
	w.keep(out.kept)
	if out.runID != "" && !w.active(out.runID) {
		for a, f := range w.agentLines() {
			if strings.HasPrefix(a, "A"+w.runNumber(out.runID)+"-") && !named[f] && !w.namedOrigin(a, beforeAgent, named) && !w.carriedBy(f, out) && !w.keptFiles[f] {
				w.fail("run %s is undone but its line %s is still in %s (not named as a conflict)", w.runLabel(out.runID), a, f)
			}
		}
	}
}

// keep notes the files an applied undo kept as they were.
func (w *world) keep(paths []string) {
	if w.keptFiles == nil {
		w.keptFiles = map[string]bool{}
	}
	for _, p := range paths {
		w.keptFiles[p] = true
	}
}

// parkKeptDiffs: the user's lines a kept conflict's diff brings back
// (undoing the run again with overwrite) have that way back.
// That includes lines the undo took from another file: undoing a move
// deletes the moved file and, the old path being a conflict kept, the
// lines are in the conflict's diff only (and the safety snapshot).
func (w *world) parkKeptDiffs(out *undoOut, beforeWhere map[string]string) {
	now := w.where()
	for _, p := range out.kept {
		for _, l := range strings.Split(out.diffs[p], "\n") {
			if m, ok := strings.CutPrefix(l, "+"); ok && w.owed[m] && now[m] == "" && w.parked[m] == "" {
				w.parked[m] = fmt.Sprintf("the diff of the kept conflict %s (undo %s with overwrite)", p, out.what)
			}
		}
	}
}

// carriedBy: file f was created by a newer run still in effect (a move
// of the run's file on, perhaps through several runs: when the old file
// is gone the undo's conflict names the first to undo; when an undo kept
// the old file, the lines are in both and the copy is the newer run's).
func (w *world) carriedBy(f string, out *undoOut) bool {
	store, err := w.s.Store()
	if err != nil {
		return false
	}
	newer := false
	for _, r := range w.runs {
		if r.id == out.runID {
			newer = true
			continue
		}
		if !newer || !w.active(r.id) {
			continue
		}
		es, _ := store.Ledger(w.ctx, "run/"+r.id)
		for _, e := range es {
			if e.Path == f && e.Before == nil {
				return true
			}
		}
	}
	return false
}

// namedOrigin: the agent line a was, before the undo, in a file the
// result names (a move taken back carries the name of the old path).
func (w *world) namedOrigin(a string, beforeAgent map[string]string, named map[string]bool) bool {
	return named[beforeAgent[a]]
}

func (w *world) runLabel(id string) string { return w.runNumber(id) + " (" + id + ")" }

func (w *world) runNumber(id string) string {
	for i, r := range w.runs {
		if r.id == id {
			return strconv.Itoa(i + 1)
		}
	}
	return "?"
}

// checkMarkers: every marker the user wrote is on disk, or taken by a
// run still in effect, or kept by a way back that was checked, or (for
// this undo) in a file its result names.
func (w *world) checkMarkers(when string, named map[string]bool, beforeWhere map[string]string) {
	now := w.where()
	for m := range w.owed {
		if _, ok := now[m]; ok {
			continue
		}
		if w.parked[m] != "" {
			continue
		}
		taken := false
		for _, id := range w.removedBy[m] {
			if w.active(id) {
				taken = true
			}
		}
		if taken {
			continue
		}
		if f, ok := beforeWhere[m]; ok && named[f] {
			continue
		}
		was := beforeWhere[m]
		if was == "" {
			was = w.typedIn[m] + " when typed"
		}
		var by []string
		for _, id := range w.removedBy[m] {
			by = append(by, w.runNumber(id))
		}
		w.fail("%s: the user's %s is gone (it was in %s; taken by runs %v, none in effect; not named)", when, m, was, by)
	}
}

// snapshotHas reads file p of snapshot id from the shadow repository.
func (w *world) snapshotHas(id, p, marker string) bool {
	store, err := w.s.Store()
	if err != nil {
		return false
	}
	out, err := exec.Command("git", "--git-dir="+store.Dir(), "show", id+":"+p).Output()
	if err != nil {
		return false
	}
	return slices.Contains(strings.Split(string(out), "\n"), marker)
}

// play runs one sequence of 8-20 actions.
func (w *world) play() bool {
	if len(w.failures) > 0 {
		return false
	}
	w.say("seed=%d", w.seed)
	n := 8 + w.rng.IntN(13)
	for i := 0; i < n && len(w.failures) == 0; i++ {
		switch r := w.rng.IntN(20); {
		case r < 7:
			w.agentRun()
		case r < 10:
			w.userEdit("between")
		case r < 18:
			w.undo()
		default:
			w.killedUndo()
		}
	}
	if len(w.failures) == 0 {
		// The end: undo everything still in effect, the user's lines stay.
		for range len(w.runs) + 1 {
			w.userEdit("after")
			w.undo()
		}
	}
	return len(w.failures) == 0
}

func mapKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func diffDisks(a, b map[string]string) string {
	var d []string
	for _, k := range mapKeys(a) {
		if bv, ok := b[k]; !ok {
			d = append(d, k+" deleted")
		} else if bv != a[k] {
			d = append(d, k+" changed")
		}
	}
	for _, k := range mapKeys(b) {
		if _, ok := a[k]; !ok {
			d = append(d, k+" created")
		}
	}
	return strings.Join(d, ", ")
}
