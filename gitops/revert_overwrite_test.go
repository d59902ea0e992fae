package gitops

import (
	"strings"
	"testing"
)

// TestRevertOverwriteKeepsTheUsersOtherLines: overwriting a conflict gives
// way only where the user's edit clashes with the agent's lines; a line
// the user typed elsewhere in the same file stays, and the diff shown
// before says exactly that. (A reset of the file to the agent's Before
// would take it, and the safety snapshot would be the only way back.)
func TestRevertOverwriteKeepsTheUsersOtherLines(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f.txt": "a\nb\nc\nd\ne\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r1", "f.txt", text("a\nAGENT\nc\nd\ne\n"))
	putState(t, root, "f.txt", text("a\nAGENT by user\nc\nd\ne\nUSER LINE\n"))

	dry := revertT(t, s, []string{"run/r1"}, RevertOptions{DryRun: true})
	if len(dry.Conflicts) != 1 || strings.Contains(dry.Conflicts[0].Diff, "-USER LINE") || !strings.Contains(dry.Conflicts[0].Diff, "+b") {
		t.Fatalf("the conflict's diff should replace only the clashing line: %+v", dry.Conflicts)
	}
	res := revertT(t, s, []string{"run/r1"}, RevertOptions{OnConflict: OverwriteConflicts})
	if got := readText(t, root, "f.txt"); !res.Applied || got != "a\nb\nc\nd\ne\nUSER LINE\n" {
		t.Fatalf("overwrite wrote %q (%+v)", got, res)
	}
}
