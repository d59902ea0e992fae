//go:build !unix

package cachefile

import "os"

// mmap is not used here: the file is read.
func mmap(*os.File, int, bool) ([]byte, bool) { return nil, false }
