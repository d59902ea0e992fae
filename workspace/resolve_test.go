package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// escapeTree builds a workspace "ws" and a sibling "outside" under a new
// temporary directory, with symlinks of every kind, and opens it.
//
//	ws/file.txt, ws/a b.txt, ws/dir/sub/f.txt, ws/.git/config
//	outside/secret
func escapeTree(t testing.TB) (w *Workspace, root, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	mkfile := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkfile(filepath.Join(root, "file.txt"), "hello\n")
	mkfile(filepath.Join(root, "a b.txt"), "space\n")
	mkfile(filepath.Join(root, "dir", "sub", "f.txt"), "f\n")
	mkfile(filepath.Join(root, ".git", "config"), "[core]\n")
	mkfile(filepath.Join(outside, "secret"), "secret\n")
	links := map[string]string{
		"to_root_fs":     "/",
		"to_parent":      "..",
		"to_outside_abs": outside,
		"to_outside_rel": "../outside",
		"to_secret":      "../outside/secret",
		"chain1":         "chain2",
		"chain2":         "chain3",
		"chain3":         "../outside",
		"dangling_out":   "/nonexistent-agentd-test/x",
		"dangling_rel":   "../nonexistent-agentd-test",
		"dangling_in":    "missing.txt",
		"in_dir":         "dir",
		"in_abs":         filepath.Join(root, "dir"),
		"self":           ".",
		"loop1":          "loop2",
		"loop2":          "loop1",
		"via_parent":     "../ws/dir",
		"via_sibling":    "../outside/../ws/dir",
		"dir/up":         "../..",
		"dir/up1":        "..",
		"dir/sub/deep":   "../../../outside/secret",
		"to_git":         ".git",
		"to_git_config":  ".git/config",
		"in_file":        "file.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	w, err = Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, root, outside
}

func TestResolveRefusesEscapes(t *testing.T) {
	w, root, outside := escapeTree(t)
	parent := filepath.Dir(root)
	tests := []string{
		"..",
		"../..",
		"../",
		"a/../../x",
		"dir/../../outside/secret",
		"dir/sub/../../..",
		".//..",
		"./../ws/../outside",
		"../ws/file.txt", // comes back in, but lexically leaves: refused
		"/etc/passwd",
		"////etc/passwd",
		"/",
		parent,
		outside + "/secret",
		root + "/../outside/secret",
		root + "/../ws/../outside",
		root + "x/file.txt", // a sibling whose name starts with the root's
		"file:///etc/passwd",
		"file:///",
		"file://localhost/etc/passwd",
		"file://" + uriPath(root) + "/%2e%2e/outside/secret",
		"file://" + uriPath(root) + "/%2E%2E/%2E%2E/etc/passwd",
		"file://" + uriPath(root) + "/to_outside_abs/secret",
		"file://" + uriPath(root) + "%2F..%2Foutside",
		"to_root_fs",
		"to_root_fs/etc/passwd",
		"to_parent",
		"to_parent/outside/secret",
		"to_parent/ws/file.txt", // back inside, but through the root's parent directory listing
		"to_outside_abs",
		"to_outside_abs/secret",
		"to_outside_abs/new.txt",
		"to_outside_rel/secret",
		"to_secret",
		"chain1",
		"chain1/secret",
		"chain1/new/deeper.txt",
		"dangling_out",
		"dangling_out/child",
		"dangling_rel",
		"via_sibling",
		"via_sibling/sub/f.txt",
		"dir/up",
		"dir/up/outside/secret",
		"in_dir/up",
		"in_dir/up1/to_parent",
		"dir/sub/deep",
		"self/to_parent",
		"in_abs/up",
		root + "/to_secret",
	}
	for _, p := range tests {
		t.Run(p, func(t *testing.T) {
			rel, abs, err := w.Resolve(p)
			if err == nil {
				t.Fatalf("Resolve(%q) = %q, %q; want an error", p, rel, abs)
			}
			if !errors.Is(err, ErrOutsideRoot) {
				t.Fatalf("Resolve(%q) error = %v; want ErrOutsideRoot", p, err)
			}
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != p {
				t.Fatalf("Resolve(%q) error = %#v; want a *PathError naming the path as given", p, err)
			}
			if _, _, err := w.ResolveWrite(p); !errors.Is(err, ErrOutsideRoot) {
				t.Fatalf("ResolveWrite(%q) error = %v; want ErrOutsideRoot", p, err)
			}
		})
	}
	if len(tests) < 30 {
		t.Fatalf("only %d escape attempts", len(tests))
	}
}

func TestResolveAccepts(t *testing.T) {
	w, root, _ := escapeTree(t)
	tests := []struct {
		in, rel, real string
	}{
		{"", ".", "."},
		{".", ".", "."},
		{"./", ".", "."},
		{root, ".", "."},
		{root + "/", ".", "."},
		{"file://" + uriPath(root), ".", "."},
		{"file://" + uriPath(root) + "/", ".", "."},
		{"file.txt", "file.txt", "file.txt"},
		{"./file.txt", "file.txt", "file.txt"},
		{"dir/", "dir", "dir"},
		{"dir//sub/./f.txt", "dir/sub/f.txt", "dir/sub/f.txt"},
		{"dir/../file.txt", "file.txt", "file.txt"},
		{"dir/sub/../../file.txt", "file.txt", "file.txt"},
		{root + "/dir/sub/f.txt", "dir/sub/f.txt", "dir/sub/f.txt"},
		{"file://" + uriPath(root) + "/file.txt", "file.txt", "file.txt"},
		{"file://" + uriPath(root) + "/a%20b.txt", "a b.txt", "a b.txt"},
		{"file://localhost" + uriPath(root) + "/file.txt", "file.txt", "file.txt"},
		{"file://" + uriPath(root) + "/dir/%2E%2E/file.txt", "file.txt", "file.txt"},
		{"new/deep/file.txt", "new/deep/file.txt", "new/deep/file.txt"},
		{"in_dir/sub/f.txt", "in_dir/sub/f.txt", "dir/sub/f.txt"},
		{"in_abs/sub/f.txt", "in_abs/sub/f.txt", "dir/sub/f.txt"},
		{"in_abs/new.txt", "in_abs/new.txt", "dir/new.txt"},
		{"self/self/file.txt", "self/self/file.txt", "file.txt"},
		{"self", "self", "."},
		{"dangling_in", "dangling_in", "missing.txt"},
		{"via_parent/sub/f.txt", "via_parent/sub/f.txt", "dir/sub/f.txt"},
		{"dir/up1/file.txt", "dir/up1/file.txt", "file.txt"},
		{"in_file", "in_file", "file.txt"},
		{".git/config", ".git/config", ".git/config"}, // reading .git is allowed
		{"to_git/config", "to_git/config", ".git/config"},
		{"file.txt/x", "file.txt/x", "file.txt/x"}, // not a directory: refused by the OS later
		// Harmless look-alikes: names inside the root.
		{"%2e%2e/etc/passwd", "%2e%2e/etc/passwd", "%2e%2e/etc/passwd"},
		{`..\..\etc\passwd`, `..\..\etc\passwd`, `..\..\etc\passwd`},
		{"\u2024\u2024/x", "\u2024\u2024/x", "\u2024\u2024/x"}, // one dot leaders
		{"\uff0e\uff0e/x", "\uff0e\uff0e/x", "\uff0e\uff0e/x"}, // fullwidth full stops
		{"...", "...", "..."},
		{"..foo/x", "..foo/x", "..foo/x"},
		{"to_outside_abs/../file.txt", "file.txt", "file.txt"}, // cleaned lexically first
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			rel, abs, err := w.Resolve(tt.in)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.in, err)
			}
			if rel != tt.rel {
				t.Errorf("Resolve(%q) rel = %q; want %q", tt.in, rel, tt.rel)
			}
			if want := filepath.Join(root, filepath.FromSlash(tt.rel)); abs != want {
				t.Errorf("Resolve(%q) abs = %q; want %q", tt.in, abs, want)
			}
			r, err := w.resolve(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if r.real != tt.real {
				t.Errorf("resolve(%q) real = %q; want %q", tt.in, r.real, tt.real)
			}
		})
	}
}

