package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// Scenario files (testdata/scenarios/*.txtar) drive the real server through
// the fake editor. The comment section is a script, one action per line;
// files named ws/... make up the workspace, want/... are expected file
// contents, anything else (plans) is referred to by name.
//
//	init [review=before|after|none] [approvalRequest=false] [applyEdit=false] [hunksFollowEdits=true] [rebaseDelay=DURATION]
//	open PATH                       didOpen with the file's content (empty if missing)
//	type PATH LINE COL "TEXT"       didChange inserting TEXT (Go-quoted)
//	load PLAN                       agentd/plan/load
//	start [review=MODE]             agentd/run/start
//	expect-event TYPE [step=ID] [status=S]   wait for agentd/run/didChange
//	answer-approval OPTION [step=ID]         answer agentd/approval/request
//	answer-message TITLE            answer window/showMessageRequest
//	resolve accept|reject [file=PATH] [hunk=N]   on the last proposed change set
//	revert [file=PATH] [hunk=N]
//	repropose                       agentd/changes/repropose of the last change set
//	expect-change STATUS            status of the last change set
//	expect-change-notify STATUS     wait for agentd/changes/didChange
//	expect-save PATHS [userEdited=PATHS]   the last agentd/documents/save named these (comma-separated)
//	expect-change-notes N [version=V]   N agentd/changes/didChange so far, the last at buffer version V
//	expect-notice-counts pending=N accepted=N rejected=N stale=N total=N   the last didChange's set counts
//	                                are these and review's (the set's and each listed file's)
//	expect-at PATH [in=buffer] [notice=1] [moved=no]   every hunk of PATH starts at its `at` in the file on
//	                                disk (or the editor's buffer), in the ChangeSet (and the last didChange)
//	expect-hunks N                  pending hunks of the last change set
//	cancel | retry STEP | skip STEP
//	expect-run STATUS               wait for runFinished, check the status
//	expect-file PATH                disk content equals want/PATH
//	expect-no-file PATH
//	expect-buffer PATH              editor buffer equals want/PATH
//	snapshot-first                  remember the run's first snapshot
//	restore [conflicts=A,B]         agentd/snapshot/restore it; exactly these conflicts
//	undo                            agentd/undo/run of the run; it must be applied
//	write-disk PATH "TEXT"          the user writes a file on disk (Go-quoted TEXT)
//	restart                         new daemon, same state dir, initialize
//	expect-pending N                number of pending change sets
//	expect-sets STATUS N            number of change sets with that status (stale, rejected, ...)
//	expect-plans N | expect-runs N  plans / runs listed
//	expect-rules N | revoke-rules   remembered approval rules
//	expect-original PATH            disk content equals orig/PATH
//	cancel-progress                 window/workDoneProgress/cancel of the run
//	expect-progress KIND [TEXT]     wait for $/progress begin|report|end (message containing TEXT)
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			runScenario(t, ar)
		})
	}
}

type scenario struct {
	t        *testing.T
	ar       *txtar.Archive
	root     string
	stateDir string
	ed       *editor
	initArgs map[string]string

	mu      sync.Mutex
	buffers map[string]string // rel -> text
	saves   []SaveParams      // agentd/documents/save requests
	version map[string]int

	planID   string
	runID    string
	changeID string
	snapshot string
	noteIdx  int

	tools *tools.Registry // the server's tools (nil: the built-in ones)
}

func (sc *scenario) file(name string) []byte {
	for _, f := range sc.ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	sc.t.Fatalf("scenario has no file %q", name)
	return nil
}

