package gitops

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestDecodeIdxMatchesGoGit: the store's one-read index loader gives the
// same index as go-git's decoder, for a real pack index and for one with
// 64-bit offsets, and refuses every damaged byte.
func TestDecodeIdxMatchesGoGit(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%d/f%d.txt", i%9, i)] = fmt.Sprintf("file %d\n", i)
	}
	writeTree(t, root, files)
	s := openTestStore(t, root, Options{})
	if _, err := s.Snapshot(context.Background(), SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	names, _ := filepath.Glob(filepath.Join(s.Dir(), "objects", "pack", "pack-*.idx"))
	if len(names) != 1 {
		t.Fatalf("packs: %v", names)
	}
	data, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	same := func(data []byte) {
		t.Helper()
		want := idxfile.NewMemoryIndex()
		if err := idxfile.NewDecoder(bytes.NewReader(data)).Decode(want); err != nil {
			t.Fatalf("go-git's decoder: %v", err)
		}
		got, err := decodeIdx(data)
		if err != nil {
			t.Fatalf("decodeIdx: %v", err)
		}
		if got.Version != want.Version || got.Fanout != want.Fanout || got.FanoutMapping != want.FanoutMapping ||
			!reflect.DeepEqual(got.Names, want.Names) || !reflect.DeepEqual(got.CRC32, want.CRC32) ||
			!reflect.DeepEqual(got.Offset32, want.Offset32) || !bytes.Equal(got.Offset64, want.Offset64) ||
			got.PackfileChecksum != want.PackfileChecksum || got.IdxChecksum != want.IdxChecksum {
			t.Fatalf("decodeIdx differs from go-git's decoder")
		}
		n, _ := want.Count()
		if n < 300 {
			t.Fatalf("only %d objects", n)
		}
		it, _ := want.Entries()
		for {
			e, err := it.Next()
			if err != nil {
				break
			}
			off, err := got.FindOffset(e.Hash)
			if err != nil || uint64(off) != e.Offset {
				t.Fatalf("offset of %s: %d, %v; want %d", e.Hash, off, err, e.Offset)
			}
		}
	}
	same(data)

	// A pack over 2 GiB: the first object's offset in the 64-bit table.
	big := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(data)).Decode(big); err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(big.Offset32[0][0:4], 1<<31)
	big.Offset64 = binary.BigEndian.AppendUint64(nil, 5<<30)
	var buf bytes.Buffer
	if _, err := idxfile.NewEncoder(&buf).Encode(big); err != nil {
		t.Fatal(err)
	}
	same(buf.Bytes())

	for i := 0; i < len(data); i += 1 + len(data)/200 {
		bad := bytes.Clone(data)
		bad[i] ^= 0x04
		if _, err := decodeIdx(bad); err == nil {
			t.Fatalf("an index with byte %d of %d changed was accepted", i, len(data))
		}
	}
	if _, err := decodeIdx(data[:len(data)-1]); err == nil {
		t.Fatal("a truncated index was accepted")
	}
}

