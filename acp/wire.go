package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// lockedWriter serialises whole lines to the client. The SDK writes each
// message with one Write; the line filter writes its own error answers
// through the same lock, so lines never interleave.
type lockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
	// Permission requests written so far, and a channel closed at the
	// next one (outbox.go).
	nreq    uint64
	nextReq chan struct{}
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, io.ErrClosedPipe
	}
	n, err := l.w.Write(p)
	if err == nil {
		l.countRequest(p)
	}
	return n, err
}

// close drops every later write: once Serve returns, nothing more goes
// to the client.
func (l *lockedWriter) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// maxLine bounds one message (the SDK's own limit is 10 MiB).
const maxLine = 10 << 20

// wireError is a JSON-RPC error answer the filter sends itself.
type wireError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	} `json:"error"`
}

// filterLines copies the client's lines to pw, the SDK's input, and
// answers what the SDK would only log: a line that is not JSON gets a
// parse error (-32700), and a JSON value that is not a JSON-RPC 2.0
// message (an array, no method and no id, a wrong "jsonrpc") gets an
// invalid request error (-32600), as does a line over maxLine bytes (it
// is dropped: the SDK would close the connection). The agent keeps
// serving after each. Requests before initialize are refused here, in the
// order they came (the SDK handles requests concurrently, so only the
// reader knows what came first); notifications before it are dropped.
// gate (may be nil) refuses a session/prompt while another runs in the
// same session (promptGate).
// It returns when in ends (nil) or cannot be read (the error); pw is
// closed then.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer, gate *promptGate) error {
	defer pw.Close()
	if gate != nil {
		gate.mu.Lock()
		gate.pass = func(line []byte) { _, _ = pw.Write(append(line, '\n')) }
		gate.mu.Unlock()
	}
	initialized := false
	answer := func(id json.RawMessage, code int, msg string, data any) {
		var e wireError
		e.JSONRPC, e.ID = "2.0", id
		if e.ID == nil {
			e.ID = json.RawMessage("null")
		}
		e.Error.Code, e.Error.Message, e.Error.Data = code, msg, data
		b, _ := json.Marshal(e)
		_, _ = out.Write(append(b, '\n'))
	}
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, size, err := readLine(r, maxLine)
		if size > maxLine {
			answer(idOf(line), -32600, fmt.Sprintf("Invalid request: the message is %d bytes, over the limit of %d MiB; it was dropped and the connection stays open (link large files as resources instead of embedding them; an image in a prompt must fit in it too: about 7.5 MiB)", size, maxLine>>20), nil)
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			code, msg, id, method, ok := checkLine(line)
			var data any
			switch {
			case !ok:
			case method == "initialize":
				initialized = true
			case method != "" && !initialized:
				if len(id) == 0 {
					continue // a notification: nothing to answer
				}
				code, msg, ok = -32600, "Invalid request: call initialize first", false
			case method == sdk.AgentMethodSessionPrompt && len(id) > 0 && gate != nil:
				sid, busy, held := gate.enter(line)
				if held {
					continue // passed on when the cancelled prompt ends
				}
				if busy {
					code, msg, ok = errPromptRunning, "a prompt is already running in session "+sid+": wait for its answer, or send session/cancel first (the next prompt then runs once the cancelled one has ended)", false
					data = map[string]any{"sessionId": sid, "reason": "promptRunning"}
				}
			case method == sdk.AgentMethodSessionCancel && gate != nil:
				gate.cancel(line)
			}
			if !ok {
				answer(id, code, msg, data)
			} else {
				buf := make([]byte, 0, len(line)+1)
				buf = append(append(buf, line...), '\n')
				if _, werr := pw.Write(buf); werr != nil {
					return nil
				}
			}
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("reading the client's messages: %w", err)
		}
	}
}

// errPromptRunning answers a session/prompt sent while another prompt of
// the same session runs.
const errPromptRunning = -32010

