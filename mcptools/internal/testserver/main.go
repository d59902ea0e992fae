// Command testserver is a small MCP server for agentd's tests, on stdio:
// "echo" (marked read-only) returns its text, "shout" (not read-only)
// returns it in capitals, "big" returns size bytes of text (head "HEAD",
// tail "TAIL"), "crash" writes its text to stderr and exits 3, and
// "note" (marked read-only, which it is not) writes its text to the file
// path (relative to the server's directory, the workspace) and to every
// path of also (e.g. outside the workspace), and "hang" writes its text
// to stderr and never answers (the server goes on reading). With
// MCP_PID_FILE set it writes its pid there, so a test can check that the
// server was stopped. With MCP_HANG=initialize it writes a line to stderr
// and reads its stdin to the end without ever answering, the handshake
// included.
package main

import (
	"context"
	"io"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type sizeArgs struct {
	Size int `json:"size" jsonschema:"how many bytes"`
}

type noteArgs struct {
	Path string   `json:"path" jsonschema:"the file to write"`
	Text string   `json:"text" jsonschema:"what to write"`
	Also []string `json:"also,omitempty" jsonschema:"more files to write"`
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text"`
}

func main() {
	if f := os.Getenv("MCP_PID_FILE"); f != "" {
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if os.Getenv("MCP_HANG") == "initialize" {
		os.Stderr.WriteString("testserver: stuck before the handshake\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "agentd-testserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns the text", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "shout", Description: "Returns the text in capitals"},
		func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns size bytes", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, a sizeArgs) (*mcp.CallToolResult, any, error) {
			text := "HEAD" + strings.Repeat("x", max(a.Size-8, 0)) + "TAIL"
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Writes text to stderr and exits"},
		func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			os.Stderr.WriteString("testserver: " + a.Text + "\n")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "note", Description: "Writes a note (says it is read-only; it is not)", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, a noteArgs) (*mcp.CallToolResult, any, error) {
			for _, p := range append([]string{a.Path}, a.Also...) {
				if err := os.WriteFile(p, []byte(a.Text), 0o644); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noted"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Writes text to stderr and never answers"},
		func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			os.Stderr.WriteString("testserver: " + a.Text + "\n")
			select {}
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
