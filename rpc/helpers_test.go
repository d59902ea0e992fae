package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// testLogger logs to the test when AGENTD_TEST_LOG is set.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("AGENTD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// waitTimeout bounds every wait in the integration tests so a bug shows as
// a failure, not a hang. It is not a timing assertion.
const waitTimeout = 30 * time.Second

// rawClient speaks frames directly, for robustness tests.
type rawClient struct {
	t      testing.TB
	conn   net.Conn
	stream jsonrpc2.Stream
	done   chan error
	srv    *Server
}

func startRaw(t testing.TB, opts Options, setup func(*Server)) *rawClient {
	t.Helper()
	a, b := net.Pipe()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	srv := NewServer(opts)
	if setup != nil {
		setup(srv)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), a) }()
	rc := &rawClient{t: t, conn: b, stream: jsonrpc2.NewStream(b), done: done, srv: srv}
	t.Cleanup(func() {
		b.Close()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Errorf("server did not stop after the client closed the connection")
		}
	})
	return rc
}

func (rc *rawClient) writeRaw(b []byte) {
	rc.t.Helper()
	if _, err := rc.conn.Write(b); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

func frame(body string) []byte {
	return []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
}

func (rc *rawClient) call(id int64, method string, params any) {
	rc.t.Helper()
	var raw jsonrpc2.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			rc.t.Fatal(err)
		}
		raw = b
	}
	if _, err := rc.stream.Write(context.Background(), jsonrpc2.NewCall(jsonrpc2.NewNumberID(id), method, raw)); err != nil {
		rc.t.Fatalf("write call: %v", err)
	}
}

// read returns the next message from the server.
func (rc *rawClient) read() jsonrpc2.Message {
	rc.t.Helper()
	type res struct {
		m   jsonrpc2.Message
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, _, err := rc.stream.Read(context.Background())
		ch <- res{m, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			rc.t.Fatalf("read: %v", r.err)
		}
		return r.m
	case <-time.After(waitTimeout):
		rc.t.Fatalf("no message from the server")
	}
	return nil
}

// response reads until a response arrives (skipping notifications).
func (rc *rawClient) response() *jsonrpc2.Response {
	rc.t.Helper()
	for {
		if r, ok := rc.read().(*jsonrpc2.Response); ok {
			return r
		}
	}
}

func respID(r *jsonrpc2.Response) (int64, bool) {
	return r.ID().Number()
}

func errCode(err error) jsonrpc2.Code {
	if e, ok := err.(*jsonrpc2.Error); ok {
		return e.Code
	}
	return 0
}

// editor is a fake editor: a real jsonrpc2 peer that records notifications
// and lets the test answer server->client requests.
type editor struct {
	t    testing.TB
	conn jsonrpc2.Conn
	srv  *Server
	done chan error

	mu     sync.Mutex
	notes  []note
	noteCh chan struct{}
	// auto answers server->client requests by method.
	auto   map[string]func(params json.RawMessage) (any, error)
	reqs   chan *serverRequest
	closed chan struct{}
}

type note struct {
	Method string
	Params json.RawMessage
}

// serverRequest is a server->client request waiting for the test's answer.
type serverRequest struct {
	Method string
	Params json.RawMessage
	reply  chan replyMsg
}

type replyMsg struct {
	result any
	err    error
}

func (r *serverRequest) answer(result any, err error) { r.reply <- replyMsg{result, err} }

func startEditor(t testing.TB, opts Options, setup func(*Server)) *editor {
	t.Helper()
	a, b := net.Pipe()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	srv := NewServer(opts)
	if setup != nil {
		setup(srv)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), a) }()
	ed := &editor{t: t, srv: srv, done: done, noteCh: make(chan struct{}, 1), reqs: make(chan *serverRequest, 64), closed: make(chan struct{}),
		auto: map[string]func(json.RawMessage) (any, error){}}
	ed.conn = jsonrpc2.NewConn(jsonrpc2.NewStream(b))
	ed.conn.Go(context.Background(), ed.handle)
	t.Cleanup(func() {
		close(ed.closed)
		_ = b.Close()
		_ = ed.conn.Close()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Errorf("server did not stop after the editor closed the connection")
		}
	})
	return ed
}

