package rpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/plans"
	wire "github.com/agentd/agentd/protocol"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// "Restore to before this turn" on the wire (agentd/chat/restore): a dry
// run shows each file's diff, the conflicts and the turns, and changes
// nothing; files and conversation together take back the runs of turns
// 1-2 as one undo (the user's line typed in between stays), mark them
// undone and rewound (chat/load shows it; turn 3's planner is told turn 0
// alone); the way back (agentd/undo/restore with the undoId, then
// agentd/chat/unrewind) brings the files and the turns back exactly; a
// turn out of range, a wrong "what" and an unknown rewind are refused by
// field.
func TestChatRestoreOnTheWire(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	a := filepath.Join(ws, "a.txt")
	os.WriteFile(a, []byte("top\nzero\nbottom\n"), 0o644)
	pm := &scriptedPlanMaker{plans: []string{
		`{"title":"One","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"top\none\nbottom\n"}}]}`,
		`{"title":"Two","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"top\ntwo\nbottom\n"}}]}`,
		`{"title":"Three","steps":[{"id":"w","tool":"write_file","args":{"path":"b.txt","content":"three\n"}}]}`,
	}}
	ed := chatEditor(t, state, ws, pm)
	var made struct {
		ChatID string `json:"chatId"`
	}
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)
	chat := made.ChatID
	var runs []string
	for i, req := range []string{"write one", "write two", "write three"} {
		var p plans.Plan
		ed.mustCall("agentd/plan/create", map[string]any{"request": req, "chatId": chat}, &p)
		v := runTurn(t, ed, chat, p.ID)
		runs = append(runs, v.Turns[i].RunID)
		if i == 1 {
			// The user's own line, typed after turn 1's run.
			os.WriteFile(a, []byte("top\ntwo\nbottom\nmine\n"), 0o644)
		}
	}
	before := readFile(t, a)

	// The dry run: nothing changes; the diffs and turns are said.
	var dry wire.ChatRestoreResult
	ed.mustCall("agentd/chat/restore", map[string]any{"chatId": chat, "turn": 1, "what": "both", "dryRun": true}, &dry)
	if !dry.Applied || !dry.DryRun || dry.Files == nil || dry.Conversation == nil || dry.Conversation.RewindID != "" {
		t.Fatalf("dry run: %+v", dry)
	}
	if got := strings.Join(dry.Files.Runs, " "); got != runs[2]+" "+runs[1] {
		t.Errorf("dry run's runs %q, want turn 2's then turn 1's: %s %s", got, runs[2], runs[1])
	}
	diffs := map[string]string{}
	for _, d := range dry.Files.Diffs {
		diffs[d.Path] = d.Diff
	}
	if len(diffs) != 2 || !strings.Contains(diffs["a.txt"], "-two") || !strings.Contains(diffs["a.txt"], "+one") || !strings.Contains(diffs["b.txt"], "-three") {
		t.Errorf("dry run's diffs: %+v", dry.Files.Diffs)
	}
	if len(dry.Conversation.Turns) != 2 || dry.Conversation.Turns[0] != 1 || dry.Files.UndoID != "" {
		t.Errorf("dry run's turns: %+v %+v", dry.Conversation, dry.Files)
	}
	if readFile(t, a) != before {
		t.Fatal("the dry run changed a.txt")
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err != nil {
		t.Fatal("the dry run removed b.txt")
	}

	// The restore.
	var res wire.ChatRestoreResult
	ed.mustCall("agentd/chat/restore", map[string]any{"chatId": chat, "turn": 1, "what": "both"}, &res)
	if !res.Applied || res.Files.UndoID == "" || res.Files.WayBack == nil || res.Files.WayBack.Method != "agentd/undo/restore" ||
		res.Conversation.RewindID == "" || res.Conversation.WayBack == nil || res.Conversation.WayBack.Method != "agentd/chat/unrewind" {
		t.Fatalf("restore: %+v %+v %+v", res, res.Files, res.Conversation)
	}
	if got := readFile(t, a); got != "top\none\nbottom\nmine\n" {
		t.Errorf("a.txt after the restore to before turn 1: %q (turn 0's line and the user's line stay)", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt, made by turn 2, is still there: %v", err)
	}
	var v ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &v)
	for i, tr := range v.Turns {
		back := i >= 1
		if tr.Undone != back || tr.Rewound != back || (back && tr.RewindID != res.Conversation.RewindID) {
			t.Errorf("turn %d after the restore: undone %v rewound %v %q", i, tr.Undone, tr.Rewound, tr.RewindID)
		}
	}
	var runList []struct {
		RunID  string          `json:"runId"`
		Undone json.RawMessage `json:"undone"`
	}
	ed.mustCall("agentd/run/list", map[string]any{}, &runList)
	for _, r := range runList {
		if undone := len(r.Undone) > 0 && string(r.Undone) != "null"; undone != (r.RunID != runs[0]) {
			t.Errorf("run/list: run %s undone %s", r.RunID, r.Undone)
		}
	}
	// The next turn's planner is told turn 0 and none of the rewound.
	var p4 plans.Plan
	ed.mustCall("agentd/plan/create", map[string]any{"request": "write four", "chatId": chat}, &p4)
	asked := pm.asked(3)
	if !strings.Contains(asked, "write one") || strings.Contains(asked, "write two") || strings.Contains(asked, "write three") {
		t.Errorf("after the rewind, turn 4's planner was asked:\n%s", asked)
	}

	// The way back: the files, then the turns.
	var back UndoRestoreResult
	ed.mustCall(res.Files.WayBack.Method, res.Files.WayBack.Params, &back)
	if !back.Applied || readFile(t, a) != before {
		t.Errorf("after undoing the restore, a.txt is %q, want %q (%+v)", readFile(t, a), before, back)
	}
	if got := readFile(t, filepath.Join(ws, "b.txt")); got != "three\n" {
		t.Errorf("b.txt after undoing the restore: %q", got)
	}
	var un wire.ChatUnrewindResult
	ed.mustCall(res.Conversation.WayBack.Method, res.Conversation.WayBack.Params, &un)
	if len(un.Turns) != 2 || un.Turns[0] != 1 || un.Turns[1] != 2 {
		t.Errorf("unrewind: %+v", un)
	}
	var v2 ChatView // afresh: a field left out is not decoded over the old one
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &v2)
	for i, tr := range v2.Turns {
		if tr.Undone || tr.Rewound {
			t.Errorf("turn %d after the way back: undone %v rewound %v", i, tr.Undone, tr.Rewound)
		}
	}

	// Refusals, by field.
	for _, c := range []struct {
		params map[string]any
		field  string
	}{
		{map[string]any{"chatId": chat, "turn": 9, "what": "files"}, "turn"},
		{map[string]any{"chatId": chat, "turn": 0, "what": "everything"}, "what"},
		{map[string]any{"chatId": chat, "turn": 0, "what": "files", "onConflict": "maybe"}, "onConflict"},
		{map[string]any{"turn": 0, "what": "files"}, "chatId"},
	} {
		err := ed.call("agentd/chat/restore", c.params, nil)
		if errCode(err) != -32602 || !strings.Contains(err.Error(), c.field) {
			t.Errorf("chat/restore %v: %v, want -32602 naming %s", c.params, err, c.field)
		}
	}
	if err := ed.call("agentd/chat/unrewind", map[string]any{"chatId": chat, "rewindId": res.Conversation.RewindID}, nil); errCode(err) != CodeNotFound {
		t.Errorf("unrewind of a rewind brought back already: %v, want -32003", err)
	}
}

