package fileset

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
)

func walkAll(t testing.TB, s *Set, opts Options) map[string]Entry {
	t.Helper()
	got := map[string]Entry{}
	var mu sync.Mutex
	err := s.Walk(context.Background(), opts, func(e Entry) error {
		mu.Lock()
		got[e.Path] = e
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func keys(m map[string]Entry) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Nested repositories and submodules: git shows them as "sub/" and does not
// descend; fileset lists their working files as ordinary files (their own
// ignore files apply as nested ignore files) and skips every .git.
func TestNestedRepositoryAndSubmodule(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	env.git(t, root, "", false, "init", "-q")
	writeFile(t, filepath.Join(root, ".gitignore"), "*.log\n")
	writeFile(t, filepath.Join(root, "top.txt"), "x")
	// A nested repository with an ignored and a committed file.
	nested := filepath.Join(root, "nested")
	writeFile(t, filepath.Join(nested, "n.txt"), "n")
	writeFile(t, filepath.Join(nested, "n.log"), "ignored by the outer rules")
	writeFile(t, filepath.Join(nested, ".gitignore"), "secret\n")
	writeFile(t, filepath.Join(nested, "secret"), "s")
	env.git(t, nested, "", false, "init", "-q")
	env.git(t, nested, "", false, "add", "-A")
	env.git(t, nested, "", false, "commit", "-qm", "n")
	// A submodule-like checkout: a .git file pointing elsewhere, and a
	// gitlink in the outer index.
	sm := filepath.Join(root, "sm")
	writeFile(t, filepath.Join(sm, "s.txt"), "s")
	other := filepath.Join(t.TempDir(), "sm.git")
	env.git(t, sm, "", false, "init", "-q", "--separate-git-dir", other)
	env.git(t, sm, "", false, "add", "-A")
	env.git(t, sm, "", false, "commit", "-qm", "s")
	env.git(t, root, "", false, "add", ".gitignore", "top.txt", "sm")
	if out := env.git(t, root, "", false, "ls-files", "--stage", "sm"); len(out) < 6 || out[:6] != "160000" {
		t.Fatalf("test setup: sm is not a gitlink in the index: %q", out)
	}
	// What git itself shows, for the record: the nested repository as a
	// directory, the submodule as its gitlink.
	gitOut := env.git(t, root, "", false, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	gitList := splitNUL(gitOut)
	sort.Strings(gitList)
	if got, want := gitList, []string{".gitignore", "nested/", "sm", "top.txt"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("git ls-files = %q, want %q", got, want)
	}
	before := snapshotDir(t, filepath.Join(root, ".git")) + snapshotDir(t, filepath.Join(nested, ".git")) + snapshotDir(t, other)

	s := env.open(t, root)
	got := walkAll(t, s, Options{})
	want := []string{".gitignore", "nested/.gitignore", "nested/n.txt", "sm/s.txt", "top.txt"}
	if !reflect.DeepEqual(keys(got), want) {
		t.Errorf("Walk = %q, want %q", keys(got), want)
	}
	if !got["top.txt"].Tracked || got["nested/n.txt"].Tracked || got["sm/s.txt"].Tracked {
		t.Errorf("Tracked flags wrong: %+v", got)
	}
	for _, p := range []string{".git", ".git/config", "nested/.git", "nested/.git/HEAD", "sm/.git"} {
		if !s.Ignored(p, p == ".git" || p == "nested/.git") {
			t.Errorf("Ignored(%q) = false, want true for .git paths", p)
		}
	}
	if !s.Ignored("nested/secret", false) || !s.Ignored("nested/n.log", false) || s.Ignored("nested/n.txt", false) {
		t.Errorf("nested ignore rules not applied as nested .gitignore files")
	}
	if s.Ignored("sm", true) {
		t.Errorf("Ignored(sm) = true for a submodule in the index")
	}
	after := snapshotDir(t, filepath.Join(root, ".git")) + snapshotDir(t, filepath.Join(nested, ".git")) + snapshotDir(t, other)
	if before != after {
		t.Errorf("a .git changed during Walk/Ignored")
	}
}

func TestSymlinksAreEntriesNeverFollowed(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.txt"), "outside")
	writeFile(t, filepath.Join(root, "dir", "f.txt"), "f")
	for name, target := range map[string]string{"to-outside": outside, "to-dir": "dir", "to-file": "dir/f.txt", "dangling": "nope"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A directory-only pattern does not match a symlink to a directory.
	writeFile(t, filepath.Join(root, ".gitignore"), "to-dir/\n")
	s := env.open(t, root)
	got := walkAll(t, s, Options{})
	want := []string{".gitignore", "dangling", "dir/f.txt", "to-dir", "to-file", "to-outside"}
	if !reflect.DeepEqual(keys(got), want) {
		t.Fatalf("Walk = %q, want %q", keys(got), want)
	}
	for _, p := range []string{"dangling", "to-dir", "to-file", "to-outside"} {
		if got[p].Mode&fs.ModeSymlink == 0 {
			t.Errorf("%s: mode %v, want a symlink", p, got[p].Mode)
		}
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil || got[p].Size != fi.Size() {
			t.Errorf("%s: size %d, lstat says %v", p, got[p].Size, fi)
		}
	}
	if len(walkAll(t, s, Options{Dir: "to-dir"})) != 0 {
		t.Errorf("Walk with Dir through a symlink listed files")
	}
}

func TestNoRepository(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".gitignore"), "*.tmp\nout/\n")
	writeFile(t, filepath.Join(root, "a.go"), "a")
	writeFile(t, filepath.Join(root, "x.tmp"), "x")
	writeFile(t, filepath.Join(root, "out", "bin"), "b")
	writeFile(t, filepath.Join(root, "sub", "b.go"), "b")
	writeFile(t, filepath.Join(env.xdg, "git", "ignore"), "b.go\n")
	s := env.open(t, root)
	if s.repo != nil {
		t.Fatalf("found a repository above %s: %+v", root, s.repo)
	}
	got := walkAll(t, s, Options{})
	if want := []string{".gitignore", "a.go"}; !reflect.DeepEqual(keys(got), want) {
		t.Errorf("Walk = %q, want %q", keys(got), want)
	}
	got = walkAll(t, s, Options{NoIgnore: true})
	if want := []string{".gitignore", "a.go", "out/bin", "sub/b.go", "x.tmp"}; !reflect.DeepEqual(keys(got), want) {
		t.Errorf("Walk NoIgnore = %q, want %q", keys(got), want)
	}
}

func TestWalkDirAndIgnoredWorkspace(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	env.git(t, root, "", false, "init", "-q")
	writeFile(t, filepath.Join(root, ".gitignore"), "build/\n")
	writeFile(t, filepath.Join(root, "build", "gen.c"), "g")
	writeFile(t, filepath.Join(root, "build", "keep.c"), "k")
	writeFile(t, filepath.Join(root, "src", "a.c"), "a")
	writeFile(t, filepath.Join(root, "src", "deep", "b.c"), "b")
	env.git(t, root, "", false, "add", "-f", "build/keep.c")
	s := env.open(t, root)
	if got, want := keys(walkAll(t, s, Options{Dir: "src"})), []string{"src/a.c", "src/deep/b.c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Walk Dir=src = %q, want %q", got, want)
	}
	if got, want := keys(walkAll(t, s, Options{Dir: "build"})), []string{"build/keep.c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Walk Dir=build = %q, want %q", got, want)
	}
	if got := walkAll(t, s, Options{Dir: "missing"}); len(got) != 0 {
		t.Errorf("Walk Dir=missing = %v", got)
	}
	if err := s.Walk(context.Background(), Options{Dir: "../x"}, func(Entry) error { return nil }); err == nil {
		t.Errorf("Walk Dir=../x: no error")
	}
	// A workspace inside an ignored directory of its repository.
	ws := env.open(t, filepath.Join(root, "build"))
	if got, want := keys(walkAll(t, ws, Options{})), []string{"keep.c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Walk in ignored workspace = %q, want %q", got, want)
	}
	if !ws.Ignored("gen.c", false) || ws.Ignored("keep.c", false) {
		t.Errorf("Ignored in an ignored workspace: gen.c %v keep.c %v", ws.Ignored("gen.c", false), ws.Ignored("keep.c", false))
	}
}

