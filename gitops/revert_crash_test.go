//go:build unix

package gitops

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/fileset"
)

// revertChildEnv makes the test binary a child that reverts run/r and
// stops (for its parent to kill) in the middle of the revert's writes.
const revertChildEnv = "AGENTD_GITOPS_REVERT_CHILD"

func revertChild() int {
	root, stateDir := os.Getenv("CRASH_ROOT"), os.Getenv("CRASH_STATE")
	set, err := fileset.Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := openStore(context.Background(), root, set, Options{StateDir: stateDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var n atomic.Int32
	var once sync.Once
	testHookApply = func(restoreOp) error {
		if n.Add(1) > 50 {
			once.Do(func() { fmt.Println("MID") })
			select {} // killed here, mid-write
		}
		return nil
	}
	if _, err := s.Revert(context.Background(), []string{"run/r"}, RevertOptions{RecordAs: "undo/u", OnConflict: ConflictChoice(os.Getenv("CRASH_CHOICE"))}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("DONE")
	return 0
}

// TestRevertCrashKeepsUserEdits kills an undo in the middle of its
// writes; the user then edits a file the undo had written and one it had
// not yet; the next open completes the undo everywhere else, keeps both
// edits and names them, and leaves no temporary file.
func TestRevertCrashKeepsUserEdits(t *testing.T) {
	root := t.TempDir()
	stateDir := t.TempDir()
	const n = 200
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%03d.txt", i)] = fmt.Sprintf("original %d\n", i)
	}
	writeTree(t, root, files)
	s := openTestStore(t, root, Options{StateDir: stateDir})
	var edits []Edit
	for p, c := range files {
		edits = append(edits, Edit{Path: p, Before: text(c), After: text("agent\n" + c)})
	}
	if err := s.RecordEdits(context.Background(), "run/r", "", edits); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		putState(t, root, p, text("agent\n"+c))
	}
	s.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), revertChildEnv+"=1", "CRASH_ROOT="+root, "CRASH_STATE="+stateDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "MID" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child did not stop mid-write: %q %s", sc.Text(), stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// The interrupted undo's journal, and a temporary file as a write
	// torn by the kill leaves it.
	jdata, err := os.ReadFile(filepath.Join(StoreDir(stateDir, root), journalName))
	if err != nil {
		t.Fatalf("no journal after the kill: %v", err)
	}
	var j restoreJournal
	if err := json.Unmarshal(jdata, &j); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, tmpName(j.Nonce, "f199.txt")), []byte("torn"), 0o644)
	var written, pending []string
	for p, c := range files {
		if readText(t, root, p) == c {
			written = append(written, p)
		} else {
			pending = append(pending, p)
		}
	}
	slices.Sort(written)
	slices.Sort(pending)
	if len(written) == 0 || len(pending) == 0 {
		t.Fatalf("the kill was not mid-write: %d written, %d pending", len(written), len(pending))
	}
	a, b := written[0], pending[0]
	putState(t, root, a, text("user's edit of a written file\n"))
	putState(t, root, b, text("user's edit of a pending file\n"))

	s2 := openTestStore(t, root, Options{StateDir: stateDir})
	rep, err := s2.Recovered(context.Background())
	if err != nil || rep == nil {
		t.Fatalf("recovery report: %v %v", rep, err)
	}
	var kept []string
	for _, k := range rep.Kept {
		kept = append(kept, k.Path)
	}
	slices.Sort(kept)
	if rep.Outcome != RecoveryFinished || !slices.Equal(kept, []string{a, b}) || rep.UndoSnapshot == "" || !strings.Contains(rep.String(), a) {
		t.Fatalf("report %s\n%+v", rep, rep)
	}
	if again, _ := s2.Recovered(context.Background()); again != nil {
		t.Fatal("the report is said twice")
	}
	if readText(t, root, a) != "user's edit of a written file\n" || readText(t, root, b) != "user's edit of a pending file\n" {
		t.Fatal("the recovery overwrote the user's edits")
	}
	for p, c := range files {
		if p != a && p != b && readText(t, root, p) != c {
			t.Fatalf("%s not reverted: %q", p, readText(t, root, p))
		}
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".agentd-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(s2.Dir(), journalName)); !os.IsNotExist(err) {
		t.Fatalf("journal stays: %v", err)
	}
	// The way back works: the safety snapshot has the agent's version.
	if got := string(mustBlob(t, s2, rep.UndoSnapshot, b)); got != "agent\n"+files[b] {
		t.Fatalf("safety snapshot holds %q", got)
	}
}

// TestRevertCrashNamesItsKeptConflicts kills an undo that keeps a
// conflict (KeepConflicts) in the middle of its writes: the next open
// completes it and names the conflict it kept, and RevertFinished says
// so too. Dropped, the undo's run was recorded undone with the agent's
// change still in the conflicting file and nothing said of it.
func TestRevertCrashNamesItsKeptConflicts(t *testing.T) {
	root, stateDir := t.TempDir(), t.TempDir()
	files := map[string]string{"conflict.txt": "first\n"}
	for i := range 200 {
		files[fmt.Sprintf("f%03d.txt", i)] = fmt.Sprintf("original %d\n", i)
	}
	writeTree(t, root, files)
	s := openTestStore(t, root, Options{StateDir: stateDir})
	for p, c := range files {
		agentWrite(t, s, "run/r", p, text("agent\n"+c))
	}
	// The user changes the agent's line of conflict.txt.
	putState(t, root, "conflict.txt", text("mine\nfirst\n"))
	s.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), revertChildEnv+"=1", "CRASH_ROOT="+root, "CRASH_STATE="+stateDir, "CRASH_CHOICE="+string(KeepConflicts))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "MID" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child did not stop mid-write: %q %s", sc.Text(), stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	s2 := openTestStore(t, root, Options{StateDir: stateDir})
	rep, err := s2.Recovered(context.Background())
	if err != nil || rep == nil || rep.Outcome != RecoveryFinished {
		t.Fatalf("recovery report: %+v %v", rep, err)
	}
	t.Logf("recovery said:\n%s", rep)
	var kept []string
	for _, k := range rep.Kept {
		kept = append(kept, k.Path)
	}
	if !slices.Equal(kept, []string{"conflict.txt"}) || !strings.Contains(rep.String(), "conflict.txt: a conflict with the undo") {
		t.Errorf("the recovery keeps %v; want the undo's conflict conflict.txt named", kept)
	}
	if got := readText(t, root, "conflict.txt"); got != "mine\nfirst\n" {
		t.Errorf("conflict.txt = %q, want the user's", got)
	}
	fin, err := s2.RevertFinished(context.Background(), "undo/u")
	if err != nil || fin == nil || len(fin.Kept) != 1 || fin.Kept[0].Path != "conflict.txt" {
		t.Errorf("RevertFinished = %+v, %v; want finished, conflict.txt kept", fin, err)
	}
}
