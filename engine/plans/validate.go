package plans

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// validator collects every problem of one plan.
type validator struct {
	p     *Plan
	reg   *tools.Registry
	probs []Problem
	// index maps each id to the position of its first step.
	index map[string]int
	// ancestors holds each step's transitive dependencies as a bit set of
	// step positions; computed on first use.
	ancestors [][]uint64
	// schemas caches each tool's compiled args schema for this validation.
	schemas    map[string]*jsonschema.Schema
	schemaErrs map[string]error
	// decoded caches each step's decoded args.
	decoded map[*Step]any
}

func (v *validator) add(step, field, format string, a ...any) {
	v.probs = append(v.probs, Problem{File: v.p.Source, StepID: step, Field: field, Message: fmt.Sprintf(format, a...)})
}

func validatePlan(p *Plan, reg *tools.Registry, maxSteps int) []Problem {
	if p == nil {
		return []Problem{{Message: "no plan"}}
	}
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	v := &validator{p: p, reg: reg, index: map[string]int{},
		schemas: map[string]*jsonschema.Schema{}, schemaErrs: map[string]error{}, decoded: map[*Step]any{}}
	if len(p.Steps) == 0 {
		v.add("", "steps", "the plan has no steps: add at least one")
	}
	if len(p.Steps) > maxSteps {
		v.add("", "steps", "the plan has %d steps, more than the %d allowed (maxStepsPerPlan): split it into smaller plans", len(p.Steps), maxSteps)
	}
	if p.Version < 0 {
		v.add("", "version", "version must not be negative (got %d)", p.Version)
	}
	v.checkIDs()
	for _, s := range p.Steps {
		if s != nil {
			v.checkStep(s)
		}
	}
	v.checkCycles()
	return v.probs
}

func (v *validator) checkIDs() {
	for i, s := range v.p.Steps {
		if s == nil {
			v.add("", "steps["+strconv.Itoa(i)+"]", "step %d is null: remove it or write a step object", i+1)
			continue
		}
		switch {
		case s.ID == "":
			v.add("", "steps["+strconv.Itoa(i)+"].id", "step %d has no id: give it a unique id such as %q", i+1, "step"+strconv.Itoa(i+1))
		case !idPattern.MatchString(s.ID):
			v.add(s.ID, "id", "id %q is malformed: use only letters, digits, '_', '.' and '-'", s.ID)
		}
		if s.ID == "" {
			continue
		}
		if first, dup := v.index[s.ID]; dup {
			v.add(s.ID, "id", "duplicate id %q: steps %d and %d both use it; ids must be unique", s.ID, first+1, i+1)
			continue
		}
		v.index[s.ID] = i
	}
}

func (v *validator) has(id string) bool {
	_, ok := v.index[id]
	return ok
}

