package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mapWorkspace is a small Go module where each file defines one thing the
// requests below name, and nothing in a file's path gives it away.
func mapWorkspace(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shop")
	files := map[string]string{
		"go.mod":          "module shop\n\ngo 1.22\n",
		"main.go":         "package main\n\nimport \"shop/billing\"\n\nfunc main() { println(billing.Total(nil)) }\n",
		"billing/a.go":    "package billing\n\n// Total sums the prices.\nfunc Total(prices []int) int {\n\tn := 0\n\tfor _, p := range prices {\n\t\tn += p\n\t}\n\treturn n\n}\n",
		"billing/b.go":    "package billing\n\n// ApplyCoupon takes a coupon's percentage off.\nfunc ApplyCoupon(total, pct int) int { return total - total*pct/100 }\n",
		"store/x.go":      "package store\n\ntype Inventory struct{ items map[string]int }\n\nfunc (i *Inventory) Reserve(sku string, n int) bool { return i.items[sku] >= n }\n",
		"store/y.go":      "package store\n\nfunc Restock(sku string, n int) {}\n",
		"notes/README.md": "# notes\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mapOut is the documented --json shape, written out here rather than
// reusing map.go's mapJSON, so that a renamed field fails the test.
type mapOut struct {
	Files       []string `json:"files"`
	SourceFiles int      `json:"sourceFiles"`
	Tokens      int      `json:"tokens"`
	Budget      int      `json:"budget"`
	Text        string   `json:"text"`
}

func mapJSONOf(t *testing.T, r result) mapOut {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("agentd map: exit %d\n%s", r.code, r.stderr)
	}
	var m mapOut
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("agentd map --json: %v\n%s", err, r.stdout)
	}
	if dec.More() {
		t.Fatalf("agentd map --json printed more than one object:\n%s", r.stdout)
	}
	return m
}

// TestMapRanksForRequest: --request puts the file defining the symbol it
// names first in "files", and the JSON's text is the map as printed
// without --json (the map the planner sends).
func TestMapRanksForRequest(t *testing.T) {
	ws := mapWorkspace(t)
	state := t.TempDir()
	for _, tc := range []struct{ request, want string }{
		{"ApplyCoupon must refuse percentages over 100", "billing/b.go"},
		{"make Inventory.Reserve take the lock", "store/x.go"},
		{"Restock should log what it adds", "store/y.go"},
	} {
		m := mapJSONOf(t, agentd(t, "", "map", "--workspace", ws, "--request", tc.request, "--json", "--state-dir", state))
		if len(m.Files) == 0 || m.Files[0] != tc.want {
			t.Errorf("%q: files %v, want %s first", tc.request, m.Files, tc.want)
		}
		if m.SourceFiles != 5 || m.Budget != 2000 || m.Tokens != (len(m.Text)+3)/4 {
			t.Errorf("%q: sourceFiles %d budget %d tokens %d (text %d bytes)", tc.request, m.SourceFiles, m.Budget, m.Tokens, len(m.Text))
		}
		plain := agentd(t, "", "map", "--workspace", ws, "--request", tc.request, "--state-dir", state)
		if plain.code != 0 || plain.stdout != m.Text {
			t.Errorf("%q: exit %d; the text differs from --json's:\n%s\n---\n%s", tc.request, plain.code, plain.stdout, m.Text)
		}
		if !strings.Contains(plain.stderr, "5 of 5 source files listed") {
			t.Errorf("%q: stderr lacks the summary: %s", tc.request, plain.stderr)
		}
	}
	// The map is cached in the state dir, never in the workspace.
	if caches, _ := filepath.Glob(filepath.Join(state, "repomap", "*.map")); len(caches) != 1 {
		t.Errorf("caches in the state dir: %v, want one", caches)
	}
	if _, err := os.Stat(filepath.Join(ws, ".agentd")); err == nil {
		t.Errorf("agentd map wrote into the workspace")
	}
}

