package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentd/agentd/session"
)

// frontLog is the log of a terminal command (plan, chat, run): the model
// client's retry is said in the terminal's words on one line ("model call
// failed (HTTP 429 …); retrying in 2s"), whatever the level, and the
// other records go to next (slog text at the command's level: warn unless
// --verbose, --log-level or AGENTD_LOG says otherwise).
type frontLog struct {
	say  func(string)
	next slog.Handler
}

func (h frontLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h frontLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == session.ModelRetryMessage {
		h.say(retryLine(r))
		return nil
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h frontLog) WithAttrs(as []slog.Attr) slog.Handler {
	return frontLog{say: h.say, next: h.next.WithAttrs(as)}
}

func (h frontLog) WithGroup(name string) slog.Handler {
	return frontLog{say: h.say, next: h.next.WithGroup(name)}
}

// retryLine says a retry record: what failed (its first line, cut) and
// how long it waits.
func retryLine(r slog.Record) string {
	var why, model string
	var wait time.Duration
	attempt := 0
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "err":
			why = a.Value.String()
		case "wait":
			if d, ok := a.Value.Any().(time.Duration); ok {
				wait = d
			}
		case "attempt":
			attempt = int(a.Value.Int64())
		case "model":
			model = a.Value.String()
		}
		return true
	})
	why, _, _ = strings.Cut(why, "\n")
	if len(why) > 160 {
		why = why[:160] + "…"
	}
	line := "model call failed"
	if model != "" {
		line = "model " + model + ": call failed"
	}
	if why != "" {
		line += " (" + why + ")"
	}
	line += "; retrying in " + wait.Round(100*time.Millisecond).String()
	if attempt > 0 {
		line += fmt.Sprintf(" (attempt %d)", attempt)
	}
	return line
}

// logLevelDefault is the log level a command starts from: def, unless
// AGENTD_LOG names one (debug, info, warn or error).
func logLevelDefault(def string) string {
	if v := strings.TrimSpace(os.Getenv("AGENTD_LOG")); v != "" {
		return v
	}
	return def
}
