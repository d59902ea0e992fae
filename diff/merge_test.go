package diff

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestMerge3(t *testing.T) {
	base := "1\n2\n3\n4\n5\n6\n7\n8\n9\n"
	tests := []struct {
		name, ours, theirs, want string
		conflicts                []Conflict
	}{
		{"only ours", "1\nX\n3\n4\n5\n6\n7\n8\n9\n", base, "1\nX\n3\n4\n5\n6\n7\n8\n9\n", nil},
		{"only theirs", base, "1\n2\n3\n4\n5\n6\n7\nY\n9\n", "1\n2\n3\n4\n5\n6\n7\nY\n9\n", nil},
		{"separate regions", "1\nX\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\n5\n6\n7\nY\n9\n", "1\nX\n3\n4\n5\n6\n7\nY\n9\n", nil},
		{"insert and delete apart", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\n5\n6\n7\n8\n", "0\n1\n2\n3\n4\n5\n6\n7\n8\n", nil},
		{"same change once", "1\n2\nS\n4\n5\n6\n7\n8\n9\n", "1\n2\nS\n4\n5\n6\n7\n8\nT\n", "1\n2\nS\n4\n5\n6\n7\n8\nT\n", nil},
		{"conflict", "1\n2\n3\nO\n5\n6\n7\n8\n9\n", "1\n2\n3\nT\n5\n6\n7\n8\n9\n", "1\n2\n3\nO\n5\n6\n7\n8\n9\n",
			[]Conflict{{BaseStart: 4, BaseLines: 1, Ours: "O\n", Theirs: "T\n"}}},
		{"adjoining lines conflict", "1\n2\n3\nO\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nT\n6\n7\n8\n9\n", "1\n2\n3\nO\n5\n6\n7\n8\n9\n",
			[]Conflict{{BaseStart: 4, BaseLines: 2, Ours: "O\n5\n", Theirs: "4\nT\n"}}},
		{"both insert at same place", "1\n2\nO\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\nT\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\nO\n3\n4\n5\n6\n7\n8\n9\n",
			[]Conflict{{BaseStart: 3, BaseLines: 0, Ours: "O\n", Theirs: "T\n"}}},
		{"conflict and clean merge", "O\n2\n3\n4\n5\n6\n7\n8\n9\n", "T\n2\n3\n4\n5\n6\n7\n8\n9\nend\n", "O\n2\n3\n4\n5\n6\n7\n8\n9\nend\n",
			[]Conflict{{BaseStart: 1, BaseLines: 1, Ours: "O\n", Theirs: "T\n"}}},
		// As in git, overlapping changes conflict even when one contains
		// the other.
		{"ours is part of theirs", "1\n2\nS\n4\n5\n6\n7\n8\n9\n", "1\n2\nS\nT\n5\n6\n7\n8\n9\n", "1\n2\nS\n4\n5\n6\n7\n8\n9\n",
			[]Conflict{{BaseStart: 3, BaseLines: 2, Ours: "S\n4\n", Theirs: "S\nT\n"}}},
		{"no newline at end", "1\n2\n3\n4\n5\n6\n7\n8\n9", "X\n2\n3\n4\n5\n6\n7\n8\n9\n", "X\n2\n3\n4\n5\n6\n7\n8\n9", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, conflicts := Merge3([]byte(base), []byte(tc.ours), []byte(tc.theirs))
			if string(got) != tc.want {
				t.Errorf("merged %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(conflicts, tc.conflicts) {
				t.Errorf("conflicts %+v, want %+v", conflicts, tc.conflicts)
			}
		})
	}
}

// TestMerge3Random checks merges of edits to disjoint parts of a file: they
// always merge cleanly into the file with both edits.
func TestMerge3Random(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for c := 0; c < 300; c++ {
		base := splitLines(string(genText(rng, 60, 0, "\n")))
		if len(base) < 10 {
			continue
		}
		cut := 3 + rng.IntN(len(base)-6)
		top := strings.Join(base[:cut-1], "")
		mid := base[cut-1]
		bottom := strings.Join(base[cut:], "")
		topEdit := string(mutate(rng, []byte(top), 0, "\n"))
		bottomEdit := string(mutate(rng, []byte(bottom), 0, "\n"))
		if !strings.HasSuffix(topEdit, "\n") && topEdit != "" {
			topEdit += "\n"
		}
		ours := topEdit + mid + bottom
		theirs := top + mid + bottomEdit
		got, conflicts := Merge3([]byte(top+mid+bottom), []byte(ours), []byte(theirs))
		want := topEdit + mid + bottomEdit
		if len(conflicts) != 0 || string(got) != want {
			// Adjoining changes around the anchor line are conflicts by
			// design; anything else is a bug.
			for _, cf := range conflicts {
				if cf.BaseStart > cut+1 || cf.BaseStart+cf.BaseLines < cut-1 {
					t.Fatalf("case %d: conflict %+v away from the boundary line %d", c, cf, cut)
				}
			}
			if len(conflicts) == 0 {
				t.Fatalf("case %d: merged %q, want %q", c, got, want)
			}
		}
	}
}

// TestMerge3AgainstGit compares Merge3 with `git merge-file` on random
// edits of files whose lines are all distinct (so both diffs agree on the
// alignment): the same files merge cleanly, to the same result, and the
// same ones conflict (git joins nearby conflicts into one, so only their
// presence is compared).
func TestMerge3AgainstGit(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	clean, conflicted := 0, 0
	for c := 0; c < 120; c++ {
		base := genText(rng, 30, 0, "\n")
		ours := mutate(rng, base, 0, "\n")
		theirs := mutate(rng, base, 0, "\n")
		if rng.IntN(4) == 0 {
			theirs = mutate(rng, ours, 0, "\n") // overlapping edits
		}
		paths := []string{filepath.Join(dir, "ours"), filepath.Join(dir, "base"), filepath.Join(dir, "theirs")}
		for i, data := range [][]byte{ours, base, theirs} {
			if err := os.WriteFile(paths[i], data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("git", "merge-file", "-p", paths[0], paths[1], paths[2])
		cmd.Env = gitEnv(t)
		out, err := cmd.Output()
		gitConflicts := 0
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
			gitConflicts = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("git merge-file: %v", err)
		}
		got, conflicts := Merge3(base, ours, theirs)
		if (gitConflicts == 0) != (len(conflicts) == 0) {
			t.Errorf("case %d: git found %d conflicts, Merge3 %d\nbase %q\nours %q\ntheirs %q", c, gitConflicts, len(conflicts), base, ours, theirs)
			continue
		}
		if gitConflicts == 0 && !bytes.Equal(got, out) {
			t.Errorf("case %d: merged %q, git %q", c, got, out)
		}
		if gitConflicts == 0 {
			clean++
		} else {
			conflicted++
		}
	}
	if clean < 10 || conflicted < 10 {
		t.Errorf("weak sample: %d clean merges, %d with conflicts", clean, conflicted)
	}
	t.Logf("%d clean merges, %d with conflicts", clean, conflicted)
}
