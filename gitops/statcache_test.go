package gitops

import (
	"fmt"
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
