package diff

import "testing"

func TestMerge3Revert(t *testing.T) {
	for _, c := range []struct {
		name, base, ours, theirs, want string
		conflict                       bool
	}{
		// base: the agent's result; theirs: before it; ours: the file now.
		{"line typed just above a changed line", "a\nAGENT\nc\n", "a\nUSER\nAGENT\nc\n", "a\nb\nc\n", "a\nUSER\nb\nc\n", false},
		{"line typed just below", "a\nAGENT\nc\n", "a\nAGENT\nUSER\nc\n", "a\nb\nc\n", "a\nb\nUSER\nc\n", false},
		{"first line typed above", "AGENT\n", "USER\nAGENT\n", "b\n", "USER\nb\n", false},
		{"changed agent line", "a\nAGENT\nc\n", "a\nAGENT2\nc\n", "a\nb\nc\n", "", true},
		{"two insertions at one point", "a\nc\n", "a\nUSER\nc\n", "a\nb\nc\n", "", true},
	} {
		got, conf := Merge3Revert([]byte(c.base), []byte(c.ours), []byte(c.theirs))
		if (len(conf) > 0) != c.conflict || !c.conflict && string(got) != c.want {
			t.Errorf("%s: got %q, conflicts %v", c.name, got, conf)
		}
	}
	// Merge3Adjacent keeps its rule: the insertion above conflicts.
	if _, conf := Merge3Adjacent([]byte("a\nAGENT\nc\n"), []byte("a\nUSER\nAGENT\nc\n"), []byte("a\nb\nc\n")); len(conf) == 0 {
		t.Error("Merge3Adjacent changed")
	}
}
