//go:build unix

package repomap

import (
	"io/fs"
	"syscall"
)

// inoOf is fi's inode number: a file replaced by a rename keeps its size
// and may keep its mtime, never its inode.
func inoOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
