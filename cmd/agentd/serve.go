package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/agentd/agentd/rpc"
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

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLogFlags(fs, "info")
	stateDir := fs.String("state-dir", "", "state directory (default $AGENTD_STATE_DIR, $XDG_STATE_HOME/agentd or ~/.local/state/agentd)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentd serve [--log-file FILE] [--log-level LEVEL] [--state-dir DIR]")
		fmt.Fprintln(stderr, "\nServes JSON-RPC (LSP framing) on stdin/stdout for an editor; logs go to stderr.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentd serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
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
	sm.stateDir = *stateDir
	defer sm.close()
	srv := rpc.NewServer(rpc.Options{
		Version:   version,
		StateDir:  *stateDir,
		Logger:    logger,
		PlanMaker: sm,
		Configure: sm.configure,
	})
	logger.Info("agentd serve starting", "version", version, "pid", os.Getpid())
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
