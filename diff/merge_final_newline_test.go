package diff

import "testing"

// TestMerge3RevertFinalNewline: an editor that adds (or drops) the line
// break at the end of a file the agent wrote makes no conflict when the
// agent's change is taken back; the file keeps the editor's final
// newline state. A real edit of the agent's last line still conflicts.
func TestMerge3RevertFinalNewline(t *testing.T) {
	for _, tc := range []struct {
		name               string
		base, ours, theirs string // after, now, before
		want               string
		conflict           bool
	}{
		{name: "newline added to the agent's last line", base: "one\ntwo", ours: "one\ntwo\n", theirs: "one\n", want: "one\n"},
		{name: "before had none: it gets the editor's", base: "one\ntwo", ours: "one\ntwo\n", theirs: "one", want: "one\n"},
		{name: "CRLF added", base: "a\r\nb", ours: "a\r\nb\r\n", theirs: "a\r\nx", want: "a\r\nx\r\n"},
		{name: "newline dropped", base: "a\nb\n", ours: "a\nb", theirs: "a\nc\n", want: "a\nc"},
		{name: "user line and newline", base: "a\nb\nc", ours: "A\nb\nc\n", theirs: "a\nb\nC", want: "A\nb\nC\n"},
		{name: "empty before stays empty", base: "x", ours: "x\n", theirs: "", want: ""},
		{name: "the user changed the last line", base: "a\nb", ours: "a\nB\n", theirs: "a\nc", conflict: true, want: "a\nB\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, conflicts := Merge3Revert([]byte(tc.base), []byte(tc.ours), []byte(tc.theirs))
			if string(got) != tc.want || (len(conflicts) > 0) != tc.conflict {
				t.Errorf("Merge3Revert(%q, %q, %q) = %q, %d conflicts; want %q, conflict %v", tc.base, tc.ours, tc.theirs, got, len(conflicts), tc.want, tc.conflict)
			}
			if _, conflicts := Merge3RevertTheirs([]byte(tc.base), []byte(tc.ours), []byte(tc.theirs)); (len(conflicts) > 0) != tc.conflict {
				t.Errorf("Merge3RevertTheirs: %d conflicts; want conflict %v", len(conflicts), tc.conflict)
			}
		})
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"x", "x\n", true}, {"x\n", "x", true}, {"x", "x\r\n", true}, {"x\n", "x\n\n", false},
		{"", "\n", false}, {"x", "x", false}, {"x", "y\n", false}, {"x", "x\n\n", false},
	} {
		if got := FinalNewlineOnly([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("FinalNewlineOnly(%q, %q) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
