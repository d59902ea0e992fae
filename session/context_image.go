package session

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/gif" // the decoders ImageTokens reads dimensions with
	_ "image/jpeg"
	_ "image/png"
	"slices"
	"strings"

	"github.com/agentd/agentd/engine/llm"
)

// An image the user pastes as context (an editor's image chip): it goes to
// the model as an image of the request (llm.CreateRequest.Images, the path
// ACP's prompt images take), for a model configured with vision only
// (llm.Settings.CheckImages, which says how to configure one). Its size
// before sending is an estimate by OpenAI's rule for a "high detail"
// image, whatever the provider: the image scaled to fit 2048x2048, then
// its shorter side to at most 768, costs 85 tokens plus 170 for each
// 512x512 tile it covers. PNG, JPEG and GIF are measured (their headers
// are read with Go's image decoders); a WebP is not (Go has no decoder
// for it in the standard library) and counts as a 1024x1024 image, 765
// tokens.

// ContextImage is an image item: its MIME type (one of llm.ImageMIMETypes)
// and its bytes in base64.
type ContextImage struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
}

// ImageCheck says whether images may go to the model in force
// (ModelSwitch.CheckImages); nil checks the images alone, not the model.
type ImageCheck func([]Image) error

// WebPImageTokens is a WebP image's estimate: a 1024x1024 image's.
const WebPImageTokens = 765

// ImageTokens is the estimate of img's tokens (see above), and its
// dimensions (0 for WebP). An image that cannot be read as its type is an
// error.
func ImageTokens(img Image) (tokens, width, height int, err error) {
	if !slices.Contains(llm.ImageMIMETypes, img.MIMEType) {
		return 0, 0, 0, fmt.Errorf("the image is %q; the models take %s", img.MIMEType, strings.Join(llm.ImageMIMETypes, ", "))
	}
	if img.MIMEType == "image/webp" {
		return WebPImageTokens, 0, 0, nil
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("the image could not be read as %s (%v); paste it again, or save it as PNG", img.MIMEType, err)
	}
	if "image/"+format != img.MIMEType {
		return 0, 0, 0, fmt.Errorf("the image says it is %s but is image/%s; paste it again", img.MIMEType, format)
	}
	return tileTokens(cfg.Width, cfg.Height), cfg.Width, cfg.Height, nil
}

// tileTokens is OpenAI's high-detail estimate of a w x h image.
func tileTokens(w, h int) int {
	if w <= 0 || h <= 0 {
		return 85
	}
	fw, fh := float64(w), float64(h)
	if m := max(fw, fh); m > 2048 {
		fw, fh = fw*2048/m, fh*2048/m
	}
	if m := min(fw, fh); m > 768 {
		fw, fh = fw*768/m, fh*768/m
	}
	tiles := ((int(fw) + 511) / 512) * ((int(fh) + 511) / 512)
	return 85 + 170*max(tiles, 1)
}

// decode is the item's image, its data decoded from base64.
func (ci *ContextImage) decode() (Image, error) {
	data, err := base64.StdEncoding.DecodeString(ci.Data)
	if err != nil {
		return Image{}, fmt.Errorf("the image's data is not base64 (%v); the editor sent a broken image", err)
	}
	if len(data) == 0 {
		return Image{}, fmt.Errorf("the image is empty; paste it again")
	}
	return Image{MIMEType: ci.MIMEType, Data: data}, nil
}

// imageSize is an image item's size, and why it cannot be sent (the image
// unreadable, or check refusing it: the model takes no images).
func imageSize(ci *ContextImage, check ImageCheck) ContextSize {
	img, err := ci.decode()
	if err != nil {
		return ContextSize{Title: "image", Error: err.Error()}
	}
	tokens, w, h, err := ImageTokens(img)
	if err != nil {
		return ContextSize{Title: "image", Error: err.Error()}
	}
	out := ContextSize{Title: imageTitle(img, w, h), Tokens: tokens}
	if w == 0 {
		out.Note = fmt.Sprintf("a WebP image's size is not read: counted as a 1024x1024 image (%d tokens)", WebPImageTokens)
	}
	if check != nil {
		if err := check([]Image{img}); err != nil {
			out.Error = err.Error()
		}
	}
	return out
}

// imageTitle names an image for people and for the model's text.
func imageTitle(img Image, w, h int) string {
	kind := strings.ToUpper(strings.TrimPrefix(img.MIMEType, "image/"))
	if w == 0 {
		return fmt.Sprintf("image (%s, %s)", kind, sizeOf(len(img.Data)))
	}
	return fmt.Sprintf("image (%s %dx%d)", kind, w, h)
}

// sizeOf says n bytes in KiB or MiB.
func sizeOf(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1023)/1024)
}

// imageBlock is the line the request's text carries for the image of
// context item n, so the model can tell which image the user's words mean.
func imageBlock(n int, ci *ContextImage) string {
	img, err := ci.decode()
	if err != nil {
		return ""
	}
	_, w, h, _ := ImageTokens(img)
	return fmt.Sprintf("\n### %s\n(context item %d: an image, sent with this message)\n", imageTitle(img, w, h), n)
}

// ContextImages is the image items of items, decoded, in order, for the
// request's images (llm.CreateRequest.Images). An image that cannot be
// read, or that check refuses, is an error naming the item ("context item
// 2: ..."), so nothing is asked of the model.
func ContextImages(items []ContextEntry, check ImageCheck) ([]Image, error) {
	var imgs []Image
	for i, it := range items {
		if it.Image == nil {
			continue
		}
		img, err := it.Image.decode()
		if err == nil {
			_, _, _, err = ImageTokens(img)
		}
		if err == nil && check != nil {
			err = check([]Image{img})
		}
		if err != nil {
			return nil, fmt.Errorf("context item %d: %w", i+1, err)
		}
		imgs = append(imgs, img)
	}
	if len(imgs) > 1 && check != nil {
		if err := check(imgs); err != nil {
			return nil, fmt.Errorf("context items: %w", err)
		}
	}
	return imgs, nil
}
