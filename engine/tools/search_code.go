package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/fileset"
	"github.com/agentd/agentd/workspace"
	"golang.org/x/sync/errgroup"
)

//go:embed search_code.md
var searchCodeDesc string

// Tunables for search_code.
var (
	// DefaultMaxResults is maxResults when the step does not say.
	DefaultMaxResults = 200
	// MaxSearchFileSize: larger files are not searched (they are listed
	// in the output's skipped field).
	MaxSearchFileSize int64 = 64 << 20
	// SearchWorkers is the number of files searched at once (0: GOMAXPROCS+1,
	// so one worker's read overlaps another's scan).
	SearchWorkers = 0
	// maxMatchText bounds the text of one match line in the output.
	maxMatchText = 400
)

// SearchCodeArgs are search_code's arguments.
type SearchCodeArgs struct {
	Pattern    string `json:"pattern"`
	Glob       string `json:"glob,omitempty"`
	MaxResults int    `json:"maxResults,omitempty"`
}

// CodeMatch is one matching line. Line and Column are 1-based; Column
// counts bytes, as ripgrep's --column does.
type CodeMatch struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Text   string `json:"text"`
}

// SearchCodeOutput is search_code's output. Matches are the first
// maxResults in (path, line) order; Files lists every file with a match.
type SearchCodeOutput struct {
	Matches   []CodeMatch `json:"matches"`
	Files     []string    `json:"files"`
	Truncated bool        `json:"truncated"`
	Skipped   []string    `json:"skipped,omitempty"`
	// Sensitive lists the files on the workspace's sensitive list that
	// the search did not read (read_file asks the user for them).
	Sensitive []string `json:"sensitive,omitempty"`
}

const searchCodeSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "RE2 regular expression matched against each line, e.g. \"func \\\\w+Handler\" or \"(?i)todo\"."},
    "glob": {"type": "string", "minLength": 1, "description": "Only search files matching this glob, e.g. \"*.go\" or \"src/**/*.ts\"."},
    "maxResults": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "Most matching lines to return (default 200)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

type searchCodeTool struct{ spec }

func newSearchCode() Tool {
	return &searchCodeTool{spec{name: "search_code", desc: searchCodeDesc, category: CategoryRead, risk: RiskLow, schema: searchCodeSchema}}
}

func (t *searchCodeTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[SearchCodeArgs](t.name, raw)
	d := Description{Title: "Search code for " + a.Pattern}
	if a.Glob != "" {
		d.Detail = "in files matching " + a.Glob
	}
	return d
}

func (t *searchCodeTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[SearchCodeArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(t.name, env); err != nil {
		return nil, err
	}
	s, err := newCodeSearch(a)
	if err != nil {
		return nil, err
	}
	opts := fileset.Options{}
	if s.glob != nil {
		var ok bool
		opts, ok, err = walkDir(env, t.name, "glob", s.glob.dir)
		if err != nil {
			return nil, err
		}
		if !ok {
			return &Result{Output: SearchCodeOutput{Matches: []CodeMatch{}, Files: []string{}}}, nil
		}
	}
	s.log = env.Log()
	out, err := s.run(ctx, env.WS, opts)
	if err != nil {
		return nil, err
	}
	return &Result{Output: out}, nil
}

// codeSearch is one search_code call.
type codeSearch struct {
	re   *regexp.Regexp // per line
	find *prefilter     // required byte sequence; nil: none
	min  int            // fewest bytes of a match
	glob *globMatcher
	max  int
	log  *slog.Logger // nil: discard

	cutoff atomic.Pointer[string] // files after this path only need "has a match"
	mu     sync.Mutex
	kept   []fileMatches // files whose matches may be returned, at most max matches
	keptN  int
	files  []string
	skip   []string
	secret []string // sensitive files not read
	beyond bool     // a match was found that is not returned
}

func (s *codeSearch) logger() *slog.Logger {
	if s.log == nil {
		return discardLogger
	}
	return s.log
}

type fileMatches struct {
	path    string
	matches []CodeMatch
}

func newCodeSearch(a SearchCodeArgs) (*codeSearch, error) {
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return nil, errorf(CodeInvalidArgs, "search_code: pattern %q is not a valid RE2 regular expression: %v", a.Pattern, err)
	}
	s := &codeSearch{re: re, max: a.MaxResults}
	if s.max <= 0 {
		s.max = DefaultMaxResults
	}
	if a.Glob != "" {
		if s.glob, err = newGlobMatcher("search_code", a.Glob); err != nil {
			return nil, err
		}
	}
	// Without a prefilter (nil) every line goes to the regexp engine:
	// slower, but Go's backtracker on short lines beats its NFA on a whole
	// buffer.
	s.find = newPrefilter(a.Pattern)
	s.min = minLen(a.Pattern)
	return s, nil
}

