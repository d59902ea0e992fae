// Command fakemodel runs the project's fake model server (package
// internal/fakemodel) as a process, for end-to-end suites written in other
// languages (the ACP suite under acp/testclient drives it from Node).
//
// It listens on 127.0.0.1 and prints its base URL on the first line of
// stdout (OpenAI-compatible base URL: that URL + "/v1"). Besides the model
// APIs it serves:
//
//	POST /_fake/push      a JSON array of replies (fakemodel.Reply fields)
//	GET  /_fake/requests  the recorded requests: [{"path", "body", "images"}],
//	                      images: [{"role", "mimeType", "size", "sha256", "error"}]
//	GET  /_fake/pending   the number of replies not yet used
//
// It stops when stdin closes or on SIGTERM.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentd/agentd/internal/fakemodel"
)

func main() {
	srv := fakemodel.New()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /_fake/push", func(w http.ResponseWriter, r *http.Request) {
		var replies []fakemodel.Reply
		if err := json.NewDecoder(r.Body).Decode(&replies); err != nil {
			http.Error(w, "push: want a JSON array of replies: "+err.Error(), http.StatusBadRequest)
			return
		}
		srv.Push(replies...)
		fmt.Fprintf(w, "{\"pending\":%d}\n", srv.Pending())
	})
	mux.HandleFunc("GET /_fake/requests", func(w http.ResponseWriter, r *http.Request) {
		type image struct {
			Role     string `json:"role"`
			MIMEType string `json:"mimeType,omitempty"`
			Size     int    `json:"size"`
			SHA256   string `json:"sha256,omitempty"`
			Error    string `json:"error,omitempty"`
		}
		type rec struct {
			Path   string         `json:"path"`
			Body   map[string]any `json:"body"`
			Images []image        `json:"images"`
		}
		out := []rec{}
		for _, q := range srv.Requests() {
			r := rec{q.Path, q.JSON, []image{}}
			for _, img := range q.Images {
				i := image{Role: img.Role, MIMEType: img.MIMEType, Size: len(img.Data), Error: img.Err}
				if img.Err == "" {
					i.SHA256 = fmt.Sprintf("%x", sha256.Sum256(img.Data))
				}
				r.Images = append(r.Images, i)
			}
			out = append(out, r)
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("GET /_fake/pending", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d\n", srv.Pending())
	})
	mux.Handle("/", srv)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	go func() { _ = http.Serve(ln, mux) }()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-stop:
	case <-eof:
	}
	_ = ln.Close()
}