// "Branch from an edited message" on the wire (agentd/chat/fork): the new
// chat holds copies of the turns before the one edited, forkedFrom says
// where it branched; the original is unchanged but for its branches
// (chat/load), stays listed; the edited request sent next to the branch
// (plan/create) is planned with the turns before told and the replaced
// turn not; no file is touched; a deleted branch leaves the list.
func TestChatForkOnTheWire(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	pm := &scriptedPlanMaker{plans: []string{
		`{"title":"One","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`,
		`{"title":"Two","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"two\n"}}]}`,
	}}
	ed := chatEditor(t, state, ws, pm)
	var made struct {
		ChatID string `json:"chatId"`
	}
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)
	chat := made.ChatID
	for _, req := range []string{"write one", "write two"} {
		var p plans.Plan
		ed.mustCall("agentd/plan/create", map[string]any{"request": req, "chatId": chat}, &p)
		runTurn(t, ed, chat, p.ID)
	}
	var orig ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &orig)

	var fork wire.ChatForkResult
	ed.mustCall("agentd/chat/fork", map[string]any{"chatId": chat, "turn": 1, "request": "write deux"}, &fork)
	if fork.ChatID == chat || fork.Turns != 1 || fork.ForkedFrom == nil || fork.ForkedFrom.ChatID != chat || fork.ForkedFrom.Turn != 1 ||
		fork.Request != "write deux" || fork.Title != orig.Title {
		t.Fatalf("chat/fork: %+v", fork)
	}
	if got := readFile(t, filepath.Join(ws, "a.txt")); got != "two\n" {
		t.Errorf("the fork touched a.txt: %q", got)
	}
	var o ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &o)
	if len(o.Turns) != 2 || len(o.Branches) != 1 || o.Branches[0].ChatID != fork.ChatID || o.Branches[0].Turn != 1 || o.ForkedFrom != nil {
		t.Fatalf("the original after the fork: %d turns, branches %+v", len(o.Turns), o.Branches)
	}
	var f ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": fork.ChatID}, &f)
	if len(f.Turns) != 1 || f.Turns[0].Request != "write one" || f.Turns[0].RunID != orig.Turns[0].RunID || f.ForkedFrom == nil {
		t.Fatalf("the branch: %+v", f)
	}
	var list struct {
		Chats []struct {
			ChatID     string          `json:"chatId"`
			ForkedFrom json.RawMessage `json:"forkedFrom"`
		} `json:"chats"`
	}
	ed.mustCall("agentd/chat/list", map[string]any{}, &list)
	if len(list.Chats) != 2 {
		t.Fatalf("chat/list after the fork: %+v", list.Chats)
	}
	// The edited request, sent to the branch: turn 0 told, the replaced
	// turn not.
	var p plans.Plan
	ed.mustCall("agentd/plan/create", map[string]any{"request": fork.Request, "chatId": fork.ChatID}, &p)
	asked := pm.asked(2)
	if !strings.Contains(asked, "Turn 1. The user asked: write one") || strings.Contains(asked, "write two") || !strings.HasSuffix(asked, "write deux") {
		t.Errorf("the branch's planner was asked:\n%s", asked)
	}
	var o2 ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &o2)
	if len(o2.Turns) != 2 {
		t.Errorf("the branch's turn reached the original: %d turns", len(o.Turns))
	}

	for _, c := range []map[string]any{{"chatId": chat, "turn": 3}, {"chatId": chat, "turn": -1}} {
		if err := ed.call("agentd/chat/fork", c, nil); errCode(err) != -32602 || !strings.Contains(err.Error(), "turn") {
			t.Errorf("chat/fork %v: %v, want -32602 naming turn", c, err)
		}
	}
	ed.mustCall("agentd/chat/delete", map[string]any{"chatId": fork.ChatID}, nil)
	var o3 ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &o3)
	if len(o3.Branches) != 0 {
		t.Errorf("a deleted branch is still listed: %+v", o3.Branches)
	}
}
