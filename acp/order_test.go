package acp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/internal/fakemodel"
)

// TestPermissionFollowsItsToolCall runs 20 turns whose three independent
// command steps each ask for approval at once, and reads the wire: every
// session/request_permission comes after the tool_call it is about, and
// it names the command and its folder in its title.
func TestPermissionFollowsItsToolCall(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{answer: string(sdk.PermissionOptionKindAllowOnce)}
	conn, stop, wire := startWire(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, "")
	const runs = 20
	for i := 0; i < runs; i++ {
		fake.Push(fakemodel.Reply{Text: fmt.Sprintf(`{"steps":[
			{"id":"a","tool":"run_command","args":{"command":"echo a%d"}},
			{"id":"b","tool":"run_command","args":{"command":"echo b%d"}},
			{"id":"c","tool":"run_command","args":{"command":"echo c%d"}}]}`, i, i, i)})
		res, err := conn.Prompt(boundedCtx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("echo")}})
		if err != nil || res.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("turn %d: %v %v", i, res.StopReason, err)
		}
	}
	shown := map[string]bool{}
	asked := 0
	for _, m := range wire.messages(t) {
		params, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "session/update":
			u, _ := params["update"].(map[string]any)
			if u["sessionUpdate"] == "tool_call" {
				shown[u["toolCallId"].(string)] = true
			}
		case "session/request_permission":
			asked++
			tc, _ := params["toolCall"].(map[string]any)
			id, _ := tc["toolCallId"].(string)
			if !shown[id] {
				t.Fatalf("permission request %d for %s came before its tool_call", asked, id)
			}
			title, _ := tc["title"].(string)
			step := id[strings.LastIndex(id, "/")+1:]
			if !strings.Contains(title, "`echo "+step) || !strings.Contains(title, " in "+ws) {
				t.Fatalf("permission title %q does not show the command and its folder", title)
			}
		}
	}
	if asked != 3*runs {
		t.Fatalf("%d permission requests, want %d", asked, 3*runs)
	}
}

// lastStatus is the last status the wire gave tool call id, and the text
// of its last content.
func lastStatus(t *testing.T, wire *wireLog, suffix string) (status, text string, seen bool) {
	for _, m := range wire.messages(t) {
		params, _ := m["params"].(map[string]any)
		u, _ := params["update"].(map[string]any)
		if m["method"] != "session/update" || u == nil {
			continue
		}
		id, _ := u["toolCallId"].(string)
		if !strings.HasSuffix(id, suffix) {
			continue
		}
		seen = true
		if s, ok := u["status"].(string); ok {
			status = s
		}
		if cs, ok := u["content"].([]any); ok && len(cs) > 0 {
			last, _ := cs[len(cs)-1].(map[string]any)
			inner, _ := last["content"].(map[string]any)
			text, _ = inner["text"].(string)
		}
	}
	return status, text, seen
}

// TestRejectedAndCancelledPermissions: a rejected command ends its tool
// call failed with the reason; a permission answered cancelled ends the
// turn cancelled, its tool call failed, and the next step never runs.
func TestRejectedAndCancelledPermissions(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{answer: string(sdk.PermissionOptionKindRejectOnce)}
	conn, stop, wire := startWire(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, "")
	ctx := boundedCtx(t)
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"rej","tool":"run_command","args":{"command":"echo no > no.txt"}}]}`})
	res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("no")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("rejected turn: %v %v", res.StopReason, err)
	}
	if st, text, _ := lastStatus(t, wire, "/rej"); st != "failed" || !strings.Contains(text, "rejected in the editor") {
		t.Fatalf("rejected step: status %q, content %q", st, text)
	}

	c.mu.Lock()
	c.answer = "" // the client answers cancelled
	c.mu.Unlock()
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"first","tool":"run_command","args":{"command":"echo 1 > one.txt"}},
		{"id":"second","tool":"run_command","args":{"command":"echo 2 > two.txt"},"dependsOn":["first"]}]}`})
	res, err = conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("two")}})
	if err != nil || res.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("cancelled permission: stop reason %v %v, want cancelled", res.StopReason, err)
	}
	if st, _, _ := lastStatus(t, wire, "/first"); st != "failed" {
		t.Fatalf("the step whose permission was cancelled: %q, want failed", st)
	}
	c.mu.Lock()
	asked := len(c.asked)
	c.mu.Unlock()
	if asked != 2 {
		t.Fatalf("%d permission requests, want 2 (the second step never asks)", asked)
	}
	if st, _, _ := lastStatus(t, wire, "/second"); st == "completed" || st == "in_progress" {
		t.Fatalf("the later step: %q", st)
	}
}

