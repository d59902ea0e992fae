package diff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchSizes are the benchmark cases: lines and percent of lines edited.
var benchSizes = []struct {
	lines, pct int
}{
	{10_000, 1}, {10_000, 10}, {100_000, 1}, {100_000, 10},
}

func benchName(lines, pct int) string {
	return fmt.Sprintf("%dk-%d%%", lines/1000, pct)
}

// codeLine returns a line that looks like source code: a quarter of them
// come from a small pool of lines that repeat all over real files.
func codeLine(rng *rand.Rand, i int) string {
	pool := [...]string{
		"}", "", "\t}", "\treturn nil", "\tif err != nil {", "\t\treturn err",
		"\t\t}", "\t} else {", "\tdefer mu.Unlock()", "\tmu.Lock()", "// TODO",
		"\t\tcontinue", "\tfor _, x := range xs {", "\t\tbreak", "\t\treturn nil, err",
		")", "import (", "\t\"fmt\"", "\treturn", "\t\t\treturn",
	}
	if rng.IntN(4) == 0 {
		return pool[rng.IntN(len(pool))]
	}
	return fmt.Sprintf("\tv%d := compute%d(x, %d) // %08x", i, rng.IntN(500), rng.IntN(100000), rng.Uint32())
}

// benchPair returns a file of n lines and a copy with pct% of its lines
// edited at random places (a third each modified, inserted, deleted).
func benchPair(n, pct int, seed uint64) (old, nw []byte) {
	rng := rand.New(rand.NewPCG(seed, uint64(n*100+pct)))
	lines := make([]string, n)
	for i := range lines {
		lines[i] = codeLine(rng, i) + "\n"
	}
	edits := n * pct / 100
	kind := make(map[int]int, edits) // line -> 1 modify, 2 insert before, 3 delete
	for len(kind) < edits {
		kind[rng.IntN(n)] = 1 + rng.IntN(3)
	}
	out := make([]string, 0, n+edits)
	for i, l := range lines {
		switch kind[i] {
		case 1:
			out = append(out, codeLine(rng, n+i)+"\n")
		case 2:
			out = append(out, codeLine(rng, 2*n+i)+"\n", l)
		case 3:
		default:
			out = append(out, l)
		}
	}
	return []byte(strings.Join(lines, "")), []byte(strings.Join(out, ""))
}

func BenchmarkCompute(b *testing.B) {
	for _, sz := range benchSizes {
		old, nw := benchPair(sz.lines, sz.pct, 1)
		b.Run(benchName(sz.lines, sz.pct), func(b *testing.B) {
			if got, want := editCount(Compute("a", "b", old, nw)), gitMinimalEdits(b, old, nw); got != want {
				b.Fatalf("not minimal: %d edited lines, git diff --minimal %d", got, want)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(old) + len(nw)))
			start := processCPU(b)
			for b.Loop() {
				fd := Compute("a", "b", old, nw)
				if len(Unified(fd)) == 0 {
					b.Fatal("empty diff")
				}
			}
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkGitDiffNoIndex runs `git diff --no-index` on the same files as
// BenchmarkCompute, for bench.sh to compare against.
func BenchmarkGitDiffNoIndex(b *testing.B) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		b.Fatalf("git is required: %v", err)
	}
	dir := b.TempDir()
	for _, sz := range benchSizes {
		old, nw := benchPair(sz.lines, sz.pct, 1)
		name := benchName(sz.lines, sz.pct)
		op := filepath.Join(dir, strings.ReplaceAll(name, "%", "")+".old")
		np := filepath.Join(dir, strings.ReplaceAll(name, "%", "")+".new")
		if err := os.WriteFile(op, old, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(np, nw, 0o644); err != nil {
			b.Fatal(err)
		}
		env := gitEnv(b)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(old) + len(nw)))
			var out bytes.Buffer
			var cpu time.Duration
			for b.Loop() {
				out.Reset()
				cmd := exec.Command(gitPath, "diff", "--no-index", "--no-color", "--no-ext-diff", op, np)
				cmd.Env = env
				cmd.Stdout = &out
				err := cmd.Run()
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || out.Len() == 0 {
					b.Fatalf("git diff --no-index: %v", err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestMinimalOnBenchFiles checks, on the benchmark's 10k-line files, that
// Compute's diff is as small as `git diff --minimal` (which searches
// exhaustively) and never larger than git's default output.
// BenchmarkCompute checks the 100k-line files the same way.
func TestMinimalOnBenchFiles(t *testing.T) {
	dir := t.TempDir()
	for _, sz := range benchSizes {
		if sz.lines > 10_000 {
			continue
		}
		old, nw := benchPair(sz.lines, sz.pct, 1)
		op, np := filepath.Join(dir, "old"), filepath.Join(dir, "new")
		if err := os.WriteFile(op, old, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(np, nw, 0o644); err != nil {
			t.Fatal(err)
		}
		got := editCount(Compute("a", "b", old, nw))
		for _, mode := range []string{"--minimal", "--diff-algorithm=myers"} {
			cmd := exec.Command("git", "diff", "--no-index", "--no-color", mode, "old", "new")
			cmd.Dir = dir
			cmd.Env = gitEnv(t)
			out, _ := cmd.Output()
			n := countGitEdits(string(out))
			if n == 0 {
				t.Fatalf("%s: git printed no changes", mode)
			}
			if mode == "--minimal" && got != n {
				t.Errorf("%s: %d edited lines, git --minimal has %d", benchName(sz.lines, sz.pct), got, n)
			}
			if got > n {
				t.Errorf("%s: %d edited lines, more than git %s (%d)", benchName(sz.lines, sz.pct), got, mode, n)
			}
			t.Logf("%s: agentd %d edited lines, git %s %d", benchName(sz.lines, sz.pct), got, mode, n)
		}
	}
}

// gitMinimalEdits counts the deleted and inserted lines of
// `git diff --no-index --minimal`.
func gitMinimalEdits(tb testing.TB, old, nw []byte) int {
	dir := tb.TempDir()
	op, np := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	if err := os.WriteFile(op, old, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(np, nw, 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("git", "diff", "--no-index", "--no-color", "--minimal", "old", "new")
	cmd.Dir = dir
	cmd.Env = gitEnv(tb)
	out, _ := cmd.Output()
	return countGitEdits(string(out))
}

func countGitEdits(out string) int {
	n := 0
	for _, l := range splitLines(out) {
		if (l[0] == '+' || l[0] == '-') && !strings.HasPrefix(l, "+++ ") && !strings.HasPrefix(l, "--- ") {
			n++
		}
	}
	return n
}
