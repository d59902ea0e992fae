//go:build unix

package rpc

// POSIX-only: a FIFO (Windows has none).

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/engine/plans"
)

// agentd/plan/load with a uri reads only regular files inside the
// workspace, bounded, and never echoes a file outside.
func TestPlanLoadURIBounded(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.yaml")
	if err := os.WriteFile(secret, []byte("aws_secret_key: hunter2\nsteps: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifoOut := filepath.Join(outside, "fifo")
	fifoIn := filepath.Join(root, "fifo.json")
	for _, f := range []string{fifoOut, fifoIn} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(root, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(root, "big.json")
	if err := os.WriteFile(big, []byte(`{"steps":[]}`+strings.Repeat(" ", 300)), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "bad.yaml")
	if err := os.WriteFile(bad, []byte("inside_key: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { plans.MaxPlanSize = n }(plans.MaxPlanSize)
	plans.MaxPlanSize = 256

	ed := startEditor(t, Options{}, nil)
	ed.initialize(root, nil)
	for _, c := range []struct {
		name string
		uri  string
		code int64
	}{
		{"/dev/zero", "file:///dev/zero", int64(CodeOutsideRoot)},
		{"a FIFO outside", pathToURI(fifoOut), int64(CodeOutsideRoot)},
		{"a file outside", pathToURI(secret), int64(CodeOutsideRoot)},
		{"a link inside to a file outside", pathToURI(filepath.Join(root, "link.yaml")), int64(CodeOutsideRoot)},
		{"a FIFO inside", pathToURI(fifoIn), -32602},
		{"a file over the limit", pathToURI(big), -32602},
	} {
		done := make(chan error, 1)
		go func() { done <- ed.call("agentd/plan/load", map[string]any{"uri": c.uri}, nil) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(waitTimeout):
			t.Fatalf("%s: plan/load did not answer", c.name)
		}
		if int64(errCode(err)) != c.code {
			t.Errorf("%s: %v, want %d", c.name, err, c.code)
		}
		if err != nil && (strings.Contains(err.Error(), "aws_secret_key") || strings.Contains(err.Error(), "hunter2")) {
			t.Errorf("%s: the error echoes the file outside: %v", c.name, err)
		}
	}
	// A file inside is the user's: its problems are reported as usual.
	err := ed.call("agentd/plan/load", map[string]any{"uri": pathToURI(bad)}, nil)
	if errCode(err) != CodePlanInvalid {
		t.Errorf("an invalid plan inside: %v, want -32001", err)
	}
}
