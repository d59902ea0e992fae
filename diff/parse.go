package diff

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a unified diff (git or plain `diff -u`) with one or more
// files. Text before, between and after the files (mail headers, "Index:"
// lines, "Only in" lines) is skipped. Hunk header counts that disagree with
// the hunk's lines are recounted from the lines. Paths lose git's "a/" and
// "b/" prefixes (in a plain diff only when both sides have them); /dev/null
// becomes "". Hunk ids are computed as Compute computes them.
func Parse(patch string) ([]*FileDiff, error) {
	p := &parser{lines: splitLines(patch)}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.files, nil
}

type parser struct {
	lines []string
	i     int
	files []*FileDiff

	cur      *FileDiff
	git      bool // cur started with "diff --git"
	haveHdr  bool // cur has had its ---/+++ lines
	created  bool // git header said "new file mode"
	deleted  bool // git header said "deleted file mode"
	renamed  bool // git header named the paths with rename/copy from/to
	gitAName string
	gitBName string
}

func (p *parser) finish() {
	if p.cur == nil {
		return
	}
	fd := p.cur
	if p.git && !p.haveHdr && !p.renamed {
		fd.OldPath, fd.NewPath = p.gitAName, p.gitBName
	}
	if p.created {
		fd.OldPath = ""
	}
	if p.deleted {
		fd.NewPath = ""
	}
	assignIDs(fd.Hunks)
	p.files = append(p.files, fd)
	p.cur = nil
}

func (p *parser) start(git bool) {
	p.finish()
	p.cur = &FileDiff{}
	p.git, p.haveHdr, p.created, p.deleted, p.renamed = git, false, false, false, false
}

func (p *parser) run() error {
	for p.i < len(p.lines) {
		raw := p.lines[p.i]
		line, _ := cutEOL(raw)
		switch {
		case strings.HasPrefix(line, "diff --git "):
			p.start(true)
			p.gitAName, p.gitBName = parseGitNames(line[len("diff --git "):])
			p.i++
		case strings.HasPrefix(line, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1], "+++ "):
			if p.cur == nil || p.haveHdr || !p.git || len(p.cur.Hunks) > 0 {
				p.start(false)
			}
			next, _ := cutEOL(p.lines[p.i+1])
			p.fileNames(line[len("--- "):], next[len("+++ "):])
			p.haveHdr = true
			p.i += 2
		case strings.HasPrefix(line, "@@ "):
			if p.cur == nil || (!p.haveHdr && !p.git) {
				return fmt.Errorf("diff: parse: line %d: hunk header %q comes before any file header (---/+++ lines)", p.i+1, line)
			}
			if err := p.hunk(line); err != nil {
				return err
			}
		case p.cur != nil && p.git && !p.haveHdr && len(p.cur.Hunks) == 0:
			p.gitHeader(line)
			p.i++
		default:
			p.i++ // garbage between files
		}
	}
	p.finish()
	return nil
}

// gitHeader reads one of git's extended header lines.
func (p *parser) gitHeader(line string) {
	fd := p.cur
	cut := func(prefix string) (string, bool) {
		if strings.HasPrefix(line, prefix) {
			return line[len(prefix):], true
		}
		return "", false
	}
	if v, ok := cut("old mode "); ok {
		fd.OldMode = parseMode(v)
	} else if v, ok := cut("new mode "); ok {
		fd.NewMode = parseMode(v)
	} else if v, ok := cut("new file mode "); ok {
		fd.NewMode = parseMode(v)
		p.created = true
	} else if v, ok := cut("deleted file mode "); ok {
		fd.OldMode = parseMode(v)
		p.deleted = true
	} else if v, ok := cut("rename from "); ok {
		fd.OldPath, p.renamed = unquotePath(v), true
	} else if v, ok := cut("rename to "); ok {
		fd.NewPath, p.renamed = unquotePath(v), true
	} else if v, ok := cut("copy from "); ok {
		fd.OldPath, p.renamed = unquotePath(v), true
	} else if v, ok := cut("copy to "); ok {
		fd.NewPath, p.renamed = unquotePath(v), true
	} else if v, ok := cut("index "); ok {
		ids, mode, _ := strings.Cut(v, " ")
		o, n, _ := strings.Cut(ids, "..")
		if isFullOID(o) && isFullOID(n) {
			if o != zeroOID {
				fd.OldOID = o
			}
			if n != zeroOID {
				fd.NewOID = n
			}
		}
		if m := parseMode(mode); m != 0 {
			fd.OldMode, fd.NewMode = m, m
		}
	} else if strings.HasPrefix(line, "Binary files ") {
		fd.Binary = true
	} else if line == "GIT binary patch" {
		fd.Binary = true
		// Skip the base85 payload: "literal N"/"delta N" blocks of data
		// lines, each block ended by a blank line.
		for p.i+1 < len(p.lines) {
			next, _ := cutEOL(p.lines[p.i+1])
			if next != "" && !strings.HasPrefix(next, "literal ") && !strings.HasPrefix(next, "delta ") && !isBase85Line(next) {
				break
			}
			p.i++
		}
	}
}

