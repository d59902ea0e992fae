// Command fakemodel serves the project's scripted fake model
// (internal/fakemodel) over HTTP for the Neovim plugin's tests: the
// replies are read from a JSON file ([{"text": "...", "toolCalls": [{"id",
// "name", "args"}], "fault": "stall"}]; fault is one of internal/fakemodel's
// faults, e.g. "stall": the first piece of the stream, then nothing until
// the request is cancelled), the base URL is printed on stdout, GET /requests
// lists the request bodies received so far, and the server stops when stdin
// closes.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/agentd/agentd/internal/fakemodel"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: fakemodel REPLIES.json")
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		return err
	}
	var replies []struct {
		Text      string `json:"text"`
		Fault     string `json:"fault"`
		ToolCalls []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
			Args string `json:"args"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal(data, &replies); err != nil {
		return fmt.Errorf("%s: %w", os.Args[1], err)
	}
	srv := fakemodel.New()
	for _, r := range replies {
		rep := fakemodel.Reply{Text: r.Text, Fault: fakemodel.Fault(r.Fault)}
		for _, tc := range r.ToolCalls {
			rep.ToolCalls = append(rep.ToolCalls, fakemodel.ToolCall{ID: tc.ID, Name: tc.Name, Args: tc.Args})
		}
		srv.Push(rep)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", srv)
	mux.HandleFunc("/requests", func(w http.ResponseWriter, _ *http.Request) {
		var bodies []json.RawMessage
		for _, r := range srv.Requests() {
			bodies = append(bodies, json.RawMessage(r.Body))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(bodies)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/v1\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		ln.Close()
	}()
	if err := http.Serve(ln, mux); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
