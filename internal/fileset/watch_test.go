package fileset

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"syscall"
)

// eventDeadline bounds each wait for a watcher event; waits are polling
// loops bounded in count, never timed assertions.
const (
	eventDeadline = 200 * time.Millisecond
	eventPolls    = 100
)

// drainUntil drains w until all want paths were reported (accumulating),
// failing after eventPolls rounds. It returns everything reported.
func drainUntil(t *testing.T, w *Watcher, want ...string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for range eventPolls {
		paths, _ := w.Drain()
		for _, p := range paths {
			seen[p] = true
		}
		missing := false
		for _, p := range want {
			if !seen[p] {
				missing = true
			}
		}
		if !missing {
			return seen
		}
		select {
		case <-w.Changes():
		case <-time.After(eventDeadline):
		}
	}
	t.Fatalf("watcher did not report %q; reported %v", want, seen)
	return nil
}

func startWatch(t *testing.T, s *Set) *Watcher {
	t.Helper()
	w, err := s.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	// The initial state is not a change.
	if paths, overflow := w.Drain(); len(paths) != 0 || overflow {
		t.Fatalf("fresh watcher: Drain = %v, %v", paths, overflow)
	}
	return w
}

func TestWatcherReportsChanges(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	env.git(t, root, "", false, "init", "-q")
	writeFile(t, filepath.Join(root, ".gitignore"), "ignored/\n*.o\n")
	writeFile(t, filepath.Join(root, "src", "a.c"), "a")
	writeFile(t, filepath.Join(root, "ignored", "x"), "x")
	s := env.open(t, root)
	w := startWatch(t, s)
	if _, ok := w.watched["ignored"]; ok {
		t.Errorf("an ignored directory is watched")
	}

	writeFile(t, filepath.Join(root, "src", "a.c"), "changed")
	writeFile(t, filepath.Join(root, "src", "new.c"), "new")
	drainUntil(t, w, "src/a.c", "src/new.c")

	if err := os.Remove(filepath.Join(root, "src", "a.c")); err != nil {
		t.Fatal(err)
	}
	drainUntil(t, w, "src/a.c")

	// Changes under .git, in ignored directories and to ignored files are
	// not reported: write them first, then a sentinel, and check once the
	// sentinel arrived (inotify delivers events in order).
	writeFile(t, filepath.Join(root, ".git", "agentd-test"), "x")
	writeFile(t, filepath.Join(root, "ignored", "y"), "y")
	writeFile(t, filepath.Join(root, "src", "b.o"), "o")
	writeFile(t, filepath.Join(root, "sentinel"), "s")
	seen := drainUntil(t, w, "sentinel")
	for p := range seen {
		if strings.HasPrefix(p, ".git") || strings.HasPrefix(p, "ignored") || p == "src/b.o" {
			t.Errorf("reported %q", p)
		}
	}
}

// Files created right after mkdir, before the watch on the new directory
// exists, are found by the rescan that follows adding the watch.
func TestWatcherNewDirectories(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	s := env.open(t, root)
	w := startWatch(t, s)
	var want []string
	for i := range 5 {
		d := filepath.Join(root, "n", fmt.Sprint(i), "deep")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			writeFile(t, filepath.Join(d, fmt.Sprint("f", j)), "x")
			want = append(want, fmt.Sprintf("n/%d/deep/f%d", i, j))
		}
	}
	drainUntil(t, w, want...)
	// The new directories are watched now.
	writeFile(t, filepath.Join(root, "n", "3", "deep", "later"), "x")
	drainUntil(t, w, "n/3/deep/later")
}

func TestWatcherRuleChanges(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	env.git(t, root, "", false, "init", "-q")
	writeFile(t, filepath.Join(root, "gen", "out.bin"), "b")
	writeFile(t, filepath.Join(root, "sub", "x.txt"), "x")
	writeFile(t, filepath.Join(root, ".gitignore"), "gen/\n")
	s := env.open(t, root)
	w := startWatch(t, s)

	// A changed .gitignore reports its directory; newly visible
	// directories get watched.
	writeFile(t, filepath.Join(root, ".gitignore"), "# nothing\n")
	drainUntil(t, w, ".gitignore", ".")
	writeFile(t, filepath.Join(root, "gen", "out2.bin"), "b")
	drainUntil(t, w, "gen/out2.bin")
	writeFile(t, filepath.Join(root, "sub", ".gitignore"), "*.txt\n")
	drainUntil(t, w, "sub/.gitignore", "sub")

	// git add changes the index: the path whose tracked state changed is
	// reported.
	env.git(t, root, "", false, "add", "-f", "sub/x.txt")
	drainUntil(t, w, "sub/x.txt")

	// info/exclude is outside the tree: a change means a full walk.
	writeFile(t, filepath.Join(root, ".git", "info", "exclude"), "*.bin\n")
	// Drain stats the rule files itself, so the first Drain sees it.
	if _, overflow := w.Drain(); !overflow {
		t.Fatal("a changed info/exclude did not cause overflow")
	}
	if _, overflow := w.Drain(); overflow {
		t.Errorf("overflow reported twice for one change")
	}
}

