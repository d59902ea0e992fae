package rpc

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
)

// jsonFields are a struct's JSON field names with ",omitempty" where
// given, embedded structs' fields in place.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "" || tag == "-" {
			continue
		}
		out = append(out, strings.TrimSuffix(tag, ",string"))
	}
	return out
}

// TestCoreRecordsMatchTheSchema: the core's records that rpc still sends as
// they are (their JSON is also a file format: the journal's runs, plan
// files, the rule store) carry exactly the fields the schema gives them,
// so the schema stays their one wire definition.
func TestCoreRecordsMatchTheSchema(t *testing.T) {
	for _, c := range []struct{ core, schema any }{
		{engine.RunState{}, wire.RunState{}}, {engine.StepState{}, wire.StepState{}}, {engine.Event{}, wire.Event{}},
		{plans.Plan{}, wire.Plan{}}, {plans.Step{}, wire.Step{}}, {plans.Problem{}, wire.Problem{}},
		{ApprovalPolicy{}, wire.ApprovalPolicy{}}, {Rule{}, wire.Rule{}}, {PolicyState{}, wire.PolicyState{}},
		{session.Turn{}, wire.Turn{}}, {session.ChatSummary{}, wire.ChatSummary{}}, {ChatView{}, wire.Chat{}},
		{RunEventParams{}, wire.RunEventParams{}}, {session.Leftovers{}, wire.Leftovers{}},
		{session.ModelInfo{}, wire.ModelInfo{}}, {session.ModelChoice{}, wire.ModelSetParams{}}, {chatStream{}, wire.ChatStreamParams{}},
	} {
		got, want := jsonFields(reflect.TypeOf(c.core)), jsonFields(reflect.TypeOf(c.schema))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T sends %v\nbut the schema's %T has %v: change docs/protocol.schema.json and run go generate ./protocol", c.core, got, c.schema, want)
		}
	}
}
