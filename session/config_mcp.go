package session

import (
	"encoding/json"
	"fmt"
	"time"
)

// The keys of the user's config file that bound the editor's MCP servers:
// how long a server may take to start (the initialize handshake and the
// listing of its tools) and to answer each tools/call.
const (
	MCPStartTimeoutKey = "mcpStartTimeout"
	MCPCallTimeoutKey  = "mcpCallTimeout"
)

// ConfigMCPTimeouts are the bounds the user's config file sets for the
// MCP servers ("mcpStartTimeout": "30s", "mcpCallTimeout": "2m": a Go
// duration, or a number of seconds); 0 for a key not set, which leaves
// the default (mcptools.DefaultStartTimeout, DefaultCallTimeout). As for
// mcpTrustedServers only the user's config file is read. A value that is
// not a positive duration is an error naming the file and the key.
func ConfigMCPTimeouts(getenv func(string) string) (start, call time.Duration, err error) {
	c := userConfigFile(getenv)
	read := func(key string) (time.Duration, error) {
		raw, ok := c.value(key)
		if !ok {
			return 0, nil
		}
		var d time.Duration
		var str string
		var secs float64
		switch {
		case json.Unmarshal(raw, &str) == nil:
			d, err = time.ParseDuration(str)
		case json.Unmarshal(raw, &secs) == nil:
			d = time.Duration(secs * float64(time.Second))
		default:
			err = fmt.Errorf("not a string or a number")
		}
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%s: %s: %s is not a duration: write e.g. \"30s\" or \"2m\" (fix it or remove the key: the default is used then)", c.path, key, raw)
		}
		return d, nil
	}
	if start, err = read(MCPStartTimeoutKey); err != nil {
		return 0, 0, err
	}
	if call, err = read(MCPCallTimeoutKey); err != nil {
		return 0, 0, err
	}
	return start, call, nil
}
