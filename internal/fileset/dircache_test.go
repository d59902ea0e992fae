package fileset

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// listSet walks s and returns "path tracked mode" lines, sorted.
func listSet(t *testing.T, s *Set, opts Options) []string {
	t.Helper()
	var mu sync.Mutex
	var out []string
	err := s.Walk(context.Background(), opts, func(e Entry) error {
		mu.Lock()
		out = append(out, fmt.Sprintf("%s %v %v %d", e.Path, e.Tracked, e.Mode, e.Size))
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// listSetDirs is listSet through WalkDirs; it also checks that every file
// comes with its own directory.
func listSetDirs(t *testing.T, s *Set, opts Options) []string {
	t.Helper()
	var mu sync.Mutex
	var out []string
	err := s.WalkDirs(context.Background(), opts, func(dir string, files []Entry) error {
		if len(files) == 0 {
			t.Errorf("WalkDirs: an empty call for %q", dir)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range files {
			if d := path.Dir(e.Path); d != dir && !(d == "." && dir == "") {
				t.Errorf("WalkDirs: %s handed over with directory %q", e.Path, dir)
			}
			out = append(out, fmt.Sprintf("%s %v %v %d", e.Path, e.Tracked, e.Mode, e.Size))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// waitTick returns once a file written now gets an mtime after since, so
// the next changes cannot share a timestamp with what a walk cached.
func waitTick(t *testing.T, probe string, since time.Time) {
	t.Helper()
	for range 1_000_000 {
		writeFile(t, probe, "p")
		fi, err := os.Stat(probe)
		if err != nil {
			t.Fatal(err)
		}
		if fi.ModTime().After(since) {
			return
		}
	}
	t.Fatal("the filesystem clock does not advance")
}

// TestDirCacheMatchesFreshWalks mutates a tree between walks of one Set
// (which reuses directory listings) and compares every walk with a fresh
// Set's uncached walk: files and directories created, deleted and renamed,
// .gitignore files and info/exclude edited, files added to the index.
func TestDirCacheMatchesFreshWalks(t *testing.T) { dirCacheScenario(t, false) }

// TestSavedDirCacheMatchesFreshWalks is the same with the cache saved and
// loaded into a new Set (as the next process does) before every walk: a
// saved listing must never outlive a change of its directory, its ignore
// files, the index or the excludes.
func TestSavedDirCacheMatchesFreshWalks(t *testing.T) { dirCacheScenario(t, true) }

func dirCacheScenario(t *testing.T, persist bool) {
	prev, prevFile := dirRacyWindow, racyWindow
	dirRacyWindow, racyWindow = 0, 0 // waitTick keeps changes out of the walks' ticks
	t.Cleanup(func() { dirRacyWindow, racyWindow = prev, prevFile })
	env := newGitEnv(t)
	root := t.TempDir()
	probe := filepath.Join(t.TempDir(), "probe")
	env.git(t, root, "", false, "init", "-q")
	rng := rand.New(rand.NewPCG(7, 8))
	dirs := []string{"", "a", "a/b", "a/b/c", "d", "d/e", "build", "a/build", "x.o"}
	names := []string{"f", "g.o", "keep.o", "h.log", "x1", "top1"}
	patterns := []string{"*.o", "!keep.o", "build/", "/top*", "x*", "!x1", "b/", "**/c", "*.log", "e/", "!d/e/", "!build/"}
	randPath := func() string {
		d := dirs[rng.IntN(len(dirs))]
		return filepath.Join(d, names[rng.IntN(len(names))])
	}
	ignoreText := func() string {
		txt := ""
		for range rng.IntN(4) {
			txt += patterns[rng.IntN(len(patterns))] + "\n"
		}
		return txt
	}
	for range 30 {
		writeFile(t, filepath.Join(root, randPath()), "x")
	}
	s := env.open(t, root)
	var loadedHits int64
	for round := range 400 {
		if persist {
			var buf bytes.Buffer
			if err := s.SaveDirCache(&buf); err != nil && round > 0 {
				t.Fatalf("round %d: save: %v", round, err)
			}
			loadedHits += s.dirs.hits.Load()
			s = env.open(t, root)
			if buf.Len() > 0 {
				if err := s.LoadDirCache(buf.Bytes()); err != nil {
					t.Fatalf("round %d: load: %v", round, err)
				}
			}
		}
		start := time.Now()
		list := listSet
		if round%2 == 1 {
			list = listSetDirs
		}
		got := list(t, s, Options{})
		fresh := listSet(t, env.open(t, root), Options{})
		if !slices.Equal(got, fresh) {
			t.Fatalf("round %d: cached walk differs from a fresh one\ncached: %v\nfresh:  %v", round, got, fresh)
		}
		if round%5 == 4 {
			sub := dirs[1+rng.IntN(len(dirs)-1)]
			if got, fresh := list(t, s, Options{Dir: sub}), listSet(t, env.open(t, root), Options{Dir: sub}); !slices.Equal(got, fresh) {
				t.Fatalf("round %d: cached walk of %s differs\ncached: %v\nfresh:  %v", round, sub, got, fresh)
			}
		}
		waitTick(t, probe, start)
		for range 1 + rng.IntN(3) {
			p := filepath.Join(root, randPath())
			switch rng.IntN(10) {
			case 0, 1:
				writeFile(t, p, fmt.Sprint(round))
			case 2:
				os.Remove(p)
			case 3:
				os.RemoveAll(filepath.Join(root, dirs[1+rng.IntN(len(dirs)-1)]))
			case 4:
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.Rename(filepath.Join(root, randPath()), p)
			case 5:
				from := filepath.Join(root, dirs[1+rng.IntN(len(dirs)-1)])
				to := filepath.Join(root, dirs[1+rng.IntN(len(dirs)-1)])
				os.RemoveAll(to)
				os.MkdirAll(filepath.Dir(to), 0o755)
				os.Rename(from, to)
			case 6, 7:
				writeFile(t, filepath.Join(root, dirs[rng.IntN(len(dirs))], ".gitignore"), ignoreText())
			case 8:
				writeFile(t, filepath.Join(root, ".git", "info", "exclude"), ignoreText())
			case 9:
				if _, err := os.Lstat(p); err == nil {
					rel, _ := filepath.Rel(root, p)
					env.git(t, root, "", false, "add", "-f", "--", rel)
				}
			}
		}
	}
	hits := s.dirs.hits.Load()
	if persist {
		hits = loadedHits + hits
	}
	if hits < 500 {
		t.Fatalf("only %d directory listings were reused in 400 walks", hits)
	}
}

// TestDirCacheLoadRefusesDamageAndOtherTrees checks that a damaged saved
// cache is refused (leaving the cache empty) and that one saved for
// another tree is not used there.
func TestDirCacheLoadRefusesDamageAndOtherTrees(t *testing.T) {
	prev := dirRacyWindow
	dirRacyWindow = 0
	t.Cleanup(func() { dirRacyWindow = prev })
	env := newGitEnv(t)
	a, b := t.TempDir(), t.TempDir()
	for i := range 20 {
		writeFile(t, filepath.Join(a, fmt.Sprintf("d%d/f%d", i%4, i)), "a")
		writeFile(t, filepath.Join(b, fmt.Sprintf("d%d/g%d", i%4, i)), "b")
	}
	time.Sleep(20 * time.Millisecond)
	sa := env.open(t, a)
	listSet(t, sa, Options{})
	var buf bytes.Buffer
	if err := sa.SaveDirCache(&buf); err != nil {
		t.Fatal(err)
	}
	// Another tree: the listing of a's directories must not show up in b.
	sb := env.open(t, b)
	if err := sb.LoadDirCache(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if got, want := listSet(t, sb, Options{}), listSet(t, env.open(t, b), Options{}); !slices.Equal(got, want) {
		t.Fatalf("a cache saved for another tree was used:\n%v\nwant\n%v", got, want)
	}
	if h := sb.dirs.hits.Load(); h != 0 {
		t.Fatalf("%d listings of another tree's cache were used", h)
	}
	// The same tree: used.
	sa2 := env.open(t, a)
	if err := sa2.LoadDirCache(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if got, want := listSet(t, sa2, Options{}), listSet(t, env.open(t, a), Options{}); !slices.Equal(got, want) {
		t.Fatalf("loaded cache:\n%v\nwant\n%v", got, want)
	}
	if sa2.dirs.hits.Load() == 0 {
		t.Fatal("the loaded cache was not used")
	}
	// Damaged: refused, and the set walks as if it had none.
	data := buf.Bytes()
	for i := 0; i < len(data); i += 1 + len(data)/50 {
		bad := slices.Clone(data)
		bad[i] ^= 0x10
		s := env.open(t, a)
		if err := s.LoadDirCache(bad); err == nil {
			t.Fatalf("a cache with byte %d flipped was accepted", i)
		}
		if got, want := listSet(t, s, Options{}), listSet(t, env.open(t, a), Options{}); !slices.Equal(got, want) {
			t.Fatalf("after refusing a damaged cache:\n%v\nwant\n%v", got, want)
		}
		if s.dirs.hits.Load() != 0 {
			t.Fatal("a refused cache was used")
		}
	}
	if err := env.open(t, a).LoadDirCache(data[:len(data)/2]); err == nil {
		t.Fatal("a truncated cache was accepted")
	}
}
