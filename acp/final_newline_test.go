package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
)

// eolClient is a client that saves what it is given with a final newline
// added, as CodeCompanion (Neovim's fixeol) does.
type eolClient struct{ *testClient }

func (c eolClient) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if p.Content != "" && !strings.HasSuffix(p.Content, "\n") {
		p.Content += "\n"
	}
	return c.testClient.WriteTextFile(ctx, p)
}

// TestClientFinalNewlineIsNotAUserEdit: agentd writes files without a
// final newline through a client that adds one; /undo takes the run back
// (the newline is no edit of the user's), and /undo-restore puts it back,
// saying what it wrote, and writes nothing when it says nothing differed.
func TestClientFinalNewlineIsNotAUserEdit(t *testing.T) {
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
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tc := &testClient{}
	conn, stop := start(t, eolClient{tc}, modelOptions(url, state))
	defer stop()
	ctx := boundedCtx(t)
	ns := openSession(t, conn, sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}, ws, modeAuto)
	prompt := func(text string) (string, int) {
		t.Helper()
		tc.mu.Lock()
		mark, writes := len(tc.updates), len(tc.writes)
		tc.mu.Unlock()
		res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
		if err != nil {
			t.Fatalf("prompt %q: %v", text, err)
		}
		if res.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("prompt %q: stop reason %s", text, res.StopReason)
		}
		tc.mu.Lock()
		n := len(tc.writes) - writes
		tc.mu.Unlock()
		return tc.said(mark), n
	}
	fake.Push(fakemodel.Reply{Text: `{"title":"No newline","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\ntwo"}},{"id":"c","tool":"write_file","args":{"path":"c.txt","content":"created"}}]}`})
	prompt("add a line and create c.txt")
	if read("a.txt") != "one\ntwo\n" || read("c.txt") != "created\n" {
		t.Fatalf("the client saved a.txt %q, c.txt %q; want each with a final newline added", read("a.txt"), read("c.txt"))
	}

	said, _ := prompt("/undo")
	if strings.Contains(said, "Nothing was undone") || read("a.txt") != "one\n" || read("c.txt") != "<absent>" {
		t.Fatalf("/undo after the client added final newlines: a.txt %q, c.txt %q\n%s", read("a.txt"), read("c.txt"), said)
	}

	said, writes := prompt("/undo-restore")
	if strings.Contains(said, "Nothing was undone") || read("a.txt") != "one\ntwo\n" || read("c.txt") != "created\n" {
		t.Fatalf("/undo-restore: a.txt %q, c.txt %q\n%s", read("a.txt"), read("c.txt"), said)
	}
	if strings.Contains(said, "Nothing differed") || !strings.Contains(said, "a.txt") || !strings.Contains(said, "c.txt") {
		t.Errorf("/undo-restore wrote a.txt and c.txt but says:\n%s", said)
	}
	if writes != 2 {
		t.Errorf("/undo-restore wrote %d files through the client; want 2 (a.txt, c.txt)\n%s", writes, said)
	}

	// A real conflict kept as it is: the undo writes nothing, and its
	// undo has nothing to take back, so it writes nothing either (not
	// even the open buffers it did not change) while it says so.
	fake.Push(fakemodel.Reply{Text: `{"title":"Three","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\nthree"}}]}`})
	prompt("make it three")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\nMINE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	said, writes = prompt("/undo --keep-conflicts")
	if read("a.txt") != "one\nMINE\n" || writes != 0 {
		t.Fatalf("/undo --keep-conflicts: a.txt %q, %d client writes\n%s", read("a.txt"), writes, said)
	}
	said, writes = prompt("/undo-restore")
	if read("a.txt") != "one\nMINE\n" || read("c.txt") != "created\n" || (writes != 0 && strings.Contains(said, "Nothing differed")) {
		t.Errorf("/undo-restore of an undo that kept everything: a.txt %q, c.txt %q, %d client writes\n%s", read("a.txt"), read("c.txt"), writes, said)
	}
}
