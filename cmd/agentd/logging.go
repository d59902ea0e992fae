package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// logFlags are --log-file and --log-level, for commands that run the
// engine. The logger they make is passed to everything the command wires
// (engine, rpc, gitops); no package logs through the global logger.
type logFlags struct {
	file  *string
	level *string
}

func addLogFlags(cmd *cobra.Command, defaultLevel string) logFlags {
	fs := cmd.Flags()
	lf := logFlags{
		file:  fs.String("log-file", "", "also write logs to this `FILE` (appended, JSON lines)"),
		level: fs.String("log-level", logLevelDefault(defaultLevel), "log `LEVEL`: debug, info, warn or error (default from AGENTD_LOG when set)"),
	}
	completeWords(cmd, "log-level", "debug", "info", "warn", "error")
	return lf
}

// logger makes the logger: text to stderr, and JSON to the log file if
// one is given. close closes the file.
func (lf logFlags) logger(cmd string, stderr io.Writer) (log *slog.Logger, close func(), ok bool) {
	return lf.frontLogger(cmd, stderr, nil)
}

// frontLogger is logger for a terminal command: with say, the model
// client's retries are said through it in the terminal's words (frontLog)
// rather than as slog lines on stderr.
func (lf logFlags) frontLogger(cmd string, stderr io.Writer, say func(string)) (log *slog.Logger, close func(), ok bool) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*lf.level)); err != nil {
		fmt.Fprintf(stderr, "agentd %s: --log-level %q: use debug, info, warn or error\n", cmd, *lf.level)
		return nil, nil, false
	}
	hopts := &slog.HandlerOptions{Level: level}
	var text slog.Handler = slog.NewTextHandler(stderr, hopts)
	if say != nil {
		text = frontLog{say: say, next: text}
	}
	handlers := []slog.Handler{text}
	close = func() {}
	if *lf.file != "" {
		if err := os.MkdirAll(filepath.Dir(*lf.file), 0o755); err != nil {
			fmt.Fprintf(stderr, "agentd %s: --log-file: %v\n", cmd, err)
			return nil, nil, false
		}
		f, err := os.OpenFile(*lf.file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "agentd %s: --log-file: %v\n", cmd, err)
			return nil, nil, false
		}
		close = func() { f.Close() }
		handlers = append(handlers, slog.NewJSONHandler(f, hopts))
	}
	return slog.New(slog.NewMultiHandler(handlers...)), close, true
}
