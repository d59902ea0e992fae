//go:build unix

package workspace

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives the replacement file the owner of the file it replaces,
// when the process may (running as root for another user's file). Failure
// is ignored: the content is what matters, and a normal user's own files
// need nothing.
func keepOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	if int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid() {
		return
	}
	_ = f.Chown(int(st.Uid), int(st.Gid))
}

// readFlags open a file for reading without blocking on a FIFO swapped in
// after the type check.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK
