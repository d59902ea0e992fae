package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5"

	"github.com/agentd/agentd/internal/platform"
)

// durableFS wraps the shadow repository's billy filesystem so that what
// go-git writes through it is on disk before go-git returns: temporary object
// files are fsync'd before they are renamed into place, renames fsync the
// target directory, and Create (used for references and config) writes a
// temporary file and renames it over the target, so a crash never leaves a
// truncated reference behind.
type durableFS struct {
	billy.Filesystem
	root string // absolute OS path of the filesystem's root
}

// Capabilities leaves out ReadAndWriteCapability so go-git writes references
// with Create (atomic here) instead of truncating the file in place.
func (d *durableFS) Capabilities() billy.Capability {
	return billy.WriteCapability | billy.ReadCapability | billy.SeekCapability |
		billy.TruncateCapability | billy.LockCapability
}

func (d *durableFS) abs(name string) string { return filepath.Join(d.root, filepath.FromSlash(name)) }

func (d *durableFS) TempFile(dir, prefix string) (billy.File, error) {
	f, err := d.Filesystem.TempFile(dir, prefix)
	if err != nil {
		return nil, err
	}
	return &syncOnClose{File: f, fs: d}, nil
}

func (d *durableFS) Rename(from, to string) error {
	parent := filepath.Dir(d.abs(to))
	_, statErr := os.Stat(parent)
	if err := d.Filesystem.Rename(from, to); err != nil {
		return err
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	if statErr != nil {
		// The parent was just created (objects/xx, refs/agentd/runs/R): its
		// own entry must be durable too.
		return syncDir(filepath.Dir(parent))
	}
	return nil
}

func (d *durableFS) Create(name string) (billy.File, error) {
	dir := path.Dir(filepath.ToSlash(name))
	if err := d.Filesystem.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := d.Filesystem.TempFile(dir, ".tmp-"+path.Base(name))
	if err != nil {
		return nil, err
	}
	return &atomicFile{File: f, fs: d, final: name}, nil
}

type syncOnClose struct {
	billy.File
	fs *durableFS
}

func (f *syncOnClose) Close() error {
	if err := f.File.Close(); err != nil {
		return err
	}
	return syncFile(f.fs.abs(f.File.Name()))
}

type atomicFile struct {
	billy.File
	fs    *durableFS
	final string
}

func (f *atomicFile) Name() string { return f.final }

func (f *atomicFile) Close() error {
	tmp := f.File.Name()
	if err := f.File.Close(); err != nil {
		_ = f.fs.Filesystem.Remove(tmp)
		return err
	}
	if err := syncFile(f.fs.abs(tmp)); err != nil {
		_ = f.fs.Filesystem.Remove(tmp)
		return err
	}
	return f.fs.Rename(tmp, f.final)
}

// syncWrites turns fsync off for tests that exercise logic, not
// durability (the crash tests keep it on).
var syncWrites = true

// syncFile fsyncs a file's data by path.
func syncFile(name string) error {
	if !syncWrites {
		return nil
	}
	f, err := openForSync(name)
	if err != nil {
		return err
	}
	if f == nil {
		return nil
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir fsyncs a directory so entries renamed into it survive a crash.
func syncDir(dir string) error {
	if !syncWrites || !canSyncDirs {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) { // some filesystems cannot sync directories
		err = nil
	}
	return err
}

// writeFileAtomic writes data to name through a temporary file in the same
// directory: fsync'd, renamed, directory fsync'd. With durable false the
// fsyncs are left out and the old file is removed before the rename (for
// caches whose loss only costs time).
func writeFileAtomic(name string, data []byte, perm fs.FileMode, durable bool) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(name))
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if durable && syncWrites {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !durable {
		// Renaming over an existing file makes ext4 (auto_da_alloc) write
		// the new data out at the next journal commit, that is at the next
		// fsync of anything on the filesystem: a 6 MB stat cache was being
		// written out inside the following restore's fsyncs. A file whose
		// loss only costs time need not be replaced atomically: remove the
		// old one first, so that the rename replaces nothing.
		_ = os.Remove(name)
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	ok = true
	if durable {
		return syncDir(dir)
	}
	return nil
}

// fileLock is a lock (flock, LockFileEx on Windows) on a file of the store, held by the
// process doing a write (snapshot, restore, gc) so that a daemon and a CLI
// invocation on the same workspace take turns.
type fileLock struct{ f *os.File }

func lockFile(ctx context.Context, name string) (*fileLock, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = platform.TryLock(f)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if !errors.Is(err, platform.ErrLocked) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("waiting for another agentd process to finish with the snapshot store (%s): %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// lockPoll is how often a blocked store lock is retried.
var lockPoll = 20 * time.Millisecond

func (l *fileLock) unlock() {
	_ = platform.Unlock(l.f)
	_ = l.f.Close()
}
