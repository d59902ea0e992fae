package cachefile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Every mode returns the file's content; a mapped one keeps it after the
// file is replaced by a rename (as agentd replaces cache files), and an
// empty or missing file is handled the same way in every mode.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "cache")
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<12)
	if err := os.WriteFile(name, want, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, m := range []Mode{Copy, Map, MapAll} {
		got, err := Load(name, m)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("mode %d: %d bytes, %v; want the file's %d", m, len(got), err, len(want))
		}
		next := filepath.Join(dir, "next")
		if err := os.WriteFile(next, []byte("replaced"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, name); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("mode %d: the content changed when the file was replaced", m)
		}
		if err := os.WriteFile(name, want, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, m := range []Mode{Copy, Map, MapAll} {
		if got, err := Load(empty, m); err != nil || len(got) != 0 {
			t.Fatalf("mode %d, empty file: %q, %v", m, got, err)
		}
		if _, err := Load(filepath.Join(dir, "missing"), m); !os.IsNotExist(err) {
			t.Fatalf("mode %d, missing file: %v; want not-exist", m, err)
		}
	}
}
