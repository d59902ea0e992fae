package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/tools"
)

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate", "PLAN", stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	p, problems, err := loadPlan(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "agentd validate: %v\n", err)
		return exitFailed
	}
	if len(problems) > 0 {
		printProblems(stdout, pos[0], problems)
		return exitFailed
	}
	fmt.Fprintf(stdout, "valid: %d steps\n", len(p.Steps))
	return exitOK
}

func usageExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
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
