//go:build !unix

package workspace

import "os"

// keepOwner does nothing where files have no Unix owner.
func keepOwner(*os.File, meta) {}

// readFlags open a file for reading without blocking on a FIFO swapped in
// after the type check.
const readFlags = os.O_RDONLY
