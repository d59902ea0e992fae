// Command testserver is a small MCP server for agentd's tests, on stdio:
// "echo" (marked read-only) returns its text, "shout" (not read-only)
// returns it in capitals, "big" returns size bytes of text (head "HEAD",
// tail "TAIL"), and "crash" writes its text to stderr and exits 3. With MCP_PID_FILE set it writes its pid there,
// so a test can check that the server was stopped.
package main

import (
	"context"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type sizeArgs struct {
	Size int `json:"size" jsonschema:"how many bytes"`
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
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
