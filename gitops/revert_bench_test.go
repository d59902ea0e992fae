package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRevert is the undo of a run on a large tree (issue 38, "Undo
// stays fast"): on a generated tree of 20,000 files, snapshotted once as
// a run's snapshot in a session's store is (the protection base the undo
// records its result on), the agent changes 10 files (recorded with
// RecordEdits before the writes, as the engine does), the user edits 3 of
// them on other lines, and Revert takes the run back. Only the Revert is
// timed; every round checks the user's lines stayed and the agent's went.
// bench/snapshot.sh measures the same against git revert --no-commit on
// a real tree.
//
//	go test -run '^$' -bench BenchmarkRevert ./gitops/
func BenchmarkRevert(b *testing.B) {
	const files, changed, userEdits = 20000, 10, 3
	root := b.TempDir()
	body := strings.Repeat("a line of the generated tree, as long as code lines are\n", 40)
	for i := range files {
		p := filepath.Join(root, fmt.Sprintf("d%02d/e%02d/f%05d.c", i%50, i%20, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("// file %d\n%s", i, body)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s := openTestStore(b, root, Options{})
	ctx := context.Background()
	// A run's snapshot, as a session's store has: the protection base
	// the undo records its result on (recordRevertResult).
	if _, err := s.Snapshot(ctx, SnapshotOptions{Label: "initial", RunID: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.StopTimer()
	for round := 0; round < b.N; round++ {
		type file struct {
			rel                 string
			before, agent, user []byte
		}
		var fs []file
		var edits []Edit
		for i := range changed {
			rel := fmt.Sprintf("d%02d/e%02d/f%05d.c", (i*1999+round*7)%files%50, (i*1999+round*7)%files%20, (i*1999+round*7)%files)
			before, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				b.Fatal(err)
			}
			lines := strings.SplitAfter(string(before), "\n")
			agent := []byte(strings.Join(lines[:20], "") + fmt.Sprintf("// agent change %d\n", round) + strings.Join(lines[20:], ""))
			f := file{rel: rel, before: before, agent: agent, user: agent}
			if i < userEdits {
				f.user = append([]byte(fmt.Sprintf("// user edit %d\n", round)), agent...)
			}
			fs = append(fs, f)
			edits = append(edits, Edit{Path: rel, Before: &FileState{Data: before, Mode: 0o644}, After: &FileState{Data: agent, Mode: 0o644}})
		}
		owner := fmt.Sprintf("run/bench-%d", round)
		if err := s.RecordEdits(ctx, owner, "s1", edits); err != nil {
			b.Fatal(err)
		}
		for _, f := range fs {
			if err := os.WriteFile(filepath.Join(root, f.rel), f.user, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		res, err := s.Revert(ctx, []string{owner}, RevertOptions{RecordAs: fmt.Sprintf("undo/bench-%d", round)})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if !res.Applied || len(res.Conflicts) > 0 || len(res.Reverted) != changed {
			b.Fatalf("round %d: applied %v, reverted %v, conflicts %+v: want the %d files reverted cleanly", round, res.Applied, res.Reverted, res.Conflicts, changed)
		}
		for i, f := range fs {
			got, _ := os.ReadFile(filepath.Join(root, f.rel))
			want := f.before
			if i < userEdits {
				want = append([]byte(fmt.Sprintf("// user edit %d\n", round)), f.before...)
			}
			if !bytes.Equal(got, want) {
				b.Fatalf("round %d: %s after the revert:\n%s\nwant:\n%s", round, f.rel, got, want)
			}
		}
	}
}
