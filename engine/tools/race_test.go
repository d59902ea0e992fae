package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/agentd/agentd/workspace"
)

// raceRounds is how many rounds each writing tool (and the apply path) is
// raced against a directory swapped for a link that leads outside.
const raceRounds = 200

// swapper loops `mv d d.real; ln -s ../outside d; rm d; mv d.real d` until
// stopped.
type swapper struct {
	stop  chan struct{}
	done  chan struct{}
	swaps atomic.Int64
}

func startSwapper(root string) *swapper {
	s := &swapper{stop: make(chan struct{}), done: make(chan struct{})}
	d := filepath.Join(root, "d")
	real := d + ".real"
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if os.Rename(d, real) != nil {
				continue
			}
			if os.Symlink("../outside", d) == nil {
				s.swaps.Add(1)
				_ = os.Remove(d) // the link, not its target
			}
			// rename(2) cannot put a directory over a link: the link goes
			// first, then the directory comes back.
			_ = os.Rename(real, d)
		}
	}()
	// Let it get going, so the swap is under way when the tool starts.
	for s.swaps.Load() < 2 {
		runtime.Gosched()
	}
	return s
}

func (s *swapper) halt() {
	close(s.stop)
	<-s.done
}

// raceTree is a workspace root/ with a directory d, and root/../outside
// holding files of the same names (so anything that followed the link
// would find what it expects there).
type raceTree struct {
	base, root, outside string
	ws                  *workspace.Workspace
	env                 *Env
	before              map[string]string
}

var raceFiles = map[string]string{
	"f":      "x\n",
	"c.json": "{\n  \"v\": 1\n}\n",
	"g.txt":  "g\n",
}

func newRaceTree(t *testing.T) *raceTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt := &raceTree{base: base, root: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	out := map[string]string{}
	for name := range raceFiles {
		out[name] = "outside " + name + "\n"
	}
	writeFiles(t, rt.outside, out)
	rt.reset(t)
	rt.ws, err = workspace.Open(rt.root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.ws.Close() })
	rt.env = &Env{WS: rt.ws}
	rt.before = snapshotDir(t, rt.outside)
	return rt
}

// reset puts d back as a real directory with its files (the swapper is
// stopped: nothing here can follow a link).
func (rt *raceTree) reset(t *testing.T) {
	t.Helper()
	d := filepath.Join(rt.root, "d")
	for _, p := range []string{d, d + ".real"} {
		if err := os.RemoveAll(p); err != nil { // a link is removed, not followed
			t.Fatal(err)
		}
	}
	writeFiles(t, d, raceFiles)
}

// outsideChanged returns how many files and bytes differ outside.
func (rt *raceTree) outsideChanged(t *testing.T) (files, bytes int) {
	t.Helper()
	after := snapshotDir(t, rt.outside)
	for p, c := range after {
		if old, ok := rt.before[p]; !ok || old != c {
			files++
			bytes += len(c)
		}
	}
	for p := range rt.before {
		if _, ok := after[p]; !ok {
			files++
		}
	}
	return files, bytes
}

// raceStep is one tool call (or apply) of a round.
type raceStep func(ctx context.Context, rt *raceTree, round int) error

