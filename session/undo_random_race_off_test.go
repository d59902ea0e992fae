//go:build !race && unix && undorandom

package session

const raceOn = false
