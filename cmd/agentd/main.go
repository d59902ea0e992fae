// Command agentd is the agent daemon and its terminal front end.
//
//	agentd serve                 JSON-RPC over stdio, for editors
//	agentd run PLAN              run a plan headless
//	agentd plan "REQUEST"        make a plan with a model
//	agentd validate PLAN         check a plan
//	agentd snapshot SUBCOMMAND   snapshots of a workspace
//	agentd runs [RUN]            past runs of a workspace
//	agentd rules list|revoke     remembered approval rules
//	agentd version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitOK        = 0
	exitFailed    = 1
	exitUsage     = 2 // also: invalid plan, no model configured
	exitPartial   = 3
	exitCancelled = 130
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"serve", "serve JSON-RPC over stdio (editors start this)", cmdServe},
		{"run", "run a plan against a workspace", cmdRun},
		{"plan", "make a plan from a request with a model", cmdPlan},
		{"validate", "check a plan and print every problem", cmdValidate},
		{"snapshot", "create, list, show, diff, restore and gc snapshots", cmdSnapshot},
		{"runs", "list the workspace's past runs, or show one's summary", cmdRuns},
		{"rules", "list or revoke remembered approval rules", cmdRules},
		{"acp", "speak the Agent Client Protocol on stdio (Zed, JetBrains, Emacs)", func(ctx context.Context, a []string, o, e io.Writer) int { return cmdACP(ctx, a, os.Stdin, o, e) }},
		{"version", "print the version", cmdVersion},
	}
}

func main() {
	os.Exit(mainWithArgs(os.Args[1:], os.Stdout, os.Stderr))
}

func mainWithArgs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// The first Ctrl-C cancels cleanly; a second one kills at once.
			go func() { <-ctx.Done(); stop() }()
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "agentd: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: agentd COMMAND [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'agentd COMMAND -h' for a command's flags.")
}

func cmdVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, "agentd", version)
	return exitOK
}
