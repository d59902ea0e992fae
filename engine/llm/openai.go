package llm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// Structured-output modes of an OpenAI-compatible server.
const (
	StructuredSchema = "json_schema" // response_format json_schema (OpenAI, vLLM, llama.cpp, Ollama >= 0.5)
	StructuredObject = "json_object" // response_format json_object
	StructuredNone   = "none"        // prompt only
)

// openAI speaks OpenAI chat completions (Ollama, llama.cpp server, vLLM,
// LM Studio, OpenRouter, OpenAI).
type openAI struct {
	httpBase
	structured string
}

func (p *openAI) Name() string { return p.name }

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type oaChoice struct {
	Message      oaMessage `json:"message"`
	Delta        oaMessage `json:"delta"`
	FinishReason string    `json:"finish_reason"`
}

type oaResponse struct {
	Choices []oaChoice      `json:"choices"`
	Usage   *oaUsage        `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

func (p *openAI) body(req *Request, stream bool) map[string]any {
	var msgs []any
	if req.System != "" {
		s := req.System
		msgs = append(msgs, oaMessage{Role: "system", Content: &s})
	}
	for _, m := range req.Messages {
		c := m.Content
		om := oaMessage{Role: m.Role, Content: &c, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			var o oaToolCall
			o.ID, o.Type = tc.ID, "function"
			o.Function.Name, o.Function.Arguments = tc.Name, string(tc.Args)
			om.ToolCalls = append(om.ToolCalls, o)
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 && c == "" {
			om.Content = nil
		}
		if m.Role == "user" && len(m.Images) > 0 {
			// Chat completions' content parts: the text, then each image
			// as a data URL.
			var parts []map[string]any
			if c != "" {
				parts = append(parts, map[string]any{"type": "text", "text": c})
			}
			for _, img := range m.Images {
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{
					"url": "data:" + img.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)}})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": parts})
			continue
		}
		msgs = append(msgs, om)
	}
	b := map[string]any{"model": req.Model, "messages": msgs}
	if req.MaxTokens > 0 {
		// OpenAI's own API wants max_completion_tokens (its reasoning models
		// reject max_tokens); compatible servers know max_tokens.
		if strings.HasPrefix(p.baseURL, DefaultOpenAIBaseURL) {
			b["max_completion_tokens"] = req.MaxTokens
		} else {
			b["max_tokens"] = req.MaxTokens
		}
	}
	if len(req.Tools) > 0 {
		var ts []map[string]any
		for _, t := range req.Tools {
			ts = append(ts, map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": t.Schema}})
		}
		b["tools"] = ts
	}
	if req.JSON != nil {
		switch p.structured {
		case StructuredObject:
			b["response_format"] = map[string]any{"type": "json_object"}
		case StructuredNone:
		default:
			b["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{
				"name": req.JSON.Name, "schema": req.JSON.Schema}}
		}
	}
	if stream {
		b["stream"] = true
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	return b
}

func (p *openAI) header() http.Header {
	h := http.Header{}
	if p.key != "" {
		h.Set("Authorization", "Bearer "+p.key)
	}
	return h
}

func (p *openAI) Send(ctx context.Context, req *Request) (*Response, error) {
	stream := req.OnText != nil
	resp, cancel, err := p.post(ctx, req.Model, "/chat/completions", p.header(), p.body(req, stream))
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	if !stream {
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, p.transport(ctx, resp.Request.Context(), req.Model, err, true)
		}
		var r oaResponse
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, p.malformed(req.Model, fmt.Errorf("reading the answer: %w", err))
		}
		if len(r.Error) > 0 && string(r.Error) != "null" {
			return nil, p.streamError(req.Model, r.Error)
		}
		if len(r.Choices) == 0 {
			return nil, p.malformed(req.Model, errors.New("the answer has no choices"))
		}
		c := r.Choices[0]
		out := &Response{StopReason: c.FinishReason}
		if c.Message.Content != nil {
			out.Text = *c.Message.Content
		}
		for _, tc := range c.Message.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: rawArgs(tc.Function.Arguments)})
		}
		if r.Usage != nil {
			out.Usage = Usage{r.Usage.PromptTokens, r.Usage.CompletionTokens}
		}
		return out, nil
	}
	return p.readStream(ctx, resp, req)
}

func (p *openAI) streamError(model string, raw json.RawMessage) error {
	e := &Error{Provider: p.name, Model: model, Kind: ErrServer, Hint: "the provider reported an error mid-answer; retried"}
	e.Message = p.redactor().redact(serverMessage([]byte(`{"error":` + string(raw) + `}`)))
	if isContextLength(e.Message) {
		e.Kind, e.Hint = ErrContextLength, "the prompt is longer than the model's context: shorten the prompt or use a model with a longer context"
	}
	return e
}

func (p *openAI) readStream(ctx context.Context, resp *http.Response, req *Request) (*Response, error) {
	sse := newSSEReader(resp.Body)
	out := &Response{}
	var text strings.Builder
	type acc struct {
		id, name string
		args     strings.Builder
	}
	calls := map[int]*acc{}
	done := false
	for !done {
		ev, err := sse.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, p.transport(ctx, resp.Request.Context(), req.Model, err, true)
		}
		data := strings.TrimSpace(ev.Data)
		if data == "" {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var chunk oaResponse
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return nil, p.malformed(req.Model, fmt.Errorf("reading a stream chunk: %w", err))
		}
		if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			return nil, p.streamError(req.Model, chunk.Error)
		}
		if chunk.Usage != nil {
			out.Usage = Usage{chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens}
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != nil && *c.Delta.Content != "" {
				text.WriteString(*c.Delta.Content)
				req.OnText(*c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				idx := toolCallIndex(tc, calls, func(a *acc) string { return a.id })
				a := calls[idx]
				if a == nil {
					a = &acc{}
					calls[idx] = a
				}
				if tc.ID != "" {
					a.id = tc.ID
				}
				if tc.Function.Name != "" {
					a.name = tc.Function.Name
				}
				a.args.WriteString(tc.Function.Arguments)
			}
			if c.FinishReason != "" {
				out.StopReason = c.FinishReason
			}
		}
	}
	if !done {
		return nil, &Error{Provider: p.name, Model: req.Model, Kind: ErrStream,
			Message: "the stream ended without [DONE]", Hint: "the answer stream broke off; retried"}
	}
	out.Text = text.String()
	idxs := make([]int, 0, len(calls))
	for i := range calls {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for _, i := range idxs {
		a := calls[i]
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: a.id, Name: a.name, Args: rawArgs(a.args.String())})
	}
	return out, nil
}

// rawArgs turns a tool call's argument text into JSON (an empty string is
// {}; text that is not JSON is kept as a JSON string so that the tool's
// schema check reports it).
func rawArgs(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// toolCallIndex is where a streamed tool-call delta belongs: its index, or
// for servers that send none, the call with its id, a new call for a new
// id, or the last call for a continuation.
func toolCallIndex[A any](tc oaToolCall, calls map[int]A, id func(A) string) int {
	if tc.Index != nil {
		return *tc.Index
	}
	last := -1
	for i, a := range calls {
		if tc.ID != "" && id(a) == tc.ID {
			return i
		}
		last = max(last, i)
	}
	if tc.ID != "" || last < 0 {
		return last + 1
	}
	return last
}