func TestResolveInvalid(t *testing.T) {
	w, root, _ := escapeTree(t)
	tests := []struct {
		in   string
		want error
	}{
		{"a\x00b", ErrInvalidPath},
		{"file\x00.txt", ErrInvalidPath},
		{"file://" + uriPath(root) + "/a%00b", ErrInvalidPath},
		{"file://otherhost/x", ErrInvalidPath},
		{"file://otherhost" + uriPath(root) + "/file.txt", ErrInvalidPath},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, _, err := w.Resolve(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Resolve(%q) error = %v; want %v", tt.in, err, tt.want)
			}
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != tt.in {
				t.Fatalf("error %v does not name the path as given", err)
			}
		})
	}
}

func TestResolveOtherErrors(t *testing.T) {
	w, _, _ := escapeTree(t)
	// A link loop is an error, but not an escape.
	for _, p := range []string{"loop1", "loop2/x"} {
		_, _, err := w.Resolve(p)
		if err == nil || errors.Is(err, ErrOutsideRoot) {
			t.Errorf("Resolve(%q) error = %v; want a loop error", p, err)
		}
	}
	// Very long paths are accepted (inside) or refused, never outside.
	for _, p := range []string{
		strings.Repeat("a/", 3000) + "x",
		strings.Repeat("x", 300),
		"dir/" + strings.Repeat("y", 5000) + "/z",
		strings.Repeat("../", 500) + "etc/passwd",
	} {
		_, abs, err := w.Resolve(p)
		if err == nil {
			if _, ok := under(w.Root(), abs); !ok {
				t.Errorf("Resolve(long %d bytes) = %q, outside the root", len(p), abs)
			}
		}
	}
	if _, _, err := w.Resolve(strings.Repeat("../", 500) + "etc/passwd"); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("long .. path: error = %v; want ErrOutsideRoot", err)
	}
}

