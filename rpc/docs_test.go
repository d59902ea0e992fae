package rpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestProtocolDocMatchesServer checks docs/protocol.md against the
// registered methods: every documented client->server method is
// registered, every registered method is documented, and every
// server->client method is documented, with params, a direction and a
// JSON example.
func TestProtocolDocMatchesServer(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	if err != nil {
		t.Fatalf("reading docs/protocol.md: %v", err)
	}
	heading := regexp.MustCompile("(?m)^### `([^`]+)`\\s*$")
	locs := heading.FindAllStringSubmatchIndex(string(data), -1)
	if len(locs) == 0 {
		t.Fatal("no methods documented")
	}
	docIn, docOut := map[string]bool{}, map[string]bool{}
	for i, loc := range locs {
		name := string(data[loc[2]:loc[3]])
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := string(data[loc[1]:end])
		switch {
		case strings.Contains(body, "Direction: client → server"):
			docIn[name] = true
		case strings.Contains(body, "Direction: server → client"):
			docOut[name] = true
		default:
			t.Errorf("%s: no \"Direction:\" line", name)
		}
		if !strings.Contains(body, "```json") || !strings.Contains(body, `"method":"`+name+`"`) {
			t.Errorf("%s: no JSON example using the method", name)
		}
		if !strings.Contains(body, "Params") && !strings.Contains(body, "params") {
			t.Errorf("%s: params not described", name)
		}
	}
	registered := Methods()
	for _, m := range registered {
		if !docIn[m] {
			t.Errorf("%s is registered but not documented in docs/protocol.md", m)
		}
	}
	for m := range docIn {
		if !slices.Contains(registered, m) {
			t.Errorf("%s is documented but not registered", m)
		}
	}
	for _, m := range ServerToClient {
		if !docOut[m] {
			t.Errorf("server->client %s is not documented", m)
		}
	}
	for m := range docOut {
		if !slices.Contains(ServerToClient, m) {
			t.Errorf("%s is documented as server->client but the server does not send it", m)
		}
	}
	// The agentd/ methods the server sends appear in its code.
	var src strings.Builder
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, _ := os.ReadFile(f)
		src.Write(b)
	}
	for _, m := range ServerToClient {
		if strings.HasPrefix(m, "agentd/") && strings.Count(src.String(), `"`+m+`"`) < 2 {
			t.Errorf("%s is listed but never sent", m)
		}
	}
}

// TestDocumentedDefaultPolicy holds the agentd/policy/get example, which
// shows the defaults, against what a fresh server answers.
func TestDocumentedDefaultPolicy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\{"jsonrpc":"2.0","id":27,"result":(.*)\}$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("no agentd/policy/get example result in docs/protocol.md")
	}
	var documented map[string]any
	if err := json.Unmarshal(m[1], &documented); err != nil {
		t.Fatalf("the policy/get example is not JSON: %v", err)
	}
	delete(documented, "rules")
	ed := startEditor(t, Options{}, nil)
	ed.initialize(t.TempDir(), nil)
	var got map[string]any
	ed.mustCall("agentd/policy/get", map[string]any{}, &got)
	delete(got, "rules")
	if !reflect.DeepEqual(documented, got) {
		t.Errorf("documented defaults %v\nserver's defaults    %v", documented, got)
	}
}
