package tools

import (
	"context"
	"os"
	"reflect"
	"sort"
	"testing"
)

// dirNames lists root's entries as the directory spells them.
func dirNames(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// TestMoveFileCaseOnly: a plan's move_file of a.txt to A.txt renames the
// file, and reverting the step brings a.txt back, with the content kept,
// also where the file system ignores case (Windows, macOS): there A.txt
// already "exists" (it is a.txt), which was refused as a move over
// another file, and writing A.txt then removing a.txt would remove the
// one file both names are.
func TestMoveFileCaseOnly(t *testing.T) {
	ctx := context.Background()
	ws, root := newWS(t, map[string]string{"a.txt": "one\n", "b.txt": "b\n"})
	env := &Env{WS: ws}
	res := mustCall(t, env, "move_file", MoveFileArgs{From: "a.txt", To: "A.txt"})
	fc := fileChange(t, res.Changes, "A.txt")
	if fc.OldPath != "a.txt" {
		t.Fatalf("change %+v, want a move from a.txt", fc)
	}
	ar, err := ws.Apply(ctx, res.Changes, nil, nil)
	if err != nil || len(ar.Conflicts) > 0 {
		t.Fatalf("Apply: %v %+v", err, ar)
	}
	if got, want := dirNames(t, root), []string{"A.txt", "b.txt"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the move the workspace has %q, want %q", got, want)
	}
	if got := readDisk(t, root, "A.txt"); got != "one\n" {
		t.Fatalf("A.txt = %q", got)
	}
	rr, err := ws.Revert(ctx, fc, nil, nil)
	if err != nil || len(rr.Conflicts) > 0 {
		t.Fatalf("Revert: %v %+v", err, rr)
	}
	if got, want := dirNames(t, root), []string{"a.txt", "b.txt"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the revert the workspace has %q, want %q", got, want)
	}
	if got := readDisk(t, root, "a.txt"); got != "one\n" {
		t.Fatalf("a.txt = %q after the revert", got)
	}
}
