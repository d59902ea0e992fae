package plans

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/tools"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

const (
	schemaPath   = "../../docs/plan.schema.json"
	plansDocPath = "../../docs/plans.md"
	examplesGlob = "../../examples/plans/*"
)

// planSchema compiles docs/plan.schema.json, asserting formats.
func planSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("plan.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("plan.schema.json")
	if err != nil {
		t.Fatalf("compile %s: %v", schemaPath, err)
	}
	return sch
}

// planDoc reads a plan file (JSON or YAML) as the value the schema sees.
func planDoc(t *testing.T, name string, data []byte) any {
	t.Helper()
	if ext := strings.ToLower(filepath.Ext(name)); ext == ".yaml" || ext == ".yml" {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data = j
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func planFiles(t *testing.T, pattern string) []string {
	t.Helper()
	var out []string
	for _, ext := range []string{".json", ".yaml", ".yml"} {
		m, err := filepath.Glob(pattern + ext)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

// builtinOrNil returns the built-in tools, or nil (no tool checks) while the
// tools package has none; TestDocsListEveryBuiltinTool fails in that case.
func builtinOrNil() *tools.Registry {
	reg := tools.Builtin()
	if len(reg.List()) == 0 {
		return nil
	}
	return reg
}

// TestSchemaAcceptsExamplesAndFixtures validates every example plan and
// every valid fixture against docs/plan.schema.json, and checks that agentd
// itself accepts them too.
func TestSchemaAcceptsExamplesAndFixtures(t *testing.T) {
	sch := planSchema(t)
	examples := planFiles(t, examplesGlob)
	if len(examples) == 0 {
		t.Fatalf("no example plans match %s.{json,yaml,yml}: the examples folder must hold plans", examplesGlob)
	}
	fixtures := planFiles(t, "testdata/plans/valid/*")
	if len(fixtures) == 0 {
		t.Fatal("no fixtures in testdata/plans/valid")
	}
	for _, f := range append(examples, fixtures...) {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(planDoc(t, f, data)); err != nil {
				t.Errorf("schema rejects %s:\n%v", f, err)
			}
			p, err := ParsePlan(f, data)
			if err != nil {
				t.Fatalf("ParsePlan: %v", err)
			}
			reg := planTestRegistry()
			if strings.HasPrefix(f, "../../examples") {
				reg = builtinOrNil()
			}
			if probs := ValidatePlan(p, reg, 0); len(probs) > 0 {
				t.Errorf("ValidatePlan:\n%s", dumpProblems(probs))
			}
		})
	}
}

// TestSchemaRejects: plans agentd refuses are refused by the schema too.
func TestSchemaRejects(t *testing.T) {
	sch := planSchema(t)
	inline := map[string]string{
		"unknown plan field.json":   `{"steps":[{"id":"a","tool":"t"}],"owner":"me"}`,
		"empty steps.json":          `{"steps":[]}`,
		"steps not array.json":      `{"steps":{"id":"a"}}`,
		"no id.json":                `{"steps":[{"tool":"t"}]}`,
		"tool without tool.json":    `{"steps":[{"id":"a","args":{}}]}`,
		"llm without prompt.json":   `{"steps":[{"id":"a","kind":"llm"}]}`,
		"agent without prompt.json": `{"steps":[{"id":"a","kind":"agent","tools":["x"]}]}`,
		"input without q.json":      `{"steps":[{"id":"a","kind":"input"}]}`,
		"validation no checks.json": `{"steps":[{"id":"a","kind":"validation","checks":[]}]}`,
		"decision no branches.json": `{"steps":[{"id":"a","kind":"decision"}]}`,
		"bad retry.json":            `{"steps":[{"id":"a","tool":"t","retry":{"max":-1}}]}`,
		"bad delay.json":            `{"steps":[{"id":"a","tool":"t","retry":{"delay":"1 second"}}]}`,
		"negative timeout.json":     `{"steps":[{"id":"a","tool":"t","timeout":"-5s"}]}`,
		"bad dependsOn id.json":     `{"steps":[{"id":"a","tool":"t","dependsOn":["b c"]}]}`,
		"args not object.json":      `{"steps":[{"id":"a","tool":"t","args":"x"}]}`,
		"bad createdAt.json":        `{"createdAt":"yesterday","steps":[{"id":"a","tool":"t"}]}`,
		"check without expr.json":   `{"steps":[{"id":"a","kind":"validation","checks":[{"message":"m"}]}]}`,
	}
	files := planFiles(t, "testdata/plans/invalid/*")
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata/plans/invalid")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inline[f] = string(data)
	}
	for name, src := range inline {
		t.Run(name, func(t *testing.T) {
			if err := sch.Validate(planDoc(t, name, []byte(src))); err == nil {
				t.Errorf("schema accepts %s", src)
			}
			// agentd refuses them as well (parse or validation).
			p, err := ParsePlan(name, []byte(src))
			if err == nil && len(ValidatePlan(p, nil, 0)) == 0 {
				t.Errorf("agentd accepts %s", src)
			}
		})
	}
	// Durations the schema must accept (Go's syntax).
	for _, d := range []string{"0", "1s", "1.5h", "1h30m", "500ms", "2us", "3µs", ".5s"} {
		src := `{"steps":[{"id":"a","tool":"t","timeout":"` + d + `"}]}`
		if err := sch.Validate(planDoc(t, "d.json", []byte(src))); err != nil {
			t.Errorf("schema rejects timeout %q: %v", d, err)
		}
	}
}

// jsonFields returns the JSON names of a struct's fields.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		tag := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
		if tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	sort.Strings(out)
	return out
}

