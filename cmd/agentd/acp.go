package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentd/agentd/acp"
)

// cmdACP is `agentd acp`: the Agent Client Protocol on stdin/stdout, for
// Zed, the JetBrains IDEs, Emacs agent-shell, CodeCompanion and other ACP
// clients. Stdout carries only protocol; logs go to stderr.
func cmdACP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentd acp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLogFlags(fs, "info")
	stateDir := fs.String("state-dir", "", "state `dir` (default $AGENTD_STATE_DIR, $XDG_STATE_HOME/agentd or ~/.local/state/agentd)")
	model := fs.String("model", "", "the `model` (provider:model or a profile; default AGENTD_MODEL or the config file)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentd acp [--model M] [--state-dir DIR] [--log-file FILE] [--log-level LEVEL]")
		fmt.Fprintln(stderr, "\nSpeaks the Agent Client Protocol (ACP v1, one JSON message per line) on stdin/stdout;")
		fmt.Fprintln(stderr, "an ACP client such as Zed starts it. Logs go to stderr.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentd acp: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	logger, closeLog, ok := lf.logger("acp", stderr)
	if !ok {
		return exitUsage
	}
	defer closeLog()
	logger.Info("agentd acp starting", "version", version, "pid", os.Getpid())
	err := acp.Serve(ctx, stdin, stdout, acp.Options{Version: version, StateDir: *stateDir, Model: *model, Logger: logger})
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		return exitCancelled
	}
	logger.Error("agentd acp stopped", "error", err)
	return exitFailed
}
