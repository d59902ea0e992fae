// Package fakemodel is a scripted fake of the model servers agentd talks to:
// OpenAI-compatible chat completions (/v1/chat/completions) and Anthropic
// Messages (/v1/messages), streaming (SSE) and not, with tool calls, token
// usage, request recording and injected faults (429 with Retry-After, 500,
// hangs until the request is cancelled, malformed JSON, streams cut
// mid-way).
//
// The provider code under test runs unchanged against it: only the base
// URL (Start) or the http.Client (Client, an in-memory transport for tests
// inside testing/synctest bubbles) differs.
package fakemodel

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Fault is an injected failure.
type Fault string

const (
	FaultNone      Fault = ""
	FaultRateLimit Fault = "rate_limit" // 429 with Reply.RetryAfter
	FaultServer    Fault = "server"     // 500
	FaultHang      Fault = "hang"       // no answer until the request is cancelled
	FaultMalformed Fault = "malformed"  // 200 with a body that is not JSON
	FaultCutStream Fault = "cut_stream" // a stream that breaks after the first chunk
	FaultStatus    Fault = "status"     // Reply.Status with Reply.Body
	// FaultStreamError sends an error event inside a stream (OpenAI
	// {"error":...} chunk, Anthropic "error" event: overloaded).
	FaultStreamError Fault = "stream_error"
	// FaultStall sends the first part of a stream, then nothing until the
	// request is cancelled.
	FaultStall Fault = "stall"
)

// ToolCall is a scripted tool call; Args is JSON text.
type ToolCall struct {
	ID   string
	Name string
	Args string
}

// Reply is one scripted answer.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// InputTokens, OutputTokens are the usage reported (defaults 10, 5).
	InputTokens, OutputTokens int
	Fault                     Fault
	RetryAfter                string // Retry-After header of a 429 or 500
	Status                    int    // for FaultStatus
	Body                      string // for FaultStatus
}

// Request is a recorded request.
type Request struct {
	API    string // "openai" or "anthropic"
	Path   string
	Header http.Header
	Body   []byte
	// JSON is Body decoded.
	JSON map[string]any
	// Images are the image parts of the request's messages, decoded as
	// the API defines them (OpenAI: an image_url content part holding a
	// base64 data URL; Anthropic: an image block with a base64 source),
	// in order. A part that does not decode is recorded with Err.
	Images []Image

	ctx context.Context
}

// Image is an image part a request carried.
type Image struct {
	Role     string // the message's role
	MIMEType string
	Data     []byte
	Err      string // why the part is not a well-formed image, if it is not
}

// images finds the image parts of a decoded request body.
func images(api string, body map[string]any) []Image {
	var out []Image
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		parts, _ := mm["content"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			switch t, _ := pm["type"].(string); {
			case api == "openai" && t == "image_url":
				iu, _ := pm["image_url"].(map[string]any)
				url, _ := iu["url"].(string)
				img := Image{Role: role}
				head, data, ok := strings.Cut(strings.TrimPrefix(url, "data:"), ";base64,")
				if !strings.HasPrefix(url, "data:") || !ok {
					img.Err = "image_url.url is not a base64 data URL"
				} else if b, err := base64.StdEncoding.DecodeString(data); err != nil {
					img.Err = "image_url.url: " + err.Error()
				} else {
					img.MIMEType, img.Data = head, b
				}
				out = append(out, img)
			case api == "anthropic" && t == "image":
				src, _ := pm["source"].(map[string]any)
				img := Image{Role: role}
				typ, _ := src["type"].(string)
				mt, _ := src["media_type"].(string)
				data, _ := src["data"].(string)
				if typ != "base64" || mt == "" {
					img.Err = "source is not {type: base64, media_type, data}"
				} else if b, err := base64.StdEncoding.DecodeString(data); err != nil {
					img.Err = "source.data: " + err.Error()
				} else {
					img.MIMEType, img.Data = mt, b
				}
				out = append(out, img)
			}
		}
	}
	return out
}

// Stream reports whether the request asked for a stream.
func (r Request) Stream() bool { b, _ := r.JSON["stream"].(bool); return b }

// Server is the fake. The zero value is not usable; call New.
type Server struct {
	mu       sync.Mutex
	replies  []Reply
	handler  func(Request) Reply
	requests []Request
}

// New returns a fake with no scripted replies.
func New() *Server { return &Server{} }

// Push queues replies, answered in order.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, r...)
}

// Handle sets a function that answers when the queue is empty.
func (s *Server) Handle(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = f
}

// Requests returns the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Pending is the number of queued replies not yet used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

