package repomap

import (
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// statFiles lstats paths (files of the slash-separated directory dir,
// relative to root) and calls fn for each regular file. The directory is
// opened once and each file stat'ed relative to it: the kernel does not
// resolve the whole path for each of a big tree's files.
func statFiles(root, dir string, paths []string, fn func(p string, st stat)) {
	if len(paths) == 0 {
		return
	}
	fd, err := unix.Open(filepath.Join(root, filepath.FromSlash(dir)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return // gone since the walk listed it
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	for _, p := range paths {
		if err := unix.Fstatat(fd, path.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		fn(p, stat{size: st.Size, mtime: st.Mtim.Nano(), ino: st.Ino})
	}
}
