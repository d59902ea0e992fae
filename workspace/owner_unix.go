//go:build unix

package workspace

import (
	"os"
	"syscall"
)

// keepOwner gives the replacement file the owner of the file it replaces,
// when the process may (running as root for another user's file). Failure
// is ignored: the content is what matters, and a normal user's own files
// need nothing.
func keepOwner(f *os.File, old meta) {
	if old.uid == os.Geteuid() && old.gid == os.Getegid() {
		return
	}
	_ = f.Chown(old.uid, old.gid)
}

// readFlags open a file for reading without blocking on a FIFO swapped in
// after the type check.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK
