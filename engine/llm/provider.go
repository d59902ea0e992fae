package llm

import (
	"context"
	"encoding/json"
)

// Message is one chat message in provider-neutral form.
type Message struct {
	Role       string     // "user", "assistant" or "tool"
	Content    string     // text (for "tool": the tool result)
	ToolCalls  []ToolCall // assistant tool calls
	ToolCallID string     // for "tool": the call answered
}

// ToolCall is one function call the model asked for.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// OutputSchema asks for structured output conforming to Schema.
type OutputSchema struct {
	Name   string
	Schema json.RawMessage
}

// Request is one model call.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolDef
	MaxTokens int
	// JSON asks for structured output (OpenAI response_format, Anthropic a
	// forced tool whose input is the answer). Response.Text is the JSON.
	JSON *OutputSchema
	// OnText, if set, streams the answer's text as it arrives (SSE).
	OnText func(string)
}

// Response is a model's answer.
type Response struct {
	Text       string
	ToolCalls  []ToolCall
	Usage      Usage
	StopReason string
}

// Usage is the tokens of one call.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Provider sends one request, once (Client adds retries, budget and costs).
// Errors are *Error.
type Provider interface {
	// Name is the provider kind ("openai", "anthropic") for messages.
	Name() string
	Send(ctx context.Context, req *Request) (*Response, error)
}