// Start serves on a local TCP port for the life of t and returns the base
// URL (OpenAI base URL: URL+"/v1"; Anthropic: URL).
func (s *Server) Start(t testing.TB) string {
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

// BaseURL is the base URL to use with Client: the host is never dialled.
const BaseURL = "http://fakemodel.test"

// Client returns an http.Client whose transport serves requests in memory
// (io.Pipe): no sockets, so it works inside testing/synctest bubbles. Use
// it with BaseURL.
func (s *Server) Client() *http.Client { return &http.Client{Transport: memTransport{s}} }

func (s *Server) next(r Request) (Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	if len(s.replies) > 0 {
		rep := s.replies[0]
		s.replies = s.replies[1:]
		return rep, nil
	}
	if s.handler != nil {
		h := s.handler
		s.mu.Unlock()
		rep := h(r)
		s.mu.Lock()
		return rep, nil
	}
	return Reply{}, fmt.Errorf("fakemodel: no reply scripted for request %d to %s", len(s.requests), r.Path)
}

// ServeHTTP answers /v1/chat/completions and /v1/messages.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(hr.Body)
	r := Request{Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body, ctx: hr.Context()}
	_ = json.Unmarshal(body, &r.JSON)
	switch {
	case strings.HasSuffix(hr.URL.Path, "/chat/completions"):
		r.API = "openai"
	case strings.HasSuffix(hr.URL.Path, "/messages"):
		r.API = "anthropic"
	default:
		http.Error(w, `{"error":{"message":"unknown path `+hr.URL.Path+`"}}`, http.StatusNotFound)
		return
	}
	r.Images = images(r.API, r.JSON)
	rep, err := s.next(r)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": err.Error()}})
		w.Write(b)
		return
	}
	if rep.InputTokens == 0 && rep.OutputTokens == 0 {
		rep.InputTokens, rep.OutputTokens = 10, 5
	}
	switch rep.Fault {
	case FaultRateLimit, FaultServer, FaultStatus:
		code, msg := http.StatusTooManyRequests, "rate limit reached"
		if rep.Fault == FaultServer {
			code, msg = http.StatusInternalServerError, "internal error"
		}
		if rep.Fault == FaultStatus {
			code = rep.Status
		}
		if rep.RetryAfter != "" {
			w.Header().Set("Retry-After", rep.RetryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if rep.Body != "" {
			io.WriteString(w, rep.Body)
		} else {
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": string(rep.Fault)}})
			w.Write(b)
		}
		return
	case FaultHang:
		<-hr.Context().Done()
		return
	case FaultMalformed:
		w.Header().Set("Content-Type", "application/json")
		if r.Stream() {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {not json\n\n")
			return
		}
		io.WriteString(w, `{"choices": [ {"message": `)
		return
	}
	if r.API == "openai" {
		s.openAI(w, r, rep)
	} else {
		s.anthropic(w, r, rep)
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) openAI(w http.ResponseWriter, r Request, rep Reply) {
	usage := map[string]any{"prompt_tokens": rep.InputTokens, "completion_tokens": rep.OutputTokens,
		"total_tokens": rep.InputTokens + rep.OutputTokens}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	var calls []map[string]any
	for i, tc := range rep.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		calls = append(calls, map[string]any{"index": i, "id": id, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": tc.Args}})
	}
	if !r.Stream() {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush(w)
	}
	chunk := func(delta map[string]any, fin any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if rep.Fault == FaultStreamError {
		send(map[string]any{"error": map[string]any{"message": "The server is overloaded", "type": "server_error"}})
		return
	}
	for i, part := range split(rep.Text) {
		send(chunk(map[string]any{"content": part}, nil))
		if i == 0 && rep.Fault == FaultCutStream {
			panic(http.ErrAbortHandler)
		}
		if i == 0 && rep.Fault == FaultStall {
			<-r.ctx.Done()
			return
		}
	}
	if rep.Fault == FaultCutStream {
		panic(http.ErrAbortHandler)
	}
	for _, c := range calls {
		// name first, then the arguments in two pieces, as real servers do.
		fn := c["function"].(map[string]any)
		args := fn["arguments"].(string)
		h := len(args) / 2
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": c["index"], "id": c["id"], "type": "function",
			"function": map[string]any{"name": fn["name"], "arguments": args[:h]}}}}, nil))
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": c["index"],
			"function": map[string]any{"arguments": args[h:]}}}}, nil))
	}
	send(chunk(map[string]any{}, finish))
	send(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": []any{}, "usage": usage})
	io.WriteString(w, "data: [DONE]\n\n")
	flush(w)
}

