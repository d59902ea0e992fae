package gitops

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestUndoIsExact: random sequences of edits, .gitignore changes,
// snapshots, restores and undos on small generated trees. After every undo
// the workspace is byte-identical (content, modes, links, directories) to
// what it was before the restore it undoes.
func TestUndoIsExact(t *testing.T) {
	sequences := 500
	if testing.Short() || raceOn {
		sequences = 100
	}
	prev := syncWrites
	syncWrites = false // logic, not durability
	defer func() { syncWrites = prev }()
	names := []string{"a.txt", "b.log", "d/c.txt", "d/e.log", "d/sub/f.txt", "g/h.txt", "run.sh"}
	ignores := []string{"", "*.log\n", "d/\n", "*.log\n!d/e.log\n", "g/\nrun.sh\n", "sub/\n"}
	for seq := range sequences {
		if s := os.Getenv("AGENTD_SEQ"); s != "" && s != fmt.Sprint(seq) { // to replay one sequence
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(seq), 7))
		root := t.TempDir()
		s := openTestStore(t, root, Options{})
		ctx := context.Background()
		edit := func() {
			for range 1 + rng.IntN(4) {
				p := names[rng.IntN(len(names))]
				abs := filepath.Join(root, filepath.FromSlash(p))
				switch rng.IntN(7) {
				case 0:
					os.Remove(abs)
				case 1:
					os.WriteFile(filepath.Join(root, ".gitignore"), []byte(ignores[rng.IntN(len(ignores))]), 0o644)
				case 2:
					if os.Chmod(abs, []os.FileMode{0o600, 0o640, 0o755, 0o644}[rng.IntN(4)]) != nil {
						continue
					}
				case 3:
					os.MkdirAll(filepath.Join(root, "empty", fmt.Sprint(rng.IntN(2))), 0o755)
				case 4:
					os.MkdirAll(filepath.Dir(abs), 0o755)
					os.Remove(abs)
					os.Symlink("a.txt", abs)
				default:
					os.MkdirAll(filepath.Dir(abs), 0o755)
					if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
						continue
					}
					os.Remove(abs) // a symlink would be followed
					os.WriteFile(abs, []byte(fmt.Sprintf("%d-%d\n", seq, rng.IntN(1000))), 0o644)
				}
			}
		}
		edit()
		var snaps []string
		for step := range 3 + rng.IntN(3) {
			sn, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: fmt.Sprint(step)})
			if err != nil {
				t.Fatalf("seq %d: snapshot: %v", seq, err)
			}
			snaps = append(snaps, sn.ID)
			edit()
		}
		for round := range 2 {
			before := treeState(t, root, true)
			target := snaps[rng.IntN(len(snaps))]
			res, err := s.Restore(ctx, target, RestoreOptions{Overwrite: true})
			if err != nil {
				t.Fatalf("seq %d round %d: restore: %v", seq, round, err)
			}
			if rng.IntN(2) == 0 {
				// The undo must also work after a snapshot in between.
				if _, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r2"}); err != nil {
					t.Fatal(err)
				}
			}
			undo, err := s.Restore(ctx, res.UndoSnapshot, RestoreOptions{})
			if err != nil {
				t.Fatalf("seq %d round %d: undo: %v", seq, round, err)
			}
			if d := diffStates(before, treeState(t, root, true)); len(d) > 0 {
				t.Fatalf("seq %d round %d: undo of the restore to %s is not exact: %v\nrestore: %+v\nundo: %+v", seq, round, short(target), d, res, undo)
			}
			edit()
		}
		s.Close()
	}
}
