//go:build !race && unix

package session

const raceOn = false
