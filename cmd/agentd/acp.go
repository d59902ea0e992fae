package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/acp"
)

func newACPCmd(a *app) *cobra.Command {
	var stateDir, model string
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
	completeDirs(cmd, "state-dir")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return cmdACP(a.ctx, lf, stateDir, model, a.stdin, a.stdout, a.stderr)
	})
	return cmd
}

// cmdACP is `agentd acp`: the Agent Client Protocol on stdin/stdout, for
// Zed, the JetBrains IDEs, Emacs agent-shell, CodeCompanion and other ACP
// clients. Stdout carries only protocol; logs go to stderr.
func cmdACP(ctx context.Context, lf logFlags, stateDir, model string, stdin io.Reader, stdout, stderr io.Writer) int {
	logger, closeLog, ok := lf.logger("acp", stderr)
	if !ok {
		return exitUsage
	}
	defer closeLog()
	logger.Info("agentd acp starting", "version", version, "pid", os.Getpid())
	err := acp.Serve(ctx, stdin, stdout, acp.Options{Version: version, StateDir: stateDir, Model: model, Logger: logger})
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		return exitCancelled
	}
	logger.Error("agentd acp stopped", "error", err)
	return exitFailed
}