// TestParseTreeMatchesGoGit: the store's tree decoder reads what go-git
// encodes (every mode, odd names), and refuses truncated trees.
func TestParseTreeMatchesGoGit(t *testing.T) {
	want := &object.Tree{Entries: []object.TreeEntry{
		{Name: "a b.txt", Mode: filemode.Regular, Hash: plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")},
		{Name: "bin", Mode: filemode.Executable, Hash: plumbing.NewHash("1123456789abcdef0123456789abcdef01234567")},
		{Name: "dir", Mode: filemode.Dir, Hash: plumbing.NewHash("2123456789abcdef0123456789abcdef01234567")},
		{Name: "link", Mode: filemode.Symlink, Hash: plumbing.NewHash("3123456789abcdef0123456789abcdef01234567")},
		{Name: "ünï", Mode: filemode.Regular, Hash: plumbing.NewHash("4123456789abcdef0123456789abcdef01234567")},
	}}
	h, data, err := encodeObject(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseTree(h, data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != h || !reflect.DeepEqual(got.Entries, want.Entries) {
		t.Fatalf("parsed %+v\nwant %+v", got.Entries, want.Entries)
	}
	for _, n := range []int{1, 7, len(data) - 1} {
		if _, err := parseTree(h, data[:n]); err == nil {
			t.Fatalf("a tree cut at byte %d was accepted", n)
		}
	}
}

// TestScanChangesMatchTreeDiff: the changes a snapshot records from its
// scan are what comparing its tree with the previous snapshot's gives,
// order included, through edits, new and deleted files, mode changes,
// file <-> symlink and file <-> directory swaps, in a new process each
// time (as agentd snapshot create).
func TestScanChangesMatchTreeDiff(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files := map[string]string{"a.txt": "a\n", "a/x": "x\n", "b/c/d.txt": "d\n", "b/c.txt": "c\n", "e": "e\n", "f.sh": "f\n"}
	writeTree(t, root, files)
	opts := Options{StateDir: t.TempDir()}
	rng := rand.New(rand.NewPCG(1, 2))
	var prev *Snapshot
	for round := range 12 {
		s := openTestStore(t, root, opts)
		snap, err := s.Snapshot(ctx, SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil {
			pc, err := s.readCommit(plumbing.NewHash(prev.ID))
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.readCommit(plumbing.NewHash(snap.ID))
			if err != nil {
				t.Fatal(err)
			}
			want, err := s.diffTrees(pc.TreeHash, c.TreeHash)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				want = nil
			}
			got := snap.Changes
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, want) || snap.FilesChanged != len(want) {
				t.Fatalf("round %d: the snapshot records %v (%d changed), its trees differ by %v", round, got, snap.FilesChanged, want)
			}
			if round > 1 && len(want) == 0 {
				t.Fatalf("round %d: nothing changed", round)
			}
		}
		s.Close()
		prev = snap
		// Make the files look older than the racy window, then change some.
		old := time.Now().Add(-time.Hour)
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				os.Chtimes(p, old, old)
			}
			return nil
		})
		switch round % 4 {
		case 0:
			os.WriteFile(filepath.Join(root, "e"), []byte(fmt.Sprintf("e%d\n", round)), 0o644)
			os.Chmod(filepath.Join(root, "f.sh"), 0o755)
			os.WriteFile(filepath.Join(root, fmt.Sprintf("n%d.txt", rng.IntN(5))), []byte("n\n"), 0o644)
			// "a/x" comes before "a.txt" in a tree comparison.
			os.Remove(filepath.Join(root, "a.txt"))
			os.WriteFile(filepath.Join(root, "a.txt"), []byte(fmt.Sprintf("a%d\n", round)), 0o644)
			if fi, err := os.Lstat(filepath.Join(root, "a")); err == nil && fi.IsDir() {
				os.WriteFile(filepath.Join(root, "a", "x"), []byte(fmt.Sprintf("x%d\n", round)), 0o644)
			}
		case 1:
			os.Remove(filepath.Join(root, "a.txt"))
			os.Symlink("e", filepath.Join(root, "a.txt"))
			os.RemoveAll(filepath.Join(root, "b", "c"))
			os.WriteFile(filepath.Join(root, "b", "c"), []byte("now a file\n"), 0o644)
		case 2:
			os.Remove(filepath.Join(root, "a.txt"))
			os.WriteFile(filepath.Join(root, "a.txt"), []byte("a again\n"), 0o644)
			os.Remove(filepath.Join(root, "b", "c"))
			os.MkdirAll(filepath.Join(root, "b", "c"), 0o755)
			os.WriteFile(filepath.Join(root, "b", "c", "d.txt"), []byte("d2\n"), 0o644)
			os.Chmod(filepath.Join(root, "f.sh"), 0o644)
		case 3:
			if fi, err := os.Lstat(filepath.Join(root, "a")); err == nil && fi.IsDir() {
				os.RemoveAll(filepath.Join(root, "a"))
				os.WriteFile(filepath.Join(root, "a"), []byte("a is a file\n"), 0o644)
			} else {
				os.Remove(filepath.Join(root, "a"))
				os.MkdirAll(filepath.Join(root, "a"), 0o755)
				os.WriteFile(filepath.Join(root, "a", "x"), []byte("x\n"), 0o644)
			}
		}
		// Back-date the changes too, so that they are not racy (the
		// comparison must hold for trusted files as well).
		os.Chtimes(filepath.Join(root, "e"), old.Add(time.Minute), old.Add(time.Minute))
	}
}

// TestRacyRehashKeepsCacheFile: a process whose snapshot only re-hashes a
// few racy files, unchanged, does not rewrite the stat cache; the next
// process still re-hashes them and sees a change made within the
// timestamp granularity.
func TestRacyRehashKeepsCacheFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f": "aaaa\n", "g": "g\n"})
	opts := Options{StateDir: t.TempDir()}
	s, _ := snapshotIn(t, root, opts)
	cache := saved(t, filepath.Join(s.Dir(), cacheName))
	s2, snap := snapshotIn(t, root, opts)
	if n := s2.hashed.Load(); n == 0 || snap.FilesChanged != 0 {
		t.Fatalf("the racy files were not re-hashed (%d), or changed: %+v", n, snap)
	}
	if cache.resaved() {
		t.Fatal("the stat cache was rewritten for racy files that did not change")
	}
	rewriteSameStat(t, filepath.Join(root, "f"), "bbbb\n")
	if _, snap = snapshotIn(t, root, opts); snap.FilesChanged != 1 {
		t.Fatalf("a change within the timestamp granularity was missed: %+v", snap)
	}
}

// rewriteSameStat overwrites the file abs in place with content of the
// same size and puts its mtime back: same size, mtime and inode, so only
// re-hashing (the racy rule) can see the change.
func rewriteSameStat(t *testing.T, abs, content string) {
	t.Helper()
	fi, err := os.Stat(abs)
	if err != nil || fi.Size() != int64(len(content)) {
		t.Fatalf("rewrite %s: %v (size %d, want %d)", abs, err, fi.Size(), len(content))
	}
	f, err := os.OpenFile(abs, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(abs, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}
