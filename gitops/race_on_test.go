//go:build race

package gitops

// raceOn: the race detector slows the file-system-heavy property and
// attack tests down several times; under it they run fewer rounds (the
// full counts run without -race, e.g. go test ./gitops/).
const raceOn = true
