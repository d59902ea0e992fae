// Package codesize holds the module to the size rule of conventions.md
// ("rooms with walls"): no non-test Go function over maxLines lines, so
// each reads alone. The exceptions are named here, each with its reason.
package codesize

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const maxLines = 200

// exempt are the functions allowed over maxLines: "dir/file.go name".
var exempt = map[string]string{
	// A line-by-line port of git's wildmatch.c: kept in its shape so it
	// can be checked against git's own.
	"internal/fileset/wildmatch.go dowild": "port of git's wildmatch",
}

// exemptDirs hold tools, not agentd: benchmark drivers.
var exemptDirs = []string{"gitops/internal/snapbench", "engine/tools/internal/searchbench"}

func moduleRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot find this file's path")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func TestNoFunctionOverTheLimit(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	seen := 0
	// over are the exempt functions found over the limit, and dirs the
	// exempt folders found: an exemption that no longer holds is taken
	// out, so the list only shrinks.
	over := map[string]bool{}
	dirs := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || name == "editors" || name == "dist") {
				return filepath.SkipDir
			}
			for _, x := range exemptDirs {
				if rel == x {
					dirs[x] = true
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			seen++
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			key := rel + " " + fd.Name.Name
			if n <= maxLines {
				continue
			}
			if _, ok := exempt[key]; ok {
				over[key] = true
				continue
			}
			t.Errorf("%s:%d: %s is %d lines (the limit is %d): split it into functions that each read alone (conventions.md)",
				rel, fset.Position(fd.Pos()).Line, fd.Name.Name, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key, why := range exempt {
		if !over[key] {
			t.Errorf("exempt lists %s (%s), which is no longer over %d lines (or is gone): take it out of the list", key, why, maxLines)
		}
	}
	for _, x := range exemptDirs {
		if !dirs[x] {
			t.Errorf("exemptDirs lists %s, which the module has no more: take it out of the list", x)
		}
	}
	if seen < 1000 {
		t.Fatalf("only %d functions found under %s: the walk missed the module", seen, root)
	}
}