// split cuts text into up to three pieces for streaming.
func split(s string) []string {
	if s == "" {
		return nil
	}
	if len(s) < 3 {
		return []string{s}
	}
	a, b := len(s)/3, 2*len(s)/3
	return []string{s[:a], s[a:b], s[b:]}
}

// forcedTool returns the tool name a request forces (Anthropic structured output).
func forcedTool(r Request) string {
	tc, _ := r.JSON["tool_choice"].(map[string]any)
	if tc == nil || tc["type"] != "tool" {
		return ""
	}
	n, _ := tc["name"].(string)
	return n
}

func (s *Server) anthropic(w http.ResponseWriter, r Request, rep Reply) {
	type block = map[string]any
	var blocks []block
	forced := forcedTool(r)
	if forced != "" {
		in := json.RawMessage(rep.Text)
		if !json.Valid(in) {
			b, _ := json.Marshal(rep.Text)
			in = b
		}
		blocks = append(blocks, block{"type": "tool_use", "id": "toolu_forced", "name": forced, "input": in})
	} else if rep.Text != "" {
		blocks = append(blocks, block{"type": "text", "text": rep.Text})
	}
	for i, tc := range rep.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d", i)
		}
		blocks = append(blocks, block{"type": "tool_use", "id": id, "name": tc.Name, "input": json.RawMessage(orEmpty(tc.Args))})
	}
	stop := "end_turn"
	if len(rep.ToolCalls) > 0 || forced != "" {
		stop = "tool_use"
	}
	if !r.Stream() {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_fake", "type": "message", "role": "assistant",
			"content": blocks, "stop_reason": stop,
			"usage": map[string]any{"input_tokens": rep.InputTokens, "output_tokens": rep.OutputTokens}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		flush(w)
	}
	send("message_start", map[string]any{"message": map[string]any{"id": "msg_fake", "type": "message", "role": "assistant",
		"content": []any{}, "usage": map[string]any{"input_tokens": rep.InputTokens, "output_tokens": 1}}})
	send("ping", map[string]any{})
	if rep.Fault == FaultStreamError {
		send("error", map[string]any{"error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
		return
	}
	for i, b := range blocks {
		if b["type"] == "text" {
			send("content_block_start", map[string]any{"index": i, "content_block": block{"type": "text", "text": ""}})
			for k, part := range split(b["text"].(string)) {
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": part}})
				if k == 0 && rep.Fault == FaultCutStream {
					panic(http.ErrAbortHandler)
				}
				if k == 0 && rep.Fault == FaultStall {
					<-r.ctx.Done()
					return
				}
			}
		} else {
			send("content_block_start", map[string]any{"index": i, "content_block": block{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in := string(b["input"].(json.RawMessage))
			h := len(in) / 2
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": in[:h]}})
			if rep.Fault == FaultCutStream {
				panic(http.ErrAbortHandler)
			}
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": in[h:]}})
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	if rep.Fault == FaultCutStream {
		panic(http.ErrAbortHandler)
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": rep.OutputTokens}})
	send("message_stop", map[string]any{})
}

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// memTransport serves requests with the Server in memory.
type memTransport struct{ s *Server }

func (t memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	sreq := req.Clone(req.Context())
	sreq.Body = io.NopCloser(bytes.NewReader(body))
	pr, pw := io.Pipe()
	rw := &pipeWriter{pw: pw, header: http.Header{}, ready: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					pw.CloseWithError(fmt.Errorf("fakemodel: handler panic: %v", v))
				} else {
					pw.CloseWithError(io.ErrUnexpectedEOF)
				}
				rw.start()
				return
			}
			rw.start()
			pw.Close()
		}()
		t.s.ServeHTTP(rw, sreq)
	}()
	// Like a real connection, the body breaks when the request is cancelled.
	go func() {
		select {
		case <-req.Context().Done():
			pr.CloseWithError(req.Context().Err())
		case <-done:
		}
	}()
	select {
	case <-rw.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		<-done
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: rw.code, Status: http.StatusText(rw.code), Header: rw.header, Body: pr,
		Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1}, nil
}

// pipeWriter is an http.ResponseWriter writing into a pipe.
type pipeWriter struct {
	pw     *io.PipeWriter
	header http.Header
	code   int
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.start()
}

func (w *pipeWriter) start() {
	w.once.Do(func() {
		if w.code == 0 {
			w.code = http.StatusOK
		}
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.start()
	return w.pw.Write(b)
}

func (w *pipeWriter) Flush() { w.start() }
