package main

import (
	"context"
	"fmt"
	"io"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agentd run: not implemented yet")
	return exitFailed
}
