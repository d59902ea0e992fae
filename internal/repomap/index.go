package repomap

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	sitter "github.com/tree-sitter/go-tree-sitter"

	"github.com/agentd/agentd/internal/fileset"
)

// Source is the workspace the map is made of: its file set, its root, and
// the editor's unsaved buffers (which win over the disk).
// *workspace.Workspace implements it.
type Source interface {
	Root() string
	Files() *fileset.Set
	OpenOverlays() []string
	Overlay(p string) (content []byte, version int32, ok bool)
}

// Options tune a Map.
type Options struct {
	// CacheFile, if set, is where the per-file symbols are kept between
	// processes (in agentd's state dir, never in the workspace).
	CacheFile string
	// MaxFileBytes: larger files are listed without symbols (default 1 MiB).
	MaxFileBytes int64
	// Workers parse in parallel (default GOMAXPROCS).
	Workers int
	// EagerBytes: when the files not yet parsed are at most this many bytes
	// in all, Update parses them all; otherwise files are parsed when the
	// ranking needs them (default 16 MiB).
	EagerBytes int64
	Logger     *slog.Logger
}

type hash [sha256.Size]byte

// tags is what parsing one file's content gives; shared by every path
// with the same content.
type tags struct {
	Syms   []Symbol
	Idents []uint32 // sorted hashes (identHash) of the identifiers the file uses
	// Parsed is false until the file's symbols were looked for: a big
	// tree is parsed lazily, the files the ranking needs first.
	Parsed bool
	words  []symWords // the ranking's view of Syms, made on first use
}

// file is one file of the index.
type file struct {
	Path    string
	Size    int64
	ModTime int64
	Ino     uint64
	Hash    hash
	Tags    *tags
	overlay bool
	words   []string // pathWords
}

// Map is a workspace's repository map: every source file in a supported
// language with its top-level symbols and the identifiers it uses. Update
// brings it up to date, re-parsing only files whose content changed
// (cached by content hash, in memory and in Options.CacheFile); Render
// ranks it for a request. Safe for concurrent use.
type Map struct {
	src  Source
	opts Options
	log  *slog.Logger

	mu     sync.Mutex // one Update at a time; guards everything below
	files  map[string]*file
	byHash map[hash]*tags
	loaded bool
	dirty  bool
	parsed int // files parsed by the last Update (and the rankings since)
	read   int // files read and hashed by the last Update
}

// New returns a map of src. Nothing is read until Update.
func New(src Source, opts Options) *Map {
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = 1 << 20
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.EagerBytes == 0 {
		opts.EagerBytes = 16 << 20
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Map{src: src, opts: opts, log: log, files: map[string]*file{}, byHash: map[hash]*tags{}}
}

// Stats describes the last Update.
type Stats struct {
	Files  int // source files in the map
	Parsed int // files parsed (content not in the cache), by Update and the rankings since
	Read   int // files read by Update (new, changed, or open in the editor)
}

// Stats returns the figures of the last Update.
func (m *Map) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Files: len(m.files), Parsed: m.parsed, Read: m.read}
}

// job is a file whose content must be looked up or parsed.
type job struct {
	f       *file
	content []byte // nil: read from disk
}

