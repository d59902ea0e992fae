//go:build !linux

package repomap

import (
	"os"
	"path/filepath"
)

// statFiles lstats paths (files of the slash-separated directory dir,
// relative to root) and calls fn for each regular file.
func statFiles(root, _ string, paths []string, fn func(p string, st stat)) {
	for _, p := range paths {
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() {
			fn(p, statOf(fi))
		}
	}
}
