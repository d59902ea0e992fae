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
			if _, err := s.Restore(ctx, snaps[4].ID, RestoreOptions{}); err != nil {
				t.Fatal(err)
			}
			if d := diffStates(extract(t, s.Dir(), snaps[4].ID), visible(t, root)); len(d) > 0 {
				t.Fatalf("restore after gc: %v", d)
			}
			if _, err := s.Restore(ctx, manual.ID, RestoreOptions{}); err != nil {
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
