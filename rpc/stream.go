package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// DefaultMaxMessageSize is the largest Content-Length the server accepts.
// A frame declaring more is discarded without allocating its body.
var DefaultMaxMessageSize int64 = 64 << 20

// maxHeaderLine bounds one header line; a longer one is a bad header.
const maxHeaderLine = 4096

// stream is agentd's LSP-framed jsonrpc2.Stream. Unlike the library's header
// stream it never lets one bad frame end the connection: a malformed header,
// an invalid or oversized body, or a message that is not JSON-RPC is answered
// with an error response (when it may have been a call) and reading resumes
// at the next "Content-Length:" header. It also never allocates a declared
// length above the limit.
//
// It implements ReadFrame/WriteFrame as well as Read/Write, so the
// connection uses its borrowed-frame fast path.
type stream struct {
	rwc   io.ReadWriteCloser
	in    *bufio.Reader
	limit int64
	log   *slog.Logger

	// pending holds bytes pushed back after an over-long Content-Length
	// swallowed the start of the next frame; it is read before in.
	pending []byte
	rbuf    []byte

	// Writes are group-committed: the first writer writes; frames queued
	// while it is blocked in rwc.Write are appended to wbuf and sent by it
	// in one write, so a burst of notifications costs one write, not one
	// each. Frames are written in the order they were queued.
	writeMu sync.Mutex
	wbuf    []byte        // frames waiting for the writer
	spare   []byte        // the buffer being written, reused
	flushed chan struct{} // non-nil while a writer is writing; closed when it is done
	timer   *time.Timer   // writes deferred frames; nil when none wait
	closed  bool

	// rejected counts frames answered by the stream itself (for tests).
	rejected int
}

func newStream(rwc io.ReadWriteCloser, limit int64, log *slog.Logger) *stream {
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	return &stream{rwc: rwc, in: bufio.NewReaderSize(rwc, 64<<10), limit: limit, log: log}
}

var errBadHeader = errors.New("malformed header")

func (s *stream) readByte() (byte, error) {
	if len(s.pending) > 0 {
		b := s.pending[0]
		s.pending = s.pending[1:]
		return b, nil
	}
	return s.in.ReadByte()
}

// readLine reads one header line without its terminator. io.EOF is returned
// only when nothing was read.
func (s *stream) readLine(buf []byte) ([]byte, error) {
	line := buf[:0]
	for {
		b, err := s.readByte()
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return line, io.ErrUnexpectedEOF
			}
			return line, err
		}
		if b == '\n' {
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		}
		if len(line) >= maxHeaderLine {
			return line, errBadHeader
		}
		line = append(line, b)
	}
}

