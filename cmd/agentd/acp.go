package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/acp"
	"github.com/agentd/agentd/session"
)

func newACPCmd(a *app) *cobra.Command {
	var stateDir, model string
	var allowBroad bool
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "speak the Agent Client Protocol on stdio (Zed, JetBrains, Emacs)",
		Long: `Speaks the Agent Client Protocol (ACP v1, one JSON message per line) on stdin/stdout;
an ACP client such as Zed starts it. Logs go to stderr.`,
		Args: noArgs,
	}
	lf := addLogFlags(cmd, "info")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "agentd's state `DIR` (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd or ~/.local/state/agentd)")
	cmd.Flags().StringVar(&model, "model", "", "the `MODEL` (provider:model or a profile; default AGENTD_MODEL or the config file)")
	addAllowBroadFlag(cmd.Flags(), &allowBroad)
	completeDirs(cmd, "state-dir")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return cmdACP(a.ctx, lf, acp.Options{StateDir: stateDir, Model: model, AllowBroadWorkspace: allowBroad}, a.stdin, a.stdout, a.stderr)
	})
	return cmd
}

// cmdACP is `agentd acp`: the Agent Client Protocol on stdin/stdout, for
// Zed, the JetBrains IDEs, Emacs agent-shell, CodeCompanion and other ACP
// clients. Stdout carries only protocol; logs go to stderr.
func cmdACP(ctx context.Context, lf logFlags, opts acp.Options, stdin io.Reader, stdout, stderr io.Writer) int {
	logger, closeLog, ok := lf.logger("acp", stderr)
	if !ok {
		return exitUsage
	}
	defer closeLog()
	logger.Info("agentd acp starting", "version", version, "pid", os.Getpid())
	opts.Version, opts.Logger = version, logger
	// The first prompt's repository map then finds its parsers ready.
	session.PrepareMaps(logger.With("component", "repomap"))
	err := acp.Serve(ctx, stdin, stdout, opts)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		return exitCancelled
	}
	logger.Error("agentd acp stopped", "error", err)
	return exitFailed
}
