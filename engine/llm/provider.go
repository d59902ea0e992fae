package llm

import (
	"context"
	"encoding/json"
)

// Message is one chat message in provider-neutral form.
type Message struct {
	Role       string     // "user", "assistant" or "tool"
	Content    string     // text (for "tool": the tool result)
	Images     []Image    // for "user": images after the text (a model with Spec.Vision)
	ToolCalls  []ToolCall // assistant tool calls
	ToolCallID string     // for "tool": the call answered
}

// Image is an image a user message carries: its bytes and MIME type
// (image/png, image/jpeg, image/gif, image/webp). Only a model configured
// with vision (Profile.Vision) is sent images; CheckImages says whether
// one may be.
type Image struct {
	MIMEType string
	Data     []byte
}

// MaxImageBytes bounds one image (decoded), and MaxImagesBytes all the
// images of one request: the providers' own limits are near these
// (Anthropic 5 MB an image and 32 MB a request; OpenAI 20 MB an image).
const (
	MaxImageBytes  = 20 << 20
	MaxImagesBytes = 32 << 20
)

// ImageMIMETypes are the image types the providers take.
var ImageMIMETypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

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
