package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
)

// repoInit makes dir an empty git repository, for the tests that need one
// only for its .gitignore to apply: go-git makes it, so that they run
// where there is no git CLI (Windows under Wine).
func repoInit(t *testing.T, dir string) {
	t.Helper()
	if _, err := git.PlainInit(dir, false); err != nil {
		t.Fatalf("git init %s: %v", dir, err)
	}
}

// gitInit makes dir a git repository (real git; the tests need it).
func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "Test"},
		{"config", "user.email", "test@example.com"},
		{"config", "commit.gpgsign", "false"},
	} {
		runGit(t, dir, args...)
	}
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

var searchFixture = map[string]string{
	".gitignore":           "build/\n*.log\n",
	"main.go":              "package main\n\nfunc main() {\n\tfmt.Println(\"Hello, World\")\n}\n",
	"util/strings.go":      "package util\n\n// Foo does foo things.\nfunc Foo() string { return \"foo\" }\nfunc fooBar() {}\n",
	"util/strings_test.go": "package util\n\nfunc TestFoo(t *testing.T) { Foo(); Foo() }\n",
	"docs/readme.md":       "# Title\nKeep hello here.\nHELLO again\nline with 123 and 4567\n",
	"docs/crlf.txt":        "alpha\r\nbeta x\r\ngamma\r\n",
	"docs/unicode.txt":     "naïve café\nſtop KELVIN Kelvin\nend x",
	"build/out.go":         "package build // foo ignored\n",
	"debug.log":            "foo in a log\n",
	"bin/blob.bin":         "foo\x00\x01\x02 foo",
	".hidden/conf.txt":     "foo = 1\n",
	"deep/a/b/c/d.go":      "package d\nvar foo = 1 // Foo\n",
}

func TestSearchFiles(t *testing.T) {
	ws, root := newWS(t, searchFixture)
	repoInit(t, root)
	env := &Env{WS: ws}
	tests := []struct {
		glob string
		want []string
	}{
		{"*.go", []string{"deep/a/b/c/d.go", "main.go", "util/strings.go", "util/strings_test.go"}},
		{"**/*.go", []string{"deep/a/b/c/d.go", "main.go", "util/strings.go", "util/strings_test.go"}},
		{"util/*.go", []string{"util/strings.go", "util/strings_test.go"}},
		{"*_test.go", []string{"util/strings_test.go"}},
		{"docs/*.{md,txt}", []string{"docs/crlf.txt", "docs/readme.md", "docs/unicode.txt"}},
		{"*.log", []string{}},
		{"build/**", []string{}},
		{"nothing/**/*.go", []string{}},
		{"./main.go", []string{"main.go"}},
	}
	for _, tc := range tests {
		t.Run(tc.glob, func(t *testing.T) {
			res := mustCall(t, env, "search_files", SearchFilesArgs{Glob: tc.glob})
			got := output[SearchFilesOutput](t, res)
			if !reflect.DeepEqual(got.Files, tc.want) || got.Truncated {
				t.Errorf("search_files(%q) = %v (truncated %v), want %v", tc.glob, got.Files, got.Truncated, tc.want)
			}
		})
	}
	_, err := call(t, env, "search_files", SearchFilesArgs{Glob: "src/[a-"})
	wantCode(t, err, CodeInvalidArgs)
}

