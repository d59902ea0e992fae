package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrorKind classifies a provider failure.
type ErrorKind string

const (
	ErrAuth          ErrorKind = "auth"           // 401, 403
	ErrNotFound      ErrorKind = "not_found"      // 404: usually the model name
	ErrRateLimit     ErrorKind = "rate_limit"     // 429
	ErrServer        ErrorKind = "server"         // 5xx
	ErrTimeout       ErrorKind = "timeout"        // no answer in time
	ErrNetwork       ErrorKind = "network"        // connection refused, reset
	ErrStream        ErrorKind = "stream"         // the stream broke mid-way
	ErrContextLength ErrorKind = "context_length" // 400: prompt too long
	ErrBadRequest    ErrorKind = "bad_request"    // other 4xx
	ErrMalformed     ErrorKind = "malformed"      // an answer we cannot read
)

// Error is a classified provider error. Its text never contains an API key.
type Error struct {
	Provider   string
	Model      string
	Status     int // HTTP status, 0 if none
	Kind       ErrorKind
	RetryAfter time.Duration // from Retry-After, if the server sent one
	Message    string        // the server's message, redacted
	Hint       string        // what to do
	Err        error         // the underlying error (network), redacted in Error()
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Model != "" {
		b.WriteString(" model " + strconv.Quote(e.Model))
	}
	b.WriteString(": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d ", e.Status)
	}
	b.WriteString(string(e.Kind))
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether trying again may help: rate limits, server
// errors, timeouts, network failures and broken streams.
func (e *Error) IsRetryable() bool {
	switch e.Kind {
	case ErrRateLimit, ErrServer, ErrTimeout, ErrNetwork, ErrStream:
		return true
	}
	return false
}

// redactor removes secrets from text.
type redactor []string

func (r redactor) redact(s string) string {
	for _, k := range r {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, "[REDACTED]")
		}
	}
	return s
}

// httpError classifies a non-2xx answer. body is the (bounded) body.
func httpError(provider, model, keyEnv string, resp *http.Response, body []byte, now time.Time, r redactor) *Error {
	e := &Error{Provider: provider, Model: model, Status: resp.StatusCode}
	e.Message = r.redact(serverMessage(body))
	switch {
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		e.Kind = ErrAuth
		if keyEnv != "" {
			e.Hint = "check the API key in " + keyEnv + " (or the profile's apiKeyEnv in ~/.config/agentd/config.json)"
		} else {
			e.Hint = "the server wants an API key: add a profile with apiKeyEnv naming the variable that holds it in ~/.config/agentd/config.json"
		}
	case resp.StatusCode == 404:
		e.Kind = ErrNotFound
		e.Hint = "check the model name in AGENTD_MODEL and the base URL; the server does not know this model or path"
	case resp.StatusCode == 429:
		e.Kind = ErrRateLimit
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
		e.Hint = "rate limited; retried with backoff; wait or lower maxParallel"
	case resp.StatusCode == 408:
		e.Kind = ErrTimeout
		e.Hint = "the server timed out; retried"
	case resp.StatusCode >= 500:
		e.Kind = ErrServer
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
		e.Hint = "the provider failed; retried with backoff"
	case isContextLength(e.Message):
		e.Kind = ErrContextLength
		e.Hint = "the prompt is longer than the model's context: shorten the prompt, give the step fewer files, or use a model with a longer context"
	default:
		e.Kind = ErrBadRequest
		e.Hint = "the provider rejected the request; check AGENTD_MODEL and that the server supports tools/structured output (profile option \"structured\": \"json_object\" or \"none\")"
	}
	return e
}

func isContextLength(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"context length", "context_length", "maximum context", "too many tokens", "prompt is too long", "context window"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// serverMessage extracts {"error":{"message":...}} or {"error":"..."} or
// the body's first 300 bytes.
func serverMessage(body []byte) string {
	var v struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
	}
	if jsonUnmarshal(body, &v) == nil {
		switch x := v.Error.(type) {
		case string:
			return x
		case map[string]any:
			if m, ok := x["message"].(string); ok {
				return m
			}
		}
		if v.Message != "" {
			return v.Message
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// transportError classifies a failure to get or read an answer.
func transportError(provider, model string, err error, ctx context.Context, r redactor, stream bool) error {
	if ctx.Err() != nil {
		// Our own cancellation or deadline: not the provider's fault.
		return fmt.Errorf("%s model %q: %w", provider, model, ctx.Err())
	}
	e := &Error{Provider: provider, Model: model, Err: errors.New(r.redact(err.Error()))}
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		e.Kind = ErrTimeout
		e.Hint = "no answer in time; retried. Raise the profile's timeout for slow local models"
	case stream:
		e.Kind = ErrStream
		e.Hint = "the answer stream broke off; retried"
	default:
		e.Kind = ErrNetwork
		e.Hint = "cannot reach the server; check the base URL (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_HOST) and that it is running"
	}
	e.Message = r.redact(err.Error())
	return e
}
