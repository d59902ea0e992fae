package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/internal/fakemodel"
)

func TestCheckLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		code int
	}{
		{`not json`, -32700},
		{`{"jsonrpc":"2.0","id":1,"method":"x"`, -32700},
		{`[1,2]`, -32600},
		{`"text"`, -32600},
		{`{"jsonrpc":"1.0","id":1,"method":"x"}`, -32600},
		{`{"id":1,"method":"x"}`, -32600},
		{`{"jsonrpc":"2.0"}`, -32600},
		{`{"jsonrpc":"2.0","id":1}`, -32600},
		{`{"jsonrpc":"2.0","id":{},"method":"x"}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`, 0},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, 0},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, 0},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}`, 0},
	} {
		code, _, _, _, ok := checkLine([]byte(tc.line))
		if ok != (tc.code == 0) || code != tc.code {
			t.Errorf("%s: code %d ok %v, want %d", tc.line, code, ok, tc.code)
		}
	}
}

// TestFilterLines checks the answers the filter gives itself and that it
// passes the rest on in order.
func TestFilterLines(t *testing.T) {
	in := strings.Join([]string{
		`garbage`,
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`,
		``,
		`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{}}`,
	}, "\n")
	var out bytes.Buffer
	pr, pw := io.Pipe()
	var passed []byte
	done := make(chan struct{})
	go func() { passed, _ = io.ReadAll(pr); close(done) }()
	_ = filterLines(strings.NewReader(in), pw, &out, nil)
	<-done
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":null`) || !strings.Contains(lines[0], "-32700") ||
		!strings.Contains(lines[1], `"id":1`) || !strings.Contains(lines[1], "initialize first") {
		t.Fatalf("answers:\n%s", out.String())
	}
	want := `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"session/new","params":{}}` + "\n"
	if string(passed) != want {
		t.Fatalf("passed on:\n%s\nwant:\n%s", passed, want)
	}
}

func TestToolKindAndPlanEntries(t *testing.T) {
	kinds := map[string]sdk.ToolKind{
		"read_file": sdk.ToolKindRead, "list_dir": sdk.ToolKindRead, "write_file": sdk.ToolKindEdit, "edit_file": sdk.ToolKindEdit,
		"delete_file": sdk.ToolKindDelete, "move_file": sdk.ToolKindMove, "search_code": sdk.ToolKindSearch,
		"search_files": sdk.ToolKindSearch, "run_command": sdk.ToolKindExecute, "git": sdk.ToolKindExecute,
	}
	for tool, want := range kinds {
		if got := toolKind(&plans.Step{ID: "s", Tool: tool}); got != want {
			t.Errorf("%s: kind %s, want %s", tool, got, want)
		}
	}
	if got := toolKind(&plans.Step{ID: "s", Kind: plans.KindLLM}); got != sdk.ToolKindThink {
		t.Errorf("llm step: %s", got)
	}
	p := &plans.Plan{Steps: []*plans.Step{{ID: "a", Tool: "read_file"}, {ID: "b", Tool: "run_command", Description: "build"}, {ID: "c", Tool: "read_file"}, {ID: "d", Tool: "read_file"}}}
	e := planEntries(p, map[string]engine.StepStatus{"a": engine.StepCompleted, "b": engine.StepRunning, "c": engine.StepFailed})
	if len(e) != 4 || e[0].Status != sdk.PlanEntryStatusCompleted || e[1].Status != sdk.PlanEntryStatusInProgress ||
		e[2].Status != sdk.PlanEntryStatusCompleted || !strings.HasSuffix(e[2].Content, "(failed)") ||
		e[3].Status != sdk.PlanEntryStatusPending || e[1].Content != "b: build" {
		t.Fatalf("entries: %+v", e)
	}
}

// testClient is an ACP client for in-process tests.
type testClient struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	asked   []sdk.RequestPermissionRequest
	writes  []sdk.WriteTextFileRequest
	answer  string
	// buffers are the editor's unsaved buffers by absolute path: reads
	// answer them instead of the disk.
	buffers map[string]string
}

func (c *testClient) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	c.mu.Lock()
	text, ok := c.buffers[p.Path]
	c.mu.Unlock()
	if ok {
		return sdk.ReadTextFileResponse{Content: text}, nil
	}
	data, err := os.ReadFile(p.Path)
	return sdk.ReadTextFileResponse{Content: string(data)}, err
}

func (c *testClient) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	c.writes = append(c.writes, p)
	c.mu.Unlock()
	return sdk.WriteTextFileResponse{}, os.WriteFile(p.Path, []byte(p.Content), 0o644)
}

func (c *testClient) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	ans := c.answer
	c.mu.Unlock()
	for _, want := range []string{ans, "apply"} { // the answer if offered, else a review's apply
		for _, o := range p.Options {
			if want != "" && string(o.OptionId) == want {
				return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
			}
		}
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
}

