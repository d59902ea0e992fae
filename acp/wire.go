package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// lockedWriter serialises whole lines to the client. The SDK writes each
// message with one Write; the line filter writes its own error answers
// through the same lock, so lines never interleave.
type lockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, io.ErrClosedPipe
	}
	return l.w.Write(p)
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
// invalid request error (-32600). The agent keeps serving after either.
// Requests before initialize are refused here, in the order they came
// (the SDK handles requests concurrently, so only the reader knows what
// came first); notifications before it are dropped.
// It returns when in ends; pw is closed then.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer) {
	defer pw.Close()
	initialized := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		code, msg, id, method, ok := checkLine(line)
		switch {
		case !ok:
		case method == "initialize":
			initialized = true
		case method != "" && !initialized:
			if len(id) == 0 {
				continue // a notification: nothing to answer
			}
			code, msg, ok = -32600, "Invalid request: call initialize first", false
		}
		if !ok {
			var e wireError
			e.JSONRPC, e.ID = "2.0", id
			if e.ID == nil {
				e.ID = json.RawMessage("null")
			}
			e.Error.Code, e.Error.Message = code, msg
			b, _ := json.Marshal(e)
			_, _ = out.Write(append(b, '\n'))
			continue
		}
		buf := make([]byte, 0, len(line)+1)
		buf = append(append(buf, line...), '\n')
		if _, err := pw.Write(buf); err != nil {
			return
		}
	}
	if err := sc.Err(); err != nil {
		var e wireError
		e.JSONRPC, e.ID = "2.0", json.RawMessage("null")
		e.Error.Code, e.Error.Message = -32700, "Parse error: "+err.Error()+"; the connection ends here (messages are one JSON object per line, at most 10 MiB)"
		b, _ := json.Marshal(e)
		_, _ = out.Write(append(b, '\n'))
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
