//go:build race && unix

package session

// raceOn: under the race detector the random undo test runs fewer
// sequences (the full count runs without -race: make soak-undo).
const raceOn = true