func (c *testClient) SessionUpdate(ctx context.Context, p sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, p.Update)
	c.mu.Unlock()
	return nil
}

func (c *testClient) CreateTerminal(ctx context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (c *testClient) KillTerminal(ctx context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, nil
}
func (c *testClient) TerminalOutput(ctx context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, nil
}
func (c *testClient) ReleaseTerminal(ctx context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, nil
}
func (c *testClient) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, nil
}

// said is the agent's message text since update number from.
func (c *testClient) said(from int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, u := range c.updates[from:] {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

func (c *testClient) kinds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, u := range c.updates {
		b, _ := json.Marshal(u)
		var m struct {
			Kind string `json:"sessionUpdate"`
		}
		_ = json.Unmarshal(b, &m)
		out = append(out, m.Kind)
	}
	return out
}

// start runs Serve on pipes and connects c to it; stop ends the agent.
// modelOptions are Options with the fake model server at url as the model
// and state as the state dir, HOME and config dir.
func modelOptions(url, state string) Options {
	env := map[string]string{"AGENTD_MODEL": "openai:fake", "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "k", "HOME": state, "XDG_CONFIG_HOME": state}
	return Options{StateDir: state, Getenv: func(k string) string { return env[k] }}
}

// openSession initializes conn with caps, opens a session in ws and sets
// its mode (unless mode is "").
func openSession(t *testing.T, conn *sdk.ClientSideConnection, caps sdk.ClientCapabilities, ws string, mode sdk.SessionModeId) sdk.NewSessionResponse {
	t.Helper()
	ctx := boundedCtx(t)
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatal(err)
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if mode != "" {
		if _, err := conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: mode}); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

func start(t *testing.T, c sdk.Client, opts Options) (*sdk.ClientSideConnection, func()) {
	conn, stop, _ := startWire(t, c, opts)
	return conn, stop
}

// wireLog keeps every line the agent wrote, in the order written.
type wireLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *wireLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// messages decodes the lines written so far.
func (w *wireLog) messages(t *testing.T) []map[string]any {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(w.buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("the agent wrote a line that is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// startWire is start that also records what the agent writes.
func startWire(t *testing.T, c sdk.Client, opts Options) (*sdk.ClientSideConnection, func(), *wireLog) {
	t.Helper()
	wire := &wireLog{}
	aIn, cOut := io.Pipe()
	cIn, aOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	go func() { done <- Serve(ctx, aIn, io.MultiWriter(aOut, wire), opts) }()
	conn := sdk.NewClientSideConnection(c, cOut, cIn)
	conn.SetLogger(opts.Logger)
	stop := func() {
		_ = cOut.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after its input closed")
		}
		cancel()
		_ = aOut.Close()
	}
	return conn, stop, wire
}

// TestSessionSurvivesRestart runs a plan in auto mode with a client that
// writes files, then loads the session in a new agent: the conversation
// is replayed and /restore undoes the run.
func TestSessionSurvivesRestart(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws := t.TempDir()
	state := t.TempDir()
	file := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(file, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := modelOptions(url, state)
	ctx := boundedCtx(t)
	caps := sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}

	c := &testClient{}
	conn, stop := start(t, c, opts)
	ns := openSession(t, conn, caps, ws, modeAuto)
	fake.Push(fakemodel.Reply{Text: `{"title":"Two","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"two\n"}}]}`})
	res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("make it two")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	if got, _ := os.ReadFile(file); string(got) != "two\n" {
		t.Fatalf("a.txt = %q", got)
	}
	c.mu.Lock()
	nw, nask := len(c.writes), len(c.asked)
	c.mu.Unlock()
	if nw != 1 || nask != 0 {
		t.Fatalf("auto mode: %d fs writes (want 1), %d questions (want 0)", nw, nask)
	}
	stop()

	// A new agent process finds the session.
	var saved savedSession
	matches, _ := filepath.Glob(filepath.Join(state, "workspaces", "*", "journal", "acp", "sessions", string(ns.SessionId)+".json"))
	if len(matches) != 1 {
		t.Fatalf("saved session files: %v", matches)
	}
	if data, err := os.ReadFile(matches[0]); err != nil || json.Unmarshal(data, &saved) != nil {
		t.Fatalf("reading the saved session: %v", err)
	}
	if saved.Run == nil || saved.Run.Status != engine.RunCompleted || len(saved.Run.Snapshots) < 2 || saved.Plan == nil || saved.Mode != modeAuto {
		t.Fatalf("saved: %+v", saved)
	}
	c2 := &testClient{}
	conn2, stop2 := start(t, c2, opts)
	defer stop2()
	if _, err := conn2.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ls, err := conn2.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if ls.Modes == nil || ls.Modes.CurrentModeId != modeAuto {
		t.Fatalf("modes after load: %+v", ls.Modes)
	}
	kinds := strings.Join(c2.kinds(), " ")
	for _, k := range []string{"user_message_chunk", "plan", "tool_call", "agent_message_chunk"} {
		if !strings.Contains(kinds, k) {
			t.Errorf("replay lacks %s: %s", k, kinds)
		}
	}
	if _, err := conn2.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("/restore " + saved.Run.Snapshots[0])}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != "one\n" {
		t.Fatalf("after /restore a.txt = %q", got)
	}
	if said := c2.said(0); !strings.Contains(said, "Undo this with `/undo-restore`") {
		t.Fatalf("a restore does not say /undo-restore takes it back:\n%s", said)
	}
	c2.mu.Lock()
	beforeUndo := len(c2.updates)
	c2.mu.Unlock()
	if _, err := conn2.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("/undo-restore")}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != "two\n" {
		t.Fatalf("after /undo-restore a.txt = %q", got)
	}
	// A second /undo-restore takes back the restore before it, not this
	// undo: the chat must not offer it as this one's undo.
	if said := c2.said(beforeUndo); strings.Contains(said, "Undo this with") {
		t.Fatalf("an undo of a restore offers /undo-restore as its own undo:\n%s", said)
	}
	// Restore protection: a file the user changed since the agent's last
	// snapshot is left alone and reported, unless --overwrite.
	if err := os.WriteFile(file, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c2.mu.Lock()
	mark := len(c2.updates)
	c2.mu.Unlock()
	restore := func(arg string) {
		t.Helper()
		if _, err := conn2.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("/restore " + arg)}}); err != nil {
			t.Fatal(err)
		}
	}
	restore(saved.Run.Snapshots[0])
	if got, _ := os.ReadFile(file); string(got) != "mine\n" {
		t.Fatalf("a protected restore overwrote the user's edit: a.txt = %q", got)
	}
	said := c2.said(mark)
	if !strings.Contains(said, "left alone") || !strings.Contains(said, "a.txt") || !strings.Contains(said, "--overwrite") {
		t.Fatalf("the chat does not report the conflict:\n%s", said)
	}
	restore(saved.Run.Snapshots[0] + " --overwrite")
	if got, _ := os.ReadFile(file); string(got) != "one\n" {
		t.Fatalf("after --overwrite a.txt = %q", got)
	}

	// An unknown session id is "not found", and the agent keeps serving.
	_, err = conn2.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: "sess-nope", Cwd: ws, McpServers: []sdk.McpServer{}})
	var re *sdk.RequestError
	if !asRequestError(err, &re) || re.Code != -32002 {
		t.Fatalf("load of an unknown session: %v", err)
	}
}

