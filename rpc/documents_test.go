package rpc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/workspace"
)

// applyEdit is the fake editor's side of an edit (UTF-16 positions), done
// with the one conversion the server uses too.
func applyEdit(text []byte, rng workspace.Range, newText string) ([]byte, error) {
	return workspace.ApplyEdits(text, []workspace.TextEdit{{Range: &rng, Text: newText}}, workspace.UTF16)
}

// A client that negotiates UTF-8 gets positionEncoding "utf-8" back and
// its didChange characters are counted in bytes; one that offers nothing
// gets UTF-16 (and no positionEncoding field, as before).
func TestPositionEncodingNegotiated(t *testing.T) {
	for _, c := range []struct {
		offered []string
		answer  string
		char    int // the character after "é😀" in the client's encoding
	}{
		{[]string{"utf-8", "utf-16"}, "utf-8", 6},
		{[]string{"utf-32", "utf-16"}, "utf-16", 3},
		{nil, "", 3},
	} {
		t.Run(c.answer, func(t *testing.T) {
			ed := startEditor(t, Options{}, nil)
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("é😀x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			caps := map[string]any{"workspace": map[string]any{"applyEdit": true}}
			if c.offered != nil {
				caps["general"] = map[string]any{"positionEncodings": c.offered}
			}
			var res struct {
				Capabilities struct {
					PositionEncoding *string `json:"positionEncoding"`
				} `json:"capabilities"`
			}
			ed.mustCall("initialize", map[string]any{"processId": nil, "rootUri": pathToURI(root), "capabilities": caps}, &res)
			switch got := res.Capabilities.PositionEncoding; {
			case c.answer == "" && got != nil:
				t.Errorf("positionEncoding %q answered to a client that offered none", *got)
			case c.answer != "" && (got == nil || *got != c.answer):
				t.Errorf("positionEncoding = %v, want %q", got, c.answer)
			}
			uri := pathToURI(filepath.Join(root, "f.txt"))
			ed.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "text", "version": 1, "text": "é😀x\n"}})
			pos := map[string]int{"line": 0, "character": c.char}
			ed.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2},
				"contentChanges": []any{map[string]any{"range": map[string]any{"start": pos, "end": pos}, "text": "|"}}})
			ed.mustCall("agentd/plan/list", nil, nil)
			ws, _ := ed.srv.workspace()
			if got, _, _ := ws.Overlay("f.txt"); string(got) != "é😀|x\n" {
				t.Errorf("buffer = %q, want %q", got, "é😀|x\n")
			}
		})
	}
}

// statusPending is the wire status of an undecided hunk.
const statusPending = "pending"
