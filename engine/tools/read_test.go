package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/workspace"
	"go.lsp.dev/uri"
)

func TestReadFile(t *testing.T) {
	ws, _ := newWS(t, map[string]string{
		"a.txt":       "one\ntwo\nthree\n",
		"noeol.txt":   "x\ny",
		"empty.txt":   "",
		"bin.dat":     "abc\x00def",
		"dir/sub.txt": "s\n",
	})
	env := &Env{WS: ws}
	tests := []struct {
		name string
		args ReadFileArgs
		want ReadFileOutput
		code string
	}{
		{"whole", ReadFileArgs{Path: "a.txt"}, ReadFileOutput{Path: "a.txt", Content: "one\ntwo\nthree\n", StartLine: 1, EndLine: 3, TotalLines: 3}, ""},
		{"range", ReadFileArgs{Path: "a.txt", StartLine: 2, EndLine: 2}, ReadFileOutput{Path: "a.txt", Content: "two\n", StartLine: 2, EndLine: 2, TotalLines: 3}, ""},
		{"from", ReadFileArgs{Path: "a.txt", StartLine: 2}, ReadFileOutput{Path: "a.txt", Content: "two\nthree\n", StartLine: 2, EndLine: 3, TotalLines: 3}, ""},
		{"end clamped", ReadFileArgs{Path: "a.txt", EndLine: 99}, ReadFileOutput{Path: "a.txt", Content: "one\ntwo\nthree\n", StartLine: 1, EndLine: 3, TotalLines: 3}, ""},
		{"no final newline", ReadFileArgs{Path: "noeol.txt", StartLine: 2}, ReadFileOutput{Path: "noeol.txt", Content: "y", StartLine: 2, EndLine: 2, TotalLines: 2}, ""},
		{"empty", ReadFileArgs{Path: "empty.txt"}, ReadFileOutput{Path: "empty.txt"}, ""},
		{"slash path cleaned", ReadFileArgs{Path: "./dir//sub.txt"}, ReadFileOutput{Path: "dir/sub.txt", Content: "s\n", StartLine: 1, EndLine: 1, TotalLines: 1}, ""},
		{"start past end", ReadFileArgs{Path: "a.txt", StartLine: 4}, ReadFileOutput{}, CodeInvalidArgs},
		{"end before start", ReadFileArgs{Path: "a.txt", StartLine: 3, EndLine: 2}, ReadFileOutput{}, CodeInvalidArgs},
		{"binary", ReadFileArgs{Path: "bin.dat"}, ReadFileOutput{}, CodeBinary},
		{"missing", ReadFileArgs{Path: "nope.txt"}, ReadFileOutput{}, CodeNotFound},
		{"directory", ReadFileArgs{Path: "dir"}, ReadFileOutput{}, CodeIsDir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(t, env, "read_file", tc.args)
			if tc.code != "" {
				te := wantCode(t, err, tc.code)
				if !strings.Contains(te.Message, tc.args.Path) && tc.code != CodeInvalidArgs {
					t.Errorf("error %q does not name the file", te.Message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := output[ReadFileOutput](t, res); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadFileOverlay(t *testing.T) {
	ws, _ := newWS(t, map[string]string{"a.txt": "disk\n"})
	if err := ws.OpenOverlay("a.txt", []byte("unsaved\n"), 3); err != nil {
		t.Fatal(err)
	}
	res := mustCall(t, &Env{WS: ws}, "read_file", ReadFileArgs{Path: "a.txt"})
	if got := output[ReadFileOutput](t, res).Content; got != "unsaved\n" {
		t.Errorf("read_file returned %q, want the editor buffer", got)
	}
}

func TestReadFileBounded(t *testing.T) {
	old := MaxReadBytes
	MaxReadBytes = 100
	t.Cleanup(func() { MaxReadBytes = old })
	line := strings.Repeat("x", 29) + "\n" // 30 bytes
	ws, _ := newWS(t, map[string]string{"big.txt": strings.Repeat(line, 10), "long.txt": strings.Repeat("y", 500)})
	res := mustCall(t, &Env{WS: ws}, "read_file", ReadFileArgs{Path: "big.txt"})
	got := output[ReadFileOutput](t, res)
	if got.Content != strings.Repeat(line, 3) || got.EndLine != 3 || got.TotalLines != 10 {
		t.Errorf("got %d bytes, lines %d-%d of %d; want 3 whole lines", len(got.Content), got.StartLine, got.EndLine, got.TotalLines)
	}
	res = mustCall(t, &Env{WS: ws}, "read_file", ReadFileArgs{Path: "big.txt", StartLine: 4})
	if got := output[ReadFileOutput](t, res); got.StartLine != 4 || got.EndLine != 6 {
		t.Errorf("second page lines %d-%d, want 4-6", got.StartLine, got.EndLine)
	}
	_, err := call(t, &Env{WS: ws}, "read_file", ReadFileArgs{Path: "long.txt"})
	wantCode(t, err, CodeTooLarge)
}

// Every tool that takes a path refuses one outside the workspace with a
// *workspace.PathError wrapping ErrOutsideRoot, and changes nothing.
// outsideCase is a tool call that names a path outside the workspace.
type outsideCase struct {
	tool string
	args any
}

// TestOutsideWorkspace: every tool refuses a path that leaves the
// workspace lexically, as an absolute path or as a file URI.
func TestOutsideWorkspace(t *testing.T) {
	ws, _ := newWS(t, map[string]string{"in.txt": "x\n", "data.json": "{}\n"})
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "s\n", "d/x.txt": "x\n"})
	abs := filepath.Join(outside, "secret.txt")
	refusesOutside(t, &Env{WS: ws}, outside, []outsideCase{
		{"read_file", ReadFileArgs{Path: "../" + filepath.Base(outside) + "/secret.txt"}},
		{"read_file", ReadFileArgs{Path: abs}},
		{"read_file", ReadFileArgs{Path: string(uri.File(abs))}},
		{"list_dir", ListDirArgs{Path: ".."}},
		{"search_files", SearchFilesArgs{Glob: "../**/*.txt"}},
		{"search_code", SearchCodeArgs{Pattern: "s", Glob: "../*/*.txt"}},
		{"write_file", WriteFileArgs{Path: "../evil.txt", Content: "x"}},
		{"edit_file", EditFileArgs{Path: abs, Edits: []Edit{{OldText: "s", NewText: "t"}}}},
		{"move_file", MoveFileArgs{From: "in.txt", To: "../moved.txt"}},
		{"apply_patch", ApplyPatchArgs{Patch: "--- /dev/null\n+++ b/../evil.txt\n@@ -0,0 +1 @@\n+x\n"}},
		{"run_command", RunCommandArgs{Command: "true", Cwd: ".."}},
		{"git", GitArgs{Action: "status", Paths: []string{"../x"}}},
	})
}

// TestOutsideWorkspaceThroughLink: every tool refuses a path that leaves
// the workspace through a symlink in it.
func TestOutsideWorkspaceThroughLink(t *testing.T) {
	ws, root := newWS(t, map[string]string{"in.txt": "x\n", "data.json": "{}\n"})
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "s\n", "d/x.txt": "x\n"})
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	refusesOutside(t, &Env{WS: ws}, outside, []outsideCase{
		{"read_file", ReadFileArgs{Path: "link/secret.txt"}},
		{"list_dir", ListDirArgs{Path: "link"}},
		{"search_files", SearchFilesArgs{Glob: "link/**/*.txt"}},
		{"write_file", WriteFileArgs{Path: "link/evil.txt", Content: "x"}},
		{"json_patch", JSONPatchArgs{Path: "link/x.json", Ops: []JSONPatchOp{{Op: "add", Path: "/a", Value: []byte("1")}}}},
		{"move_file", MoveFileArgs{From: "link/secret.txt", To: "here.txt"}},
		{"delete_file", DeleteFileArgs{Path: "link/secret.txt"}},
		{"run_command", RunCommandArgs{Command: "true", Cwd: "link"}},
	})
}

func refusesOutside(t *testing.T, env *Env, outside string, cases []outsideCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := call(t, env, tc.tool, tc.args)
			var pe *workspace.PathError
			if !errors.As(err, &pe) || !errors.Is(err, workspace.ErrOutsideRoot) {
				t.Fatalf("%s(%+v) = %v, %v; want a *workspace.PathError wrapping ErrOutsideRoot", tc.tool, tc.args, res, err)
			}
			if res != nil && res.Changes != nil {
				t.Errorf("a change set was proposed: %+v", res.Changes)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "..", "evil.txt")); err == nil {
		t.Error("a file was written outside the workspace")
	}
}
