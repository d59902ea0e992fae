package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"syscall"

	"github.com/agentd/agentd/diff"
)

// Builder accumulates a change set. Later operations on the same path see
// the earlier ones (write then edit works). Paths are keyed by their
// symlink-resolved form, so a file named through a link inside the
// workspace and by its own name is one file; FileChange.Path is that form.
// Read and Exists follow a link at the end of the path; Write, WriteMode,
// Delete and Move act on the link itself (see links.go).
// A Builder is safe for concurrent use, but operations from several
// goroutines apply in whatever order they arrive.
type Builder struct {
	w   *Workspace
	ctx context.Context

	mu    sync.Mutex
	files map[string]*draft // by real rel
}

// draft is one path's state in a Builder.
type draft struct {
	rel string // symlink-resolved, slash-separated

	origExists bool
	orig       []byte
	origMode   fs.FileMode

	exists bool
	cur    []byte
	mode   fs.FileMode

	// movedFrom is the path whose original content was moved here (through
	// any number of moves); "" if none.
	movedFrom string
}

// Propose starts a change set computed against what the user sees now
// (overlays included).
func (w *Workspace) Propose(ctx context.Context) *Builder {
	return &Builder{w: w, ctx: ctx, files: make(map[string]*draft)}
}

// load returns the draft of a resolved path, reading its current state on
// first use.
// loadExisting is load for a file that must exist; errors name p, the
// path as the caller gave it. The caller holds b.mu.
func (b *Builder) loadExisting(r resolved, p string) (*draft, error) {
	d, err := b.load(r)
	if err != nil {
		return nil, &PathError{Path: p, Err: err}
	}
	if !d.exists {
		return nil, &PathError{Path: p, Err: fs.ErrNotExist}
	}
	return d, nil
}

func (b *Builder) load(r resolved) (*draft, error) {
	if d, ok := b.files[r.real]; ok {
		return d, nil
	}
	if err := b.ctx.Err(); err != nil {
		return nil, err
	}
	content, exists, mode, err := b.w.entry(r.real)
	if err != nil {
		return nil, err
	}
	d := &draft{
		rel:        r.real,
		origExists: exists,
		orig:       content,
		origMode:   mode,
		exists:     exists,
		cur:        content,
		mode:       mode,
	}
	b.files[r.real] = d
	return d, nil
}

// Read returns a path's content as the change set so far would leave it.
func (b *Builder) Read(p string) ([]byte, error) {
	r, err := b.w.resolve(p)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.loadExisting(r, p)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(d.cur), nil
}

// Exists reports whether the path exists as the change set so far would
// leave it.
func (b *Builder) Exists(p string) (bool, error) {
	r, err := b.w.resolve(p)
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.load(r)
	if err != nil {
		return false, &PathError{Path: p, Err: err}
	}
	return d.exists, nil
}

// Write creates or replaces a file's content. A new file gets mode 0644,
// an existing one keeps its mode.
func (b *Builder) Write(p string, content []byte) error {
	return b.write(p, content, 0)
}

// WriteMode is Write that also sets the file's permission bits (for
// example 0755 for a script).
func (b *Builder) WriteMode(p string, content []byte, mode fs.FileMode) error {
	if mode.Perm() == 0 {
		return &PathError{Path: p, Err: fmt.Errorf("%w: mode %v has no permission bits", ErrInvalidPath, mode)}
	}
	return b.write(p, content, mode.Perm())
}

func (b *Builder) write(p string, content []byte, mode fs.FileMode) error {
	r, err := b.w.resolveEntryWrite(p)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.load(r)
	if err != nil {
		return &PathError{Path: p, Err: err}
	}
	d.exists = true
	d.cur = bytes.Clone(content)
	if d.cur == nil {
		d.cur = []byte{}
	}
	if mode != 0 {
		d.mode = mode
	} else if d.mode&fs.ModeSymlink != 0 {
		d.mode = 0o644 // a link replaced by a new regular file
	}
	return nil
}

// Delete deletes a file.
func (b *Builder) Delete(p string) error {
	r, err := b.w.resolveEntryWrite(p)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.loadExisting(r, p)
	if err != nil {
		return err
	}
	d.exists = false
	d.cur = nil
	d.movedFrom = ""
	return nil
}

// Move moves a file. The destination must not exist.
func (b *Builder) Move(from, to string) error {
	rf, err := b.w.resolveEntryWrite(from)
	if err != nil {
		return err
	}
	rt, err := b.w.resolveEntryWrite(to)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	src, err := b.loadExisting(rf, from)
	if err != nil {
		return err
	}
	dst, err := b.load(rt)
	if err != nil {
		return &PathError{Path: to, Err: err}
	}
	if src == dst {
		return nil
	}
	if dst.exists && dst.origExists && bytes.Equal(dst.cur, dst.orig) && b.w.sameEntry(src.rel, dst.rel) {
		// A rename of the name's case where the file system ignores it:
		// dst is src's own file, found under the new spelling.
		dst.exists, dst.origExists, dst.orig, dst.cur = false, false, nil, nil
	}
	if dst.exists {
		return &PathError{Path: to, Err: fmt.Errorf("%w: not moving %s over it", fs.ErrExist, from)}
	}
	dst.exists = true
	dst.cur = src.cur
	dst.mode = src.mode
	switch {
	case src.movedFrom != "":
		dst.movedFrom = src.movedFrom
	case src.origExists:
		dst.movedFrom = src.rel
	default:
		dst.movedFrom = "" // created in this change set: a create at dst
	}
	src.exists = false
	src.cur = nil
	src.movedFrom = ""
	return nil
}

