package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Every change agentd makes on disk goes through a directory handle: the
// parent directory of the file is opened component by component from the
// workspace root without following any symbolic link (openat with
// O_NOFOLLOW on Unix), and the file is then created, renamed or removed
// relative to that handle (openat, renameat, unlinkat, symlinkat). A
// directory swapped for a link at any moment — to outside the workspace or
// to another directory inside it — makes the operation fail; it is never
// followed. The paths given here are symlink-free already (resolve made
// them so), so a link on the way can only be a race.

// errLinkSwapped is wrapped when a directory on the way turned out to be a
// symbolic link (or not a directory) while agentd was writing.
var errLinkSwapped = errors.New("changed into a symbolic link or a non-directory while agentd was writing; nothing was written through it")

// meta is what agentd needs to know about a directory entry.
type meta struct {
	mode fs.FileMode // type and permission bits, as fs.FileMode
	// The owner, kept across a rewrite (owner_unix.go).
	//lint:ignore U1000 set and read on Unix only; Windows files have no uid/gid
	uid, gid int
}

func (m meta) isLink() bool    { return m.mode&fs.ModeSymlink != 0 }
func (m meta) isRegular() bool { return m.mode.IsRegular() }

// tmpNameLen is the length of a temporary file's name: fixed, short, so a
// file whose own name is 255 bytes long can still be written.
const tmpNameLen = len(".agentd-") + 12 + len(".tmp")

// dirSteps splits a symlink-free relative directory into its components,
// refusing anything that is not a plain name ("." is the root).
func dirSteps(rel string) ([]string, error) {
	if rel == "." || rel == "" {
		return nil, nil
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("%w: %q is not a clean relative directory", ErrInvalidPath, rel)
		}
	}
	return parts, nil
}

// createTempIn creates a new temporary file with a short fixed-length name
// in d (O_EXCL, never through a link).
func createTempIn(d dirHandle, perm fs.FileMode) (string, *os.File, error) {
	for range 10 {
		name := tempName()
		f, err := d.create(name, perm)
		if err == nil {
			return name, f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("create temporary file: %w", err)
		}
	}
	return "", nil, errors.New("create temporary file: too many name collisions")
}

// tempName returns a random temporary name of tmpNameLen bytes.
func tempName() string {
	var b [6]byte
	rand.Read(b[:])
	return ".agentd-" + hex.EncodeToString(b[:]) + ".tmp"
}

// splitReal splits a symlink-free relative path into its directory and
// its last name.
func splitReal(real string) (dir, base string) {
	i := strings.LastIndexByte(real, '/')
	if i < 0 {
		return ".", real
	}
	return real[:i], real[i+1:]
}

// dirHandle is an open directory of the workspace; names are single
// components inside it, never followed when they are links.
type dirHandle interface {
	// lstat describes the entry itself (a link is reported as a link); a
	// missing entry is an error wrapping fs.ErrNotExist.
	lstat(name string) (meta, error)
	readlink(name string) (string, error)
	// create makes a new file (O_EXCL: an existing entry, a link
	// included, is fs.ErrExist) with perm under the umask.
	create(name string, perm fs.FileMode) (*os.File, error)
	// rename replaces to (the entry itself, even a link) with from.
	rename(from, to string) error
	// remove unlinks a file or a link (never its target, never a directory).
	remove(name string) error
	symlink(target, name string) error
	// sync makes renames and removals in the directory durable; failure is
	// ignored (some file systems cannot sync directories).
	sync()
	close()
}