func TestWatcherLimitFallsBackToScanning(t *testing.T) {
	var logs bytes.Buffer
	limitLogOnce = new(sync.Once)
	n := 0
	testHookAddWatch = func(add func(string) error) func(string) error {
		return func(p string) error {
			n++
			if n > 2 {
				return fmt.Errorf("add watch %s: %w", p, syscall.ENOSPC)
			}
			return add(p)
		}
	}
	t.Cleanup(func() {
		testHookAddWatch = nil
	})
	root := t.TempDir()
	for i := range 5 {
		writeFile(t, filepath.Join(root, fmt.Sprint("d", i), "f"), "x")
	}
	env := newGitEnv(t)
	s := env.open(t, root)
	s.SetLogger(slog.New(slog.NewTextHandler(&logs, nil))) // only the logger passed in, never the global one
	w, err := s.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range 3 {
		if _, overflow := w.Drain(); !overflow {
			t.Fatal("Drain without overflow after the watch limit was hit")
		}
	}
	w2, err := s.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w2.Close()
	if c := strings.Count(logs.String(), "max_user_watches"); c != 1 {
		t.Errorf("the limit hint was logged %d times, want once:\n%s", c, logs.String())
	}
	if !strings.Contains(logs.String(), "sysctl fs.inotify.max_user_watches=") {
		t.Errorf("log does not say how to raise the limit: %s", logs.String())
	}
}

func TestWatcherCloseAndCancel(t *testing.T) {
	root := t.TempDir()
	env := newGitEnv(t)
	s := env.open(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-w.done // the goroutine ends with the context
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherInIgnoredWorkspaceScans(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	env.git(t, root, "", false, "init", "-q")
	writeFile(t, filepath.Join(root, ".gitignore"), "build/\n")
	writeFile(t, filepath.Join(root, "build", "keep.c"), "k")
	env.git(t, root, "", false, "add", "-f", "build/keep.c")
	w, err := env.open(t, filepath.Join(root, "build")).Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, overflow := w.Drain(); !overflow {
		t.Errorf("a watcher that watches nothing must ask for walks")
	}
}

// TestWatcherDrainFlushes writes and drains at once, with no wait: Drain's
// flush barrier must report every write made before it.
func TestWatcherDrainFlushes(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a", "x"), "x")
	s := env.open(t, root)
	w := startWatch(t, s)
	for i := range 200 {
		p := fmt.Sprintf("a/f%d", i%7)
		if i%5 == 0 {
			p = fmt.Sprintf("n%d/g", i) // a new directory
		}
		writeFile(t, filepath.Join(root, filepath.FromSlash(p)), fmt.Sprint(i))
		paths, overflow := w.Drain()
		if overflow {
			t.Fatalf("round %d: overflow", i)
		}
		found := false
		for _, q := range paths {
			found = found || q == p || q == parentDir(p)
		}
		if !found {
			t.Fatalf("round %d: Drain right after writing %s reported %v", i, p, paths)
		}
	}
	dir := w.flushDir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("flush directory: %v", err)
	}
	w.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("flush directory %s left behind after Close: %v", dir, err)
	}
}

// TestWatcherRecreatedDirectory removes a watched directory and creates it
// again at once: changes in the new one must still be reported.
func TestWatcherRecreatedDirectory(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "d", "e", "f"), "x")
	s := env.open(t, root)
	w := startWatch(t, s)
	for i := range 20 {
		if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "d", "e", "f"), fmt.Sprint(i))
		if i%2 == 0 {
			w.Drain() // sometimes between the re-creation and the write
		}
		w.Drain()
		p := fmt.Sprintf("d/e/g%d", i)
		writeFile(t, filepath.Join(root, filepath.FromSlash(p)), "y")
		paths, overflow := w.Drain()
		found := false
		for _, q := range paths {
			found = found || q == p
		}
		if !found || overflow {
			t.Fatalf("round %d: a write in the re-created directory was not reported: %v (overflow %v)", i, paths, overflow)
		}
	}
}

// TestWatcherSymlinkReportsLink creates links and checks that the link's own
// path is reported, not its target's.
func TestWatcherSymlinkReportsLink(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "dir", "target"), "t")
	s := env.open(t, root)
	w := startWatch(t, s)
	if err := os.Symlink("target", filepath.Join(root, "dir", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dir", filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	paths, _ := w.Drain()
	got := map[string]bool{}
	for _, p := range paths {
		got[p] = true
	}
	if !got["dir/link"] || !got["dirlink"] || got["dir/target"] || got["dir"] {
		t.Fatalf("Drain after creating links = %v, want dir/link and dirlink only", paths)
	}
}

// A watcher names its barrier directory for its process and, once per
// process, removes those of processes that are gone (killed daemons
// cannot remove their own), leaving live processes' and unnamed ones.
func TestWatcherSweepsDeadProcessesFlushDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		d := filepath.Join(tmp, name)
		writeFile(t, filepath.Join(d, "7"), "")
		return d
	}
	gone := mk(fmt.Sprintf("%s%d-123", flushDirPrefix, dead.Process.Pid))
	live := mk(fmt.Sprintf("%s%d-456", flushDirPrefix, os.Getppid()))
	unnamed := mk(flushDirPrefix + "789")
	sweepOnce = sync.Once{}
	env := newGitEnv(t)
	w := startWatch(t, env.open(t, t.TempDir()))
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the barrier directory of a process that is gone is still there (%v)", err)
	}
	for _, d := range []string{live, unnamed} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if want := fmt.Sprintf("%s%d-", flushDirPrefix, os.Getpid()); !strings.HasPrefix(filepath.Base(w.flushDir), want) || filepath.Dir(w.flushDir) != tmp {
		t.Errorf("barrier directory %s; want %s/%s*", w.flushDir, tmp, want)
	}
}
