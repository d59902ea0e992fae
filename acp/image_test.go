package acp

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
)

// visionOptions are modelOptions whose default model is the profile
// "eyes" of the user's config file, with vision as given.
func visionOptions(t *testing.T, url, state string, vision bool) Options {
	t.Helper()
	cfg := fmt.Sprintf(`{"profiles": {"eyes": {"provider": "openai", "model": "fake-vision", "vision": %v}}}`, vision)
	if err := os.MkdirAll(filepath.Join(state, "agentd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "agentd", "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	o := modelOptions(url, state)
	get := o.Getenv
	o.Getenv = func(k string) string {
		if k == "AGENTD_MODEL" {
			return "eyes"
		}
		return get(k)
	}
	return o
}

// TestImagesReachAVisionModel: with a model configured with vision,
// initialize advertises promptCapabilities.image and a prompt's image goes
// with the plan request, through the real provider code, to the model
// server, which decodes the same bytes from its image part. Without
// vision it is not advertised and the prompt is refused before any call.
func TestImagesReachAVisionModel(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n not a real picture")
	for _, vision := range []bool{true, false} {
		t.Run(fmt.Sprint("vision=", vision), func(t *testing.T) {
			fake := fakemodel.New()
			url := fake.Start(t)
			ws, state := t.TempDir(), t.TempDir()
			c := &testClient{}
			conn, stop := start(t, c, visionOptions(t, url, state, vision))
			defer stop()
			ctx := boundedCtx(t)
			ir, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
			if err != nil {
				t.Fatal(err)
			}
			if ir.AgentCapabilities.PromptCapabilities.Image != vision {
				t.Fatalf("promptCapabilities.image = %v with vision %v", ir.AgentCapabilities.PromptCapabilities.Image, vision)
			}
			ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: modePlanOnly}); err != nil {
				t.Fatal(err)
			}
			if vision {
				fake.Push(fakemodel.Reply{Text: `{"title":"Note","steps":[{"id":"w","tool":"write_file","args":{"path":"note.txt","content":"a dot\n"}}]}`})
			}
			res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{
				sdk.TextBlock("write down what this shows"), sdk.ImageBlock(base64.StdEncoding.EncodeToString(png), "image/png")}})
			if !vision {
				var re *sdk.RequestError
				if !asRequestError(err, &re) || re.Code != -32602 || !strings.Contains(fmt.Sprint(re.Data), "the model eyes is not configured to take images") ||
					!strings.Contains(fmt.Sprint(re.Data), `"vision": true in its profile`) {
					t.Fatalf("image prompt without vision: %v %v", err, re)
				}
				if n := len(fake.Requests()); n != 0 {
					t.Fatalf("%d model calls", n)
				}
				return
			}
			if err != nil || res.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("prompt: %v %v", res.StopReason, err)
			}
			reqs := fake.Requests()
			if len(reqs) == 0 || len(reqs[0].Images) != 1 {
				t.Fatalf("the plan request carried no image: %d requests", len(reqs))
			}
			if img := reqs[0].Images[0]; img.Err != "" || img.MIMEType != "image/png" || !bytes.Equal(img.Data, png) || img.Role != "user" {
				t.Fatalf("image part: %+v", img)
			}
			// The session file keeps a note of the image, not its bytes.
			matches, _ := filepath.Glob(filepath.Join(state, "workspaces", "*", "journal", "acp", "sessions", string(ns.SessionId)+".json"))
			if len(matches) != 1 {
				t.Fatalf("saved session files: %v", matches)
			}
			saved, err := os.ReadFile(matches[0])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(saved, []byte("[image: image/png, 1 KiB]")) || bytes.Contains(saved, []byte(base64.StdEncoding.EncodeToString(png))) {
				t.Fatalf("saved session: %s", saved)
			}
		})
	}
}

// TestImagesRefusedClearly: images the providers would not take are
// refused naming the block, before any model call.
func TestImagesRefusedClearly(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{}
	conn, stop := start(t, c, visionOptions(t, url, state, true))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, modePlanOnly)
	// An image over the ACP message limit (10 MiB) never reaches the model
	// limits (llm.MaxImageBytes): the message is refused as a whole.
	big := base64.StdEncoding.EncodeToString(make([]byte, 8<<20))
	for _, tc := range []struct {
		block sdk.ContentBlock
		want  string
	}{
		{sdk.ImageBlock("aGk=", "image/tiff"), `the image is "image/tiff"`},
		{sdk.ImageBlock("not base64!", "image/png"), "not base64"},
		{sdk.ImageBlock(big, "image/png"), "an image in a prompt must fit in it too"},
		{sdk.AudioBlock("aGk=", "audio/wav"), "audio"},
	} {
		_, err := conn.Prompt(boundedCtx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("look"), tc.block}})
		var re *sdk.RequestError
		if !asRequestError(err, &re) || (re.Code != -32602 || !strings.Contains(fmt.Sprint(re.Data), "prompt[1]")) && re.Code != -32600 ||
			!strings.Contains(fmt.Sprint(re.Data)+re.Message, tc.want) {
			t.Errorf("want %q: %v %v", tc.want, err, re)
		}
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("%d model calls", n)
	}
}
