//go:build windows

package platform

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

// NameProblem says why Windows cannot have a file of this name (one path
// component), or "".
func NameProblem(name string) string { return WindowsNameProblem(name) }

// Explain adds what to do to the Windows errors a user can act on: a file
// another program holds open (sharing or lock violation), and a path past
// the 260-character limit. abs is the absolute path concerned, or "".
func Explain(err error, abs string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_SHARING_VIOLATION), errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return fmt.Errorf("%w: another program has the file open (Windows does not let it be replaced or read meanwhile); close it there and try again", err)
	case errors.Is(err, windows.ERROR_FILENAME_EXCED_RANGE),
		len(abs) >= WindowsMaxPath && errors.Is(err, windows.ERROR_PATH_NOT_FOUND):
		return fmt.Errorf("%w: the path is %d characters, past Windows' %d-character limit; shorten it or enable long paths (LongPathsEnabled in the registry)", err, len(abs), WindowsMaxPath)
	}
	return err
}

// IsGitName reports whether a path component names a .git directory on
// Windows: every alias Windows opens it under (WindowsGitAlias).
func IsGitName(name string) bool { return WindowsGitAlias(name) }
