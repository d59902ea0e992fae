package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
)

// sensitiveDenier records requests and denies those for sensitive reads.
type sensitiveDenier struct {
	mu   sync.Mutex
	reqs []approval.ApprovalRequest
}

func (d *sensitiveDenier) Approve(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reqs = append(d.reqs, req)
	return approval.ApprovalDecision{Allow: !req.Sensitive, Reason: "not my keys"}, nil
}

// Sensitive files ask before a step reads them (issue 24, point 7): a
// plan's own read_file and a model's, with category read, sensitive true
// and the path in the title; files off the list, and those a plan marks
// approval "auto", do not ask.
func TestSensitiveReadsAsk(t *testing.T) {
	ws := openWSWith(t, map[string]string{".env": "SECRET=hunter2\n", "certs/server.pem": "KEY\n", "notes.txt": "hi\n",
		"conf/prod.secret": "x\n", ".agentd/config.json": `{"sensitive": ["conf/*.secret"]}`})
	reg := tools.Builtin()
	ap := &sensitiveDenier{}
	var got []*ToolCallResult
	m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
		for _, p := range []string{"certs/server.pem", "notes.txt"} {
			r, err := call.Exec(ctx, "read_file", json.RawMessage(`{"path":"`+p+`"}`))
			if err != nil {
				return nil, err
			}
			got = append(got, r)
		}
		return &ModelResult{Text: "done", Calls: 1}, nil
	}}
	e := New(Config{Tools: reg, WS: ws, Approver: ap, Model: m})
	p := mkPlan(t, `[
		{"id":"env","tool":"read_file","args":{"path":".env"}},
		{"id":"conf","tool":"read_file","args":{"path":"conf/prod.secret"}},
		{"id":"auto","tool":"read_file","args":{"path":".env"},"approval":"auto"},
		{"id":"plain","tool":"read_file","args":{"path":"notes.txt"}},
		{"id":"ag","kind":"agent","prompt":"read","tools":["read_file"]}
	]`)
	st, _ := runPlan(t, e, p, RunOptions{})
	var titles []string
	for _, r := range ap.reqs {
		if r.Sensitive {
			if r.Category != tools.CategoryRead {
				t.Errorf("sensitive request %q has category %s, want read", r.Title, r.Category)
			}
			titles = append(titles, r.Title)
		}
	}
	want := []string{".env", "conf/prod.secret", "certs/server.pem"}
	if len(titles) != len(want) {
		t.Fatalf("sensitive approval requests %q, want one each for %v", titles, want)
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(titles, "\n"), "Read "+w+",") {
			t.Errorf("no request names %s in its title: %q", w, titles)
		}
	}
	for id, want := range map[string]StepStatus{"env": StepSkipped, "conf": StepSkipped, "auto": StepCompleted, "plain": StepCompleted} {
		if s := stepState(t, st, id); s.Status != want {
			t.Errorf("%s: %s, want %s", id, s.Status, want)
		}
	}
	if s := stepState(t, st, "env"); strings.Contains(string(s.Output), "hunter2") {
		t.Errorf("the denied read's output holds the secret: %s", s.Output)
	}
	if len(got) != 2 || !strings.Contains(got[0].Error, "not done") || got[1].Error != "" {
		t.Errorf("the model's reads: %+v", got)
	}
	if st.Status != RunPartial {
		t.Errorf("run %s, want partial (reads denied)", st.Status)
	}
}

// A remembered "always allow" rule for read_file does not answer a
// sensitive read: the user is asked for each secret.
func TestSensitiveReadIgnoresRules(t *testing.T) {
	ws := openWSWith(t, map[string]string{".env": "SECRET=1\n"})
	j, err := OpenJournal(t.TempDir(), ws.Root(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Rules().Remember(approval.ApprovalRequest{Category: tools.CategoryRead, Tool: "read_file"}, true, ""); err != nil {
		t.Fatal(err)
	}
	ap := &sensitiveDenier{}
	e := New(Config{Tools: tools.Builtin(), WS: ws, Approver: ap, Journal: j})
	st, _ := runPlan(t, e, mkPlan(t, `[{"id":"env","tool":"read_file","args":{"path":".env"}}]`), RunOptions{})
	if len(ap.reqs) != 1 || !ap.reqs[0].Sensitive || stepState(t, st, "env").Status != StepSkipped {
		t.Errorf("asked %+v, step %s: want the sensitive read asked (and denied) despite the rule", ap.reqs, stepState(t, st, "env").Status)
	}
}