func asRequestError(err error, re **sdk.RequestError) bool {
	r, ok := err.(*sdk.RequestError)
	if ok {
		*re = r
	}
	return ok
}

// promptWaitingForTheModel opens a session and sends a first prompt whose
// planner call hangs at the model until the prompt is cancelled; it
// returns once the model has the request, with the channel the first
// prompt's answer comes on. The model's next reply is a plan writing b.txt.
func promptWaitingForTheModel(t *testing.T) (*sdk.ClientSideConnection, sdk.NewSessionResponse, string, chan sdk.PromptResponse) {
	t.Helper()
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	conn, stop := start(t, &testClient{}, modelOptions(url, state))
	t.Cleanup(stop)
	ctx := boundedCtx(t)
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, modeAuto)
	fake.Push(fakemodel.Reply{Fault: fakemodel.FaultHang},
		fakemodel.Reply{Text: `{"steps":[{"id":"w","tool":"write_file","args":{"path":"b.txt","content":"b\n"}}]}`})
	first := make(chan sdk.PromptResponse, 1)
	go func() {
		res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("hang")}})
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	for deadline := time.Now().Add(10 * time.Second); len(fake.Requests()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first prompt never reached the model")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return conn, ns, ws, first
}

// TestPromptWhileRunningIsRefused sends a second prompt while the first
// waits for the model: the second is refused with an error that says so,
// the first goes on until session/cancel, and a prompt after it runs.
func TestPromptWhileRunningIsRefused(t *testing.T) {
	conn, ns, ws, first := promptWaitingForTheModel(t)
	ctx := boundedCtx(t)
	_, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("write b")}})
	var re *sdk.RequestError
	if !asRequestError(err, &re) || re.Code != errPromptRunning || !strings.Contains(re.Message, "already running") {
		t.Fatalf("second prompt while the first runs: %v, want error %d", err, errPromptRunning)
	}
	select {
	case r := <-first:
		t.Fatalf("the first prompt ended (%s) when the second was refused", r.StopReason)
	case <-time.After(300 * time.Millisecond):
	}
	if err := conn.Cancel(ctx, sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("first prompt: %s, want cancelled", r.StopReason)
	}
	res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("write b")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt after the cancelled one: %v %v", res.StopReason, err)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "b.txt")); string(got) != "b\n" {
		t.Fatalf("b.txt = %q", got)
	}
}

