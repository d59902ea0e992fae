//go:build windows

package platform

import (
	"errors"
	"time"

	"golang.org/x/sys/windows"
)

// RetryBusy runs f, and again for up to about 2.5 seconds while it fails
// because another handle has the file open without FILE_SHARE_DELETE
// (ERROR_ACCESS_DENIED or ERROR_SHARING_VIOLATION on a rename or removal):
// on Windows a reader (agentd's own snapshot scan, an editor, an antivirus
// scanner) blocks replacing a file for as long as it holds it. Git for
// Windows retries the same way. The last error is returned, and
// Explain says what to do about it.
func RetryBusy(f func() error) error {
	delay := 5 * time.Millisecond
	var err error
	for i := 0; i < 9; i++ {
		if err = f(); err == nil || !busy(err) {
			return err
		}
		time.Sleep(delay)
		delay *= 2
	}
	return err
}

func busy(err error) bool {
	return errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_LOCK_VIOLATION)
}