func schemaProps(t *testing.T, obj map[string]any) []string {
	t.Helper()
	props, ok := obj["properties"].(map[string]any)
	if !ok {
		t.Fatal("no properties")
	}
	var out []string
	for k := range props {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func specNames(spec map[string]fieldSpec) []string {
	var out []string
	for k := range spec {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestSchemaMatchesTypes keeps the schema, the parser's field table and the
// Go types in step: a field added to one must be added to all.
func TestSchemaMatchesTypes(t *testing.T) {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	defs := root["$defs"].(map[string]any)
	tests := []struct {
		name   string
		schema map[string]any
		spec   map[string]fieldSpec
		typ    reflect.Type
		extra  []string // in schema and spec but not in the type
	}{
		{"plan", root, planSpec, reflect.TypeFor[Plan](), []string{"$schema"}},
		{"step", defs["step"].(map[string]any), stepSpec, reflect.TypeFor[Step](), nil},
		{"check", defs["check"].(map[string]any), checkSpec, reflect.TypeFor[Check](), nil},
		{"branch", defs["branch"].(map[string]any), branchSpec, reflect.TypeFor[Branch](), nil},
		{"retry", defs["retry"].(map[string]any), retrySpec, reflect.TypeFor[Retry](), nil},
		{"planUpdate", defs["planUpdate"].(map[string]any), historySpec, reflect.TypeFor[PlanUpdate](), nil},
	}
	for _, tt := range tests {
		typeFields := append(jsonFields(tt.typ), tt.extra...)
		sort.Strings(typeFields)
		if got := schemaProps(t, tt.schema); !slices.Equal(got, typeFields) {
			t.Errorf("%s: schema properties %v, Go fields %v", tt.name, got, typeFields)
		}
		if got := specNames(tt.spec); !slices.Equal(got, typeFields) {
			t.Errorf("%s: parser fields %v, Go fields %v", tt.name, got, typeFields)
		}
	}
}

// docTools reads the built-in tool table of docs/plans.md: tool name ->
// the table row.
func docTools(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(plansDocPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\|\\s*`([a-z_]+)`\\s*\\|")
	out := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Built-in tools")
			continue
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			out[m[1]] = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDocsListEveryBuiltinTool compares the tools documented in
// docs/plans.md with tools.Builtin(), and checks that every argument of
// every tool is named in its row.
func TestDocsListEveryBuiltinTool(t *testing.T) {
	documented := docTools(t)
	var docNames, builtinNames []string
	for n := range documented {
		docNames = append(docNames, n)
	}
	sort.Strings(docNames)
	list := tools.Builtin().List()
	for _, tool := range list {
		builtinNames = append(builtinNames, tool.Name())
	}
	if !slices.Equal(docNames, builtinNames) {
		t.Fatalf("docs/plans.md documents tools %v, tools.Builtin() has %v", docNames, builtinNames)
	}
	for _, tool := range list {
		var sch struct {
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(tool.Schema(), &sch); err != nil {
			t.Errorf("%s: schema: %v", tool.Name(), err)
			continue
		}
		for arg := range sch.Properties {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(arg) + `\b`).MatchString(documented[tool.Name()]) {
				t.Errorf("docs/plans.md: the row of %s does not name its argument %q", tool.Name(), arg)
			}
		}
	}
}