func (s *stream) readFull(p []byte) error {
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	if n == len(p) {
		return nil
	}
	_, err := io.ReadFull(s.in, p[n:])
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// resync skips bytes up to the next "Content-Length:" (case-insensitive) and
// pushes that header name back so the next header read sees it.
func (s *stream) resync() error {
	const pat = "content-length:"
	i := 0
	for {
		b, err := s.readByte()
		if err != nil {
			return err
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		switch {
		case b == pat[i]:
			i++
			if i == len(pat) {
				s.pending = append([]byte("Content-Length:"), s.pending...)
				return nil
			}
		case b == pat[0]:
			i = 1
		default:
			i = 0
		}
	}
}

// readHeader reads one header block and returns the declared length.
func (s *stream) readHeader() (int64, error) {
	var lineBuf [128]byte
	length := int64(-1)
	first := true
	for {
		line, err := s.readLine(lineBuf[:0])
		if err != nil {
			if err == io.EOF && !first {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if len(line) == 0 {
			if first {
				// Tolerate stray blank lines between frames.
				continue
			}
			break
		}
		first = false
		// Garbage left by a frame whose Content-Length was too short runs
		// into the next header on the same line: start at the header.
		if i := indexFold(line, "content-length:"); i > 0 {
			line = line[i:]
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return 0, errBadHeader
		}
		name := bytes.TrimSpace(line[:colon])
		if !bytes.EqualFold(name, []byte("content-length")) {
			continue // Content-Type and unknown fields are ignored
		}
		v := string(bytes.TrimSpace(line[colon+1:]))
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			// Digits only, but too large for int64: still "over the limit".
			if ne, ok := perr.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && v != "" && v[0] != '-' {
				n = 1<<63 - 1
			} else {
				return 0, errBadHeader
			}
		}
		if n <= 0 {
			return 0, errBadHeader
		}
		length = n
	}
	if length < 0 {
		return 0, errBadHeader
	}
	return length, nil
}

// ReadFrame returns the next well-formed JSON-RPC message body. Everything
// malformed is answered or dropped here.
func (s *stream) ReadFrame(ctx context.Context) ([]byte, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		n, err := s.readHeader()
		switch {
		case errors.Is(err, errBadHeader):
			s.reject(nil, jsonrpc2.ParseError, "malformed message header; expected \"Content-Length: N\" followed by an empty line")
			if err := s.resync(); err != nil {
				return nil, 0, err
			}
			continue
		case err != nil:
			return nil, 0, err
		}
		if n > s.limit {
			// Never allocate (or wait for) the declared length: skip to the
			// next header instead.
			s.reject(nil, jsonrpc2.InvalidRequest, "message of "+strconv.FormatInt(n, 10)+" bytes exceeds the limit of "+strconv.FormatInt(s.limit, 10)+" bytes; it was skipped")
			if err := s.resync(); err != nil {
				return nil, 0, err
			}
			continue
		}
		if int64(cap(s.rbuf)) < n {
			s.rbuf = make([]byte, n)
		}
		body := s.rbuf[:n]
		if err := s.readFull(body); err != nil {
			return nil, 0, err
		}
		if ok := s.check(body); !ok {
			continue
		}
		return body, n, nil
	}
}

// check validates a body; it answers and returns false for anything the
// connection would choke on.
func (s *stream) check(body []byte) bool {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Valid(body) {
			s.reject(nil, jsonrpc2.InvalidRequest, "batch requests are not supported; send one message per frame")
			return false
		}
	} else if _, err := jsonrpc2.DecodeMessage(body); err == nil {
		return true
	}
	if !json.Valid(body) {
		// An over-long Content-Length may have swallowed the next frame:
		// push back from the first header inside the body.
		if i := indexFold(body, "content-length:"); i >= 0 {
			s.pending = append(append([]byte(nil), body[i:]...), s.pending...)
		}
		s.reject(nil, jsonrpc2.ParseError, "message body is not valid JSON")
		return false
	}
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	_ = json.Unmarshal(body, &probe)
	if len(probe.Method) == 0 {
		// A response we cannot read is dropped; it answers nothing we wait for.
		s.log.Debug("dropping malformed response", "bytes", len(body))
		return false
	}
	id := probe.ID
	if len(id) > 0 && id[0] != '"' && (id[0] < '0' || id[0] > '9') && id[0] != '-' {
		id = nil
	}
	if len(id) == 0 || string(id) == "null" {
		// A malformed notification gets no answer (JSON-RPC 2.0).
		s.log.Debug("dropping malformed notification", "bytes", len(body))
		return false
	}
	s.reject(id, jsonrpc2.InvalidRequest, "not a valid JSON-RPC 2.0 request (check \"jsonrpc\": \"2.0\", \"method\" and \"id\")")
	return false
}

func indexFold(b []byte, lowerPat string) int {
	for i := 0; i+len(lowerPat) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(lowerPat)], []byte(lowerPat)) {
			return i
		}
	}
	return -1
}

// reject writes an error response for a frame the connection never sees.
func (s *stream) reject(id json.RawMessage, code jsonrpc2.Code, msg string) {
	s.rejected++
	s.log.Warn("rejected frame", "code", code, "error", msg)
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{"2.0", id, &jsonrpc2.Error{Code: code, Message: msg}})
	_, _ = s.WriteFrame(context.Background(), body)
}

