package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func initializeWith(c *lspConn, root string, opts map[string]any) {
	c.t.Helper()
	r := c.call("initialize", map[string]any{"processId": nil, "rootUri": "file://" + root, "capabilities": map[string]any{},
		"initializationOptions": opts})
	if r["error"] != nil {
		c.t.Fatalf("initialize: %v", r["error"])
	}
	c.send(map[string]any{"method": "initialized", "params": map[string]any{}})
}

// runOverProtocol loads and starts plan and reads until the run finishes,
// answering approval requests with answer ("" fails the test if asked).
// It returns the final status and how many approvals were asked.
func runOverProtocol(t *testing.T, c *lspConn, plan, answer string) (status string, asked int) {
	t.Helper()
	r := c.call("agentd/plan/load", map[string]any{"plan": json.RawMessage(plan)})
	if r["error"] != nil {
		t.Fatalf("plan/load: %v", r["error"])
	}
	planID := r["result"].(map[string]any)["id"]
	c.id++
	startID := c.id
	c.send(map[string]any{"id": startID, "method": "agentd/run/start", "params": map[string]any{"planId": planID,
		"options": map[string]any{"review": "none"}}})
	for {
		m := c.read()
		switch m["method"] {
		case "agentd/approval/request":
			asked++
			if answer == "" {
				t.Fatalf("the server asked for approval: %v", m["params"])
			}
			c.send(map[string]any{"id": m["id"], "result": map[string]any{"outcome": "selected", "optionId": answer}})
		case "window/showMessageRequest", "window/workDoneProgress/create":
			c.send(map[string]any{"id": m["id"], "result": nil})
		case "agentd/run/didChange":
			p := m["params"].(map[string]any)
			ev := p["event"].(map[string]any)
			if ev["type"] == "runFinished" {
				return ev["status"].(string), asked
			}
		}
		if id, ok := m["id"].(float64); ok && int(id) == startID && m["error"] != nil {
			t.Fatalf("run/start: %v", m["error"])
		}
	}
}

const commandPlan = `{"title":"cmd","steps":[{"id":"c","tool":"run_command","args":{"command":"echo one > one.txt && echo two >> one.txt"}}]}`

