//go:build windows

package gitops

import "io/fs"

// inode: a FileInfo from Lstat carries no file index on Windows (it would
// take an open handle per file); the stat cache relies on size, mtime and
// ctime there.
func inode(fs.FileInfo) uint64 { return 0 }
