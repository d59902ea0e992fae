package rpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// Binary and non-UTF-8 files never pass through a buffer (issue 35, point
// 2): an editor hands their bytes over as decoded text, so the server keeps
// no buffer text for them; what agentd writes to them goes on disk byte for
// byte, never through workspace/applyEdit, and the editor is told to reload
// the buffer (agentd/documents/reload).
func TestBinaryFileNeverPassesThroughABuffer(t *testing.T) {
	root := t.TempDir()
	bin := append([]byte("GIF89a\x01\x00\xbf\xff\xfe text \x80\x81"), make([]byte, 8)...) // trailing NULs
	if err := os.WriteFile(filepath.Join(root, "logo.gif"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("plain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ed := startEditor(t, Options{}, nil)
	var mu sync.Mutex
	var applied int
	var reloaded []string
	ed.setAuto("workspace/applyEdit", func(json.RawMessage) (any, error) {
		mu.Lock()
		applied++
		mu.Unlock()
		return map[string]any{"applied": true}, nil
	})
	ed.setAuto("agentd/documents/reload", func(p json.RawMessage) (any, error) {
		var rp ReloadParams
		_ = json.Unmarshal(p, &rp)
		mu.Lock()
		reloaded = append(reloaded, rp.URIs...)
		mu.Unlock()
		return map[string]any{"reloaded": rp.URIs}, nil
	})
	ed.initialize(root, nil)
	binURI := pathToURI(filepath.Join(root, "logo.gif"))
	txtURI := pathToURI(filepath.Join(root, "notes.txt"))
	// What Neovim or VS Code send for the binary file: text, not its bytes.
	ed.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": binURI, "languageId": "", "version": 1, "text": strings.ToValidUTF8(string(bin), "\uFFFD")}})
	ed.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": txtURI, "languageId": "text", "version": 1, "text": "plain\n"}})
	ed.mustCall("agentd/plan/list", nil, nil)
	ws, _ := ed.srv.workspace()
	if _, _, ok := ws.Overlay("logo.gif"); ok {
		t.Fatal("the binary file's buffer is kept as text: agentd would read and write the editor's decoding of it")
	}
	if got, err := ws.ReadFile(t.Context(), "logo.gif"); err != nil || string(got) != string(bin) {
		t.Fatalf("ReadFile(logo.gif) = %q, %v; want the disk's bytes", got, err)
	}
	w := (*editorWriter)(ed.srv)
	next := append([]byte("GIF89a\x02\x00\xbf\xff"), make([]byte, 5)...)
	if err := w.WriteFile(t.Context(), "logo.gif", bin, next, 0); err != nil {
		t.Fatal(err)
	}
	// A text file the agent makes binary goes the same way.
	if err := w.WriteFile(t.Context(), "notes.txt", []byte("plain\n"), []byte("\xff\xfeplain\x00"), 0); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string][]byte{"logo.gif": next, "notes.txt": []byte("\xff\xfeplain\x00")} {
		if got, _ := os.ReadFile(filepath.Join(root, rel)); string(got) != string(want) {
			t.Errorf("%s on disk = %q, want %q byte for byte", rel, got, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if applied != 0 {
		t.Errorf("workspace/applyEdit sent %d times for binary content; it never passes through a buffer", applied)
	}
	if !slices.Equal(reloaded, []string{binURI, txtURI}) {
		t.Errorf("agentd/documents/reload named %v; want %v", reloaded, []string{binURI, txtURI})
	}
}