// Update brings the map up to date with the workspace: files are walked
// (ignore rules apply), unchanged ones (size, mtime, inode) are kept, the
// others are read and hashed, and only content not seen before is parsed.
// Open buffers are read from the editor's overlays.
func (m *Map) Update(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.loaded {
		m.loaded = true
		if err := m.load(); err != nil {
			m.log.Warn("repository map cache not loaded; parsing every file", "file", m.opts.CacheFile, "err", err)
			m.files, m.byHash = map[string]*file{}, map[hash]*tags{}
		}
	}
	var mu sync.Mutex
	seen := make(map[string]bool, len(m.files))
	var jobs []job
	err := m.src.Files().Walk(ctx, fileset.Options{}, func(e fileset.Entry) error {
		if e.Mode&os.ModeSymlink != 0 || langOf(e.Path) == nil {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		seen[e.Path] = true
		old := m.files[e.Path]
		if old != nil && !old.overlay && old.Size == e.Size && old.ModTime == e.ModTime.UnixNano() && old.Ino == e.Ino {
			return nil
		}
		jobs = append(jobs, job{f: &file{Path: e.Path, Size: e.Size, ModTime: e.ModTime.UnixNano(), Ino: e.Ino}})
		return nil
	})
	if err != nil {
		return fmt.Errorf("repository map of %s: %w", m.src.Root(), err)
	}
	for p := range m.files {
		if !seen[p] {
			delete(m.files, p)
			m.dirty = true
		}
	}
	open := map[string][]byte{}
	for _, p := range m.src.OpenOverlays() {
		if langOf(p) == nil {
			continue
		}
		if data, _, ok := m.src.Overlay(p); ok {
			open[p] = data
		}
	}
	// A file that was an overlay and is now closed is read again.
	for p, f := range m.files {
		if _, still := open[p]; f.overlay && !still && seen[p] {
			if fi, err := os.Lstat(filepath.Join(m.src.Root(), filepath.FromSlash(p))); err == nil {
				jobs = append(jobs, job{f: &file{Path: p, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}})
			}
		}
	}
	kept := jobs[:0]
	for _, j := range jobs {
		if _, ok := open[j.f.Path]; !ok {
			kept = append(kept, j)
		}
	}
	jobs = kept
	for p, data := range open {
		if old := m.files[p]; old != nil && old.overlay && old.Size == int64(len(data)) && old.Hash == sha256.Sum256(data) {
			continue
		}
		jobs = append(jobs, job{f: &file{Path: p, Size: int64(len(data)), overlay: true}, content: data})
	}
	m.parsed, m.read = 0, len(jobs)
	if err := m.scan(ctx, jobs); err != nil {
		return err
	}
	if len(jobs) > 0 {
		m.dirty = true
	}
	var pending []*file
	var bytes int64
	for _, f := range m.files {
		if f.Tags != nil && !f.Tags.Parsed {
			pending = append(pending, f)
			bytes += f.Size
		}
	}
	if len(pending) > 0 && bytes <= m.opts.EagerBytes {
		return m.parse(ctx, pending)
	}
	return nil
}

// scan reads and hashes jobs on Workers goroutines; content not seen
// before gets its identifiers (a fast lexical pass) and waits for parse.
func (m *Map) scan(ctx context.Context, jobs []job) error {
	if len(jobs) == 0 {
		return nil
	}
	type result struct {
		f      *file
		h      hash
		idents []uint32
		err    error
	}
	var hmu sync.RWMutex // the workers look up byHash while results are merged
	known := func(h hash) bool {
		hmu.RLock()
		defer hmu.RUnlock()
		_, ok := m.byHash[h]
		return ok
	}
	results := m.parallel(ctx, len(jobs), func(i int, _ *sitter.Parser) any {
		var buf []uint32
		j := jobs[i]
		r := result{f: j.f}
		data := j.content
		if data == nil {
			var err error
			data, err = os.ReadFile(filepath.Join(m.src.Root(), filepath.FromSlash(j.f.Path)))
			if err != nil {
				r.err = err
				return r
			}
		}
		r.h = sha256.Sum256(data)
		if !known(r.h) && int64(len(data)) <= m.opts.MaxFileBytes && !looksBinary(data) {
			r.idents = identHashes(data, buf)
		}
		return r
	})
	for v := range results {
		r := v.(result)
		if r.err != nil {
			if !errors.Is(r.err, os.ErrNotExist) {
				m.log.Debug("repository map: unreadable file", "path", r.f.Path, "err", r.err)
			}
			delete(m.files, r.f.Path)
			continue
		}
		r.f.Hash = r.h
		hmu.RLock()
		t, ok := m.byHash[r.h]
		hmu.RUnlock()
		if !ok {
			t = &tags{Idents: r.idents, Parsed: r.idents == nil}
			hmu.Lock()
			m.byHash[r.h] = t
			hmu.Unlock()
		}
		r.f.Tags = t
		m.files[r.f.Path] = r.f
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.gc()
	return nil
}

// parse looks for the symbols of files not parsed yet (in parallel). A
// file whose content changed since the scan is left for the next Update.
func (m *Map) parse(ctx context.Context, files []*file) error {
	var todo []*file
	seen := map[*tags]bool{}
	for _, f := range files {
		if f != nil && f.Tags != nil && !f.Tags.Parsed && !seen[f.Tags] {
			seen[f.Tags] = true
			todo = append(todo, f)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	type result struct {
		t    *tags
		syms []Symbol
		ok   bool
	}
	results := m.parallel(ctx, len(todo), func(i int, p *sitter.Parser) any {
		f := todo[i]
		data, _, ok := m.src.Overlay(f.Path)
		if !f.overlay || !ok {
			var err error
			data, err = os.ReadFile(filepath.Join(m.src.Root(), filepath.FromSlash(f.Path)))
			if err != nil {
				return result{}
			}
		}
		if sha256.Sum256(data) != f.Hash {
			return result{}
		}
		syms, err := symbolsOf(ctx, p, langOf(f.Path), data)
		if err != nil {
			return result{}
		}
		return result{t: f.Tags, syms: syms, ok: true}
	})
	for v := range results {
		if r := v.(result); r.ok {
			r.t.Syms, r.t.Parsed = r.syms, true
			m.parsed++
			m.dirty = true
		}
	}
	return ctx.Err()
}

// parallel runs fn(0..n-1) on Workers goroutines, each with its own
// parser, and yields the results as they come; it stops early when ctx
// is done.
func (m *Map) parallel(ctx context.Context, n int, fn func(int, *sitter.Parser) any) <-chan any {
	idx := make(chan int)
	out := make(chan any, 64)
	var wg sync.WaitGroup
	for range min(m.opts.Workers, n) {
		wg.Go(func() {
			var p *sitter.Parser
			defer func() {
				if p != nil {
					p.Close()
				}
			}()
			for i := range idx {
				if p == nil {
					p = sitter.NewParser()
				}
				out <- fn(i, p)
			}
		})
	}
	go func() {
		defer close(idx)
		for i := range n {
			select {
			case idx <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	return out
}

// gc drops cached content no file has any more, once it outnumbers the files.
func (m *Map) gc() {
	if len(m.byHash) <= 2*len(m.files)+1000 {
		return
	}
	live := make(map[hash]*tags, len(m.files))
	for _, f := range m.files {
		live[f.Hash] = f.Tags
	}
	m.byHash = live
}

func looksBinary(data []byte) bool {
	n := min(len(data), 8000)
	for _, b := range data[:n] {
		if b == 0 {
			return true
		}
	}
	return false
}

// maxIdents bounds the identifiers kept per file.
const maxIdents = 4000

// identHashes returns the sorted, distinct hashes of the identifiers (3+
// characters) of a source file: the references that link files in the
// ranking. A lexical scan is enough here (a name used in a comment or a
// string is a fair hint too), and hashes need no shared table, so files
// are scanned in parallel. A rare collision only adds a spurious link.
func identHashes(data []byte, buf []uint32) []uint32 {
	out := buf[:0]
	for i := 0; i < len(data); {
		c := data[i]
		if isIdentStart(c) {
			h := uint32(2166136261)
			j := i
			for j < len(data) && isIdentPart(data[j]) {
				h = (h ^ uint32(data[j])) * 16777619
				j++
			}
			if j-i >= 3 && j-i <= 64 {
				out = append(out, h)
			}
			i = j
			continue
		}
		if c >= '0' && c <= '9' {
			for i < len(data) && isIdentPart(data[i]) {
				i++
			}
			continue
		}
		i++
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxIdents {
		out = out[:maxIdents]
	}
	return append(make([]uint32, 0, len(out)), out...)
}

// identHash is the hash identHashes gives name.
func identHash(name string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return h
}

// identifiers returns the distinct identifiers (3+ characters) of text.
func identifiers(data []byte) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(data); {
		if isIdentStart(data[i]) {
			j := i
			for j < len(data) && isIdentPart(data[j]) {
				j++
			}
			if w := string(data[i:j]); j-i >= 3 && !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
			i = j
			continue
		}
		i++
	}
	return out
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
