package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

func openWS(t *testing.T) (*workspace.Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatalf("workspace.Open: %v (the workspace package must be implemented for this test)", err)
	}
	return ws, ws.Root()
}

// openWSWith opens a workspace holding files (path -> content), closed at
// the test's end.
func openWSWith(t *testing.T, files map[string]string) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func fileIs(t *testing.T, root, rel, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if want == "" {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%q, %v); want it absent", rel, b, err)
		}
		return
	}
	if err != nil || string(b) != want {
		t.Errorf("%s = %q, %v; want %q", rel, b, err, want)
	}
}

func TestSchedReviewModes(t *testing.T) {
	plan := `[
		{"id":"w","tool":"write","args":{"write":"a.txt"}},
		{"id":"c","tool":"cmd","args":{"command":"make"},"dependsOn":["w"]}
	]`
	t.Run("none", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			snaps := &fakeSnaps{}
			e := New(Config{Tools: h.reg, WS: ws, Approver: approval.AllowAll{}, Snapshots: snaps})
			st, rec := runPlan(t, e, mkPlan(t, plan), RunOptions{Review: ReviewNone})
			if st.Status != RunCompleted {
				t.Fatalf("%s %s", st.Status, st.Error)
			}
			fileIs(t, root, "a.txt", "written by w\n")
			w := stepState(t, st, "w")
			if len(w.ChangeIDs) != 1 || w.SnapshotID != "snap2" || len(st.Snapshots) != 4 || st.Snapshots[0] != "snap1" {
				t.Errorf("changes %v snapshot %q snapshots %v", w.ChangeIDs, w.SnapshotID, st.Snapshots)
			}
			if len(st.FilesChanged) != 1 || st.FilesChanged[0] != "a.txt" {
				t.Errorf("files changed %v", st.FilesChanged)
			}
			if ev := rec.of(EventSnapshotTaken); len(ev) != 3 || ev[1].SnapshotID != "snap2" || ev[1].StepID != "w" {
				t.Errorf("snapshot events %+v", ev)
			}
			if snaps.reqs[1].StepID != "w" || snaps.reqs[0].Label != "run start" {
				t.Errorf("snapshot requests %+v", snaps.reqs)
			}
			// A command may change any file: it gets a snapshot too, and one
			// when it starts, so that only what changed while it ran is its.
			if stepState(t, st, "c").SnapshotID != "snap4" {
				t.Errorf("the command step's snapshot is %q, want snap4", stepState(t, st, "c").SnapshotID)
			}
			// Each step's snapshot is limited to what it changed.
			wantLimits := []*gitops.SnapshotLimit{nil,
				{Base: "snap1", Paths: []string{"a.txt"}},
				{Base: "snap2"},
				{Base: "snap3", ChangedOnDisk: true}}
			for i, want := range wantLimits {
				if got := snaps.reqs[i].Limit; !reflect.DeepEqual(got, want) {
					t.Errorf("snapshot %d (%s): limit %+v, want %+v", i+1, snaps.reqs[i].Label, got, want)
				}
			}
		})
	})
	t.Run("after", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			rv := &fakeReviewer{}
			g := &gatedApprover{}
			e := New(Config{Tools: h.reg, WS: ws, Approver: g, Reviewer: rv})
			st, _ := runPlan(t, e, mkPlan(t, plan), RunOptions{Review: ReviewAfter})
			if st.Status != RunCompleted {
				t.Fatalf("%s %s", st.Status, st.Error)
			}
			if len(g.reqs) != 2 || g.reqs[0].ChangeID != stepState(t, st, "w").ChangeIDs[0] ||
				!strings.Contains(g.reqs[0].Detail, "create a.txt") || g.reqs[1].Command != "make" {
				t.Errorf("approval requests %+v", g.reqs)
			}
			fileIs(t, root, "a.txt", "written by w\n")
			if len(rv.after) != 1 || rv.after[0].ID != stepState(t, st, "w").ChangeIDs[0] || len(rv.before) != 0 {
				t.Errorf("offered %d, reviewed before %d", len(rv.after), len(rv.before))
			}
		})
	})
	t.Run("before", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			rv := &fakeReviewer{outcome: func(cs *workspace.ChangeSet) *ReviewOutcome {
				return &ReviewOutcome{Rejected: []HunkRejection{{Path: "a.txt", Reason: "not wanted"}}}
			}}
			// No Approver: in before mode the review is the question, so the
			// write is not denied by the headless approver.
			e := New(Config{Tools: h.reg, WS: ws, Reviewer: rv, Approval: &approval.ApprovalPolicy{Command: approval.PolicyAllow}})
			st, _ := runPlan(t, e, mkPlan(t, plan), RunOptions{})
			// The user rejected w's whole change: w is skipped with the
			// reason "change rejected", and the run is partial.
			if st.Status != RunPartial {
				t.Fatalf("%s %s", st.Status, st.Error)
			}
			w := stepState(t, st, "w")
			if w.Status != StepSkipped || w.Reason != RejectedReason+": not wanted" {
				t.Errorf("w is %s (%q), want skipped (change rejected: not wanted)", w.Status, w.Reason)
			}
			if len(w.ChangeIDs) != 1 || len(w.RejectedChangeIDs) != 1 || w.RejectedChangeIDs[0] != w.ChangeIDs[0] {
				t.Errorf("change ids %v, rejected %v", w.ChangeIDs, w.RejectedChangeIDs)
			}
			if !strings.Contains(st.Summary, "Rejected change sets (not applied): `"+w.ChangeIDs[0]+"`") || strings.Contains(st.Summary, "\nChange sets:") {
				t.Errorf("the summary does not list the change as rejected:\n%s", st.Summary)
			}
			fileIs(t, root, "a.txt", "")
			if len(rv.before) != 1 {
				t.Fatalf("reviews %d (review defaults to before with a Reviewer)", len(rv.before))
			}
			if out := string(stepState(t, st, "w").Output); !strings.Contains(out, `"review"`) || !strings.Contains(out, "not wanted") {
				t.Errorf("output lacks the review outcome: %s", out)
			}
		})
	})
	t.Run("before partly", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, _ := openWS(t)
			h := newHarness()
			rv := &fakeReviewer{outcome: func(cs *workspace.ChangeSet) *ReviewOutcome {
				return &ReviewOutcome{Applied: []string{"h1"}, Rejected: []HunkRejection{{Path: "a.txt", HunkID: "h2"}}}
			}}
			e := New(Config{Tools: h.reg, WS: ws, Reviewer: rv, Approval: &approval.ApprovalPolicy{Command: approval.PolicyAllow}})
			st, _ := runPlan(t, e, mkPlan(t, plan), RunOptions{})
			// Some hunks applied: the step did part of its work; it is
			// completed, and the summary says the change was partly applied,
			// never lists it as simply done.
			w := stepState(t, st, "w")
			if w.Status != StepCompleted || w.Reason != "change partly applied: 1 of 2 hunk(s) rejected" {
				t.Errorf("w is %s (%q), want completed with the partly-applied note", w.Status, w.Reason)
			}
			if len(w.ChangeIDs) != 1 || !reflect.DeepEqual(w.PartlyRejectedChangeIDs, w.ChangeIDs) || len(w.RejectedChangeIDs) != 0 {
				t.Errorf("change ids %v, partly rejected %v, rejected %v", w.ChangeIDs, w.PartlyRejectedChangeIDs, w.RejectedChangeIDs)
			}
			if !strings.Contains(st.Summary, "Partly applied change sets (some hunks rejected; see the step's note): `"+w.ChangeIDs[0]+"`") ||
				strings.Contains(st.Summary, "\nChange sets:") || !strings.Contains(st.Summary, "| w | completed | 1 |") {
				t.Errorf("the summary does not list the change as partly applied:\n%s", st.Summary)
			}
		})
	})
	t.Run("before stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			rv := &stoppedReviewer{}
			e := New(Config{Tools: h.reg, WS: ws, Reviewer: rv, Approval: &approval.ApprovalPolicy{Command: approval.PolicyAllow}})
			st, _ := runPlan(t, e, mkPlan(t, plan), RunOptions{})
			// The review ended without a decision (the run was stopped at
			// the prompt): the change set is listed as not applied.
			w := stepState(t, st, "w")
			if len(w.ChangeIDs) != 1 || !reflect.DeepEqual(w.UnappliedChangeIDs, w.ChangeIDs) {
				t.Errorf("change ids %v, unapplied %v", w.ChangeIDs, w.UnappliedChangeIDs)
			}
			if !strings.Contains(st.Summary, "Change sets not applied (the run stopped before they were decided, or applying them failed): `"+w.ChangeIDs[0]+"`") ||
				strings.Contains(st.Summary, "\nChange sets:") {
				t.Errorf("the summary does not list the change as not applied:\n%s", st.Summary)
			}
			fileIs(t, root, "a.txt", "")
		})
	})
	t.Run("approval denied", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			e := New(Config{Tools: h.reg, WS: ws, Reviewer: &fakeReviewer{}, Approver: denyApprover{}, Approval: &approval.ApprovalPolicy{Write: approval.PolicyAsk, Command: approval.PolicyAllow}})
			st, _ := runPlan(t, e, mkPlan(t, plan), RunOptions{Review: ReviewAfter})
			// Denying the write is rejecting its change set.
			w := stepState(t, st, "w")
			if st.Status != RunPartial || w.Status != StepSkipped || len(w.ChangeIDs) != 1 || !reflect.DeepEqual(w.RejectedChangeIDs, w.ChangeIDs) {
				t.Errorf("run %s, w %s, change ids %v, rejected %v", st.Status, w.Status, w.ChangeIDs, w.RejectedChangeIDs)
			}
			if !strings.Contains(st.Summary, "Rejected change sets (not applied): `"+w.ChangeIDs[0]+"`") || strings.Contains(st.Summary, "\nChange sets:") {
				t.Errorf("the summary does not list the denied change as rejected:\n%s", st.Summary)
			}
			fileIs(t, root, "a.txt", "")
		})
	})
	t.Run("before accepts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			rv := &fakeReviewer{outcome: func(cs *workspace.ChangeSet) *ReviewOutcome {
				// A front end applies what the user accepted.
				ar, err := ws.Apply(context.Background(), cs, func(*workspace.FileChange, diff.Hunk) bool { return true }, nil)
				if err != nil {
					return &ReviewOutcome{}
				}
				return &ReviewOutcome{Applied: ar.Applied}
			}}
			snaps := &fakeSnaps{}
			e := New(Config{Tools: h.reg, WS: ws, Reviewer: rv, Approver: approval.AllowAll{}, Snapshots: snaps})
			st, _ := runPlan(t, e, mkPlan(t, plan), RunOptions{Review: ReviewBefore})
			fileIs(t, root, "a.txt", "written by w\n")
			if stepState(t, st, "w").SnapshotID == "" || len(st.FilesChanged) != 1 {
				t.Errorf("snapshot %q files %v", stepState(t, st, "w").SnapshotID, st.FilesChanged)
			}
		})
	})
	t.Run("before aborted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, _ := openWS(t)
			h := newHarness()
			rv := &fakeReviewer{outcome: func(cs *workspace.ChangeSet) *ReviewOutcome { return &ReviewOutcome{Aborted: true} }}
			e := New(Config{Tools: h.reg, WS: ws, Reviewer: rv, Approver: approval.AllowAll{}})
			st, _ := runPlan(t, e, mkPlan(t, plan), RunOptions{Review: ReviewBefore})
			if st.Status != RunCancelled || h.callCount("c") != 0 {
				t.Errorf("status %s, c ran %d", st.Status, h.callCount("c"))
			}
			wantStatus(t, st, map[string]StepStatus{"c": StepCancelled})
		})
	})
	t.Run("before without reviewer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			st, _ := runPlan(t, New(Config{Tools: h.reg, WS: ws}), mkPlan(t, plan), RunOptions{Review: ReviewBefore})
			if e := stepState(t, st, "w").Error; !strings.Contains(e, "needs a front end") {
				t.Errorf("w error %q", e)
			}
			fileIs(t, root, "a.txt", "")
		})
	})
	t.Run("headless write needs approval", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			st, _ := runPlan(t, New(Config{Tools: h.reg, WS: ws}), mkPlan(t, plan), RunOptions{Review: ReviewNone})
			wantStatus(t, st, map[string]StepStatus{"w": StepSkipped, "c": StepBlocked})
			fileIs(t, root, "a.txt", "")
			if len(stepState(t, st, "w").ChangeIDs) != 1 {
				t.Error("the proposed change should still be recorded")
			}
		})
	})
	t.Run("dry run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ws, root := openWS(t)
			h := newHarness()
			snaps := &fakeSnaps{}
			e := New(Config{Tools: h.reg, WS: ws, Snapshots: snaps})
			r, err := e.Start(t.Context(), mkPlan(t, plan), RunOptions{Review: ReviewNone, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := r.Wait(t.Context())
			if st.Status != RunCompleted {
				t.Fatalf("%s %s", st.Status, st.Error)
			}
			fileIs(t, root, "a.txt", "")
			if h.callCount("c") != 0 {
				t.Error("command executed in a dry run")
			}
			w := stepState(t, st, "w")
			if len(w.ChangeIDs) != 1 || !strings.Contains(string(w.Output), `"dryRun":true`) || !strings.Contains(string(w.Output), "a.txt") {
				t.Errorf("w: %v %s", w.ChangeIDs, w.Output)
			}
			if cs, ok := r.Change(w.ChangeIDs[0]); !ok || cs.Files[0].Path != "a.txt" {
				t.Error("Run.Change does not return the proposed change set")
			}
			if !strings.Contains(string(stepState(t, st, "c").Output), `"executed":false`) {
				t.Errorf("c output %s", stepState(t, st, "c").Output)
			}
			if len(st.Snapshots) != 1 {
				t.Errorf("snapshots %v; a dry run changes nothing", st.Snapshots)
			}
		})
	})
}

func TestSchedRollbackOnFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ws, _ := openWS(t)
		h := newHarness()
		snaps := &fakeSnaps{}
		e := New(Config{Tools: h.reg, WS: ws, Approver: approval.AllowAll{}, Snapshots: snaps})
		p := mkPlan(t, `[
			{"id":"w","tool":"write","args":{"write":"a.txt"}},
			{"id":"bad","tool":"op","args":{"fail":"boom"},"dependsOn":["w"]}
		]`)
		st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone, RollbackOnFailure: true})
		if st.Status != RunFailed {
			t.Fatal(st.Status)
		}
		if len(snaps.restores) != 1 || snaps.restores[0].SnapshotID != "snap1" || snaps.restores[0].Overwrite {
			t.Fatalf("restores %+v", snaps.restores)
		}
		if st.Rollback == nil || st.Rollback.Conflicts[0] != "user.txt" || !strings.Contains(st.Summary, "Rollback") || !strings.Contains(st.Summary, "user.txt") {
			t.Errorf("rollback %+v\n%s", st.Rollback, st.Summary)
		}
		// Not asked: no rollback.
		snaps2 := &fakeSnaps{}
		runPlan(t, New(Config{Tools: h.reg, WS: ws, Approver: approval.AllowAll{}, Snapshots: snaps2}), p, RunOptions{Review: ReviewNone})
		if len(snaps2.restores) != 0 {
			t.Error("rolled back without rollbackOnFailure")
		}
		// A start snapshot that fails stops the run from starting.
		_, err := New(Config{Tools: h.reg, Snapshots: &fakeSnaps{fail: errors.New("disk full")}}).Start(t.Context(), p, RunOptions{})
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("start with failing snapshots: %v", err)
		}
	})
}

// stoppedReviewer is a review that ends without a decision: the run was
// stopped while the prompt was up.
type stoppedReviewer struct{}

func (stoppedReviewer) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*ReviewOutcome, error) {
	return nil, context.Canceled
}

func (stoppedReviewer) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error { return nil }
