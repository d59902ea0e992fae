package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestJSONPatchCheckArgsPointers(t *testing.T) {
	tool, _ := Builtin().Get("json_patch")
	c, ok := tool.(ArgsChecker)
	if !ok {
		t.Fatal("json_patch does not check its args (ArgsChecker)")
	}
	for _, tc := range []struct {
		op        string
		wantField string // "" = no problem
		wantText  string
	}{
		{`{"op":"replace","path":"/version","value":1}`, "", ""},
		{`{"op":"replace","path":"","value":{}}`, "", ""},
		{`{"op":"add","path":"/deps/-","value":1}`, "", ""},
		{`{"op":"replace","path":"/a~0b/c~1d","value":1}`, "", ""},
		{`{"op":"add","path":"$step","value":1}`, "", ""},     // a reference: not known yet
		{`{"op":"add","path":"${s.path}","value":1}`, "", ""}, // a reference: not known yet
		{`{"op":"replace","path":"version","value":1}`, "ops[0].path", `write "/version"`},
		{`{"op":"remove","path":"/a~b"}`, "ops[0].path", `"/a~0b"`},
		{`{"op":"remove","path":"/a~"}`, "ops[0].path", `~0`},
		{`{"op":"move","from":"x/y","path":"/z"}`, "ops[0].from", `write "/x/y"`},
	} {
		args := `{"path":"c.json","ops":[` + tc.op + `]}`
		probs := c.CheckArgs(json.RawMessage(args))
		if tc.wantField == "" {
			if len(probs) != 0 {
				t.Errorf("%s: unexpected problems %+v", tc.op, probs)
			}
			continue
		}
		if len(probs) != 1 || probs[0].Field != tc.wantField || !strings.Contains(probs[0].Message, tc.wantText) ||
			!strings.Contains(probs[0].Message, "JSON Pointer") {
			t.Errorf("%s: problems %+v, want one on %s saying %s", tc.op, probs, tc.wantField, tc.wantText)
		}
	}
}

// TestJSONPatchRunRefusesBadPointer: called without plan validation (an
// agent's call), a bad pointer is an invalid-args error that names it,
// and the file is not touched.
func TestJSONPatchRunRefusesBadPointer(t *testing.T) {
	ws, root := newWS(t, map[string]string{"c.json": "{\"version\": \"1\"}\n"})
	_, err := call(t, &Env{WS: ws}, "json_patch", map[string]any{"path": "c.json", "ops": []map[string]any{{"op": "replace", "path": "version", "value": "2"}}})
	e := wantCode(t, err, CodeInvalidArgs)
	if !strings.Contains(e.Message, "ops[0].path") || !strings.Contains(e.Message, `"/version"`) {
		t.Errorf("message %q", e.Message)
	}
	if got := readDisk(t, root, "c.json"); got != "{\"version\": \"1\"}\n" {
		t.Errorf("c.json changed: %q", got)
	}
}

// TestToolErrorsSpeakToPersonAndModel: the NOT_FOUND and IS_DIR errors
// say what is wrong to a person, and keep "use list_dir" for the model.
func TestToolErrorsSpeakToPersonAndModel(t *testing.T) {
	ws, _ := newWS(t, map[string]string{"d/f.txt": "x\n"})
	env := &Env{WS: ws}
	for _, tc := range []struct {
		tool string
		args map[string]any
		hint string
	}{
		{"read_file", map[string]any{"path": "nope.txt"}, "list_dir"},
		{"edit_file", map[string]any{"path": "nope.txt", "edits": []map[string]any{{"oldText": "a", "newText": "b"}}}, "list_dir"},
		{"read_file", map[string]any{"path": "d"}, "list_dir"},
		{"list_dir", map[string]any{"path": "d/f.txt"}, "read_file"},
	} {
		_, err := call(t, env, tc.tool, tc.args)
		var te *Error
		if err == nil || !errors.As(err, &te) {
			t.Fatalf("%s %v: err %v", tc.tool, tc.args, err)
		}
		for _, tool := range []string{"list_dir", "search_files", "read_file", "write_file", "edit_file"} {
			if tool != tc.tool && strings.Contains(te.Message, tool) {
				t.Errorf("%s: the person's message names the tool %s: %q", tc.tool, tool, te.Message)
			}
		}
		if mt := ModelText(err); !strings.HasPrefix(mt, te.Message) || !strings.Contains(mt, tc.hint) {
			t.Errorf("%s: the model's text %q lacks the hint %q", tc.tool, mt, tc.hint)
		}
	}
}
