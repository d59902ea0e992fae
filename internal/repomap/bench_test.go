package repomap

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The benchmarks run on the tree in $REPOMAP_TREE (bench/repomap.sh makes a
// 40,000-file tree from the Linux sources and runs them); without it they
// run on this repository.
func benchTree(b *testing.B) string {
	if d := os.Getenv("REPOMAP_TREE"); d != "" {
		return d
	}
	d, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkFirstMap is the first map of a tree: every file walked, read,
// hashed and parsed, then ranked and rendered for a request.
func BenchmarkFirstMap(b *testing.B) {
	ws := openWS(b, benchTree(b))
	q := Query{Request: "fix the timeout handling in the scheduler", Tokens: DefaultTokens}
	for b.Loop() {
		m := New(ws, Options{})
		if err := m.Update(context.Background()); err != nil {
			b.Fatal(err)
		}
		if _, _, err := m.Render(context.Background(), q); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(m.Stats().Files), "files")
	}
}

// BenchmarkAfterOneChange is a map after one file changed: the walk, one
// file re-parsed, the ranking and the rendering.
func BenchmarkAfterOneChange(b *testing.B) {
	dir := benchTree(b)
	ws := openWS(b, dir)
	m := New(ws, Options{})
	ctx := context.Background()
	if err := m.Update(ctx); err != nil {
		b.Fatal(err)
	}
	// The file that changes: the first file of the map.
	var target string
	entries, err := m.Rank(ctx, Query{})
	if err != nil || len(entries) == 0 {
		b.Fatal("no entries", err)
	}
	target = entries[0].Path
	abs := filepath.Join(dir, filepath.FromSlash(target))
	orig, err := os.ReadFile(abs)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.WriteFile(abs, orig, 0o644) })
	q := Query{Request: "fix the timeout handling in the scheduler", Tokens: DefaultTokens}
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		data := append(append([]byte(nil), orig...), []byte("\n// change "+string(rune('a'+i%26))+"\n")...)
		if err := os.WriteFile(abs, data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := m.Update(ctx); err != nil {
			b.Fatal(err)
		}
		if _, _, err := m.Render(context.Background(), q); err != nil {
			b.Fatal(err)
		}
		if st := m.Stats(); st.Read != 1 || st.Parsed > 1 {
			b.Fatalf("read %d and parsed %d files after one change, want 1 and at most 1", st.Read, st.Parsed)
		}
	}
}
