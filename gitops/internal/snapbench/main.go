//go:build unix

// Command snapbench compares agentd's snapshots with the git command line
// doing the same job the way other agents do (git add -A && git commit in
// a shadow git dir; restore with git clean -fd && git reset --hard), run
// interleaved on one tree, and prints ratios. bench/snapshot.sh runs it on
// a copy of a large tree.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

func main() {
	tree := flag.String("tree", "", "the workspace `dir` to benchmark on (it is modified: use a copy)")
	work := flag.String("work", "", "scratch `dir` for the stores")
	reps := flag.Int("reps", 3, "repetitions of each incremental measurement")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the measurements named by -profile to `file`")
	flag.StringVar(&profilePhase, "profile", "no change", "the measurement (name prefix) -cpuprofile covers")
	flag.BoolVar(&noWatch, "nowatch", false, "skip the measurements with the watcher running")
	flag.BoolVar(&barrier, "barrier", true, "sync(2) before each timed operation, for both tools")
	flag.StringVar(&agentdBin, "agentd", "", "the agentd `binary`: also measure agentd snapshot create/restore run as separate processes (cold: each loads the stat cache and the pack indexes)")
	flag.Parse()
	if *tree == "" || *work == "" {
		flag.Usage()
		os.Exit(2)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := run(*tree, *work, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "snapbench:", err)
		os.Exit(1)
	}
}

// out receives the report (tests capture it).
var out io.Writer = os.Stdout

// Profiling tunables (set from flags).
var (
	cpuProfile   string
	profilePhase string
	noWatch      bool
	barrier      bool
	agentdBin    string
)

// undoRow names the undo case's row (the test looks for it).
const undoRow = "undo 10 changed files, user edits in 3 (git revert)"

type bench struct {
	tree, gitDir string
	files        []string // regular files of the tree, sorted
	round        int
	// forced are files the tree's own repository tracks although its
	// ignore rules match them: agentd keeps tracked files (as git
	// ls-files does), so the git side adds them with -f to see the same
	// file set.
	forced string // a NUL-separated pathspec file; "" if none
	// undoFiles are the files the undo case may change (undo.go).
	undoFiles []string
}

func (b *bench) git(args ...string) error {
	cmd := exec.Command("git", append([]string{"--git-dir=" + b.gitDir, "--work-tree=" + b.tree}, args...)...)
	cmd.Dir = b.tree
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=b@b")
	out, err := cmd.CombinedOutput()
	childCPU(cmd)
	if err != nil {
		return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// childrenCPU is the CPU time (user + system) of the commands run so far:
// timeIt charges an operation the growth of it and of this process's own.
var childrenCPU time.Duration

func childCPU(cmd *exec.Cmd) {
	if ps := cmd.ProcessState; ps != nil {
		childrenCPU += ps.UserTime() + ps.SystemTime()
	}
}

// cpuNow is the CPU time used so far by this process and by the commands
// it ran.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return childrenCPU
	}
	return childrenCPU + time.Duration(ru.Utime.Nano()+ru.Stime.Nano())
}

func (b *bench) gitSnapshot() error {
	if err := b.git("add", "-A"); err != nil {
		return err
	}
	if b.forced != "" {
		if err := b.git("add", "-A", "-f", "--pathspec-from-file="+b.forced, "--pathspec-file-nul"); err != nil {
			return err
		}
	}
	return b.git("commit", "-q", "--allow-empty", "--no-verify", "-m", "checkpoint")
}

func (b *bench) gitRestore() error {
	if err := b.git("clean", "-fdq"); err != nil {
		return err
	}
	return b.git("reset", "-q", "--hard")
}

