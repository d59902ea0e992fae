package session

import (
	"errors"
	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"strings"
	"testing"
)

// A review mode's name is read by one parser: a bad one names the field
// it came in and the allowed values, whichever front end gave it.
func TestParseReview(t *testing.T) {
	for _, name := range []string{"", "before", "after", "none"} {
		if m, err := ParseReview("--review", name); err != nil || string(m) != name {
			t.Errorf("ParseReview(%q) = %q, %v", name, m, err)
		}
	}
	_, err := ParseReview("options.review", "later")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "options.review" || !strings.Contains(fe.Message, "before, after or none") || !strings.Contains(fe.Message, `"later"`) {
		t.Fatalf("ParseReview(later) = %v, want a FieldError naming options.review, the allowed modes and the bad name", err)
	}
}

// One rule composes every front end's run: the review mode's one default,
// the one meaning of none (writes go through unasked, the rest follows
// the policy), and the policy of each answer mode.
func TestRunOptionsOneRule(t *testing.T) {
	s, err := Open(t.Context(), Options{Root: t.TempDir(), StateDir: t.TempDir(), NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	saved := approval.DefaultApprovalPolicy()
	saved.Command = approval.PolicyAllow // the workspace's own choice
	saved.DenyCommands = []string{"rm -rf *"}
	if err := s.SavePolicy(saved); err != nil {
		t.Fatal(err)
	}
	client := approval.DefaultApprovalPolicy()
	client.Git = approval.PolicyAllow
	for _, c := range []struct {
		name                string
		req                 RunRequest
		review              engine.ReviewMode
		write, command, git string
	}{
		{"ask", RunRequest{Answer: AnswerAsk}, engine.ReviewBefore, "ask", "allow", "ask"},
		{"ask unattended", RunRequest{Answer: AnswerAsk, Unattended: true}, engine.ReviewAfter, "ask", "allow", "ask"},
		{"ask none", RunRequest{Answer: AnswerAsk, Review: engine.ReviewNone}, engine.ReviewNone, "allow", "allow", "ask"},
		{"ask after", RunRequest{Answer: AnswerAsk, Review: engine.ReviewAfter}, engine.ReviewAfter, "ask", "allow", "ask"},
		{"ask client policy", RunRequest{Answer: AnswerAsk, Options: engine.RunOptions{Approval: &client}}, engine.ReviewBefore, "ask", "ask", "allow"},
		{"ask client policy none", RunRequest{Answer: AnswerAsk, Review: engine.ReviewNone, Options: engine.RunOptions{Approval: &client}}, engine.ReviewNone, "allow", "ask", "allow"},
		{"empty answer is ask", RunRequest{}, engine.ReviewBefore, "ask", "allow", "ask"},
		{"yes", RunRequest{Answer: AnswerYes}, engine.ReviewAfter, "allow", "allow", "allow"},
		{"yes before", RunRequest{Answer: AnswerYes, Review: engine.ReviewBefore}, engine.ReviewBefore, "allow", "allow", "allow"},
		{"auto", RunRequest{Answer: AnswerAuto}, engine.ReviewNone, "allow", "allow", "allow"},
		{"options.review is not the user's choice", RunRequest{Answer: AnswerAsk, Options: engine.RunOptions{Review: engine.ReviewNone}}, engine.ReviewBefore, "ask", "allow", "ask"},
	} {
		opts, err := s.RunOptions(c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if opts.Review != c.review || opts.Approval == nil || opts.Approval.Write != c.write || opts.Approval.Command != c.command || opts.Approval.Git != c.git {
			t.Errorf("%s: review %q approval %+v, want review %q, write %s, command %s, git %s", c.name, opts.Review, opts.Approval, c.review, c.write, c.command, c.git)
		}
		if c.req.Options.Approval == nil && (len(opts.Approval.DenyCommands) != 1 || opts.Approval.DenyCommands[0] != "rm -rf *") {
			t.Errorf("%s: denyCommands %q, want the workspace's [rm -rf *] whatever the answer mode", c.name, opts.Approval.DenyCommands)
		}
	}
	if _, err := s.RunOptions(RunRequest{Answer: "sometimes"}); err == nil {
		t.Error("an unknown answer mode was accepted")
	}
	if _, err := s.RunOptions(RunRequest{Review: "later"}); err == nil {
		t.Error("an unknown review mode was accepted")
	}
}
