package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd/agentd/gitops"
)

// TestChatRestoreRandomSequences holds the invariant of "restore to before
// this turn" (ChatStore/Session.RestoreChat), over seeded random sequences:
// a chat's turns run plans that write files (slot lines of the base files,
// and new files), questions are asked in between, the user edits the files
// between turns (a line typed at the top or the end of a base file, or into
// a file a turn created), and now and then the chat is restored to before a
// random turn (files, conversation or both; on a conflict change nothing or
// keep), after a dry run, then the restore is undone (agentd/undo/restore of
// its undoId, agentd/chat/unrewind of its rewindId). After every step:
//
//   - the user's own lines are never lost: every line the user typed is in
//     the file the user typed it into, after the restore and after its undo;
//   - a refused restore (a conflict, no choice) changes nothing: not a file,
//     not a turn;
//   - an applied restore leaves no line of the taken-back turns' runs in a
//     file it did not keep, marks those turns undone, and (conversation)
//     rewinds the turns from the one named: the next turn's planner is told
//     the turns before and none of those;
//   - the dry run says what the restore then does: whether it applies, and
//     a diff for exactly the files it writes;
//   - after the restore and its undo, the files are exactly what they were
//     before the restore, the turns are not undone and not rewound.
//
// Every sequence logs its seed; a failure says it with the command that
// replays it: AGENTD_UNDO_SEED=N go test -run TestChatRestoreRandomSequences
// ./session/ (the same variables as TestUndoRandomSequences: AGENTD_UNDO_SEQS
// says how many sequences run).
func TestChatRestoreRandomSequences(t *testing.T) {
	seqs := 10
	if v := os.Getenv(chatSeqsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of sequences", chatSeqsEnv, v)
		}
		seqs = n
	}
	var seeds []uint64
	if v := os.Getenv(chatSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want the seed a failure printed", chatSeedEnv, v)
		}
		seeds = []uint64{n}
	} else {
		for i := range seqs {
			seeds = append(seeds, 36+uint64(i)*7919)
		}
	}
	for _, seed := range seeds {
		t.Logf("seed=%d", seed)
		cw := newChatWorld(t, seed)
		cw.play()
		if len(cw.failures) > 0 {
			t.Errorf("seed=%d failed (replay: %s=%d go test -run TestChatRestoreRandomSequences ./session/):\n%s\ntrace:\n  %s",
				seed, chatSeedEnv, seed, strings.Join(cw.failures, "\n"), strings.Join(cw.trace, "\n  "))
		}
		cw.s.Close()
	}
}

// The same variables as the random undo test's (undo_random_test.go).
const (
	chatSeedEnv = "AGENTD_UNDO_SEED"
	chatSeqsEnv = "AGENTD_UNDO_SEQS"
)

type chatWorld struct {
	t        *testing.T
	seed     uint64
	rng      *rand.Rand
	ctx      context.Context
	ws       string
	s        *Session
	chat     string
	turns    []chatTurnRec // by the chat's turn index
	userSeq  int
	typedIn  map[string]string // user line -> its file
	trace    []string
	failures []string
	// kept are files a restore kept as the user had them (a conflict):
	// the taken-back turns' lines may stay there.
	kept map[string]bool
}

type chatTurnRec struct {
	request  string
	question bool
	marker   string // the lines its run wrote carry it ("" for a question)
}

func newChatWorld(t *testing.T, seed uint64) *chatWorld {
	ws, state := t.TempDir(), t.TempDir()
	cw := &chatWorld{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 36)), ctx: context.Background(), ws: ws,
		typedIn: map[string]string{}, kept: map[string]bool{}}
	for i := range 3 {
		lines := []string{"header"}
		for l := range 5 {
			lines = append(lines, fmt.Sprintf("slot %d: base", l))
		}
		lines = append(lines, "footer")
		cw.write(fmt.Sprintf("f%d.txt", i), lines)
	}
	s, err := Open(cw.ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	cw.s = s
	c, err := s.NewChat(cw.ctx, "random")
	if err != nil {
		t.Fatal(err)
	}
	cw.chat = c.ID
	return cw
}