func (ed *editor) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	params := json.RawMessage(append([]byte(nil), req.Params()...))
	name := strings.Clone(req.Method()) // borrowed from the frame
	if !req.IsCall() {
		ed.mu.Lock()
		ed.notes = append(ed.notes, note{name, params})
		ed.mu.Unlock()
		select {
		case ed.noteCh <- struct{}{}:
		default:
		}
		return nil, nil
	}
	ed.mu.Lock()
	f := ed.auto[name]
	ed.mu.Unlock()
	if f != nil {
		return f(params)
	}
	jsonrpc2.Async(ctx)
	sr := &serverRequest{Method: name, Params: params, reply: make(chan replyMsg, 1)}
	ed.reqs <- sr
	select {
	case r := <-sr.reply:
		return r.result, r.err
	case <-ed.closed:
		return nil, errors.New("editor closed")
	}
}

func (ed *editor) setAuto(method string, f func(json.RawMessage) (any, error)) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	ed.auto[method] = f
}

func (ed *editor) call(method string, params, result any) error {
	ed.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var raw json.RawMessage
	_, err := ed.conn.Call(ctx, method, params, &raw)
	if err != nil {
		return err
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			ed.t.Fatalf("%s: decoding result %s: %v", method, raw, err)
		}
	}
	return nil
}

func (ed *editor) mustCall(method string, params, result any) {
	ed.t.Helper()
	if err := ed.call(method, params, result); err != nil {
		ed.t.Fatalf("%s: %v", method, err)
	}
}

func (ed *editor) notify(method string, params any) {
	ed.t.Helper()
	if err := ed.conn.Notify(context.Background(), method, params); err != nil {
		ed.t.Fatalf("notify %s: %v", method, err)
	}
}

// waitNote waits for a notification matching f, scanning from index from;
// it returns the index after the match.
func (ed *editor) waitNote(from int, f func(note) bool) (note, int) {
	ed.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		ed.mu.Lock()
		for i := from; i < len(ed.notes); i++ {
			if f(ed.notes[i]) {
				n := ed.notes[i]
				ed.mu.Unlock()
				return n, i + 1
			}
		}
		ed.mu.Unlock()
		select {
		case <-ed.noteCh:
		case <-deadline:
			ed.mu.Lock()
			var seen []string
			for _, n := range ed.notes[from:] {
				seen = append(seen, n.Method+" "+string(n.Params))
			}
			ed.mu.Unlock()
			ed.t.Fatalf("notification not received; got since #%d:\n%s", from, strings.Join(seen, "\n"))
		}
	}
}

func (ed *editor) nextRequest(method string) *serverRequest {
	ed.t.Helper()
	select {
	case r := <-ed.reqs:
		if r.Method != method {
			ed.t.Fatalf("server asked %s (%s), want %s", r.Method, r.Params, method)
		}
		return r
	case <-time.After(waitTimeout):
		ed.t.Fatalf("server did not ask %s", method)
	}
	return nil
}

func (ed *editor) initialize(root string, initOpts map[string]any) InitializeResult {
	ed.t.Helper()
	params := map[string]any{
		"processId": nil,
		"rootUri":   pathToURI(root),
		"capabilities": map[string]any{
			"window":    map[string]any{"workDoneProgress": true},
			"workspace": map[string]any{"applyEdit": true},
		},
	}
	if root == "" {
		params["rootUri"] = nil
	}
	if initOpts != nil {
		params["initializationOptions"] = initOpts
	}
	var res InitializeResult
	ed.mustCall("initialize", params, &res)
	ed.notify("initialized", map[string]any{})
	return res
}
