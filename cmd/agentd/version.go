package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/agentd/agentd/session"
)

// commit is set at build time with -ldflags "-X main.commit=..." (make
// build, make release); without it, the commit Go records from the checkout.
var commit = ""

// versionLine is what `agentd version` prints: the version, the commit it
// was built from, the target and how the repository map parses (native
// or wasm parsers: internal/repomap), e.g.
// "agentd 1.2.0 (commit 3f2a9c1, linux/arm64, native parsers)".
func versionLine() string {
	c := commit
	if c == "" {
		c = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			dirty := false
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					c = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if len(c) > 12 {
				c = c[:12]
			}
			if dirty {
				c += "-dirty"
			}
		}
	}
	return fmt.Sprintf("agentd %s (commit %s, %s/%s, %s parsers)", version, c, runtime.GOOS, runtime.GOARCH, session.MapParsers())
}
