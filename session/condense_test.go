package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
)

// Over ChatContextTokens the oldest turns are condensed, oldest first,
// until the rest fits; a condensed turn keeps its request, plan, result,
// failed steps, the user's review decisions and its undo, and loses its
// other step lines, its command output and its answer past a few lines;
// the newest turns stay whole; the chat's own turns are not changed, so a
// larger bound gets them whole again.
func TestConversationCondensesTheOldestTurnsVisibly(t *testing.T) {
	old := ChatContextTokens
	defer func() { ChatContextTokens = old }()
	output := strings.Repeat("ok  \tpkg/long/test/output/line\n", 60)
	var c Conversation
	for i := 1; i <= 6; i++ {
		t := &Turn{Request: fmt.Sprintf("request %d", i), PlanTitle: fmt.Sprintf("Plan %d", i),
			PlanSteps: []string{fmt.Sprintf("w%d [write_file] writes f%d.txt", i, i)}, Status: engine.RunPartial,
			Steps:   []string{fmt.Sprintf("step w%d: completed", i), fmt.Sprintf("step t%d: failed: exit status 1", i)},
			Review:  []string{fmt.Sprintf("change cs-%d (step w%d): rejected, the user's reason: keep tabs %d", i, i, i)},
			Failure: fmt.Sprintf("step t%d: failed: exit status 1\nits output (the end):\n%s", i, output), Undone: i == 2}
		c.Turns = append(c.Turns, t)
	}
	c.Turns = append(c.Turns, &Turn{Request: "what now?", Question: true, Answer: strings.Repeat("a line of the answer\n", 20)})

	ChatContextTokens = 1 << 20
	whole := c.Context("in the editor")
	if c.Condensed() != nil || strings.Contains(whole, "condensed") {
		t.Fatalf("a chat within the bound was condensed: %v", c.Condensed())
	}
	ChatContextTokens = len(whole) / 4 / 2
	got := c.Condensed()
	if len(got) == 0 || got[0] != 1 || got[len(got)-1] > len(c.Turns)-keepWhole {
		t.Fatalf("condensed turns %v: want the oldest first, never the newest %d", got, keepWhole)
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("condensed turns %v are not the oldest ones in order", got)
		}
	}
	ctx := c.Context("in the editor")
	if len(ctx) >= len(whole) || !strings.Contains(ctx, "(Turns 1-") || !strings.Contains(ctx, "are condensed to fit") {
		t.Fatalf("the condensing is not said, or nothing was left out:\n%s", ctx)
	}
	for i := 1; i <= 6; i++ {
		for _, keep := range []string{fmt.Sprintf("Turn %d. The user asked: request %d", i, i), fmt.Sprintf("writes f%d.txt", i),
			fmt.Sprintf("keep tabs %d", i), fmt.Sprintf("step t%d: failed", i)} {
			if !strings.Contains(ctx, keep) {
				t.Errorf("condensing left out %q", keep)
			}
		}
	}
	if !strings.Contains(ctx, "The user undid this turn's run") {
		t.Error("condensing left out the undo of turn 2")
	}
	if strings.Contains(ctx, "step w1: completed") || strings.Count(ctx, "its output (the end)") != 6-len(got) {
		t.Errorf("condensed turns kept their step lines or output (%d outputs left, %d turns condensed)", strings.Count(ctx, "its output (the end)"), len(got))
	}
	if c.Turns[0].Failure == "" || len(c.Turns[0].Steps) != 2 {
		t.Error("condensing changed the chat's own turns")
	}
	ChatContextTokens = 1 << 20
	if c.Context("in the editor") != whole {
		t.Error("a larger bound does not give the turns whole again")
	}
}
