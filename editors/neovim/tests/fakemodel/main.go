// Command fakemodel serves the project's scripted fake model
// (internal/fakemodel) over HTTP for the Neovim plugin's tests: the
// replies are read from a JSON file ([{"text": "..."}]), the base URL is
// printed on stdout, and the server stops when stdin closes.
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
		Text string `json:"text"`
	}
	if err := json.Unmarshal(data, &replies); err != nil {
		return fmt.Errorf("%s: %w", os.Args[1], err)
	}
	srv := fakemodel.New()
	for _, r := range replies {
		srv.Push(fakemodel.Reply{Text: r.Text})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/v1\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		ln.Close()
	}()
	if err := http.Serve(ln, srv); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
