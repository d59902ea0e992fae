package protocol_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/protocol/internal/gen"
)

func load(t *testing.T) *gen.Schema {
	t.Helper()
	s, err := gen.Load(filepath.Join("..", gen.SchemaPath))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGeneratedFilesAreCurrent fails when protocol_gen.go or the VS Code
// extension's protocol.gen.ts is not what the schema makes: the schema is
// the one definition, and the generated files follow it.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	s := load(t)
	goSrc, err := s.Go()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{gen.GoPath, goSrc}, {gen.TSPath, append(s.TypeScript(), '\n')}} {
		got, err := os.ReadFile(filepath.Join("..", f.path))
		if err != nil {
			t.Fatalf("%v (run: go generate ./protocol)", err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s is not what %s makes: run go generate ./protocol (never edit the generated file)", f.path, gen.SchemaPath)
		}
	}
}

// TestSchemaListsTheDocumentedMethods holds the schema to docs/protocol.md:
// every method documented under a ### heading is in the schema with the
// same direction, and the schema has no other.
func TestSchemaListsTheDocumentedMethods(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("(?m)^### `([^`]+)`\\s*$")
	locs := heading.FindAllSubmatchIndex(data, -1)
	documented := map[string]protocol.Direction{}
	for i, loc := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := string(data[loc[1]:end])
		dir := protocol.ClientToServer
		if strings.Contains(body, "Direction: server → client") {
			dir = protocol.ServerToClient
		}
		documented[string(data[loc[2]:loc[3]])] = dir
	}
	if len(documented) == 0 {
		t.Fatal("no methods found in docs/protocol.md")
	}
	inSchema := map[string]bool{}
	for _, m := range protocol.Methods {
		inSchema[m.Method] = true
		dir, ok := documented[m.Method]
		if !ok {
			t.Errorf("%s is in %s but not documented in docs/protocol.md", m.Method, gen.SchemaPath)
		} else if dir != m.Direction {
			t.Errorf("%s: the schema's direction is not the one docs/protocol.md gives", m.Method)
		}
	}
	for m := range documented {
		if !inSchema[m] {
			t.Errorf("%s is documented in docs/protocol.md but not in %s", m, gen.SchemaPath)
		}
	}
}
