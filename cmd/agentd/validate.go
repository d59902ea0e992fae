package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/tools"
)

func newValidateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "validate PLAN",
		Short: "check a plan and print every problem",
		Long: `Checks a plan file (JSON or YAML) against the plan format and the tools' schemas and
prints every problem as PLAN: step ID: field: message. Exits 0 when the plan is valid,
2 when it is not or cannot be read (as 'agentd run' does).`,
		Args:              argsBetween(1, 1, "the plan file to check"),
		ValidArgsFunction: completePlans,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			return cmdValidate(a.ctx, args[0], a.stdout, a.stderr)
		}),
	}
}

// cmdValidate checks the plan at path. An invalid plan exits 2, as it does
// from agentd run.
func cmdValidate(ctx context.Context, path string, stdout, stderr io.Writer) int {
	p, problems, err := loadPlan(ctx, path)
	if err != nil {
		fmt.Fprintf(stderr, "agentd validate: %v\n", err)
		return exitUsage
	}
	if len(problems) > 0 {
		printProblems(stdout, path, problems)
		return exitUsage
	}
	fmt.Fprintf(stdout, "valid: %d steps\n", len(p.Steps))
	return exitOK
}

// loadPlan reads, parses and validates a plan file against the built-in
// tools. Parse errors that are validation problems come back as problems;
// err is for files that cannot be read.
func loadPlan(ctx context.Context, path string) (*engine.Plan, []engine.Problem, error) {
	data, err := engine.ReadPlanFile(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	p, err := engine.ParsePlan(path, data)
	if err != nil {
		var ve *engine.ValidationError
		if errors.As(err, &ve) {
			return nil, ve.Problems, nil
		}
		return nil, []engine.Problem{{Message: err.Error()}}, nil
	}
	return p, engine.ValidatePlan(p, tools.Builtin(), 0), nil
}

// printProblems prints "PLAN: step ID: field: message", one per line.
func printProblems(w io.Writer, plan string, problems []engine.Problem) {
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
