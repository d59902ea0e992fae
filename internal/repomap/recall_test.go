package repomap

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestContextRecall measures the map's context recall: for each request of
// testdata/recall.json, which names a symbol or a behaviour, is the file
// that defines it among the files the map (default budget, no editor
// focus, as from the terminal) lists? Three real repositories: this
// checkout, examples/demo, and Go's net/http. It prints the score and
// fails below the set's pass mark (28 of 30, the same ratio for a longer
// set; mk/recall.sh runs the same set through a built agentd).
//
//	go test -run TestContextRecall -v ./internal/repomap/
func TestContextRecall(t *testing.T) {
	data, err := os.ReadFile("testdata/recall.json")
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Pass  struct{ Hits, Of int }
		Cases []struct{ Repo, Request, Want string }
	}
	if err := json.Unmarshal(data, &set); err != nil {
		t.Fatal(err)
	}
	cases, pass := set.Cases, set.Pass
	if pass.Of == 0 {
		t.Fatal(`testdata/recall.json has no "pass": {"hits": H, "of": N}`)
	}
	roots := map[string]string{
		"agentd":  "../..",
		"demo":    "../../examples/demo",
		"nethttp": filepath.Join(goroot(t), "src", "net", "http"),
	}
	maps := map[string]*Map{}
	for name, dir := range roots {
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := New(openWS(t, abs), Options{})
		if err := m.Update(context.Background()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		maps[name] = m
	}
	hits := 0
	for _, c := range cases {
		m := maps[c.Repo]
		if m == nil {
			t.Fatalf("unknown repository %q in testdata/recall.json", c.Repo)
		}
		if _, err := os.Stat(filepath.Join(roots[c.Repo], c.Want)); err != nil {
			t.Errorf("%s: %s no longer exists; update testdata/recall.json", c.Repo, c.Want)
			continue
		}
		_, listed, err := m.Render(context.Background(), Query{Request: c.Request})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(listed, c.Want) {
			hits++
		} else {
			t.Logf("miss: %s %q: %s not among the %d files listed", c.Repo, c.Request, c.Want, len(listed))
		}
	}
	t.Logf("context recall: %d of %d requests have the defining file in the map (%.0f%%)", hits, len(cases), 100*float64(hits)/float64(len(cases)))
	if len(cases) < pass.Of {
		t.Errorf("only %d requests; the set needs at least %d", len(cases), pass.Of)
	}
	if hits*pass.Of < pass.Hits*len(cases) {
		t.Errorf("context recall %d/%d is below %d of %d", hits, len(cases), pass.Hits, pass.Of)
	}
}

// goroot is $GOROOT when set (a test binary run where no go command is,
// e.g. the windows/amd64 one under Wine), else `go env GOROOT`.
func goroot(t *testing.T) string {
	if d := os.Getenv("GOROOT"); d != "" {
		return d
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}
