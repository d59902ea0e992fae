//go:build !windows

package platform

// NameProblem says why this OS cannot have a file of this name (one path
// component), or "": POSIX systems take any name.
func NameProblem(string) string { return "" }

// Explain returns err; POSIX errors say what happened already.
func Explain(err error, _ string) error { return err }