// modify changes n files, creates c and deletes d (distinct each round).
func (b *bench) modify(n, c, d int) error {
	b.round++
	step := len(b.files) / (n + d + 1)
	for i := 0; i < n; i++ {
		p := filepath.Join(b.tree, b.files[(i*step+b.round*7)%len(b.files)])
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "// bench change %d\n", b.round)
		f.Close()
	}
	for i := 0; i < c; i++ {
		if err := os.WriteFile(filepath.Join(b.tree, fmt.Sprintf("bench-new-%d-%d.txt", b.round, i)), []byte("new\n"), 0o644); err != nil {
			return err
		}
	}
	for i := 0; i < d; i++ {
		if err := os.Remove(filepath.Join(b.tree, b.files[((n+i)*step+b.round*7)%len(b.files)])); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// lastCPU is the CPU time (see cpuNow) of the last operation timeIt timed.
var lastCPU time.Duration

func timeIt(f func() error) (time.Duration, error) {
	if barrier {
		// What the previous operation (of either tool) left to write back
		// is written now, untimed: otherwise the first fsync of the next
		// operation waits for it (git's 8 MB index, renamed into place,
		// is still in flight when agentd's snapshot that follows it
		// commits its journal) and each tool is charged for the other's I/O.
		syscall.Sync()
	}
	c := cpuNow()
	t := time.Now()
	err := f()
	d := time.Since(t)
	lastCPU = cpuNow() - c
	return d, err
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func run(tree, work string, reps int) error {
	ctx := context.Background()
	b := &bench{tree: tree, gitDir: filepath.Join(work, "git-shadow")}
	var treeBytes int64
	// Warm the page cache for both sides alike, and list the files.
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			treeBytes += int64(len(data))
			rel, _ := filepath.Rel(tree, p)
			if !strings.HasPrefix(filepath.Base(rel), ".") {
				b.files = append(b.files, rel)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(b.files)
	if err := b.findForced(work); err != nil {
		return err
	}
	fmt.Fprintf(out, "tree: %s (%d files, %d MiB)\n", tree, len(b.files), treeBytes>>20)
	if barrier {
		fmt.Fprintln(out, "each timed operation starts after sync(2), for both tools (-barrier=false: no barrier)")
	} else {
		fmt.Fprintln(out, "no sync(2) barrier: each operation may wait for the other tool's writeback")
	}

	ws, err := workspace.Open(tree, workspace.Options{})
	if err != nil {
		return err
	}
	store, err := gitops.Open(ctx, ws, gitops.Options{StateDir: filepath.Join(work, "agentd-state")})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := b.git("init", "-q"); err != nil {
		return err
	}
	// After the initial commit's ~80k loose objects, git commit starts a
	// detached "git gc --auto" that repacks for minutes in the background,
	// competing for the CPU with every later measurement of both sides: it
	// is turned off (which makes git's side faster, not slower).
	if err := b.git("config", "gc.auto", "0"); err != nil {
		return err
	}

	type row struct {
		name        string
		agentd, git time.Duration
		// CPU time (user + system), of this process for agentd in
		// process, else of the commands: the machine may be shared, and
		// the wall time then depends on what else runs.
		agentdCPU, gitCPU time.Duration
		target            string
	}
	var rows []row

	// Initial snapshot.
	var first *gitops.Snapshot
	ta, err := timeIt(func() (err error) {
		first, err = store.Snapshot(ctx, gitops.SnapshotOptions{Label: "initial"})
		return err
	})
	if err != nil {
		return err
	}
	ca := lastCPU
	tg, err := timeIt(b.gitSnapshot)
	if err != nil {
		return err
	}
	cg := lastCPU
	listed, _ := exec.Command("git", "--git-dir="+b.gitDir, "ls-tree", "-r", "--name-only", "HEAD").Output()
	fmt.Fprintf(out, "initial snapshot: agentd %d files (%d skipped), git %d files\n", first.Files, len(first.Skipped), strings.Count(string(listed), "\n"))
	if first.Files == 0 {
		return fmt.Errorf("agentd's snapshot is empty: is %s ignored by a repository it is in?", tree)
	}
	if gitFiles := strings.Count(string(listed), "\n"); first.Files+len(first.Skipped) != gitFiles {
		return fmt.Errorf("agentd snapshotted %d files and left out %d, git %d: they must see the same tree", first.Files, len(first.Skipped), gitFiles)
	}
	rows = append(rows, row{name: "initial snapshot", agentd: ta, git: tg, agentdCPU: ca, gitCPU: cg, target: "<= 0.30"})
	storeBytes := dirSize(filepath.Join(store.Dir(), "objects"))
	gitBytes := dirSize(filepath.Join(b.gitDir, "objects"))

	measure := func(name, target string, prep func() error, a, g func() error) error {
		var as, gs, acs, gcs []time.Duration
		if cpuProfile != "" && strings.HasPrefix(name, profilePhase) {
			f, err := os.Create(cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
			cpuProfile = ""
		}
		for range reps {
			if err := prep(); err != nil {
				return err
			}
			d, err := timeIt(a)
			if err != nil {
				return err
			}
			as, acs = append(as, d), append(acs, lastCPU)
			if strings.HasPrefix(name, "restore") {
				// git restores its own copy of the same change.
				if err := prep(); err != nil {
					return err
				}
			}
			d, err = timeIt(g)
			if err != nil {
				return err
			}
			gs, gcs = append(gs, d), append(gcs, lastCPU)
		}
		rows = append(rows, row{name: name, agentd: median(as), git: median(gs), agentdCPU: median(acs), gitCPU: median(gcs), target: target})
		return nil
	}
	snap := func() error { _, err := store.Snapshot(ctx, gitops.SnapshotOptions{}); return err }
	// Events reach the watcher asynchronously; in the daemon a snapshot
	// follows a tool's writes by far more than this.
	waitWatcher := func() error { time.Sleep(50 * time.Millisecond); return nil }
	none := func() error { return nil }
	if err := measure("no change", "<= 0.50", none, snap, b.gitSnapshot); err != nil {
		return err
	}
	if err := measure("10 changed files", "<= 0.50", func() error { return b.modify(10, 0, 0) }, snap, b.gitSnapshot); err != nil {
		return err
	}
	// Restore: both sides are at the same state (their last snapshot).
	if err := b.gitSnapshot(); err != nil {
		return err
	}
	if err := snap(); err != nil {
		return err
	}
	last := ""
	if l, err := store.List(ctx, ""); err == nil && len(l) > 0 {
		last = l[0].ID
	}
	// Overwrite: git reset --hard overwrites too (and the store has only
	// manual snapshots, so there is no protection base).
	restore := func() error { _, err := store.Restore(ctx, last, gitops.RestoreOptions{Overwrite: true}); return err }
	if err := measure("restore 10 modified + 5 created + 5 deleted", "<= 0.50", func() error { return b.modify(10, 5, 5) }, restore, b.gitRestore); err != nil {
		return err
	}

	// Undo of a run's 10 changed files, the user having edited 3 of them
	// since (undo.go): agentd's revert against git revert --no-commit.
	ua, ug, uca, ucg, err := b.measureUndo(ctx, store, reps)
	if err != nil {
		return err
	}
	rows = append(rows, row{name: undoRow, agentd: ua, git: ug, agentdCPU: uca, gitCPU: ucg, target: "<= 1.00"})

	// Per process, as agentd run's first snapshot and the terminal pay:
	// every command loads the stat cache and the pack indexes cold.
	if agentdBin != "" {
		stateDir := filepath.Join(work, "agentd-state")
		cli := func(args ...string) func() error {
			return func() error {
				cmd := exec.Command(agentdBin, append(args, "--workspace", tree, "--state-dir", stateDir)...)
				o, err := cmd.CombinedOutput()
				childCPU(cmd)
				if err != nil {
					return fmt.Errorf("agentd %s: %v\n%s", strings.Join(args, " "), err, o)
				}
				return nil
			}
		}
		create := cli("snapshot", "create")
		if err := measure("no change, per process", "<= 0.50", none, create, b.gitSnapshot); err != nil {
			return err
		}
		if err := measure("10 changed files, per process", "<= 0.50", func() error { return b.modify(10, 0, 0) }, create, b.gitSnapshot); err != nil {
			return err
		}
		if err := b.gitSnapshot(); err != nil {
			return err
		}
		if err := create(); err != nil {
			return err
		}
		if l, err := store.List(ctx, ""); err == nil && len(l) > 0 {
			last = l[0].ID
		}
		if err := measure("restore 10 modified + 5 created + 5 deleted, per process", "<= 0.50", func() error { return b.modify(10, 5, 5) },
			cli("snapshot", "restore", last, "--overwrite"), b.gitRestore); err != nil {
			return err
		}
	}

	// The daemon: the watcher runs in the same process.
	if noWatch {
		fmt.Fprintf(out, "watcher: skipped (-nowatch)\n")
	} else if err := store.Watch(ctx); err != nil {
		fmt.Fprintf(out, "watcher: not available (%v)\n", err)
	} else {
		if err := snap(); err != nil { // the walk the watcher's dirty sets build on
			return err
		}
		if err := measure("no change, watcher running", "<= 0.05", none, snap, b.gitSnapshot); err != nil {
			return err
		}
		if err := measure("10 changed files, watcher running", "<= 0.10", func() error {
			if err := b.modify(10, 0, 0); err != nil {
				return err
			}
			return waitWatcher()
		}, snap, b.gitSnapshot); err != nil {
			return err
		}
		// Both sides at the same state again, then the restore as the daemon does it.
		if err := b.gitSnapshot(); err != nil {
			return err
		}
		if err := snap(); err != nil {
			return err
		}
		if l, err := store.List(ctx, ""); err == nil && len(l) > 0 {
			last = l[0].ID
		}
		if err := measure("restore 10 modified + 5 created + 5 deleted", "<= 0.50", func() error {
			if err := b.modify(10, 5, 5); err != nil {
				return err
			}
			return waitWatcher()
		}, restore, b.gitRestore); err != nil {
			return err
		}
		rows[len(rows)-1].name += ", watcher running"
	}

	fmt.Fprintf(out, "\nmedians of %d runs; ratio: agentd / git wall time; CPU: the same for CPU time (user + system)\n", reps)
	fmt.Fprintf(out, "%-58s %12s %12s %8s %8s %12s %12s %8s\n", "operation", "agentd", "git CLI", "ratio", "target", "agentd CPU", "git CPU", "CPU")
	for _, r := range rows {
		fmt.Fprintf(out, "%-58s %12s %12s %7.3fx %8s %12s %12s %7.3fx\n", r.name, r.agentd.Round(time.Microsecond), r.git.Round(time.Microsecond),
			float64(r.agentd)/float64(r.git), r.target, r.agentdCPU.Round(time.Millisecond), r.gitCPU.Round(time.Millisecond),
			float64(r.agentdCPU)/float64(max(r.gitCPU, 1)))
	}
	fmt.Fprintf(out, "%-58s %9d MiB %9d MiB %7.3fx %8s   (agentd store / tree bytes: %.3f)\n", "store size after the initial snapshot",
		storeBytes>>20, gitBytes>>20, float64(storeBytes)/float64(gitBytes), "", float64(storeBytes)/float64(treeBytes))
	fmt.Fprintf(out, "tree bytes: %d MiB; target: agentd store <= 0.50 of the tree\n", treeBytes>>20)
	return nil
}

// findForced lists the files the tree's own repository tracks although
// its ignore rules match them (git ls-files -ci --exclude-standard) and
// keeps them out of the files modify picks (deleting one would leave the
// pathspec without a match).
func (b *bench) findForced(work string) error {
	if _, err := os.Stat(filepath.Join(b.tree, ".git")); err != nil {
		return nil
	}
	cmd := exec.Command("git", "-C", b.tree, "ls-files", "-z", "-c", "-i", "--exclude-standard")
	list, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files in %s: %v", b.tree, err)
	}
	if len(list) == 0 {
		return nil
	}
	b.forced = filepath.Join(work, "forced-paths")
	if err := os.WriteFile(b.forced, list, 0o644); err != nil {
		return err
	}
	skip := map[string]bool{}
	for _, p := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		skip[filepath.FromSlash(p)] = true
	}
	kept := b.files[:0]
	for _, f := range b.files {
		if !skip[f] {
			kept = append(kept, f)
		}
	}
	b.files = kept
	fmt.Fprintf(out, "%d files are tracked although ignored: git adds them with -f, as agentd keeps them\n", len(skip))
	return nil
}
