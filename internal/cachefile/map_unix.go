//go:build unix

package cachefile

import (
	"os"

	"golang.org/x/sys/unix"
)

// mmap maps f's size bytes read-only, faulting them in at once with
// populate where the system can (populateFlag). ok is false if it cannot.
func mmap(f *os.File, size int, populate bool) ([]byte, bool) {
	flags := unix.MAP_PRIVATE
	if populate {
		flags |= populateFlag
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, flags)
	return data, err == nil
}
