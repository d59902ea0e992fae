package repomap

import (
	"context"
	"fmt"
	"maps"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snapshotOf is what a map holds: each file's content hash.
func snapshotOf(m *Map) map[string]hash {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]hash{}
	for p, f := range m.files {
		out[p] = f.Hash
	}
	return out
}

// TestWatchedUpdate: a map with a file watcher (Options.Watch) checks only
// the paths that changed, yet holds after each change exactly what a map
// that walks the whole tree holds: files changed, added in a new
// directory, removed, a directory removed, a file now ignored, a file
// renamed. A change of ignore rules, an Update cut short, and every
// fullWalkEvery Updates, walk the tree.
func TestWatchedUpdate(t *testing.T) {
	dir := copyDir(t, "testdata/langs")
	ctx := context.Background()
	watched := New(openWS(t, dir), Options{Watch: true})
	t.Cleanup(func() { watched.Close() })
	if err := watched.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if !watched.Stats().Walked {
		t.Fatal("the first update did not walk")
	}
	write := func(p, content string) {
		t.Helper()
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, wantWalk bool, wantRead int) {
		t.Helper()
		if err := watched.Update(ctx); err != nil {
			t.Fatal(err)
		}
		st := watched.Stats()
		if st.Walked != wantWalk {
			t.Errorf("%s: walked=%v, want %v", step, st.Walked, wantWalk)
		}
		if wantRead >= 0 && st.Read != wantRead {
			t.Errorf("%s: read %d files, want %d", step, st.Read, wantRead)
		}
		walking := New(openWS(t, dir), Options{})
		if err := walking.Update(ctx); err != nil {
			t.Fatal(err)
		}
		got, want := snapshotOf(watched), snapshotOf(walking)
		if !maps.Equal(got, want) {
			t.Errorf("%s: the watched map holds %v, a walk finds %v", step, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
	check("nothing changed", false, 0)
	write("sample.go", "package sample\n\nfunc Changed() {}\n")
	check("one file changed", false, 1)
	write("pkg/deep/new.py", "def added():\n    pass\n")
	write("pkg/deep/notes.txt", "not source\n")
	check("a new directory", false, 1)
	if err := os.Remove(filepath.Join(dir, "sample.lua")); err != nil {
		t.Fatal(err)
	}
	check("a file removed", false, 0)
	if err := os.RemoveAll(filepath.Join(dir, "pkg")); err != nil {
		t.Fatal(err)
	}
	check("a directory removed", false, 0)
	if err := os.Rename(filepath.Join(dir, "sample.rs"), filepath.Join(dir, "renamed.rs")); err != nil {
		t.Fatal(err)
	}
	check("a file renamed", false, 1)
	// An Update cut short may have drained paths it did not check.
	write("sample.py", "def cancelled():\n    pass\n")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := watched.Update(cctx); err == nil {
		t.Error("an update with a cancelled context returned no error")
	}
	check("after a cancelled update", true, 1)
	write(".gitignore", "*.java\n")
	check("ignore rules changed", true, 0)
	text, _, err := watched.Render(ctx, Query{Request: "Changed"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "func Changed"; !strings.Contains(text, want) {
		t.Errorf("the map does not show %q:\n%s", want, text)
	}
	walkedAt := -1
	for i := range fullWalkEvery + 1 {
		if err := watched.Update(ctx); err != nil {
			t.Fatal(err)
		}
		if watched.Stats().Walked {
			walkedAt = i
			break
		}
	}
	if walkedAt < 0 {
		t.Errorf("no full walk in %d updates", fullWalkEvery+1)
	}
	// Closed, the map walks again.
	if err := watched.Close(); err != nil {
		t.Fatal(err)
	}
	write("sample.c", "int after_close(void) { return 0; }\n")
	check("after Close", true, 1)
}

// TestIdentHashes: the distinct-then-sort scan gives what sorting every
// occurrence and dropping the repeats gives, on real source files and on
// one with more distinct names than the set's first table holds.
func TestIdentHashes(t *testing.T) {
	// The scan as it was: every occurrence sorted, repeats dropped.
	naive := func(data []byte) []uint32 {
		var out []uint32
		for i := 0; i < len(data); {
			c := data[i]
			if isIdentStart(c) {
				j := i
				for j < len(data) && isIdentPart(data[j]) {
					j++
				}
				if j-i >= 3 && j-i <= 64 {
					out = append(out, identHash(string(data[i:j])))
				}
				i = j
				continue
			}
			if c >= '0' && c <= '9' {
				for i < len(data) && isIdentPart(data[i]) {
					i++
				}
				continue
			}
			i++
		}
		slices.Sort(out)
		out = slices.Compact(out)
		return out[:min(len(out), maxIdents)]
	}
	var inputs [][]byte
	for _, p := range []string{"index.go", "rank.go", "testdata/langs/sample.cpp"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, data)
	}
	var big strings.Builder
	for i := range 6000 {
		fmt.Fprintf(&big, "name%d x1 name%d;\n", i, i/2)
	}
	inputs = append(inputs, []byte(big.String()), nil)
	for i, data := range inputs {
		for range 2 { // the second time from a reused set
			if got, want := identHashes(data), naive(data); !slices.Equal(got, want) {
				t.Errorf("input %d: %d hashes, want %d", i, len(got), len(want))
			}
		}
	}
}

// TestSaveSmallChangesAsDelta: Save writes a small change into the delta
// file beside the cache file, which the next process loads (reading
// nothing again), and rewrites the cache file only once the changed files
// are 1/deltaEvery of the map; SaveNow rewrites it at once. A delta made
// against another cache file is not used.
func TestSaveSmallChangesAsDelta(t *testing.T) {
	dir := t.TempDir()
	const n = 150 // deltaEvery 50: 3 changed files rewrite the cache file
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", i)), fmt.Appendf(nil, "package p\n\nfunc F%03d() {}\n", i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(t.TempDir(), "repomap.map")
	ctx := context.Background()
	update := func(m *Map) Stats {
		t.Helper()
		if err := m.Update(ctx); err != nil {
			t.Fatal(err)
		}
		return m.Stats()
	}
	save := func(m *Map) {
		t.Helper()
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	change := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	delta := cache + ".delta"
	opts := Options{CacheFile: cache, EagerBytes: -1}
	m := New(openWS(t, dir), opts)
	update(m)
	save(m)
	first := read(cache)

	change("f000.go", "package p\n\nfunc Changed() {}\n")
	if st := update(m); st.Read != 1 {
		t.Fatalf("after one change: %+v", st)
	}
	save(m)
	if !slices.Equal(read(cache), first) {
		t.Error("Save rewrote the cache file for one changed file of 150")
	}
	oldDelta := read(delta)
	// The next process reads nothing again, and sees the change.
	m2 := New(openWS(t, dir), opts)
	if st := update(m2); st.Read != 0 || st.Files != n {
		t.Errorf("from the cache and its delta: %+v, want nothing read of %d", st, n)
	}
	if text, _, err := m2.Render(ctx, Query{Request: "call Changed"}); err != nil || !strings.Contains(text, "func Changed") {
		t.Fatalf("map from the delta: %v\n%s", err, text)
	}
	change("f001.go", "package p\n\nfunc Changed2() {}\n")
	update(m2)
	save(m2)
	if !slices.Equal(read(cache), first) {
		t.Error("Save rewrote the cache file for 2 changed files of 150")
	}
	// A third change (in a third process): the cache file is rewritten.
	m3 := New(openWS(t, dir), opts)
	if st := update(m3); st.Read != 0 {
		t.Errorf("third process: %+v, want nothing read", st)
	}
	change("f002.go", "package p\n\nfunc Changed3() {}\n")
	update(m3)
	save(m3)
	if slices.Equal(read(cache), first) {
		t.Error("Save did not rewrite the cache file after 3 changed files of 150")
	}
	if _, err := os.Stat(delta); !os.IsNotExist(err) {
		t.Errorf("the delta outlived the cache file's rewrite: %v", err)
	}
	// A delta of another cache file is not used.
	if err := os.WriteFile(delta, oldDelta, 0o644); err != nil {
		t.Fatal(err)
	}
	m4 := New(openWS(t, dir), opts)
	if st := update(m4); st.Read != 0 || len(m4.unsaved) != 0 {
		t.Errorf("with a stale delta: %+v, %d files taken from it", st, len(m4.unsaved))
	}
	// SaveNow rewrites the cache file for any change.
	second := read(cache)
	change("f003.go", "package p\n\nfunc Changed4() {}\n")
	update(m4)
	if err := m4.SaveNow(); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(read(cache), second) {
		t.Error("SaveNow did not write the cache")
	}
	if st := update(New(openWS(t, dir), opts)); st.Read != 0 {
		t.Errorf("from the cache after SaveNow: %+v, want nothing read", st)
	}
}

// TestEachCommon: both ways (binary search for a few wanted hashes, a
// filtered scan for many) find exactly the common hashes, in order.
func TestEachCommon(t *testing.T) {
	var src strings.Builder
	for i := range 200 {
		fmt.Fprintf(&src, "word%d ", i)
	}
	idents := identHashes([]byte(src.String()))
	for _, names := range [][]string{
		{"word7"},                                // binary search
		{"word7", "nothere", "word150", "word9"}, // still few
		strings.Fields("word1 word2 word3 word4 word5 word6 word7 word8 word9 word10 word11 other1 other2 other3 other4"), // scan
	} {
		if bs := 4*len(names)*bits.Len(uint(len(idents))) < len(idents); bs != (len(names) < 10) {
			t.Fatalf("%d names: binary search %v", len(names), bs)
		}
		var want []uint32
		filter := new(bitset)
		for _, n := range names {
			want = append(want, identHash(n))
			filter.add(identHash(n))
		}
		slices.Sort(want)
		var got, exp []uint32
		eachCommon(idents, want, filter, func(id uint32) { got = append(got, id) })
		for _, id := range want {
			if _, ok := slices.BinarySearch(idents, id); ok {
				exp = append(exp, id)
			}
		}
		if !slices.Equal(got, exp) || len(exp) == 0 {
			t.Errorf("%v: got %v, want %v", names, got, exp)
		}
	}
}
