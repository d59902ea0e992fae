//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

const keepPrompt = "keep this change? [y]es [n]o, take it out [a]ll remaining [q]uit [e]dit [s]plit [?]help, then Enter:"

// A run with --review after leaves its change set pending; agentd review
// finishes it at the terminal with the run's keys, through the review
// book: s splits it, the first hunk is kept, the second taken out of the
// file again, and the journal records the decisions (a second review finds
// nothing pending).
func TestReviewCommandFinishesPendingChangeSets(t *testing.T) {
	ws, p := twoHunks(t)
	state := t.TempDir()
	if r := agentd(t, "", "run", p, "--workspace", ws, "--state-dir", state, "--review", "after", "--yes", "--no-snapshots"); r.code != 0 {
		t.Fatalf("run --review after: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "f.txt")); !strings.Contains(got, "TWENTY-EIGHT") {
		t.Fatalf("review after did not apply the change:\n%s", got)
	}
	rev := startPTY(t, nil, "review", "--workspace", ws, "--state-dir", state)
	at := rev.waitFor("1 change set pending", 0)
	at = rev.waitFor(keepPrompt, at)
	rev.send("?\n")
	at = rev.waitFor("q  stop here", at)
	at = rev.waitFor(keepPrompt, at)
	rev.send("s\n")
	at = rev.waitFor("apply this hunk (1/2)?", at)
	rev.send("y\n")
	rev.waitFor("apply this hunk (2/2)?", at)
	rev.send("n\n")
	if code := rev.wait(); code != exitOK {
		t.Fatalf("agentd review: exit %d\n%s", code, rev.tail())
	}
	got := readFile(t, filepath.Join(ws, "f.txt"))
	if !strings.Contains(got, "line TWO\n") || strings.Contains(got, "TWENTY-EIGHT") || !strings.Contains(got, "line 28\n") {
		t.Errorf("after y, n on the hunks, f.txt is:\n%s", got)
	}
	id := lastRunID(t, ws, state)
	show := agentd(t, "", "runs", id, "--workspace", ws, "--state-dir", state)
	if !strings.Contains(show.stdout, "partial (review after)") {
		t.Errorf("the journal does not hold the decisions:\n%s", show.stdout)
	}
	again := agentd(t, "", "review", "--workspace", ws, "--state-dir", state)
	if again.code != 0 || !strings.Contains(again.stdout, "no change set is pending") {
		t.Errorf("a second review: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
}

// n takes a whole set applied already out of the files again; q leaves the
// rest pending and says how to come back.
func TestReviewCommandRejectAndQuit(t *testing.T) {
	ws, p := twoHunks(t)
	state := t.TempDir()
	before := readFile(t, filepath.Join(ws, "f.txt"))
	for i := 0; i < 2; i++ {
		if r := agentd(t, "", "run", p, "--workspace", ws, "--state-dir", state, "--review", "after", "--yes", "--no-snapshots"); r.code != 0 {
			t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if i == 0 {
			// The second run needs the original text to edit again.
			if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rev := startPTY(t, nil, "review", "--workspace", ws, "--state-dir", state)
	at := rev.waitFor("2 change sets pending", 0)
	at = rev.waitFor("(1/2, run ", at)
	at = rev.waitFor(keepPrompt, at)
	rev.send("q\n")
	rev.waitFor("2 change sets left pending; review later with: ", at)
	if code := rev.wait(); code != exitOK {
		t.Fatalf("exit %d\n%s", code, rev.tail())
	}
	// The newest run's set: reject it whole; f.txt is back as it was.
	id := lastRunID(t, ws, state)
	rev = startPTY(t, nil, "review", id, "--workspace", ws, "--state-dir", state)
	at = rev.waitFor("1 change set pending", 0)
	rev.waitFor(keepPrompt, at)
	rev.send("n\n")
	rev.waitFor("reason (optional", at)
	rev.send("not now\n")
	if code := rev.wait(); code != exitOK {
		t.Fatalf("exit %d\n%s", code, rev.tail())
	}
	if got := readFile(t, filepath.Join(ws, "f.txt")); got != before {
		t.Errorf("n did not take the change out:\n%s", got)
	}
}

// Another agentd process takes the first hunk out while agentd review is
// asking about the set: the terminal's split decision on its older view is
// refused (nothing done), and the terminal asks again about what is still
// pending, never claiming every set is decided.
func TestReviewCommandAsksAgainAfterADecisionElsewhere(t *testing.T) {
	ws, p := twoHunks(t)
	state := t.TempDir()
	if r := agentd(t, "", "run", p, "--workspace", ws, "--state-dir", state, "--review", "after", "--yes", "--no-snapshots"); r.code != 0 {
		t.Fatalf("run --review after: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rev := startPTY(t, nil, "review", "--workspace", ws, "--state-dir", state)
	at := rev.waitFor(keepPrompt, rev.waitFor("1 change set pending", 0))

	// The other process: a book on the same journal rejects hunk 1 only.
	w, err := workspace.Open(ws, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	j, err := session.OpenJournal(state, w.Root(), nil)
	if err != nil {
		t.Fatal(err)
	}
	other := session.NewBook(j, func(id string, err error) { t.Errorf("recording %s: %v", id, err) })
	if _, err := other.Load(); err != nil {
		t.Fatal(err)
	}
	sets := other.List()
	if len(sets) != 1 {
		t.Fatalf("the journal holds %d sets, want 1", len(sets))
	}
	var first review.Unit
	other.Read(func() { first = sets[0].Units()[0] })
	if _, err := other.Resolve(t.Context(), review.Files{WS: w}, sets[0],
		[]review.Decision{{Path: first.F.Path, HunkID: first.ID(), Action: review.Reject}}, "elsewhere"); err != nil {
		t.Fatal(err)
	}
	other.Close()

	rev.send("s\n")
	at = rev.waitFor("apply this hunk (1/2)?", at)
	rev.send("y\n")
	at = rev.waitFor("apply this hunk (2/2)?", at)
	rev.send("y\n")
	at = rev.waitFor("decided in another agentd process", at)
	at = rev.waitFor(keepPrompt, at) // asked again, about hunk 2 alone
	rev.send("s\n")
	at = rev.waitFor("apply this hunk (1/1)?", at)
	rev.send("y\n")
	rev.waitFor("every pending change set is decided", at)
	if code := rev.wait(); code != exitOK {
		t.Fatalf("agentd review: exit %d\n%s", code, rev.tail())
	}
	got := readFile(t, filepath.Join(ws, "f.txt"))
	if strings.Contains(got, "line TWO") || !strings.Contains(got, "line 2\n") || !strings.Contains(got, "TWENTY-EIGHT") {
		t.Errorf("f.txt after the other process's n and the terminal's y:\n%s", got)
	}
}