func (v *validator) ids() []string {
	out := make([]string, 0, len(v.index))
	for id := range v.index {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

var validKinds = []StepKind{KindTool, KindLLM, KindAgent, KindValidation, KindInput, KindDecision}

func (v *validator) checkStep(s *Step) {
	id := s.ID
	kind := s.EffectiveKind()
	kindOK := false
	for _, k := range validKinds {
		kindOK = kindOK || k == kind
	}
	if !kindOK {
		v.add(id, "kind", "unknown kind %q: use one of tool, llm, agent, validation, input, decision", s.Kind)
	}
	switch s.Risk {
	case "", "low", "medium", "high":
	default:
		v.add(id, "risk", "unknown risk %q: use low, medium or high", s.Risk)
	}
	switch s.Approval {
	case "", "ask", "auto":
	default:
		v.add(id, "approval", "unknown approval %q: use ask, auto, or leave it out to follow the policy", s.Approval)
	}
	if s.Timeout != "" {
		if d, err := time.ParseDuration(s.Timeout); err != nil {
			v.add(id, "timeout", "timeout %q is not a duration: write e.g. \"30s\", \"5m\" or \"1h30m\"", s.Timeout)
		} else if d <= 0 {
			v.add(id, "timeout", "timeout %q must be positive", s.Timeout)
		}
	}
	if r := s.Retry; r != nil {
		if r.Max < 0 {
			v.add(id, "retry.max", "retry.max must not be negative (got %d): 0 means no retries", r.Max)
		}
		for _, f := range []struct{ name, val string }{{"delay", r.Delay}, {"maxDelay", r.MaxDelay}} {
			if f.val == "" {
				continue
			}
			if d, err := time.ParseDuration(f.val); err != nil {
				v.add(id, "retry."+f.name, "retry.%s %q is not a duration: write e.g. \"1s\" or \"500ms\"", f.name, f.val)
			} else if d < 0 {
				v.add(id, "retry."+f.name, "retry.%s %q must not be negative", f.name, f.val)
			}
		}
	}
	if s.MaxIterations < 0 {
		v.add(id, "maxIterations", "maxIterations must not be negative (got %d); 0 means the default %d", s.MaxIterations, DefaultMaxIterations)
	}
	v.checkDependsOn(s)
	if kindOK {
		v.checkKindFields(s, kind)
	}
	if s.When != "" {
		if _, err := parseCond(s.When); err != nil {
			v.add(id, "when", "%v", err)
		}
	}
	v.checkTemplates(s)
	v.checkRefs(s)
	if kindOK && kind == KindTool {
		v.checkPaths(s)
	}
}

func (v *validator) checkDependsOn(s *Step) {
	seen := map[string]bool{}
	for i, d := range s.DependsOn {
		field := "dependsOn[" + strconv.Itoa(i) + "]"
		switch {
		case d == "":
			v.add(s.ID, field, "empty dependency: remove it or name a step")
		case d == s.ID:
			v.add(s.ID, field, "step %q depends on itself: remove it from dependsOn", d)
		case seen[d]:
			v.add(s.ID, field, "%q is listed twice in dependsOn", d)
		case !v.has(d):
			v.add(s.ID, field, "depends on unknown step %q%s", d, v.didYouMeanStep(d))
		}
		seen[d] = true
	}
}

func (v *validator) didYouMeanStep(id string) string {
	if c := closestName(id, v.ids()); c != "" {
		return fmt.Sprintf(": did you mean %q?", c)
	}
	return ": no step has that id"
}

// checkKindFields checks the fields each kind requires, and flags fields
// that belong to another kind (they would be ignored).
func (v *validator) checkKindFields(s *Step, kind StepKind) {
	id := s.ID
	misplaced := func(field string, set bool, kinds string) {
		if set {
			v.add(id, field, "%s is not used by %s steps (only by %s): remove it or change kind", field, kind, kinds)
		}
	}
	if kind != KindTool {
		misplaced("tool", s.Tool != "", "tool")
		misplaced("args", len(s.Args) > 0 && string(s.Args) != "null", "tool")
	}
	if kind != KindLLM && kind != KindAgent {
		misplaced("prompt", s.Prompt != "", "llm and agent")
		misplaced("model", s.Model != "", "llm and agent")
	}
	if kind != KindAgent {
		misplaced("tools", len(s.Tools) > 0, "agent")
		misplaced("maxIterations", s.MaxIterations != 0, "agent")
	}
	if kind != KindValidation {
		misplaced("checks", len(s.Checks) > 0, "validation")
	}
	if kind != KindInput {
		misplaced("question", s.Question != "", "input")
		misplaced("options", len(s.Options) > 0, "input")
	}
	if kind != KindDecision {
		misplaced("branches", len(s.Branches) > 0, "decision")
	}
	switch kind {
	case KindTool:
		if s.Tool == "" {
			v.add(id, "tool", "tool step has no tool: name one of the built-in tools, or set kind")
			return
		}
		v.checkToolArgs(s)
	case KindLLM, KindAgent:
		if strings.TrimSpace(s.Prompt) == "" {
			v.add(id, "prompt", "%s step needs a prompt", kind)
		}
		if kind == KindAgent && v.reg != nil {
			for i, t := range s.Tools {
				if _, ok := v.reg.Get(t); !ok {
					v.add(id, "tools["+strconv.Itoa(i)+"]", "unknown tool %q%s", t, v.didYouMeanTool(t))
				}
			}
		}
	case KindValidation:
		if len(s.Checks) == 0 {
			v.add(id, "checks", "validation step needs at least one check {\"expr\": ...}")
		}
		for i, c := range s.Checks {
			field := "checks[" + strconv.Itoa(i) + "].expr"
			if strings.TrimSpace(c.Expr) == "" {
				v.add(id, field, "check %d has no expr", i+1)
				continue
			}
			if _, err := parseCond(c.Expr); err != nil {
				v.add(id, field, "%v", err)
			}
		}
	case KindInput:
		if strings.TrimSpace(s.Question) == "" {
			v.add(id, "question", "input step needs a question")
		}
	case KindDecision:
		v.checkBranches(s)
	}
}

func (v *validator) checkBranches(s *Step) {
	id := s.ID
	if len(s.Branches) == 0 {
		v.add(id, "branches", "decision step needs branches [{\"when\": ..., \"steps\": [...]}]")
		return
	}
	for i, b := range s.Branches {
		bf := "branches[" + strconv.Itoa(i) + "]"
		if b.When == "" {
			if i != len(s.Branches)-1 {
				v.add(id, bf+".when", "branch %d has no condition (otherwise) but is not the last: the branches after it can never be taken", i+1)
			}
		} else if _, err := parseCond(b.When); err != nil {
			v.add(id, bf+".when", "%v", err)
		}
		for j, target := range b.Steps {
			f := bf + ".steps[" + strconv.Itoa(j) + "]"
			switch {
			case target == id:
				v.add(id, f, "a decision cannot branch to itself")
			case !v.has(target):
				v.add(id, f, "branch names unknown step %q%s", target, v.didYouMeanStep(target))
			case !v.dependsOn(target, id):
				v.add(id, f, "branch step %q must depend on decision %q: add %q to its dependsOn", target, id, id)
			}
		}
	}
}

func (v *validator) didYouMeanTool(name string) string {
	var names []string
	for _, t := range v.reg.List() {
		names = append(names, t.Name())
	}
	if c := closestName(name, names); c != "" {
		return fmt.Sprintf(": did you mean %q?", c)
	}
	if len(names) == 0 {
		return ": no tools are registered"
	}
	return ": known tools are " + strings.Join(names, ", ")
}

// checkTemplates reports malformed references in strings that are
// interpolated (conditions report their own).
func (v *validator) checkTemplates(s *Step) {
	check := func(field, str string) {
		if !strings.Contains(str, "$") {
			return
		}
		if _, err := parseTemplate(str); err != nil {
			v.add(s.ID, field, "%v", err)
		}
	}
	var walk func(x any, field string)
	walk = func(x any, field string) {
		switch t := x.(type) {
		case string:
			check(field, t)
		case map[string]any:
			for _, k := range sortedKeys(t) {
				walk(t[k], field+fieldSep(k))
			}
		case []any:
			for i, e := range t {
				walk(e, field+"["+strconv.Itoa(i)+"]")
			}
		}
	}
	walk(v.argsWithRefs(s), "args")
	check("prompt", s.Prompt)
	check("question", s.Question)
	for i, o := range s.Options {
		check("options["+strconv.Itoa(i)+"]", o)
	}
	for i, c := range s.Checks {
		check("checks["+strconv.Itoa(i)+"].message", c.Message)
	}
}

func (v *validator) checkRefs(s *Step) {
	seen := map[string]bool{}
	for _, fr := range s.fieldRefsWith(v.argsWithRefs(s)) {
		id, _, err := fr.ref.split(v.has)
		key := fr.field + "\x00" + fr.ref.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		switch {
		case err != nil:
			v.add(s.ID, fr.field, "%v", err)
		case id == s.ID:
			v.add(s.ID, fr.field, "reference %s refers to the step's own output", fr.ref)
		case !v.has(id):
			hint := v.didYouMeanStep(id)
			if fr.ref.bare && strings.Contains(id, ".") {
				hint = fmt.Sprintf(": to take a field write ${%s}", id)
			}
			v.add(s.ID, fr.field, "reference %s names unknown step %q%s (write $$ for a literal dollar)", fr.ref, id, hint)
		case !v.dependsOn(s.ID, id):
			v.add(s.ID, fr.field, "reference %s: step %q is not among this step's dependencies: add %q to dependsOn", fr.ref, id, id)
		}
	}
}

// args returns the step's args decoded (numbers as json.Number), decoding
// them once per validation; nil if absent or not JSON.
func (v *validator) args(s *Step) any {
	if a, ok := v.decoded[s]; ok {
		return a
	}
	var a any
	if len(bytes.TrimSpace(s.Args)) > 0 {
		a, _ = decodeJSON(s.Args)
	}
	v.decoded[s] = a
	return a
}

// argsWithRefs is args if they contain a "$", else nil.
func (v *validator) argsWithRefs(s *Step) any {
	if !bytes.Contains(s.Args, []byte("$")) {
		return nil
	}
	return v.args(s)
}

// dependsOn reports whether step id depends on step dep, directly or
// through other steps.
func (v *validator) dependsOn(id, dep string) bool {
	i, ok := v.index[id]
	j, ok2 := v.index[dep]
	if !ok || !ok2 {
		return false
	}
	if v.ancestors == nil {
		v.computeAncestors()
	}
	return v.ancestors[i][j/64]&(1<<(j%64)) != 0
}

// computeAncestors fills one bit set of transitive dependencies per step:
// in topological order a step's set is the union of its dependencies' sets
// and the dependencies themselves; steps on or after a cycle are walked.
func (v *validator) computeAncestors() {
	n := len(v.p.Steps)
	words := (n + 63) / 64
	deps := make([][]int, n)
	dependents := make([][]int, n)
	waiting := make([]int, n)
	for i, s := range v.p.Steps {
		if s == nil || v.index[s.ID] != i {
			continue
		}
		for _, d := range s.DependsOn {
			if j, ok := v.index[d]; ok && j != i && !slices.Contains(deps[i], j) {
				deps[i] = append(deps[i], j)
				dependents[j] = append(dependents[j], i)
			}
		}
		waiting[i] = len(deps[i])
	}
	v.ancestors = make([][]uint64, n)
	done := make([]bool, n)
	var queue []int
	for i := range n {
		if waiting[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		bits := make([]uint64, words)
		for _, d := range deps[i] {
			for w, x := range v.ancestors[d] {
				bits[w] |= x
			}
			bits[d/64] |= 1 << (d % 64)
		}
		v.ancestors[i], done[i] = bits, true
		for _, c := range dependents[i] {
			if waiting[c]--; waiting[c] == 0 {
				queue = append(queue, c)
			}
		}
	}
	for i := range n {
		if done[i] {
			continue
		}
		bits := make([]uint64, words)
		stack := slices.Clone(deps[i])
		for len(stack) > 0 {
			d := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if bits[d/64]&(1<<(d%64)) != 0 {
				continue
			}
			bits[d/64] |= 1 << (d % 64)
			stack = append(stack, deps[d]...)
		}
		v.ancestors[i] = bits
	}
}

// checkCycles reports each cycle of dependsOn once, naming its steps in
// order (Tarjan's strongly connected components, then a walk around each).
func (v *validator) checkCycles() {
	n := len(v.p.Steps)
	edges := make([][]int, n)
	for i, s := range v.p.Steps {
		if s == nil || v.index[s.ID] != i {
			continue
		}
		for _, d := range s.DependsOn {
			if j, ok := v.index[d]; ok && d != s.ID {
				edges[i] = append(edges[i], j)
			}
		}
	}
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	counter := 0
	var sccs [][]int
	// Iterative Tarjan, so a long chain cannot overflow the stack.
	type frame struct{ node, edge int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = counter, counter
		counter++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.edge < len(edges[f.node]) {
				w := edges[f.node][f.edge]
				f.edge++
				if index[w] < 0 {
					index[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] && index[w] < low[f.node] {
					low[f.node] = index[w]
				}
				continue
			}
			node := f.node
			call = call[:len(call)-1]
			if len(call) > 0 {
				parent := call[len(call)-1].node
				if low[node] < low[parent] {
					low[parent] = low[node]
				}
			}
			if low[node] == index[node] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == node {
						break
					}
				}
				if len(comp) > 1 {
					sccs = append(sccs, comp)
				}
			}
		}
	}
	sort.Slice(sccs, func(a, b int) bool { return cycleMinIndex(sccs[a]) < cycleMinIndex(sccs[b]) })
	for _, comp := range sccs {
		in := map[int]bool{}
		for _, c := range comp {
			in[c] = true
		}
		// Walk from the first step (in file order) of the component along
		// dependencies inside it until a step repeats: that closes a cycle.
		start := cycleMinIndex(comp)
		pos := map[int]int{}
		var path []int
		cur := start
		for {
			if p, ok := pos[cur]; ok {
				path = path[p:]
				break
			}
			pos[cur] = len(path)
			path = append(path, cur)
			next := -1
			for _, w := range edges[cur] {
				if in[w] {
					next = w
					break
				}
			}
			cur = next
		}
		names := make([]string, 0, len(path)+1)
		for _, i := range path {
			names = append(names, v.p.Steps[i].ID)
		}
		names = append(names, names[0])
		v.add(names[0], "dependsOn", "dependency cycle: %s (each step depends on the next): remove one of these dependencies", strings.Join(names, " -> "))
	}
}

func cycleMinIndex(xs []int) int {
	m := xs[0]
	for _, x := range xs[1:] {
		if x < m {
			m = x
		}
	}
	return m
}

// closest returns the candidate nearest to s (edit distance, a swap of two
// neighbours counting as one edit), or "" if none is near enough to be a
// likely typo.
func closestName(s string, candidates []string) string {
	best, bestD := "", -1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		if c == s {
			continue
		}
		d := editDistance(ls, strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, len(s)/3)
	if bestD < 0 || bestD > limit || bestD >= len(s) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// pathArgs are the args of a tool step that name workspace files or
// folders (top level; json_patch's ops[i].path are JSON Pointers).
var pathArgs = []string{"path", "from", "to", "cwd"}

// checkPaths refuses a path arg that leaves the workspace whatever its root
// ("../x", "a/../../x"): the run refuses it at the step; validation says so
// before. Absolute paths are judged against a workspace (CheckWorkspace).
func (v *validator) checkPaths(s *Step) {
	for _, pa := range stepPaths(s) {
		if hasRef(pa.value) || filepath.IsAbs(pa.value) || strings.HasPrefix(strings.ToLower(pa.value), "file:") {
			continue
		}
		if escapesLexically(pa.value) {
			v.add(s.ID, pa.field, "%q leaves the workspace: give a path inside it, relative to its root", pa.value)
		}
	}
}

type pathArg struct{ field, value string }

// escapesLexically reports whether a relative path leaves any root by its
// text alone ("../x", "a/../../x").
func escapesLexically(p string) bool {
	if filepath.IsAbs(p) || strings.HasPrefix(strings.ToLower(p), "file:") {
		return false
	}
	c := filepath.Clean(filepath.FromSlash(p))
	return c != "." && !filepath.IsLocal(c)
}

// stepPaths lists a tool step's path args with their fields.
func stepPaths(s *Step) []pathArg {
	var a map[string]any
	if json.Unmarshal(s.Args, &a) != nil {
		return nil
	}
	var out []pathArg
	for _, k := range pathArgs {
		if p, ok := a[k].(string); ok && p != "" {
			out = append(out, pathArg{"args." + k, p})
		}
	}
	if ps, ok := a["paths"].([]any); ok {
		for i, x := range ps {
			if p, ok := x.(string); ok && p != "" {
				out = append(out, pathArg{fmt.Sprintf("args.paths[%d]", i), p})
			}
		}
	}
	return out
}

// argNameHint is ": did you mean \"x\"?" for an unknown args field name
// when the tool's schema at that place has a close property name.
func (v *validator) argNameHint(tool, schemaURL, name string) string {
	t, ok := v.reg.Get(tool)
	if !ok {
		return ""
	}
	var node any
	if json.Unmarshal(t.Schema(), &node) != nil {
		return ""
	}
	_, frag, _ := strings.Cut(schemaURL, "#")
	frag = strings.TrimSuffix(frag, "/additionalProperties")
	for _, tok := range strings.Split(strings.Trim(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return ""
			}
			node = n[i]
		default:
			return ""
		}
	}
	obj, _ := node.(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	if c := closestName(name, names); c != "" {
		return fmt.Sprintf(": did you mean %q?", c)
	}
	// A name that holds one of the properties' names ("lines" in
	// "startLine", "endLine"), or is held by one, is a near miss too.
	var near []string
	ln := strings.ToLower(strings.TrimSuffix(name, "s"))
	for _, k := range names {
		lk := strings.ToLower(k)
		if len(ln) >= 3 && (strings.Contains(lk, ln) || strings.Contains(ln, lk)) {
			near = append(near, strconv.Quote(k))
		}
	}
	if len(near) > 0 {
		return ": did you mean " + strings.Join(near, " or ") + "?"
	}
	if len(names) > 0 {
		return "; its fields are " + strings.Join(names, ", ")
	}
	return ""
}

// CheckPlanFile parses and validates a plan file's data against the tools
// in reg and returns the plan (nil when it cannot be read as one; with
// unknown fields, the plan read without them) and
// every problem at once: an unknown or misspelt field no longer hides the
// steps' problems, which are checked on the plan read without it.
func CheckPlanFile(name string, data []byte, reg *tools.Registry, maxSteps int) (*Plan, []Problem) {
	p, err := parsePlan(name, data)
	if err == nil {
		return p, validatePlan(p, reg, maxSteps)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return nil, []Problem{{File: name, Message: err.Error()}}
	}
	probs := ve.Problems
	var pe *ParseError
	if errors.As(err, &pe) {
		return nil, probs // not JSON or YAML at all: nothing more to check
	}
	// Only unknown fields (and types the plan still reads with): read
	// the plan leaving them out, and add its own problems.
	jsonData := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if isYAML(name, jsonData) {
		if jsonData, err = yaml.YAMLToJSON(jsonData); err != nil {
			return nil, probs
		}
	}
	var lp Plan
	if json.Unmarshal(jsonData, &lp) != nil {
		return nil, probs
	}
	lp.Source = name
	if lp.Version == 0 {
		lp.Version = 1
	}
	seen := map[string]bool{}
	for _, pr := range probs {
		seen[pr.StepID+"\x00"+pr.Field] = true
	}
	for _, pr := range validatePlan(&lp, reg, maxSteps) {
		if !seen[pr.StepID+"\x00"+pr.Field] {
			probs = append(probs, pr)
		}
	}
	return &lp, probs // read without the unknown fields: checkable further, never runnable
}

// CheckWorkspace returns what the run would find wrong in ws that the plan
// alone does not show: paths that resolve outside the workspace (absolute
// ones elsewhere, links leading out), and edit_file texts not found in the
// files as they are now (EditWarnings, with the run's own matcher and the
// closest line). All are problems: with the workspace at hand, an oldText
// that is not in the file is a step that would fail, and the run would
// spend model calls recovering from it, so 'agentd validate' exits 2 and
// 'agentd run' refuses before starting. (The planner keeps EditWarnings
// as warnings: it sends them back to the model for a repair round.)
func CheckWorkspace(ctx context.Context, p *Plan, ws *workspace.Workspace) []Problem {
	if p == nil || ws == nil {
		return nil
	}
	var out []Problem
	for _, s := range p.Steps {
		if s == nil || s.EffectiveKind() != KindTool {
			continue
		}
		for _, pa := range stepPaths(s) {
			if hasRef(pa.value) || escapesLexically(pa.value) {
				continue // checkPaths reports it without a workspace
			}
			if _, _, err := ws.Resolve(pa.value); errors.Is(err, workspace.ErrOutsideRoot) {
				out = append(out, Problem{File: p.Source, StepID: s.ID, Field: pa.field,
					Message: fmt.Sprintf("%q is outside the workspace %s: give a path inside it, relative to its root", pa.value, ws.Root())})
			}
		}
	}
	for _, w := range EditWarnings(ctx, p, ws) {
		w.Message = strings.TrimPrefix(w.Message, "warning: ")
		out = append(out, w)
	}
	return out
}

// IsWarning reports whether a problem is only a warning (the plan runs).
func IsWarning(pr Problem) bool { return strings.HasPrefix(pr.Message, "warning: ") }
