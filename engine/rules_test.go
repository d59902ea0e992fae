package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
)

func TestDefaultRules(t *testing.T) {
	var names []string
	for _, r := range DefaultRules() {
		names = append(names, r.Name())
	}
	if want := []string{"test-fix", "search-analysis"}; !slices.Equal(names, want) {
		t.Errorf("default rules %v, want %v", names, want)
	}
	if _, ok := DefaultRules()[0].(RecoveryRule); !ok {
		t.Error("the default test-fix rule does not repair critical steps")
	}
}

func TestDefaultTestCommand(t *testing.T) {
	for _, c := range []string{
		"go test ./...", "go test -race -count=1 ./engine/...", "cd web && npm test", "npm run test:unit",
		"yarn test", "pnpm run test", "pytest -x tests", "python -m pytest", "python3 -m unittest discover",
		"cargo test --all", "make test", "make check", "(cd sub; make test)", "mvn verify", "./gradlew test",
		"npx jest --ci", "npx vitest run", "bundle exec rspec", "dotnet test", "tox -e py312", "ctest --output-on-failure",
	} {
		if !DefaultTestCommand.MatchString(c) {
			t.Errorf("%q is not taken for a test command", c)
		}
	}
	for _, c := range []string{
		"go build ./...", "go vet ./...", "make testdata", "cat test.txt", "ls tests/", "echo latest", "gotest", "npm install",
	} {
		if DefaultTestCommand.MatchString(c) {
			t.Errorf("%q is taken for a test command", c)
		}
	}
}

// testPlan is a plan with a failing test step t after s.
func testPlan(t *testing.T) (*plans.Plan, *plans.Step) {
	t.Helper()
	p := mkPlan(t, `[
		{"id":"s","tool":"op","args":{}},
		{"id":"t","tool":"run_command","args":{"command":"go test ./..."},"dependsOn":["s"],"critical":false,"when":"true","retry":{"max":1},"timeout":"5m"}
	]`)
	return p, p.Step("t")
}

func cmdOut(exit int, stdout, stderr string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"exitCode": exit, "stdout": stdout, "stderr": stderr})
	return b
}

func TestTestFixRuleAfterFailure(t *testing.T) {
	p, test := testPlan(t)
	st := StepState{Status: StepFailed, Error: "exit code 1", Output: cmdOut(1, "--- FAIL: TestX cost $5", "panic: boom")}
	add, why := TestFixRule{}.After(p, test, st)
	if len(add) != 2 {
		t.Fatalf("added %+v", add)
	}
	fix, re := add[0], add[1]
	if fix.ID != "t_fix_1" || fix.Kind != plans.KindAgent || fix.IsCritical() || !slices.Equal(fix.DependsOn, []string{"s"}) ||
		!slices.Equal(fix.Tools, DefaultFixTools) {
		t.Errorf("fix step %+v", fix)
	}
	for _, want := range []string{"`go test ./...` failed with exit code 1", "--- FAIL: TestX cost $$5", "panic: boom"} {
		if !strings.Contains(fix.Prompt, want) {
			t.Errorf("fix prompt lacks %q: %s", want, fix.Prompt)
		}
	}
	if re.ID != "t_retest_1" || re.Tool != "run_command" || string(re.Args) != string(test.Args) || !slices.Equal(re.DependsOn, []string{"t_fix_1"}) ||
		re.IsCritical() || re.When != "" || re.Retry == nil || re.Retry.Max != 1 || re.Timeout != "5m" {
		t.Errorf("retest step %+v", re)
	}
	if !strings.Contains(why, "go test ./... failed with exit code 1") || !strings.Contains(why, "round 1 of 2") {
		t.Errorf("reason %q", why)
	}
	// The rule must not change the plan or the step it gets.
	if len(p.Steps) != 2 || len(test.DependsOn) != 1 || test.When != "true" {
		t.Errorf("rule changed the plan: %+v", p.Steps)
	}
	// The added steps are a valid plan with the built-in tools.
	p.Steps = append(p.Steps, add...)
	reg := tools.Builtin()
	reg.Register(&schedTool{name: "op", cat: tools.CategoryRead, risk: tools.RiskLow})
	if probs := plans.ValidatePlan(p, reg, 0); len(probs) > 0 {
		t.Errorf("plan with fix steps invalid: %v", probs)
	}
}