// A rule remembered at the terminal applies in the editor server, and
// agentd rules lists and revokes it.
func TestRuleFromTerminalAppliesInServer(t *testing.T) {
	ws, stateDir := t.TempDir(), t.TempDir()
	p := writePlan(t, commandPlan)
	r := agentd(t, "a\n", "run", p, "--workspace", ws, "--state-dir", stateDir)
	if r.code != 0 {
		t.Fatalf("agentd run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "[a]lways for this command") {
		t.Errorf("the terminal did not offer to remember the command:\n%s", r.stdout)
	}
	c := startServeProc(t, stateDir).lspConn
	initializeWith(c, ws, map[string]any{"clientFeatures": map[string]any{"approvalRequest": true}})
	pol := c.call("agentd/policy/get", map[string]any{})
	rules, _ := pol["result"].(map[string]any)["rules"].([]any)
	if len(rules) != 1 || rules[0].(map[string]any)["command"] != "echo one > one.txt && echo two >> one.txt" {
		t.Fatalf("the server does not see the terminal's rule: %v", pol["result"])
	}
	if st, asked := runOverProtocol(t, c, commandPlan, ""); st != "completed" || asked != 0 {
		t.Fatalf("run over the protocol: %s, asked %d times", st, asked)
	}
	// The same command with another part is asked about again.
	other := strings.Replace(commandPlan, "echo two >> one.txt", "echo two >> one.txt; rm -f one.txt", 1)
	if _, asked := runOverProtocol(t, c, other, "reject_once"); asked != 1 {
		t.Fatalf("a longer compound command passed as the remembered one: asked %d times, want 1", asked)
	}

	list := agentd(t, "", "rules", "list", "--workspace", ws, "--state-dir", stateDir)
	if list.code != 0 || !strings.Contains(list.stdout, "rule-1") || !strings.Contains(list.stdout, "allow") {
		t.Fatalf("agentd rules list: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	if rv := agentd(t, "", "rules", "revoke", "rule-1", "--workspace", ws, "--state-dir", stateDir); rv.code != 0 {
		t.Fatalf("agentd rules revoke: exit %d\n%s%s", rv.code, rv.stdout, rv.stderr)
	}
	if rv := agentd(t, "", "rules", "revoke", "rule-9", "--workspace", ws, "--state-dir", stateDir); rv.code == 0 || !strings.Contains(rv.stderr, "rule-9") {
		t.Errorf("revoking an unknown rule: exit %d\n%s", rv.code, rv.stderr)
	}
	pol = c.call("agentd/policy/get", map[string]any{})
	if rules, _ := pol["result"].(map[string]any)["rules"].([]any); len(rules) != 0 {
		t.Fatalf("the server still sees a revoked rule: %v", rules)
	}
}

// A rule remembered in the editor applies at the terminal: the run needs
// no answer on standard input.
func TestRuleFromServerAppliesAtTerminal(t *testing.T) {
	ws, stateDir := t.TempDir(), t.TempDir()
	c := startServeProc(t, stateDir).lspConn
	initializeWith(c, ws, map[string]any{"clientFeatures": map[string]any{"approvalRequest": true}})
	if st, asked := runOverProtocol(t, c, commandPlan, "allow_always"); st != "completed" || asked != 1 {
		t.Fatalf("run over the protocol: %s, asked %d times", st, asked)
	}
	if err := os.Remove(filepath.Join(ws, "one.txt")); err != nil {
		t.Fatal(err)
	}
	r := agentd(t, "", "run", writePlan(t, commandPlan), "--workspace", ws, "--state-dir", stateDir)
	if r.code != 0 || !fileExists(ws, "one.txt") {
		t.Fatalf("agentd run did not use the editor's rule: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "allow?") {
		t.Errorf("the terminal asked although a rule applies:\n%s", r.stdout)
	}
}

func fileExists(dir, rel string) bool {
	_, err := os.Stat(filepath.Join(dir, rel))
	return err == nil
}

// agentd runs lists the terminal's runs with their status, and shows one
// run's summary.
func TestRunsListsPastRuns(t *testing.T) {
	ws, stateDir := t.TempDir(), t.TempDir()
	ok := agentd(t, "", "run", writePlan(t, `{"title":"good one","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"a\n"}}]}`),
		"--workspace", ws, "--state-dir", stateDir, "--yes")
	bad := agentd(t, "", "run", writePlan(t, `{"title":"bad one","steps":[{"id":"x","tool":"run_command","args":{"command":"exit 3"}}]}`),
		"--workspace", ws, "--state-dir", stateDir, "--yes")
	if ok.code != 0 || bad.code != exitFailed {
		t.Fatalf("runs exited %d and %d\n%s%s", ok.code, bad.code, bad.stdout, bad.stderr)
	}
	l := agentd(t, "", "runs", "--workspace", ws, "--state-dir", stateDir)
	if l.code != 0 {
		t.Fatalf("agentd runs: exit %d\n%s", l.code, l.stderr)
	}
	lines := strings.Split(strings.TrimSpace(l.stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "failed") || !strings.Contains(lines[1], "bad one") ||
		!strings.Contains(lines[2], "completed") || !strings.Contains(lines[2], "good one") {
		t.Fatalf("agentd runs:\n%s", l.stdout)
	}
	id := strings.Fields(lines[1])[0]
	s := agentd(t, "", "runs", id, "--workspace", ws, "--state-dir", stateDir)
	if s.code != 0 || !strings.Contains(s.stdout, "**Status:** failed") || !strings.Contains(s.stdout, "| x | failed |") {
		t.Fatalf("agentd runs %s: exit %d\n%s%s", id, s.code, s.stdout, s.stderr)
	}
}

// A daemon that is running already lists the runs agentd run records in
// its workspace afterwards and gets each by its id, without a restart; it
// cannot change them, and says why.
func TestServeListsRunsOfTheTerminal(t *testing.T) {
	ws, stateDir := t.TempDir(), t.TempDir()
	c := startServeProc(t, stateDir).lspConn
	initialize(c, ws)
	if l, _ := c.call("agentd/run/list", map[string]any{})["result"].([]any); len(l) != 0 {
		t.Fatalf("runs before any: %v", l)
	}
	r := agentd(t, "", "run", writePlan(t, `{"title":"from the terminal","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"a\n"}}]}`),
		"--workspace", ws, "--state-dir", stateDir, "--yes")
	if r.code != 0 {
		t.Fatalf("agentd run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	l, _ := c.call("agentd/run/list", map[string]any{})["result"].([]any)
	if len(l) != 1 {
		t.Fatalf("the daemon lists %d runs after agentd run; want 1: %v", len(l), l)
	}
	run, _ := l[0].(map[string]any)
	id, _ := run["runId"].(string)
	if id == "" || run["status"] != "completed" {
		t.Fatalf("listed run: %v", run)
	}
	g, _ := c.call("agentd/run/get", map[string]any{"runId": id})["result"].(map[string]any)
	if g["status"] != "completed" || g["runId"] != id {
		t.Fatalf("agentd/run/get %s: %v", id, g)
	}
	e, _ := c.call("agentd/run/cancel", map[string]any{"runId": id})["error"].(map[string]any)
	if msg, _ := e["message"].(string); !strings.Contains(msg, "another agentd process") {
		t.Fatalf("cancelling the terminal's run: %v", e)
	}
}
