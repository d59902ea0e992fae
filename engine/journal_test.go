package engine

import (
	"github.com/agentd/agentd/engine/approval"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJournalRecordsRuns(t *testing.T) {
	j, err := OpenJournal(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness()
	e := New(Config{Tools: h.reg, Approver: approval.AllowAll{}, Journal: j})
	st, _ := runPlan(t, e, mkPlan(t, `[{"id":"a","tool":"op","args":{}},{"id":"b","tool":"op","args":{"fail":"boom"},"dependsOn":["a"]}]`), RunOptions{})
	runs, err := j.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].RunID != st.RunID || runs[0].Status != st.Status || runs[0].Summary == "" || len(runs[0].Steps) != 2 {
		t.Fatalf("journal holds %+v; want the final state of %s (%s) with its summary and steps", runs, st.RunID, st.Status)
	}
}

// A run recorded as running by a process that is gone is failed.
func TestJournalRunOfDeadProcess(t *testing.T) {
	j, err := OpenJournal(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dead := journalRun{RunState: RunState{RunID: "r1", Status: RunRunning, StartTime: time.Now()}, PID: 0}
	if err := j.Save("runs/r1.json", dead); err != nil {
		t.Fatal(err)
	}
	live := journalRun{RunState: RunState{RunID: "r2", Status: RunRunning, StartTime: time.Now()}, PID: os.Getpid()}
	if err := j.Save("runs/r2.json", live); err != nil {
		t.Fatal(err)
	}
	// The same process ids, but recorded by other processes that had them
	// before (a daemon restarted in a container gets the same id).
	for id, pid := range map[string]int{"r3": os.Getpid(), "r4": os.Getppid()} {
		reused := journalRun{RunState: RunState{RunID: id, Status: RunPaused, StartTime: time.Now()}, PID: pid, Proc: "another-boot/42"}
		if err := j.Save("runs/"+id+".json", reused); err != nil {
			t.Fatal(err)
		}
	}
	self := journalRun{RunState: RunState{RunID: "r5", Status: RunRunning, StartTime: time.Now()}, PID: os.Getpid(), Proc: selfIdentity()}
	if err := j.Save("runs/r5.json", self); err != nil {
		t.Fatal(err)
	}
	runs, err := j.Runs()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]RunStatus{}
	for _, r := range runs {
		got[r.RunID] = r.Status
	}
	want := map[string]RunStatus{"r1": RunFailed, "r2": RunRunning, "r3": RunFailed, "r5": RunRunning}
	if procIdentity(os.Getppid()) != "" {
		want["r4"] = RunFailed // where the system can tell processes with one id apart
	} else {
		want["r4"] = RunPaused
	}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("run %s is %s; want %s (all: %v)", id, got[id], st, got)
		}
	}
	// Damaged records are left out, not fatal.
	if err := os.WriteFile(filepath.Join(j.Dir(), "runs", "bad.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if runs, err := j.Runs(); err != nil || len(runs) != 5 {
		t.Fatalf("with a damaged record: %d runs, %v", len(runs), err)
	}
}

// A run whose journal cannot be written does not start.
func TestJournalUnwritableRunNotStarted(t *testing.T) {
	j, err := OpenJournal(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(j.Dir(), "runs"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness()
	e := New(Config{Tools: h.reg, Approver: approval.AllowAll{}, Journal: j})
	if _, err := e.Start(t.Context(), mkPlan(t, `[{"id":"a","tool":"op","args":{}}]`), RunOptions{}); err == nil {
		t.Fatal("a run started without a journal record")
	} else if want := filepath.Join(j.Dir(), "runs"); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
}

// A plan's record is at PlanFile, readable (indented, & as it is) and
// read back by Plans; a plan without an id is refused, not hidden.
func TestJournalSavePlan(t *testing.T) {
	j, err := OpenJournal(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := mkPlan(t, `[{"id":"a","tool":"op","args":{"cmd":"a && b"}}]`)
	p.ID = "plan-1"
	if err := j.SavePlan(p); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(j.PlanFile("plan-1"))
	if err != nil {
		t.Fatalf("the plan is not at PlanFile: %v", err)
	}
	if !strings.Contains(string(data), "a && b") || !strings.Contains(string(data), "\n  \"") {
		t.Errorf("the record is not indented JSON with & as it is:\n%s", data)
	}
	if pls, err := j.Plans(); err != nil || len(pls) != 1 || pls[0].ID != "plan-1" {
		t.Errorf("Plans() = %+v, %v", pls, err)
	}
	p.ID = ""
	if err := j.SavePlan(p); err == nil {
		t.Error("a plan without an id was saved")
	}
}

// A step transition that comes within JournalInterval of the last save is
// saved once the interval is over: a run that then sends nothing for long
// (a slow step, a pause) is not recorded behind what it did. Other
// processes (agentd runs, agentd review) read the run from the journal.
func TestJournalSavesTheLastTransitionLater(t *testing.T) {
	j, err := OpenJournal(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness()
	e := New(Config{Tools: h.reg, Approver: approval.AllowAll{}, Journal: j})
	r, err := e.Start(t.Context(), mkPlan(t, `[{"id":"a","tool":"op","args":{}},{"id":"b","tool":"op","args":{"sleep":"60s"},"dependsOn":["a"]}]`), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		r.Cancel()
		r.Wait(t.Context())
	}()
	recorded := func() map[string]StepStatus {
		got := map[string]StepStatus{}
		runs, _ := j.Runs()
		for _, run := range runs {
			for _, s := range run.Steps {
				got[s.ID] = s.Status
			}
		}
		return got
	}
	// Not a timing assertion: a bound on a record that never comes (b
	// sleeps for a minute, sending nothing meanwhile).
	deadline := time.Now().Add(20 * JournalInterval)
	for got := recorded(); got["a"] != StepCompleted || got["b"] != StepRunning; got = recorded() {
		if time.Now().After(deadline) {
			t.Fatalf("the journal holds the steps as %v while the run is at a completed, b running", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
