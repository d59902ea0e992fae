//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportOnSmallTree runs the whole benchmark once on a small tree, so
// that bench/snapshot.sh cannot break unnoticed: every row must be
// measured and printed, and agentd and git must have seen the same files.
func TestReportOnSmallTree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed (make deps installs it): %v", err)
	}
	tree, work := t.TempDir(), t.TempDir()
	for i := range 240 {
		p := filepath.Join(tree, fmt.Sprintf("d%d/e%d/f%d.c", i%7, i%3, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), 50)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, ".gitignore"), []byte("*.o\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "ignored.o"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(work, "gitconfig"))
	// The tree is a repository that tracks a file its own .gitignore
	// matches: agentd keeps it (as git ls-files does), and the git side
	// must be given the same file set instead of refusing.
	if err := os.WriteFile(filepath.Join(tree, "tracked.o"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"add", "-f", "tracked.o"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		if o, err := exec.Command("git", append([]string{"-C", tree}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, o)
		}
	}
	// The per-process path runs the real binary.
	bin := filepath.Join(work, "agentd")
	mod, _ := exec.Command("go", "env", "GOMOD").Output()
	build := exec.Command("go", "build", "-o", bin, "./cmd/agentd")
	build.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	if o, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build agentd: %v\n%s", err, o)
	}
	var buf bytes.Buffer
	out, barrier, agentdBin = &buf, false, bin
	defer func() { out, barrier, agentdBin = os.Stdout, true, "" }()
	if err := run(tree, work, 1); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	report := buf.String()
	for _, row := range []string{
		"initial snapshot ", "no change ", "10 changed files ", "restore 10 modified + 5 created + 5 deleted ",
		"no change, watcher running", "10 changed files, watcher running",
		"restore 10 modified + 5 created + 5 deleted, watcher running", "store size after the initial snapshot",
		"no change, per process", "10 changed files, per process", "restore 10 modified + 5 created + 5 deleted, per process",
	} {
		if !strings.Contains(report, row) {
			t.Errorf("the report has no %q row:\n%s", row, report)
		}
	}
	// The undo row (agentd's revert against git revert --no-commit).
	if !strings.Contains(report, undoRow+" ") {
		t.Errorf("the report has no %q row:\n%s", undoRow, report)
	}
	if !strings.Contains(report, "agentd 242 files (0 skipped), git 242 files") {
		t.Errorf("agentd and git should both see the 240 files, .gitignore and tracked.o:\n%s", report)
	}
}
