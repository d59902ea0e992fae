package session

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"strings"
	"testing"
)

// pngOf is a w x h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The image estimate is OpenAI's high-detail rule (its documented
// examples: 1024x1024 is 765, 2048x4096 is 1105), read from the image's
// own dimensions; WebP is the fixed estimate; an image that is not what it
// says is an error.
func TestImageTokens(t *testing.T) {
	for _, c := range []struct{ w, h, want int }{
		{1, 1, 255}, {600, 100, 425}, {1024, 1024, 765}, {2048, 4096, 1105}, {4096, 8192, 1105}, {512, 513, 425},
	} {
		got, w, h, err := ImageTokens(Image{MIMEType: "image/png", Data: pngOf(t, c.w, c.h)})
		if err != nil || got != c.want || w != c.w || h != c.h {
			t.Errorf("%dx%d: %d tokens (%dx%d, %v), want %d", c.w, c.h, got, w, h, err, c.want)
		}
	}
	if got, _, _, err := ImageTokens(Image{MIMEType: "image/webp", Data: []byte("RIFF....WEBP")}); err != nil || got != WebPImageTokens {
		t.Errorf("webp: %d, %v", got, err)
	}
	if _, _, _, err := ImageTokens(Image{MIMEType: "image/jpeg", Data: pngOf(t, 2, 2)}); err == nil || !strings.Contains(err.Error(), "is image/png") {
		t.Errorf("a PNG said to be JPEG: %v", err)
	}
	if _, _, _, err := ImageTokens(Image{MIMEType: "image/tiff", Data: pngOf(t, 2, 2)}); err == nil || !strings.Contains(err.Error(), "image/tiff") {
		t.Errorf("a TIFF: %v", err)
	}
}

// An image item's size names it and its dimensions; the check's refusal
// is its error; ContextImages names the item it refuses.
func TestImageContextSize(t *testing.T) {
	item := &ContextImage{MIMEType: "image/png", Data: base64.StdEncoding.EncodeToString(pngOf(t, 600, 100))}
	got := imageSize(item, nil)
	if got.Title != "image (PNG 600x100)" || got.Tokens != 425 || got.Error != "" {
		t.Fatalf("size %+v", got)
	}
	no := func([]Image) error { return errString("the model m is not configured to take images") }
	if got := imageSize(item, no); got.Tokens != 425 || !strings.Contains(got.Error, "not configured to take images") {
		t.Fatalf("refused size %+v", got)
	}
	items := []ContextEntry{{Text: "x", Title: "t"}, {Image: item}}
	if imgs, err := ContextImages(items, nil); err != nil || len(imgs) != 1 || imgs[0].MIMEType != "image/png" {
		t.Fatalf("images %v, %v", imgs, err)
	}
	if _, err := ContextImages(items, no); err == nil || !strings.HasPrefix(err.Error(), "context item 2: ") {
		t.Fatalf("refused: %v", err)
	}
	bad := []ContextEntry{{Image: &ContextImage{MIMEType: "image/png", Data: "not base64!"}}}
	if _, err := ContextImages(bad, nil); err == nil || !strings.Contains(err.Error(), "context item 1: the image's data is not base64") {
		t.Fatalf("broken data: %v", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