func toolStep(name string, args func(round int) any) raceStep {
	return func(ctx context.Context, rt *raceTree, round int) error {
		tool, _ := Builtin().Get(name)
		res, err := tool.Run(ctx, rt.env, mustMarshal(args(round)))
		if err != nil {
			return err
		}
		ar, err := rt.ws.Apply(ctx, res.Changes, nil, nil)
		if err == nil && len(ar.Conflicts) > 0 {
			err = ar.Conflicts[0]
		}
		return err
	}
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestNoWriteOutsideUnderSwapRace races every writing tool, run as a plan
// step with review "none" runs it (Run, then Apply), and the apply path on
// its own, against a directory being swapped for a link to ../outside.
// Nothing may land outside: not a byte, not a temporary file.
func TestNoWriteOutsideUnderSwapRace(t *testing.T) {
	rounds := raceRounds
	if testing.Short() {
		rounds = raceRounds / 10 // -short: fewer rounds, never none
	}
	cases := []struct {
		name string
		step raceStep
		// pre runs with the swapper stopped (apply: computes the change).
		pre func(t *testing.T, rt *raceTree, round int) *workspace.ChangeSet
	}{
		{name: "write_file", step: toolStep("write_file", func(r int) any { return WriteFileArgs{Path: "d/f", Content: fmt.Sprintf("round %d\n", r)} })},
		{name: "write_file-create", step: toolStep("write_file", func(r int) any { return WriteFileArgs{Path: fmt.Sprintf("d/new%d/n.txt", r), Content: "n\n"} })},
		{name: "edit_file", step: toolStep("edit_file", func(int) any { return EditFileArgs{Path: "d/f", Edits: []Edit{{OldText: "x\n", NewText: "y\n"}}} })},
		{name: "json_patch", step: toolStep("json_patch", func(int) any {
			return JSONPatchArgs{Path: "d/c.json", Ops: []JSONPatchOp{{Op: "replace", Path: "/v", Value: []byte("2")}}}
		})},
		{name: "apply_patch", step: toolStep("apply_patch", func(int) any { return ApplyPatchArgs{Patch: "--- a/d/f\n+++ b/d/f\n@@ -1 +1 @@\n-x\n+z\n"} })},
		{name: "move_file", step: toolStep("move_file", func(int) any { return MoveFileArgs{From: "d/f", To: "d/moved"} })},
		{name: "delete_file", step: toolStep("delete_file", func(int) any { return DeleteFileArgs{Path: "d/g.txt"} })},
		{name: "apply", pre: func(t *testing.T, rt *raceTree, round int) *workspace.ChangeSet {
			b := rt.ws.Propose(context.Background())
			if err := b.Write("d/f", fmt.Appendf(nil, "applied %d\n", round)); err != nil {
				t.Fatal(err)
			}
			if err := b.Write("d/new.txt", []byte("new\n")); err != nil {
				t.Fatal(err)
			}
			if err := b.Move("d/g.txt", "d/h.txt"); err != nil {
				t.Fatal(err)
			}
			if err := b.Delete("d/c.json"); err != nil {
				t.Fatal(err)
			}
			return b.Build()
		}},
	}
	rt := newRaceTree(t)
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refused, swaps := 0, int64(0)
			for round := range rounds {
				rt.reset(t)
				var cs *workspace.ChangeSet
				if c.pre != nil {
					cs = c.pre(t, rt, round)
				}
				sw := startSwapper(rt.root)
				var err error
				if c.pre != nil {
					var ar *workspace.ApplyResult
					ar, err = rt.ws.Apply(ctx, cs, nil, nil)
					if err == nil && len(ar.Conflicts) > 0 {
						err = ar.Conflicts[0]
					}
				} else {
					err = c.step(ctx, rt, round)
				}
				sw.halt()
				swaps += sw.swaps.Load()
				if err != nil {
					refused++
				}
				if files, bytes := rt.outsideChanged(t); files != 0 || bytes != 0 {
					t.Fatalf("round %d: %d file(s), %d byte(s) landed outside the workspace (last error: %v)", round, files, bytes, err)
				}
			}
			t.Logf("%d rounds, %d swaps, %d rounds refused or failed because of the swap; 0 bytes outside", rounds, swaps, refused)
		})
	}
	// The harness must be able to fail: a plain write by path, raced the
	// same way, does land outside.
	t.Run("control-naive-write", func(t *testing.T) {
		escaped := 0
		for round := 0; round < 20*raceRounds && escaped == 0; round++ {
			rt.reset(t)
			sw := startSwapper(rt.root)
			_ = os.WriteFile(filepath.Join(rt.root, "d", "f"), []byte("naive\n"), 0o644)
			sw.halt()
			if files, _ := rt.outsideChanged(t); files > 0 {
				escaped = round + 1
			}
		}
		if escaped == 0 {
			t.Fatal("a naive write never landed outside: the swap race is not exercised, so the rounds above prove nothing")
		}
		t.Logf("a naive write by path landed outside after %d round(s)", escaped)
	})
}
