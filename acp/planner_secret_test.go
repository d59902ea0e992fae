package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestPlannerSecretReadAsks: in an ACP session the planner's exploration
// asks (session/request_permission) before its model reads .env: rejected,
// no request the model gets holds the secret; allowed, the next one does.
func TestPlannerSecretReadAsks(t *testing.T) {
	const secret = "ENV_SECRET_acp_5d21"
	for _, answer := range []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindAllowOnce} {
		t.Run(string(answer), func(t *testing.T) {
			fake := fakemodel.New()
			url := fake.Start(t)
			ws := t.TempDir()
			for p, c := range map[string]string{".env": "TOKEN=" + secret + "\n", "main.go": "package main\n"} {
				if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := &testClient{answer: string(answer)}
			conn, stop := start(t, c, modelOptions(url, t.TempDir()))
			defer stop()
			ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, "")
			fake.Push(
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Args: `{"path":".env","why":"config"}`}}},
				fakemodel.Reply{Text: `{"title":"t","steps":[{"id":"a","tool":"list_dir","args":{"path":"."}}]}`},
			)
			if _, err := conn.Prompt(boundedCtx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("look around")}}); err != nil {
				t.Fatal(err)
			}
			reqs := fake.Requests()
			if len(reqs) < 2 {
				t.Fatalf("%d model requests, want the exploration's two", len(reqs))
			}
			for i, r := range reqs {
				has := strings.Contains(string(r.Body), secret)
				if want := answer == sdk.PermissionOptionKindAllowOnce && i >= 1; has != want {
					t.Errorf("answered %s: model request %d holds the secret: %v, want %v", answer, i, has, want)
				}
			}
			c.mu.Lock()
			var titles []string
			for _, a := range c.asked {
				if a.ToolCall.Title != nil {
					titles = append(titles, *a.ToolCall.Title)
				}
			}
			c.mu.Unlock()
			if len(titles) != 1 || !strings.Contains(titles[0], ".env") || !strings.Contains(titles[0], "sensitive") {
				t.Errorf("permission requests %q: want one naming .env as a sensitive file", titles)
			}
		})
	}
}