// Read implements jsonrpc2.Stream.
func (s *stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	body, n, err := s.ReadFrame(ctx)
	if err != nil {
		return nil, 0, err
	}
	msg, err := jsonrpc2.DecodeMessage(body)
	if err != nil {
		return nil, 0, err
	}
	return msg, n, nil
}

// Write implements jsonrpc2.Stream.
func (s *stream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	body := jsonrpc2.AppendMessage(nil, msg)
	return s.writeLocked(body)
}

// WriteFrame writes an encoded body as one frame.
func (s *stream) WriteFrame(ctx context.Context, data []byte) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.writeLocked(data)
}

// writeLocked queues one frame and, unless another writer is already
// writing, writes everything queued. It is called with writeMu held and
// returns with it held.
func (s *stream) writeLocked(body []byte) (int64, error) {
	start := len(s.wbuf)
	s.wbuf = appendFrame(s.wbuf, body)
	n := int64(len(s.wbuf) - start)
	if s.flushed != nil {
		// The writer in progress sends this frame with its next write.
		return n, nil
	}
	if _, err := s.writeQueued(); err != nil {
		return 0, err
	}
	return n, nil
}

// writeQueued writes wbuf (and whatever is queued while it writes). It is
// called with writeMu held, no writer in progress, and returns with it held.
func (s *stream) writeQueued() (int64, error) {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	var n int64
	done := make(chan struct{})
	s.flushed = done
	var err error
	for len(s.wbuf) > 0 && err == nil {
		buf := s.wbuf
		s.wbuf = s.spare[:0]
		s.writeMu.Unlock()
		var k int
		k, err = s.rwc.Write(buf)
		n += int64(k)
		s.writeMu.Lock()
		if cap(buf) <= 1<<20 {
			s.spare = buf[:0]
		} else {
			s.spare = nil
		}
	}
	if err != nil {
		// The frames queued behind the failed write cannot be sent either.
		s.wbuf = s.wbuf[:0]
	}
	s.flushed = nil
	close(done)
	return n, err
}

// NotifyDelay is how long a batched notification (agentd/run/didChange)
// may wait to be written with the ones after it. Any other message written
// meanwhile takes the waiting ones with it, in order.
var NotifyDelay = 5 * time.Millisecond

// writeDeferred queues a frame to be written within delay (or sooner, with
// the next frame written at once).
func (s *stream) writeDeferred(body []byte, delay time.Duration) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.closed {
		return io.ErrClosedPipe
	}
	s.wbuf = appendFrame(s.wbuf, body)
	if s.flushed == nil && s.timer == nil {
		s.timer = time.AfterFunc(delay, s.flushDeferred)
	}
	return nil
}

// flushDeferred writes the deferred frames (the timer's function).
func (s *stream) flushDeferred() {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.timer = nil
	if s.closed || s.flushed != nil || len(s.wbuf) == 0 {
		return // a writer in progress sends them
	}
	if _, err := s.writeQueued(); err != nil {
		s.log.Debug("writing batched notifications", "error", err)
	}
}

func appendFrame(buf, body []byte) []byte {
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, "\r\n\r\n"...)
	return append(buf, body...)
}

// closeFlushTimeout bounds how long Close waits for queued frames to be
// written (the peer may have stopped reading).
var closeFlushTimeout = 2 * time.Second

// Close implements jsonrpc2.Stream. Frames a writer is writing are written
// first (for at most closeFlushTimeout); deferred ones still waiting for
// their delay are dropped.
func (s *stream) Close() error {
	s.writeMu.Lock()
	s.closed = true
	if s.timer != nil {
		// Deferred notifications still waiting are dropped: the peer may
		// not be reading any more (any message written since took them).
		s.timer.Stop()
		s.timer = nil
		if s.flushed == nil {
			s.wbuf = s.wbuf[:0]
		}
	}
	done := s.flushed
	s.writeMu.Unlock()
	if done != nil {
		t := time.NewTimer(closeFlushTimeout)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	return s.rwc.Close()
}
