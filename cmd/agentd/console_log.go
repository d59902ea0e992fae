package main

import "strings"

// consoleLog is the run's log on a terminal: each line printed above the
// live status line through the console, never over it (and also to
// --log-file, as always).
type consoleLog struct{ con *console }

func (c consoleLog) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		c.con.Println(c.con.paint("90", line))
	}
	return len(p), nil
}