func (s *codeSearch) run(ctx context.Context, ws *workspace.Workspace, opts fileset.Options) (SearchCodeOutput, error) {
	workers := SearchWorkers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0) + 1
	}
	root := ws.Root()
	// Open editor buffers are searched instead of their files on disk.
	overlays := map[string]bool{}
	for _, p := range ws.OpenOverlays() {
		overlays[p] = true
	}
	// A search reads every file it walks, so the sensitive list (.env,
	// keys) is left out, as read_file asks before reading one: named in
	// the output, never read.
	sensitive := ws.SensitiveMatcher()
	g, gctx := errgroup.WithContext(ctx)
	paths := make(chan fileset.Entry, 4096)
	g.Go(func() error {
		defer close(paths)
		return ws.Files().Walk(gctx, opts, func(e fileset.Entry) error {
			if !e.Mode.IsRegular() {
				return nil
			}
			if s.glob != nil && !s.glob.match(e.Path) {
				return nil
			}
			if sensitive(e.Path) != "" {
				s.mu.Lock()
				s.secret = append(s.secret, e.Path)
				s.mu.Unlock()
				return nil
			}
			select {
			case paths <- e:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	for range workers {
		g.Go(func() error {
			w := searchWorker{s: s, root: root, ws: ws, overlays: overlays}
			for e := range paths {
				if err := gctx.Err(); err != nil {
					return err
				}
				w.searchFile(e)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return SearchCodeOutput{}, fmt.Errorf("search_code: %w", ctx.Err())
		}
		return SearchCodeOutput{}, fmt.Errorf("search_code: walking the workspace: %w", err)
	}
	return s.result(), nil
}

// add records a file's matches; called only for files with at least one.
func (s *codeSearch) add(path string, ms []CodeMatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = append(s.files, path)
	if c := s.cutoff.Load(); c != nil && path > *c {
		s.beyond = true
		return
	}
	s.kept = append(s.kept, fileMatches{path: path, matches: ms})
	s.keptN += len(ms)
	if s.keptN < s.max {
		return
	}
	// Enough matches: only files sorting before the one that completes
	// max matches can still contribute. Drop the rest and tell workers.
	sort.Slice(s.kept, func(i, j int) bool { return s.kept[i].path < s.kept[j].path })
	n := 0
	for i, f := range s.kept {
		n += len(f.matches)
		if n >= s.max {
			if i+1 < len(s.kept) || n > s.max {
				s.beyond = true
			}
			s.kept = s.kept[:i+1]
			s.keptN = n
			c := f.path
			s.cutoff.Store(&c)
			return
		}
	}
}

func (s *codeSearch) result() SearchCodeOutput {
	sort.Slice(s.kept, func(i, j int) bool { return s.kept[i].path < s.kept[j].path })
	out := SearchCodeOutput{Matches: []CodeMatch{}, Truncated: s.beyond, Skipped: s.skip}
	for _, f := range s.kept {
		out.Matches = append(out.Matches, f.matches...)
	}
	if len(out.Matches) > s.max {
		out.Matches = out.Matches[:s.max]
		out.Truncated = true
	}
	sort.Strings(s.files)
	out.Files = s.files
	if out.Files == nil {
		out.Files = []string{}
	}
	if len(out.Files) > MaxSearchFiles {
		out.Files = out.Files[:MaxSearchFiles]
		out.Truncated = true
	}
	sort.Strings(out.Skipped)
	sort.Strings(s.secret)
	out.Sensitive = s.secret
	return out
}

// searchWorker searches files one after another with its own buffer.
type searchWorker struct {
	s        *codeSearch
	ws       *workspace.Workspace
	overlays map[string]bool // read-only
	root     string
	buf      []byte
}

func (w *searchWorker) searchFile(e fileset.Entry) {
	s := w.s
	if e.Size > MaxSearchFileSize {
		s.mu.Lock()
		s.skip = append(s.skip, e.Path)
		s.mu.Unlock()
		return
	}
	var data []byte
	if content, _, ok := w.overlayContent(e.Path); ok {
		data = content
	} else {
		var err error
		w.buf, err = readFileInto(w.root+"/"+e.Path, w.buf, e.Size)
		if err != nil {
			// Vanished or unreadable since the walk: not a match.
			s.logger().Debug("search_code: skipping file", "path", e.Path, "err", err)
			return
		}
		data = w.buf
	}
	if looksBinary(data) {
		return
	}
	limit := s.max + 1
	if c := s.cutoff.Load(); c != nil && e.Path > *c {
		limit = 1 // only whether it matches at all
	}
	if ms := s.searchData(e.Path, data, limit); len(ms) > 0 {
		s.add(e.Path, ms)
	}
}

// searchData returns up to limit matching lines of data.
func (s *codeSearch) searchData(path string, data []byte, limit int) []CodeMatch {
	var ms []CodeMatch
	var cur *cursor
	if s.find != nil && !s.find.foldUnsafe(data) {
		cur = s.find.cursor()
	}
	pos := 0             // always the start of a line
	line, lineAt := 1, 0 // line number of the line starting at lineAt
	for pos < len(data) {
		cand := pos // without a prefilter, every line is a candidate
		if cur != nil {
			if cand = cur.next(data, pos); cand < 0 {
				return ms
			}
		}
		start := pos + bytes.LastIndexByte(data[pos:cand], '\n') + 1
		end := len(data)
		if i := bytes.IndexByte(data[cand:], '\n'); i >= 0 {
			end = cand + i
		}
		text := data[start:end]
		if len(text) < s.min {
			pos = end + 1
			continue
		}
		if loc := s.re.FindIndex(text); loc != nil {
			line += bytes.Count(data[lineAt:start], []byte{'\n'})
			lineAt = start
			ms = append(ms, CodeMatch{Path: path, Line: line, Column: loc[0] + 1, Text: matchText(text)})
			if len(ms) >= limit {
				return ms
			}
		}
		pos = end + 1
	}
	return ms
}

func matchText(b []byte) string {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	cut := false
	if len(b) > maxMatchText {
		b = b[:maxMatchText]
		// Do not cut a character in half.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, _ := utf8.DecodeLastRune(b); r != utf8.RuneError {
				break
			}
			b = b[:len(b)-1]
		}
		cut = true
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut {
		s += "…"
	}
	return s
}

func (w *searchWorker) overlayContent(rel string) ([]byte, int32, bool) {
	if !w.overlays[rel] {
		return nil, 0, false
	}
	return w.ws.Overlay(rel)
}
