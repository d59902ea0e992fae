// Package cachefile reads agentd's cache files whole (the snapshot store's
// stat and directory caches and pack indexes, the repository map), mapped
// into memory when a short-lived process asks for it.
//
// A mapping is read-only and never undone: what is decoded from it may
// point into it for the life of the process. That is safe because agentd
// replaces a cache file only by renaming a new file over it, never by
// writing into it, so the mapped pages stay the ones loaded. A long-lived
// process reads instead (Copy): a mapping of a replaced file would hold its
// disk space.
package cachefile

import (
	"io"
	"os"
)

// Mode is how a cache file is read.
type Mode int

const (
	// Copy reads the file into memory.
	Copy Mode = iota
	// Map maps it: a process touches only the pages it uses (an index,
	// not every record).
	Map
	// MapAll maps it and faults every page in at once, for a file that is
	// decoded whole: fewer, larger page faults than touching each page.
	MapAll
)

// Load returns the content of the file name, read as m says (see Open).
func Load(name string, m Mode) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Open(f, fi.Size(), m)
}

// Open returns the content of f, of size bytes, read as m says. Where the
// system cannot map it (or it is empty), it is read into memory.
func Open(f *os.File, size int64, m Mode) ([]byte, error) {
	if m != Copy && size > 0 && int64(int(size)) == size {
		if data, ok := mmap(f, int(size), m == MapAll); ok {
			return data, nil
		}
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	return data, nil
}
