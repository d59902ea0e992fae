//go:build windows

package gitops

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// openNoFollow opens a workspace file for reading, refusing a symlink or
// junction there (errIsLink). Windows has no O_NOFOLLOW: the check is an
// Lstat just before the open, and the opened handle is checked again, so
// a link swapped in between is refused too (it would be read as a link's
// target otherwise).
func openNoFollow(abs string) (*os.File, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return nil, errIsLink
	}
	// os.Lstat reads the file's identity (volume, file index) only when
	// os.SameFile first asks, from the path: read it now, before the
	// open, so that the check below compares what Lstat saw.
	os.SameFile(fi, fi)
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	if now, err := f.Stat(); err == nil && !os.SameFile(fi, now) {
		f.Close()
		return nil, errIsLink
	}
	return f, nil
}

// unreadableReason says why a file that exists cannot be read now, in
// words for SkippedFile.Reason, or "" when err is not such a case. A file
// another program holds open without sharing (Office, some editors and
// antivirus scanners do) is left out of the snapshot and reported, as
// an unreadable file is: a restore keeps it as it is.
func unreadableReason(err error) string {
	switch {
	case errors.Is(err, windows.ERROR_SHARING_VIOLATION), errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return "cannot be read: another program has it open without sharing; close it there and snapshot again"
	case errors.Is(err, os.ErrPermission):
		return "cannot be read: permission denied"
	}
	return ""
}

// canSyncDirs: Windows cannot flush a directory (FlushFileBuffers on a
// directory handle fails); NTFS journals directory entries itself.
const canSyncDirs = false

// openForSync opens a file to flush it: FlushFileBuffers needs write
// access on Windows. A file with the read-only attribute (a finished pack
// index) cannot be opened so; it was flushed before it was made
// read-only, so nil, nil says there is nothing to do.
func openForSync(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrPermission) {
		if fi, serr := os.Stat(name); serr == nil && fi.Mode().Perm()&0o200 == 0 {
			return nil, nil
		}
	}
	return f, err
}
