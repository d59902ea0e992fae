//go:build !unix

package workspace

import (
	"io/fs"
	"os"
)

// keepOwner does nothing where files have no Unix owner.
func keepOwner(*os.File, fs.FileInfo) {}

// readFlags open a file for reading without blocking on a FIFO swapped in
// after the type check.
const readFlags = os.O_RDONLY
