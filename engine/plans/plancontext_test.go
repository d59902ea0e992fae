package plans

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestEditWarnings(t *testing.T) {
	ws := openWSWith(t, map[string]string{"a.go": "package a\n\nfunc A() int { return 1 }\n"})
	ctx := context.Background()
	ok := mkPlan(t, `[{"id":"e","tool":"edit_file","args":{"path":"a.go","edits":[{"oldText":"return 1","newText":"return 2"}]}}]`)
	if w := EditWarnings(ctx, ok, ws); len(w) != 0 {
		t.Errorf("warnings for a matching oldText: %v", w)
	}
	bad := mkPlan(t, `[{"id":"e","tool":"edit_file","args":{"path":"a.go","edits":[{"oldText":"return 1","newText":"x"},{"oldText":"return  1","newText":"y"}]}}]`)
	w := EditWarnings(ctx, bad, ws)
	if len(w) != 1 || w[0].StepID != "e" || w[0].Field != "args.edits[1].oldText" || !strings.Contains(w[0].Message, "does not occur in a.go") {
		t.Errorf("warnings %v", w)
	}
	// The editor's unsaved buffer is what counts.
	if err := ws.OpenOverlay("a.go", []byte("package a\n\nfunc A() int { return  1 }\n"), 1); err != nil {
		t.Fatal(err)
	}
	if w := EditWarnings(ctx, bad, ws); len(w) != 1 || w[0].Field != "args.edits[0].oldText" {
		t.Errorf("with the buffer: %v", w)
	}
	ws.CloseOverlay("a.go")
	// A file an earlier step writes is not checked; references are not checked.
	later := mkPlan(t, `[{"id":"w","tool":"write_file","args":{"path":"a.go","content":"x"}},
	  {"id":"e","tool":"edit_file","args":{"path":"a.go","edits":[{"oldText":"nope","newText":"y"}]},"dependsOn":["w"]},
	  {"id":"r","tool":"read_file","args":{"path":"a.go"}},
	  {"id":"f","tool":"edit_file","args":{"path":"a.go","edits":[{"oldText":"${r.content}","newText":"y"}]},"dependsOn":["r"]}]`)
	if w := EditWarnings(ctx, later, ws); len(w) != 0 {
		t.Errorf("warnings %v", w)
	}
	missing := mkPlan(t, `[{"id":"e","tool":"edit_file","args":{"path":"b.go","edits":[{"oldText":"x","newText":"y"}]}}]`)
	if w := EditWarnings(ctx, missing, ws); len(w) != 1 || w[0].Field != "args.path" {
		t.Errorf("missing file: %v", w)
	}
}

func TestContextText(t *testing.T) {
	p := &Plan{Context: []ContextItem{
		{Tool: "read_file", Args: json.RawMessage(`{"path":"a.go","startLine":3,"endLine":9}`), Why: "the function"},
		{Tool: "search_code", Args: json.RawMessage(`{"pattern":"Foo\\("}`)},
	}}
	got := ContextText(p)
	for _, want := range []string{"2 things", "read_file a.go:3-9 — the function", `search_code Foo\(`} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if ContextText(&Plan{}) != "" {
		t.Error("text for a plan without context")
	}
}
