package tools

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/workspace"
)

// snapshotDir records every file under dir, to prove tools never write.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			m[p] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func assertUnchanged(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := snapshotDir(t, dir)
	if len(after) != len(before) {
		t.Fatalf("the workspace changed on disk: %d entries before, %d after", len(before), len(after))
	}
	for p, c := range before {
		if after[p] != c {
			t.Fatalf("%s changed on disk", p)
		}
	}
}

func TestWriteFile(t *testing.T) {
	ws, root := newWS(t, map[string]string{"a.txt": "one\ntwo\n", "dir/x": "x"})
	before := snapshotDir(t, root)
	env := &Env{WS: ws, RunID: "r1", StepID: "s1"}

	res := mustCall(t, env, "write_file", WriteFileArgs{Path: "a.txt", Content: "one\n2\nthree\n"})
	fc := fileChange(t, res.Changes, "a.txt")
	if fc.Op != workspace.OpModify || string(fc.New) != "one\n2\nthree\n" || string(fc.Old) != "one\ntwo\n" {
		t.Errorf("modify change = %s %q -> %q", fc.Op, fc.Old, fc.New)
	}
	if res.Changes.RunID != "r1" || res.Changes.StepID != "s1" {
		t.Errorf("change set run/step = %q/%q, want r1/s1", res.Changes.RunID, res.Changes.StepID)
	}
	sum := output[ChangeSummary](t, res)
	if len(sum.Files) != 1 || sum.Added != 2 || sum.Removed != 1 || !strings.Contains(sum.Summary, "a.txt (+2 -1)") {
		t.Errorf("summary %+v, want a.txt +2 -1", sum)
	}

	res = mustCall(t, env, "write_file", WriteFileArgs{Path: "new/deep/b.txt", Content: "b\n"})
	if fc := fileChange(t, res.Changes, "new/deep/b.txt"); fc.Op != workspace.OpCreate || string(fc.New) != "b\n" {
		t.Errorf("create change = %s %q", fc.Op, fc.New)
	}
	res = mustCall(t, env, "write_file", WriteFileArgs{Path: "a.txt", Content: "one\ntwo\n"})
	if res.Changes != nil || len(output[ChangeSummary](t, res).Files) != 0 {
		t.Errorf("writing the same content proposed %+v", res.Changes)
	}
	_, err := call(t, env, "write_file", WriteFileArgs{Path: "dir", Content: "x"})
	wantCode(t, err, CodeIsDir)
	assertUnchanged(t, root, before)
}

