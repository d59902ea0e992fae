package diff

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnifiedMatchesGit compares our rendering with git's own for cases
// where the minimal diff is unique, leaving out git's index line.
func TestUnifiedMatchesGit(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"one line", "a\n", "b\n"},
		{"no newline", "a\nb\nc", "a\nb\nd"},
		{"add newline", "a\nb", "a\nb\n"},
		{"middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\nfifteen\n"},
		{"crlf", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"},
		{"to empty", "a\nb\n", ""},
		{"from empty", "", "a\nb\n"},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op, np := filepath.Join(dir, "old"), filepath.Join(dir, "new")
			if err := os.WriteFile(op, []byte(tc.old), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(np, []byte(tc.new), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("git", "diff", "--no-index", "--no-color", "old", "new")
			cmd.Dir = dir
			cmd.Env = gitEnv(t)
			out, _ := cmd.Output()
			want := string(out)
			want = strings.ReplaceAll(want, "a/old", "a/f")
			want = strings.ReplaceAll(want, "b/new", "b/f")
			want = dropLines(want, "index ")
			fd := Compute("f", "f", []byte(tc.old), []byte(tc.new))
			fd.OldMode, fd.NewMode = 0o100644, 0o100644
			if got := Unified(fd); got != want {
				t.Errorf("got\n%s\nwant (git)\n%s", got, want)
			}
		})
	}
}

func dropLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range splitLines(s) {
		if !strings.HasPrefix(l, prefix) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// TestParsePlainDiff reads the output of the real `diff -u` and `diff -ruN`.
func TestParsePlainDiff(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Fatalf("diff (diffutils) is required: %v", err)
	}
	dir := t.TempDir()
	files := map[string][2]string{
		"keep.txt":    {"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ"},
		"gone.txt":    {"x\ny\n", ""},
		"new.txt":     {"", "p\nq\n"},
		"sub/crlf.md": {"1\r\n2\r\n3\r\n", "1\r\n2\r\n3\r\n4\r\n"},
	}
	for name, v := range files {
		if v[0] != "" {
			writeFile(t, filepath.Join(dir, "old", name), []byte(v[0]), 0)
		}
		if v[1] != "" {
			writeFile(t, filepath.Join(dir, "new", name), []byte(v[1]), 0)
		}
	}
	cmd := exec.Command("diff", "-ruN", "old", "new")
	cmd.Dir = dir
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("diff -ruN: %v", err)
	}
	fds, err := Parse(string(out))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, out)
	}
	if len(fds) != len(files) {
		t.Fatalf("Parse found %d files, want %d:\n%s", len(fds), len(files), out)
	}
	for _, fd := range fds {
		// diff -N names both sides; paths keep their old/ and new/ prefixes.
		name := strings.TrimPrefix(fd.NewPath, "new/")
		v, ok := files[name]
		if !ok || !strings.HasPrefix(fd.OldPath, "old/") {
			t.Fatalf("unexpected paths %q %q", fd.OldPath, fd.NewPath)
		}
		got, err := Apply([]byte(v[0]), fd.Hunks)
		if err != nil || string(got) != v[1] {
			t.Errorf("%s: Apply(parsed) = %q, %v; want %q", name, got, err, v[1])
		}
	}
}

func TestParseGitHeaders(t *testing.T) {
	patch := "From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n" +
		"diff --git a/old name.txt b/new name.txt\n" +
		"similarity index 90%\nrename from old name.txt\nrename to new name.txt\n" +
		"--- a/old name.txt\t\n+++ b/new name.txt\t\n@@ -1 +1 @@\n-a\n+b\n" +
		"diff --git a/script.sh b/script.sh\nold mode 100644\nnew mode 100755\n" +
		"diff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\n" +
		"diff --git \"a/t\\tab\\303\\251\" \"b/t\\tab\\303\\251\"\ndeleted file mode 100755\n--- \"a/t\\tab\\303\\251\"\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n" +
		"diff --git a/img.png b/img.png\nindex 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644\nGIT binary patch\nliteral 5\nMcmZ?wbhEMx00>|JxBvhE\n\nliteral 3\nKcmZ?wbaDU%00D0S\n\n" +
		"diff --git a/last.txt b/last.txt\n--- a/last.txt\n+++ b/last.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n-- \n2.39.5\n"
	fds, err := Parse(patch)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		old, new string
		om, nm   uint32
		bin      bool
		hunks    int
	}
	wants := []want{
		{"old name.txt", "new name.txt", 0, 0, false, 1},
		{"script.sh", "script.sh", 0o100644, 0o100755, false, 0},
		{"", "empty", 0, 0o100644, false, 0},
		{"t\tabé", "", 0o100755, 0, false, 1},
		{"img.png", "img.png", 0o100644, 0o100644, true, 0},
		{"last.txt", "last.txt", 0, 0, false, 1},
	}
	if len(fds) != len(wants) {
		t.Fatalf("got %d files, want %d", len(fds), len(wants))
	}
	for i, w := range wants {
		fd := fds[i]
		if fd.OldPath != w.old || fd.NewPath != w.new || fd.OldMode != w.om || fd.NewMode != w.nm || fd.Binary != w.bin || len(fd.Hunks) != w.hunks {
			t.Errorf("file %d: got %q %q %o %o bin=%v hunks=%d, want %+v", i, fd.OldPath, fd.NewPath, fd.OldMode, fd.NewMode, fd.Binary, len(fd.Hunks), w)
		}
	}
	if fds[4].OldOID != strings.Repeat("1", 40) || fds[4].NewOID != strings.Repeat("2", 40) {
		t.Errorf("binary oids %q %q", fds[4].OldOID, fds[4].NewOID)
	}
	// The mail signature after the last hunk is not part of it.
	last := fds[5].Hunks[0]
	if len(last.Lines) != 3 || last.Lines[1].EOL != "" || last.Lines[2].Text != "c" {
		t.Errorf("last hunk lines %#v", last.Lines)
	}
	got, err := Apply([]byte("a\nb"), []Hunk{last})
	if err != nil || string(got) != "a\nc\n" {
		t.Errorf("Apply = %q, %v", got, err)
	}
}

