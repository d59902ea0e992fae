package main

import (
	"context"
	"fmt"
	"io"
)

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agentd validate: not implemented yet")
	return exitFailed
}
