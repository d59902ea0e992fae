//go:build !unix

package repomap

import "io/fs"

func inoOf(fs.FileInfo) uint64 { return 0 }
