package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
)

// blockingPlanMaker blocks until cancelled; with budget set it reports the
// budget exceeded at once.
type blockingPlanMaker struct{ budget bool }

func (b blockingPlanMaker) MakePlan(ctx context.Context, req PlanRequest) (*plans.Plan, error) {
	if b.budget {
		return nil, fmt.Errorf("planning %q: %w: 1000 of 1000 tokens used", req.Request, engine.ErrBudgetExceeded)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestEveryDocumentedErrorCode provokes every code of docs/protocol.md's
// error table through the server (rows marked reserved are not answered by
// any method) and fails for a documented code it has no provocation for.
func TestEveryDocumentedErrorCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\| (-32\d{3}) \| (.*)$`).FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 10 {
		t.Fatalf("found %d rows in the error table", len(rows))
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	validPlan := map[string]any{"title": "t", "steps": []any{map[string]any{"id": "r", "tool": "read_file", "args": map[string]any{"path": "a.txt"}}}}

	// callCode calls on a fresh initialized editor session over root.
	ed := startEditor(t, Options{PlanMaker: blockingPlanMaker{budget: true}}, nil)
	ed.initialize(root, nil)
	code := func(method string, params any) int64 {
		t.Helper()
		err := ed.call(method, params, nil)
		var we *jsonrpc2.Error
		if !errors.As(err, &we) {
			t.Fatalf("%s answered %v, want an error", method, err)
		}
		return int64(we.Code)
	}
	raw := func(frames ...[]byte) int64 {
		t.Helper()
		rc := startRaw(t, Options{}, nil)
		for _, f := range frames {
			rc.writeRaw(f)
		}
		r := rc.response()
		return int64(errCode(r.Err()))
	}
	provoke := map[int64]func() int64{
		-32700: func() int64 { return raw(frame(`{"jsonrpc":"2.0","id":1,"method":}`)) },
		-32600: func() int64 {
			return raw(frame(`[{"jsonrpc":"2.0","id":1,"method":"agentd/plan/list"}]`))
		},
		-32601: func() int64 { return code("agentd/nope", map[string]any{}) },
		-32602: func() int64 { return code("agentd/run/get", map[string]any{"runId": 42}) },
		-32603: func() int64 {
			// A server without a workspace has no snapshot store.
			bare := startEditor(t, Options{}, nil)
			bare.initialize("", nil)
			var we *jsonrpc2.Error
			errors.As(bare.call("agentd/snapshot/list", map[string]any{}, nil), &we)
			if we == nil {
				return 0
			}
			return int64(we.Code)
		},
		-32800: func() int64 {
			rc := startRaw(t, Options{PlanMaker: blockingPlanMaker{}}, nil)
			initRaw(t, rc)
			rc.call(2, "agentd/plan/create", map[string]any{"request": "wait"})
			rc.writeRaw(frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}`))
			return int64(errCode(rc.response().Err()))
		},
		-32001: func() int64 {
			return code("agentd/plan/load", map[string]any{"plan": map[string]any{"steps": []any{map[string]any{"id": "x", "tool": "nope"}}}})
		},
		-32002: func() int64 {
			var pl plans.Plan
			ed.mustCall("agentd/plan/load", map[string]any{"plan": validPlan}, &pl)
			return code("agentd/plan/edit", map[string]any{"planId": pl.ID, "version": pl.Version + 5,
				"edits": []any{map[string]any{"op": "skip", "stepId": "r"}}})
		},
		-32003: func() int64 {
			if c := code("agentd/snapshot/restore", map[string]any{"id": strings.Repeat("ab", 20)}); c != -32003 {
				t.Errorf("restore of an unknown snapshot: %d, want -32003", c)
			}
			if c := code("agentd/snapshot/diff", map[string]any{"from": strings.Repeat("cd", 20)}); c != -32003 {
				t.Errorf("diff of an unknown snapshot: %d, want -32003", c)
			}
			return code("agentd/run/get", map[string]any{"runId": "nope"})
		},
		-32004: func() int64 {
			return code("agentd/snapshot/restore", map[string]any{"id": "x", "uris": []string{"file:///etc/passwd"}})
		},
		-32005: func() int64 { return provokeChangedElsewhere(t) }, // changes_sync_test.go
		-32006: func() int64 {
			bare := startEditor(t, Options{}, nil)
			bare.initialize("", nil)
			var we *jsonrpc2.Error
			errors.As(bare.call("agentd/plan/create", map[string]any{"request": "x"}, nil), &we)
			if we == nil {
				return 0
			}
			return int64(we.Code)
		},
		-32007: func() int64 { return code("agentd/plan/create", map[string]any{"request": "too big"}) },
		-32008: func() int64 {
			rc := startRaw(t, Options{}, nil)
			rc.call(1, "agentd/plan/list", map[string]any{})
			return int64(errCode(rc.response().Err()))
		},
		-32009: func() int64 {
			// Only the user's own snapshot exists: nothing tells their
			// edits from the agent's.
			var sn struct {
				ID string `json:"id"`
			}
			ed.mustCall("agentd/snapshot/create", map[string]any{"label": "mine"}, &sn)
			return code("agentd/snapshot/restore", map[string]any{"id": sn.ID})
		},
		-32010: func() int64 {
			// A run waits for an approval nobody gives: a second start of
			// the workspace is refused, naming it; concurrent: true starts.
			act := startEditor(t, Options{}, nil)
			act.setAuto("window/workDoneProgress/create", func(json.RawMessage) (any, error) { return nil, nil })
			act.initialize(root, nil)
			var pl plans.Plan
			act.mustCall("agentd/plan/load", map[string]any{"plan": map[string]any{"title": "t", "steps": []any{
				map[string]any{"id": "c", "tool": "run_command", "args": map[string]any{"command": "true"}}}}}, &pl)
			var first struct {
				RunID string `json:"runId"`
			}
			act.mustCall("agentd/run/start", map[string]any{"planId": pl.ID}, &first)
			act.nextRequest("window/showMessageRequest") // the approval, never answered
			var we *jsonrpc2.Error
			errors.As(act.call("agentd/run/start", map[string]any{"planId": pl.ID}, nil), &we)
			if we == nil {
				return 0
			}
			if !strings.Contains(string(we.Data), first.RunID) || !strings.Contains(we.Message, "resume it or cancel it") {
				t.Errorf("-32010 %q data %s: want the active run %s named and the way out", we.Message, we.Data, first.RunID)
			}
			if err := act.call("agentd/run/start", map[string]any{"planId": pl.ID, "options": map[string]any{"concurrent": true}}, nil); err != nil {
				t.Errorf("a concurrent start was refused: %v", err)
			}
			return int64(we.Code)
		},
	}
	for _, row := range rows {
		c, _ := strconv.ParseInt(row[1], 10, 64)
		t.Run(row[1], func(t *testing.T) {
			f, ok := provoke[c]
			if strings.Contains(row[2], "reserved") {
				if ok {
					t.Errorf("%d is documented as reserved but the server answers with it", c)
				}
				return
			}
			if !ok {
				t.Fatalf("no test provokes %d (%s)", c, row[2])
			}
			if got := f(); got != c {
				t.Errorf("got %d, want %d", got, c)
			}
		})
	}
}
