package gitops

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// visible is treeState without .git and ignored (*.log) files.
func visible(t testing.TB, root string) map[string]string {
	st := treeState(t, root, true)
	for k := range st {
		if strings.HasSuffix(k, ".log") || strings.HasSuffix(k, "/") {
			delete(st, k)
		}
	}
	return st
}

// TestUserGitUntouched runs 1,000 random snapshot/modify/restore cycles on a
// real repository (with an index that differs from HEAD, packed refs,
// hooks, info/exclude, logs, a stash) and checks that every file under .git
// is byte-identical afterwards, and that every full restore gives back
// exactly the snapshot's files while never touching ignored ones.
func TestUserGitUntouched(t *testing.T) {
	// This test is about what is written where, not durability (the crash
	// test covers that): leave fsync out to keep it fast.
	syncWrites = false
	defer func() { syncWrites = true }()
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "*.log\n", "README": "readme\n", "src/a.go": "package a\n", "src/b.go": "package b\n"})
	runGit(t, root, "init", "-q")
	runGit(t, root, "add", "-A")
	runGit(t, root, "commit", "-qm", "one")
	runGit(t, root, "tag", "v1")
	runGit(t, root, "pack-refs", "--all")
	writeTree(t, root, map[string]string{"README": "stashed\n"})
	runGit(t, root, "stash", "-q")
	writeTree(t, root, map[string]string{"src/a.go": "package a // staged\n"})
	runGit(t, root, "add", "src/a.go")
	os.WriteFile(filepath.Join(root, ".git", "info", "exclude"), []byte("secret.txt\n"), 0o644)
	writeTree(t, root, map[string]string{"secret.txt": "excluded\n", "build.log": "ignored\n"})
	gitBefore := treeState(t, filepath.Join(root, ".git"), false)

	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"README", "src/a.go", "src/b.go", "src/c.go", "doc/x.md", "run.sh", "l", "out.log"}
	type snapState struct {
		id    string
		files map[string]string
	}
	var snaps []snapState
	for i := range 1000 {
		switch op := rng.IntN(10); {
		case op < 3 || len(snaps) == 0:
			sn, err := s.Snapshot(ctx, SnapshotOptions{RunID: fmt.Sprintf("r%d", i%7)})
			if err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, snapState{sn.ID, visible(t, root)})
		case op < 7:
			n := names[rng.IntN(len(names))]
			abs := filepath.Join(root, n)
			switch rng.IntN(4) {
			case 0:
				os.Remove(abs)
			case 1:
				if n == "l" {
					os.Remove(abs)
					os.Symlink(names[rng.IntN(3)], abs)
					break
				}
				os.MkdirAll(filepath.Dir(abs), 0o755)
				os.WriteFile(abs, []byte(fmt.Sprintf("v%d\n", rng.IntN(5))), 0o644)
			case 2:
				os.Chmod(abs, []os.FileMode{0o644, 0o755}[rng.IntN(2)])
			default:
				os.MkdirAll(filepath.Dir(abs), 0o755)
				os.WriteFile(abs, []byte(strings.Repeat("x", rng.IntN(100))), 0o644)
			}
		default:
			target := snaps[rng.IntN(len(snaps))]
			opts := RestoreOptions{DryRun: rng.IntN(5) == 0, Overwrite: true}
			full := !opts.DryRun
			if rng.IntN(4) == 0 {
				opts.Paths = []string{"src"}
				full = false
			}
			logs := treeState(t, root, true)
			if _, err := s.Restore(ctx, target.id, opts); err != nil {
				t.Fatalf("cycle %d: %v", i, err)
			}
			if full {
				if d := diffStates(target.files, visible(t, root)); len(d) > 0 {
					t.Fatalf("cycle %d: restore of %s differs: %v", i, target.id, d)
				}
			}
			after := treeState(t, root, true)
			for k, v := range logs {
				if strings.HasSuffix(k, ".log") && after[k] != v {
					t.Fatalf("cycle %d: ignored file %s changed", i, k)
				}
			}
		}
	}
	if d := diffStates(gitBefore, treeState(t, filepath.Join(root, ".git"), false)); len(d) > 0 {
		t.Fatalf("the user's .git changed: %v", d)
	}
	fsck(t, s.Dir())
	if len(snaps) < 200 {
		t.Fatalf("only %d snapshots in 1000 cycles", len(snaps))
	}
}