func TestTestFixRuleWhenItFires(t *testing.T) {
	p, test := testPlan(t)
	exit0 := StepState{Status: StepCompleted, Output: cmdOut(0, "ok", "")}
	allowed := StepState{Status: StepCompleted, Output: cmdOut(3, "3 tests failed", "")}
	denied := StepState{Status: StepFailed, Error: "approval denied"}
	timedOut := StepState{Status: StepFailed, Error: "timeout", Output: json.RawMessage(`{"exitCode":-1,"timedOut":true,"stdout":"=== RUN TestSlow"}`)}
	noOutput := StepState{Status: StepFailed, Error: "FAIL: TestY", Output: json.RawMessage(`{"exitCode":2}`)}
	failed := StepState{Status: StepFailed, Output: cmdOut(1, "FAIL", "")}

	if add, _ := (TestFixRule{}).After(p, test, exit0); add != nil {
		t.Errorf("passing tests added %+v", add)
	}
	if add, _ := (TestFixRule{}).After(p, test, denied); add != nil {
		t.Errorf("a command that never ran added %+v", add)
	}
	// okExitCodes let a non-zero exit complete: the fix runs after the test.
	add, why := TestFixRule{}.After(p, test, allowed)
	if len(add) != 2 || !slices.Equal(add[0].DependsOn, []string{"t"}) || !strings.Contains(add[0].Prompt, "exited with code 3") ||
		!strings.Contains(why, "exited with code 3") {
		t.Errorf("allowed non-zero exit: %+v %q", add, why)
	}
	add, _ = TestFixRule{}.After(p, test, timedOut)
	if len(add) != 2 || !strings.Contains(add[0].Prompt, "timed out") || !strings.Contains(add[0].Prompt, "=== RUN TestSlow") {
		t.Errorf("timeout: %+v", add)
	}
	add, _ = TestFixRule{}.After(p, test, noOutput)
	if len(add) != 2 || !strings.Contains(add[0].Prompt, "FAIL: TestY") {
		t.Errorf("without stdout/stderr the prompt should hold the error: %+v", add)
	}
	// Only test commands of run_command tool steps.
	build := &plans.Step{ID: "b", Tool: "run_command", Args: json.RawMessage(`{"command":"go build ./..."}`)}
	if add, _ := (TestFixRule{}).After(p, build, failed); add != nil {
		t.Errorf("a build added %+v", add)
	}
	if add, _ := (TestFixRule{Command: regexp.MustCompile(`go build`)}).After(p, build, failed); len(add) != 2 {
		t.Errorf("a custom Command did not match: %+v", add)
	}
	other := &plans.Step{ID: "o", Tool: "cmd", Args: test.Args}
	if add, _ := (TestFixRule{}).After(p, other, failed); add != nil {
		t.Errorf("another tool added %+v", add)
	}
	// Long output: the fix gets the tail.
	long := strings.Repeat("x", 10000) + "THE END"
	add, _ = TestFixRule{Tools: []string{"read_file", "edit_file"}}.After(p, test, StepState{Status: StepFailed, Output: cmdOut(1, "HEAD"+long, "")})
	if len(add) != 2 || strings.Contains(add[0].Prompt, "HEAD") || !strings.Contains(add[0].Prompt, "THE END") ||
		len(add[0].Prompt) > 2*outputTail+1000 || !slices.Equal(add[0].Tools, []string{"read_file", "edit_file"}) {
		t.Errorf("long output: prompt of %d bytes, tools %v", len(add[0].Prompt), add[0].Tools)
	}
}

func TestTestFixRuleBounded(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want []string
	}{
		{0, []string{"t_fix_1", "t_retest_1", "t_fix_2", "t_retest_2"}},
		{1, []string{"t_fix_1", "t_retest_1"}},
		{3, []string{"t_fix_1", "t_retest_1", "t_fix_2", "t_retest_2", "t_fix_3", "t_retest_3"}},
	} {
		p, step := testPlan(t)
		st := StepState{Status: StepFailed, Output: cmdOut(1, "--- FAIL: TestX", "")}
		var ids []string
		for range 5 {
			add, _ := TestFixRule{MaxFixes: tc.max}.After(p, step, st)
			if len(add) == 0 {
				break
			}
			p.Steps = append(p.Steps, add...)
			for _, a := range add {
				ids = append(ids, a.ID)
			}
			step = add[1]
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("MaxFixes %d: added %v, want %v", tc.max, ids, tc.want)
		}
		// A later round's fix follows the last retest's dependency, the last fix.
		if tc.max == 0 && !slices.Equal(p.Step("t_fix_2").DependsOn, []string{"t_fix_1"}) {
			t.Errorf("round 2 fix depends on %v", p.Step("t_fix_2").DependsOn)
		}
		// Recover counts the same rounds.
		if add, _ := (TestFixRule{MaxFixes: tc.max}).Recover(p, p.Step("t"), st); add != nil {
			t.Errorf("MaxFixes %d: Recover added %+v after the last round", tc.max, add)
		}
	}
}

