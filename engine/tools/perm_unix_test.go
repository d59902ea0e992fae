//go:build unix

package tools

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentd/agentd/workspace"
)

func modeOf(t *testing.T, root, rel string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// applyAll applies a tool's change set as review "none" does.
func applyAll(t *testing.T, ws *workspace.Workspace, res *Result) {
	t.Helper()
	ar, err := ws.Apply(context.Background(), res.Changes, nil, nil)
	if err != nil || len(ar.Conflicts) > 0 {
		t.Fatalf("Apply: %v %v", err, ar.Conflicts)
	}
}

// Writing a file keeps its permission bits; a new file gets 0644 under the
// umask. Not parallel: the umask is the process's.
func TestWriteToolsKeepPermissions(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)

	ws, root := newWS(t, map[string]string{"secret.txt": "s\n", "run.sh": "echo\n", "group.txt": "g\n", "x.json": "{\"v\": 1}\n", "mv.txt": "m\n"})
	env := &Env{WS: ws}
	for rel, mode := range map[string]fs.FileMode{"secret.txt": 0o600, "run.sh": 0o755, "group.txt": 0o640, "x.json": 0o600, "mv.txt": 0o700} {
		if err := os.Chmod(filepath.Join(root, rel), mode); err != nil {
			t.Fatal(err)
		}
	}
	applyAll(t, ws, mustCall(t, env, "write_file", WriteFileArgs{Path: "secret.txt", Content: "new\n"}))
	applyAll(t, ws, mustCall(t, env, "edit_file", EditFileArgs{Path: "run.sh", Edits: []Edit{{OldText: "echo", NewText: "echo hi"}}}))
	applyAll(t, ws, mustCall(t, env, "apply_patch", ApplyPatchArgs{Patch: "--- a/group.txt\n+++ b/group.txt\n@@ -1 +1 @@\n-g\n+G\n"}))
	applyAll(t, ws, mustCall(t, env, "json_patch", JSONPatchArgs{Path: "x.json", Ops: []JSONPatchOp{{Op: "replace", Path: "/v", Value: mustJSON(t, 2)}}}))
	// A move whose content also changes is written anew at the destination.
	applyAll(t, ws, mustCall(t, env, "apply_patch", ApplyPatchArgs{Patch: "--- a/mv.txt\n+++ b/moved.txt\n@@ -1 +1 @@\n-m\n+M\n"}))
	for rel, want := range map[string]fs.FileMode{"secret.txt": 0o600, "run.sh": 0o755, "group.txt": 0o640, "x.json": 0o600, "moved.txt": 0o700} {
		if got := modeOf(t, root, rel).Perm(); got != want {
			t.Errorf("%s: mode %v after the write; want %v kept", rel, got, want)
		}
	}
	if got := readDisk(t, root, "run.sh"); got != "echo hi\n" {
		t.Errorf("run.sh = %q", got)
	}

	for _, c := range []struct {
		umask int
		want  fs.FileMode
	}{{0o022, 0o644}, {0o077, 0o600}, {0o027, 0o640}, {0o002, 0o644}, {0o277, 0o400}} {
		syscall.Umask(c.umask)
		name := "new-" + c.want.String() + ".txt"
		applyAll(t, ws, mustCall(t, env, "write_file", WriteFileArgs{Path: "sub/" + name, Content: "n\n"}))
		if got := modeOf(t, root, "sub/"+name).Perm(); got != c.want {
			t.Errorf("new file under umask %03o: mode %v; want %v", c.umask, got, c.want)
		}
		if err := ws.WriteFile(context.Background(), "direct-"+name, []byte("n\n"), 0); err != nil {
			t.Fatal(err)
		}
		if got := modeOf(t, root, "direct-"+name).Perm(); got != c.want {
			t.Errorf("Workspace.WriteFile new file under umask %03o: mode %v; want %v", c.umask, got, c.want)
		}
	}
	syscall.Umask(0o022)

	// Undoing a delete brings the file back with its own mode, exactly.
	if err := os.WriteFile(filepath.Join(root, "shared.txt"), []byte("sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "shared.txt"), 0o666); err != nil {
		t.Fatal(err)
	}
	res := mustCall(t, env, "delete_file", DeleteFileArgs{Path: "shared.txt"})
	applyAll(t, ws, res)
	if _, err := ws.Revert(context.Background(), res.Changes.Files[0], nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := modeOf(t, root, "shared.txt").Perm(); got != 0o666 {
		t.Errorf("undone delete: mode %v; want 0666 back", got)
	}
}
