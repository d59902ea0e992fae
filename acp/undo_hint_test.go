package acp

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/internal/fakemodel"
)

// After a conflicting /undo of an older run, the chat's way out names that
// run: the test pastes each printed command back as the next prompt, as a
// user would, and checks that it undid that run alone (the later run's
// file stays, and so does a file neither run touched that the user
// edited), keeping the user's line (--keep-conflicts) or putting the
// agent's first version back over it (--overwrite).
func TestUndoConflictHintPasted(t *testing.T) {
	for _, tc := range []struct {
		option, wantA string
	}{
		{"--keep-conflicts", "one\nMINE\nthree\n"},
		{"--overwrite", "one\ntwo\nthree\n"},
	} {
		t.Run(tc.option, func(t *testing.T) {
			fake := fakemodel.New()
			url := fake.Start(t)
			ws, state := t.TempDir(), t.TempDir()
			read := func(name string) string {
				b, err := os.ReadFile(filepath.Join(ws, name))
				if os.IsNotExist(err) {
					return "<absent>"
				}
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("a.txt", "one\ntwo\nthree\n")
			write("u.txt", "untouched\n")
			c := &testClient{}
			conn, stop := start(t, c, modelOptions(url, state))
			defer stop()
			ctx := boundedCtx(t)
			ns := openSession(t, conn, sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}, ws, modeAuto)
			prompt := func(text string) string {
				t.Helper()
				c.mu.Lock()
				mark := len(c.updates)
				c.mu.Unlock()
				res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
				if err != nil {
					t.Fatalf("prompt %q: %v", text, err)
				}
				if res.StopReason != sdk.StopReasonEndTurn {
					t.Fatalf("prompt %q: stop reason %s", text, res.StopReason)
				}
				return c.said(mark)
			}
			fake.Push(fakemodel.Reply{Text: `{"title":"Run one","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\nRUN\nthree\n"}},{"id":"c","tool":"write_file","args":{"path":"c.txt","content":"created\n"}}]}`})
			prompt("change line two and create c.txt")
			if read("a.txt") != "one\nRUN\nthree\n" || read("c.txt") != "created\n" {
				t.Fatalf("run 1 wrote a.txt %q, c.txt %q", read("a.txt"), read("c.txt"))
			}
			// The user edits the agent's own line, and a file no run touched.
			write("a.txt", "one\nMINE\nthree\n")
			write("u.txt", "edited\n")
			fake.Push(fakemodel.Reply{Text: `{"title":"Run two","steps":[{"id":"b","tool":"write_file","args":{"path":"b.txt","content":"run 2\n"}}]}`})
			prompt("create b.txt")
			if read("b.txt") != "run 2\n" {
				t.Fatalf("run 2 wrote b.txt %q", read("b.txt"))
			}
			j, err := engine.OpenJournal(state, realPath(t, ws), nil)
			if err != nil {
				t.Fatal(err)
			}
			runs, err := j.Runs()
			if err != nil || len(runs) != 2 {
				t.Fatalf("the journal holds %d runs (%v); want 2", len(runs), err)
			}
			run2, run1 := runs[0].RunID, runs[1].RunID

			said := prompt("/undo " + run1)
			if read("c.txt") != "created\n" || read("a.txt") != "one\nMINE\nthree\n" {
				t.Fatalf("a conflicting /undo changed files (c.txt %q, a.txt %q):\n%s", read("c.txt"), read("a.txt"), said)
			}
			// The third way out, --diff, shows the conflict and changes nothing.
			d := regexp.MustCompile("`(/undo [^`]*--diff)`").FindStringSubmatch(said)
			if d == nil || d[1] != "/undo "+run1+" --diff" {
				t.Fatalf("the chat prints no `/undo %s --diff` after the conflict:\n%s", run1, said)
			}
			if shown := prompt(d[1]); !regexp.MustCompile("(?s)```diff\n.*a.txt.*\\+two").MatchString(shown) || read("c.txt") != "created\n" || read("a.txt") != "one\nMINE\nthree\n" {
				t.Fatalf("pasting %q: c.txt %q, a.txt %q\n%s", d[1], read("c.txt"), read("a.txt"), shown)
			}
			m := regexp.MustCompile("`(/undo [^`]*" + regexp.QuoteMeta(tc.option) + ")`").FindStringSubmatch(said)
			if m == nil {
				t.Fatalf("the chat prints no `/undo … %s` after the conflict:\n%s", tc.option, said)
			}
			hint := m[1]
			if want := "/undo " + run1 + " " + tc.option; hint != want {
				t.Errorf("the printed way out is %q; want %q (it names run 1)", hint, want)
			}
			said = prompt(hint) // pasted as printed
			if got := read("a.txt"); got != tc.wantA {
				t.Errorf("after pasting %q a.txt = %q; want %q\n%s", hint, got, tc.wantA, said)
			}
			if read("c.txt") != "<absent>" {
				t.Errorf("after pasting %q run 1's c.txt is still there:\n%s", hint, said)
			}
			if read("b.txt") != "run 2\n" || read("u.txt") != "edited\n" {
				t.Errorf("pasting %q took what it does not name: b.txt %q, u.txt %q\n%s", hint, read("b.txt"), read("u.txt"), said)
			}
			if j.UndoneOf(run1) == nil || j.UndoneOf(run2) != nil {
				t.Errorf("after pasting %q the journal has run 1 undone %v, run 2 undone %v; want run 1 alone", hint, j.UndoneOf(run1) != nil, j.UndoneOf(run2) != nil)
			}
		})
	}
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
