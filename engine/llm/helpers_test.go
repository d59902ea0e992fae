package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

const (
	testOpenAIKey    = "sk-test-OPENAI-7f3a9c"
	testAnthropicKey = "sk-ant-test-ANTH-51d2e"
)

// testEnv is the environment the tests' settings see.
func testEnv(base string) map[string]string {
	return map[string]string{
		"OPENAI_BASE_URL":    base + "/v1",
		"OPENAI_API_KEY":     testOpenAIKey,
		"ANTHROPIC_BASE_URL": base,
		"ANTHROPIC_API_KEY":  testAnthropicKey,
	}
}

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// memSettings are settings for model against srv in memory (synctest-safe).
func memSettings(srv *fakemodel.Server, model string, logw io.Writer) *Settings {
	env := testEnv(fakemodel.BaseURL)
	if logw == nil {
		logw = io.Discard
	}
	return &Settings{Model: model, Getenv: func(k string) string { return env[k] }, HTTPClient: srv.Client(),
		Costs: NewCostTable(nil), Logger: slog.New(slog.NewTextHandler(logw, nil))}
}

// tcpSettings are settings for model against srv over a local TCP port.
func tcpSettings(t *testing.T, srv *fakemodel.Server, model string) *Settings {
	env := testEnv(srv.Start(t))
	return &Settings{Model: model, Getenv: func(k string) string { return env[k] },
		Costs: NewCostTable(nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func mustClient(t *testing.T, s *Settings) *Client {
	t.Helper()
	c, err := s.Client("")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userMsg(s string) []Message { return []Message{{Role: "user", Content: s}} }

func lastUserText(t *testing.T, r fakemodel.Request) string {
	t.Helper()
	msgs, _ := r.JSON["messages"].([]any)
	if len(msgs) == 0 {
		t.Fatalf("request has no messages: %s", r.Body)
	}
	return string(mustJSON(msgs[len(msgs)-1]))
}

func mustJSON(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return []byte(b.String())
}