func TestListDir(t *testing.T) {
	ws, root := newWS(t, searchFixture)
	repoInit(t, root)
	if err := os.Mkdir(filepath.Join(root, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := &Env{WS: ws}
	res := mustCall(t, env, "list_dir", ListDirArgs{Path: "."})
	got := output[ListDirOutput](t, res)
	var names []string
	for _, e := range got.Entries {
		names = append(names, e.Path+":"+e.Type)
	}
	want := []string{".gitignore:file", ".hidden:dir", "bin:dir", "deep:dir", "docs:dir", "emptydir:dir", "main.go:file", "util:dir"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("list_dir(.) = %v, want %v", names, want)
	}
	for _, e := range got.Entries {
		if e.Path == "main.go" && e.Size != int64(len(searchFixture["main.go"])) {
			t.Errorf("main.go size %d, want %d", e.Size, len(searchFixture["main.go"]))
		}
	}
	res = mustCall(t, env, "list_dir", ListDirArgs{Path: "deep", Depth: 3})
	got = output[ListDirOutput](t, res)
	names = nil
	for _, e := range got.Entries {
		names = append(names, e.Path)
	}
	if want := []string{"deep/a", "deep/a/b", "deep/a/b/c"}; !reflect.DeepEqual(names, want) {
		t.Errorf("list_dir(deep, 3) = %v, want %v", names, want)
	}
	_, err := call(t, env, "list_dir", ListDirArgs{Path: "main.go"})
	wantCode(t, err, CodeInvalidArgs)
	_, err = call(t, env, "list_dir", ListDirArgs{Path: "nope"})
	wantCode(t, err, CodeNotFound)

	old := MaxListEntries
	MaxListEntries = 3
	t.Cleanup(func() { MaxListEntries = old })
	res = mustCall(t, env, "list_dir", ListDirArgs{Path: ".", Depth: 5})
	if got := output[ListDirOutput](t, res); len(got.Entries) != 3 || !got.Truncated {
		t.Errorf("capped list_dir = %d entries, truncated %v; want 3, true", len(got.Entries), got.Truncated)
	}
}

// TestListDirShowsLinks: list_dir lists a symlink as one, not as what it
// points to.
func TestListDirShowsLinks(t *testing.T) {
	ws, root := newWS(t, map[string]string{"main.go": "package main\n", "d/x": "x\n"})
	for name, target := range map[string]string{"link.go": "main.go", "ld": "d"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	res := mustCall(t, &Env{WS: ws}, "list_dir", ListDirArgs{Path: ".", Depth: 2})
	var names []string
	for _, e := range output[ListDirOutput](t, res).Entries {
		names = append(names, e.Path+":"+e.Type)
	}
	if want := []string{"d:dir", "d/x:file", "ld:symlink", "link.go:symlink", "main.go:file"}; !reflect.DeepEqual(names, want) {
		t.Errorf("list_dir(., 2) = %v, want %v", names, want)
	}
}

func TestSearchCode(t *testing.T) {
	ws, root := newWS(t, searchFixture)
	repoInit(t, root)
	env := &Env{WS: ws}
	type m = CodeMatch
	tests := []struct {
		args  SearchCodeArgs
		want  []CodeMatch
		files []string
		trunc bool
	}{
		{SearchCodeArgs{Pattern: `Foo\(\)`}, []m{
			{"util/strings.go", 4, 6, `func Foo() string { return "foo" }`},
			{"util/strings_test.go", 3, 30, `func TestFoo(t *testing.T) { Foo(); Foo() }`},
		}, []string{"util/strings.go", "util/strings_test.go"}, false},
		{SearchCodeArgs{Pattern: `(?i)hello`, Glob: "*.md"}, []m{
			{"docs/readme.md", 2, 6, "Keep hello here."},
			{"docs/readme.md", 3, 1, "HELLO again"},
		}, []string{"docs/readme.md"}, false},
		{SearchCodeArgs{Pattern: `x$`}, []m{
			{"docs/unicode.txt", 3, 5, "end x"},
		}, []string{"docs/unicode.txt"}, false},
		{SearchCodeArgs{Pattern: `^beta`}, []m{
			{"docs/crlf.txt", 2, 1, "beta x"},
		}, []string{"docs/crlf.txt"}, false},
		{SearchCodeArgs{Pattern: `\d{4}`}, []m{
			{"docs/readme.md", 4, 19, "line with 123 and 4567"},
		}, []string{"docs/readme.md"}, false},
		{SearchCodeArgs{Pattern: `(?i)stop kelvin`}, []m{
			{"docs/unicode.txt", 2, 1, "ſtop KELVIN Kelvin"},
		}, []string{"docs/unicode.txt"}, false},
		{SearchCodeArgs{Pattern: `foo`, MaxResults: 2}, []m{
			{".hidden/conf.txt", 1, 1, "foo = 1"},
			{"deep/a/b/c/d.go", 2, 5, "var foo = 1 // Foo"},
		}, []string{".hidden/conf.txt", "deep/a/b/c/d.go", "util/strings.go"}, true},
		{SearchCodeArgs{Pattern: `nomatchanywhere`}, []m{}, []string{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.args.Pattern, func(t *testing.T) {
			res := mustCall(t, env, "search_code", tc.args)
			got := output[SearchCodeOutput](t, res)
			if !reflect.DeepEqual(got.Matches, tc.want) {
				t.Errorf("matches\n got %+v\nwant %+v", got.Matches, tc.want)
			}
			if !reflect.DeepEqual(got.Files, tc.files) || got.Truncated != tc.trunc {
				t.Errorf("files %v truncated %v, want %v %v", got.Files, got.Truncated, tc.files, tc.trunc)
			}
		})
	}
	_, err := call(t, env, "search_code", SearchCodeArgs{Pattern: `a(b`})
	wantCode(t, err, CodeInvalidArgs)
	_, err = call(t, env, "search_code", SearchCodeArgs{Pattern: `(?<=a)b`})
	wantCode(t, err, CodeInvalidArgs)
}

func TestSearchCodeOverlay(t *testing.T) {
	ws, _ := newWS(t, map[string]string{"a.go": "old text\n", "b.go": "other\n"})
	if err := ws.OpenOverlay("a.go", []byte("first\nunsaved needle\n"), 1); err != nil {
		t.Fatal(err)
	}
	res := mustCall(t, &Env{WS: ws}, "search_code", SearchCodeArgs{Pattern: "needle"})
	got := output[SearchCodeOutput](t, res)
	if want := []CodeMatch{{"a.go", 2, 9, "unsaved needle"}}; !reflect.DeepEqual(got.Matches, want) {
		t.Errorf("matches %+v, want %+v (from the editor buffer)", got.Matches, want)
	}
}

// The first maxResults matches in path order are the same whatever the
// order files are searched in.
func TestSearchCodeMaxResultsDeterministic(t *testing.T) {
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("d%02d/f.txt", i)] = strings.Repeat("hit\n", i%4)
	}
	ws, _ := newWS(t, files)
	var first []CodeMatch
	for run := range 10 {
		res := mustCall(t, &Env{WS: ws}, "search_code", SearchCodeArgs{Pattern: "hit", MaxResults: 7})
		got := output[SearchCodeOutput](t, res)
		if len(got.Matches) != 7 || !got.Truncated || len(got.Files) != 45 {
			t.Fatalf("run %d: %d matches, truncated %v, %d files; want 7, true, 45", run, len(got.Matches), got.Truncated, len(got.Files))
		}
		if first == nil {
			first = got.Matches
		} else if !reflect.DeepEqual(first, got.Matches) {
			t.Fatalf("run %d: matches differ:\n%v\n%v", run, first, got.Matches)
		}
	}
	if first[0].Path != "d01/f.txt" || first[6].Path != "d05/f.txt" {
		t.Errorf("matches are not the first in path order: %v", first)
	}
}

// render shows a prefilter's sequence: a byte, or [ranges] for a set.
func (p *prefilter) render() string {
	var alts []string
	for _, a := range p.alts {
		alts = append(alts, a.render())
	}
	return strings.Join(alts, "|")
}

func (p *seqFinder) render() string {
	var sb strings.Builder
	for _, s := range p.sets {
		if s.n == 1 {
			for c, ok := range s.in {
				if ok {
					sb.WriteByte(byte(c))
				}
			}
			continue
		}
		sb.WriteByte('[')
		for c := 0; c < 256; c++ {
			if !s.in[c] {
				continue
			}
			e := c
			for e+1 < 256 && s.in[e+1] {
				e++
			}
			sb.WriteByte(byte(c))
			if e > c+1 {
				sb.WriteByte('-')
			}
			if e > c {
				sb.WriteByte(byte(e))
			}
			c = e
		}
		sb.WriteByte(']')
	}
	return sb.String()
}

func TestPrefilter(t *testing.T) {
	tests := []struct {
		pattern string
		want    string // "" = no prefilter
		literal bool
	}{
		{`foo`, "foo", true},
		{`foo\w+bar_baz`, "bar_baz", true},
		{`(?i)Hi!`, "[Hh][Ii]!", false},
		{`(?i)task`, "[Tt][Aa][Ss][Kk]", false}, // see TestPrefilterUnicodeFold
		{`a|b`, "[ab]", false},
		{`(ab)c`, "abc", true},
		{`mutex_lock|spin_lock`, "mutex_lock|spin_lock", true},
		{`(?:foo|ba.)x`, "foo|ba", true},
		{`foo|.*`, "", false},
		{`f(oo|.*)`, "f", true},
		{`a(?:b|c)`, "a[bc]", false},
		{`x*y`, "y", true},
		{`(abc)+`, "abc", true},
		{`\bfoo\b`, "foo", true},
		{`[A-Z]{2}_[0-9]`, "[A-Z][A-Z]_[0-9]", false},
		{`café`, "caf\xc3\xa9", true},
		{`(?i)café`, "[Cc][Aa][Ff]", false},
		{`(?i)[k]ey`, "[Ee][Yy]", false}, // the class holds U+212A: not one byte
		{`.*`, "", false},
		{`[^a]x`, "x", true},
		{`\S{3}`, "[\x00-\x08\x0b\x0e-\x1f!-\xff][\x00-\x08\x0b\x0e-\x1f!-\xff][\x00-\x08\x0b\x0e-\x1f!-\xff]", false},
		{`a\S{3}b`, "b", true}, // a and b are separate sequences: the rarer wins
		{`[^,]{4}[^;]{4}`, "[\x00-+--\xff][\x00-+--\xff][\x00-+--\xff][\x00-+--\xff]", false},
	}
	for _, tc := range tests {
		pat := tc.pattern
		p := newPrefilter(pat)
		got := ""
		if p != nil {
			got = p.render()
		}
		want := tc.want
		lit := p != nil && p.alts[0].lit != nil
		if got != want || lit != tc.literal {
			t.Errorf("newPrefilter(%q) = %q (literal %v), want %q (literal %v)", pat, got, lit, want, tc.literal)
		}
	}
}

func TestPrefilterIndex(t *testing.T) {
	tests := []struct {
		pattern, in string
		want        int
	}{
		{`(?i)hello_w`, "HELLO_W", 0},
		{`(?i)hello_w`, "xx hello_w", 3},
		{`(?i)hello_w`, "hellohello_W", 5},
		{`(?i)hello_w`, "hello w", -1},
		{`(?i)hello_w`, "", -1},
		{`[A-Z]{2}_[0-9]{2}`, "ab_12 AB_1x AB_12", 12},
		{`[A-Z]{2}_[0-9]{2}`, "_12", -1},
		{`[a-c][x-z]`, "aa bb cz", 6},
		{`\d\d`, "a1b22", 3},
		{`\S{3}`, "ab cd éf", 6},
		{`\S{3}`, "ab cd ef", -1},
		{`mutex_lock|spin_lock`, "a spin_lock b mutex_lock", 2},
		{`mutex_lock|spin_lock`, "a mutex_lock b spin_lock", 2},
		{`mutex_lock|spin_lock`, "spin_unlock", -1},
	}
	for _, tc := range tests {
		pat := tc.pattern
		p := newPrefilter(pat)
		if p == nil {
			t.Fatalf("no prefilter for %q", pat)
		}
		if got := p.index([]byte(tc.in)); got != tc.want {
			t.Errorf("%q index(%q) = %d, want %d", pat, tc.in, got, tc.want)
		}
	}
}

func TestMinLen(t *testing.T) {
	for pat, want := range map[string]int{
		`abc`: 3, `\S{60}`: 60, `a|bcd`: 1, `x*`: 0, `(ab)+c?`: 2, `é`: 2, `(?i)é`: 1, `^$`: 0, `[a-z]{2,5}\d`: 3,
	} {
		if got := minLen(pat); got != want {
			t.Errorf("minLen(%q) = %d, want %d", pat, got, want)
		}
	}
}

// A case-folded k or s also matches the Kelvin sign and the long s: files
// holding them are searched without the ASCII prefilter.
func TestPrefilterUnicodeFold(t *testing.T) {
	p := newPrefilter(`(?i)stop kelvin`)
	if p == nil || len(p.unsafe) != 2 {
		t.Fatalf("prefilter %+v, want the Kelvin sign and long s marked unsafe", p)
	}
	if p.foldUnsafe([]byte("stop kelvin")) || !p.foldUnsafe([]byte("\u017ftop")) || !p.foldUnsafe([]byte("\u212aelvin")) {
		t.Error("foldUnsafe is wrong")
	}
	if q := newPrefilter(`(?i)hello`); len(q.unsafe) != 0 {
		t.Errorf("(?i)hello marked unsafe: %q", q.unsafe)
	}
	ws, _ := newWS(t, map[string]string{"a.txt": "x\n\u017ftop \u212aelvin\n", "b.txt": "STOP KELVIN\n"})
	res := mustCall(t, &Env{WS: ws}, "search_code", SearchCodeArgs{Pattern: `(?i)stop kelvin`})
	if got := output[SearchCodeOutput](t, res).Files; !reflect.DeepEqual(got, []string{"a.txt", "b.txt"}) {
		t.Errorf("files %v, want both", got)
	}
}

// search_code finds what ripgrep finds on the same tree (same files, lines
// and columns).
func TestSearchCodeMatchesRipgrep(t *testing.T) {
	rg := ensureRipgrep(t)
	ws, root := newWS(t, searchFixture)
	gitInit(t, root)
	env := &Env{WS: ws}
	for _, pat := range []string{`\S{9}`, `[^ ]{3}`, `x\S{2}`, `\S{2}é`, `(?i)[^a]{4}`, `\w{3}\s\w{2}$`, `Foo|bar|World`, `(fo|Hel)o`, `[A-Z]{2,}_[0-9]`, `(?i)th[ae]`, `\w+\(\)`, `foo`, `(?i)foo`, `Foo\(\)`, `^\s*func`, `x$`, `\d+`, `(?i)hello`, `\bfoo\w*`, `[A-Z]{2,}`, `e\r?$`, `(?i)k`, `.`} {
		t.Run(pat, func(t *testing.T) {
			cmd := exec.Command(rg, "--hidden", "--glob", "!.git", "--no-heading", "--line-number", "--column", "--no-messages", "--color=never", "-e", pat)
			cmd.Dir = root
			raw, err := cmd.Output()
			if err != nil && len(raw) > 0 {
				t.Fatalf("rg: %v", err)
			}
			var want []string
			for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				if l == "" {
					continue
				}
				parts := strings.SplitN(l, ":", 4)
				want = append(want, strings.Join(parts[:3], ":"))
			}
			res := mustCall(t, env, "search_code", SearchCodeArgs{Pattern: pat, MaxResults: 10000})
			var got []string
			for _, m := range output[SearchCodeOutput](t, res).Matches {
				got = append(got, m.Path+":"+strconv.Itoa(m.Line)+":"+strconv.Itoa(m.Column))
			}
			sort.Strings(want)
			sort.Strings(got)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("search_code(%q) differs from rg\n got %v\nwant %v", pat, got, want)
			}
		})
	}
}

