package engine

import (
	"encoding/json"
	"fmt"
	"github.com/agentd/agentd/engine/plans"
	"regexp"
	"strconv"
	"strings"
)

// Built-in dynamic update rules (plan-format.md "Dynamic updates"). Rules
// run on the scheduler goroutine after every completed step and every
// failed non-critical step (a failed critical step goes to recovery
// instead, where a RecoveryRule may repair it); they must be quick and
// must not change the plan they get. The steps they add are llm and agent
// steps, so they need Config.Model.

// DefaultRules are the built-in rules agentd runs with when a model is
// configured: TestFixRule and SearchAnalysisRule with their defaults.
func DefaultRules() []UpdateRule {
	return []UpdateRule{TestFixRule{}, SearchAnalysisRule{}}
}

// RecoveryRule is an UpdateRule that can also repair a failed critical
// step: it returns steps to run before the failed step runs again (like
// the planner's insert_recovery_steps, and tried before the planner).
type RecoveryRule interface {
	UpdateRule
	Recover(p *plans.Plan, step *plans.Step, st StepState) (insert []*plans.Step, reason string)
}

// DefaultTestCommand matches the commands of the usual test runners, at the
// start of the command or after a space, ";", "&", "|" or "(".
var DefaultTestCommand = regexp.MustCompile(`(^|[\s;&|(])(go test|npm (run )?test|yarn (run )?test|pnpm (run )?test|bun test|deno test|pytest|python3? -m (pytest|unittest)|cargo (test|nextest)|make (check|test)|mvn (test|verify)|gradle test|\./gradlew test|dotnet test|swift test|mix test|jest|vitest|rspec|phpunit|ctest|tox)\b`)

// DefaultFixTools are the tools a fix step may use: reading, searching and
// editing files, not running commands (the test step runs again after it).
var DefaultFixTools = []string{"read_file", "list_dir", "search_files", "search_code", "edit_file", "write_file", "apply_patch"}

// TestFixRule repairs failing tests. A run_command step whose command
// matches Command "failed" when the command ran and either the step failed
// (exit code not in okExitCodes, timeout) or it completed with a non-zero
// exit code that okExitCodes allowed. A step that failed before its command
// ran (approval denied, bad arguments) is left alone.
//
// After such a step (UpdateRule, a failed non-critical or a completed step)
// the rule adds two steps:
//
//   - "<id>_fix_<n>": an agent step, not critical, limited to Tools, whose
//     prompt holds the command, its exit code and the tail of its stdout and
//     stderr (or the step's error), with "$" written as "$$"; it depends on
//     what the test step depended on (a failed step blocks its dependents)
//     or, when the test step completed, on the test step;
//   - "<id>_retest_<n>": a copy of the test step (same args, criticality,
//     retry, timeout, approval; no when) that depends on the fix step.
//
// For a failed critical test step (RecoveryRule) it inserts only the fix
// step, and the failed step runs again after it.
//
// <id> is the original test step's id (for a retest, without its
// "_retest_<n>" suffix) and n counts the rounds; after MaxFixes rounds per
// test step the rule adds nothing more (and recovery falls to the planner).
type TestFixRule struct {
	// Command matches test commands (DefaultTestCommand if nil).
	Command *regexp.Regexp
	// MaxFixes bounds the fix rounds per test step (default 2).
	MaxFixes int
	// Tools are the fix step's tools (DefaultFixTools if empty).
	Tools []string
}

var _ RecoveryRule = TestFixRule{}

// Name implements UpdateRule.
func (TestFixRule) Name() string { return "test-fix" }

// retestSuffix ends the id of a step TestFixRule added.
var retestSuffix = regexp.MustCompile(`_retest_[0-9]+$`)

// outputTail is how much of stdout and of stderr a fix prompt gets.
const outputTail = 6000

// After implements UpdateRule.
func (r TestFixRule) After(p *plans.Plan, step *plans.Step, st StepState) ([]*plans.Step, string) {
	f, ok := r.failure(p, step, st)
	if !ok {
		return nil, ""
	}
	deps := append([]string(nil), step.DependsOn...)
	if st.Status == StepCompleted {
		deps = []string{step.ID}
	}
	fix := r.fixStep(f, deps)
	re := step.Clone()
	re.ID = f.root + "_retest_" + strconv.Itoa(f.round)
	re.Description = "Run " + f.command + " again after the fix"
	re.DependsOn, re.When = []string{fix.ID}, ""
	return []*plans.Step{fix, re}, fmt.Sprintf("%s %s: added a fix step and the test again (round %d of %d)", f.command, f.what, f.round, f.max)
}

// Recover implements RecoveryRule: the fix step runs before the failed
// critical test step runs again.
func (r TestFixRule) Recover(p *plans.Plan, step *plans.Step, st StepState) ([]*plans.Step, string) {
	if st.Status != StepFailed {
		return nil, ""
	}
	f, ok := r.failure(p, step, st)
	if !ok {
		return nil, ""
	}
	return []*plans.Step{r.fixStep(f, append([]string(nil), step.DependsOn...))},
		fmt.Sprintf("%s %s: added a fix step before running it again (round %d of %d)", f.command, f.what, f.round, f.max)
}