func isBase85Line(s string) bool {
	if s == "" {
		return false
	}
	if c := s[0]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || c == '"' || c == '\'' || c == ',' || c == '.' || c == '/' || c == ':' || c == '[' || c == '\\' || c == ']' {
			return false
		}
	}
	return true
}

func isFullOID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func parseMode(s string) uint32 {
	m, err := strconv.ParseUint(strings.TrimSpace(s), 8, 32)
	if err != nil {
		return 0
	}
	return uint32(m)
}

// fileNames reads the names of "--- " and "+++ " lines.
func (p *parser) fileNames(oldField, newField string) {
	o, n := headerName(oldField), headerName(newField)
	if p.git || (strings.HasPrefix(o, "a/") || o == "/dev/null") && (strings.HasPrefix(n, "b/") || n == "/dev/null") {
		o = strings.TrimPrefix(o, "a/")
		n = strings.TrimPrefix(n, "b/")
	}
	if o == "/dev/null" {
		o = ""
	}
	if n == "/dev/null" {
		n = ""
	}
	if p.renamed {
		// "rename from/to" already named the paths; keep them.
		return
	}
	p.cur.OldPath, p.cur.NewPath = o, n
}

// headerName extracts the file name of a ---/+++ line: a C-quoted name, or
// everything up to a tab (after which plain diff puts a time stamp).
func headerName(s string) string {
	if strings.HasPrefix(s, `"`) {
		if name, _, ok := unquoteC(s); ok {
			return name
		}
	}
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " ")
}

// parseGitNames splits the rest of a "diff --git" line into the two names
// without their a/ and b/ prefixes.
func parseGitNames(rest string) (string, string) {
	var a, b string
	if strings.HasPrefix(rest, `"`) {
		name, tail, ok := unquoteC(rest)
		if !ok {
			return "", ""
		}
		a = name
		tail = strings.TrimLeft(tail, " ")
		if strings.HasPrefix(tail, `"`) {
			b, _, _ = unquoteC(tail)
		} else {
			b = tail
		}
	} else if i := strings.Index(rest, ` "`); i >= 0 {
		a = rest[:i]
		b, _, _ = unquoteC(rest[i+1:])
	} else {
		// Unquoted names may hold spaces; git's own rule is that both
		// names are the same when no rename header follows.
		n := len(rest)
		if (n-1)%2 == 0 {
			half := (n - 1) / 2
			x, y := rest[:half], rest[half+1:]
			if rest[half] == ' ' && strings.TrimPrefix(x, "a/") == strings.TrimPrefix(y, "b/") {
				return strings.TrimPrefix(x, "a/"), strings.TrimPrefix(y, "b/")
			}
		}
		if i := strings.Index(rest, " b/"); i >= 0 {
			a, b = rest[:i], rest[i+1:]
		} else if i := strings.IndexByte(rest, ' '); i >= 0 {
			a, b = rest[:i], rest[i+1:]
		} else {
			a, b = rest, rest
		}
	}
	return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
}

func unquotePath(s string) string {
	if strings.HasPrefix(s, `"`) {
		if name, _, ok := unquoteC(s); ok {
			return name
		}
	}
	return s
}

