package mcptools

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartNamesTheServerThatFails: a server that cannot start is an
// error naming it, two servers with one name are refused, and a server
// with neither a command nor a url says what to give.
func TestStartNamesTheServerThatFails(t *testing.T) {
	set, errs := Start(context.Background(), []Server{
		{Name: "gone", Command: filepath.Join(t.TempDir(), "no-such-server")},
		{Name: "empty"},
	}, Options{Timeout: 5 * time.Second})
	defer set.Close()
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), `MCP server "gone"`) || !strings.Contains(errs[1].Error(), "give a command (stdio) or a url (http)") {
		t.Fatalf("errors: %v", errs)
	}
	if len(set.Tools()) != 0 {
		t.Fatalf("tools: %v", set.Tools())
	}
	_, errs = Start(context.Background(), []Server{{Name: "a b", URL: "http://127.0.0.1:1"}, {Name: "a_b", URL: "http://127.0.0.1:1"}}, Options{Timeout: 2 * time.Second})
	if len(errs) != 2 || !strings.Contains(errs[1].Error(), "same name") {
		t.Fatalf("same-name servers: %v", errs)
	}
}

func TestToolNames(t *testing.T) {
	for in, want := range map[string]string{"git hub": "git_hub", "a.b/c": "a_b_c", "": "server", "ok-1_x": "ok-1_x"} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