func (cw *chatWorld) say(f string, a ...any) { cw.trace = append(cw.trace, fmt.Sprintf(f, a...)) }
func (cw *chatWorld) fail(f string, a ...any) {
	cw.failures = append(cw.failures, fmt.Sprintf(f, a...))
}

func (cw *chatWorld) read(rel string) []string {
	b, err := os.ReadFile(filepath.Join(cw.ws, rel))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func (cw *chatWorld) write(rel string, lines []string) {
	if err := os.WriteFile(filepath.Join(cw.ws, rel), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		cw.t.Fatal(err)
	}
}

func (cw *chatWorld) disk() map[string]string {
	out := map[string]string{}
	ents, _ := os.ReadDir(cw.ws)
	for _, e := range ents {
		if e.Type().IsRegular() {
			b, _ := os.ReadFile(filepath.Join(cw.ws, e.Name()))
			out[e.Name()] = string(b)
		}
	}
	return out
}

func (cw *chatWorld) textFiles() []string {
	var out []string
	for f := range cw.disk() {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// userEdit types a new line at the top or the end of a base file, or at
// the end of a file a turn created (where taking the turn back conflicts).
func (cw *chatWorld) userEdit() {
	files := cw.textFiles()
	f := files[cw.rng.IntN(len(files))]
	if made := slices.DeleteFunc(slices.Clone(files), func(f string) bool { return !strings.HasPrefix(f, "new") }); len(made) > 0 && cw.rng.IntN(3) == 0 {
		f = made[cw.rng.IntN(len(made))]
	}
	cw.userSeq++
	line := fmt.Sprintf("user %d", cw.userSeq)
	lines := cw.read(f)
	if cw.rng.IntN(2) == 0 && strings.HasPrefix(f, "f") {
		lines = append([]string{line}, lines...)
	} else {
		lines = append(lines, line)
	}
	cw.write(f, lines)
	cw.typedIn[line] = f
	cw.say("the user types %q into %s", line, f)
}

// agentTurn is a plan turn: its run sets a slot line of a base file, or
// writes a new file.
func (cw *chatWorld) agentTurn() {
	n := len(cw.turns)
	marker := fmt.Sprintf("agent turn %d", n)
	var path string
	var lines []string
	if cw.rng.IntN(4) == 0 {
		path = fmt.Sprintf("new%d.txt", n)
		lines = []string{marker + " made this file"}
	} else {
		path = fmt.Sprintf("f%d.txt", cw.rng.IntN(3))
		lines = cw.read(path)
		slot := fmt.Sprintf("slot %d: ", cw.rng.IntN(5))
		for i, l := range lines {
			if strings.HasPrefix(l, slot) {
				lines[i] = slot + marker
			}
		}
	}
	content := strings.Join(lines, "\n") + "\n"
	args, _ := json.Marshal(map[string]string{"path": path, "content": content})
	p := parsePlan(cw.t, fmt.Sprintf("plan-%d-%d", cw.seed, n), fmt.Sprintf(`{"title":"turn %d","steps":[{"id":"w","tool":"write_file","args":%s}]}`, n, args))
	req := fmt.Sprintf("request of turn %d", n)
	if _, err := cw.s.AddChatTurn(cw.ctx, cw.chat, req, p); err != nil {
		cw.t.Fatal(err)
	}
	st := runPlan(cw.t, cw.s, p)
	cw.turns = append(cw.turns, chatTurnRec{request: req, marker: marker})
	cw.say("turn %d: run %s (%s) writes %s", n, st.RunID, st.Status, path)
}

func (cw *chatWorld) question() {
	n := len(cw.turns)
	req := fmt.Sprintf("question of turn %d", n)
	if _, _, err := cw.s.ChatStore().AddAnswer(cw.ctx, cw.chat, Turn{Request: req, Answer: "an answer"}); err != nil {
		cw.t.Fatal(err)
	}
	cw.turns = append(cw.turns, chatTurnRec{request: req, question: true})
	cw.say("turn %d: a question", n)
}

// userLinesKept checks every line the user typed is in its file.
func (cw *chatWorld) userLinesKept(when string) {
	for line, f := range cw.typedIn {
		if !slices.Contains(cw.read(f), line) {
			cw.fail("%s: the user's line %q is gone from %s", when, line, f)
		}
	}
}

func (cw *chatWorld) restore() {
	c, err := cw.s.Chat(cw.chat)
	if err != nil {
		cw.t.Fatal(err)
	}
	turn := cw.rng.IntN(len(c.Turns))
	what := []string{RestoreFiles, RestoreConversation, RestoreBoth}[cw.rng.IntN(3)]
	choice := []gitops.ConflictChoice{gitops.RefuseOnConflict, gitops.KeepConflicts}[cw.rng.IntN(2)]
	before := cw.disk()
	beforeCtx, _ := cw.s.ChatContext(cw.chat, "in the editor")
	opts := ChatRestoreOptions{Turn: turn, What: what, UndoOptions: UndoOptions{OnConflict: choice, DryRun: true}}
	dry, err := cw.s.RestoreChat(cw.ctx, cw.chat, opts)
	if err != nil {
		cw.fail("the dry run of restore to before turn %d (%s, %q): %v", turn, what, choice, err)
		return
	}
	if !maps.Equal(before, cw.disk()) {
		cw.fail("the dry run of restore to before turn %d changed the files", turn)
	}
	opts.DryRun = false
	res, err := cw.s.RestoreChat(cw.ctx, cw.chat, opts)
	if err != nil {
		cw.fail("restore to before turn %d (%s, %q): %v", turn, what, choice, err)
		return
	}
	cw.say("restore to before turn %d (%s, %q): applied %v, files %s", turn, what, choice, res.Applied, filesSaid(res.Files))
	if dry.Applied != res.Applied {
		cw.fail("the dry run said applied %v, the restore %v", dry.Applied, res.Applied)
	}
	cw.userLinesKept("after the restore")
	if !res.Applied {
		if !maps.Equal(before, cw.disk()) {
			cw.fail("a refused restore changed the files")
		}
		if now, _ := cw.s.ChatContext(cw.chat, "in the editor"); now != beforeCtx {
			cw.fail("a refused restore changed what the planner is told:\n%s\nwas:\n%s", now, beforeCtx)
		}
		return
	}
	var undoID string
	if f := res.Files; f != nil {
		undoID = f.UndoID
		var wrote, diffs []string
		wrote = slices.Concat(f.Reverted, f.Created, f.Deleted, f.Overwritten)
		for _, d := range dry.Files.Diffs {
			diffs = append(diffs, d.Path)
		}
		slices.Sort(wrote)
		slices.Sort(diffs)
		if !slices.Equal(wrote, diffs) {
			cw.fail("the dry run showed diffs of %v, the restore wrote %v", diffs, wrote)
		}
		for _, k := range f.Kept {
			cw.kept[k] = true
		}
		for i := turn; i < len(cw.turns); i++ {
			m := cw.turns[i].marker
			if m == "" {
				continue
			}
			for _, file := range cw.textFiles() {
				if !cw.kept[file] && slices.ContainsFunc(cw.read(file), func(l string) bool { return strings.Contains(l, m+" ") || strings.HasSuffix(l, m) }) {
					cw.fail("after the restore to before turn %d, %s still holds %q", turn, file, m)
				}
			}
		}
		c, _ := cw.s.Chat(cw.chat)
		for _, i := range f.Turns {
			if !c.Turns[i].Undone {
				cw.fail("turn %d's run was taken back but the turn is not undone", i)
			}
		}
		if len(f.Runs) > 0 && undoID == "" {
			cw.fail("runs %v taken back without an undoId", f.Runs)
		}
	}
	var rewind string
	if rw := res.Conversation; rw != nil {
		rewind = rw.RewindID
		ctxt, _ := cw.s.ChatContext(cw.chat, "in the editor")
		for i, tr := range cw.turns {
			told := strings.Contains(ctxt, tr.request+"\n")
			if i >= turn && told {
				cw.fail("turn %d is rewound but the planner is told it", i)
			}
		}
		for _, i := range rw.Turns {
			if i < turn {
				cw.fail("the rewind of turns from %d took turn %d", turn, i)
			}
		}
	}
	// The way back.
	if undoID != "" {
		if _, err := cw.s.UndoRestore(cw.ctx, undoID, UndoOptions{}); err != nil {
			cw.fail("undoing the restore (undo %s): %v", undoID, err)
		}
	}
	if rewind != "" {
		if _, err := cw.s.UnrewindChat(cw.ctx, cw.chat, rewind); err != nil {
			cw.fail("bringing back rewind %s: %v", rewind, err)
		}
	}
	cw.say("  undone: undo %q, rewind %q", undoID, rewind)
	cw.userLinesKept("after the restore's undo")
	if after := cw.disk(); !maps.Equal(before, after) {
		for f := range before {
			if before[f] != after[f] {
				cw.fail("after the restore and its undo, %s is\n%s\nwas\n%s", f, after[f], before[f])
			}
		}
		for f := range after {
			if _, ok := before[f]; !ok {
				cw.fail("after the restore and its undo, %s exists, it did not before", f)
			}
		}
	}
	if now, _ := cw.s.ChatContext(cw.chat, "in the editor"); now != beforeCtx {
		cw.fail("after the restore and its undo the planner is told:\n%s\nbefore it was:\n%s", now, beforeCtx)
	}
}

func filesSaid(f *ChatRestoreFiles) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("runs %v turns %v reverted %v created %v deleted %v conflicts %d kept %v", f.Runs, f.Turns, f.Reverted, f.Created, f.Deleted, len(f.Conflicts), f.Kept)
}

func (cw *chatWorld) play() {
	for range 10 {
		switch r := cw.rng.IntN(10); {
		case r < 4 || len(cw.turns) == 0:
			cw.agentTurn()
		case r < 5:
			cw.question()
		case r < 8:
			cw.userEdit()
		default:
			cw.restore()
		}
		if len(cw.failures) > 0 {
			return
		}
	}
	cw.restore()
}

// A turn whose run is still running (or paused) is not restored: the
// error names the turn and the run and says what to do, and nothing
// changes.
func TestChatRestoreRefusesARunningTurn(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.NewChat(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	p := parsePlan(t, "plan-running", `{"title":"Long","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"a\n"}}]}`)
	if _, err := s.AddChatTurn(ctx, c.ID, "run long", p); err != nil {
		t.Fatal(err)
	}
	// Its run, recorded as running by this (live) process.
	rec := map[string]any{"runId": "run-still-going", "planId": "plan-running", "status": "running", "startTime": "2026-01-01T00:00:00Z", "pid": os.Getpid()}
	if err := s.Journal.Save("runs/run-still-going.json", rec); err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{RestoreFiles, RestoreBoth} {
		_, err = s.RestoreChat(ctx, c.ID, ChatRestoreOptions{Turn: 0, What: what})
		if err == nil || !strings.Contains(err.Error(), "turn 0's run run-still-going is still running") || !strings.Contains(err.Error(), "agentd/run/cancel") {
			t.Errorf("restore (%s) of a running turn: %v", what, err)
		}
	}
	got, _ := s.Chat(c.ID)
	if got.Turns[0].Rewound || got.Turns[0].Undone {
		t.Errorf("a refused restore changed the turn: %+v", got.Turns[0])
	}
}
