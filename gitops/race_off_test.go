//go:build !race

package gitops

const raceOn = false
