//go:build unix && !linux

package workspace

import "errors"

var errNoRenameat2 = errors.New("renameat2 is not available")

func renameat2NoReplace(int, string, int, string) error { return errNoRenameat2 }