// testFailure is what TestFixRule knows about a failed test step.
type testFailure struct {
	root, command, what, report string
	round, max                  int
}

// failure says whether step is a test command that failed and may get
// another fix round.
func (r TestFixRule) failure(p *plans.Plan, step *plans.Step, st StepState) (testFailure, bool) {
	if step.EffectiveKind() != plans.KindTool || step.Tool != "run_command" {
		return testFailure{}, false
	}
	var args struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(step.Args, &args) != nil || args.Command == "" {
		return testFailure{}, false
	}
	match := r.Command
	if match == nil {
		match = DefaultTestCommand
	}
	if !match.MatchString(args.Command) {
		return testFailure{}, false
	}
	var out struct {
		ExitCode *int   `json:"exitCode"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		TimedOut bool   `json:"timedOut"`
	}
	_ = json.Unmarshal(st.Output, &out)
	ran := out.ExitCode != nil || out.TimedOut
	var what string
	switch {
	case !ran:
		return testFailure{}, false
	case st.Status == StepFailed && out.TimedOut:
		what = "timed out"
	case st.Status == StepFailed:
		what = "failed with exit code " + strconv.Itoa(*out.ExitCode)
	case st.Status == StepCompleted && *out.ExitCode != 0:
		what = "exited with code " + strconv.Itoa(*out.ExitCode)
	default:
		return testFailure{}, false
	}
	f := testFailure{root: retestSuffix.ReplaceAllString(step.ID, ""), command: args.Command, what: what, max: r.MaxFixes}
	if f.max <= 0 {
		f.max = 2
	}
	f.round = 1
	for p.Step(f.root+"_fix_"+strconv.Itoa(f.round)) != nil {
		f.round++
	}
	if f.round > f.max || p.Step(f.root+"_retest_"+strconv.Itoa(f.round)) != nil {
		return testFailure{}, false
	}
	f.report = strings.TrimSpace(tail(out.Stdout, outputTail) + "\n" + tail(out.Stderr, outputTail))
	if f.report == "" {
		f.report = st.Error
	}
	return f, true
}

// fixStep is the agent step that fixes the code after f.
func (r TestFixRule) fixStep(f testFailure, deps []string) *plans.Step {
	tools := r.Tools
	if len(tools) == 0 {
		tools = DefaultFixTools
	}
	no := false
	return &plans.Step{
		ID:          f.root + "_fix_" + strconv.Itoa(f.round),
		Description: "Fix the failure of " + f.command,
		Kind:        plans.KindAgent,
		Tools:       append([]string(nil), tools...),
		Prompt: escapeRefs(fmt.Sprintf("The test command `%s` %s. Its output:\n\n%s\n\n"+
			"Find the cause in the code and fix it with the smallest change. Do not weaken or delete tests unless they are wrong.",
			f.command, f.what, f.report)),
		DependsOn: deps,
		Critical:  &no,
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// escapeRefs makes text literal in a step prompt ("$" becomes "$$").
func escapeRefs(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// SearchAnalysisRule adds, after a search_files or search_code step that
// completed with more than Threshold files, an llm step "<id>_analysis"
// (not critical, depending on the search) whose prompt holds the files
// (the reference ${<id>.files}) and the plan's request (or its title) and
// asks for the files that matter, most important first.
type SearchAnalysisRule struct {
	Threshold int // default 20
}

var _ UpdateRule = SearchAnalysisRule{}

// Name implements UpdateRule.
func (SearchAnalysisRule) Name() string { return "search-analysis" }

// After implements UpdateRule.
func (r SearchAnalysisRule) After(p *plans.Plan, step *plans.Step, st StepState) ([]*plans.Step, string) {
	if st.Status != StepCompleted || step.EffectiveKind() != plans.KindTool ||
		(step.Tool != "search_files" && step.Tool != "search_code") {
		return nil, ""
	}
	var out struct {
		Files []string `json:"files"`
	}
	if json.Unmarshal(st.Output, &out) != nil {
		return nil, ""
	}
	limit := r.Threshold
	if limit <= 0 {
		limit = 20
	}
	id := step.ID + "_analysis"
	if len(out.Files) <= limit || p.Step(id) != nil {
		return nil, ""
	}
	prompt := "The search of step " + step.ID + " found these files:\n${" + step.ID + ".files}\n\n"
	goal := p.Request
	if goal == "" {
		goal = p.Title
	}
	if goal != "" {
		prompt += "Goal: " + escapeRefs(goal) + "\n\n"
	}
	prompt += "List the files that matter for the goal, most important first, one per line with a few words on why. Group the rest by directory."
	no := false
	return []*plans.Step{{
		ID:          id,
		Description: fmt.Sprintf("Pick the relevant files among the %d found by %s", len(out.Files), step.ID),
		Kind:        plans.KindLLM,
		Prompt:      prompt,
		DependsOn:   []string{step.ID},
		Critical:    &no,
	}}, fmt.Sprintf("search %s found %d files (more than %d): added an analysis step", step.ID, len(out.Files), limit)
}
