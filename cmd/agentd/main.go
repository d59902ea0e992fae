// Command agentd is the agent daemon and its terminal front end.
//
//	agentd serve                 JSON-RPC over stdio, for editors
//	agentd run PLAN              run a plan headless
//	agentd chat                  a conversation (also: agentd, on a terminal)
//	agentd undo [RUN]            put the workspace back as it was before a run
//	agentd plan "REQUEST"        make a plan with a model
//	agentd map [--request TEXT]  the repository map the planner sends the model
//	agentd validate PLAN         check a plan
//	agentd snapshot SUBCOMMAND   snapshots of a workspace
//	agentd runs [RUN]            past runs of a workspace
//	agentd review [RUN]          review the change sets still pending
//	agentd rules list|revoke     remembered approval rules
//	agentd tools                 the tools a step can call
//	agentd completion SHELL      shell completion (bash, zsh, fish)
//	agentd version
//
// The command line is built with cobra (flags.go has the shared parts):
// help goes to stdout, usage errors say why and exit 2.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
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

// app is what every command's action gets: the context, the streams, and
// where it leaves its exit code. Actions never return errors to cobra
// except usage errors, so anything cobra returns is a usage error (exit 2).
type app struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	code   int
}

// action adapts a command body that returns an exit code to cobra.
func (a *app) action(f func(cmd *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.code = f(cmd, args)
		return nil
	}
}

func main() {
	os.Exit(mainWithArgs(os.Args[1:], os.Stdout, os.Stderr))
}

// mainWithArgs runs the command line args (without the program name) and
// returns the exit code. It is the tests' entry point.
func mainWithArgs(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first Ctrl-C cancels cleanly; a second one kills at once.
	go func() { <-ctx.Done(); stop() }()

	return runCLI(ctx, args, os.Stdin, stdout, stderr)
}

// runCLI parses args and runs the command they name with these streams.
func runCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	if len(args) == 0 && isTerminal(stdin) && isTerminal(stdoutFile(stdout)) {
		// A person at a terminal: a conversation.
		args = []string{"chat"}
	}
	if len(args) == 0 {
		// No command: the usage, to stderr, and a usage error.
		root.SetOut(stderr)
		_ = root.Usage()
		return exitUsage
	}
	root.SetArgs(normaliseFlags(root, args))
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		if cmd.Name() != "help" {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return exitUsage
	}
	return a.code
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentd",
		Short: "a coding-agent daemon: plans, runs and undoes changes to a workspace",
		Long: `agentd runs plans of tool steps against a workspace, with a review of every change
and snapshots to undo it. Editors start 'agentd serve'; 'agentd run' is the terminal front end.`,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("agentd {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	// Listed in this order (the terminal's commands first), not sorted.
	cobra.EnableCommandSorting = false
	root.AddCommand(
		newRunCmd(a),
		newChatCmd(a),
		newUndoCmd(a),
		newRunsCmd(a),
		newReviewCmd(a),
		newValidateCmd(a),
		newPlanCmd(a),
		newMapCmd(a),
		newSnapshotCmd(a),
		newRulesCmd(a),
		newToolsCmd(a),
		newServeCmd(a),
		newACPCmd(a),
		&cobra.Command{
			Use:   "version",
			Short: "print the version, commit and target",
			Args:  noArgs,
			RunE: a.action(func(cmd *cobra.Command, args []string) int {
				fmt.Fprintln(a.stdout, versionLine())
				return exitOK
			}),
		},
	)
	root.SetHelpCommand(newHelpCmd())
	// What cobra adds when it executes, added now so that the usage
	// printed without a command lists them too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	requireShell(root)
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	return root
}

// newHelpCmd is "agentd help [command]": the command's help on stdout,
// exit 0; an unknown command is a usage error (exit 2), not the top-level
// usage with exit 0 as cobra's own help command does.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "help about any command",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err == nil && len(rest) > 0 {
				err = fmt.Errorf("unknown command %q", strings.Join(args, " "))
			}
			if err != nil {
				return fmt.Errorf("%w; 'agentd help' lists the commands", err)
			}
			cmd.SetOut(c.OutOrStdout())
			return cmd.Help()
		},
	}
}

// groupCmd is a command that only holds subcommands (snapshot, rules):
// without one, or with an unknown one, it says so and exits 2.
func groupCmd(a *app, use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		// "snapshot bogus --workspace W": the unknown subcommand is the
		// error to report, not the subcommands' flags.
		FParseErrWhitelist:    cobra.FParseErrWhitelist{UnknownFlags: true},
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown subcommand %q; use one of: %s", args[0], subNames(cmd))
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			fmt.Fprintf(a.stderr, "%s: missing subcommand; use one of: %s\n\n", cmd.CommandPath(), subNames(cmd))
			cmd.SetOut(a.stderr)
			_ = cmd.Usage()
			return exitUsage
		}),
	}
}

func subNames(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return strings.Join(names, ", ")
}

// requireShell makes "agentd completion" without a shell (or with an
// unknown one) a usage error that names the shells, not cobra's help with
// exit 0.
func requireShell(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && sub.Name() != "help" {
				shells = append(shells, sub.Name())
			}
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown shell %q; use one of: %s", args[0], strings.Join(shells, ", "))
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("missing the shell: agentd completion %s (e.g. source <(agentd completion bash))", strings.Join(shells, "|"))
		}
	}
}

// stdoutFile is w as a reader for isTerminal when it is a file.
func stdoutFile(w io.Writer) io.Reader {
	if f, ok := w.(*os.File); ok {
		return f
	}
	return nil
}
