//go:build !linux && unix

package fileset

import (
	"io/fs"
	"syscall"
)

func inoOf(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Ino)
	}
	return 0
}