// TestUsageRecoveryAndChunks: a turn with a plan, a failing critical step
// whose recovery asks the model, and an llm step. The recovery is its own
// tool call, every model call counts (input + output = total), and the
// plan, the model's text and the outcome are separate paragraphs.
func TestUsageRecoveryAndChunks(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{}
	conn, stop, wire := startWire(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, modeAuto)
	fake.Push(
		fakemodel.Reply{Text: `{"steps":[{"id":"say","kind":"llm","prompt":"say hi"},
			{"id":"bad","tool":"read_file","args":{"path":"missing.txt"},"dependsOn":["say"]}]}`, InputTokens: 100, OutputTokens: 20},
		fakemodel.Reply{Text: "Hi.", InputTokens: 7, OutputTokens: 3},
		fakemodel.Reply{Text: `{"action":"fail_gracefully","reason":"the file is not there"}`, InputTokens: 30, OutputTokens: 4},
	)
	res, err := conn.Prompt(boundedCtx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	if u == nil || u.InputTokens != 137 || u.OutputTokens != 27 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Fatalf("usage %+v, want 137 in + 27 out = 164", u)
	}
	if st, text, seen := lastStatus(t, wire, "/bad/recover-1"); !seen || st != "completed" || !strings.Contains(text, "fail_gracefully") {
		t.Fatalf("recovery tool call: seen %v status %q content %q", seen, st, text)
	}
	var text strings.Builder
	for _, m := range wire.messages(t) {
		params, _ := m["params"].(map[string]any)
		up, _ := params["update"].(map[string]any)
		if up["sessionUpdate"] == "agent_message_chunk" {
			text.WriteString(up["content"].(map[string]any)["text"].(string))
		}
	}
	if !strings.Contains(text.String(), "\n\nHi.\n\nRun ") {
		t.Fatalf("chunks run together:\n%s", text.String())
	}
}

// TestModelChosenInTheEditor lists the configured models as the session's
// "model" config option and model state, switches to a profile, sees the
// planner use it, and finds the choice again after a restart.
func TestModelChosenInTheEditor(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "agentd"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"profiles":{"big":{"provider":"openai","model":"big-model"}}}`
	if err := os.WriteFile(filepath.Join(state, "agentd", "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := boundedCtx(t)
	c := &testClient{}
	conn, stop := start(t, c, modelOptions(url, state))
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, modeAuto)
	values := func(opts []sdk.SessionConfigOption) (cur string, ids []string) {
		if len(opts) != 1 || opts[0].Select == nil || opts[0].Select.Id != "model" || opts[0].Select.Options.Ungrouped == nil {
			t.Fatalf("config options: %+v", opts)
		}
		for _, o := range *opts[0].Select.Options.Ungrouped {
			ids = append(ids, string(o.Value))
		}
		return string(opts[0].Select.CurrentValue), ids
	}
	if cur, ids := values(ns.ConfigOptions); cur != "openai:fake" || strings.Join(ids, ",") != "openai:fake,big" {
		t.Fatalf("models: current %q of %v", cur, ids)
	}
	if ns.Models == nil || ns.Models.CurrentModelId != "openai:fake" || len(ns.Models.AvailableModels) != 2 {
		t.Fatalf("model state: %+v", ns.Models)
	}
	_, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: ns.SessionId, ConfigId: "model", Value: "nope"}})
	var re *sdk.RequestError
	if !asRequestError(err, &re) || re.Code != -32602 {
		t.Fatalf("unknown model: %v", err)
	}
	res, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: ns.SessionId, ConfigId: "model", Value: "big"}})
	if err != nil {
		t.Fatal(err)
	}
	if cur, _ := values(res.ConfigOptions); cur != "big" {
		t.Fatalf("after the switch: %q", cur)
	}
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"w","tool":"write_file","args":{"path":"b.txt","content":"b\n"}}]}`})
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("b")}}); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if m, _ := reqs[len(reqs)-1].JSON["model"].(string); m != "big-model" {
		t.Fatalf("the planner asked model %q, want big-model", m)
	}
	stop()

	conn, stop = start(t, &testClient{}, modelOptions(url, state))
	defer stop()
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ls, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if cur, _ := values(ls.ConfigOptions); cur != "big" {
		t.Fatalf("after a restart the model is %q, want big", cur)
	}
}