// readLine reads one line (without its newline). A line longer than max
// is read to its end and dropped: size is its length, line its first
// 64 KiB (for the id).
func readLine(r *bufio.Reader, max int) (line []byte, size int, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		size += len(chunk)
		if size <= max+1 {
			buf = append(buf, chunk...)
		} else if len(buf) < 64<<10 {
			buf = append(buf, chunk[:min(len(chunk), 64<<10-len(buf))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			buf, size = buf[:n-1], size-1
		}
		if err == io.EOF && size > 0 {
			err = nil // the last line had no newline; EOF comes next
		}
		return buf, size, err
	}
}

// idPattern finds a request's id at the top of a message too large to
// parse.
var idPattern = regexp.MustCompile(`^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"]*"\s*,)*\s*"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)`)

func idOf(prefix []byte) json.RawMessage {
	if m := idPattern.FindSubmatch(prefix); m != nil {
		return json.RawMessage(m[1])
	}
	return nil
}

// promptGate knows which sessions have a prompt running: ACP has one turn
// at a time per session, and a prompt sent meanwhile is refused with
// errPromptRunning rather than cancelling the running one (the SDK would
// cancel it silently). The line reader marks a session busy as it passes
// its prompt on, so pipelined prompts are judged in the order they came;
// the prompt's handler clears it before its answer is written.
//
// A prompt sent after session/cancel of the running one is not refused:
// a client gives its chat back as soon as the user stops (CodeCompanion
// does), before the cancelled prompt's answer, and the user's next message
// is not an error. It is held (one per session) and passed on when the
// cancelled prompt ends.
type promptGate struct {
	mu        sync.Mutex
	running   map[string]bool
	cancelled map[string]bool   // the running prompt was cancelled
	held      map[string][]byte // a prompt sent after the cancel, waiting
	pass      func(line []byte) // passes a held prompt on to the SDK
}

// enter marks the prompt's session busy, or holds the prompt until the
// cancelled one ends (held), or says the session is busy.
func (g *promptGate) enter(line []byte) (sid string, busy, held bool) {
	var m struct {
		Params sdk.PromptRequest `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Params.Validate() != nil {
		return "", false, false // the SDK answers invalid params; its handler never runs
	}
	sid = string(m.Params.SessionId)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[sid] {
		if g.cancelled[sid] && g.held[sid] == nil {
			if g.held == nil {
				g.held = map[string][]byte{}
			}
			g.held[sid] = append([]byte(nil), line...)
			return sid, false, true
		}
		return sid, true, false
	}
	if g.running == nil {
		g.running = map[string]bool{}
	}
	g.running[sid] = true
	return sid, false, false
}

// cancel notes a session/cancel of the session's running prompt.
func (g *promptGate) cancel(line []byte) {
	var m struct {
		Params sdk.CancelNotification `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return
	}
	sid := string(m.Params.SessionId)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[sid] {
		if g.cancelled == nil {
			g.cancelled = map[string]bool{}
		}
		g.cancelled[sid] = true
	}
}

// leave ends the session's running prompt and passes on a prompt held
// behind it, which then runs.
func (g *promptGate) leave(sid string) {
	g.mu.Lock()
	delete(g.running, sid)
	delete(g.cancelled, sid)
	next, pass := g.held[sid], g.pass
	if next != nil {
		delete(g.held, sid)
		g.running[sid] = true
	}
	g.mu.Unlock()
	if next != nil && pass != nil {
		pass(next)
	}
}

// checkLine says whether line is a message the SDK can take.
func checkLine(line []byte) (code int, msg string, id json.RawMessage, method string, ok bool) {
	if !json.Valid(line) {
		return -32700, "Parse error: the line is not JSON; send one JSON-RPC message per line", nil, "", false
	}
	if line[0] != '{' {
		return -32600, "Invalid request: send one JSON-RPC 2.0 object per line (batches are not part of ACP)", nil, "", false
	}
	var m struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return -32600, "Invalid request: " + err.Error(), nil, "", false
	}
	id = m.ID
	if len(id) > 0 && id[0] != '"' && id[0] != 'n' && (id[0] < '0' || id[0] > '9') && id[0] != '-' {
		return -32600, "Invalid request: id must be a string, a number or null", nil, "", false
	}
	if m.Method != nil {
		method = *m.Method
	}
	switch {
	case m.JSONRPC == nil || *m.JSONRPC != "2.0":
		return -32600, `Invalid request: "jsonrpc" must be "2.0"`, id, method, false
	case m.Method != nil && *m.Method == "":
		return -32600, "Invalid request: empty method", id, method, false
	case m.Method == nil && len(id) == 0:
		return -32600, "Invalid request: a message needs a method or an id", nil, method, false
	case m.Method == nil && m.Result == nil && m.Error == nil:
		return -32600, "Invalid request: a response needs a result or an error", id, method, false
	}
	return 0, "", id, method, true
}
