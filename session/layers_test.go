package session

import (
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/agentd/agentd"

// layer is one package of the module and what it may import of the
// module (the standard library and third-party modules are not checked
// here). docs/architecture.md draws this table and says what each
// package owns.
type layer struct {
	pkg string
	may []string
}

// layers is the allowed-imports table: every package of the module, top
// to bottom. The front ends (cmd/agentd, acp, rpc) stand on session and
// never reach past it into gitops, journal, engine/llm, engine/tools or
// internal/repomap: a rule lives below them once, and what they carry of
// the cellar's plain types, session re-exports.
var layers = []layer{
	{"cmd/agentd", []string{"rpc", "acp", "session", "engine", "engine/approval", "engine/plans", "review", "workspace", "diff", "internal/shellcmd"}},
	{"acp", []string{"session", "engine", "engine/approval", "engine/plans", "review", "workspace", "diff", "mcptools"}},
	{"rpc", []string{"protocol", "session", "engine", "engine/approval", "engine/plans", "review", "workspace", "diff"}},
	// The wire's types, generated from docs/protocol.schema.json: they
	// import nothing of the module, so rpc converts the core's at its edge.
	{"protocol", nil},
	{"protocol/generate", []string{"protocol/internal/gen"}},
	{"protocol/internal/gen", nil},
	{"session", []string{"engine", "engine/approval", "engine/plans", "engine/llm", "engine/tools", "mcptools", "review", "journal", "gitops", "workspace", "diff",
		"internal/repomap", "internal/platform", "internal/shellcmd"}},
	{"mcptools", []string{"engine/tools"}},
	{"engine/llm", []string{"engine", "engine/approval", "engine/plans", "engine/tools", "gitops", "workspace", "internal/fileset", "internal/repomap"}},
	{"engine", []string{"engine/approval", "engine/plans", "engine/tools", "review", "journal", "gitops", "workspace", "internal/fileset", "internal/platform"}},
	{"engine/plans", []string{"engine/tools", "workspace", "diff"}},
	{"engine/approval", []string{"engine/tools", "journal", "workspace", "internal/platform"}},
	{"engine/tools", []string{"workspace", "diff", "internal/fileset", "internal/platform", "internal/shellcmd"}},
	{"review", []string{"journal", "workspace", "diff"}},
	{"journal", []string{"gitops", "internal/platform"}},
	{"gitops", []string{"workspace", "diff", "internal/fileset", "internal/cachefile", "internal/platform"}},
	{"workspace", []string{"diff", "internal/fileset", "internal/platform"}},
	{"diff", nil},
	{"internal/repomap", []string{"internal/cachefile", "internal/fileset"}},
	{"internal/fileset", nil},
	{"internal/cachefile", nil},
	{"internal/platform", nil},
	{"internal/shellcmd", nil},
	// Tools for tests and benchmarks.
	{"internal/fakemodel", nil},
	{"internal/fakemodel/cmd/fakemodel", []string{"internal/fakemodel"}},
	{"editors/neovim/tests/fakemodel", []string{"internal/fakemodel"}},
	{"mcptools/internal/testserver", nil},
	{"engine/tools/internal/searchbench", []string{"engine/tools", "workspace"}},
	{"gitops/internal/snapbench", []string{"gitops", "workspace"}},
	// Only a test: the size rule (no non-test function over 200 lines).
	{"internal/codesize", nil},
}

// pending are front-end files that still import a package the table
// forbids them, while the rule they use moves into session (issue 33).
// Each entry must still be true: the list only shrinks.
var pending = map[string][]string{}

// renderLayers is the table as docs/architecture.md draws it.
func renderLayers() string {
	var b strings.Builder
	for _, l := range layers {
		may := "(nothing of the module)"
		if len(l.may) > 0 {
			may = strings.Join(l.may, ", ")
		}
		b.WriteString(l.pkg + " -> " + may + "\n")
	}
	return b.String()
}

// TestAllowedImports loads every package of the module (go/packages, as
// the compiler sees them for linux, windows and darwin) and checks each
// package's imports of the module against the table above. Test files
// are not held to it: a test may build its fixtures from lower packages.
func TestAllowedImports(t *testing.T) {
	allowed := map[string]map[string]bool{}
	for _, l := range layers {
		if allowed[l.pkg] != nil {
			t.Fatalf("layers lists %s twice", l.pkg)
		}
		allowed[l.pkg] = map[string]bool{}
		for _, m := range l.may {
			allowed[l.pkg][m] = true
		}
	}
	seen := map[string]bool{}
	// found are the forbidden imports, "dir/file.go -> dep", with the
	// systems they were found on.
	found := map[string][]string{}
	for _, goos := range []string{"linux", "windows", "darwin"} {
		cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports,
			Dir: "..", Env: append(os.Environ(), "GOOS="+goos)}
		pkgs, err := packages.Load(cfg, "./...")
		if err != nil {
			t.Fatalf("loading the module's packages for %s: %v", goos, err)
		}
		if len(pkgs) < 20 {
			t.Fatalf("only %d packages loaded for %s; the test looks in the wrong place", len(pkgs), goos)
		}
		for _, p := range pkgs {
			for _, e := range p.Errors {
				t.Errorf("%s (%s): %v", p.PkgPath, goos, e)
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(p.PkgPath, module), "/")
			may, ok := allowed[rel]
			if !ok {
				if !seen[rel] {
					t.Errorf("package %s is not in the allowed-imports table (session/layers_test.go): add it, with what it may import, and draw it in docs/architecture.md", rel)
				}
				seen[rel] = true
				continue
			}
			seen[rel] = true
			for imp := range p.Imports {
				dep, ok := strings.CutPrefix(imp, module+"/")
				if !ok || may[dep] {
					continue
				}
				files := importers(t, p.GoFiles, imp)
				if len(files) == 0 {
					files = []string{"(no file found)"}
				}
				for _, f := range files {
					k := rel + "/" + f + " -> " + dep
					found[k] = append(found[k], goos)
				}
			}
		}
	}
	isPending := map[string]bool{}
	for f, deps := range pending {
		for _, d := range deps {
			k := f + " -> " + d
			isPending[k] = true
			if found[k] == nil {
				t.Errorf("pending lists %s, which no longer holds: take it out of the list", k)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(found)) {
		if isPending[k] {
			continue
		}
		file, dep, _ := strings.Cut(k, " -> ")
		pkg := filepath.ToSlash(filepath.Dir(file))
		t.Errorf("%s imports %s (%s), which the allowed-imports table forbids %s: move the rule it uses below the front ends (a function of session), or, if %s may import it, change the table and docs/architecture.md",
			file, dep, strings.Join(found[k], ", "), pkg, pkg)
	}
	for _, l := range layers {
		if !seen[l.pkg] {
			t.Errorf("the table lists %s, which the module has no more: take it out", l.pkg)
		}
	}
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := renderLayers(); !strings.Contains(string(doc), "```\n"+want+"```\n") {
		t.Errorf("docs/architecture.md does not draw the allowed-imports table; its block should read:\n%s", want)
	}
}

// importers are the base names of the files among files that import imp.
func importers(t *testing.T, files []string, imp string) []string {
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, s := range af.Imports {
			if p, _ := strconv.Unquote(s.Path.Value); p == imp {
				out = append(out, filepath.Base(f))
			}
		}
	}
	return out
}