func TestWalkStopsOnError(t *testing.T) {
	root := t.TempDir()
	for i := range 50 {
		writeFile(t, filepath.Join(root, "d", string(rune('a'+i%26))+string(rune('a'+i/26)), "f"), "x")
	}
	env := newGitEnv(t)
	s := env.open(t, root)
	stop := errors.New("stop")
	var mu sync.Mutex
	n := 0
	err := s.Walk(context.Background(), Options{}, func(Entry) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Walk returned %v, want the callback's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Walk(ctx, Options{}, func(Entry) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Walk with a cancelled context returned %v", err)
	}
}

// Ignore files are re-read when they change, also within the racy window.
func TestIgnoreFileChangesAreSeen(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "a")
	writeFile(t, filepath.Join(root, "b.txt"), "b")
	s := env.open(t, root)
	for i, rule := range []string{"a.txt\n", "b.txt\n", "a.txt\n", "*\n!a*\n"} {
		writeFile(t, filepath.Join(root, ".gitignore"), rule)
		want := []bool{rule == "a.txt\n", rule == "b.txt\n" || rule == "*\n!a*\n"}
		if got := []bool{s.Ignored("a.txt", false), s.Ignored("b.txt", false)}; !reflect.DeepEqual(got, want) {
			t.Errorf("step %d (%q): Ignored(a.txt, b.txt) = %v, want %v", i, rule, got, want)
		}
	}
}
