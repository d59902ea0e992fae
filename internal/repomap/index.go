package repomap

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

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
	// Watch makes the map keep a file watcher (fileset.Watcher) from its
	// first Update until Close, so that later Updates check only the
	// files that changed instead of every file of the tree. For
	// long-lived processes (the daemon); one-shot commands walk.
	Watch  bool
	Logger *slog.Logger
	// Secret, if set, returns (once per Update) a matcher of the files
	// whose content no model may see without asking (the workspace's
	// sensitive list): they are left out of the map, symbols and all.
	Secret func() func(rel string) string
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
	ix     int32      // 1 + its index in Map.ix.contents; 0: not in the index
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
	seen    uint32   // the full walk (Map.walkGen) that last found it
	words   []string // pathWords
	lower   string   // lowerPath
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

	mu sync.Mutex // one Update at a time; guards everything below
	// secretMatch is Options.Secret's matcher for this Update (nil: none).
	secretMatch func(rel string) string
	files       map[string]*file
	byHash      map[hash]*tags
	ix          *identIndex // from the cache file: who uses which identifier
	loaded      bool
	dirty       bool
	// unsaved holds the files read, parsed or dropped since the cache
	// file was written (touch): Save writes their records to the delta
	// file beside it until they are too many (see deltaEvery).
	unsaved map[string]bool
	// baseID identifies the cache file loaded or written (0: none); a
	// delta file applies only to the cache file it was made against.
	baseID uint64
	parsed int // files parsed by the last Update (and the rankings since)
	read   int // files read and hashed by the last Update

	watcher   *fileset.Watcher // Options.Watch, from the first Update on
	stopWatch context.CancelFunc
	watchOff  bool   // no watcher: it failed to start, or Close
	walks     int    // Updates since the last full walk
	walkGen   uint32 // full walks so far
	walked    bool   // the last Update walked the whole tree
	dirGen    uint64 // the file set's DirCacheGen when its listings were loaded or saved
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
	// Walked: the last Update walked the whole tree (stat'ing every
	// source file) rather than checking the watcher's paths only.
	Walked bool
}

