package fileset

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"
)

// racyWindow is how close to a read a file's mtime may be before the cached
// content is distrusted: a second write within the same timestamp tick
// would otherwise keep an identical stat. Generous enough for coarse
// (FAT, 2 s) timestamps; re-reading a small file costs little.
var racyWindow = 2 * time.Second

// stamp identifies a version of a file by its stat data.
type stamp struct {
	ino, size    int64
	mtime, ctime int64 // nanoseconds
	mode         fs.FileMode
}

// fileCache keeps parsed ignore, config and index files, each re-read when
// its stat changes. Safe for concurrent use.
type fileCache struct {
	mu      sync.Mutex
	entries map[string]*cachedFile
}

type cachedFile struct {
	stamp stamp
	racy  bool // mtime was too recent when read: re-read next time
	value any
}

// load returns the parsed content of path, or nil if it does not exist or
// is not a regular file. follow=false refuses symlinks (git reads in-tree
// .gitignore files with O_NOFOLLOW and ignores links).
func (c *fileCache) load(path string, follow bool, parse func([]byte) (any, error)) (any, error) {
	st, ok, err := statStamp(path, follow)
	if err != nil {
		return nil, err
	}
	if !ok {
		c.mu.Lock()
		delete(c.entries, path)
		c.mu.Unlock()
		return nil, nil
	}
	c.mu.Lock()
	e := c.entries[path]
	c.mu.Unlock()
	if e != nil && e.stamp == st && !e.racy {
		return e.value, nil
	}
	readAt := time.Now()
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, nil
		}
		return nil, err
	}
	v, err := parse(data)
	if err != nil {
		return nil, err
	}
	e = &cachedFile{stamp: st, value: v, racy: st.mtime > readAt.Add(-racyWindow).UnixNano()}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*cachedFile{}
	}
	c.entries[path] = e
	c.mu.Unlock()
	return v, nil
}

// statStamp stats path; ok is false when it is missing or not a regular
// file (a symlink counts as missing unless follow).
func statStamp(path string, follow bool) (stamp, bool, error) {
	var fi fs.FileInfo
	var err error
	if follow {
		fi, err = os.Stat(path)
	} else {
		fi, err = os.Lstat(path)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || isNotDir(err) {
			return stamp{}, false, nil
		}
		return stamp{}, false, err
	}
	if !fi.Mode().IsRegular() {
		return stamp{}, false, nil
	}
	return stampOf(fi), true, nil
}
