package llm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// anthropicVersion is the Messages API version we speak.
const anthropicVersion = "2023-06-01"

// defaultAnthropicMaxTokens: the Messages API requires max_tokens.
const defaultAnthropicMaxTokens = 4096

// anthropic speaks the Anthropic Messages API.
type anthropic struct {
	httpBase
}

func (p *anthropic) Name() string { return p.name }

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	Source    *anSource       `json:"source,omitempty"`
}

// anSource is an image block's data.
type anSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

type anUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// forcedTool is the tool whose input is a structured answer.
const forcedTool = "respond"

func (p *anthropic) body(req *Request, stream bool) map[string]any {
	var msgs []anMessage
	add := func(role string, b anBlock) {
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, b)
			return
		}
		msgs = append(msgs, anMessage{Role: role, Content: []anBlock{b}})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "tool":
			add("user", anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		case "assistant":
			if m.Content != "" {
				add("assistant", anBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				in := tc.Args
				if len(in) == 0 || !json.Valid(in) {
					in = json.RawMessage("{}")
				}
				add("assistant", anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: in})
			}
		default:
			if m.Content != "" || len(m.Images) == 0 {
				add("user", anBlock{Type: "text", Text: m.Content})
			}
			for _, img := range m.Images {
				add("user", anBlock{Type: "image", Source: &anSource{Type: "base64", MediaType: img.MIMEType,
					Data: base64.StdEncoding.EncodeToString(img.Data)}})
			}
		}
	}
	mt := req.MaxTokens
	if mt <= 0 {
		mt = defaultAnthropicMaxTokens
	}
	b := map[string]any{"model": req.Model, "messages": msgs, "max_tokens": mt}
	if req.System != "" {
		b["system"] = req.System
	}
	var ts []map[string]any
	for _, t := range req.Tools {
		ts = append(ts, map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.Schema})
	}
	if req.JSON != nil {
		ts = append(ts, map[string]any{"name": forcedTool, "description": "Give your answer (" + req.JSON.Name + ") as this tool's input.",
			"input_schema": req.JSON.Schema})
		b["tool_choice"] = map[string]any{"type": "tool", "name": forcedTool}
	}
	if len(ts) > 0 {
		b["tools"] = ts
	}
	if stream {
		b["stream"] = true
	}
	return b
}

func (p *anthropic) header() http.Header {
	h := http.Header{}
	if p.key != "" {
		h.Set("x-api-key", p.key)
	}
	h.Set("anthropic-version", anthropicVersion)
	return h
}

func (p *anthropic) Send(ctx context.Context, req *Request) (*Response, error) {
	stream := req.OnText != nil
	resp, cancel, err := p.post(ctx, req.Model, "/v1/messages", p.header(), p.body(req, stream))
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	var out *Response
	if !stream {
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, p.transport(ctx, resp.Request.Context(), req.Model, err, true)
		}
		var r struct {
			Content    []anBlock `json:"content"`
			Usage      anUsage   `json:"usage"`
			StopReason string    `json:"stop_reason"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, p.malformed(req.Model, fmt.Errorf("reading the answer: %w", err))
		}
		out = &Response{StopReason: r.StopReason, Usage: Usage{r.Usage.InputTokens, r.Usage.OutputTokens}}
		for _, b := range r.Content {
			switch b.Type {
			case "text":
				out.Text += b.Text
			case "tool_use":
				out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: rawArgs(string(b.Input))})
			}
		}
	} else {
		out, err = p.readStream(ctx, resp, req)
		if err != nil {
			return nil, err
		}
	}
	if req.JSON != nil {
		// The forced tool's input is the answer.
		var rest []ToolCall
		for _, tc := range out.ToolCalls {
			if tc.Name == forcedTool {
				out.Text = string(tc.Args)
				continue
			}
			rest = append(rest, tc)
		}
		out.ToolCalls = rest
	}
	return out, nil
}

func (p *anthropic) readStream(ctx context.Context, resp *http.Response, req *Request) (*Response, error) {
	sse := newSSEReader(resp.Body)
	out := &Response{}
	var text strings.Builder
	type block struct {
		typ, id, name string
		input         strings.Builder
	}
	blocks := map[int]*block{}
	var order []int
	done := false
	for !done {
		ev, err := sse.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, p.transport(ctx, resp.Request.Context(), req.Model, err, true)
		}
		if strings.TrimSpace(ev.Data) == "" {
			continue
		}
		var d struct {
			Type         string                  `json:"type"`
			Index        int                     `json:"index"`
			Message      struct{ Usage anUsage } `json:"message"`
			ContentBlock anBlock                 `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage *anUsage        `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
			return nil, p.malformed(req.Model, fmt.Errorf("reading a stream event: %w", err))
		}
		switch d.Type {
		case "message_start":
			out.Usage.InputTokens = d.Message.Usage.InputTokens
			out.Usage.OutputTokens = d.Message.Usage.OutputTokens
		case "content_block_start":
			b := &block{typ: d.ContentBlock.Type, id: d.ContentBlock.ID, name: d.ContentBlock.Name}
			if b.typ == "text" && d.ContentBlock.Text != "" {
				text.WriteString(d.ContentBlock.Text)
			}
			blocks[d.Index] = b
			order = append(order, d.Index)
		case "content_block_delta":
			b := blocks[d.Index]
			if b == nil {
				return nil, p.malformed(req.Model, fmt.Errorf("delta for unknown content block %d", d.Index))
			}
			switch d.Delta.Type {
			case "text_delta":
				text.WriteString(d.Delta.Text)
				if req.JSON == nil {
					req.OnText(d.Delta.Text)
				}
			case "input_json_delta":
				b.input.WriteString(d.Delta.PartialJSON)
			}
		case "message_delta":
			if d.Delta.StopReason != "" {
				out.StopReason = d.Delta.StopReason
			}
			if d.Usage != nil {
				out.Usage.OutputTokens = d.Usage.OutputTokens
				if d.Usage.InputTokens > 0 {
					out.Usage.InputTokens = d.Usage.InputTokens
				}
			}
		case "message_stop":
			done = true
		case "error":
			e := &Error{Provider: p.name, Model: req.Model, Kind: ErrServer, Hint: "the provider reported an error mid-answer (overloaded?); retried"}
			e.Message = p.redactor().redact(serverMessage([]byte(`{"error":` + string(d.Error) + `}`)))
			return nil, e
		}
	}
	if !done {
		return nil, &Error{Provider: p.name, Model: req.Model, Kind: ErrStream,
			Message: "the stream ended without message_stop", Hint: "the answer stream broke off; retried"}
	}
	out.Text = text.String()
	for _, i := range order {
		b := blocks[i]
		if b.typ == "tool_use" {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.id, Name: b.name, Args: rawArgs(b.input.String())})
		}
	}
	return out, nil
}
