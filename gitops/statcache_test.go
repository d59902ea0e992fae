package gitops

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestDerivedDirIndexMatchesFresh changes random files of a cache, as a
// scan does, and checks that the directory index derived from the old one
// is exactly the index built from scratch, and that lookups through it
// find every file and nothing else.
func TestDerivedDirIndexMatchesFresh(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dirs := []string{"", "a", "a/b", "a/b/c", "a.d", "b", "z/y/x"}
	names := []string{"f", "g.go", "a", "b", "zz", "b.c", "README"}
	randPath := func() string {
		d, n := dirs[rng.IntN(len(dirs))], names[rng.IntN(len(names))]
		if d == "" {
			return n
		}
		return d + "/" + n
	}
	cache := newStatCache()
	for range 30 {
		p := randPath()
		cache.files[p] = &fileRec{path: p, size: 1}
	}
	for round := range 300 {
		prev := cache.dirIndex()
		next := newStatCache()
		for p, r := range cache.files {
			next.files[p] = r
		}
		var touched []string
		for range rng.IntN(6) {
			p := randPath()
			touched = append(touched, p)
			if rng.IntN(3) == 0 {
				delete(next.files, p)
			} else {
				next.files[p] = &fileRec{path: p, size: int64(round)}
			}
		}
		next.deriveDirIndex(prev, touched)
		derived := next.byDir
		next.byDir = nil
		fresh := next.dirIndex()
		if got, want := describeIndex(derived), describeIndex(fresh); !slices.Equal(got, want) {
			t.Fatalf("round %d: derived index\n%v\nfrom scratch\n%v", round, got, want)
		}
		for p, r := range next.files {
			d, name := "", p
			if i := strings.LastIndexByte(p, '/'); i >= 0 {
				d, name = p[:i], p[i+1:]
			}
			if got := derived[d].find(name); got != r {
				t.Fatalf("round %d: find(%q) in %q = %v, want %v", round, name, d, got, r)
			}
		}
		if got := derived["a"]; got != nil && got.find("nope") != nil {
			t.Fatalf("round %d: find of an absent name found something", round)
		}
		cache = next
	}
}

func describeIndex(idx map[string]*dirRecs) []string {
	var out []string
	for d, dr := range idx {
		for _, r := range dr.recs {
			out = append(out, fmt.Sprintf("%q %d %s@%p", d, dr.off, r.path, r))
		}
	}
	slices.Sort(out)
	return out
}

func randomCache(rng *rand.Rand, n int) *statCache {
	c := newStatCache()
	c.scanStart = rng.Int64() - 1<<62
	for range n {
		p := fmt.Sprintf("d%d/%s/f%d.go", rng.IntN(9), strings.Repeat("x", rng.IntN(40)), rng.IntN(1000))
		r := &fileRec{path: p, mode: 0o100644, size: rng.Int64N(1 << 40), mtime: rng.Int64() - 1<<62, ino: rng.Uint64()}
		for i := range r.hash {
			r.hash[i] = byte(rng.UintN(256))
		}
		c.files[p] = r
		c.trees[fmt.Sprintf("d%d", rng.IntN(9))] = r.hash
	}
	return c
}

// TestStatCacheRoundTrip encodes random caches, decodes them, and checks
// every field, the path order and the records' order; a damaged or
// truncated file is refused.
func TestStatCacheRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 50 {
		c := randomCache(rng, rng.IntN(300))
		data := c.encode()
		got, err := decodeStatCache(data)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got.scanStart != c.scanStart || got.count() != len(c.files) || len(got.trees) != len(c.trees) {
			t.Fatalf("round %d: decoded %d files %d trees scanStart %d, want %d %d %d", round,
				got.count(), len(got.trees), got.scanStart, len(c.files), len(c.trees), c.scanStart)
		}
		for p, r := range c.files {
			if g := got.file(p); g == nil || *g != *r {
				t.Fatalf("round %d: %s decoded as %+v, want %+v", round, p, g, r)
			}
			if g := got.fileMap()[p]; g == nil || *g != *r {
				t.Fatalf("round %d: %s decoded as %+v, want %+v", round, p, g, r)
			}
		}
		for d, h := range c.trees {
			if got.trees[d] != h {
				t.Fatalf("round %d: tree %q decoded as %s, want %s", round, d, got.trees[d], h)
			}
		}
		if !slices.Equal(got.sortedPaths(), c.sortedPaths()) {
			t.Fatalf("round %d: paths out of order", round)
		}
		for i, r := range got.sortedRecords() {
			if r.path != c.sortedPaths()[i] {
				t.Fatalf("round %d: record %d is %s, want %s", round, i, r.path, c.sortedPaths()[i])
			}
		}
		if len(data) > len(statCacheMagic)+4 {
			bad := slices.Clone(data)
			bad[len(statCacheMagic)+rng.IntN(len(bad)-len(statCacheMagic)-4)] ^= 0x40
			if _, err := decodeStatCache(bad); err == nil {
				t.Fatalf("round %d: a flipped bit was not noticed", round)
			}
			if _, err := decodeStatCache(data[:len(data)-1-rng.IntN(len(data)-len(statCacheMagic))]); err == nil {
				t.Fatalf("round %d: a truncated cache was accepted", round)
			}
		}
	}
}

// FuzzDecodeStatCache feeds damaged caches whose checksum is right (as a
// buggy writer would leave them): decoding must fail or succeed, never
// panic, and what it accepts must survive another round trip unchanged.
func FuzzDecodeStatCache(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 5, 40} {
		f.Add(randomCache(rng, n).encode())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= 4 {
			body := data[:len(data)-4]
			sum := crc32.ChecksumIEEE(body)
			data = append(slices.Clone(body), byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum))
		}
		c, err := decodeStatCache(data)
		if err != nil {
			return
		}
		enc := c.encode()
		c2, err := decodeStatCache(enc)
		if err != nil {
			t.Fatalf("a cache decoded from %x encodes to %x, which does not decode: %v", data, enc, err)
		}
		if again := c2.encode(); !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable:\n%x\n%x", enc, again)
		}
		if c2.count() != c.count() || c2.scanStart != c.scanStart {
			t.Fatalf("round trip changed the cache: %d files, scanStart %d; was %d, %d", c2.count(), c2.scanStart, c.count(), c.scanStart)
		}
	})
}
