package session

import (
	"log/slog"
	"time"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/repomap"
)

// RunningCommands is how many commands the tools of this process run now.
func RunningCommands() int { return tools.RunningCommands() }

// KillAllCommands kills every command the tools of this process run and
// says how many it killed.
func KillAllCommands() int { return tools.KillAllCommands() }

// CommandKillGrace is how long a cancelled command is given to stop
// before it is killed.
func CommandKillGrace() time.Duration { return tools.KillGrace }

// PrepareMaps readies the repository map's parsers in the background (a
// daemon calls it at start, so the first plan does not wait for them).
func PrepareMaps(log *slog.Logger) { repomap.Prepare(log) }

// MapParsers names how the repository map parses files in this build
// (native or WebAssembly), for agentd version.
func MapParsers() string { return repomap.Parsers() }

// DefaultMapTokens is the repository map's default budget in tokens.
const DefaultMapTokens = repomap.DefaultTokens