// TestImagesRefusedAndLocations: an image in a prompt for a model not
// configured with vision is refused with an error naming the model and
// the setting; a read_file step's tool call points at its line,
// and an edit's diff at the first changed line.
func TestImagesRefusedAndLocations(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &testClient{}
	conn, stop, wire := startWire(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, modeAuto)
	ctx := boundedCtx(t)
	_, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("what is this"), sdk.ImageBlock("aGk=", "image/png")}})
	var re *sdk.RequestError
	if !asRequestError(err, &re) || re.Code != -32602 || !strings.Contains(fmt.Sprint(re.Data), "prompt[1]") ||
		!strings.Contains(fmt.Sprint(re.Data), "the model openai:fake is not configured to take images") || !strings.Contains(fmt.Sprint(re.Data), `"vision": true`) {
		t.Fatalf("image prompt: %v %v", err, re.Data)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("a refused image prompt made %d model calls", n)
	}
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"r","tool":"read_file","args":{"path":"a.txt","startLine":2}},
		{"id":"w","tool":"edit_file","args":{"path":"a.txt","edits":[{"oldText":"three","newText":"3"}]},"dependsOn":["r"]}]}`})
	res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("edit")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", res.StopReason, err)
	}
	lines := map[string]float64{}
	for _, m := range wire.messages(t) {
		params, _ := m["params"].(map[string]any)
		u, _ := params["update"].(map[string]any)
		id, _ := u["toolCallId"].(string)
		locs, _ := u["locations"].([]any)
		for _, l := range locs {
			l := l.(map[string]any)
			if n, ok := l["line"].(float64); ok && l["path"] == filepath.Join(ws, "a.txt") {
				lines[id[strings.LastIndex(id, "/")+1:]] = n
			}
		}
	}
	if lines["r"] != 2 || lines["w"] != 3 {
		t.Fatalf("locations' lines: %v, want r at 2 and w at 3", lines)
	}
}

// TestRunOfAnotherFrontEndHoldsTheWorkspace: a run the editor server or
// the terminal left running in the workspace's journal makes a prompt
// that would run a plan answer -32010 naming it.
func TestRunOfAnotherFrontEndHoldsTheWorkspace(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	root, _ := filepath.EvalSymlinks(ws)
	j, err := engine.OpenJournal(state, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.SaveRun(engine.RunState{RunID: "run-elsewhere", Status: engine.RunRunning}); err != nil {
		t.Fatal(err)
	}
	c := &testClient{}
	conn, stop := start(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, modeAuto)
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"w","tool":"write_file","args":{"path":"b.txt","content":"b\n"}}]}`})
	_, err = conn.Prompt(boundedCtx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("b")}})
	var re *sdk.RequestError
	if !asRequestError(err, &re) || re.Code != errPromptRunning || !strings.Contains(re.Message, "run-elsewhere") {
		t.Fatalf("prompt while another front end's run is active: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err == nil {
		t.Fatal("the plan ran anyway")
	}
}

// TestDeleteApprovalNamesThePath: a delete's review says "delete PATH" in
// its title, with the file's diff (absolute path) as content.
func TestDeleteApprovalNamesThePath(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	file := filepath.Join(ws, "old.txt")
	if err := os.WriteFile(file, []byte("bye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &testClient{answer: string(sdk.PermissionOptionKindAllowOnce)}
	conn, stop := start(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, "")
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"d","tool":"delete_file","args":{"path":"old.txt"}}]}`})
	res, err := conn.Prompt(boundedCtx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("delete")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", res.StopReason, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var shown []string
	named := false
	for _, a := range c.asked {
		shown = append(shown, *a.ToolCall.Title)
		if strings.Contains(*a.ToolCall.Title, "delete old.txt") {
			named = true
		}
		diff := false
		for _, x := range a.ToolCall.Content {
			diff = diff || (x.Diff != nil && x.Diff.Path == file)
		}
		named = named && diff
	}
	t.Logf("requests: %q", shown)
	if len(c.asked) == 0 || !named {
		t.Fatalf("the delete's requests %q do not name %s", shown, file)
	}
	if _, err := os.Stat(file); err == nil {
		t.Fatal("the approved delete did not happen")
	}
}

// TestRejectedReviewIsFailed: rejecting an edit's review leaves the file
// alone, and its tool call ends failed with the engine's reason.
func TestRejectedReviewIsFailed(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{answer: "reject"}
	conn, stop, wire := startWire(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, "")
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"w","tool":"write_file","args":{"path":"b.txt","content":"b\n"}}]}`})
	res, err := conn.Prompt(boundedCtx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("b")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", res.StopReason, err)
	}
	if st, text, _ := lastStatus(t, wire, "/w"); st != "failed" || !strings.Contains(text, "rejected in the editor") {
		t.Fatalf("rejected edit: status %q, content %q", st, text)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err == nil {
		t.Fatal("the rejected file was written")
	}
}
