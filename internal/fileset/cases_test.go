package fileset

import (
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// Named edge cases of git's ignore rules, each a small tree checked against
// the git CLI and against the expectation written here (so a case also
// documents what git does).
func TestIgnoreEdgeCases(t *testing.T) {
	env := newGitEnv(t)
	for _, tc := range []struct {
		name    string
		files   map[string]string // path -> content ("" for plain files)
		exclude string            // .git/info/exclude
		global  string            // global excludes file (default location)
		track   []string          // git add -f
		want    []string
	}{
		{
			name:  "negation cannot re-include below an excluded directory",
			files: map[string]string{".gitignore": "build/\n!build/keep\n", "build/keep": "", "build/gen": "", "a": ""},
			want:  []string{".gitignore", "a"},
		},
		{
			name:  "negation re-includes when only the contents are excluded",
			files: map[string]string{".gitignore": "build/*\n!build/keep\n", "build/keep": "", "build/gen": ""},
			want:  []string{".gitignore", "build/keep"},
		},
		{
			name:  "nested negation inside an excluded directory is never read",
			files: map[string]string{".gitignore": "out\n", "out/.gitignore": "!*\n", "out/x": ""},
			want:  []string{".gitignore"},
		},
		{
			name:  "double star at the start, middle and end",
			files: map[string]string{".gitignore": "**/tmp\na/**/z\nlogs/**\n", "tmp": "", "q/tmp/f": "", "a/z": "", "a/b/c/z": "", "a/y": "", "logs/x/y": ""},
			want:  []string{".gitignore", "a/y"},
		},
		{
			name:  "anchored patterns bind to their ignore file's directory",
			files: map[string]string{"sub/.gitignore": "/x\n", "sub/x": "", "sub/deeper/x": "", "x": ""},
			want:  []string{"sub/.gitignore", "sub/deeper/x", "x"},
		},
		{
			name:  "directory-only pattern does not match a file",
			files: map[string]string{".gitignore": "cache/\n", "cache": "", "d/cache/f": ""},
			want:  []string{".gitignore", "cache"},
		},
		{
			name:  "escaped hash, bang and trailing spaces",
			files: map[string]string{".gitignore": "\\#h\n\\!b\nsp\\ \ntrail   \n", "#h": "", "!b": "", "sp ": "", "sp": "", "trail": "", "trail ": ""},
			want:  []string{".gitignore", "sp", "trail "},
		},
		{
			name:  "a pattern with a middle slash is anchored",
			files: map[string]string{".gitignore": "a/b\n", "a/b": "", "x/a/b": ""},
			want:  []string{".gitignore", "x/a/b"},
		},
		{
			name:    "deeper ignore files beat shallower ones, which beat info/exclude, which beats the global file",
			files:   map[string]string{".gitignore": "!g\n", "d/.gitignore": "!i\n", "d/i": "", "g": "", "e": ""},
			exclude: "i\ne\n",
			global:  "g\n!e\n",
			want:    []string{".gitignore", "d/.gitignore", "d/i", "g"},
		},
		{
			name:  "tracked files are listed even when ignored",
			files: map[string]string{".gitignore": "*.log\nvendor/\n", "a.log": "", "vendor/lib/x.go": "", "vendor/y.go": ""},
			track: []string{"a.log", "vendor/lib/x.go"},
			want:  []string{".gitignore", "a.log", "vendor/lib/x.go"},
		},
		{
			name:  "CRLF ignore file and a BOM",
			files: map[string]string{".gitignore": "\xef\xbb\xbfa\r\nb\r\n", "a": "", "b": "", "c": ""},
			want:  []string{".gitignore", "c"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			initRepo(t, root)
			local := &gitEnv{vars: map[string]string{}}
			for k, v := range env.vars {
				local.vars[k] = v
			}
			xdg := t.TempDir()
			local.vars["XDG_CONFIG_HOME"] = xdg
			if tc.global != "" {
				writeFile(t, filepath.Join(xdg, "git", "ignore"), tc.global)
			}
			if tc.exclude != "" {
				writeFile(t, filepath.Join(root, ".git", "info", "exclude"), tc.exclude)
			}
			for p, c := range tc.files {
				writeFile(t, filepath.Join(root, filepath.FromSlash(p)), c)
			}
			if len(tc.track) > 0 {
				local.git(t, root, "", false, append([]string{"add", "-f", "--"}, tc.track...)...)
			}
			gitList := splitNUL(local.git(t, root, "", false, "ls-files", "-z", "--cached", "--others", "--exclude-standard"))
			sort.Strings(gitList)
			if !reflect.DeepEqual(gitList, tc.want) {
				t.Fatalf("git lists %q; the expectation %q is wrong", gitList, tc.want)
			}
			got := keys(walkAll(t, local.open(t, root), Options{}))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Walk = %q, want %q (as git)", got, tc.want)
			}
		})
	}
}

// A linked worktree: .git is a file naming .git/worktrees/<name>; the index
// is the worktree's own, info/exclude and config are the main repository's.
func TestLinkedWorktree(t *testing.T) {
	env := newGitEnv(t)
	base := t.TempDir()
	main := filepath.Join(base, "main")
	writeFile(t, filepath.Join(main, "a.txt"), "a")
	env.git(t, main, "", false, "init", "-q")
	env.git(t, main, "", false, "add", "a.txt")
	env.git(t, main, "", false, "commit", "-qm", "a")
	wt := filepath.Join(base, "wt")
	env.git(t, main, "", false, "worktree", "add", "-q", wt)
	writeFile(t, filepath.Join(main, ".git", "info", "exclude"), "*.tmp\n")
	writeFile(t, filepath.Join(wt, "x.tmp"), "x")
	writeFile(t, filepath.Join(wt, "new.txt"), "n")
	writeFile(t, filepath.Join(wt, "forced.tmp"), "f")
	env.git(t, wt, "", false, "add", "-f", "forced.tmp")
	want := splitNUL(env.git(t, wt, "", false, "ls-files", "-z", "--cached", "--others", "--exclude-standard"))
	sort.Strings(want)
	if !reflect.DeepEqual(want, []string{"a.txt", "forced.tmp", "new.txt"}) {
		t.Fatalf("test setup: git lists %q", want)
	}
	got := walkAll(t, env.open(t, wt), Options{})
	if !reflect.DeepEqual(keys(got), want) {
		t.Errorf("Walk = %q, want %q", keys(got), want)
	}
	if !got["forced.tmp"].Tracked || got["new.txt"].Tracked {
		t.Errorf("tracked flags from the wrong index: %+v", got)
	}
}
