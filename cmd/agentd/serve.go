package main

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/session"
)

// stdio joins stdin and stdout into the server's connection.
type stdio struct {
	in  io.ReadCloser
	out io.Writer
}

func (s stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s stdio) Close() error                { return s.in.Close() }

// pollableStdin returns stdin in non-blocking mode, so that closing it at
// exit interrupts a pending read (a blocking read would wait for the
// editor to close the pipe).
func pollableStdin() io.ReadCloser {
	if err := syscall.SetNonblock(syscall.Stdin, true); err != nil {
		return os.Stdin
	}
	return os.NewFile(uintptr(syscall.Stdin), "/dev/stdin")
}

func newServeCmd(a *app) *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "serve JSON-RPC over stdio (editors start this)",
		Long:  "Serves JSON-RPC (LSP framing) on stdin/stdout for an editor; logs go to stderr.",
		Args:  noArgs,
	}
	lf := addLogFlags(cmd, "info")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "agentd's state `DIR` (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd or ~/.local/state/agentd)")
	// vscode-languageclient adds --stdio when told the transport is
	// stdio; stdio is the only transport, so it changes nothing.
	cmd.Flags().Bool("stdio", false, "talk over stdin/stdout (the only transport; accepted for language clients that pass it)")
	_ = cmd.Flags().MarkHidden("stdio")
	completeDirs(cmd, "state-dir")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return cmdServe(a.ctx, lf, stateDir, a.stdout, a.stderr)
	})
	return cmd
}

func cmdServe(ctx context.Context, lf logFlags, stateDir string, stdout, stderr io.Writer) int {
	logger, closeLog, ok := lf.logger("serve", stderr)
	if !ok {
		return exitUsage
	}
	defer closeLog()

	// stdout is the protocol: the writer passed in is only ever os.Stdout
	// here, and nothing else may print to it.
	out := stdout
	if out == nil {
		out = os.Stdout
	}
	sm := newServeModel(logger)
	sm.stateDir = stateDir
	defer sm.close()
	srv := rpc.NewServer(rpc.Options{
		Version:   version,
		StateDir:  stateDir,
		Logger:    logger,
		PlanMaker: sm,
		Configure: sm.configure,
	})
	logger.Info("agentd serve starting", "version", version, "pid", os.Getpid())
	// The first plan's repository map then finds its parsers ready.
	session.PrepareMaps(logger.With("component", "repomap"))
	err := srv.Serve(ctx, stdio{in: pollableStdin(), out: out})
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, rpc.ErrExitWithoutShutdown):
		return exitFailed
	case errors.Is(err, context.Canceled):
		return exitCancelled
	}
	logger.Error("agentd serve stopped", "error", err)
	return exitFailed
}