func TestParseTolerant(t *testing.T) {
	// A model-written patch: wrong counts, a blank context line without
	// its leading space, no a/ b/ prefixes.
	patch := "--- f.go\n+++ f.go\n@@ -1,3 +1,3 @@\n package x\n\n-func a() {}\n+func b() {}\n"
	fds, err := Parse(patch)
	if err != nil {
		t.Fatal(err)
	}
	if len(fds) != 1 || fds[0].OldPath != "f.go" || len(fds[0].Hunks) != 1 {
		t.Fatalf("got %+v", fds)
	}
	h := fds[0].Hunks[0]
	if h.OldLines != 3 || h.NewLines != 3 {
		t.Errorf("counts %d,%d", h.OldLines, h.NewLines)
	}
	got, err := Apply([]byte("package x\n\nfunc a() {}\n"), fds[0].Hunks)
	if err != nil || string(got) != "package x\n\nfunc b() {}\n" {
		t.Errorf("Apply = %q, %v", got, err)
	}

	// Header counts too large: the hunk ends where its lines end.
	patch = "--- a/x\n+++ b/x\n@@ -1,9 +1,9 @@\n a\n-b\n+c\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-p\n+q\n"
	fds, err = Parse(patch)
	if err != nil || len(fds) != 2 {
		t.Fatalf("Parse: %v, %d files", err, len(fds))
	}
	if h := fds[0].Hunks[0]; h.OldLines != 2 || h.NewLines != 2 {
		t.Errorf("recounted %d,%d", h.OldLines, h.NewLines)
	}
	if fds[1].OldPath != "y" || fds[1].Hunks[0].Lines[0].Text != "p" {
		t.Errorf("second file %+v", fds[1])
	}

	for _, bad := range []string{
		"@@ -1 +1 @@\n-a\n+b\n",                   // no file header
		"--- a/x\n+++ b/x\n@@ -1 +x @@\n-a\n+b\n", // bad numbers
		"--- a/x\n+++ b/x\n@@ -1 +1\n-a\n+b\n",    // unterminated header
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	if fds, err := Parse("just some text\n"); err != nil || len(fds) != 0 {
		t.Errorf("garbage: %v, %d files", err, len(fds))
	}
}

// TestParseGitOutput parses what git itself prints for a repository with
// renames, mode changes, binary files and deletions.
func TestParseGitOutput(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, nil, "init", "-q", ".")
	writeFile(t, filepath.Join(dir, "a.txt"), []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"), 0)
	writeFile(t, filepath.Join(dir, "b.bin"), []byte("\x00\x01\x02"), 0)
	writeFile(t, filepath.Join(dir, "c.sh"), []byte("echo\n"), 0)
	writeFile(t, filepath.Join(dir, "gone.txt"), []byte("bye\n"), 0)
	git(t, dir, nil, "add", "-A")
	git(t, dir, nil, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
	if err := os.Rename(filepath.Join(dir, "a.txt"), filepath.Join(dir, "moved.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "moved.txt"), []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\nten\n"), 0)
	writeFile(t, filepath.Join(dir, "b.bin"), []byte("\x00\x01\x03"), 0)
	writeFile(t, filepath.Join(dir, "c.sh"), []byte("echo\n"), 0o100755)
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, nil, "add", "-A")
	out := git(t, dir, nil, "diff", "--cached", "-M", "--full-index")
	fds, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	byNew := map[string]*FileDiff{}
	for _, fd := range fds {
		byNew[fd.OldPath+">"+fd.NewPath] = fd
	}
	if fd := byNew["a.txt>moved.txt"]; fd == nil || len(fd.Hunks) != 1 {
		t.Errorf("rename not parsed: %q", out)
	}
	if fd := byNew["b.bin>b.bin"]; fd == nil || !fd.Binary || fd.NewOID == "" {
		t.Errorf("binary not parsed: %q", out)
	}
	if fd := byNew["c.sh>c.sh"]; fd == nil || fd.OldMode != 0o100644 || fd.NewMode != 0o100755 {
		t.Errorf("mode change not parsed: %q", out)
	}
	if fd := byNew["gone.txt>"]; fd == nil || len(fd.Hunks) != 1 {
		t.Errorf("deletion not parsed: %q", out)
	}
	// Rendering the parsed diff again gives an equivalent patch: applying it
	// in reverse to the new tree restores the base.
	var sb strings.Builder
	for _, fd := range fds {
		WriteUnified(&sb, fd)
	}
	var applied bytes.Buffer
	cmd := exec.Command("git", "apply", "--check", "--cached", "-R")
	cmd.Dir = dir
	cmd.Env = gitEnv(t)
	cmd.Stdin = strings.NewReader(sb.String())
	cmd.Stderr = &applied
	if err := cmd.Run(); err != nil {
		t.Errorf("git apply -R --check of re-rendered patch: %v\n%s\n%s", err, applied.String(), sb.String())
	}
}
