package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path"
	"strings"
	"sync"
)

// The restore changes the workspace only through directory handles
// (dirFD): on Linux and macOS a file descriptor (wsfs_unix.go), on Windows
// an *os.Root (wsfs_windows.go). docs/architecture.md ("Restores on
// Windows") says what each guarantees.

// wsRoot is the workspace's root directory, opened once per restore.
type wsRoot struct {
	fd dirFD
	// made are the parents of the directories openDir made ("" = the
	// root), whose entries changed: a restore syncs them.
	mu   sync.Mutex
	made map[string]bool
}

// noteMade records that an entry of directory dir was made or removed.
func (w *wsRoot) noteMade(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.made == nil {
		w.made = map[string]bool{}
	}
	w.made[dir] = true
}

// errTooLarge: a file over the size limit (readAt).
var errTooLarge = errors.New("too large")

// errNotDir: a parent of a path is not a directory (a file or a symlink
// is in the way).
var errNotDir = errors.New("not a directory (a file or symlink is in the way)")

// tmpName is the temporary name a restore writes path under before it
// renames it into place: short and of fixed length whatever the file's
// name (a 255-byte name must restore), and derived from the restore's
// nonce and the path so that recovery after a crash removes exactly the
// temporary files of that restore, never a user's file that merely looks
// like one.
func tmpName(nonce, p string) string {
	sum := sha256.Sum256([]byte(nonce + "\x00" + p))
	return ".agentd-" + hex.EncodeToString(sum[:8]) + ".tmp"
}

// splitRel splits a slash path into its directory ("" for the root) and
// base name.
func splitRel(p string) (string, string) {
	d, b := path.Split(p)
	return strings.TrimSuffix(d, "/"), b
}
