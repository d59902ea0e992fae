package fileset

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The conformance test generates random trees with random ignore rules and
// compares Walk and Ignored with the git CLI.

const (
	conformanceTrees   = 500
	conformanceWorkers = 8
)

var (
	genDirNames  = []string{"a", "b", "build", "sub", "x y", "deep", "c"}
	genFileNames = []string{"a", "b.txt", "c.log", "d.o", "e", "#hash", "!bang", "sp ", "foo", "foo ",
		"st*r", "q?", "[x]", ".hidden", "README.md", "z.log", "b", "x y"}
	genGlobs = []string{"*.log", "*.o", "*", "?", "[a-c]", "[!a]*", "[[:alpha:]]", `st\*r`, `q\?`, `\[x\]`,
		`\#hash`, `\!bang`, `foo\ `, "foo  ", "#hash", "*.txt", "b*", "**", "x**", "a**b", "*[", "!", "\\", "*/", "*e",
		"x y", "x\\ y", ".*", "[^.]*", "a[/]b", "d.[oa]"}
)

type genTree struct {
	r     *rand.Rand
	root  string
	dirs  []string // relative, "" for the root; real directories only
	files []string
}

func (g *genTree) pick(list []string) string { return list[g.r.IntN(len(list))] }

// pattern returns one random ignore line.
func (g *genTree) pattern() string {
	var p string
	switch g.r.IntN(10) {
	case 0, 1, 2:
		p = g.pick(genFileNames)
	case 3, 4:
		p = g.pick(genGlobs)
	case 5:
		p = "/" + g.pick(append(genFileNames, genDirNames...))
	case 6:
		p = g.pick(genDirNames) + "/" + g.pick(append(genFileNames, genGlobs...))
	case 7:
		p = "**/" + g.pick(append(genFileNames, genDirNames...))
	case 8:
		p = g.pick(genDirNames) + "/**" + g.pick([]string{"", "/" + g.pick(genFileNames), "/" + g.pick(genDirNames) + "/"})
	default:
		p = g.pick(genDirNames)
		if g.r.IntN(2) == 0 {
			p = "/" + p
		}
		if g.r.IntN(3) == 0 {
			p = "*/" + p
		}
	}
	if g.r.IntN(3) == 0 && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	if g.r.IntN(4) == 0 {
		p = "!" + p
	}
	if g.r.IntN(10) == 0 {
		p += "  "
	}
	return p
}