// TestMapFocusAndBudget: --focus ranks an open file first (workspace-
// relative or absolute inside the workspace); --map-tokens cuts the map.
func TestMapFocusAndBudget(t *testing.T) {
	ws := mapWorkspace(t)
	state := t.TempDir()
	for _, focus := range []string{"store/y.go", filepath.Join(ws, "store", "y.go")} {
		m := mapJSONOf(t, agentd(t, "", "map", "--workspace", ws, "--focus", focus, "--json", "--state-dir", state))
		if len(m.Files) == 0 || m.Files[0] != "store/y.go" {
			t.Errorf("--focus %s: files %v, want store/y.go first", focus, m.Files)
		}
	}
	full := mapJSONOf(t, agentd(t, "", "map", "--workspace", ws, "--json", "--state-dir", state))
	small := mapJSONOf(t, agentd(t, "", "map", "--workspace", ws, "--json", "--map-tokens", "40", "--state-dir", state))
	if len(small.Text) > 40*4 || len(small.Files) >= len(full.Files) || small.Budget != 40 {
		t.Errorf("--map-tokens 40: %d bytes, %d files (of %d), budget %d", len(small.Text), len(small.Files), len(full.Files), small.Budget)
	}
	if !slices.Contains(full.Files, "billing/a.go") || slices.Contains(full.Files, "notes/README.md") {
		t.Errorf("the map lists %v", full.Files)
	}
}

// TestMapErrors: bad flags and paths name the flag or path, say what to
// do, and exit 2.
func TestMapErrors(t *testing.T) {
	ws := mapWorkspace(t)
	state := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nope")
	// A link inside the workspace to a file outside it: the workspace's own
	// resolution refuses it, as it refuses such a path to every tool.
	outside := filepath.Join(t.TempDir(), "secret.go")
	if err := os.WriteFile(outside, []byte("package secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link.go")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--workspace", missing}, []string{"--workspace " + missing + ": no such folder", "give the project's folder"}},
		{[]string{"--workspace", filepath.Join(ws, "main.go")}, []string{"main.go: is not a folder"}},
		{[]string{"--workspace", ws, "--focus", "billing/zzz.go"}, []string{"--focus billing/zzz.go", "relative to the workspace"}},
		{[]string{"--workspace", ws, "--focus", "../elsewhere.go"}, []string{"--focus ../elsewhere.go", "leaves the workspace"}},
		{[]string{"--workspace", ws, "--focus", "/etc/hostname"}, []string{"--focus /etc/hostname", "not inside the workspace"}},
		{[]string{"--workspace", ws, "--focus", "billing"}, []string{"--focus billing", "is a folder"}},
		{[]string{"--workspace", ws, "--focus", "link.go"}, []string{"--focus link.go", "leaves the workspace"}},
		{[]string{"--workspace", ws, "--map-tokens", "-1"}, []string{"--map-tokens -1", "leave it out"}},
		{[]string{"--workspace", ws, "--map-tokens", "lots"}, []string{"map-tokens", "lots"}},
		{[]string{"--workspace", ws, "fix", "the", "bug"}, []string{`unexpected argument "fix"`, `--request "fix the bug"`}},
		{[]string{"--workspace", ws, "--bogus"}, []string{"unknown flag: --bogus"}},
		{[]string{"--workspace", ws, "--state-dir", filepath.Join(ws, "state")}, []string{"inside the workspace"}},
	} {
		args := append([]string{"map"}, tc.args...)
		if !slices.Contains(tc.args, "--state-dir") {
			args = append(args, "--state-dir", state)
		}
		r := agentd(t, "", args...)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing on stdout\n%s", tc.args, r.code, r.stdout, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, r.stderr)
			}
		}
	}
}

// TestMapNothingListed: a map that lists no file says what to do instead
// of printing a bare header (here the only source file has no symbols).
func TestMapNothingListed(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "empty")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "doc.go"), []byte("// Package empty has nothing yet.\npackage empty\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := agentd(t, "", "map", "--workspace", ws, "--state-dir", t.TempDir())
	if r.code != 0 || !strings.Contains(r.stderr, "0 of 1 source files listed") || !strings.Contains(r.stderr, "no file matched; name a symbol") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