func TestResolveWriteRefusesGitDir(t *testing.T) {
	w, root, _ := escapeTree(t)
	for _, p := range []string{
		".git/config",
		".git",
		".git/hooks/pre-commit",
		"sub/.git/HEAD",
		".GIT/config",
		"to_git/config",
		"to_git_config",
		root + "/.git/config",
		"file://" + uriPath(root) + "/.git/index",
	} {
		_, _, err := w.ResolveWrite(p)
		if !errors.Is(err, ErrGitDir) {
			t.Errorf("ResolveWrite(%q) error = %v; want ErrGitDir", p, err)
		}
		if err := w.WriteFile(t.Context(), p, []byte("x"), 0o644); !errors.Is(err, ErrGitDir) {
			t.Errorf("WriteFile(%q) error = %v; want ErrGitDir", p, err)
		}
	}
	for _, p := range []string{".", "", root, "self"} {
		if _, _, err := w.ResolveWrite(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("ResolveWrite(%q) error = %v; want ErrInvalidPath (the root)", p, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, ".git", "config"))
	if err != nil || string(data) != "[core]\n" {
		t.Fatalf(".git/config changed: %q, %v", data, err)
	}
	// Names that merely contain .git are ordinary.
	for _, p := range []string{".gitignore", "x.git/y", ".github/workflows/ci.yml", ".git2/x"} {
		if _, _, err := w.ResolveWrite(p); err != nil {
			t.Errorf("ResolveWrite(%q): %v", p, err)
		}
	}
}

func TestOpenThroughSymlinkedRoot(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "real")
	if err := os.MkdirAll(filepath.Join(real, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "d", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	w, err := Open(link, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Root() != real {
		t.Fatalf("Root() = %q; want the resolved %q", w.Root(), real)
	}
	for _, p := range []string{link + "/d/f", real + "/d/f", "file://" + uriPath(link) + "/d/f", "d/f"} {
		rel, abs, err := w.Resolve(p)
		if err != nil || rel != "d/f" || abs != filepath.Join(real, "d", "f") {
			t.Errorf("Resolve(%q) = %q, %q, %v; want d/f inside %s", p, rel, abs, err, real)
		}
	}
	if _, _, err := w.Resolve(link + "/../real/d/f"); err != nil {
		t.Errorf("an absolute path through the root's alias parent that comes back in: %v", err)
	}
	if _, _, err := w.Resolve(link); err != nil {
		t.Errorf("Resolve(root alias): %v", err)
	}
}

func TestURIRoundTrip(t *testing.T) {
	w, root, _ := escapeTree(t)
	for _, rel := range []string{".", "file.txt", "a b.txt", "dir/sub/f.txt", "new/ü#?.txt"} {
		u := w.URI(rel)
		if !strings.HasPrefix(u, "file:///") {
			t.Errorf("URI(%q) = %q; want a file:/// URI", rel, u)
		}
		got, abs, err := w.Resolve(u)
		if err != nil || got != rel {
			t.Errorf("Resolve(URI(%q) = %q) = %q, %v", rel, u, got, err)
		}
		if want := filepath.Join(root, rel); abs != want {
			t.Errorf("abs = %q; want %q", abs, want)
		}
	}
	if u := w.URI("a b.txt"); !strings.HasSuffix(u, "/a%20b.txt") {
		t.Errorf("URI(%q) = %q; want the space percent-encoded", "a b.txt", u)
	}
}

// FuzzResolve checks that whatever the input, an accepted path's abs is
// inside the root, also after resolving the symlinks of its existing part,
// and that os.Root (an independent check of the same rule) agrees.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"", ".", "..", "file.txt", "dir/sub/f.txt", "../outside/secret", "to_parent/x",
		"chain1/secret", "dangling_out", "dir/up/ws/file.txt", "file:///etc/passwd",
		"file:///%2e%2e/x", "in_dir/sub/../../file.txt", "self/self/to_outside_rel",
		"a\x00b", `..\..\x`, "via_sibling/sub", ".git/config",
	} {
		f.Add(s)
	}
	w, root, _ := escapeTree(f)
	f.Fuzz(func(t *testing.T, p string) {
		rel, abs, err := w.Resolve(p)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != p {
				t.Fatalf("Resolve(%q) error %v is not a *PathError naming the input", p, err)
			}
			return
		}
		if _, ok := under(root, abs); !ok {
			t.Fatalf("Resolve(%q) abs = %q, outside %s", p, abs, root)
		}
		if filepath.Join(root, filepath.FromSlash(rel)) != abs {
			t.Fatalf("Resolve(%q) rel %q does not match abs %q", p, rel, abs)
		}
		// EvalSymlinks of the longest existing prefix, then the rest.
		existing, rest := abs, ""
		for {
			real, err := filepath.EvalSymlinks(existing)
			if err == nil {
				full := filepath.Join(real, rest)
				if _, ok := under(root, full); !ok {
					t.Fatalf("Resolve(%q) accepted %q, which leads to %q outside the root", p, abs, full)
				}
				break
			}
			if existing == root {
				t.Fatalf("EvalSymlinks(root): %v", err)
			}
			rest = filepath.Join(filepath.Base(existing), rest)
			existing = filepath.Dir(existing)
		}
		// The symlink-free form, which every file operation uses, is one
		// os.Root (an independent check of the same rule) accepts.
		r, err := w.resolve(p)
		if err != nil {
			t.Fatalf("resolve(%q) failed after Resolve succeeded: %v", p, err)
		}
		for _, op := range []func(string) (fs.FileInfo, error){w.dir.Lstat, w.dir.Stat} {
			if _, err := op(filepath.FromSlash(r.real)); err != nil && strings.Contains(err.Error(), "escapes") {
				t.Fatalf("Resolve(%q) accepted %q (real %q), but os.Root says: %v", p, rel, r.real, err)
			}
		}
	})
}
