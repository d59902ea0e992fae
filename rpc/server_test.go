package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentd/agentd/workspace"
)

func TestInitializeAndShutdown(t *testing.T) {
	ed := startEditor(t, Options{Version: "1.2.3"}, nil)
	// Before initialize every request is refused with -32008.
	err := ed.call("agentd/plan/list", map[string]any{}, nil)
	if errCode(err) != CodeNotInitialized {
		t.Fatalf("before initialize: got %v, want code %d", err, CodeNotInitialized)
	}
	res := ed.initialize("", nil)
	if res.ServerInfo.Name != "agentd" || res.ServerInfo.Version != "1.2.3" {
		t.Errorf("serverInfo = %+v", res.ServerInfo)
	}
	sync := res.Capabilities.TextDocumentSync
	if !sync.OpenClose || sync.Change != 2 || !sync.Save {
		t.Errorf("textDocumentSync = %+v, want openClose, incremental, save", sync)
	}
	if res.Capabilities.Experimental.Agentd.ProtocolVersion != ProtocolVersion {
		t.Errorf("protocolVersion = %d", res.Capabilities.Experimental.Agentd.ProtocolVersion)
	}
	if err := ed.call("initialize", map[string]any{}, nil); errCode(err) != jsonrpc2.InvalidRequest {
		t.Errorf("second initialize: %v, want invalid request", err)
	}
	if err := ed.call("agentd/no/such", map[string]any{}, nil); errCode(err) != jsonrpc2.MethodNotFound {
		t.Errorf("unknown method: %v, want -32601", err)
	}
	var list []PlanSummary
	ed.mustCall("agentd/plan/list", nil, &list)
	if len(list) != 0 {
		t.Errorf("plan list = %v, want empty", list)
	}
	ed.mustCall("shutdown", nil, nil)
	if err := ed.call("agentd/plan/list", nil, nil); errCode(err) != jsonrpc2.InvalidRequest {
		t.Errorf("after shutdown: %v, want invalid request", err)
	}
	ed.notify("exit", nil)
	select {
	case err := <-ed.done:
		if err != nil {
			t.Errorf("Serve after shutdown+exit = %v, want nil", err)
		}
		ed.done <- err // for the cleanup
	case <-time.After(waitTimeout):
		t.Fatal("server did not exit")
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	ed := startEditor(t, Options{}, nil)
	ed.initialize("", nil)
	ed.notify("exit", nil)
	select {
	case err := <-ed.done:
		if !errors.Is(err, ErrExitWithoutShutdown) {
			t.Errorf("Serve = %v, want ErrExitWithoutShutdown", err)
		}
		ed.done <- err
	case <-time.After(waitTimeout):
		t.Fatal("server did not exit")
	}
}

func TestBadParamsNameTheField(t *testing.T) {
	ed := startEditor(t, Options{}, nil)
	ed.initialize("", nil)
	err := ed.call("agentd/run/get", map[string]any{"runId": 42}, nil)
	var we *jsonrpc2.Error
	if !errors.As(err, &we) || we.Code != jsonrpc2.InvalidParams {
		t.Fatalf("got %v, want -32602", err)
	}
	var data struct {
		Field string `json:"field"`
	}
	if err := json.Unmarshal(we.Data, &data); err != nil || data.Field != "runId" {
		t.Errorf("data = %s, want field runId", we.Data)
	}
	if err := ed.call("agentd/run/get", map[string]any{"runId": "nope"}, nil); errCode(err) != CodeNotFound {
		t.Errorf("unknown run: %v, want -32003", err)
	}
	if err := ed.call("agentd/plan/create", map[string]any{"request": "do it"}, nil); errCode(err) != CodeNoModel ||
		!strings.Contains(err.Error(), "AGENTD_MODEL") || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Errorf("plan/create without a model: %v, want -32006 saying how to configure one", err)
	}
}

// TestDidChangeOrder sends 10,000 incremental edits; the buffer must be
// exactly what applying them in order gives.
func TestDidChangeOrder(t *testing.T) {
	ed := startEditor(t, Options{}, nil)
	root := t.TempDir()
	ed.initialize(root, nil)
	uri := pathToURI(filepath.Join(root, "order.txt"))
	ed.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "text", "version": 1, "text": ""}})
	const n = 10000
	var want strings.Builder
	line, col := 0, 0
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("%d,", i)
		if i%10 == 9 {
			text = fmt.Sprintf("%d\n", i)
		}
		want.WriteString(text)
		pos := map[string]int{"line": line, "character": col}
		ed.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": i + 2},
			"contentChanges": []any{map[string]any{"range": map[string]any{"start": pos, "end": pos}, "text": text}},
		})
		if strings.HasSuffix(text, "\n") {
			line, col = line+1, 0
		} else {
			col += len(text)
		}
	}
	// A request after the notifications is answered after they were handled.
	ed.mustCall("agentd/plan/list", nil, nil)
	// The workspace overlay (what tools read) is the text.
	ws, err := ed.srv.workspace()
	if err != nil {
		t.Fatal(err)
	}
	got, v, ok := ws.Overlay("order.txt")
	if !ok || string(got) != want.String() || v != n+1 {
		t.Errorf("workspace overlay: open %v, version %d, %d bytes; want version %d, %d bytes", ok, v, len(got), n+1, want.Len())
	}
}

func TestHandlerPanicKeepsServing(t *testing.T) {
	ed := startEditor(t, Options{}, func(s *Server) {
		s.methods["test/panic"] = method{call: func(*Server, context.Context, json.RawMessage) (any, error) { panic("boom") }}
		s.methods["test/panicAsync"] = method{async: true, call: func(*Server, context.Context, json.RawMessage) (any, error) { panic("boom") }}
	})
	ed.initialize("", nil)
	for _, m := range []string{"test/panic", "test/panicAsync"} {
		if err := ed.call(m, nil, nil); errCode(err) != jsonrpc2.InternalError {
			t.Errorf("%s: %v, want internal error", m, err)
		}
	}
	ed.mustCall("agentd/plan/list", nil, nil)
}

func workspacePos(line, char int) workspace.Position {
	return workspace.Position{Line: line, Character: char}
}
