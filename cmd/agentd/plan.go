package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

func init() {
	planFromRequest = func(ctx context.Context, request, wsDir string, stderr io.Writer) (*engine.Plan, int) {
		return makePlan(ctx, "run", request, wsDir, "", stderr)
	}
}

func cmdPlan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("plan", "\"REQUEST\" [flags]", stderr)
	wsDir := fs.String("workspace", ".", "the workspace `dir` the plan is for")
	out := fs.String("o", "", "write the plan to `file` instead of stdout")
	model := fs.String("model", "", "the `model` (provider:model or a profile; default AGENTD_MODEL or the config file)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		fs.Usage()
		return exitUsage
	}
	plan, code := makePlan(ctx, "plan", pos[0], *wsDir, *model, stderr)
	if plan == nil {
		return code
	}
	data, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "agentd plan: %v\n", err)
		return exitFailed
	}
	data = append(data, '\n')
	if *out == "" {
		if _, err := stdout.Write(data); err != nil {
			return exitFailed
		}
		return exitOK
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintf(stderr, "agentd plan: writing %s: %v\n", *out, err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "agentd plan: wrote %s (%d steps)\n", *out, len(plan.Steps))
	return exitOK
}

// makePlan asks the configured model for a plan; on failure it prints the
// error and returns a nil plan with the exit code.
func makePlan(ctx context.Context, cmd, request, wsDir, model string, stderr io.Writer) (*engine.Plan, int) {
	ws, err := workspace.Open(wsDir, workspace.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
		return nil, exitUsage
	}
	defer ws.Close()
	settings, err := llm.Load(llm.LoadOptions{Workspace: ws.Root()})
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
		return nil, exitUsage
	}
	if model != "" {
		settings.Model = model
	}
	pl := llm.NewPlanner(settings, tools.Builtin())
	plan, err := pl.Create(ctx, llm.CreateRequest{Request: request, Workspace: ws})
	used := pl.Used()
	if used.InputTokens+used.OutputTokens > 0 {
		fmt.Fprintf(stderr, "agentd %s: planner used %d tokens in, %d out ($%.4f)\n", cmd, used.InputTokens, used.OutputTokens, used.CostUSD)
	}
	if err != nil {
		var ve *engine.ValidationError
		switch {
		case errors.Is(err, engine.ErrNoModel):
			fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
			return nil, exitUsage
		case errors.As(err, &ve):
			fmt.Fprintf(stderr, "agentd %s: the model's plan is still invalid after a repair round:\n", cmd)
			printProblems(stderr, "plan", ve.Problems)
			return nil, exitUsage
		case ctx.Err() != nil:
			fmt.Fprintf(stderr, "agentd %s: cancelled\n", cmd)
			return nil, exitCancelled
		}
		fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
		return nil, exitFailed
	}
	return plan, exitOK
}
