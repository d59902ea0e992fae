package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

func newValidateCmd(a *app) *cobra.Command {
	var wsDir string
	cmd := &cobra.Command{
		Use:   "validate PLAN...",
		Short: "check plans and print every problem",
		Long: `Checks plan files (JSON or YAML) against the plan format and the tools' schemas and
prints every problem of each as PLAN: step ID: field: message, all at once (a misspelt
top-level field does not hide the steps' problems). Against the workspace (--workspace, or
the current folder when it holds the plans at its top or one folder down) it also checks
what the run would: paths outside the workspace, and edit_file texts not found in the files
as they are now (with the closest line), are problems: 'agentd run' refuses such a plan
before starting. Exits 0 when every plan is valid, 2 when one is not or cannot be read (as
'agentd run' does).`,
		Args:              argsBetween(1, 1<<20, "the plan file to check"),
		ValidArgsFunction: completePlans,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			dir := wsDir
			if !cmd.Flags().Changed("workspace") {
				dir = validateWorkspace(args)
				if dir == "" {
					fmt.Fprintln(a.stderr, "agentd validate: the workspace checks (edit_file texts, paths outside it) are skipped: pass --workspace DIR")
				}
			}
			return cmdValidate(a.ctx, args, dir, a.stdout, a.stderr)
		}),
	}
	cmd.Flags().StringVar(&wsDir, "workspace", "", "check the plans against the workspace `DIR` too (default: the current folder, if it holds the plans at its top or one folder down)")
	completeDirs(cmd, "workspace")
	return cmd
}

// validateWorkspace is the folder agentd run would take as the workspace
// of every plan in paths ("." when the current folder holds them all, at
// its top or one folder down), or "".
func validateWorkspace(paths []string) string {
	cwd, err := filepath.Abs(".")
	if err != nil {
		return ""
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil || !isUnder(abs, cwd) || depthUnder(abs, cwd) > 1 {
			return ""
		}
	}
	return "."
}

// cmdValidate checks the plans at paths (and against the workspace wsDir
// unless it is ""). Any invalid plan exits 2, as it does from agentd run;
// warnings alone do not.
func cmdValidate(ctx context.Context, paths []string, wsDir string, stdout, stderr io.Writer) int {
	var ws *workspace.Workspace
	if wsDir != "" {
		var err error
		if ws, err = session.OpenWorkspace(wsDir, 0); err != nil { // reads as the run will
			fmt.Fprintf(stderr, "agentd validate: workspace %s: %v\n", wsDir, err)
			return exitUsage
		}
		defer ws.Close()
	}
	code := exitOK
	for _, path := range paths {
		p, problems, err := loadPlan(ctx, path)
		if err != nil {
			fmt.Fprintf(stderr, "agentd validate: %v\n", err)
			code = exitUsage
			continue
		}
		if p != nil && ws != nil {
			problems = append(problems, plans.CheckWorkspace(ctx, p, ws)...)
		}
		errs := 0
		for _, pr := range problems {
			if !plans.IsWarning(pr) {
				errs++
			}
		}
		printProblems(stdout, path, problems)
		if errs > 0 {
			code = exitUsage
			if len(paths) > 1 {
				fmt.Fprintf(stdout, "%s: not valid: %d problem%s\n", path, errs, plural(errs))
			}
			continue
		}
		prefix := ""
		if len(paths) > 1 {
			prefix = path + ": "
		}
		fmt.Fprintf(stdout, "%svalid: %d step%s\n", prefix, len(p.Steps), plural(len(p.Steps)))
	}
	return code
}

// loadPlan reads, parses and validates a plan file against the built-in
// tools, with every problem at once (plans.CheckPlanFile); the plan is
// nil when it cannot be read as one. err is for files that cannot be read.
func loadPlan(ctx context.Context, path string) (*plans.Plan, []plans.Problem, error) {
	data, err := plans.ReadPlanFile(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	p, problems := plans.CheckPlanFile(path, data, session.BuiltinTools(), 0)
	return p, problems, nil
}

// checkRunWorkspace is what 'agentd run PLAN' checks against the
// workspace before it starts (plans.CheckWorkspace, as 'agentd validate'
// does): a step whose edit_file text is not in the file would fail, and the
// run would spend model calls recovering. It prints the problems and
// returns false when there are any.
func checkRunWorkspace(ctx context.Context, name string, p *plans.Plan, ws *workspace.Workspace, stderr io.Writer) bool {
	problems := plans.CheckWorkspace(ctx, p, ws)
	if len(problems) == 0 {
		return true
	}
	printProblems(stderr, name, problems)
	fmt.Fprintf(stderr, "agentd run: not started: %s does not fit the workspace as it is now (%d problem%s); fix the steps named above (copy the text from the file as it is) and run again\n",
		name, len(problems), plural(len(problems)))
	return false
}

// printProblems prints "PLAN: step ID: field: message", one per line.
func printProblems(w io.Writer, plan string, problems []plans.Problem) {
	for _, pr := range problems {
		line := plan + ": "
		if pr.StepID != "" {
			line += "step " + pr.StepID + ": "
		}
		if pr.Field != "" {
			line += pr.Field + ": "
		}
		fmt.Fprintln(w, line+pr.Message)
	}
}