func (g *genTree) patterns(n int) string {
	var b strings.Builder
	if g.r.IntN(8) == 0 {
		b.WriteString("# a comment\n\n")
	}
	for range n {
		b.WriteString(g.pattern())
		if g.r.IntN(12) == 0 {
			b.WriteString("\r")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (g *genTree) build(t testing.TB, dir string, depth int) {
	abs := filepath.Join(g.root, filepath.FromSlash(dir))
	if err := os.MkdirAll(abs, 0o755); err != nil {
		t.Fatal(err)
	}
	g.dirs = append(g.dirs, dir)
	join := func(n string) string {
		if dir == "" {
			return n
		}
		return dir + "/" + n
	}
	used := map[string]bool{}
	for range 1 + g.r.IntN(5) {
		n := g.pick(genFileNames)
		if used[n] {
			continue
		}
		used[n] = true
		writeFile(t, filepath.Join(abs, n), n+"\n")
		g.files = append(g.files, join(n))
	}
	if g.r.IntN(2) == 0 || dir == "" {
		writeFile(t, filepath.Join(abs, ".gitignore"), g.patterns(1+g.r.IntN(5)))
		g.files = append(g.files, join(".gitignore"))
	}
	if g.r.IntN(8) == 0 && len(g.files) > 0 {
		target := g.pick(append(genFileNames, genDirNames...))
		n := "ln-" + fmt.Sprint(g.r.IntN(3))
		if !used[n] {
			used[n] = true
			if err := os.Symlink(target, filepath.Join(abs, n)); err != nil {
				t.Fatal(err)
			}
			g.files = append(g.files, join(n))
		}
	}
	if depth >= 3 {
		return
	}
	for range g.r.IntN(4) {
		n := g.pick(genDirNames)
		if used[n] {
			continue
		}
		used[n] = true
		g.build(t, join(n), depth+1)
	}
}

func TestConformanceRandomTrees(t *testing.T) {
	env := newGitEnv(t)
	var mu sync.Mutex
	stats := map[string]int{}
	t.Cleanup(func() { t.Logf("coverage of the generated trees: %v", stats) })
	// Most of the time goes to waiting for git processes, so run more
	// trees at once than -parallel (GOMAXPROCS) would allow: t.Run may be
	// called from several goroutines.
	var wg sync.WaitGroup
	next := make(chan int)
	for range conformanceWorkers {
		wg.Go(func() {
			for i := range next {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					st := conformanceOne(t, env, uint64(i))
					mu.Lock()
					for k, v := range st {
						stats[k] += v
					}
					mu.Unlock()
				})
			}
		})
	}
	for i := range conformanceTrees {
		next <- i
	}
	close(next)
	wg.Wait()
}

func conformanceOne(t *testing.T, env *gitEnv, seed uint64) map[string]int {
	r := rand.New(rand.NewPCG(0x5eed, seed))
	base := t.TempDir()
	g := &genTree{r: r, root: filepath.Join(base, "repo")}
	g.build(t, "", 0)
	initRepo(t, g.root)
	stats := map[string]int{}

	// A global excludes file, per tree (each tree has its own global config).
	home := filepath.Join(base, "home")
	local := &gitEnv{vars: map[string]string{}}
	for k, v := range env.vars {
		local.vars[k] = v
	}
	local.vars["HOME"] = home
	local.vars["XDG_CONFIG_HOME"] = filepath.Join(base, "xdg")
	local.vars["GIT_CONFIG_GLOBAL"] = filepath.Join(home, ".gitconfig")
	cfg := "[user]\n\tname = t\n\temail = t@example.com\n"
	switch r.IntN(3) {
	case 0: // default location
		writeFile(t, filepath.Join(base, "xdg", "git", "ignore"), g.patterns(1+r.IntN(3)))
		stats["global-default"]++
	case 1:
		writeFile(t, filepath.Join(home, "my ignore"), g.patterns(1+r.IntN(3)))
		cfg += "[core]\n\texcludesFile = \"~/my ignore\"\n"
		stats["global-config"]++
	}
	writeFile(t, filepath.Join(home, ".gitconfig"), cfg)
	if r.IntN(2) == 0 {
		writeFile(t, filepath.Join(g.root, ".git", "info", "exclude"), g.patterns(1+r.IntN(3)))
		stats["info-exclude"]++
	}
	// Track some files, ignored or not.
	var add []string
	for _, f := range g.files {
		if r.IntN(6) == 0 && !underSymlink(g.root, f) {
			add = append(add, f)
		}
	}
	if len(add) > 0 {
		version := "2"
		if r.IntN(3) == 0 {
			version = "4"
			stats["index-v4"]++
		}
		local.git(t, g.root, strings.Join(add, "\x00"), false, "-c", "index.version="+version, "add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul")
		stats["tracked"] += len(add)
	}
	// Sometimes the workspace is a sub-directory of the repository.
	ws := ""
	if r.IntN(4) == 0 && len(g.dirs) > 1 {
		ws = g.dirs[1+r.IntN(len(g.dirs)-1)]
		stats["subdir-workspace"]++
	}
	wsAbs := filepath.Join(g.root, filepath.FromSlash(ws))
	dotGit := snapshotDir(t, filepath.Join(g.root, ".git"))

	// The oracle.
	out := local.git(t, wsAbs, "", false, "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard")
	want := map[string]bool{} // path -> tracked
	for _, line := range splitNUL(out) {
		tag, p, _ := strings.Cut(line, " ")
		if !existsNoFollow(wsAbs, p) {
			continue
		}
		want[p] = want[p] || tag == "H"
	}
	s := local.open(t, wsAbs)
	got := map[string]bool{}
	var gmu sync.Mutex
	err := s.Walk(context.Background(), Options{Workers: 1 + r.IntN(4)}, func(e Entry) error {
		gmu.Lock()
		defer gmu.Unlock()
		if _, dup := got[e.Path]; dup {
			t.Errorf("%s listed twice", e.Path)
		}
		got[e.Path] = e.Tracked
		fi, err := os.Lstat(filepath.Join(wsAbs, filepath.FromSlash(e.Path)))
		if err != nil || fi.Mode() != e.Mode || fi.Size() != e.Size || !fi.ModTime().Equal(e.ModTime) {
			t.Errorf("%s: entry stat %v %d %v differs from lstat %v", e.Path, e.Mode, e.Size, e.ModTime, fi)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffSets(want, got); diff != "" {
		t.Errorf("seed %d: Walk differs from git ls-files (-want +got):\n%s\n%s", seed, diff, describeTree(t, g.root, ws))
	}
	gotDirs := map[string]bool{}
	err = s.WalkDirs(context.Background(), Options{Workers: 1 + r.IntN(4)}, func(dir string, files []Entry) error {
		gmu.Lock()
		defer gmu.Unlock()
		for _, e := range files {
			if _, dup := gotDirs[e.Path]; dup {
				t.Errorf("WalkDirs: %s listed twice", e.Path)
			}
			if d := path.Dir(e.Path); d != dir && !(d == "." && dir == "") {
				t.Errorf("WalkDirs: %s handed over with directory %q", e.Path, dir)
			}
			gotDirs[e.Path] = e.Tracked
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffSets(want, gotDirs); diff != "" {
		t.Errorf("seed %d: WalkDirs differs from git ls-files (-want +got):\n%s\n%s", seed, diff, describeTree(t, g.root, ws))
	}
	stats["listed"] += len(got)

	// Ignored against git check-ignore, for every path on disk.
	var paths []string
	isDir := map[string]bool{}
	for _, d := range g.dirs[1:] {
		if rel, ok := relTo(ws, d); ok && rel != "" {
			paths = append(paths, rel)
			isDir[rel] = true
		}
	}
	for _, f := range g.files {
		if rel, ok := relTo(ws, f); ok {
			paths = append(paths, rel)
		}
	}
	ignoredOut := local.git(t, wsAbs, strings.Join(paths, "\x00"), true, "check-ignore", "--stdin", "-z")
	wantIgn := map[string]bool{}
	for _, p := range splitNUL(ignoredOut) {
		wantIgn[p] = true
	}
	for _, p := range paths {
		if got := s.Ignored(p, isDir[p]); got != wantIgn[p] {
			t.Errorf("seed %d: Ignored(%q, %v) = %v, git check-ignore says %v\n%s", seed, p, isDir[p], got, wantIgn[p], describeTree(t, g.root, ws))
		}
		if wantIgn[p] {
			stats["ignored"]++
		}
	}
	if after := snapshotDir(t, filepath.Join(g.root, ".git")); after != dotGit {
		t.Errorf("the repository's .git changed during Walk/Ignored")
	}
	return stats
}

func relTo(ws, p string) (string, bool) {
	if ws == "" {
		return p, true
	}
	if p == ws {
		return "", true
	}
	if rel, ok := strings.CutPrefix(p, ws+"/"); ok {
		return rel, true
	}
	return "", false
}

// existsNoFollow reports whether rel is a regular file or symlink with no
// symlink among its leading directories (git's idea of a file that exists).
func existsNoFollow(root, rel string) bool {
	if underSymlink(root, rel) {
		return false
	}
	fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil && (fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0)
}

func underSymlink(root, rel string) bool {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(d)))
		if err != nil || !fi.IsDir() {
			return true
		}
	}
	return false
}

func diffSets(want, got map[string]bool) string {
	var lines []string
	for p, tr := range want {
		if g, ok := got[p]; !ok {
			lines = append(lines, fmt.Sprintf("-%q tracked=%v", p, tr))
		} else if g != tr {
			lines = append(lines, fmt.Sprintf(" %q tracked: want %v, got %v", p, tr, g))
		}
	}
	for p, tr := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, fmt.Sprintf("+%q tracked=%v", p, tr))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// describeTree prints the tree and its ignore files for a failure message.
func describeTree(t testing.TB, root, ws string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace: %q\n", ws)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && d.Name() == ".git" {
			if b2, err := os.ReadFile(filepath.Join(p, "info", "exclude")); err == nil {
				fmt.Fprintf(&b, "info/exclude: %q\n", b2)
			}
			return filepath.SkipDir
		}
		fmt.Fprintf(&b, "  %q %v\n", rel, d.Type())
		if d.Name() == ".gitignore" {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "      %q\n", c)
		}
		return nil
	})
	return b.String()
}

// snapshotDir returns a fingerprint of every file under dir: path, mode,
// size, mtime and content.
func snapshotDir(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// initRepo creates the minimal repository git recognises (what `git init
// --template=` writes), saving a process per generated tree.
func initRepo(t testing.TB, root string) {
	t.Helper()
	for _, d := range []string{"objects", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(root, ".git", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(root, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
}
