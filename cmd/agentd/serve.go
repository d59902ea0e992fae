package main

import (
	"context"
	"fmt"
	"io"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agentd serve: not implemented yet")
	return exitFailed
}
