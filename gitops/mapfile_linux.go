package gitops

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile returns the content of f (of size size) mapped read-only and
// never unmapped, for a one-shot process (see OneShot): the stat cache and
// the directory cache are decoded in place, and reading them into the
// heap first was, with its page faults, a tenth of a cold no-change
// snapshot's system time. ok is false if it cannot be mapped (read it
// then). The store replaces these files only by renaming a new file over
// them, so the mapped one never changes.
func mapFile(f *os.File, size int64) ([]byte, bool) {
	if size <= 0 || int64(int(size)) != size {
		return nil, false
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		return nil, false
	}
	return data, true
}
