//go:build unix

package gitops

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fileset"
)

// The crash test re-executes this test binary as a child that snapshots and
// restores in a loop until it is killed.
const crashChildEnv = "AGENTD_GITOPS_CRASH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild())
	}
	if os.Getenv(revertChildEnv) != "" {
		os.Exit(revertChild())
	}
	checkOverrideChanges = true
	os.Exit(m.Run())
}

func crashChild() int {
	root, stateDir := os.Getenv("CRASH_ROOT"), os.Getenv("CRASH_STATE")
	seed, _ := strconv.ParseUint(os.Getenv("CRASH_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 7))
	set, err := fileset.Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	s, err := openStore(ctx, root, set, Options{StateDir: stateDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	var ids []string
	say := func(f string, a ...any) { fmt.Fprintf(out, f+"\n", a...); out.Flush() }
	say("READY")
	for i := 0; ; i++ {
		crashMutate(root, rng)
		if len(ids) > 0 && rng.IntN(2) == 0 {
			// A batch of new files makes the restore long enough to be
			// killed in the middle of its writes now and then.
			// (Snapshots hold batches of files: restoring one re-creates
			// them all.)
			os.RemoveAll(filepath.Join(root, "batch3"))
			os.RemoveAll(filepath.Join(root, "batch4"))
			if _, err := s.Restore(ctx, ids[rng.IntN(len(ids))], RestoreOptions{Overwrite: true}); err != nil {
				fmt.Fprintln(os.Stderr, "restore:", err)
				return 1
			}
			continue
		}
		if rng.IntN(2) == 0 {
			dir := filepath.Join(root, fmt.Sprintf("batch%d", 3+rng.IntN(2)))
			os.MkdirAll(dir, 0o755)
			for i := range 150 {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("g%03d", i)), []byte(fmt.Sprint(rng.Int())), 0o644)
			}
		}
		sn, err := s.Snapshot(ctx, SnapshotOptions{RunID: "crash"})
		if err != nil {
			fmt.Fprintln(os.Stderr, "snapshot:", err)
			return 1
		}
		ids = append(ids, sn.ID)
		say("SNAP %s", sn.ID)
	}
}

func crashMutate(root string, rng *rand.Rand) {
	names := []string{"a.txt", "b.txt", "dir/c.txt", "dir/sub/d.txt", "big.bin", "x.sh"}
	n := names[rng.IntN(len(names))]
	abs := filepath.Join(root, n)
	switch rng.IntN(6) {
	case 0:
		os.Remove(abs)
	case 1: // many new files at once: the snapshot writes a pack
		dir := filepath.Join(root, fmt.Sprintf("batch%d", rng.IntN(3)))
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		for i := range 80 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), []byte(fmt.Sprintf("%d %d\n", i, rng.Int())), 0o644)
		}
	case 2:
		os.RemoveAll(filepath.Join(root, fmt.Sprintf("batch%d", rng.IntN(3))))
	case 3:
		big := make([]byte, 256<<10)
		for i := range big {
			big[i] = byte(rng.IntN(256))
		}
		os.WriteFile(filepath.Join(root, "big.bin"), big, 0o644)
	default:
		os.MkdirAll(filepath.Dir(abs), 0o755)
		os.WriteFile(abs, []byte(strings.Repeat(fmt.Sprintf("%d\n", rng.Int()), rng.IntN(50)+1)), 0o644)
		if strings.HasSuffix(n, ".sh") {
			os.Chmod(abs, 0o755)
		}
	}
}

// TestCrashSafety kills a child process (SIGKILL) at random points of its
// snapshots and restores, 50 times; after each kill the store opens
// (finishing any interrupted restore), git fsck --full finds it clean, and
// restoring the last completed snapshot gives exactly its files.
func TestCrashSafety(t *testing.T) {
	root := t.TempDir()
	stateDir := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n"})
	rng := rand.New(rand.NewPCG(42, 42))
	last := ""
	kills, journals := 0, 0
	for round := 0; round < 50; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"=1", "CRASH_ROOT="+root, "CRASH_STATE="+stateDir,
			"CRASH_SEED="+strconv.Itoa(round))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || sc.Text() != "READY" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child did not start: %s", round, stderr.String())
		}
		lines := make(chan string, 1000)
		go func() {
			defer close(lines)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// The random point of the kill is the point of this test: half the
		// rounds kill soon after the child's first completed snapshot.
		if rng.IntN(2) == 0 {
			for l := range lines {
				if id, ok := strings.CutPrefix(l, "SNAP "); ok {
					last = id
					break
				}
			}
			time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		} else {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		for l := range lines {
			if id, ok := strings.CutPrefix(l, "SNAP "); ok {
				last = id
			}
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child exited by itself: %v\n%s", round, cmd.ProcessState, stderr.String())
		}
		kills++
		if _, err := os.Stat(filepath.Join(StoreDir(stateDir, root), journalName)); err == nil {
			journals++
		}

		s := openTestStore(t, root, Options{StateDir: stateDir})
		fsck(t, s.Dir())
		if _, err := s.List(context.Background(), ""); err != nil {
			t.Fatalf("round %d: list: %v", round, err)
		}
		if last == "" {
			s.Close()
			continue
		}
		if _, err := s.Restore(context.Background(), last, RestoreOptions{Overwrite: true}); err != nil {
			t.Fatalf("round %d: restore %s: %v", round, last, err)
		}
		if d := diffStates(extract(t, s.Dir(), last), visible(t, root)); len(d) > 0 {
			t.Fatalf("round %d: workspace after restoring %s differs from the snapshot: %v", round, last, d)
		}
		s.Close()
	}
	t.Logf("%d kills, %d of them during a restore's writes", kills, journals)
	if kills < 50 || last == "" {
		t.Fatalf("kills %d, last snapshot %q", kills, last)
	}
}