func TestTestFixRuleRecover(t *testing.T) {
	p := mkPlan(t, `[{"id":"s","tool":"op","args":{}},{"id":"t","tool":"run_command","args":{"command":"make test"},"dependsOn":["s"]}]`)
	st := StepState{Status: StepFailed, Output: cmdOut(2, "", "make: *** [test] Error 1")}
	add, why := TestFixRule{}.Recover(p, p.Step("t"), st)
	if len(add) != 1 || add[0].ID != "t_fix_1" || add[0].Kind != plans.KindAgent || !slices.Equal(add[0].DependsOn, []string{"s"}) ||
		!strings.Contains(add[0].Prompt, "make: *** [test] Error 1") || !strings.Contains(why, "before running it again") {
		t.Errorf("recover: %+v %q", add, why)
	}
	if add, _ := (TestFixRule{}).Recover(p, p.Step("t"), StepState{Status: StepFailed, Error: "approval denied"}); add != nil {
		t.Errorf("recover without a run added %+v", add)
	}
}

func TestSearchAnalysisRule(t *testing.T) {
	p := mkPlan(t, `[{"id":"find","tool":"op","args":{}}]`)
	p.Request = "rename the $HOME handling"
	files := make([]string, 30)
	for i := range files {
		files[i] = fmt.Sprintf("pkg/f%02d.go", i)
	}
	many, _ := json.Marshal(map[string]any{"files": files})
	search := &plans.Step{ID: "find", Tool: "search_files", Args: json.RawMessage(`{"glob":"**/*.go"}`)}
	add, why := SearchAnalysisRule{}.After(p, search, StepState{Status: StepCompleted, Output: many})
	if len(add) != 1 || add[0].ID != "find_analysis" || add[0].Kind != plans.KindLLM || add[0].IsCritical() ||
		!slices.Equal(add[0].DependsOn, []string{"find"}) || !strings.Contains(add[0].Prompt, "${find.files}") ||
		!strings.Contains(add[0].Prompt, "Goal: rename the $$HOME handling") || !strings.Contains(why, "found 30 files (more than 20)") {
		t.Errorf("search analysis: %+v %q", add, why)
	}
	// search_code's files count too; the title stands in for a missing request.
	p.Request = ""
	code := &plans.Step{ID: "grep", Tool: "search_code"}
	codeOut, _ := json.Marshal(map[string]any{"matches": []any{}, "files": files[:25]})
	add, _ = SearchAnalysisRule{}.After(p, code, StepState{Status: StepCompleted, Output: codeOut})
	if len(add) != 1 || add[0].ID != "grep_analysis" || !strings.Contains(add[0].Prompt, "Goal: test") {
		t.Errorf("search_code analysis: %+v", add)
	}
	few, _ := json.Marshal(map[string]any{"files": files[:5]})
	for name, c := range map[string]struct {
		r    SearchAnalysisRule
		step *plans.Step
		st   StepState
	}{
		"at the threshold":  {SearchAnalysisRule{Threshold: 5}, search, StepState{Status: StepCompleted, Output: few}},
		"below a threshold": {SearchAnalysisRule{Threshold: 40}, search, StepState{Status: StepCompleted, Output: many}},
		"failed search":     {SearchAnalysisRule{}, search, StepState{Status: StepFailed, Output: many}},
		"other tool":        {SearchAnalysisRule{}, &plans.Step{ID: "ls", Tool: "list_dir"}, StepState{Status: StepCompleted, Output: many}},
		"no files field":    {SearchAnalysisRule{}, search, StepState{Status: StepCompleted, Output: json.RawMessage(`[1,2,3]`)}},
	} {
		if add, _ := c.r.After(p, c.step, c.st); add != nil {
			t.Errorf("%s: added %+v", name, add)
		}
	}
	p.Steps = append(p.Steps, &plans.Step{ID: "find_analysis", Kind: plans.KindLLM, Prompt: "x", DependsOn: []string{"find"}})
	if add, _ := (SearchAnalysisRule{}).After(p, search, StepState{Status: StepCompleted, Output: many}); add != nil {
		t.Errorf("analysis added twice: %+v", add)
	}
}

func TestSearchAnalysisRuleRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		h.reg.Register(&schedTool{name: "search_files", cat: tools.CategoryRead, risk: tools.RiskLow, h: h})
		m := &fakeModel{}
		files := make([]string, 21)
		for i := range files {
			files[i] = fmt.Sprintf("src/f%02d.ts", i)
		}
		out, _ := json.Marshal(map[string]any{"files": files})
		p := mkPlan(t, fmt.Sprintf(`[{"id":"find","tool":"search_files","args":{"out":%s}}]`, out))
		p.Request = "find the entry point"
		st, rec := runPlan(t, New(Config{Tools: h.reg, Model: m, Rules: DefaultRules()}), p, RunOptions{})
		if st.Status != RunCompleted {
			t.Fatalf("status %s: %s", st.Status, st.Error)
		}
		wantStatus(t, st, map[string]StepStatus{"find_analysis": StepCompleted})
		if len(m.calls) != 1 || !strings.Contains(m.calls[0].Prompt, "src/f20.ts") || !strings.Contains(m.calls[0].Prompt, "find the entry point") {
			t.Errorf("model calls %+v", m.calls)
		}
		if ups := rec.of(EventPlanUpdated); len(ups) != 1 || !strings.HasPrefix(ups[0].Reason, "search-analysis: search find found 21 files") {
			t.Errorf("updates %+v", ups)
		}
	})
}

// fakeTest is a run_command whose tests pass once fixed is set; failing,
// it returns its output with the error, like run_command. With
// "allow":true a failing exit code completes the step (okExitCodes).
type fakeTest struct {
	fixed *atomic.Bool
	runs  atomic.Int32
}

func (*fakeTest) Name() string             { return "run_command" }
func (*fakeTest) Description() string      { return "fake run_command" }
func (*fakeTest) Category() tools.Category { return tools.CategoryCommand }
func (*fakeTest) Risk() tools.Risk         { return tools.RiskHigh }
func (*fakeTest) Schema() json.RawMessage  { return json.RawMessage(`{"type":"object"}`) }

