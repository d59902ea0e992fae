package gitops

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/agentd/agentd/internal/fileset"
)

func gitBin(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("these tests need the git command line as an oracle: %v (apt-get install git)", err)
	}
	return p
}

// run runs git and returns its stdout; it fails the test on error.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(gitBin(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

func openTestStore(t testing.TB, root string, opts Options) *Store {
	t.Helper()
	set, err := fileset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	s, err := openStore(context.Background(), root, set, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// snapshotIn opens a store on root with opts, takes a snapshot and closes
// the store, as one process would; the store is returned for its figures.
func snapshotIn(t testing.TB, root string, opts Options) (*Store, *Snapshot) {
	t.Helper()
	s := openTestStore(t, root, opts)
	snap, err := s.Snapshot(context.Background(), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return s, snap
}

// savedFile is a cache file as a store left it, to tell later whether a
// process saved it again (a save renames a new file over the old one).
type savedFile struct {
	t    testing.TB
	path string
	fi   os.FileInfo
}

func saved(t testing.TB, path string) savedFile {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// On Windows os.Stat leaves the file's identity (volume and file
	// index) to be read from the path when os.SameFile first needs it;
	// read now, else resaved would compare the new file with itself.
	os.SameFile(fi, fi)
	return savedFile{t: t, path: path, fi: fi}
}

// resaved reports whether the file was saved again since saved.
func (f savedFile) resaved() bool {
	f.t.Helper()
	fi, err := os.Stat(f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	return !os.SameFile(f.fi, fi)
}

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(c, "->") {
			os.Remove(abs)
			if err := os.Symlink(c[2:], abs); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(c, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(abs, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(abs, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// treeState describes every entry under root (files, links, dirs) with its
// content hash and mode, skipping nothing: comparing two states proves a
// directory is byte-identical.
func treeState(t testing.TB, root string, skipGit bool) map[string]string {
	t.Helper()
	out := make(map[string]string)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if skipGit && d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			out[rel] = "link:" + tgt
		case fi.IsDir():
			if rel != "." {
				out[rel+"/"] = "dir"
			}
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			out[rel] = fi.Mode().Perm().String() + ":" + hex.EncodeToString(sum[:8])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffStates(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, k+": "+v+" -> "+b[k])
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k+": (none) -> "+v)
		}
	}
	sort.Strings(d)
	return d
}

func fsck(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command(gitBin(t), "--git-dir="+dir, "fsck", "--full", "--strict", "--no-dangling")
	out, err := cmd.CombinedOutput()
	// A bare store has no branch: that notice is not a problem.
	out = bytes.ReplaceAll(out, []byte("notice: HEAD points to an unborn branch (master)\n"), nil)
	out = bytes.ReplaceAll(out, []byte("notice: No default references\n"), nil)
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("git fsck --full on the store %s: %v\n%s", dir, err, out)
	}
}

func mustHash(t testing.TB, id string) plumbing.Hash {
	t.Helper()
	if len(id) != 40 {
		t.Fatalf("bad id %q", id)
	}
	return plumbing.NewHash(id)
}
