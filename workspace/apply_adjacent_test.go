package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A file the user changed on disk beside a hunk (on a context line) takes
// the hunk at accept, both edits kept: the same rule as the review's
// rebase of an open buffer (review.Rebase), so whether the user typed in
// the editor or saved from elsewhere the hunk behaves the same.
func TestApplyBesideUsersEditOnDisk(t *testing.T) {
	w, root := newWS(t, map[string]string{"f.txt": numbered(20, nil)})
	b := w.Propose(t.Context())
	if err := b.Write("f.txt", []byte(numbered(20, map[int]string{10: "agent ten\n"}))); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	user := numbered(20, map[int]string{9: "user nine\n"})
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := w.Apply(t.Context(), cs, nil, nil)
	if err != nil || len(res.Conflicts) != 0 || !slices.Equal(res.Applied, []string{"f.txt"}) {
		t.Fatalf("Apply = %+v, %v; want f.txt applied beside the user's line", res, err)
	}
	if got, want := diskContent(t, root, "f.txt"), numbered(20, map[int]string{9: "user nine\n", 10: "agent ten\n"}); got != want {
		t.Fatalf("f.txt =\n%s\nwant\n%s", got, want)
	}
}
