package repomap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestCacheByContentHash: a second Update reads only the changed file and
// parses only its new content; a new Map with the same cache file parses
// nothing; an unsaved buffer wins over the disk.
func TestCacheByContentHash(t *testing.T) {
	dir := copyDir(t, "testdata/langs")
	cache := filepath.Join(t.TempDir(), "state", "repomap.map")
	ctx := context.Background()
	ws := openWS(t, dir)
	m := New(ws, Options{CacheFile: cache})
	if err := m.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Parsed != 9 || st.Files != 9 {
		t.Fatalf("first update: %+v, want 9 files parsed", st)
	}
	if err := m.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Read != 0 || st.Parsed != 0 {
		t.Fatalf("unchanged: %+v", st)
	}
	if err := os.WriteFile(filepath.Join(dir, "sample.go"), []byte("package sample\n\nfunc Renamed() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Read != 1 || st.Parsed != 1 {
		t.Fatalf("after one change: %+v, want 1 read and 1 parsed", st)
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	// Another process: the cache file holds every file.
	m2 := New(openWS(t, dir), Options{CacheFile: cache})
	if err := m2.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if st := m2.Stats(); st.Read != 0 || st.Parsed != 0 || st.Files != 9 {
		t.Fatalf("from the cache file: %+v", st)
	}
	text, _, err := m2.Render(ctx, Query{Request: "call Renamed"})
	if err != nil || !strings.Contains(text, "func Renamed") || strings.Contains(text, "NewStore") {
		t.Fatalf("map from the cache: %v\n%s", err, text)
	}
	// A buffer open in the editor: its content, parsed once.
	if err := ws.OpenOverlay("sample.go", []byte("package sample\n\nfunc Unsaved() {}\n"), 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Update(ctx); err != nil {
		t.Fatal(err)
	}
	text, _, _ = m.Render(ctx, Query{Request: "Unsaved"})
	if !strings.Contains(text, "func Unsaved") || m.Stats().Parsed != 1 {
		t.Fatalf("overlay not seen (%+v):\n%s", m.Stats(), text)
	}
	// Touching a file without changing it re-reads it but parses nothing.
	now := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, "sample.py"), now, now)
	if err := m.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Read != 1 || st.Parsed != 0 { // sample.py; the open buffer did not change
		t.Fatalf("after touch: %+v", st)
	}
}

// TestRankAndBudget: files the request names, the focus, and their
// neighbours come first; the rendering keeps to the budget.
func TestRankAndBudget(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":           "module shop\n",
		"cart/cart.go":     "package cart\n\nfunc Total(items []int) int { return applyDiscount(sum(items)) }\n\nfunc sum(x []int) int { return 0 }\n",
		"cart/discount.go": "package cart\n\nfunc applyDiscount(t int) int { return t }\n",
		"main.go":          "package main\n\nfunc main() { cart.Total(nil) }\n",
	}
	for i := range 60 {
		files[fmt.Sprintf("other/f%02d.go", i)] = fmt.Sprintf("package other\n\nfunc Unrelated%02d() {}\n\nfunc Helper%02d() {}\n", i, i)
	}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
	}
	m := New(openWS(t, dir), Options{})
	ctx := context.Background()
	if err := m.Update(ctx); err != nil {
		t.Fatal(err)
	}
	entries, err := m.Rank(ctx, Query{Request: "make Total round the result"})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range entries[:4] {
		order = append(order, e.Path)
	}
	// cart.go defines Total; discount.go is what it references; main.go references it.
	if order[0] != "cart/cart.go" || !slices.Contains(order, "cart/discount.go") || !slices.Contains(order, "main.go") {
		t.Errorf("ranking %v", order)
	}
	entries, _ = m.Rank(ctx, Query{Request: "tidy up", Focus: []string{"other/f42.go"}})
	if entries[0].Path != "other/f42.go" {
		t.Errorf("focus not first: %s", entries[0].Path)
	}
	for _, tokens := range []int{100, 300, 2000} {
		text, listed, err := m.Render(ctx, Query{Request: "make Total round the result", Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		if len(text) > tokens*4 || len(listed) == 0 || listed[0] != "cart/cart.go" {
			t.Errorf("budget %d: %d chars, listed %v", tokens, len(text), listed)
		}
	}
}

// On a tree too big to be parsed whole (EagerBytes -1: never), a map with
// nothing to go by (no request, or one naming nothing in the code) parses
// the files nearest the root and lists them, rather than nothing.
func TestMapWithoutSignalListsFilesNearTheRoot(t *testing.T) {
	dir := t.TempDir()
	write := func(p, text string) {
		t.Helper()
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", "package main\n\nfunc main() {}\n\nfunc Serve() {}\n")
	for i := range 300 {
		write(fmt.Sprintf("internal/deep/p%03d/f.go", i), fmt.Sprintf("package p%03d\n\nfunc F%03d() {}\n", i, i))
	}
	m := New(openWS(t, dir), Options{EagerBytes: -1})
	if err := m.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, req := range []string{"", "make it nicer"} {
		text, listed, err := m.Render(context.Background(), Query{Request: req})
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) == 0 || listed[0] != "main.go" || !strings.Contains(text, "func Serve") {
			t.Errorf("request %q: listed %d files (first %q); want the root's main.go first with its symbols\n%s", req, len(listed), append(listed, "")[0], text)
		}
	}
}
