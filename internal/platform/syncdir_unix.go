//go:build unix

package platform

import (
	"errors"
	"os"
	"syscall"
)

// SyncDir makes the entries of a directory (files renamed into it) durable.
// A filesystem that cannot sync directories (EINVAL) has nothing to do.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}
