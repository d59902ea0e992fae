package gitops

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/agentd/agentd/internal/platform"
)

// checkRel refuses a workspace-relative slash path that is not clean, leaves
// the workspace or enters a .git directory.
func checkRel(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("%q is not a clean path relative to the workspace", p)
	}
	for _, part := range strings.Split(p, "/") {
		if platform.IsGitName(part) { // .GIT, and on Windows .git. and GIT~1 too
			return fmt.Errorf("%q is inside a .git directory, which snapshots never hold", p)
		}
	}
	return nil
}

// contentOverrides turns SnapshotOptions.Contents into tree entries,
// storing their blobs through sink.
func (s *Store) contentOverrides(contents map[string][]byte, sink objSink) (map[string]*treeFile, error) {
	out := make(map[string]*treeFile, len(contents))
	for p, data := range contents {
		if err := checkRel(p); err != nil {
			return nil, fmt.Errorf("snapshot contents: %w", err)
		}
		mode := filemode.Regular
		if fi, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o100 != 0 {
			mode = filemode.Executable
		}
		h := hashObject(plumbing.BlobObject, data)
		if err := sink.put(plumbing.BlobObject, h, data); err != nil {
			return nil, fmt.Errorf("store the contents given for %s: %w", p, err)
		}
		out[p] = &treeFile{mode: mode, hash: h}
	}
	return out, nil
}

// patchTree returns tree root with the entries of ov (relative paths; nil
// = absent) put in place, writing the trees that change through sink.
func (s *Store) patchTree(root plumbing.Hash, ov map[string]*treeFile, sink objSink) (plumbing.Hash, error) {
	h, _, err := s.patchDir(root, ov, sink)
	if err == nil && h.IsZero() {
		// Nothing left: the empty tree.
		var data []byte
		if h, data, err = encodeObject(&object.Tree{}); err == nil {
			err = sink.put(plumbing.TreeObject, h, data)
		}
	}
	return h, err
}

func (s *Store) patchDir(h plumbing.Hash, ov map[string]*treeFile, sink objSink) (plumbing.Hash, int, error) {
	entries := map[string]object.TreeEntry{}
	if !h.IsZero() {
		t, err := s.readTree(h)
		if err != nil {
			return plumbing.ZeroHash, 0, err
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	subs := map[string]map[string]*treeFile{}
	for p, f := range ov {
		name, rest, nested := strings.Cut(p, "/")
		if !nested {
			if f == nil {
				if e, ok := entries[name]; ok && e.Mode != filemode.Dir {
					delete(entries, name)
				}
			} else {
				entries[name] = object.TreeEntry{Name: name, Mode: f.mode, Hash: f.hash}
			}
			continue
		}
		if subs[name] == nil {
			subs[name] = map[string]*treeFile{}
		}
		subs[name][rest] = f
	}
	for name, sub := range subs {
		var child plumbing.Hash
		if e, ok := entries[name]; ok && e.Mode == filemode.Dir {
			child = e.Hash
		} else if ok && !anyPresent(sub) {
			continue // a file where only absent paths below it were asked for
		}
		ch, n, err := s.patchDir(child, sub, sink)
		if err != nil {
			return plumbing.ZeroHash, 0, err
		}
		if n == 0 {
			if e, ok := entries[name]; ok && e.Mode == filemode.Dir {
				delete(entries, name)
			}
			continue
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: ch}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, 0, nil
	}
	list := make([]object.TreeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return gitName(list[i]) < gitName(list[j]) })
	th, data, err := encodeObject(&object.Tree{Entries: list})
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	if err := sink.put(plumbing.TreeObject, th, data); err != nil {
		return plumbing.ZeroHash, 0, err
	}
	return th, len(list), nil
}

func anyPresent(ov map[string]*treeFile) bool {
	for _, f := range ov {
		if f != nil {
			return true
		}
	}
	return false
}

// gitName is an entry's name as git sorts it (directories with a '/').
func gitName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// diffTrees lists the files that differ between trees a and b (zero: empty),
// in path order, reading only subtrees whose ids differ.
func (s *Store) diffTrees(a, b plumbing.Hash) ([]FileChange, error) {
	var out []FileChange
	err := s.diffDir("", a, b, &out)
	return out, err
}

func (s *Store) diffDir(dir string, a, b plumbing.Hash, out *[]FileChange) error {
	if a == b {
		return nil
	}
	read := func(h plumbing.Hash) (map[string]object.TreeEntry, error) {
		m := map[string]object.TreeEntry{}
		if h.IsZero() {
			return m, nil
		}
		t, err := s.readTree(h)
		if err != nil {
			return nil, err
		}
		for _, e := range t.Entries {
			m[e.Name] = e
		}
		return m, nil
	}
	ea, err := read(a)
	if err != nil {
		return err
	}
	eb, err := read(b)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ea)+len(eb))
	for n := range ea {
		names = append(names, n)
	}
	for n := range eb {
		if _, ok := ea[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		x, inA := ea[n]
		y, inB := eb[n]
		var subA, subB plumbing.Hash
		aFile, bFile := inA && x.Mode != filemode.Dir, inB && y.Mode != filemode.Dir
		if inA && x.Mode == filemode.Dir {
			subA = x.Hash
		}
		if inB && y.Mode == filemode.Dir {
			subB = y.Hash
		}
		switch {
		case aFile && bFile:
			if x.Hash != y.Hash || (x.Mode != y.Mode && (x.Mode == filemode.Symlink || y.Mode == filemode.Symlink)) {
				*out = append(*out, FileChange{Path: dir + n, Kind: ChangeModified})
			} else if x.Mode != y.Mode {
				*out = append(*out, FileChange{Path: dir + n, Kind: ChangeMode})
			}
		case aFile:
			*out = append(*out, FileChange{Path: dir + n, Kind: ChangeDeleted})
		case bFile:
			*out = append(*out, FileChange{Path: dir + n, Kind: ChangeAdded})
		}
		if !subA.IsZero() || !subB.IsZero() {
			if err := s.diffDir(dir+n+"/", subA, subB, out); err != nil {
				return err
			}
		}
	}
	return nil
}