// Stats returns the figures of the last Update.
func (m *Map) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Files: len(m.files), Parsed: m.parsed, Read: m.read, Walked: m.walked}
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
//
// With Options.Watch, only the paths the file watcher reports are
// checked after the first Update (a full walk still runs every
// fullWalkEvery Updates, and whenever the watcher may have missed events).
func (m *Map) Update(ctx context.Context) (err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer func() {
		if err != nil {
			// The watcher's paths were drained but perhaps not all
			// checked: the next Update walks.
			m.walks = fullWalkEvery
		}
	}()
	if !m.loaded {
		m.loaded = true
		if err := m.load(); err != nil {
			m.log.Warn("repository map cache not loaded; parsing every file", "file", m.opts.CacheFile, "err", err)
			m.files, m.byHash, m.ix = map[string]*file{}, map[hash]*tags{}, nil
		}
	}
	m.secretMatch = nil
	if m.opts.Secret != nil {
		m.secretMatch = m.opts.Secret()
	}
	jobs, err := m.changed(ctx)
	if err != nil {
		return fmt.Errorf("repository map of %s: %w", m.src.Root(), err)
	}
	open := map[string][]byte{}
	for _, p := range m.src.OpenOverlays() {
		if langOf(p) == nil || m.secret(p) {
			continue
		}
		if data, _, ok := m.src.Overlay(p); ok {
			open[p] = data
		}
	}
	// A file that was an overlay and is now closed is read again (if it
	// is still on disk: m.files holds only files found there).
	for p, f := range m.files {
		if !f.overlay {
			continue
		}
		if _, still := open[p]; !still {
			if fi, err := os.Lstat(filepath.Join(m.src.Root(), filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() {
				jobs = append(jobs, job{f: &file{Path: p, Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), Ino: inoOf(fi)}})
			} else {
				delete(m.files, p) // the buffer of a file not on disk
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
		for _, j := range jobs {
			m.touch(j.f.Path)
		}
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

// fullWalkEvery bounds how many Updates in a row may trust the watcher:
// the periodic full walk stays the truth.
const fullWalkEvery = 20

// changed finds the source files that are new or whose size, mtime or
// inode changed, as jobs, and drops the files that are gone (or ignored
// now) from m.files. With a watcher it checks only the paths the watcher
// reports; otherwise (and when the watcher cannot vouch for its list) it
// walks the whole tree.
func (m *Map) changed(ctx context.Context) ([]job, error) {
	m.walked = false
	if m.opts.Watch && m.watcher == nil && !m.watchOff {
		// Started before the walk below, so that no change after the walk
		// is missed.
		wctx, cancel := context.WithCancel(context.Background())
		w, err := m.src.Files().Watch(wctx)
		if err != nil {
			cancel()
			m.watchOff = true
			m.log.Warn("repository map: no file watcher; every map checks every file", "root", m.src.Root(), "err", err)
		} else {
			m.watcher, m.stopWatch = w, cancel
			m.walks = 0
			return m.walkAll(ctx)
		}
	}
	if m.watcher == nil || m.walks >= fullWalkEvery {
		if m.watcher != nil {
			m.watcher.DrainContext(ctx) // the walk covers what it holds
		}
		m.walks = 0
		return m.walkAll(ctx)
	}
	paths, overflow := m.watcher.DrainContext(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if overflow {
		m.walks = 0
		return m.walkAll(ctx)
	}
	for _, p := range paths {
		if base := path.Base(p); p == "" || p == "." || base == ".gitignore" || base == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") {
			m.walks = 0
			return m.walkAll(ctx) // ignore rules or a repository changed
		}
	}
	m.walks++
	return m.recheck(ctx, paths)
}

// walkAll walks the whole tree: files not found are dropped, the others
// checked.
func (m *Map) walkAll(ctx context.Context) ([]job, error) {
	m.walked = true
	m.walkGen++
	jobs, err := m.walk(ctx, "", nil)
	if err != nil {
		return nil, err
	}
	for p, f := range m.files {
		if f.seen != m.walkGen {
			delete(m.files, p)
			m.dirty = true
			m.touch(p)
		}
	}
	return jobs, nil
}

// walk lists the source files under dir ("" for the root) into seen (nil:
// marks the files of m.files it finds with walkGen) and returns those new
// or changed since the map last read them. The walk
// does not stat (most files are not source files); only the source files
// are, in parallel on the walk's goroutines, one lock per directory.
func (m *Map) walk(ctx context.Context, dir string, seen map[string]bool) ([]job, error) {
	var mu sync.Mutex
	var jobs []job
	root := m.src.Root()
	err := m.src.Files().WalkDirs(ctx, fileset.Options{Dir: dir, NoStat: true}, func(d string, files []fileset.Entry) error {
		var names []string
		for _, e := range files {
			if e.Mode&os.ModeSymlink == 0 && langOf(e.Path) != nil && !m.secret(e.Path) {
				names = append(names, e.Path)
			}
		}
		var found []string
		var mine []job
		statFiles(root, d, names, func(p string, st stat) {
			old := m.files[p]
			if seen != nil {
				found = append(found, p)
			} else if old != nil {
				old.seen = m.walkGen // each file is found by one goroutine
			}
			if j, ok := stale(old, p, st); ok {
				mine = append(mine, j)
			}
		})
		mu.Lock()
		defer mu.Unlock()
		for _, p := range found {
			seen[p] = true
		}
		jobs = append(jobs, mine...)
		return nil
	})
	return jobs, err
}

// stat is what Update compares to tell whether a file changed.
type stat struct {
	size, mtime int64
	ino         uint64
}

func statOf(fi os.FileInfo) stat {
	return stat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inoOf(fi)}
}

// stale returns a job for p if old, the map's record of it (nil: none),
// is not up to date.
func stale(old *file, p string, st stat) (job, bool) {
	if old != nil && !old.overlay && old.Size == st.size && old.ModTime == st.mtime && old.Ino == st.ino {
		return job{}, false
	}
	return job{f: &file{Path: p, Size: st.size, ModTime: st.mtime, Ino: st.ino}}, true
}

// recheck checks only the paths the watcher reported: a file is checked
// as a walk would, a directory is walked, a path gone is dropped with
// everything below it.
func (m *Map) recheck(ctx context.Context, paths []string) ([]job, error) {
	var jobs []job
	root := m.src.Root()
	for _, p := range paths {
		p = strings.Trim(p, "/")
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
		switch {
		case err != nil:
			m.drop(p, nil)
		case fi.IsDir():
			seen := map[string]bool{}
			if !m.src.Files().Ignored(p, true) {
				js, err := m.walk(ctx, p, seen)
				if err != nil {
					return nil, err
				}
				jobs = append(jobs, js...)
			}
			m.drop(p, seen)
		case !fi.Mode().IsRegular() || langOf(p) == nil || m.src.Files().Ignored(p, false) || m.secret(p):
			m.drop(p, nil)
		default:
			if j, ok := stale(m.files[p], p, statOf(fi)); ok {
				jobs = append(jobs, j)
			}
		}
	}
	// A file may be reported as itself and under its directories.
	byPath := make(map[string]bool, len(jobs))
	kept := jobs[:0]
	for _, j := range jobs {
		if !byPath[j.f.Path] {
			byPath[j.f.Path] = true
			kept = append(kept, j)
		}
	}
	return kept, ctx.Err()
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
	results := m.parallel(ctx, len(jobs), func(i int, _ *parsers) any {
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
			r.idents = identHashes(data)
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
		path string
		syms []Symbol
		ok   bool
	}
	results := m.parallel(ctx, len(todo), func(i int, p *parsers) any {
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
			if ctx.Err() == nil {
				m.log.Warn("repository map: cannot parse", "path", f.Path, "err", err)
			}
			return result{}
		}
		return result{t: f.Tags, path: f.Path, syms: syms, ok: true}
	})
	for v := range results {
		if r := v.(result); r.ok {
			r.t.Syms, r.t.Parsed = r.syms, true
			m.parsed++
			m.touch(r.path)
			m.dirty = true
		}
	}
	return ctx.Err()
}

// parallel runs fn(0..n-1) on Workers goroutines, each with its own
// parser, and yields the results as they come; it stops early when ctx
// is done.
func (m *Map) parallel(ctx context.Context, n int, fn func(int, *parsers) any) <-chan any {
	idx := make(chan int)
	out := make(chan any, 64)
	var wg sync.WaitGroup
	for range min(m.opts.Workers, n) {
		wg.Go(func() {
			p := parsers{log: m.log}
			defer p.close()
			for i := range idx {
				out <- fn(i, &p)
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

// drop removes p and the files below it from the map, except those in keep.
func (m *Map) drop(p string, keep map[string]bool) {
	if _, ok := m.files[p]; ok {
		delete(m.files, p)
		m.dirty = true
		m.touch(p)
	}
	prefix := p + "/"
	for q := range m.files {
		if strings.HasPrefix(q, prefix) && !keep[q] {
			delete(m.files, q)
			m.dirty = true
			m.touch(q)
		}
	}
}

// touch notes that p's record is not the cache file's any more.
func (m *Map) touch(p string) {
	if m.unsaved == nil {
		m.unsaved = map[string]bool{}
	}
	m.unsaved[p] = true
}

// Close stops the file watcher (Options.Watch), if any. The map stays
// usable: later Updates walk the tree.
func (m *Map) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watcher == nil {
		return nil
	}
	m.stopWatch()
	err := m.watcher.Close()
	m.watcher, m.stopWatch, m.watchOff = nil, nil, true
	return err
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
func identHashes(data []byte) []uint32 {
	set := identSets.Get().(*identSet)
	defer identSets.Put(set)
	set.reset()
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
				set.add(h)
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
	// A file uses each name many times: only the distinct ones are sorted.
	out := set.list
	slices.Sort(out)
	if len(out) > maxIdents {
		out = out[:maxIdents]
	}
	return append(make([]uint32, 0, len(out)), out...)
}

// identSet collects distinct hashes: an open-addressing table whose slots
// are valid only when stamped with the current generation, so that it is
// reused from file to file without clearing.
type identSet struct {
	keys  []uint32
	stamp []uint32
	gen   uint32
	list  []uint32 // the distinct hashes, in the order first seen
}

var identSets = sync.Pool{New: func() any { return &identSet{} }}

func (s *identSet) reset() {
	s.list = s.list[:0]
	s.gen++
	if s.gen == 0 || len(s.keys) == 0 {
		n := max(len(s.keys), 1024)
		s.keys, s.stamp, s.gen = make([]uint32, n), make([]uint32, n), 1
	}
}

func (s *identSet) add(h uint32) {
	if 2*(len(s.list)+1) > len(s.keys) {
		s.grow()
	}
	mask := uint32(len(s.keys) - 1)
	for i := (h * 0x9e3779b1) & mask; ; i = (i + 1) & mask {
		if s.stamp[i] != s.gen {
			s.stamp[i], s.keys[i] = s.gen, h
			s.list = append(s.list, h)
			return
		}
		if s.keys[i] == h {
			return
		}
	}
}

// grow doubles the table and puts the hashes seen so far back.
func (s *identSet) grow() {
	n := 2 * len(s.keys)
	s.keys, s.stamp, s.gen = make([]uint32, n), make([]uint32, n), 1
	mask := uint32(n - 1)
	for _, h := range s.list {
		i := (h * 0x9e3779b1) & mask
		for s.stamp[i] == s.gen {
			i = (i + 1) & mask
		}
		s.stamp[i], s.keys[i] = s.gen, h
	}
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

// identChar classifies bytes for the identifier scans: 1 starts an
// identifier (letters, _ and $), 2 continues one (digits too).
var identChar = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		switch {
		case b == '_' || b == '$' || (b|0x20 >= 'a' && b|0x20 <= 'z'):
			t[c] = 1
		case b >= '0' && b <= '9':
			t[c] = 2
		}
	}
	return t
}()

func isIdentStart(c byte) bool { return identChar[c] == 1 }

func isIdentPart(c byte) bool { return identChar[c] != 0 }

// secret reports whether p is on the sensitive list (Options.Secret).
func (m *Map) secret(p string) bool {
	return m.secretMatch != nil && m.secretMatch(p) != ""
}