func TestEditFile(t *testing.T) {
	src := "package p\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 1\n}\n"
	ws, root := newWS(t, map[string]string{"p.go": src, "crlf.txt": "a\r\nb\r\nc\r\n", "bin": "\x00\x01"})
	before := snapshotDir(t, root)
	env := &Env{WS: ws}
	tests := []struct {
		name  string
		path  string
		edits []Edit
		want  string
		code  string
		msg   []string
	}{
		{"one edit", "p.go", []Edit{{"func A() int {\n\treturn 1", "func A() int {\n\treturn 2"}},
			strings.Replace(src, "return 1", "return 2", 1), "", nil},
		{"edits in order", "p.go", []Edit{{"func A", "func AA"}, {"func AA() int {\n\treturn 1", "func AA() int {\n\treturn 3"}},
			strings.Replace(strings.Replace(src, "func A", "func AA", 1), "return 1", "return 3", 1), "", nil},
		{"delete text", "p.go", []Edit{{"\nfunc B() int {\n\treturn 1\n}\n", ""}},
			"package p\n\nfunc A() int {\n\treturn 1\n}\n", "", nil},
		{"crlf file with lf edit", "crlf.txt", []Edit{{"a\nb\n", "a\nB\n"}}, "a\r\nB\r\nc\r\n", "", nil},
		{"ambiguous", "p.go", []Edit{{"\treturn 1\n", "\treturn 2\n"}}, "", CodeAmbiguousMatch,
			[]string{"edits[0]", "2 times", "p.go", "lines 4, 8"}},
		{"missing, whitespace differs", "p.go", []Edit{{"func B() int {\n    return 1", "x"}}, "", CodeNoMatch,
			[]string{"edits[0]", "p.go", "line 7", "func B() int {"}},
		{"missing, near line", "p.go", []Edit{{"func C() int {", "x"}}, "", CodeNoMatch,
			[]string{"closest line is line 3", "func A() int {"}},
		{"second edit missing", "p.go", []Edit{{"func A", "func Z"}, {"func A", "func Y"}}, "", CodeNoMatch,
			[]string{"edits[1]"}},
		{"empty oldText", "p.go", []Edit{{"", "x"}}, "", CodeInvalidArgs, []string{"write_file"}},
		{"missing file", "nope.go", []Edit{{"a", "b"}}, "", CodeNotFound, []string{"nope.go"}},
		{"binary", "bin", []Edit{{"\x00", "b"}}, "", CodeBinary, []string{"bin"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(t, env, "edit_file", EditFileArgs{Path: tc.path, Edits: tc.edits})
			if tc.code != "" {
				te := wantCode(t, err, tc.code)
				for _, m := range tc.msg {
					if !strings.Contains(te.Message, m) {
						t.Errorf("error %q does not contain %q", te.Message, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(fileChange(t, res.Changes, tc.path).New); got != tc.want {
				t.Errorf("new content\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
	assertUnchanged(t, root, before)
}

func TestEditFileSeesOverlay(t *testing.T) {
	ws, _ := newWS(t, map[string]string{"a.txt": "disk\n"})
	if err := ws.OpenOverlay("a.txt", []byte("buffer\n"), 1); err != nil {
		t.Fatal(err)
	}
	res := mustCall(t, &Env{WS: ws}, "edit_file", EditFileArgs{Path: "a.txt", Edits: []Edit{{"buffer", "edited"}}})
	if got := string(fileChange(t, res.Changes, "a.txt").New); got != "edited\n" {
		t.Errorf("edit of the editor buffer = %q", got)
	}
}

func TestMoveAndDeleteFile(t *testing.T) {
	ws, root := newWS(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "dir/c": "c"})
	before := snapshotDir(t, root)
	env := &Env{WS: ws}

	res := mustCall(t, env, "move_file", MoveFileArgs{From: "a.txt", To: "sub/a2.txt"})
	fc := fileChange(t, res.Changes, "sub/a2.txt")
	if fc.Op != workspace.OpMove || fc.OldPath != "a.txt" {
		t.Errorf("move change = %+v", fc)
	}
	_, err := call(t, env, "move_file", MoveFileArgs{From: "a.txt", To: "b.txt"})
	wantCode(t, err, CodeExists)
	_, err = call(t, env, "move_file", MoveFileArgs{From: "nope", To: "x"})
	wantCode(t, err, CodeNotFound)
	_, err = call(t, env, "move_file", MoveFileArgs{From: "a.txt", To: "dir"})
	wantCode(t, err, CodeIsDir)

	res = mustCall(t, env, "delete_file", DeleteFileArgs{Path: "b.txt"})
	if fc := fileChange(t, res.Changes, "b.txt"); fc.Op != workspace.OpDelete {
		t.Errorf("delete change = %+v", fc)
	}
	if sum := output[ChangeSummary](t, res); sum.Removed != 1 {
		t.Errorf("delete summary %+v, want 1 line removed", sum)
	}
	_, err = call(t, env, "delete_file", DeleteFileArgs{Path: "nope"})
	wantCode(t, err, CodeNotFound)
	_, err = call(t, env, "delete_file", DeleteFileArgs{Path: "dir"})
	wantCode(t, err, CodeIsDir)
	assertUnchanged(t, root, before)
}

func TestApplyPatch(t *testing.T) {
	ws, root := newWS(t, map[string]string{
		"a.txt":   "1\n2\n3\n4\n5\n",
		"old.txt": "gone\n",
		"mv.txt":  "m1\nm2\n",
	})
	before := snapshotDir(t, root)
	env := &Env{WS: ws}
	patch := `diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -2,3 +2,3 @@
 2
-3
+three
 4
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/mv.txt b/moved/mv.txt
similarity index 50%
rename from mv.txt
rename to moved/mv.txt
--- a/mv.txt
+++ b/moved/mv.txt
@@ -1,2 +1,2 @@
 m1
-m2
+M2
`
	res := mustCall(t, env, "apply_patch", ApplyPatchArgs{Patch: patch})
	if got := string(fileChange(t, res.Changes, "a.txt").New); got != "1\n2\nthree\n4\n5\n" {
		t.Errorf("a.txt = %q", got)
	}
	if fc := fileChange(t, res.Changes, "new.txt"); fc.Op != workspace.OpCreate || string(fc.New) != "hello\nworld\n" {
		t.Errorf("new.txt = %s %q", fc.Op, fc.New)
	}
	if fc := fileChange(t, res.Changes, "old.txt"); fc.Op != workspace.OpDelete {
		t.Errorf("old.txt op = %s", fc.Op)
	}
	if fc := fileChange(t, res.Changes, "moved/mv.txt"); fc.Op != workspace.OpMove || fc.OldPath != "mv.txt" || string(fc.New) != "m1\nM2\n" {
		t.Errorf("moved/mv.txt = %s from %s %q", fc.Op, fc.OldPath, fc.New)
	}
	if sum := output[ChangeSummary](t, res); len(sum.Files) != 4 {
		t.Errorf("summary has %d files, want 4: %+v", len(sum.Files), sum)
	}

	bad := "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-x\n-y\n+z\n"
	_, err := call(t, env, "apply_patch", ApplyPatchArgs{Patch: bad})
	te := wantCode(t, err, CodePatchFailed)
	if !strings.Contains(te.Message, "a.txt") {
		t.Errorf("error %q does not name the file", te.Message)
	}
	exists := "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n"
	_, err = call(t, env, "apply_patch", ApplyPatchArgs{Patch: exists})
	wantCode(t, err, CodeExists)
	_, err = call(t, env, "apply_patch", ApplyPatchArgs{Patch: "this is not a diff"})
	if err == nil {
		t.Error("a text without a diff was accepted")
	}
	assertUnchanged(t, root, before)
}

func TestJSONPatch(t *testing.T) {
	const pkg = `{
    "name": "demo",
    "version": "1.0.0",
    "scripts": {
        "test": "jest",
        "build": "tsc"
    },
    "files": [
        "dist"
    ],
    "price": 1.50,
    "html": "<b>"
}
`
	ws, root := newWS(t, map[string]string{
		"package.json": pkg,
		"tabs.json":    "{\r\n\t\"b\": 1,\r\n\t\"a\": [1, 2]\r\n}",
		"compact.json": `{"z":1,"a":2}`,
		"bad.json":     "{nope",
	})
	before := snapshotDir(t, root)
	env := &Env{WS: ws}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }

	res := mustCall(t, env, "json_patch", JSONPatchArgs{Path: "package.json", Ops: []JSONPatchOp{
		{Op: "replace", Path: "/version", Value: raw(`"2.0.0"`)},
		{Op: "add", Path: "/scripts/lint", Value: raw(`{"cmd":"eslint","z":1,"a":2}`)},
		{Op: "add", Path: "/files/-", Value: raw(`"README.md"`)},
	}})
	want := `{
    "name": "demo",
    "version": "2.0.0",
    "scripts": {
        "test": "jest",
        "build": "tsc",
        "lint": {
            "cmd": "eslint",
            "z": 1,
            "a": 2
        }
    },
    "files": [
        "dist",
        "README.md"
    ],
    "price": 1.50,
    "html": "<b>"
}
`
	if got := string(fileChange(t, res.Changes, "package.json").New); got != want {
		t.Errorf("package.json:\n%s\nwant (key order, indentation, numbers and final newline kept):\n%s", got, want)
	}

	res = mustCall(t, env, "json_patch", JSONPatchArgs{Path: "tabs.json", Ops: []JSONPatchOp{{Op: "remove", Path: "/a/0"}}})
	if got := string(fileChange(t, res.Changes, "tabs.json").New); got != "{\r\n\t\"b\": 1,\r\n\t\"a\": [2]\r\n}" {
		t.Errorf("tabs.json = %q", got)
	}
	res = mustCall(t, env, "json_patch", JSONPatchArgs{Path: "compact.json", Ops: []JSONPatchOp{{Op: "add", Path: "/m", Value: raw(`null`)}}})
	if got := string(fileChange(t, res.Changes, "compact.json").New); got != `{"z":1,"a":2,"m":null}` {
		t.Errorf("compact.json = %q", got)
	}
	res = mustCall(t, env, "json_patch", JSONPatchArgs{Path: "package.json", Ops: []JSONPatchOp{{Op: "test", Path: "/name", Value: raw(`"demo"`)}}})
	if res.Changes != nil {
		t.Errorf("a test-only patch proposed changes: %+v", res.Changes)
	}

	_, err := call(t, env, "json_patch", JSONPatchArgs{Path: "package.json", Ops: []JSONPatchOp{
		{Op: "replace", Path: "/version", Value: raw(`"3"`)},
		{Op: "replace", Path: "/nope/x", Value: raw(`1`)},
	}})
	te := wantCode(t, err, CodePatchFailed)
	if !strings.Contains(te.Message, "ops[1]") || !strings.Contains(te.Message, "/nope/x") {
		t.Errorf("error %q does not name the failed op", te.Message)
	}
	_, err = call(t, env, "json_patch", JSONPatchArgs{Path: "package.json", Ops: []JSONPatchOp{{Op: "test", Path: "/name", Value: raw(`"x"`)}}})
	wantCode(t, err, CodePatchFailed)
	_, err = call(t, env, "json_patch", JSONPatchArgs{Path: "bad.json", Ops: []JSONPatchOp{{Op: "remove", Path: "/a"}}})
	wantCode(t, err, CodeInvalidArgs)
	assertUnchanged(t, root, before)
}

// Formatting the compact form of a document in the layout read from it
// gives the document back: untouched parts keep their layout.
func TestJSONLayoutRoundTrip(t *testing.T) {
	docs := map[string]string{
		"standard":       "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": [\n      1,\n      2\n    ]\n  }\n}",
		"inline arrays":  "{\n    \"lib\": [\"es2020\", \"dom\"],\n    \"strict\": true,\n    \"paths\": {\"@/*\": [\"src/*\"]}\n}",
		"tight inline":   "{\n\t\"a\": [1,2,3],\n\t\"o\": {\"x\":1,\"y\":[]}\n}",
		"tricky strings": "{\n  \"s\": \"a, b: [c] {d} \\\" e\",\n  \"u\": \"\\u00e9\\n\",\n  \"n\": -1.50e+3,\n  \"e\": {},\n  \"z\": null\n}",
		"top array":      "[\n  {\"id\": 1},\n  {\n    \"id\": 2\n  }\n]",
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(doc)); err != nil {
				t.Fatal(err)
			}
			st := detectJSONStyle([]byte(doc))
			got := string(formatJSON(compact.Bytes(), readLayout([]byte(doc), st.indent)))
			if got != doc {
				t.Errorf("round trip\n%s\nwant\n%s", got, doc)
			}
		})
	}
}

func TestJSONPatchKeepsInlineContainers(t *testing.T) {
	const tsconfig = "{\n  \"compilerOptions\": {\n    \"target\": \"es2019\",\n    \"lib\": [\"es2019\", \"dom\"],\n    \"strict\": true\n  },\n  \"include\": [\"src\"]\n}\n"
	ws, _ := newWS(t, map[string]string{"tsconfig.json": tsconfig})
	res := mustCall(t, &Env{WS: ws}, "json_patch", JSONPatchArgs{Path: "tsconfig.json", Ops: []JSONPatchOp{
		{Op: "replace", Path: "/compilerOptions/target", Value: json.RawMessage(`"es2022"`)},
		{Op: "add", Path: "/include/-", Value: json.RawMessage(`"test"`)},
	}})
	want := "{\n  \"compilerOptions\": {\n    \"target\": \"es2022\",\n    \"lib\": [\"es2019\", \"dom\"],\n    \"strict\": true\n  },\n  \"include\": [\"src\", \"test\"]\n}\n"
	if got := string(fileChange(t, res.Changes, "tsconfig.json").New); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if sum := output[ChangeSummary](t, res); sum.Added != 2 || sum.Removed != 2 {
		t.Errorf("diff +%d -%d, want +2 -2 (only the two touched lines)", sum.Added, sum.Removed)
	}
}
