package tools

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Any valid document indented the standard way comes back unchanged, and
// formatting never panics.
func FuzzJSONLayout(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c, d"}],"e":{}}`, `[]`, `"x"`, `{"k":[[],[{}]],"s":"\u00e9\"]"}`, `[1.5e3,null,true]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		var compact, indented bytes.Buffer
		if err := json.Compact(&compact, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if err := json.Indent(&indented, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		got := formatJSON(compact.Bytes(), readLayout(indented.Bytes(), "  "))
		if !bytes.Equal(got, indented.Bytes()) {
			t.Fatalf("round trip of %q:\n%s\nwant\n%s", s, got, indented.Bytes())
		}
		// The original's own layout also formats validly.
		out := formatJSON(compact.Bytes(), readLayout([]byte(s), "\t"))
		if !json.Valid(out) {
			t.Fatalf("invalid output %q", out)
		}
	})
}
