package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentd/agentd/engine"
)

// DefaultTestCommand matches the usual test commands.
var DefaultTestCommand = regexp.MustCompile(`(^|[\s;&|(])(go test|npm (run )?test|yarn test|pnpm (run )?test|pytest|python -m pytest|cargo test|make (check|test)|mvn test|gradle test|\./gradlew test|jest|vitest|rspec|ctest|tox)\b`)

// FixFailingTests adds, after a test command that failed (or completed
// with a non-zero exit code because okExitCodes allowed it), an agent step
// given the failure output that fixes the code, followed by the test again.
// At most MaxFixes rounds per test step.
type FixFailingTests struct {
	// Command matches test commands (DefaultTestCommand if nil).
	Command *regexp.Regexp
	// MaxFixes bounds the fix/retest rounds per test step (default 2).
	MaxFixes int
	// Tools are the fix step's tools (default: read, search and edit tools).
	Tools []string
}

var _ engine.UpdateRule = FixFailingTests{}

// Name implements engine.UpdateRule.
func (FixFailingTests) Name() string { return "fix-failing-tests" }

// defaultFixTools are what a fix step may use.
var defaultFixTools = []string{"read_file", "list_dir", "search_files", "search_code", "edit_file", "write_file", "apply_patch"}

// After implements engine.UpdateRule.
func (r FixFailingTests) After(p *engine.Plan, step *engine.Step, st engine.StepState) ([]*engine.Step, string) {
	if step.EffectiveKind() != engine.KindTool || step.Tool != "run_command" {
		return nil, ""
	}
	var args struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(step.Args, &args) != nil || args.Command == "" {
		return nil, ""
	}
	re := r.Command
	if re == nil {
		re = DefaultTestCommand
	}
	if !re.MatchString(args.Command) {
		return nil, ""
	}
	var out struct {
		ExitCode *int   `json:"exitCode"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	_ = json.Unmarshal(st.Output, &out)
	failed := st.Status == engine.StepFailed || (st.Status == engine.StepCompleted && out.ExitCode != nil && *out.ExitCode != 0)
	if !failed {
		return nil, ""
	}
	root := step.ID
	if i := strings.Index(root, "_retest"); i > 0 {
		root = root[:i]
	}
	max := r.MaxFixes
	if max <= 0 {
		max = 2
	}
	n := 1
	for p.Step(fmt.Sprintf("_fix_%s_%d", root, n)) != nil {
		n++
	}
	if n > max {
		return nil, ""
	}
	fixID := fmt.Sprintf("_fix_%s_%d", root, n)
	retestID := fmt.Sprintf("%s_retest_%d", root, n)
	if p.Step(retestID) != nil {
		return nil, ""
	}
	report := strings.TrimSpace(tail(out.Stdout, 6000) + "\n" + tail(out.Stderr, 6000))
	if report == "" {
		report = st.Error
	}
	tools := r.Tools
	if len(tools) == 0 {
		tools = defaultFixTools
	}
	// A failed step blocks its dependents, so the fix does not depend on it:
	// it runs after what the test ran after, with the output in its prompt.
	deps := append([]string(nil), step.DependsOn...)
	if st.Status == engine.StepCompleted {
		deps = []string{step.ID}
	}
	critical := false
	fix := &engine.Step{
		ID:          fixID,
		Description: "Fix the failure of " + args.Command,
		Kind:        engine.KindAgent,
		Tools:       tools,
		Prompt: escapeRefs(fmt.Sprintf("The test command `%s` failed (exit code %s). Its output:\n\n%s\n\n"+
			"Find the cause in the code and fix it with the smallest change. Do not weaken or delete tests.",
			args.Command, exitText(out.ExitCode), report)),
		DependsOn: deps,
		Critical:  &critical,
	}
	retest := &engine.Step{
		ID:          retestID,
		Description: "Run the tests again after the fix",
		Tool:        "run_command",
		Args:        step.Args,
		DependsOn:   []string{fixID},
		Critical:    step.Critical,
		Timeout:     step.Timeout,
	}
	return []*engine.Step{fix, retest}, fmt.Sprintf("%q failed: added a fix step and the test again (round %d of %d)", args.Command, n, max)
}

func exitText(c *int) string {
	if c == nil {
		return "unknown"
	}
	return fmt.Sprint(*c)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// escapeRefs makes text literal in a step prompt ("$" becomes "$$").
func escapeRefs(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// AnalyzeLargeSearch adds, after a search_files or search_code step that
// found more than Threshold files, an llm step that picks out the files
// relevant to the plan's request.
type AnalyzeLargeSearch struct {
	Threshold int // default 20
}

var _ engine.UpdateRule = AnalyzeLargeSearch{}

// Name implements engine.UpdateRule.
func (AnalyzeLargeSearch) Name() string { return "analyze-large-search" }

// After implements engine.UpdateRule.
func (r AnalyzeLargeSearch) After(p *engine.Plan, step *engine.Step, st engine.StepState) ([]*engine.Step, string) {
	if st.Status != engine.StepCompleted || step.EffectiveKind() != engine.KindTool ||
		(step.Tool != "search_files" && step.Tool != "search_code") {
		return nil, ""
	}
	var out struct {
		Files []string `json:"files"`
	}
	if json.Unmarshal(st.Output, &out) != nil {
		return nil, ""
	}
	th := r.Threshold
	if th <= 0 {
		th = 20
	}
	if len(out.Files) <= th {
		return nil, ""
	}
	id := "_analyze_" + step.ID
	if p.Step(id) != nil {
		return nil, ""
	}
	goal := p.Request
	if goal == "" {
		goal = p.Title
	}
	critical := false
	an := &engine.Step{
		ID:          id,
		Description: fmt.Sprintf("Pick the relevant files among the %d found by %s", len(out.Files), step.ID),
		Kind:        engine.KindLLM,
		Prompt: "The search of step " + step.ID + " found these files:\n${" + step.ID + ".files}\n\n" +
			"Goal: " + escapeRefs(goal) + "\n\nList the files that matter for the goal, most important first, one per line with a few words on why. Group the rest by directory.",
		DependsOn: []string{step.ID},
		Critical:  &critical,
	}
	return []*engine.Step{an}, fmt.Sprintf("search %s found %d files (more than %d): added an analysis step", step.ID, len(out.Files), th)
}

// DefaultRules are the model-backed dynamic update rules.
func DefaultRules() []engine.UpdateRule {
	return []engine.UpdateRule{FixFailingTests{}, AnalyzeLargeSearch{}}
}
