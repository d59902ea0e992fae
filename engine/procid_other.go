//go:build !linux

package engine

// procIdentity cannot tell processes with the same id apart here: a
// run's process is then known by its id alone.
func procIdentity(int) string { return "" }
