package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// httpBase is what both providers share: where and how to post.
type httpBase struct {
	name    string // "openai", "anthropic"
	baseURL string
	key     string
	keyEnv  string // the env var the key came from, for hints
	client  *http.Client
	timeout time.Duration // per attempt; 0 = none (ctx only)
	idle    time.Duration // longest wait for the next bytes of an answer; 0 = none
	now     func() time.Time
}

// DefaultIdleTimeout is how long an attempt may go without receiving any
// byte (headers or stream data) before it is abandoned as timed out and
// retried. Profiles may change it ("idleTimeout").
var DefaultIdleTimeout = 2 * time.Minute

// errIdle is the cause of an attempt cancelled for silence.
var errIdle = errors.New("no data from the server")

// idleBody resets the idle timer on every read.
type idleBody struct {
	io.ReadCloser
	timer *time.Timer
	idle  time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	return n, err
}

func (h *httpBase) redactor() redactor { return redactor{h.key} }

// post sends body and returns the response if 2xx, else a classified *Error.
// cancel must be called when the body has been read.
func (h *httpBase) post(ctx context.Context, model, path string, hdr http.Header, body any) (*http.Response, context.CancelFunc, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	ictx, icancel := context.WithCancelCause(ctx)
	cctx, tcancel := ictx, context.CancelFunc(func() {})
	if h.timeout > 0 {
		cctx, tcancel = context.WithTimeout(ictx, h.timeout)
	}
	var timer *time.Timer
	if h.idle > 0 {
		timer = time.AfterFunc(h.idle, func() { icancel(errIdle) })
	}
	cancel := func() {
		if timer != nil {
			timer.Stop()
		}
		tcancel()
		icancel(nil)
	}
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, strings.TrimRight(h.baseURL, "/")+path, bytes.NewReader(data))
	if err != nil {
		cancel()
		return nil, nil, &Error{Provider: h.name, Model: model, Kind: ErrBadRequest, Message: h.redactor().redact(err.Error()),
			Hint: "check the base URL"}
	}
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		err = h.transport(ctx, cctx, model, err, false)
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		cancel()
		return nil, nil, httpError(h.name, model, h.keyEnv, resp, b, h.now(), h.redactor())
	}
	if timer != nil {
		timer.Reset(h.idle)
		resp.Body = &idleBody{ReadCloser: resp.Body, timer: timer, idle: h.idle}
	}
	return resp, cancel, nil
}

// transport classifies err; a per-attempt timeout (cctx done, ctx not) is
// ErrTimeout.
func (h *httpBase) transport(ctx, cctx context.Context, model string, err error, stream bool) error {
	if ctx.Err() == nil && cctx.Err() != nil {
		if errors.Is(context.Cause(cctx), errIdle) {
			return &Error{Provider: h.name, Model: model, Kind: ErrTimeout,
				Message: "no data from the server for " + h.idle.String(),
				Hint:    "retried; raise the profile's idleTimeout for slow local models"}
		}
		return &Error{Provider: h.name, Model: model, Kind: ErrTimeout,
			Message: "no answer within " + h.timeout.String(),
			Hint:    "retried; raise the profile's timeout for slow local models"}
	}
	return transportError(h.name, model, err, ctx, h.redactor(), stream)
}

func (h *httpBase) malformed(model string, err error) error {
	return &Error{Provider: h.name, Model: model, Kind: ErrMalformed, Message: h.redactor().redact(err.Error()),
		Hint: "the server's answer is not what the " + h.name + " API returns; check the base URL points at an " + h.name + "-compatible endpoint"}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Event string
	Data  string
}

// sseReader reads server-sent events.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next event, or io.EOF at a clean end of the body.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				if seen {
					return ev, io.ErrUnexpectedEOF
				}
				return ev, io.EOF
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !seen {
				continue
			}
			ev.Data = strings.Join(data, "\n")
			return ev, nil
		}
		seen = true
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
		}
	}
}
