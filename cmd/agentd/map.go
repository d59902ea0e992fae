package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// mapOpts are `agentd map`'s flags.
type mapOpts struct {
	wsDir      string
	request    string
	focus      []string
	mapTokens  int
	stateDir   string
	allowBroad bool
	json       bool
}

func newMapCmd(a *app) *cobra.Command {
	var o mapOpts
	cmd := &cobra.Command{
		Use:   "map",
		Short: "print the repository map the planner would send the model",
		Long: `Prints the repository map of the workspace as the planner puts it before a request:
the source files, the most relevant first, with their top-level symbols, within the
map's budget. With --request it is ranked for that request (the files defining the
symbols it names first), with --focus for files you are looking at, as an editor's open
buffers are. No model is needed. The map is cached in the state dir, as agentd plan's
is, so a second run re-reads only the files that changed.

--json prints one object: {"files": [the listed paths, best first], "sourceFiles": N,
"tokens": the map's size in tokens, "budget": the budget, "text": the map}.`,
		Example: `  agentd map --request "make Store.GC remove old snapshots"
  agentd map --workspace ~/src/proj --focus internal/db.go --map-tokens 4000
  agentd map --request "add a --verbose flag" --json | jq -r '.files[]'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected argument %q: agentd map takes no arguments; rank the map for a request with --request %q", args[0], strings.Join(args, " "))
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.wsDir, "workspace", ".", "the workspace `DIR` to map (default: the current folder)")
	fs.Lookup("workspace").DefValue = ""
	fs.StringVar(&o.request, "request", "", "rank the map for this request `TEXT` (default: no request)")
	fs.StringArrayVar(&o.focus, "focus", nil, "rank this `PATH` first, as an open file (workspace-relative; repeatable)")
	fs.IntVar(&o.mapTokens, "map-tokens", 0, fmt.Sprintf("the map's budget in `TOKENS` (default %d, as agentd plan's)", session.DefaultMapTokens))
	fs.StringVar(&o.stateDir, "state-dir", "", "agentd's state `DIR`, for the map's cache (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd)")
	addAllowBroadFlag(fs, &o.allowBroad)
	fs.BoolVar(&o.json, "json", false, `print one JSON object: {"files", "sourceFiles", "tokens", "budget", "text"}`)
	completeDirs(cmd, "workspace", "state-dir")
	_ = cmd.RegisterFlagCompletionFunc("focus", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveDefault // files
	})
	_ = cmd.RegisterFlagCompletionFunc("request", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("map-tokens", cobra.NoFileCompletions)
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return cmdMap(a.ctx, o, a.stdout, a.stderr)
	})
	return cmd
}

// mapJSON is `agentd map --json`'s object.
type mapJSON struct {
	Files       []string `json:"files"`
	SourceFiles int      `json:"sourceFiles"`
	Tokens      int      `json:"tokens"`
	Budget      int      `json:"budget"`
	Text        string   `json:"text"`
}

func cmdMap(ctx context.Context, o mapOpts, stdout, stderr io.Writer) int {
	if o.mapTokens < 0 {
		fmt.Fprintf(stderr, "agentd map: --map-tokens %d: the budget must be positive (agentd plan's -1 means no map, which leaves nothing to print); leave it out for %d\n", o.mapTokens, session.DefaultMapTokens)
		return exitUsage
	}
	if fi, err := os.Stat(o.wsDir); err != nil || !fi.IsDir() {
		what := "is not a folder"
		if err != nil {
			what = "no such folder"
			if !os.IsNotExist(err) {
				what = err.Error()
			}
		}
		fmt.Fprintf(stderr, "agentd map: --workspace %s: %s; give the project's folder (--workspace DIR), or run agentd map inside it\n", o.wsDir, what)
		return exitUsage
	}
	if !checkPlaces("map", o.wsDir, o.stateDir, o.allowBroad, stderr) {
		return exitUsage
	}
	ws, err := session.OpenWorkspace(o.wsDir, 0) // the config's maxFileSize, as agentd plan's map
	if err != nil {
		fmt.Fprintf(stderr, "agentd map: %v\n", err)
		return exitUsage
	}
	defer ws.Close()
	focus, err := focusPaths(ws, o.focus)
	if err != nil {
		fmt.Fprintf(stderr, "agentd map: %v\n", err)
		return exitUsage
	}
	live := newPlanLive("map", stderr)
	if live.tty {
		live.progress(session.PlanProgress{Message: "mapping " + ws.Root()})
	}
	t0 := time.Now()
	rm, err := session.RepositoryMap(ctx, ws, o.stateDir, slog.New(slog.NewTextHandler(live, &slog.HandlerOptions{Level: slog.LevelWarn})),
		session.MapQuery{Request: strings.TrimSpace(o.request), Focus: focus, Tokens: o.mapTokens})
	live.done(nil)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "agentd map: cancelled")
			return exitCancelled
		}
		fmt.Fprintf(stderr, "agentd map: mapping %s: %v\n", ws.Root(), err)
		return exitFailed
	}
	tokens, budget := rm.Tokens, rm.Budget
	if rm.Files == nil {
		rm.Files = []string{}
	}
	if o.json {
		if err := newJSONEncoder(stdout).Encode(mapJSON{Files: rm.Files, SourceFiles: rm.SourceFiles, Tokens: tokens, Budget: budget, Text: rm.Text}); err != nil {
			return exitFailed
		}
		return exitOK
	}
	if _, err := io.WriteString(stdout, rm.Text); err != nil {
		return exitFailed
	}
	took := time.Since(t0).Round(time.Millisecond)
	if took > time.Second {
		took = took.Round(10 * time.Millisecond)
	}
	fmt.Fprintf(stderr, "agentd map: %d of %d source files listed, %d of %d tokens, in %s\n",
		len(rm.Files), rm.SourceFiles, tokens, budget, took)
	if len(rm.Files) == 0 && rm.SourceFiles > 0 {
		// A big tree is parsed as rankings need it: a request naming
		// nothing in it finds no file to start from.
		fmt.Fprintln(stderr, "agentd map: no file matched; name a symbol, file or word of the code in --request, or rank files first with --focus PATH")
	}
	return exitOK
}

// focusPaths makes --focus paths workspace-relative with /, through the
// workspace's own resolution (workspace.Resolve: a relative path is taken
// from the root, as an editor names its open files; anything that leaves
// the root, also through a symlink, is refused); each must be a file.
func focusPaths(ws *workspace.Workspace, paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if strings.TrimSpace(p) == "" {
			return nil, errors.New("--focus \"\": give a file's path, relative to the workspace")
		}
		rel, abs, err := ws.Resolve(p)
		switch {
		case errors.Is(err, workspace.ErrOutsideRoot) && filepath.IsAbs(p):
			return nil, fmt.Errorf("--focus %s: not inside the workspace %s; give a file of the workspace, or pick the workspace with --workspace", p, ws.Root())
		case errors.Is(err, workspace.ErrOutsideRoot):
			return nil, fmt.Errorf("--focus %s: leaves the workspace %s; give a path relative to the workspace's root", p, ws.Root())
		case err != nil:
			return nil, fmt.Errorf("--focus %s: %v", p, err)
		}
		fi, err := os.Stat(abs)
		switch {
		case err != nil && os.IsNotExist(err):
			return nil, fmt.Errorf("--focus %s: no such file in the workspace %s (paths are relative to the workspace's root)", p, ws.Root())
		case err != nil:
			return nil, fmt.Errorf("--focus %s: %v", p, err)
		case fi.IsDir():
			return nil, fmt.Errorf("--focus %s: is a folder; give files (repeat --focus for several)", p)
		}
		out = append(out, rel)
	}
	return out, nil
}