// TestPromptRightAfterCancelRuns: a client that gives its chat back as
// soon as the user stops (CodeCompanion) sends the next prompt right after
// session/cancel, before the cancelled prompt's answer. The next prompt is
// not refused: it waits for the cancelled one and then runs.
func TestPromptRightAfterCancelRuns(t *testing.T) {
	conn, ns, ws, first := promptWaitingForTheModel(t)
	ctx := boundedCtx(t)
	if err := conn.Cancel(ctx, sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("write b")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("the prompt sent right after the cancel: %v %v", res.StopReason, err)
	}
	if r := <-first; r.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("first prompt: %s, want cancelled", r.StopReason)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "b.txt")); string(got) != "b\n" {
		t.Fatalf("b.txt = %q", got)
	}
}

// TestAlwaysAnswersAreTheWorkspaceRules answers "allow always" in ACP: the
// rule lands in the workspace's one rule store (the one `agentd rules` and
// the editor server read), and the same command is not asked again.
func TestAlwaysAnswersAreTheWorkspaceRules(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{answer: string(sdk.PermissionOptionKindAllowAlways)}
	conn, stop := start(t, c, modelOptions(url, state))
	defer stop()
	ctx := boundedCtx(t)
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, "")
	plan := `{"steps":[{"id":"c","tool":"run_command","args":{"command":"echo hi > hi.txt"}}]}`
	fake.Push(fakemodel.Reply{Text: plan}, fakemodel.Reply{Text: plan})
	for i := 0; i < 2; i++ {
		res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("say hi")}})
		if err != nil || res.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("prompt %d: %v %v", i, res.StopReason, err)
		}
	}
	c.mu.Lock()
	asked := len(c.asked)
	c.mu.Unlock()
	if asked != 1 {
		t.Fatalf("asked %d times, want once", asked)
	}
	root, _ := filepath.EvalSymlinks(ws)
	j, err := engine.OpenJournal(state, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := j.Rules().List()
	if err != nil || len(rules) != 1 || !rules[0].Allow || rules[0].Tool != "run_command" {
		t.Fatalf("rules: %+v %v", rules, err)
	}
	runs, err := j.Runs()
	if err != nil || len(runs) != 2 || runs[0].Status != engine.RunCompleted {
		t.Fatalf("journal runs: %d %v", len(runs), err)
	}
}

// TestFilterDropsTooLargeMessages sends a request over the size limit
// between two good lines: it gets an invalid request error with its id,
// and the lines around it go on to the SDK.
func TestFilterDropsTooLargeMessages(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"x":"` + strings.Repeat("a", maxLine+10) + `"}}`
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n" + big + "\n" + `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`
	var out bytes.Buffer
	pr, pw := io.Pipe()
	var passed []byte
	done := make(chan struct{})
	go func() { passed, _ = io.ReadAll(pr); close(done) }()
	if err := filterLines(strings.NewReader(in), pw, &out, nil); err != nil {
		t.Fatal(err)
	}
	<-done
	if !strings.Contains(out.String(), `"id":7`) || !strings.Contains(out.String(), "-32600") || !strings.Contains(out.String(), "over the limit") {
		t.Fatalf("answer: %.300s", out.String())
	}
	want := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}` + "\n"
	if string(passed) != want {
		t.Fatalf("passed on %.300q", passed)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("stdin is broken") }

// TestServeExitStatus: the client closing its input is a clean end; input
// that cannot be read is an error (agentd acp exits non-zero).
func TestServeExitStatus(t *testing.T) {
	if err := Serve(context.Background(), strings.NewReader(""), io.Discard, Options{}); err != nil {
		t.Fatalf("end of input: %v", err)
	}
	err := Serve(context.Background(), failingReader{}, io.Discard, Options{})
	if err == nil || !strings.Contains(err.Error(), "stdin is broken") {
		t.Fatalf("broken input: %v, want the read error", err)
	}
}

// hangBound bounds a test's calls over the wire: every one is answered
// within seconds, so a call still waiting after this is a hang, and the
// test fails naming itself instead of holding the package until go
// test's timeout. Not a timing assertion.
const hangBound = 3 * time.Minute

// boundedCtx is a context for a test's calls that ends after hangBound.
func boundedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	t.Cleanup(cancel)
	return ctx
}
