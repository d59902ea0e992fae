//go:build unix

package plans

// POSIX-only: a FIFO (Windows has none).

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadPlanFileBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(`{"steps":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { MaxPlanSize = n }(MaxPlanSize)
	MaxPlanSize = 64
	for _, p := range []string{"/dev/zero", fifo, dir, big} {
		_, err := ReadPlanFile(t.Context(), p)
		if !errors.Is(err, ErrPlanFile) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v; want ErrPlanFile naming the file", p, err)
		}
	}
	if data, err := ReadPlanFile(t.Context(), ok); err != nil || string(data) != `{"steps":[]}` {
		t.Errorf("a plan file: %q, %v", data, err)
	}
}
