package diff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// genText returns a random text of up to maxLines lines drawn from a small
// vocabulary (so that lines repeat), with the given terminator style:
// "\n", "\r\n" or "mixed". The last line lacks its terminator with some
// probability.
func genText(rng *rand.Rand, maxLines, vocab int, eolStyle string) []byte {
	n := rng.IntN(maxLines + 1)
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.WriteString(genLine(rng, vocab))
		b.WriteString(pickEOL(rng, eolStyle))
	}
	if n > 0 && rng.IntN(4) == 0 {
		trimEOL(rng, &b)
	}
	return b.Bytes()
}

func genLine(rng *rand.Rand, vocab int) string {
	if vocab <= 0 {
		return fmt.Sprintf("line %d %x", rng.IntN(1<<30), rng.Uint64())
	}
	return fmt.Sprintf("l%d", rng.IntN(vocab))
}

func pickEOL(rng *rand.Rand, style string) string {
	switch style {
	case "\r\n":
		return "\r\n"
	case "mixed":
		if rng.IntN(2) == 0 {
			return "\r\n"
		}
	}
	return "\n"
}

func trimEOL(rng *rand.Rand, b *bytes.Buffer) {
	s := b.Bytes()
	n := len(s)
	if n > 0 && s[n-1] == '\n' {
		n--
		if n > 0 && s[n-1] == '\r' && rng.IntN(2) == 0 {
			n--
		}
	}
	b.Truncate(n)
}

// mutate edits a text: it replaces, inserts and deletes random lines, and
// sometimes toggles the final newline or a line's terminator.
func mutate(rng *rand.Rand, old []byte, vocab int, eolStyle string) []byte {
	lines := splitLines(string(old))
	edits := rng.IntN(6)
	for e := 0; e < edits; e++ {
		switch op := rng.IntN(4); {
		case op == 0 && len(lines) > 0:
			i := rng.IntN(len(lines))
			lines = append(lines[:i:i], lines[i+1:]...)
		case op == 1 && len(lines) > 0:
			i := rng.IntN(len(lines))
			_, eol := cutEOL(lines[i])
			if eol == "" {
				eol = pickEOL(rng, eolStyle)
			}
			lines[i] = genLine(rng, vocab) + eol
		default:
			i := rng.IntN(len(lines) + 1)
			l := genLine(rng, vocab) + pickEOL(rng, eolStyle)
			lines = append(lines[:i:i], append([]string{l}, lines[i:]...)...)
		}
	}
	// Every line but the last must keep a terminator.
	for i := 0; i+1 < len(lines); i++ {
		if _, eol := cutEOL(lines[i]); eol == "" {
			lines[i] += "\n"
		}
	}
	out := []byte(strings.Join(lines, ""))
	if len(out) > 0 && rng.IntN(5) == 0 {
		var b bytes.Buffer
		b.Write(out)
		if out[len(out)-1] == '\n' {
			trimEOL(rng, &b)
		} else {
			b.WriteString(pickEOL(rng, eolStyle))
		}
		out = b.Bytes()
	}
	return out
}

// lcsLen is the O(NM) reference for the longest common subsequence.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// editCount returns the deleted and inserted lines of fd's hunks.
func editCount(fd *FileDiff) int {
	n := 0
	for _, h := range fd.Hunks {
		for _, l := range h.Lines {
			if l.Kind != Context {
				n++
			}
		}
	}
	return n
}

// git runs the git command line in dir with a neutral configuration.
func git(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required for this test: %v", err)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(t)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

func gitEnv(t testing.TB) []string {
	home := filepath.Join(os.TempDir(), "agentd-diff-test-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"LC_ALL=C",
	)
}
