//go:build !linux

package gitops

import "os"

// mapFile is not used on this platform: the caller reads the file.
func mapFile(*os.File, int64) ([]byte, bool) { return nil, false }
