//go:build unix

package repomap

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps name read-only: a new process touches only the pages of
// the cache file it uses (the identifiers' index, not every identifier).
// The mapping is never undone: the records loaded point into it for the
// life of the process. The cache file is only ever replaced by a rename,
// never rewritten in place, so the mapped pages stay the ones loaded.
func mapFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 || int64(int(fi.Size())) != fi.Size() {
		return os.ReadFile(name)
	}
	return unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
}
