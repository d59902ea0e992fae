package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// normaliseFlags turns single-dash long flags ("-state-dir DIR", the form
// Go's flag package accepted and older scripts and editor configs may
// still use) into the double-dash form pflag wants. Only names of real
// long flags change; "-o", values and everything after "--" stay.
func normaliseFlags(root *cobra.Command, args []string) []string {
	long := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if len(f.Name) > 1 {
					long[f.Name] = true
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if long[name] {
			out[i] = "-" + a
		}
	}
	return out
}

// noArgs refuses positional arguments, naming the first.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q: %s takes none", args[0], cmd.CommandPath())
	}
	return nil
}

// argsBetween wants min to max positional arguments, described by what
// ("a plan file", "a snapshot ID") in the errors.
func argsBetween(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < min:
			return fmt.Errorf("missing %s: %s", what, cmd.UseLine())
		case len(args) > max && max == 0:
			return noArgs(cmd, args)
		case len(args) > max:
			return fmt.Errorf("too many arguments (%s): %s takes at most %d, %s", quoteAll(args), cmd.CommandPath(), max, what)
		}
		return nil
	}
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}

// wsFlags are --workspace and --state-dir, which every command that works
// on a workspace's state has.
type wsFlags struct {
	dir        string
	stateDir   string
	allowBroad bool
}

func addWSFlags(fs *pflag.FlagSet, w *wsFlags) {
	fs.StringVar(&w.dir, "workspace", ".", "the workspace `DIR` (default: the current folder)")
	fs.Lookup("workspace").DefValue = ""
	fs.StringVar(&w.stateDir, "state-dir", "", "agentd's state `DIR` (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd or ~/.local/state/agentd)")
	addAllowBroadFlag(fs, &w.allowBroad)
}

// completeDirs completes a flag's value with directories.
func completeDirs(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		_ = cmd.RegisterFlagCompletionFunc(n, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		})
	}
}

// completePlans completes positional arguments with plan files.
func completePlans(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"json", "yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// completeWords completes a flag's value with fixed words.
func completeWords(cmd *cobra.Command, name string, words ...string) {
	_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
}