func (f *fakeTest) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (*tools.Result, error) {
	f.runs.Add(1)
	var a struct {
		Allow bool `json:"allow"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if f.fixed.Load() {
		return &tools.Result{Output: map[string]any{"exitCode": 0, "stdout": "PASS"}}, nil
	}
	res := &tools.Result{Output: map[string]any{"exitCode": 1, "stdout": "--- FAIL: TestX ($HOME)", "stderr": ""}}
	if a.Allow {
		return res, nil
	}
	return res, &tools.Error{Code: "EXIT_CODE", Message: "command exited with code 1"}
}

// fixWorld is a harness with the fake test command, the fix tools and a
// model that fixes the tests when fixes is true.
func fixWorld(fixes bool) (*harness, *fakeTest, *fakeModel) {
	h := newHarness()
	ft := &fakeTest{fixed: &atomic.Bool{}}
	h.reg.Register(ft)
	for _, name := range DefaultFixTools {
		h.reg.Register(&schedTool{name: name, cat: tools.CategoryWrite, risk: tools.RiskMedium, h: h})
	}
	m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
		if fixes {
			ft.fixed.Store(true)
		}
		return &ModelResult{Text: "fixed", Calls: 1}, nil
	}}
	return h, ft, m
}

func toolNames(ts []tools.Tool) []string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Name())
	}
	return names
}

func TestTestFixRuleRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ft, m := fixWorld(true)
		e := New(Config{Tools: h.reg, Model: m, Approver: approval.AllowAll{}, Rules: DefaultRules()})
		st, rec := runPlan(t, e, mkPlan(t, `[{"id":"t","tool":"run_command","args":{"command":"go test ./..."},"critical":false}]`), RunOptions{})
		wantStatus(t, st, map[string]StepStatus{"t": StepFailed, "t_fix_1": StepCompleted, "t_retest_1": StepCompleted})
		if st.FinalPlan.Step("t_fix_2") != nil || ft.runs.Load() != 2 {
			t.Errorf("a second round after the tests passed (%d test runs)", ft.runs.Load())
		}
		if len(m.calls) != 1 || !strings.Contains(m.calls[0].Prompt, "--- FAIL: TestX ($HOME)") ||
			!slices.Equal(toolNames(m.calls[0].Tools), DefaultFixTools) {
			t.Errorf("fix calls %+v", m.calls)
		}
		if ups := rec.of(EventPlanUpdated); len(ups) != 1 || !strings.HasPrefix(ups[0].Reason, "test-fix: go test ./... failed with exit code 1") {
			t.Errorf("updates %+v", ups)
		}
	})
}

func TestTestFixRuleRunGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ft, m := fixWorld(false)
		e := New(Config{Tools: h.reg, Model: m, Approver: approval.AllowAll{}, Rules: DefaultRules()})
		st, _ := runPlan(t, e, mkPlan(t, `[{"id":"t","tool":"run_command","args":{"command":"go test ./..."},"critical":false}]`), RunOptions{})
		wantStatus(t, st, map[string]StepStatus{"t": StepFailed, "t_fix_1": StepCompleted, "t_retest_1": StepFailed,
			"t_fix_2": StepCompleted, "t_retest_2": StepFailed})
		if st.FinalPlan.Step("t_fix_3") != nil || len(m.calls) != 2 || ft.runs.Load() != 3 {
			t.Errorf("rounds not bounded: %d model calls, %d test runs", len(m.calls), ft.runs.Load())
		}
	})
}

func TestTestFixRuleRunAllowedExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, m := fixWorld(true)
		e := New(Config{Tools: h.reg, Model: m, Approver: approval.AllowAll{}, Rules: DefaultRules()})
		st, _ := runPlan(t, e, mkPlan(t, `[{"id":"t","tool":"run_command","args":{"command":"go test ./...","allow":true}}]`), RunOptions{})
		if st.Status != RunCompleted {
			t.Fatalf("status %s: %s", st.Status, st.Error)
		}
		wantStatus(t, st, map[string]StepStatus{"t": StepCompleted, "t_fix_1": StepCompleted, "t_retest_1": StepCompleted})
		if len(m.calls) != 1 || !strings.Contains(m.calls[0].Prompt, "exited with code 1") {
			t.Errorf("fix calls %+v", m.calls)
		}
		if out := string(stepState(t, st, "t_retest_1").Output); !strings.Contains(out, "PASS") {
			t.Errorf("retest output %s", out)
		}
	})
}

func TestTestFixRuleRecoversCriticalStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ft, m := fixWorld(true)
		pl := &fakePlanner{recover: func(RecoveryRequest) (*RecoveryDecision, error) {
			return &RecoveryDecision{Action: RecoverFailGracefully, Reason: "planner gives up"}, nil
		}}
		e := New(Config{Tools: h.reg, Model: m, Planner: pl, Approver: approval.AllowAll{}, Rules: DefaultRules()})
		p := mkPlan(t, `[
			{"id":"t","tool":"run_command","args":{"command":"go test ./..."}},
			{"id":"after","tool":"op","args":{},"dependsOn":["t"]}
		]`)
		st, rec := runPlan(t, e, p, RunOptions{})
		if st.Status != RunCompleted {
			t.Fatalf("status %s %s", st.Status, st.Error)
		}
		wantStatus(t, st, map[string]StepStatus{"t_fix_1": StepCompleted, "t": StepCompleted, "after": StepCompleted})
		if ft.runs.Load() != 2 || len(m.calls) != 1 || len(pl.recovers) != 0 || st.FinalPlan.Step("t_retest_1") != nil {
			t.Errorf("test runs %d, model calls %d, planner asked %d times", ft.runs.Load(), len(m.calls), len(pl.recovers))
		}
		if ups := rec.of(EventPlanUpdated); len(ups) != 1 || !strings.HasPrefix(ups[0].Reason, "test-fix: ") {
			t.Errorf("updates %+v", ups)
		}
		if h := st.FinalPlan.History; h[len(h)-1].Source != "rule" || h[len(h)-1].Action != RecoverInsertSteps {
			t.Errorf("history %+v", h)
		}
	})
}

func TestTestFixRuleRecoveryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ft, m := fixWorld(false)
		pl := &fakePlanner{recover: func(RecoveryRequest) (*RecoveryDecision, error) {
			return &RecoveryDecision{Action: RecoverFailGracefully, Reason: "planner gives up"}, nil
		}}
		e := New(Config{Tools: h.reg, Model: m, Planner: pl, Approver: approval.AllowAll{}, Rules: []UpdateRule{TestFixRule{MaxFixes: 1}}})
		st, _ := runPlan(t, e, mkPlan(t, `[{"id":"t","tool":"run_command","args":{"command":"go test ./..."}}]`), RunOptions{})
		if st.Status == RunCompleted {
			t.Fatal("a test that never passes completed the run")
		}
		wantStatus(t, st, map[string]StepStatus{"t_fix_1": StepCompleted, "t": StepFailed})
		// One fix round, then the planner decides.
		if st.FinalPlan.Step("t_fix_2") != nil || ft.runs.Load() != 2 || len(m.calls) != 1 || len(pl.recovers) != 1 {
			t.Errorf("test runs %d, model calls %d, planner asked %d times", ft.runs.Load(), len(m.calls), len(pl.recovers))
		}
	})
}
