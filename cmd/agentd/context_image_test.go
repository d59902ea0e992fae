package main

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestServePastedImages drives the built binary over the fake model
// server, with a vision profile in the user's config: agentd/model/get
// says the model takes images; agentd/context/size estimates a pasted
// PNG's tokens from its dimensions; plan/create and chat/ask send it to
// the model as an image part (an image_url data URL) of the user
// message, byte for byte. With a model not configured for images (set
// with agentd/model/set), the size carries the refusal and both requests
// are refused with -32602 on context.items, saying how to configure
// vision, before any model call.
func TestServePastedImages(t *testing.T) {
	ws := demoCopy(t)
	srv := fakemodel.New()
	url := srv.Start(t)
	srv.Push(
		fakemodel.Reply{Text: `{"title":"List","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`},
		fakemodel.Reply{Text: "A blank picture."},
	)
	xdg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdg, "agentd"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"model": "eyes", "profiles": {"eyes": {"provider": "openai", "model": "gpt-4o", "vision": true}}}`
	if err := os.WriteFile(filepath.Join(xdg, "agentd", "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startServe(t, "XDG_CONFIG_HOME="+xdg, "AGENTD_MODEL=", "OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
	initialize(c, ws)

	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 600, 100))); err != nil {
		t.Fatal(err)
	}
	pic := b.Bytes()
	items := []any{map[string]any{"text": "be brief", "title": "note"},
		map[string]any{"image": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(pic)}}}
	ctxItems := map[string]any{"items": items}

	info := c.call("agentd/model/get", map[string]any{})
	if res, _ := info["result"].(map[string]any); res["vision"] != true {
		t.Fatalf("model/get with a vision profile: %v", info)
	}
	size := c.call("agentd/context/size", map[string]any{"items": items})
	got, _ := size["result"].(map[string]any)["items"].([]any)
	if len(got) != 2 {
		t.Fatalf("context/size: %v", size)
	}
	if im := got[1].(map[string]any); im["tokens"] != float64(425) || im["title"] != "image (PNG 600x100)" || im["error"] != nil {
		t.Fatalf("the image's size: %v", im)
	}

	chat := c.call("agentd/chat/new", map[string]any{})
	id, _ := chat["result"].(map[string]any)["chatId"].(string)
	if r := c.call("agentd/plan/create", map[string]any{"request": "do what the picture says", "chatId": id, "context": ctxItems,
		"exploreRounds": -1, "mapTokens": -1}); r["error"] != nil {
		t.Fatalf("plan/create with an image: %v", r["error"])
	}
	if r := c.call("agentd/chat/ask", map[string]any{"chatId": id, "question": "what is in the picture?", "context": ctxItems}); r["error"] != nil {
		t.Fatalf("chat/ask with an image: %v", r["error"])
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	for i, r := range reqs {
		if len(r.Images) != 1 || r.Images[0].Err != "" || r.Images[0].Role != "user" || r.Images[0].MIMEType != "image/png" ||
			!bytes.Equal(r.Images[0].Data, pic) {
			t.Errorf("model call %d's images: %+v", i, r.Images)
		}
		if !strings.Contains(string(r.Body), `data:image/png;base64,`) || !strings.Contains(string(r.Body), "image (PNG 600x100)") {
			t.Errorf("model call %d does not carry the image as a data URL and name it: %.400s", i, r.Body)
		}
	}

	// A model not configured for images: the chip says why, the requests
	// are refused naming the item, and the model is not called.
	if r := c.call("agentd/model/set", map[string]any{"model": "openai:gpt-4o"}); r["error"] != nil {
		t.Fatalf("model/set: %v", r["error"])
	}
	if info := c.call("agentd/model/get", map[string]any{}); info["result"].(map[string]any)["vision"] != false {
		t.Fatalf("model/get without vision: %v", info)
	}
	size = c.call("agentd/context/size", map[string]any{"items": items})
	im := size["result"].(map[string]any)["items"].([]any)[1].(map[string]any)
	if e, _ := im["error"].(string); im["tokens"] != float64(425) || !strings.Contains(e, `"vision": true`) {
		t.Fatalf("the image's size with a model that takes none: %v", im)
	}
	for _, r := range []map[string]any{
		c.call("agentd/plan/create", map[string]any{"request": "do what the picture says", "context": ctxItems, "exploreRounds": -1, "mapTokens": -1}),
		c.call("agentd/chat/ask", map[string]any{"chatId": id, "question": "what is in the picture?", "context": ctxItems}),
	} {
		e, _ := r["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		msg, _ := e["message"].(string)
		if e["code"] != float64(-32602) || data["field"] != "context.items" || !strings.Contains(msg, "context item 2") ||
			!strings.Contains(msg, `"vision": true`) {
			t.Errorf("a request with an image to a model that takes none: %v", r)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d model calls after the refusals, want still 2", n)
	}
}
