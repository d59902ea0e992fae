package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestACPStdoutIsProtocol runs `agentd acp` on a short conversation: every
// stdout line is a JSON-RPC message, logs go to stderr, and the command
// ends when stdin does.
func TestACPStdoutIsProtocol(t *testing.T) {
	t.Setenv("AGENTD_MODEL", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	ws := t.TempDir()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + jsonString(ws) + `,"mcpServers":[]}}`,
		`not json`,
	}, "\n") + "\n"
	var out, errb syncBuffer
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- runCLI(context.Background(), []string{"acp", "--state-dir", t.TempDir()}, pr, &out, &errb)
	}()
	if _, err := io.WriteString(pw, in); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), `"id":2`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to session/new:\n%s\nstderr:\n%s", out.String(), errb.String())
		}
	}
	pw.Close()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	ids := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
		if id, ok := m["id"].(float64); ok {
			ids[id] = true
		}
	}
	if !ids[1] || !ids[2] || !strings.Contains(out.String(), "-32700") {
		t.Fatalf("answers missing:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "agentd acp starting") {
		t.Fatalf("no log on stderr:\n%s", errb.String())
	}
}

func TestACPFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runCLI(context.Background(), []string{"acp", "extra"}, strings.NewReader(""), &out, &errb); code != exitUsage || out.Len() != 0 {
		t.Fatalf("extra argument: exit %d, stdout %q", code, out.String())
	}
	if code := runCLI(context.Background(), []string{"acp", "--log-level", "loud"}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Fatalf("bad log level: exit %d", code)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
