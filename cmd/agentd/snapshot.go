package main

import (
	"context"
	"fmt"
	"io"
)

func cmdSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agentd snapshot: not implemented yet")
	return exitFailed
}
