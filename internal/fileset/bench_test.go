//go:build unix

package fileset

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchTree returns the Linux 6.1 tree from bench/tree.sh, as a hard-linked
// copy whose top .gitignore lacks the Debian packaging lines ("/*",
// "!/debian/") that would ignore everything, so both sides list ~78k files.
// The copy lives in the git-ignored .cache/trees/linux-fileset.
func benchTree(b *testing.B) string {
	b.Helper()
	top, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(top, "bench", "tree.sh")).Output()
	if err != nil {
		b.Fatalf("bench/tree.sh: %v", err)
	}
	src := strings.TrimSpace(string(out))
	dst := filepath.Join(filepath.Dir(src), "linux-fileset")
	marker := filepath.Join(dst, ".fileset-complete")
	if _, err := os.Stat(marker); err == nil {
		return dst
	}
	if err := os.RemoveAll(dst); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("cp", "-al", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp -al %s %s: %v\n%s", src, dst, err, out)
	}
	gi, err := os.ReadFile(filepath.Join(src, ".gitignore"))
	if err != nil {
		b.Fatal(err)
	}
	if i := bytes.Index(gi, []byte("#\n# Debian packaging")); i >= 0 {
		gi = gi[:i]
	}
	// Replace the hard link, never write through it into the source tree.
	os.Remove(filepath.Join(dst, ".gitignore"))
	os.Remove(filepath.Join(dst, ".complete"))
	if err := os.WriteFile(filepath.Join(dst, ".gitignore"), gi, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dst
}

// BenchmarkLinuxTree compares Walk with `git ls-files --others
// --exclude-standard` on the same tree: git runs with GIT_DIR pointing to an
// empty temporary repository and --work-tree, so nothing is written into
// the tree, and fileset is given the same repository. Besides wall time it
// reports CPU time per walk (user+system; for git, of the child process),
// which is steadier on a shared machine. Walk also lstats every file for
// its Entry; git ls-files -o does not.
func BenchmarkLinuxTree(b *testing.B) {
	tree := benchTree(b)
	gitDir := filepath.Join(b.TempDir(), "empty.git")
	env := newGitEnv(b)
	env.git(b, b.TempDir(), "", false, "init", "-q", "--bare", gitDir)
	// Both sides must list the same files, or the comparison means nothing.
	{
		s := env.open(b, tree)
		s.repo = &repository{workTree: tree, gitDir: gitDir, commonDir: gitDir}
		got := walkAll(b, s, Options{})
		out := env.git(b, tree, "", false, "--git-dir="+gitDir, "--work-tree="+tree, "ls-files", "-z", "--others", "--exclude-standard")
		want := splitNUL(out)
		missing := 0
		for _, p := range want {
			if _, ok := got[p]; !ok {
				missing++
			}
		}
		if missing > 0 || len(got) != len(want) {
			b.Fatalf("Walk lists %d files, git %d; %d of git's are missing", len(got), len(want), missing)
		}
	}
	for _, noStat := range []bool{false, true} {
		name := "fileset"
		if noStat {
			name = "fileset-nostat"
		}
		b.Run(name, func(b *testing.B) {
			s := env.open(b, tree)
			s.repo = &repository{workTree: tree, gitDir: gitDir, commonDir: gitDir}
			var n atomic.Int64
			cpu0 := processCPU()
			for b.Loop() {
				n.Store(0)
				if err := s.Walk(context.Background(), Options{NoStat: noStat}, func(Entry) error { n.Add(1); return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(n.Load()), "files")
		})
	}
	b.Run("git-ls-files", func(b *testing.B) {
		var n int
		var cpu time.Duration
		for b.Loop() {
			cmd := exec.Command("git", "--git-dir="+gitDir, "--work-tree="+tree, "ls-files", "-z", "--others", "--exclude-standard")
			cmd.Dir = tree
			cmd.Env = env.environ()
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("git ls-files: %v", err)
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			n = bytes.Count(out, []byte{0})
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(n), "files")
	})
}

// processCPU is this process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
