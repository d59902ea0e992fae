//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Undo names what it cannot undo: the commit the run made in the user's
// repository (with the git revert to run), the file it left staged, and
// the big file a command made, left out of the snapshots
// (--max-file-size sets that limit).
func TestUndoNamesWhatItCannotUndo(t *testing.T) {
	ws := demoCopy(t)
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = ws, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	p := writePlan(t, `{"steps":[
		{"id":"w","tool":"write_file","args":{"path":"new.txt","content":"new\n"}},
		{"id":"c","tool":"git","args":{"action":"commit","message":"add new.txt","paths":["new.txt"]},"dependsOn":["w"]},
		{"id":"s","tool":"run_command","args":{"command":"echo staged > staged.txt && git add staged.txt && head -c 4096 /dev/zero > big.bin"},"dependsOn":["c"]}]}`)
	state := t.TempDir()
	// The limit from the config file's maxFileSize (the flag overrides it).
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "agentd"), 0o755)
	os.WriteFile(filepath.Join(cfg, "agentd", "config.json"), []byte(`{"maxFileSize":"1KiB"}`), 0o644)
	env = append(env, "XDG_CONFIG_HOME="+cfg)
	r := agentdIn(t, ws, agentdBin, env, "run", p, "--workspace", ws, "--state-dir", state, "--yes")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "not undone: the run made 1 commit in your repository") {
		t.Errorf("the run's summary does not name its commit:\n%s", r.stdout)
	}
	// The user edits a file the run made: undo changes nothing, naming
	// the conflict and the flags (exit 1); with --keep-conflicts it
	// undoes the rest and leaves new.txt as it is.
	os.WriteFile(filepath.Join(ws, "new.txt"), []byte("mine\n"), 0o644)
	c := agentdIn(t, ws, agentdBin, env, "undo", "--workspace", ws, "--state-dir", state)
	if c.code != exitFailed || !strings.Contains(c.stdout, "conflict: new.txt") || !strings.Contains(c.stdout, "--keep-conflicts") ||
		!strings.Contains(c.stdout, " --overwrite ") { // the flag's name, not "restore with overwrite"
		t.Fatalf("undo over new.txt: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	u := agentdIn(t, ws, agentdBin, env, "undo", "--keep-conflicts", "--workspace", ws, "--state-dir", state)
	if u.code != 0 || readFile(t, filepath.Join(ws, "new.txt")) != "mine\n" {
		t.Fatalf("undo --keep-conflicts: exit %d\n%s%s", u.code, u.stdout, u.stderr)
	}
	for _, want := range []string{
		"not undone: the run made 1 commit in your repository",
		"add new.txt",
		"to take them back too: git revert --no-edit ",
		"not undone: the run left staged.txt in your index (staged); to unstage: git restore --staged -- staged.txt",
		"big.bin (larger than the snapshot size limit (1024 bytes))",
		"raise maxFileSize in .agentd/config.json or ~/.config/agentd/config.json", // the session's words, every front end's
		"(for one run: agentd run --max-file-size SIZE)",                           // the terminal's own remedy
	} {
		if !strings.Contains(u.stdout, want) {
			t.Errorf("undo does not say %q:\n%s", want, u.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "big.bin")); err != nil {
		t.Errorf("big.bin: %v (undo cannot know it; it stays, named)", err)
	}
}
