package tools

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnvLog(t *testing.T) {
	var nilEnv *Env
	if nilEnv.Log() == nil || (&Env{}).Log() == nil {
		t.Fatal("Log() is nil without a logger; want a discarding one")
	}
	var buf bytes.Buffer
	env := &Env{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	env.Log().Debug("hello", "k", "v")
	if !strings.Contains(buf.String(), "hello") {
		t.Fatalf("Log() does not write to Env.Logger: %q", buf.String())
	}
}

// No file of the tools (or of the workspace they write through) logs
// through the global slog logger: serve never sets it, so those lines would
// miss --log-file and --log-level.
func TestNoGlobalSlog(t *testing.T) {
	for _, dir := range []string{".", "../../workspace"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "slog" {
					switch sel.Sel.Name {
					case "Debug", "Info", "Warn", "Error", "Log", "LogAttrs", "Default", "SetDefault",
						"DebugContext", "InfoContext", "WarnContext", "ErrorContext", "With":
						t.Errorf("%s uses the global logger (slog.%s); log through Env.Log()", f, sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
}