// ensureRipgrep returns rg's path, installing Debian's ripgrep if missing.
func ensureRipgrep(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("rg"); err == nil {
		return p
	}
	ctx := context.Background()
	if out, err := exec.CommandContext(ctx, "apt-get", "install", "-y", "-qq", "ripgrep").CombinedOutput(); err != nil {
		t.Fatalf("ripgrep is needed to compare search_code with and could not be installed: %v\n%s", err, out)
	}
	p, err := exec.LookPath("rg")
	if err != nil {
		t.Fatalf("ripgrep installed but rg not found: %v", err)
	}
	return p
}

func TestSearchCodeCancelAndLargeFiles(t *testing.T) {
	ws, _ := newWS(t, map[string]string{"small.txt": "needle\n", "big.txt": strings.Repeat("needle\n", 100)})
	old := MaxSearchFileSize
	MaxSearchFileSize = 100
	t.Cleanup(func() { MaxSearchFileSize = old })
	res := mustCall(t, &Env{WS: ws}, "search_code", SearchCodeArgs{Pattern: "needle"})
	got := output[SearchCodeOutput](t, res)
	if !reflect.DeepEqual(got.Files, []string{"small.txt"}) || !reflect.DeepEqual(got.Skipped, []string{"big.txt"}) {
		t.Errorf("files %v skipped %v, want small.txt searched and big.txt skipped", got.Files, got.Skipped)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tool, _ := Builtin().Get("search_code")
	if _, err := tool.Run(ctx, &Env{WS: ws}, mustJSON(t, SearchCodeArgs{Pattern: "needle"})); !errors.Is(err, context.Canceled) {
		t.Errorf("search with a cancelled context: %v, want context.Canceled", err)
	}
}

// A search does not read sensitive files (read_file asks before it reads
// one): a .env that git does not ignore, a key and what the workspace's
// config adds are named in the output's sensitive list, and no line of
// theirs is returned.
func TestSearchCodeLeavesSensitiveFilesUnread(t *testing.T) {
	ws, root := newWS(t, map[string]string{
		".env":                 "TOKEN=needle-secret\n",
		"deploy/server.key":    "needle key\n",
		"conf/secrets.yaml":    "needle: yaml\n",
		"main.go":              "// needle in code\n",
		".agentd/config.json":  `{"sensitive": ["conf/secrets.yaml"]}`,
		"docs/env.md":          "needle in docs\n",
		"deploy/server.key.md": "needle in a doc named like a key\n",
	})
	repoInit(t, root)
	got := output[SearchCodeOutput](t, mustCall(t, &Env{WS: ws}, "search_code", SearchCodeArgs{Pattern: "needle"}))
	var paths []string
	for _, m := range got.Matches {
		paths = append(paths, m.Path)
	}
	if want := []string{"deploy/server.key.md", "docs/env.md", "main.go"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("matches in %v, want %v (no sensitive file read)", paths, want)
	}
	if want := []string{".env", "conf/secrets.yaml", "deploy/server.key"}; !reflect.DeepEqual(got.Sensitive, want) {
		t.Errorf("sensitive %v, want %v", got.Sensitive, want)
	}
}
