package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

func TestOpenAINonStreaming(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: "hello there", InputTokens: 12, OutputTokens: 3})
	c := mustClient(t, tcpSettings(t, srv, "openai:gpt-4o"))
	resp, u, err := c.Call(t.Context(), nil, &Request{System: "sys", Messages: userMsg("hi"), MaxTokens: 333})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "hello there" || u.InputTokens != 12 || u.OutputTokens != 3 {
		t.Fatalf("got %+v usage %+v", resp, u)
	}
	// gpt-4o: $2.5/M in, $10/M out.
	if want := (12*2.5 + 3*10) / 1e6; u.CostUSD != want {
		t.Errorf("cost = %v, want %v", u.CostUSD, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" || reqs[0].Stream() {
		t.Fatalf("requests: %+v", reqs)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+testOpenAIKey {
		t.Errorf("Authorization = %q", got)
	}
	msgs := reqs[0].JSON["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" || reqs[0].JSON["model"] != "gpt-4o" ||
		reqs[0].JSON["max_tokens"] != float64(333) {
		t.Errorf("body: %s", reqs[0].Body)
	}
}

func TestOpenAIStreamingToolCalls(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: "let me look", ToolCalls: []fakemodel.ToolCall{
		{ID: "c1", Name: "read_file", Args: `{"path":"a.go"}`},
		{ID: "c2", Name: "search_code", Args: `{"pattern":"func main"}`},
	}, InputTokens: 40, OutputTokens: 9})
	c := mustClient(t, tcpSettings(t, srv, "openai:local-model"))
	var chunks []string
	resp, u, err := c.Call(t.Context(), nil, &Request{Messages: userMsg("hi"),
		Tools:  []ToolDef{{Name: "read_file", Schema: json.RawMessage(`{"type":"object"}`)}},
		OnText: func(s string) { chunks = append(chunks, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(chunks, "") != "let me look" || len(chunks) < 2 {
		t.Errorf("streamed chunks %q", chunks)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Name != "read_file" || string(resp.ToolCalls[0].Args) != `{"path":"a.go"}` ||
		resp.ToolCalls[1].ID != "c2" || string(resp.ToolCalls[1].Args) != `{"pattern":"func main"}` {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
	if u.InputTokens != 40 || u.OutputTokens != 9 || u.CostUSD != 0 {
		t.Errorf("usage %+v (an unknown local model is free)", u)
	}
	r := srv.Requests()[0]
	if !r.Stream() || r.JSON["stream_options"] == nil {
		t.Errorf("not a streaming request with usage: %s", r.Body)
	}
	tools := r.JSON["tools"].([]any)
	if fn := tools[0].(map[string]any)["function"].(map[string]any); fn["name"] != "read_file" || fn["parameters"] == nil {
		t.Errorf("tools: %v", tools)
	}
}

func TestAnthropicStreamingAndNot(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := fakemodel.New()
		srv.Push(fakemodel.Reply{Text: "checking", ToolCalls: []fakemodel.ToolCall{{ID: "tu1", Name: "read_file", Args: `{"path":"x"}`}},
			InputTokens: 100, OutputTokens: 20})
		c := mustClient(t, tcpSettings(t, srv, "anthropic:claude-sonnet-4-20250514"))
		req := &Request{System: "be brief", Messages: []Message{
			{Role: "user", Content: "hi"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "a", Name: "list_dir", Args: json.RawMessage(`{}`)}, {ID: "b", Name: "list_dir", Args: json.RawMessage(`{}`)}}},
			{Role: "tool", ToolCallID: "a", Content: "r1"},
			{Role: "tool", ToolCallID: "b", Content: "r2"},
		}}
		var streamed strings.Builder
		if stream {
			req.OnText = func(s string) { streamed.WriteString(s) }
		}
		resp, u, err := c.Call(t.Context(), nil, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "checking" || len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Args) != `{"path":"x"}` || resp.ToolCalls[0].ID != "tu1" {
			t.Fatalf("stream=%v: %+v", stream, resp)
		}
		if stream && streamed.String() != "checking" {
			t.Errorf("streamed %q", streamed.String())
		}
		if u.InputTokens != 100 || u.OutputTokens != 20 || u.CostUSD != (100*3+20*15)/1e6 {
			t.Errorf("stream=%v usage %+v", stream, u)
		}
		r := srv.Requests()[0]
		if r.Path != "/v1/messages" || r.Header.Get("x-api-key") != testAnthropicKey || r.Header.Get("anthropic-version") == "" ||
			r.JSON["system"] != "be brief" || r.Stream() != stream {
			t.Errorf("request %s %v: %s", r.Path, r.Header, r.Body)
		}
		// Two tool results merge into one user message after the assistant's.
		msgs := r.JSON["messages"].([]any)
		if len(msgs) != 3 || len(msgs[2].(map[string]any)["content"].([]any)) != 2 {
			t.Errorf("messages: %s", mustJSON(msgs))
		}
	}
}

func TestStructuredOutput(t *testing.T) {
	schema := &OutputSchema{Name: "plan", Schema: planSchema}
	t.Run("openai json_schema", func(t *testing.T) {
		srv := fakemodel.New()
		srv.Push(fakemodel.Reply{Text: `{"steps":[]}`})
		c := mustClient(t, tcpSettings(t, srv, "openai:gpt-4o"))
		if _, _, err := c.Call(t.Context(), nil, &Request{Messages: userMsg("x"), JSON: schema}); err != nil {
			t.Fatal(err)
		}
		rf, _ := srv.Requests()[0].JSON["response_format"].(map[string]any)
		if rf["type"] != "json_schema" || rf["json_schema"].(map[string]any)["name"] != "plan" {
			t.Errorf("response_format %v", rf)
		}
	})
	t.Run("openai json_object profile", func(t *testing.T) {
		srv := fakemodel.New()
		srv.Push(fakemodel.Reply{Text: `{"steps":[]}`})
		s := tcpSettings(t, srv, "local")
		s.Profiles = map[string]Profile{"local": {Provider: "openai", Model: "m", Structured: StructuredObject}}
		c := mustClient(t, s)
		if _, _, err := c.Call(t.Context(), nil, &Request{Messages: userMsg("x"), JSON: schema}); err != nil {
			t.Fatal(err)
		}
		rf, _ := srv.Requests()[0].JSON["response_format"].(map[string]any)
		if rf["type"] != "json_object" {
			t.Errorf("response_format %v", rf)
		}
	})
	for _, stream := range []bool{false, true} {
		t.Run("anthropic forced tool", func(t *testing.T) {
			srv := fakemodel.New()
			srv.Push(fakemodel.Reply{Text: `{"steps":[{"id":"a"}]}`})
			c := mustClient(t, tcpSettings(t, srv, "anthropic:claude-3-5-haiku-latest"))
			req := &Request{Messages: userMsg("x"), JSON: schema}
			if stream {
				req.OnText = func(string) {}
			}
			resp, _, err := c.Call(t.Context(), nil, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != `{"steps":[{"id":"a"}]}` || len(resp.ToolCalls) != 0 {
				t.Errorf("stream=%v: %+v", stream, resp)
			}
			tc, _ := srv.Requests()[0].JSON["tool_choice"].(map[string]any)
			if tc["type"] != "tool" || tc["name"] != forcedTool {
				t.Errorf("tool_choice %v", tc)
			}
		})
	}
}

func TestErrorsNotRetried(t *testing.T) {
	cases := []struct {
		name  string
		model string
		reply fakemodel.Reply
		kind  ErrorKind
		hint  string
	}{
		{"401", "openai:gpt-4o", fakemodel.Reply{Fault: fakemodel.FaultStatus, Status: 401,
			Body: `{"error":{"message":"Incorrect API key provided: ` + testOpenAIKey + `"}}`}, ErrAuth, "OPENAI_API_KEY"},
		{"401 anthropic", "anthropic:claude-sonnet-4", fakemodel.Reply{Fault: fakemodel.FaultStatus, Status: 401,
			Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + testAnthropicKey + `"}}`}, ErrAuth, "ANTHROPIC_API_KEY"},
		{"404", "openai:gpt-9", fakemodel.Reply{Fault: fakemodel.FaultStatus, Status: 404,
			Body: `{"error":{"message":"The model gpt-9 does not exist"}}`}, ErrNotFound, "AGENTD_MODEL"},
		{"400 context", "openai:gpt-4o", fakemodel.Reply{Fault: fakemodel.FaultStatus, Status: 400,
			Body: `{"error":{"message":"This model's maximum context length is 128000 tokens"}}`}, ErrContextLength, "shorten"},
		{"400", "openai:gpt-4o", fakemodel.Reply{Fault: fakemodel.FaultStatus, Status: 400,
			Body: `{"error":{"message":"bad field"}}`}, ErrBadRequest, "AGENTD_MODEL"},
		{"malformed", "openai:gpt-4o", fakemodel.Reply{Fault: fakemodel.FaultMalformed}, ErrMalformed, "base URL"},
		{"malformed anthropic", "anthropic:claude-sonnet-4", fakemodel.Reply{Fault: fakemodel.FaultMalformed}, ErrMalformed, "base URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakemodel.New()
			srv.Push(tc.reply, fakemodel.Reply{Text: "must not be reached"})
			logs := &syncBuf{}
			c := mustClient(t, memSettings(srv, tc.model, logs))
			_, _, err := c.Call(t.Context(), nil, &Request{Messages: userMsg("x")})
			var e *Error
			if !errors.As(err, &e) || e.Kind != tc.kind {
				t.Fatalf("err = %v, want kind %s", err, tc.kind)
			}
			if e.IsRetryable() {
				t.Errorf("%s must not be retryable", tc.kind)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retry)", n)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("error %q does not say %q", err, tc.hint)
			}
			for _, k := range []string{testOpenAIKey, testAnthropicKey} {
				if strings.Contains(err.Error(), k) || strings.Contains(logs.String(), k) {
					t.Errorf("key leaked: %v / %s", err, logs.String())
				}
			}
		})
	}
}

func TestNetworkErrorClassified(t *testing.T) {
	env := map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": testOpenAIKey}
	s := &Settings{Model: "openai:gpt-4o", Getenv: func(k string) string { return env[k] }, Retry: RetryPolicy{Attempts: 1}}
	c := mustClient(t, s)
	_, _, err := c.Call(context.Background(), nil, &Request{Messages: userMsg("x")})
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrNetwork || !e.IsRetryable() || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Fatalf("err = %v", err)
	}
}

// Some OpenAI-compatible servers stream tool calls without an index.
func TestOpenAIStreamToolCallsWithoutIndex(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{
			`{"choices":[{"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"x\"}"}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"list_dir","arguments":"{}"}}]}}]}`,
			`{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer ts.Close()
	env := map[string]string{"OPENAI_BASE_URL": ts.URL, "OPENAI_API_KEY": "k"}
	c := mustClient(t, &Settings{Model: "openai:m", Getenv: func(k string) string { return env[k] }})
	resp, _, err := c.Call(t.Context(), nil, &Request{Messages: userMsg("x"), OnText: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || string(resp.ToolCalls[0].Args) != `{"path":"x"}` || resp.ToolCalls[1].Name != "list_dir" {
		t.Errorf("tool calls %+v", resp.ToolCalls)
	}
}

func TestMalformedStreamNotRetried(t *testing.T) {
	for _, model := range []string{"openai:gpt-4o", "anthropic:claude-sonnet-4"} {
		srv := fakemodel.New()
		srv.Push(fakemodel.Reply{Fault: fakemodel.FaultMalformed}, fakemodel.Reply{Text: "must not be reached"})
		c := mustClient(t, memSettings(srv, model, nil))
		_, _, err := c.Call(t.Context(), nil, &Request{Messages: userMsg("x"), OnText: func(string) {}})
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrMalformed || e.IsRetryable() || len(srv.Requests()) != 1 {
			t.Errorf("%s: err = %v after %d requests", model, err, len(srv.Requests()))
		}
	}
}
