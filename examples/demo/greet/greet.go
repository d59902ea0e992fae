// Package greet makes greetings.
package greet

import "strings"

// Hello returns a greeting for name.
func Hello(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "world"
	}
	return "Hello, " + name + "!"
}

// HelloAll greets several people, one per line.
func HelloAll(names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(Hello(n))
		b.WriteByte('\n')
	}
	return b.String()
}