// unquoteC reads a C-style quoted string as git writes names, returning the
// value and what follows the closing quote.
func unquoteC(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	var b []byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return string(b), s[i+1:], true
		case c != '\\':
			b = append(b, c)
		case i+1 >= len(s):
			return "", s, false
		default:
			i++
			switch e := s[i]; e {
			case 'a':
				b = append(b, '\a')
			case 'b':
				b = append(b, '\b')
			case 't':
				b = append(b, '\t')
			case 'n':
				b = append(b, '\n')
			case 'v':
				b = append(b, '\v')
			case 'f':
				b = append(b, '\f')
			case 'r':
				b = append(b, '\r')
			case '"', '\\':
				b = append(b, e)
			default:
				if e < '0' || e > '3' || i+2 >= len(s) {
					return "", s, false
				}
				v := 0
				for k := 0; k < 3; k++ {
					d := s[i+k]
					if d < '0' || d > '7' {
						return "", s, false
					}
					v = v*8 + int(d-'0')
				}
				b = append(b, byte(v))
				i += 2
			}
		}
	}
	return "", s, false
}

// hunk reads one hunk starting at its header line.
func (p *parser) hunk(header string) error {
	h, err := parseHunkHeader(header)
	if err != nil {
		return fmt.Errorf("diff: parse: line %d: %w", p.i+1, err)
	}
	p.i++
	oldLeft, newLeft := h.OldLines, h.NewLines
	oldN, newN := 0, 0
	for p.i < len(p.lines) {
		raw := p.lines[p.i]
		if raw[0] == '\\' {
			// "\ No newline at end of file" belongs to the line before.
			// The patch line's "\n" was its own; a "\r" before it
			// belongs to the text.
			if n := len(h.Lines); n > 0 {
				l := &h.Lines[n-1]
				if l.EOL == "\r\n" {
					l.Text += "\r"
				}
				l.EOL = ""
			}
			p.i++
			continue
		}
		if oldLeft <= 0 && newLeft <= 0 {
			break
		}
		if !strings.HasSuffix(raw, "\n") {
			raw += "\n" // a patch cut off after its last line
		}
		text, eol := cutEOL(raw[1:])
		var kind LineKind
		switch raw[0] {
		case ' ':
			kind = Context
		case '-':
			kind = Delete
		case '+':
			kind = Insert
		case '\n', '\r':
			// An empty context line whose leading space was stripped
			// (editors and models do that).
			if text, eol = cutEOL(raw); text != "" {
				break
			}
			kind = Context
		}
		if kind == 0 || (kind == Delete && strings.HasPrefix(raw, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1], "+++ ")) {
			break
		}
		if kind != Insert {
			oldLeft--
			oldN++
		}
		if kind != Delete {
			newLeft--
			newN++
		}
		h.Lines = append(h.Lines, Line{Kind: kind, Text: text, EOL: eol})
		p.i++
	}
	// Trust the lines over a miscounted header.
	h.OldLines, h.NewLines = oldN, newN
	p.cur.Hunks = append(p.cur.Hunks, h)
	return nil
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@ ...".
func parseHunkHeader(line string) (Hunk, error) {
	var h Hunk
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return h, fmt.Errorf("malformed hunk header %q", line)
	}
	oldR, rest, ok1 := strings.Cut(rest, " +")
	newR, _, ok2 := strings.Cut(rest, " @@")
	if !ok1 || !ok2 {
		return h, fmt.Errorf("malformed hunk header %q: want \"@@ -a,b +c,d @@\"", line)
	}
	var err1, err2 error
	h.OldStart, h.OldLines, err1 = parseRange(oldR)
	h.NewStart, h.NewLines, err2 = parseRange(newR)
	if err1 != nil || err2 != nil {
		return h, fmt.Errorf("malformed hunk header %q: want \"@@ -a,b +c,d @@\"", line)
	}
	return h, nil
}

func parseRange(s string) (start, n int, err error) {
	a, b, has := strings.Cut(s, ",")
	start, err = strconv.Atoi(a)
	if err != nil || start < 0 {
		return 0, 0, fmt.Errorf("bad range %q", s)
	}
	n = 1
	if has {
		n, err = strconv.Atoi(b)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("bad range %q", s)
		}
	}
	return start, n, nil
}
