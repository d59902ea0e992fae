package rpc

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// memConn is an in-memory connection: it reads the input and discards the
// output.
type memConn struct {
	r io.Reader
}

func (m *memConn) Read(p []byte) (int, error)  { return m.r.Read(p) }
func (m *memConn) Write(p []byte) (int, error) { return len(p), nil }
func (m *memConn) Close() error                { return nil }

var initFrame = frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}`)

// FuzzServe feeds raw bytes to the server (after a valid initialize when
// the first byte is odd): framing and dispatch must never panic or hang.
func FuzzServe(f *testing.F) {
	f.Add([]byte("\x01" + string(frame(`{"jsonrpc":"2.0","id":2,"method":"agentd/plan/list"}`))))
	f.Add([]byte("\x01Content-Length: 5\r\n\r\n{\"a\":Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("\x00" + string(frame(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///x","version":1,"text":"a\nb"}}}`)) +
		string(frame(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///x","version":2},"contentChanges":[{"range":{"start":{"line":9,"character":0},"end":{"line":0,"character":1}},"text":"z"}]}}`))))
	f.Add([]byte("\x01Content-Length: 99999999999999999999\r\n\r\n"))
	f.Add([]byte("\x01" + string(frame(`[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]`))))
	f.Add([]byte("\x01" + string(frame(`{"jsonrpc":"2.0","id":"s","method":"agentd/changes/resolve","params":{"changeId":"x","decisions":[{"action":"accept"}]}}`))))
	f.Add([]byte("\x01" + string(frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)) + string(frame(`{"jsonrpc":"2.0","method":"exit"}`))))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := data
		if len(in) > 0 && in[0]&1 == 1 {
			in = append(append([]byte(nil), initFrame...), in[1:]...)
		}
		srv := NewServer(Options{Logger: slog.New(slog.DiscardHandler), StateDir: t.TempDir(), MaxMessageSize: 1 << 16})
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), &memConn{r: bytes.NewReader(in)}) }()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Fatalf("server did not stop at the end of input %q", data)
		}
	})
}
