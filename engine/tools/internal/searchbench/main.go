// Command searchbench runs agentd's search_code tool on a directory, for
// bench_search.sh to compare with ripgrep. It prints one line:
// "files=N matches=N truncated=B elapsed=SECONDS".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

func main() {
	root := flag.String("root", ".", "directory to search")
	pattern := flag.String("pattern", "", "RE2 pattern")
	glob := flag.String("glob", "", "glob")
	max := flag.Int("max", 200, "maxResults")
	flag.Parse()
	if err := run(*root, *pattern, *glob, *max); err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
}

func run(root, pattern, glob string, max int) error {
	ws, err := workspace.Open(root, workspace.Options{})
	if err != nil {
		return err
	}
	tool, _ := tools.Builtin().Get("search_code")
	args, _ := json.Marshal(tools.SearchCodeArgs{Pattern: pattern, Glob: glob, MaxResults: max})
	start := time.Now()
	res, err := tool.Run(context.Background(), &tools.Env{WS: ws}, args)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	out := res.Output.(tools.SearchCodeOutput)
	fmt.Printf("files=%d matches=%d truncated=%v elapsed=%.3f\n", len(out.Files), len(out.Matches), out.Truncated, elapsed.Seconds())
	return nil
}
