//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// What runs is what was shown: the preview names each step's paths and
// command; an edit that breaks the plan (meant to drop the delete step, with
// a typo) never lets r run the plan from before the edit; a good edit is
// shown again and is exactly what runs.
func TestTermRequestRunsOnlyTheShownValidPlan(t *testing.T) {
	const model = `{"title":"Tidy","steps":[
		{"id":"w","tool":"write_file","args":{"path":"new.txt","content":"hi\n"}},
		{"id":"rm","tool":"delete_file","args":{"path":"legacy.txt"},"dependsOn":["w"]},
		{"id":"t","tool":"run_command","args":{"command":"echo checked && true"},"dependsOn":["rm"]}]}`
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: model}, fakemodel.Reply{Text: model})
	modelEnv(t, srv)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "legacy.txt"), []byte("keep me\n"), 0o644)
	state := t.TempDir()
	// The edit drops the delete step but leaves t depending on it (a typo
	// of a step id): the saved plan is invalid.
	bad := filepath.Join(t.TempDir(), "bad.sh")
	os.WriteFile(bad, []byte(`#!/bin/sh
python3 - "$1" <<'PY'
import json,sys
p=json.load(open(sys.argv[1]))
p["steps"]=[s for s in p["steps"] if s["id"]!="rm"]
p["steps"][-1]["dependsOn"]=["rn"]
json.dump(p,open(sys.argv[1],"w"))
PY
`), 0o755)
	r := startPTY(t, []string{"EDITOR=" + bad, "VISUAL="}, "run", "--request", "tidy", "--workspace", ws, "--state-dir", state, "--yes")
	_ = r
	r.wait()
	// --yes ran the model's plan as shown; the preview named each target.
	txt := r.text()
	for _, want := range []string{"1. w [write_file] writes new.txt", "2. rm [delete_file] deletes legacy.txt", "3. t [run_command] $ echo checked && true"} {
		if !strings.Contains(txt, want) {
			t.Errorf("the preview lacks %q:\n%s", want, r.tail())
		}
	}
	os.WriteFile(filepath.Join(ws, "legacy.txt"), []byte("keep me\n"), 0o644)

	r = startPTY(t, []string{"EDITOR=" + bad, "VISUAL="}, "run", "--request", "tidy", "--workspace", ws, "--state-dir", state, "--review", "none")
	at := r.waitFor("[r]un it, [e]dit it in $EDITOR, or [q]uit?", 0)
	r.send("e\n")
	at = r.waitFor(`"rn"`, at)
	at = r.waitFor("the saved plan is not valid: [e]dit it again, or [q]uit?", at)
	r.send("r\n")
	r.waitFor("does not run until they are fixed", at)
	r.send("q\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, r.tail())
	}
	if got := readFile(t, filepath.Join(ws, "legacy.txt")); got != "keep me\n" {
		t.Fatalf("r after an invalid edit ran the old plan: legacy.txt = %q\n%s", got, r.tail())
	}
	if strings.Contains(r.text(), "▶ run ") {
		t.Errorf("a run started after an invalid edit:\n%s", r.tail())
	}
}

// A plan made from a request and edited in $EDITOR at the prompt is kept
// by the one plan store: version 1 with "created from a request", then
// the edit as version 2 with its own history entry, as an editor's edit
// of a plan is.
func TestTermRequestEditIsTheNextVersion(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: `{"title":"Write","steps":[{"id":"w","tool":"write_file","args":{"path":"new.txt","content":"hi\n"}}]}`})
	modelEnv(t, srv)
	ws, state := t.TempDir(), t.TempDir()
	ed := filepath.Join(t.TempDir(), "ed.sh")
	os.WriteFile(ed, []byte(`#!/bin/sh
python3 - "$1" <<'PY'
import json,sys
p=json.load(open(sys.argv[1]))
p["steps"][0]["args"]["content"]="edited\n"
json.dump(p,open(sys.argv[1],"w"))
PY
`), 0o755)
	r := startPTY(t, []string{"EDITOR=" + ed, "VISUAL="}, "run", "--request", "write it", "--workspace", ws, "--state-dir", state, "--review", "none")
	at := r.waitFor("[r]un it, [e]dit it in $EDITOR, or [q]uit?", 0)
	r.send("e\n")
	r.waitFor("[r]un it, [e]dit it in $EDITOR, or [q]uit?", at)
	r.send("q\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, r.tail())
	}
	files, _ := filepath.Glob(filepath.Join(state, "workspaces", "*", "journal", "plans", "*.json"))
	if len(files) != 1 {
		t.Fatalf("plan files %v, want one", files)
	}
	var p struct {
		Version int
		History []struct {
			Version        int
			Source, Reason string
		}
		Steps []struct{ Args map[string]any }
	}
	data := readFile(t, files[0])
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		t.Fatal(err)
	}
	if p.Version != 2 || len(p.History) != 2 || p.History[0].Reason != "created from a request" || p.History[1].Source != "user" ||
		p.History[1].Version != 2 || p.Steps[0].Args["content"] != "edited\n" {
		t.Errorf("the kept plan after an edit:\n%s", data)
	}
}