func runScenario(t *testing.T, ar *txtar.Archive) {
	sc := &scenario{t: t, ar: ar, root: t.TempDir(), stateDir: t.TempDir(), buffers: map[string]string{}, version: map[string]int{}}
	for _, f := range ar.Files {
		if rel, ok := strings.CutPrefix(f.Name, "ws/"); ok {
			p := filepath.Join(sc.root, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t.Logf("> %s", line)
		sc.do(i+1, line)
		if t.Failed() {
			t.FailNow()
		}
	}
}

func fields(line string) (words []string, kv map[string]string) {
	kv = map[string]string{}
	for _, w := range splitQuoted(line) {
		if k, v, ok := strings.Cut(w, "="); ok && !strings.HasPrefix(w, `"`) {
			kv[k] = v
			continue
		}
		words = append(words, w)
	}
	return words, kv
}

func splitQuoted(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err == nil {
				out = append(out, q)
				s = s[len(q):]
				continue
			}
		}
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func (sc *scenario) uri(rel string) string {
	return pathToURI(filepath.Join(sc.root, filepath.FromSlash(rel)))
}

func (sc *scenario) relOfURI(uri string) string {
	p, _ := uriToPath(uri)
	rel, _ := filepath.Rel(sc.root, p)
	return filepath.ToSlash(rel)
}

func (sc *scenario) start() {
	opts := Options{StateDir: sc.stateDir, Tools: sc.tools}
	if d := sc.initArgs["rebaseDelay"]; d != "" {
		var err error
		if opts.RebaseDelay, err = time.ParseDuration(d); err != nil {
			sc.t.Fatalf("init rebaseDelay=%s: %v", d, err)
		}
	}
	sc.ed = startEditor(sc.t, opts, nil)
	sc.noteIdx = 0
	ed := sc.ed
	ed.setAuto("window/workDoneProgress/create", func(json.RawMessage) (any, error) { return nil, nil })
	ed.setAuto("workspace/applyEdit", func(params json.RawMessage) (any, error) {
		var p struct {
			Edit struct {
				DocumentChanges []struct {
					TextDocument struct {
						URI string `json:"uri"`
					} `json:"textDocument"`
					Edits []struct {
						Range   *workspace.Range `json:"range"`
						NewText string           `json:"newText"`
					} `json:"edits"`
				} `json:"documentChanges"`
			} `json:"edit"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		for _, dc := range p.Edit.DocumentChanges {
			rel := sc.relOfURI(dc.TextDocument.URI)
			for _, e := range dc.Edits {
				sc.mu.Lock()
				text, err := applyEdit([]byte(sc.buffers[rel]), *e.Range, e.NewText)
				if err != nil {
					sc.mu.Unlock()
					return nil, err
				}
				sc.buffers[rel] = string(text)
				sc.version[rel]++
				v := sc.version[rel]
				sc.mu.Unlock()
				// The editor tells the server about its own change (this runs
				// on the editor's read loop, before the answer is sent).
				_ = ed.conn.Notify(context.Background(), "textDocument/didChange", map[string]any{
					"textDocument":   map[string]any{"uri": dc.TextDocument.URI, "version": v},
					"contentChanges": []any{map[string]any{"range": e.Range, "text": e.NewText}},
				})
			}
		}
		return map[string]any{"applied": true}, nil
	})
	ed.setAuto("agentd/documents/save", func(params json.RawMessage) (any, error) {
		var p SaveParams
		_ = json.Unmarshal(params, &p)
		sc.mu.Lock()
		sc.saves = append(sc.saves, p)
		sc.mu.Unlock()
		for _, u := range p.URIs {
			rel := sc.relOfURI(u)
			sc.mu.Lock()
			text := sc.buffers[rel]
			sc.mu.Unlock()
			if err := os.WriteFile(filepath.Join(sc.root, rel), []byte(text), 0o644); err != nil {
				return nil, err
			}
			_ = ed.conn.Notify(context.Background(), "textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": u}})
		}
		return SaveResult{Saved: p.URIs}, nil
	})
}

func (sc *scenario) initialize() {
	opts := map[string]any{"clientFeatures": map[string]any{"approvalRequest": sc.initArgs["approvalRequest"] != "false", "changeReview": true,
		"hunksFollowEdits": sc.initArgs["hunksFollowEdits"] == "true"}}
	if r := sc.initArgs["review"]; r != "" {
		opts["review"] = r
	}
	params := map[string]any{
		"processId": nil, "rootUri": pathToURI(sc.root),
		"capabilities": map[string]any{
			"window":    map[string]any{"workDoneProgress": true},
			"workspace": map[string]any{"applyEdit": sc.initArgs["applyEdit"] != "false"},
		},
		"initializationOptions": opts,
	}
	sc.ed.mustCall("initialize", params, nil)
	sc.ed.notify("initialized", map[string]any{})
}

// waitEvent waits for a run event matching type and the key/values.
func (sc *scenario) waitEvent(typ string, kv map[string]string) RunEventParams {
	var got RunEventParams
	_, next := sc.ed.waitNote(sc.noteIdx, func(n note) bool {
		if n.Method != "agentd/run/didChange" {
			return false
		}
		var p RunEventParams
		if err := json.Unmarshal(n.Params, &p); err != nil {
			return false
		}
		if string(p.Event.Type) != typ {
			return false
		}
		if s, ok := kv["step"]; ok && p.Event.StepID != s {
			return false
		}
		got = p
		return true
	})
	sc.noteIdx = next
	if s, ok := kv["status"]; ok && got.Event.Status != s {
		sc.t.Errorf("%s event status = %q, want %q", typ, got.Event.Status, s)
	}
	return got
}

func (sc *scenario) change() ChangeSetInfo {
	var cs ChangeSetInfo
	sc.ed.mustCall("agentd/changes/get", map[string]any{"changeId": sc.changeID}, &cs)
	return cs
}

func (sc *scenario) decisions(action string, kv map[string]string) []Decision {
	if kv["file"] == "" {
		return []Decision{{Action: action}}
	}
	d := Decision{Action: action, URI: sc.uri(kv["file"])}
	if h, ok := kv["hunk"]; ok {
		n, _ := strconv.Atoi(h)
		cs := sc.change()
		for _, f := range cs.Files {
			if f.URI == d.URI {
				if n >= len(f.Hunks) {
					sc.t.Fatalf("file %s has %d hunks, no hunk %d", kv["file"], len(f.Hunks), n)
				}
				d.HunkID = f.Hunks[n].ID
			}
		}
		if d.HunkID == "" {
			sc.t.Fatalf("change set does not touch %s", kv["file"])
		}
	}
	return []Decision{d}
}

func (sc *scenario) do(lineNo int, line string) {
	t := sc.t
	t.Helper()
	w, kv := fields(line)
	arg := func(i int) string {
		if i >= len(w) {
			t.Fatalf("line %d: %q needs more arguments", lineNo, line)
		}
		return w[i]
	}
	switch w[0] {
	case "init":
		sc.initArgs = kv
		sc.start()
		sc.initialize()
	case "restart":
		sc.ed.mustCall("shutdown", nil, nil)
		sc.ed.notify("exit", nil)
		if err := <-sc.ed.done; err != nil {
			t.Fatalf("server exit: %v", err)
		}
		sc.ed.done <- nil
		_ = sc.ed.conn.Close()
		sc.start()
		sc.initialize()
	case "open":
		rel := arg(1)
		// A missing file opens as an empty buffer, as editors do.
		data, err := os.ReadFile(filepath.Join(sc.root, rel))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		sc.mu.Lock()
		sc.buffers[rel], sc.version[rel] = string(data), 1
		sc.mu.Unlock()
		sc.ed.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": sc.uri(rel), "languageId": "text", "version": 1, "text": string(data)}})
	case "type":
		rel := arg(1)
		ln, _ := strconv.Atoi(arg(2))
		col, _ := strconv.Atoi(arg(3))
		text, err := strconv.Unquote(arg(4))
		if err != nil {
			t.Fatalf("line %d: text must be Go-quoted: %v", lineNo, err)
		}
		pos := map[string]int{"line": ln, "character": col}
		sc.mu.Lock()
		nt, err := applyEdit([]byte(sc.buffers[rel]), workspace.Range{Start: workspacePos(ln, col), End: workspacePos(ln, col)}, text)
		if err != nil {
			sc.mu.Unlock()
			t.Fatal(err)
		}
		sc.buffers[rel] = string(nt)
		sc.version[rel]++
		v := sc.version[rel]
		sc.mu.Unlock()
		sc.ed.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": sc.uri(rel), "version": v},
			"contentChanges": []any{map[string]any{"range": map[string]any{"start": pos, "end": pos}, "text": text}},
		})
	case "load":
		var pl plans.Plan
		sc.ed.mustCall("agentd/plan/load", map[string]any{"plan": json.RawMessage(sc.file(arg(1)))}, &pl)
		sc.planID = pl.ID
	case "start":
		opts := map[string]any{}
		if r := kv["review"]; r != "" {
			opts["review"] = r
		}
		var res RunStartResult
		sc.ed.mustCall("agentd/run/start", map[string]any{"planId": sc.planID, "options": opts}, &res)
		sc.runID = res.RunID
	case "expect-event":
		p := sc.waitEvent(arg(1), kv)
		if p.Event.ChangeID != "" {
			sc.changeID = p.Event.ChangeID
		}
	case "answer-approval":
		r := sc.ed.nextRequest("agentd/approval/request")
		var p ApprovalRequestParams
		_ = json.Unmarshal(r.Params, &p)
		if s, ok := kv["step"]; ok && p.StepID != s {
			t.Errorf("approval for step %q, want %q", p.StepID, s)
		}
		if len(p.Options) != 4 {
			t.Errorf("approval offers %d options, want 4", len(p.Options))
		}
		if v, ok := kv["sensitive"]; ok && strconv.FormatBool(p.Sensitive) != v {
			t.Errorf("line %d: approval sensitive %v, want %s (%+v)", lineNo, p.Sensitive, v, p)
		}
		if v, ok := kv["category"]; ok && string(p.Category) != v {
			t.Errorf("line %d: approval category %q, want %q", lineNo, p.Category, v)
		}
		if v, ok := kv["title"]; ok && !strings.Contains(p.Title, v) {
			t.Errorf("line %d: approval title %q does not hold %q", lineNo, p.Title, v)
		}
		r.answer(ApprovalResult{Outcome: "selected", OptionID: arg(1)}, nil)
	case "answer-message":
		title := arg(1)
		if q, err := strconv.Unquote(title); err == nil {
			title = q
		}
		r := sc.ed.nextRequest("window/showMessageRequest")
		r.answer(map[string]string{"title": title}, nil)
	case "expect-rules":
		n, _ := strconv.Atoi(arg(1))
		var ps PolicyState
		sc.ed.mustCall("agentd/policy/get", nil, &ps)
		if len(ps.Rules) != n {
			t.Errorf("line %d: %d rules, want %d: %+v", lineNo, len(ps.Rules), n, ps.Rules)
		}
	case "revoke-rules":
		sc.ed.mustCall("agentd/policy/set", map[string]any{"rules": []any{}}, nil)
	case "expect-original":
		got, err := os.ReadFile(filepath.Join(sc.root, arg(1)))
		if err != nil {
			t.Fatalf("line %d: %v", lineNo, err)
		}
		if want := sc.file("orig/" + arg(1)); !bytes.Equal(got, want) {
			t.Errorf("line %d: %s on disk =\n%s\nwant\n%s", lineNo, arg(1), got, want)
		}
	case "resolve":
		var res ResolveResult
		sc.ed.mustCall("agentd/changes/resolve", map[string]any{"changeId": sc.changeID, "decisions": sc.decisions(arg(1), kv)}, &res)
		if len(res.Conflicts) > 0 && kv["conflicts"] == "" {
			t.Errorf("resolve conflicts: %+v", res.Conflicts)
		}
	case "revert":
		params := map[string]any{"changeId": sc.changeID}
		if d := sc.decisions("reject", kv)[0]; d.URI != "" {
			params["uri"], params["hunkId"] = d.URI, d.HunkID
		}
		var res ResolveResult
		sc.ed.mustCall("agentd/changes/revert", params, &res)
		if len(res.Conflicts) > 0 {
			t.Errorf("revert conflicts: %+v", res.Conflicts)
		}
	case "repropose":
		var cs ChangeSetInfo
		sc.ed.mustCall("agentd/changes/repropose", map[string]any{"changeId": sc.changeID}, &cs)
		if cs.ID != sc.changeID {
			t.Errorf("line %d: repropose answered change set %q", lineNo, cs.ID)
		}
	case "expect-change":
		if cs := sc.change(); cs.Status != arg(1) {
			t.Errorf("line %d: change set status %q, want %q (%+v)", lineNo, cs.Status, arg(1), cs)
		}
	case "expect-hunks":
		n, _ := strconv.Atoi(arg(1))
		got := 0
		for _, f := range sc.change().Files {
			for _, h := range f.Hunks {
				if h.Status == statusPending {
					got++
				}
			}
		}
		if got != n {
			t.Errorf("line %d: %d pending hunks, want %d", lineNo, got, n)
		}
	case "expect-change-notify":
		_, next := sc.ed.waitNote(0, func(n note) bool {
			if n.Method != "agentd/changes/didChange" {
				return false
			}
			var p ChangesDidChangeParams
			return json.Unmarshal(n.Params, &p) == nil && p.ChangeID == sc.changeID && p.Status == arg(1)
		})
		_ = next
	case "expect-save":
		rels := func(uris []string) string {
			var out []string
			for _, u := range uris {
				out = append(out, sc.relOfURI(u))
			}
			return strings.Join(out, ",")
		}
		sc.mu.Lock()
		saves := sc.saves
		sc.mu.Unlock()
		if len(saves) == 0 {
			t.Fatalf("line %d: no agentd/documents/save", lineNo)
		}
		last := saves[len(saves)-1]
		if got := rels(last.URIs); got != arg(1) || rels(last.UserEdited) != kv["userEdited"] {
			t.Errorf("line %d: agentd/documents/save of %s (userEdited %s), want %s (userEdited %s)", lineNo, got, rels(last.UserEdited), arg(1), kv["userEdited"])
		}
	case "expect-change-notes":
		// Notices are written before the answer of a later request: ask one first.
		sc.change()
		var got []ChangesDidChangeParams
		sc.ed.mu.Lock()
		for _, n := range sc.ed.notes {
			var p ChangesDidChangeParams
			if n.Method == "agentd/changes/didChange" && json.Unmarshal(n.Params, &p) == nil && p.ChangeID == sc.changeID {
				got = append(got, p)
			}
		}
		sc.ed.mu.Unlock()
		if n, _ := strconv.Atoi(arg(1)); len(got) != n {
			t.Errorf("line %d: %d agentd/changes/didChange notices, want %d: %+v", lineNo, len(got), n, got)
		} else if v := kv["version"]; v != "" && (n == 0 || got[n-1].Version == nil || strconv.Itoa(int(*got[n-1].Version)) != v) {
			t.Errorf("line %d: the last notice is at version %s, want %s", lineNo, versionText(got[n-1].Version), v)
		}
	case "expect-notice-counts":
		sc.expectNoticeCounts(lineNo, kv)
	case "expect-at":
		sc.expectAt(lineNo, arg(1), kv)
	case "cancel":
		sc.ed.mustCall("agentd/run/cancel", map[string]any{"runId": sc.runID}, nil)
	case "expect-progress":
		sc.ed.waitNote(0, func(n note) bool {
			if n.Method != "$/progress" {
				return false
			}
			var p struct {
				Value struct {
					Kind    string `json:"kind"`
					Message string `json:"message"`
				} `json:"value"`
			}
			return json.Unmarshal(n.Params, &p) == nil && p.Value.Kind == arg(1) && strings.Contains(p.Value.Message, arg(2))
		})
	case "cancel-progress":
		sc.ed.notify("window/workDoneProgress/cancel", map[string]any{"token": "agentd/run/" + sc.runID})
	case "retry":
		sc.ed.mustCall("agentd/run/retryStep", map[string]any{"runId": sc.runID, "stepId": arg(1)}, nil)
	case "skip":
		sc.ed.mustCall("agentd/run/skipStep", map[string]any{"runId": sc.runID, "stepId": arg(1)}, nil)
	case "expect-run":
		p := sc.waitEvent("runFinished", nil)
		if string(p.State.Status) != arg(1) {
			t.Errorf("line %d: run finished %q, want %q (error %q)", lineNo, p.State.Status, arg(1), p.State.Error)
		}
	case "expect-run-get":
		var st engine.RunState
		sc.ed.mustCall("agentd/run/get", map[string]any{"runId": sc.runID}, &st)
		if string(st.Status) != arg(1) {
			t.Errorf("line %d: run/get status %q, want %q", lineNo, st.Status, arg(1))
		}
	case "expect-file":
		got, err := os.ReadFile(filepath.Join(sc.root, arg(1)))
		if err != nil {
			t.Fatalf("line %d: %v", lineNo, err)
		}
		if want := sc.file("want/" + arg(1)); !bytes.Equal(got, want) {
			t.Errorf("line %d: %s on disk =\n%s\nwant\n%s", lineNo, arg(1), got, want)
		}
	case "write-disk":
		// The user changes a file behind the agent's back.
		text, err := strconv.Unquote(arg(2))
		if err != nil {
			t.Fatalf("line %d: %v", lineNo, err)
		}
		if err := os.WriteFile(filepath.Join(sc.root, arg(1)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	case "expect-no-file":
		if _, err := os.Stat(filepath.Join(sc.root, arg(1))); err == nil {
			t.Errorf("line %d: %s exists", lineNo, arg(1))
		}
	case "expect-buffer":
		sc.ed.mustCall("agentd/plan/list", nil, nil) // a round trip: edits are in
		sc.mu.Lock()
		got := sc.buffers[arg(1)]
		sc.mu.Unlock()
		if want := string(sc.file("want/" + arg(1))); got != want {
			t.Errorf("line %d: buffer %s =\n%s\nwant\n%s", lineNo, arg(1), got, want)
		}
	case "snapshot-first":
		var st engine.RunState
		sc.ed.mustCall("agentd/run/get", map[string]any{"runId": sc.runID}, &st)
		if len(st.Snapshots) == 0 {
			t.Fatalf("line %d: the run has no snapshots", lineNo)
		}
		sc.snapshot = st.Snapshots[0]
	case "restore":
		var res RestoreResult
		sc.ed.mustCall("agentd/snapshot/restore", map[string]any{"id": sc.snapshot}, &res)
		var got []string
		for _, c := range res.Conflicts {
			got = append(got, strings.TrimPrefix(c.URI, pathToURI(sc.root)+"/"))
		}
		if want := kv["conflicts"]; strings.Join(got, ",") != want {
			t.Errorf("line %d: restore conflicts %q, want %q (%+v)", lineNo, got, want, res.Conflicts)
		}
		if res.UndoSnapshotID == "" {
			t.Errorf("restore gave no undo snapshot")
		}
	case "undo":
		var res map[string]any
		sc.ed.mustCall("agentd/undo/run", map[string]any{"runId": sc.runID}, &res)
		if res["applied"] != true {
			t.Errorf("line %d: undo not applied: %v", lineNo, res)
		}
	case "expect-pending":
		n, _ := strconv.Atoi(arg(1))
		var list []ChangeSetInfo
		sc.ed.mustCall("agentd/changes/list", map[string]any{"status": "pending"}, &list)
		if len(list) != n {
			t.Errorf("line %d: %d pending change sets, want %d", lineNo, len(list), n)
		}
		if len(list) > 0 {
			sc.changeID = list[0].ID
		}
	case "expect-sets":
		n, _ := strconv.Atoi(arg(2))
		var list []ChangeSetInfo
		sc.ed.mustCall("agentd/changes/list", map[string]any{"status": arg(1)}, &list)
		if len(list) != n {
			t.Errorf("line %d: %d %s change sets, want %d: %+v", lineNo, len(list), arg(1), n, list)
		}
	case "expect-plans":
		n, _ := strconv.Atoi(arg(1))
		var list []PlanSummary
		sc.ed.mustCall("agentd/plan/list", nil, &list)
		if len(list) != n {
			t.Errorf("line %d: %d plans listed, want %d", lineNo, len(list), n)
		}
	case "expect-runs":
		n, _ := strconv.Atoi(arg(1))
		var list []engine.RunState
		sc.ed.mustCall("agentd/run/list", nil, &list)
		if len(list) != n {
			t.Errorf("line %d: %d runs listed, want %d", lineNo, len(list), n)
		}
	default:
		t.Fatalf("line %d: unknown action %q", lineNo, w[0])
	}
}

func versionText(v *int32) string {
	if v == nil {
		return "none"
	}
	return strconv.Itoa(int(*v))
}
