package engine

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Built-in dynamic update rules (plan-format.md "Dynamic updates"). Rules
// run on the scheduler goroutine after every completed step and every
// failed non-critical step (a failed critical step goes to recovery
// instead); they must be quick and must not change the plan they get.

// SearchAnalysisRule adds an llm step that sorts out the results of a
// search_files or search_code step that found more than Threshold files.
type SearchAnalysisRule struct {
	Threshold int // default 20
}

func (r SearchAnalysisRule) Name() string { return "search-analysis" }

func (r SearchAnalysisRule) After(p *Plan, step *Step, st StepState) ([]*Step, string) {
	if st.Status != StepCompleted || (step.Tool != "search_files" && step.Tool != "search_code") {
		return nil, ""
	}
	limit := r.Threshold
	if limit <= 0 {
		limit = 20
	}
	n := countResults(st.Output)
	id := step.ID + "_analysis"
	if n <= limit || p.Step(id) != nil || strings.HasPrefix(step.ID, "_") && strings.HasSuffix(step.ID, "_analysis") {
		return nil, ""
	}
	prompt := fmt.Sprintf("The search %q found %d results:\n$%s\n\nList the ones that matter for the task", step.ID, n, step.ID)
	if p.Request != "" {
		prompt += ": " + p.Request
	}
	prompt += ", and say briefly why."
	no := false
	return []*Step{{
		ID: id, Kind: KindLLM, Description: "Analyse the results of " + step.ID,
		Prompt: prompt, DependsOn: []string{step.ID}, Critical: &no,
	}}, fmt.Sprintf("search %s found %d results (more than %d)", step.ID, n, limit)
}

// countResults counts a search output's results: an array, or the
// longest array among an object's fields.
func countResults(out json.RawMessage) int {
	var arr []json.RawMessage
	if json.Unmarshal(out, &arr) == nil {
		return len(arr)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(out, &obj) != nil {
		return 0
	}
	n := 0
	for _, v := range obj {
		if json.Unmarshal(v, &arr) == nil {
			n = max(n, len(arr))
		}
	}
	return n
}

// RecoveryRule is an UpdateRule that can also repair a failed critical
// step: it returns steps to run before the failed step runs again (like
// the planner's insert_recovery_steps, and tried before the planner).
type RecoveryRule interface {
	UpdateRule
	Recover(p *Plan, step *Step, st StepState) (insert []*Step, reason string)
}

// TestFixRule adds, after a failed non-critical run_command step whose
// command runs tests, an agent step that is given the failure and fixes
// the code, followed by the same command again. For a failed critical
// test step (as RecoveryRule) it inserts the fix step and the step itself
// runs again.
type TestFixRule struct {
	// Match says whether a command runs tests; default: it contains
	// "test" (go test, npm test, pytest, cargo test, make test, ...).
	Match func(command string) bool
}

func (r TestFixRule) Name() string { return "test-fix" }

func (r TestFixRule) After(p *Plan, step *Step, st StepState) ([]*Step, string) {
	if st.Status != StepFailed || step.Tool != "run_command" || strings.HasSuffix(step.ID, "_retest") {
		return nil, ""
	}
	var a struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(step.Args, &a) != nil || a.Command == "" {
		return nil, ""
	}
	match := r.Match
	if match == nil {
		match = func(c string) bool { return strings.Contains(c, "test") }
	}
	fix, retest := step.ID+"_fix", step.ID+"_retest"
	if !match(a.Command) || p.Step(fix) != nil || p.Step(retest) != nil {
		return nil, ""
	}
	failure := st.Error
	if len(failure) > 4000 {
		failure = failure[len(failure)-4000:]
	}
	failure = strings.ReplaceAll(failure, "$", "$$")
	no := false
	re := step.Clone()
	re.ID, re.DependsOn, re.Description, re.When = retest, []string{fix}, "Run "+a.Command+" again", ""
	re.Critical = &no
	return []*Step{
		{ID: fix, Kind: KindAgent, Description: "Fix the failure of " + step.ID,
			Prompt: fmt.Sprintf("The command `%s` failed:\n\n%s\n\nFind the cause and fix the code so that it passes. Do not change the tests unless they are wrong.",
				strings.ReplaceAll(a.Command, "$", "$$"), failure),
			DependsOn: append([]string(nil), step.DependsOn...), Critical: &no},
		re,
	}, fmt.Sprintf("%s failed; fixing and running it again", a.Command)
}

// Recover inserts the fix step before a failed critical test step.
func (r TestFixRule) Recover(p *Plan, step *Step, st StepState) ([]*Step, string) {
	add, reason := r.After(p, step, st)
	if len(add) == 0 {
		return nil, ""
	}
	return add[:1], reason
}
