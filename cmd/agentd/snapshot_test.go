package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// snapCLI runs `agentd snapshot ARGS --workspace ws --state-dir state`.
func snapCLI(t *testing.T, ws, state string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(append([]string{"snapshot"}, args...), "--workspace", ws, "--state-dir", state)
	code := runCLI(context.Background(), args, nil, &out, &errb)
	return out.String(), errb.String(), code
}

func TestSnapshotCLI(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	write := func(p, c string) {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "one\ntwo\nthree\n")
	write("dir/b.txt", "b\n")

	out, errs, code := snapCLI(t, ws, state, "create", "--label", "first", "--json")
	var snap struct {
		ID    string `json:"id"`
		Files int    `json:"files"`
		Label string `json:"label"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &snap) != nil || snap.Files != 2 || snap.Label != "first" {
		t.Fatalf("create: %d %q %q", code, out, errs)
	}

	out, _, code = snapCLI(t, ws, state, "show", snap.ID[:10], "--files")
	if code != exitOK || out != "a.txt\ndir/b.txt\n" {
		t.Fatalf("show --files: %d %q", code, out)
	}
	out, _, code = snapCLI(t, ws, state, "list")
	if code != exitOK || !strings.Contains(out, snap.ID[:12]) || !strings.Contains(out, "first") {
		t.Fatalf("list: %d %q", code, out)
	}

	write("a.txt", "one\nTWO\nthree\n")
	write("new.txt", "new\n")
	os.Remove(filepath.Join(ws, "dir/b.txt"))
	out, _, code = snapCLI(t, ws, state, "diff", snap.ID)
	for _, want := range []string{"diff --git a/a.txt b/a.txt", "-two", "+TWO", "+new", "-b"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("diff lacks %q: %d\n%s", want, code, out)
		}
	}

	// --binary: a patch git applies to a copy of the snapshot, binary
	// files included, with no objects at hand.
	os.WriteFile(filepath.Join(ws, "img.bin"), []byte("\x00\x01binary\x02"), 0o644)
	out, _, code = snapCLI(t, ws, state, "diff", snap.ID)
	if code != exitOK || !strings.Contains(out, "Binary files /dev/null and b/img.bin differ") || strings.Contains(out, "GIT binary patch") {
		t.Fatalf("diff of a binary file without --binary: %d\n%s", code, out)
	}
	patch, _, code := snapCLI(t, ws, state, "diff", snap.ID, "--binary")
	if code != exitOK || !strings.Contains(patch, "GIT binary patch") {
		t.Fatalf("diff --binary: %d\n%s", code, patch)
	}
	copyDir := t.TempDir()
	extract := exec.Command("sh", "-c", `git --git-dir="$1" archive "$2" | tar -x -C "$3"`, "sh", gitops.StoreDir(state, ws), snap.ID, copyDir)
	if b, err := extract.CombinedOutput(); err != nil {
		t.Fatalf("extract the snapshot: %v\n%s", err, b)
	}
	patchFile := filepath.Join(t.TempDir(), "p.patch")
	os.WriteFile(patchFile, []byte(patch), 0o644)
	apply := exec.Command("git", "apply", patchFile)
	apply.Dir = copyDir
	if b, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, b, patch)
	}
	for _, name := range []string{"a.txt", "new.txt", "img.bin"} {
		want, _ := os.ReadFile(filepath.Join(ws, name))
		if got, err := os.ReadFile(filepath.Join(copyDir, name)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after git apply: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(copyDir, "dir/b.txt")); !os.IsNotExist(err) {
		t.Fatalf("dir/b.txt should be deleted by the patch: %v", err)
	}
	os.Remove(filepath.Join(ws, "img.bin"))

	// Only a manual snapshot: nothing says what the agent left, so the
	// restore refuses rather than overwrite, and says how to go on.
	_, errs, code = snapCLI(t, ws, state, "restore", snap.ID, "--dry-run")
	if code != exitFailed || !strings.Contains(errs, snap.ID[:12]) || !strings.Contains(errs, "--overwrite") {
		t.Fatalf("restore without a protection base: %d %q", code, errs)
	}
	out, _, code = snapCLI(t, ws, state, "restore", snap.ID, "--dry-run", "--overwrite")
	if code != exitOK || out != "would be restored: a.txt\nwould be created: dir/b.txt\nwould be deleted: new.txt\n" {
		t.Fatalf("restore --dry-run: %d %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\nTWO\nthree\n" {
		t.Fatalf("dry run wrote a.txt")
	}
	out, _, code = snapCLI(t, ws, state, "restore", snap.ID, "--path", "a.txt", "--overwrite")
	if code != exitOK || !strings.HasPrefix(out, "restored: a.txt\nundo with: ") || !strings.Contains(out, " snapshot restore ") {
		t.Fatalf("restore --path: %d %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("a.txt not restored: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err != nil {
		t.Fatalf("restore --path touched other files: %v", err)
	}

	_, errs, code = snapCLI(t, ws, state, "show", "0123456789abcdef")
	if code != exitFailed || !strings.Contains(errs, `"0123456789abcdef"`) || !strings.Contains(errs, " snapshot list --workspace ") {
		t.Fatalf("unknown id: %d %q", code, errs)
	}
	_, errs, code = snapCLI(t, ws, state, "bogus")
	if code != exitUsage || !strings.Contains(errs, "unknown subcommand") {
		t.Fatalf("bogus: %d %q", code, errs)
	}
	out, _, code = snapCLI(t, ws, state, "gc", "--json")
	if code != exitOK || !strings.Contains(out, "objectsPruned") {
		t.Fatalf("gc: %d %q", code, out)
	}
}

// TestSnapshotCLIRestoreProtected: the terminal's restore keeps edits made
// after the agent's last snapshot, as the editor's does, and show says
// which step changed which file.
func TestSnapshotCLIRestoreProtected(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b\n"), 0o644)
	w, err := workspace.Open(ws, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := gitops.Open(context.Background(), w, gitops.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start, err := store.Snapshot(ctx, gitops.SnapshotOptions{RunID: "r1", StepID: "start"})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's step changes a.txt and creates c.txt.
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("agent\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "c.txt"), []byte("agent\n"), 0o644)
	step, err := store.Snapshot(ctx, gitops.SnapshotOptions{RunID: "r1", StepID: "edit"})
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	// The user then edits b.txt.
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("user\n"), 0o644)

	out, _, code := snapCLI(t, ws, state, "show", step.ID)
	for _, want := range []string{"kind:     run", "modified: a.txt by step edit", "added:    c.txt by step edit"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("show lacks %q: %d\n%s", want, code, out)
		}
	}
	out, _, code = snapCLI(t, ws, state, "show", step.ID, "--json")
	var shown gitops.Snapshot
	if code != exitOK || json.Unmarshal([]byte(out), &shown) != nil ||
		len(shown.Changes) != 2 || shown.Changes[0] != (gitops.FileChange{Path: "a.txt", Kind: gitops.ChangeModified}) {
		t.Fatalf("show --json: %d %s", code, out)
	}

	out, _, code = snapCLI(t, ws, state, "restore", start.ID)
	if code != exitPartial || !strings.Contains(out, "conflict: b.txt") || !strings.Contains(out, "restored: a.txt") || !strings.Contains(out, "deleted: c.txt") {
		t.Fatalf("protected restore: %d %q", code, out)
	}
	for p, want := range map[string]string{"a.txt": "a\n", "b.txt": "user\n"} {
		if b, _ := os.ReadFile(filepath.Join(ws, p)); string(b) != want {
			t.Fatalf("%s = %q, want %q", p, b, want)
		}
	}
	// --overwrite restores the user's file too.
	out, _, code = snapCLI(t, ws, state, "restore", start.ID, "--overwrite")
	if code != exitOK || !strings.Contains(out, "restored: b.txt") {
		t.Fatalf("restore --overwrite: %d %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "b.txt")); string(b) != "b\n" {
		t.Fatalf("b.txt = %q after --overwrite", b)
	}
}

// TestSnapshotCLIDoctorAndSkipped: create reports what it left out, and
// doctor says the store is in order.
func TestSnapshotCLIDoctorAndSkipped(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	if err := exec.Command("mkfifo", filepath.Join(ws, "pipe")).Run(); err != nil {
		t.Fatal(err)
	}
	out, _, code := snapCLI(t, ws, state, "create")
	if code != exitOK || !strings.Contains(out, "skipped: pipe") {
		t.Fatalf("create: %d %q", code, out)
	}
	out, _, code = snapCLI(t, ws, state, "create", "--json")
	var snap gitops.Snapshot
	if code != exitOK || json.Unmarshal([]byte(out), &snap) != nil || len(snap.Skipped) != 1 || snap.Skipped[0].Path != "pipe" {
		t.Fatalf("create --json: %d %s", code, out)
	}
	out, _, code = snapCLI(t, ws, state, "doctor")
	if code != exitOK || !strings.Contains(out, "in order") {
		t.Fatalf("doctor: %d %q", code, out)
	}
}
