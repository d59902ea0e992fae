// Command generate writes package protocol's Go types (protocol_gen.go)
// and the VS Code extension's TypeScript types (src/protocol.gen.ts) from
// docs/protocol.schema.json. Run it with go generate ./protocol.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/protocol/internal/gen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

// run is called in the protocol directory (go generate ./protocol).
func run() error {
	root := ".."
	s, err := gen.Load(filepath.Join(root, gen.SchemaPath))
	if err != nil {
		return err
	}
	goSrc, err := s.Go()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, gen.GoPath), goSrc, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, gen.TSPath), append(s.TypeScript(), '\n'), 0o644)
}
