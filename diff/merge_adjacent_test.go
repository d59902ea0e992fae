package diff

import "testing"

// Merge3Adjacent combines changes that only adjoin (an edit of a hunk's
// context line beside the agent's changed line) and still conflicts on
// overlap and on two insertions at one point.
func TestMerge3Adjacent(t *testing.T) {
	base := "1\n2\n3\n4\n5\n6\n7\n8\n9\n"
	tests := []struct {
		name, ours, theirs, want string
		conflict                 bool
	}{
		{"adjoining lines, ours above", "1\n2\n3\nO\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nT\n6\n7\n8\n9\n", "1\n2\n3\nO\nT\n6\n7\n8\n9\n", false},
		{"adjoining lines, ours below", "1\n2\n3\n4\n5\nO\n7\n8\n9\n", "1\n2\n3\n4\nT\n6\n7\n8\n9\n", "1\n2\n3\n4\nT\nO\n7\n8\n9\n", false},
		{"ours inserts after theirs", "1\n2\n3\n4\n5\nnew\n6\n7\n8\n9\n", "1\n2\n3\n4\nT\n6\n7\n8\n9\n", "1\n2\n3\n4\nT\nnew\n6\n7\n8\n9\n", false},
		{"overlap", "1\n2\n3\nO\n5\n6\n7\n8\n9\n", "1\n2\n3\nT\n5\n6\n7\n8\n9\n", "1\n2\n3\nO\n5\n6\n7\n8\n9\n", true},
		{"both insert at same place", "1\n2\nO\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\nT\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\nO\n3\n4\n5\n6\n7\n8\n9\n", true},
		{"separate regions", "1\nX\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\n5\n6\n7\nY\n9\n", "1\nX\n3\n4\n5\n6\n7\nY\n9\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, conflicts := Merge3Adjacent([]byte(base), []byte(tc.ours), []byte(tc.theirs))
			if string(got) != tc.want {
				t.Errorf("merged %q, want %q", got, tc.want)
			}
			if (len(conflicts) > 0) != tc.conflict {
				t.Errorf("conflicts %+v, want conflict=%v", conflicts, tc.conflict)
			}
		})
	}
}

// Merge3Words keeps the user's words beside the agent's within one line
// both changed (a hunk proposed again over the user's typing: issue 35,
// point 1); where both change the same word, theirs wins for the region.
func TestMerge3Words(t *testing.T) {
	base := "a\n\tfmt.Println(x)\nb\n"
	tests := []struct {
		name, ours, theirs, want string
		conflict                 bool
	}{
		{"typed before the changed word", "a\n\t_ = 1; fmt.Println(x)\nb\n", "a\n\tfmt.Println(\"x =\", x)\nb\n", "a\n\t_ = 1; fmt.Println(\"x =\", x)\nb\n", false},
		{"typed after the changed word", "a\n\tfmt.Println(x) // typed\nb\n", "a\n\tfmt.Printf(x)\nb\n", "a\n\tfmt.Printf(x) // typed\nb\n", false},
		{"typed at the start of a replaced word", "a\n\t_ = 1; fmt.Println(x)\nb\n", "a\n\tlog.Println(x)\nb\n", "a\n\t_ = 1; log.Println(x)\nb\n", false},
		{"same word changed", "a\n\tfmt.Println(y)\nb\n", "a\n\tfmt.Println(z)\nb\n", "a\n\tfmt.Println(z)\nb\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, conflicts := Merge3Words([]byte(base), []byte(tc.ours), []byte(tc.theirs))
			if string(got) != tc.want {
				t.Errorf("merged %q, want %q", got, tc.want)
			}
			if (len(conflicts) > 0) != tc.conflict {
				t.Errorf("conflicts %+v, want conflict=%v", conflicts, tc.conflict)
			}
		})
	}
}
