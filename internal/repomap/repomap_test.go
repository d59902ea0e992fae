package repomap

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentd/agentd/workspace"
)

func openWS(t testing.TB, dir string) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func copyDir(t testing.TB, from string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func symNames(syms []Symbol) []string {
	var out []string
	for _, s := range syms {
		out = append(out, s.Kind+" "+s.Name)
	}
	return out
}

// TestSymbols checks each language's top-level symbols.
func TestSymbols(t *testing.T) {
	ws := openWS(t, copyDir(t, "testdata/langs"))
	m := New(ws, Options{})
	if err := m.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"sample.go":   {"const MaxItems", "var defaultName", "struct Store", "interface Getter", "func NewStore", "method Store.Get"},
		"sample.ts":   {"interface Options", "type Mode", "class Walker", "method Walker.walk", "func makeWalker", "func helper", "enum Color"},
		"sample.js":   {"class Widget", "method Widget.render", "func mountWidget", "const LIMIT"},
		"sample.py":   {"const TIMEOUT", "class Session", "method Session.open", "func connect"},
		"sample.rs":   {"struct Config", "enum Level", "trait Render", "method Config.load", "func parse_args", "const LIMIT", "module inner", "method inner.helper"},
		"sample.lua":  {"var M", "func M.setup", "func M.start", "func helper", "func M.stop"},
		"Sample.java": {"class Sample", "const Sample.LIMIT", "method Sample.Sample", "method Sample.next", "interface Shape", "method Shape.area"},
		"sample.c":    {"macro BUF_SIZE", "struct buffer", "type buffer_t", "var counter", "func buffer_push", "func buffer_reset"},
		"sample.cpp":  {"class geo.Point", "method geo.Point.norm", "method geo.Point.norm", "func geo.clampTo"},
	}
	entries, err := m.Rank(context.Background(), Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		w, ok := want[e.Path]
		if !ok {
			t.Errorf("unexpected file %s", e.Path)
			continue
		}
		got := symNames(e.Symbols)
		for _, s := range w {
			if !slices.Contains(got, s) {
				t.Errorf("%s: no %q among %q", e.Path, s, got)
			}
		}
		delete(want, e.Path)
	}
	for p := range want {
		t.Errorf("%s missing from the map", p)
	}
}
