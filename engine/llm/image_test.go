package llm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
)

// png1 is a 1x1 PNG.
var png1 = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")

// visionSettings are tcp settings whose default is a profile "eyes" of
// model with the given vision flag.
func visionSettings(t *testing.T, srv *fakemodel.Server, model string, vision bool) *Settings {
	s := tcpSettings(t, srv, "eyes")
	prov, name, _ := strings.Cut(model, ":")
	s.Profiles = map[string]Profile{"eyes": {Provider: prov, Model: name, Vision: vision}}
	return s
}

// TestProvidersSendImages checks the real HTTP provider code puts a user
// message's images on the wire as each API defines them, decoded back to
// the same bytes by the fake model server, after the message's text.
func TestProvidersSendImages(t *testing.T) {
	for _, model := range []string{"openai:gpt-4o", "anthropic:claude-sonnet-4"} {
		for _, stream := range []bool{false, true} {
			t.Run(model+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				srv := fakemodel.New()
				srv.Push(fakemodel.Reply{Text: "a red dot"})
				c := mustClient(t, visionSettings(t, srv, model, true))
				req := &Request{Messages: []Message{{Role: "user", Content: "what is this?", Images: []Image{
					{MIMEType: "image/png", Data: png1}, {MIMEType: "image/jpeg", Data: []byte("\xff\xd8\xff not really")}}}}}
				if stream {
					req.OnText = func(string) {}
				}
				resp, _, err := c.Call(t.Context(), nil, req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != "a red dot" {
					t.Fatalf("text %q", resp.Text)
				}
				r := srv.Requests()[0]
				if len(r.Images) != 2 {
					t.Fatalf("the server saw %d images: %s", len(r.Images), r.Body)
				}
				for i, want := range req.Messages[0].Images {
					got := r.Images[i]
					if got.Err != "" || got.Role != "user" || got.MIMEType != want.MIMEType || !bytes.Equal(got.Data, want.Data) {
						t.Errorf("image %d: %+v", i, got)
					}
				}
				if !strings.Contains(lastUserText(t, r), "what is this?") {
					t.Errorf("the text is gone: %s", r.Body)
				}
			})
		}
	}
}

// TestPlannerSendsImages: a plan request with images sends them with the
// request to a vision model, and is refused before any call otherwise,
// naming the model and the setting.
func TestPlannerSendsImages(t *testing.T) {
	ws := newWorkspace(t, sampleFiles)
	img := []Image{{MIMEType: "image/png", Data: png1}}

	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: validPlan})
	pl := NewPlanner(visionSettings(t, srv, "openai:gpt-4o", true), tools.Builtin())
	if _, err := pl.Create(t.Context(), CreateRequest{Request: "do what the picture says", Workspace: ws, ExploreRounds: -1, Images: img}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Images; len(got) != 1 || !bytes.Equal(got[0].Data, png1) {
		t.Fatalf("the plan request's images: %+v", got)
	}

	srv = fakemodel.New()
	pl = NewPlanner(visionSettings(t, srv, "openai:gpt-4o", false), tools.Builtin())
	_, err := pl.Create(t.Context(), CreateRequest{Request: "do what the picture says", Workspace: ws, Images: img})
	if err == nil || !strings.Contains(err.Error(), "eyes") || !strings.Contains(err.Error(), `"vision": true`) {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d model calls for a refused image", n)
	}
}

func TestCheckImages(t *testing.T) {
	srv := fakemodel.New()
	s := visionSettings(t, srv, "openai:gpt-4o", true)
	for _, c := range []struct {
		imgs []Image
		want string
	}{
		{[]Image{{MIMEType: "image/png", Data: png1}}, ""},
		{[]Image{{MIMEType: "image/tiff", Data: png1}}, `the image is "image/tiff"`},
		{[]Image{{MIMEType: "image/png", Data: png1}, {MIMEType: "image/png", Data: make([]byte, MaxImageBytes+1)}}, "image 2 is 20.0 MiB, over the limit of 20 MiB"},
		{[]Image{{MIMEType: "image/png", Data: make([]byte, 17<<20)}, {MIMEType: "image/png", Data: make([]byte, 17<<20)}}, "over the limit of 32 MiB a prompt"},
	} {
		err := s.CheckImages("", c.imgs)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d images: err = %v, want %q", len(c.imgs), err, c.want)
		}
	}
	// A provider:model name is no profile: the error shows the profile to add.
	s.Model = "openai:gpt-4o"
	err := s.CheckImages("", []Image{{MIMEType: "image/png", Data: png1}})
	if err == nil || !strings.Contains(err.Error(), `"provider": "openai", "model": "gpt-4o", "vision": true`) {
		t.Fatalf("err = %v", err)
	}
}
