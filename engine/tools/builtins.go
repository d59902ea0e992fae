package tools

// builtins lists every built-in tool; each lives in its own file.
func builtins() []Tool { return nil }
