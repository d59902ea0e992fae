package gitops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestGCPrunesOldRunsAndObjects(t *testing.T) {
	for _, threshold := range []int{packThreshold, 0} {
		t.Run(fmt.Sprintf("packThreshold=%d", threshold), func(t *testing.T) {
			old := packThreshold
			packThreshold = threshold
			defer func() { packThreshold = old }()
			root := t.TempDir()
			s := openTestStore(t, root, Options{KeepRuns: 2})
			ctx := context.Background()
			var snaps []*Snapshot
			for i := 1; i <= 4; i++ {
				os.RemoveAll(filepath.Join(root, fmt.Sprintf("only%d", i-1)))
				writeTree(t, root, map[string]string{"common.txt": "same\n", "run.txt": fmt.Sprintf("run %d\n", i),
					fmt.Sprintf("only%d/f", i): strings.Repeat(fmt.Sprint(i), 1000)})
				for step := range 2 {
					writeTree(t, root, map[string]string{"step.txt": fmt.Sprintf("%d/%d\n", i, step)})
					sn, err := s.Snapshot(ctx, SnapshotOptions{RunID: fmt.Sprintf("r%d", i), StepID: fmt.Sprint(step)})
					if err != nil {
						t.Fatal(err)
					}
					snaps = append(snaps, sn)
				}
			}
			manual, err := s.Snapshot(ctx, SnapshotOptions{Label: "manual"})
			if err != nil {
				t.Fatal(err)
			}
			gone := strings.TrimSpace(runGit(t, root, "--git-dir="+s.Dir(), "rev-parse", snaps[0].ID+":only1/f"))
			res, err := s.GC(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.RunsPruned != 2 || res.ObjectsPruned == 0 || res.BytesAfter >= res.BytesBefore {
				t.Fatalf("gc: %+v", res)
			}
			list, _ := s.List(ctx, "")
			if len(list) != 5 || list[0].ID != manual.ID {
				t.Fatalf("after gc: %d snapshots", len(list))
			}
			for _, sn := range list {
				if sn.RunID == "r1" || sn.RunID == "r2" {
					t.Fatalf("run %s kept", sn.RunID)
				}
			}
			if err := exec.Command(gitBin(t), "--git-dir="+s.Dir(), "cat-file", "-e", gone).Run(); err == nil {
				t.Fatalf("blob %s of a pruned run is still in the store", gone)
			}
			fsck(t, s.Dir())
			// What is kept restores exactly, and snapshots go on working.
			before := visible(t, root)
			if _, err := s.Restore(ctx, snaps[4].ID, RestoreOptions{Overwrite: true}); err != nil {
				t.Fatal(err)
			}
			if d := diffStates(extract(t, s.Dir(), snaps[4].ID), visible(t, root)); len(d) > 0 {
				t.Fatalf("restore after gc: %v", d)
			}
			if _, err := s.Restore(ctx, manual.ID, RestoreOptions{Overwrite: true}); err != nil {
				t.Fatal(err)
			}
			if d := diffStates(before, visible(t, root)); len(d) > 0 {
				t.Fatalf("restore after gc: %v", d)
			}
			if _, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r5"}); err != nil {
				t.Fatal(err)
			}
			fsck(t, s.Dir())
		})
	}
}

func TestGCQuota(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root, Options{Quota: 1})
	ctx := context.Background()
	var last *Snapshot
	for i := range 6 {
		writeTree(t, root, map[string]string{"f": strings.Repeat(fmt.Sprint(i), 5000)})
		var err error
		if last, err = s.Snapshot(ctx, SnapshotOptions{RunID: fmt.Sprintf("r%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	list, _ := s.List(ctx, "")
	if len(list) != 1 || list[0].ID != last.ID {
		t.Fatalf("over quota: want only the newest snapshot kept, got %d", len(list))
	}
	fsck(t, s.Dir())
}

// TestSmallPacksMerge takes more snapshots than packMergeAt allows packs,
// with a pack of deltas written by git among them, and checks that the
// small packs are merged into one, that git finds the store intact, and
// that every snapshot still restores exactly, in this process and in a
// new one.
func TestSmallPacksMerge(t *testing.T) {
	old := packMergeAt
	packMergeAt = 4
	defer func() { packMergeAt = old }()
	root, stateDir := t.TempDir(), t.TempDir()
	s := openTestStore(t, root, Options{StateDir: stateDir})
	ctx := context.Background()
	base := strings.Repeat("line of a file that changes a little each time\n", 200)
	var snaps []*Snapshot
	var states []map[string]string
	countPacks := func() int {
		ents, err := os.ReadDir(filepath.Join(s.Dir(), "objects", "pack"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".pack") {
				n++
			}
		}
		return n
	}
	maxPacks := 0
	for i := range 12 {
		writeTree(t, root, map[string]string{"big.txt": base + fmt.Sprintf("version %d\n", i),
			fmt.Sprintf("d%d/new.txt", i): fmt.Sprint(i)})
		sn, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, sn)
		states = append(states, visible(t, root))
		if i == 5 {
			// A pack git wrote, with deltas, holding the versions of big.txt
			// the next snapshots will find already stored.
			var ids strings.Builder
			for v := i + 1; v < 12; v++ {
				cmd := exec.Command(gitBin(t), "--git-dir="+s.Dir(), "hash-object", "-w", "--stdin")
				cmd.Stdin = strings.NewReader(base + fmt.Sprintf("version %d\n", v))
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("git hash-object: %v", err)
				}
				ids.Write(out)
			}
			cmd := exec.Command(gitBin(t), "--git-dir="+s.Dir(), "pack-objects", "-q", "--window=10", filepath.Join(s.Dir(), "objects", "pack", "pack"))
			cmd.Stdin = strings.NewReader(ids.String())
			sum, err := cmd.Output()
			if err != nil {
				t.Fatalf("git pack-objects: %v", err)
			}
			runGit(t, root, "--git-dir="+s.Dir(), "prune-packed")
			idx := filepath.Join(s.Dir(), "objects", "pack", "pack-"+strings.TrimSpace(string(sum))+".idx")
			if v := runGit(t, root, "--git-dir="+s.Dir(), "verify-pack", "-v", idx); !strings.Contains(v, "chain length") {
				t.Fatalf("git's pack has no deltas; the test needs some:\n%s", v)
			}
			// As if git had run between two agentd commands.
			s.Close()
			s = openTestStore(t, root, Options{StateDir: stateDir})
		}
		maxPacks = max(maxPacks, countPacks())
	}
	if maxPacks > packMergeAt+1 {
		t.Fatalf("%d packs at most were expected, there were %d", packMergeAt+1, maxPacks)
	}
	fsck(t, s.Dir())
	for i, sn := range snaps {
		if d := diffStates(states[i], extract(t, s.Dir(), sn.ID)); len(d) > 0 {
			t.Fatalf("snapshot %d as git reads it: %v", i, d)
		}
	}
	check := func(s *Store, i int) {
		t.Helper()
		if _, err := s.Restore(ctx, snaps[i].ID, RestoreOptions{Overwrite: true}); err != nil {
			t.Fatal(err)
		}
		if d := diffStates(states[i], visible(t, root)); len(d) > 0 {
			t.Fatalf("restore to snapshot %d: %v", i, d)
		}
	}
	check(s, 2)
	// git gc by hand on the store replaces every pack this store has read
	// or not yet.
	runGit(t, root, "--git-dir="+s.Dir(), "gc", "-q", "--prune=now")
	check(s, 11)
	check(s, 5)
	s.Close()
	check(openTestStore(t, root, Options{StateDir: stateDir}), 0)
}