// Build returns the change set (nil if it changes nothing). Diffs are
// computed. Files are sorted by path.
func (b *Builder) Build() *ChangeSet {
	b.mu.Lock()
	defer b.mu.Unlock()

	// A move stays a move only if its source is gone at the end and its
	// destination did not exist before; otherwise it is a create (or
	// modify) of the destination plus whatever happened to the source.
	moves := make(map[string]*draft) // source rel -> destination draft
	for _, d := range b.files {
		if !d.exists || d.movedFrom == "" || d.origExists {
			continue
		}
		if s := b.files[d.movedFrom]; s != nil && !s.exists {
			moves[d.movedFrom] = d
		}
	}

	paths := make([]string, 0, len(b.files))
	for p := range b.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)

	cs := &ChangeSet{ID: NewID()}
	for _, p := range paths {
		d := b.files[p]
		if _, ok := moves[p]; ok {
			continue // part of the move to its destination
		}
		var fc *FileChange
		if d.movedFrom != "" && moves[d.movedFrom] == d {
			s := b.files[d.movedFrom]
			fc = &FileChange{Path: d.rel, OldPath: s.rel, Op: OpMove, Old: s.orig, New: d.cur, Mode: d.mode}
			fc.finish(s.origMode)
		} else {
			fc = d.change()
		}
		if fc != nil {
			cs.Files = append(cs.Files, fc)
		}
	}
	if len(cs.Files) == 0 {
		return nil
	}
	return cs
}

// change returns the FileChange of a draft that is not part of a move, nil
// if it changes nothing.
func (d *draft) change() *FileChange {
	var fc *FileChange
	switch {
	case d.origExists && d.exists:
		if bytes.Equal(d.orig, d.cur) && d.origMode == d.mode {
			return nil
		}
		fc = &FileChange{Path: d.rel, Op: OpModify, Old: d.orig, New: d.cur, Mode: d.mode}
	case !d.origExists && d.exists:
		fc = &FileChange{Path: d.rel, Op: OpCreate, New: d.cur, Mode: d.mode}
	case d.origExists && !d.exists:
		fc = &FileChange{Path: d.rel, Op: OpDelete, Old: d.orig, Mode: d.origMode}
	default:
		return nil
	}
	fc.finish(d.origMode)
	return fc
}

// finish fills BaseHash, Binary and Diff from Path, OldPath, Op, Old, New
// and Mode; oldMode is the mode of the file the change was computed against.
func (fc *FileChange) finish(oldMode fs.FileMode) {
	oldPath, newPath := fc.Path, fc.Path
	var oldGit, newGit uint32
	switch fc.Op {
	case OpCreate:
		oldPath = ""
		fc.BaseHash = ""
		newGit = gitMode(fc.Mode)
	case OpDelete:
		newPath = ""
		fc.BaseHash = Hash(fc.Old)
		oldGit = gitMode(oldMode)
	case OpMove:
		oldPath = fc.OldPath
		fc.BaseHash = Hash(fc.Old)
		oldGit, newGit = gitMode(oldMode), gitMode(fc.Mode)
	default:
		fc.BaseHash = Hash(fc.Old)
		oldGit, newGit = gitMode(oldMode), gitMode(fc.Mode)
	}
	fc.Binary = diff.IsBinary(fc.Old) || diff.IsBinary(fc.New)
	fc.Diff = diff.Compute(oldPath, newPath, fc.Old, fc.New)
	if fc.Diff != nil {
		fc.Diff.OldMode, fc.Diff.NewMode = oldGit, newGit
		if fc.Diff.Binary {
			fc.Binary = true
		}
	}
}

// gitMode is the mode git records for a file of mode m.
func gitMode(m fs.FileMode) uint32 {
	switch {
	case m&fs.ModeSymlink != 0:
		return 0o120000
	case m&0o111 != 0:
		return 0o100755
	default:
		return 0o100644
	}
}

// current returns what the user sees at a symlink-free rel now: the
// overlay if the file is open, else the file on disk; exists is false if
// neither exists. mode is the file's mode on disk (0644 if it is only an
// overlay).
func (w *Workspace) current(real string) (content []byte, exists bool, mode fs.FileMode, err error) {
	mode = 0o644
	fi, lerr := w.dir.Lstat(real)
	if lerr == nil {
		mode = fi.Mode()
	}
	if text, _, ok := w.overlayOf(real); ok {
		// An empty buffer of a file that is not on disk is the editor
		// showing a file the agent may create (opened from a hunk list
		// before it was accepted), not a file: a create stays a create.
		if len(text) == 0 && errors.Is(lerr, fs.ErrNotExist) {
			return nil, false, 0o644, nil
		}
		return text, true, mode.Perm(), nil
	}
	data, m, err := w.readDisk(real)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, false, 0o644, nil
		}
		return nil, false, 0, err
	}
	return data, true, m.Perm(), nil
}

// ChangeBetween is the FileChange that takes path from one state to
// another (each given by its content, mode and whether the file exists):
// a create, modify or delete with its diff computed, nil when the two
// states are the same. It describes a change already made elsewhere (an
// MCP tool's, read from the snapshots around it) for review.
func ChangeBetween(path string, old []byte, oldMode fs.FileMode, oldExists bool, new []byte, newMode fs.FileMode, newExists bool) *FileChange {
	d := &draft{rel: path, orig: old, origMode: oldMode, origExists: oldExists, cur: new, mode: newMode, exists: newExists}
	if !oldExists {
		d.orig = nil
	}
	if !newExists {
		d.cur = nil
	}
	return d.change()
}
