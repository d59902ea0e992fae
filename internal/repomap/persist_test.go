package repomap

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// writeTree writes files (path -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ranked is what a map gives for q: the rendered text and every ranked
// file with its symbols.
func ranked(t *testing.T, m *Map, q Query) (string, []Entry) {
	t.Helper()
	text, _, err := m.Render(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := m.Rank(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return text, entries
}

// TestNewProcessSameAsFullBuild: a new process's map (a fresh Map loading
// the cache file and the saved directory listings) after a file changed,
// one added, one removed, one renamed into another directory and an
// ignore rule added, holds and ranks exactly what a map built from
// nothing does, having read only the new content, and having reused the
// listings of the directories that did not change.
func TestNewProcessSameAsFullBuild(t *testing.T) {
	dir := copyDir(t, "testdata/langs")
	writeTree(t, dir, map[string]string{
		".gitignore":       "*.tmp\n",
		"pkg/a/alpha.go":   "package a\n\nfunc Alpha() int { return Beta() }\n",
		"pkg/b/gone.go":    "package b\n\nfunc Gone() {}\n",
		"pkg/b/old.go":     "package b\n\n// Mover moves.\ntype Mover struct{}\n\nfunc (Mover) Move() {}\n",
		"pkg/b/beta.go":    "package b\n\nfunc Beta() int { return 2 }\n",
		"pkg/b/.gitignore": "*.tmp\n",
		"pkg/c/keep.go":    "package c\n\nconst Kept = 1\n",
		"pkg/c/d/deep.py":  "def deep():\n    return Alpha()\n",
	})
	// The file set caches only the listings of directories whose stat is
	// older than its racy window (2 s): the tree must age a little.
	time.Sleep(2100 * time.Millisecond)
	cache := filepath.Join(t.TempDir(), "state", "repomap.map")
	ctx := context.Background()
	q := Query{Request: "make Alpha call Move on the Mover, and fix deep"}

	m1 := New(openWS(t, dir), Options{CacheFile: cache})
	if err := m1.Update(ctx); err != nil {
		t.Fatal(err)
	}
	ranked(t, m1, q)
	if err := m1.SaveNow(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cache, cache + ".dirs"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("after SaveNow: %v", err)
		}
	}

	// The changes.
	writeTree(t, dir, map[string]string{
		"sample.go":      "package sample\n\nfunc Changed() {}\n",
		"pkg/a/added.go": "package a\n\nfunc Added() {}\n",
	})
	if err := os.Remove(filepath.Join(dir, "pkg/b/gone.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "pkg/b/old.go"), filepath.Join(dir, "pkg/a/moved.go")); err != nil {
		t.Fatal(err)
	}
	// An ignore rule added in place: the directory's stat does not change.
	if err := os.WriteFile(filepath.Join(dir, "pkg/b/.gitignore"), []byte("*.tmp\nbeta.go\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	ws2 := openWS(t, dir)
	m2 := New(ws2, Options{CacheFile: cache})
	if err := m2.Update(ctx); err != nil {
		t.Fatal(err)
	}
	st := m2.Stats()
	full := New(openWS(t, dir), Options{})
	if err := full.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := snapshotOf(m2), snapshotOf(full); !maps.Equal(got, want) {
		t.Fatalf("new process holds %v,\nfull build %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	if _, ok := snapshotOf(m2)["pkg/b/beta.go"]; ok {
		t.Fatal("pkg/b/beta.go is ignored now, yet in the map")
	}
	// sample.go, added.go, moved.go read; moved.go's content is old.go's,
	// known by its hash: two parsed.
	if st.Read != 3 || st.Parsed != 2 {
		t.Fatalf("new process: %+v, want 3 files read and 2 parsed", st)
	}
	if ws2.Files().DirCacheHits() == 0 {
		t.Fatal("no directory listing was reused from the saved ones")
	}
	text2, e2 := ranked(t, m2, q)
	text, e := ranked(t, full, q)
	if text2 != text {
		t.Fatalf("new process's map:\n%s\nfull build's:\n%s", text2, text)
	}
	if !slices.EqualFunc(e2, e, func(a, b Entry) bool {
		return a.Path == b.Path && a.Score == b.Score && slices.Equal(a.Symbols, b.Symbols)
	}) {
		t.Fatalf("rankings differ:\n%v\n%v", e2, e)
	}

	// Saved again, a third process reads nothing.
	if err := m2.SaveNow(); err != nil {
		t.Fatal(err)
	}
	m3 := New(openWS(t, dir), Options{CacheFile: cache})
	if err := m3.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if st := m3.Stats(); st.Read != 0 || st.Parsed != 0 || st.Files != len(snapshotOf(full)) {
		t.Fatalf("third process: %+v", st)
	}
	if text3, _ := ranked(t, m3, q); text3 != text {
		t.Fatalf("third process's map:\n%s\nwant:\n%s", text3, text)
	}
}

// TestCacheFileVersions: a cache of an older version (gob before 5) or
// damaged is not used (no error: the map is made anew, and saved in the
// current format).
func TestCacheFileVersions(t *testing.T) {
	dir := copyDir(t, "testdata/langs")
	cache := filepath.Join(t.TempDir(), "repomap.map")
	ctx := context.Background()
	m := New(openWS(t, dir), Options{CacheFile: cache})
	if err := m.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveNow(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"old version": append([]byte("AGRM0004"), good[8:]...),
		"gob":         []byte("\x3a\xff\x81\x03\x01\x01\x09diskCache"),
		"truncated":   good[:len(good)-5],
		"bad offsets": append(append([]byte(nil), good[:20]...), append([]byte{0xff, 0xff, 0xff, 0x7f}, good[24:]...)...),
	} {
		if err := os.WriteFile(cache, data, 0o644); err != nil {
			t.Fatal(err)
		}
		m := New(openWS(t, dir), Options{CacheFile: cache})
		if err := m.Update(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st := m.Stats(); st.Read != 9 || st.Files != 9 {
			t.Fatalf("%s: %+v, want the 9 files read anew", name, st)
		}
		if err := m.SaveNow(); err != nil {
			t.Fatal(err)
		}
		m2 := New(openWS(t, dir), Options{CacheFile: cache})
		if err := m2.Update(ctx); err != nil {
			t.Fatal(err)
		}
		if st := m2.Stats(); st.Read != 0 || st.Files != 9 {
			t.Fatalf("%s, saved anew: %+v, want nothing read", name, st)
		}
	}
}

// TestIdentIndex: the cache file's index of identifiers finds, for any set
// of identifiers, the same uses as scanning each file's identifiers, in a
// map loaded from the cache file and in the map that wrote it.
func TestIdentIndex(t *testing.T) {
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "repomap.map")
	ctx := context.Background()
	m := New(openWS(t, dir), Options{CacheFile: cache})
	if err := m.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveNow(); err != nil {
		t.Fatal(err)
	}
	m2 := New(openWS(t, dir), Options{CacheFile: cache})
	if err := m2.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if m2.ix == nil || len(m2.ix.keys) == 0 {
		t.Fatal("no index loaded from the cache file")
	}
	checkIndex(t, m2)
	// The map that wrote the cache file uses the index it wrote.
	checkIndex(t, m)
}

func checkIndex(t *testing.T, m2 *Map) {
	t.Helper()
	// Every identifier of every other file, and a few.
	var all []uint32
	i := 0
	for _, f := range m2.files {
		if i++; i%2 == 0 {
			all = append(all, f.Tags.Idents...)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	few := []uint32{identHash("Update"), identHash("context"), identHash("nothing_uses_this_name")}
	slices.Sort(few)
	for _, want := range [][]uint32{all, few} {
		filter := new(bitset)
		for _, id := range want {
			filter.add(id)
		}
		uses := m2.matcher(want, filter)
		indexed := 0
		for p, f := range m2.files {
			if f.Tags.ix > 0 {
				indexed++
			}
			var got, scanned []uint32
			uses(f.Tags, func(id uint32) { got = append(got, id) })
			eachCommon(f.Tags.Idents, want, filter, func(id uint32) { scanned = append(scanned, id) })
			if !slices.Equal(got, scanned) {
				t.Fatalf("%s: index gives %d uses, scan %d", p, len(got), len(scanned))
			}
		}
		if indexed != len(m2.files) {
			t.Fatalf("%d of %d files' contents in the index", indexed, len(m2.files))
		}
	}
}
