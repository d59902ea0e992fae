package main

import (
	"context"
	"fmt"
	"io"
)

func cmdPlan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agentd plan: not implemented yet")
	return exitFailed
}
