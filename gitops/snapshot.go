package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// refSafeRunID turns a run id into a reference name component: characters
// git refuses become '_' (the metadata keeps the id as given).
func refSafeRunID(id string) string {
	b := []byte(id)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '_'
		}
	}
	out := strings.ReplaceAll(string(b), "..", "__")
	if strings.HasPrefix(out, ".") {
		out = "_" + out[1:]
	}
	if strings.HasSuffix(out, ".lock") || strings.HasSuffix(out, ".") {
		out += "_"
	}
	if len(out) > 200 {
		out = out[:200]
	}
	return out
}

// Snapshot records the workspace now. It is on disk (fsync'd) when it returns.
func (s *Store) Snapshot(ctx context.Context, opts SnapshotOptions) (*Snapshot, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap, _, err := s.snapshotLocked(ctx, opts, "")
	return snap, err
}

// snapshotLocked takes a snapshot; refPrefix overrides where its reference
// goes (default: the run's, or manual). It also returns the scan.
func (s *Store) snapshotLocked(ctx context.Context, opts SnapshotOptions, refPrefix string) (*Snapshot, *scanResult, error) {
	if s.watcher != nil {
		s.changed = true
		snap, res, ok, err := s.snapshotWatched(ctx, opts, refPrefix)
		if ok {
			if err != nil {
				return nil, nil, fmt.Errorf("gitops: snapshot of %s: %w", s.root, err)
			}
			return snap, res, nil
		}
	}
	cache := s.ensureCache()
	var pw *packWriter
	// New objects always go into one pack: a handful of fsyncs per
	// snapshot instead of three per loose object. Small packs are merged
	// from time to time (consolidatePacks).
	newSink := func(bool) (objSink, error) {
		var err error
		pw, err = newPackWriter(filepath.Join(s.dir, "objects", "pack"))
		if err != nil {
			return nil, fmt.Errorf("gitops: start a pack in %s: %w", s.dir, err)
		}
		return packSink{s: s, p: pw}, nil
	}
	s.changed = true // objects may be written even if it fails
	res, sink, err := s.scan(ctx, newSink)
	fail := func(err error) (*Snapshot, *scanResult, error) {
		if pw != nil {
			pw.abort()
		}
		return nil, nil, fmt.Errorf("gitops: snapshot of %s: %w", s.root, err)
	}
	if err != nil {
		return fail(err)
	}
	if sink == nil {
		return fail(fmt.Errorf("no object sink"))
	}

	// Which directories changed since the cache (the last snapshot)?
	dirty := make(map[string]bool)
	changed := 0
	// Only re-hashed files can differ from the cache; removed are gone.
	for _, r := range res.rehashed {
		if old := cache.file(r.path); old == nil || old.hash != r.hash || old.mode != r.mode {
			markDirty(dirty, r.path)
			changed++
		}
	}
	for _, p := range res.removed {
		markDirty(dirty, p)
		changed++
	}
	if len(cache.trees) == 0 {
		dirty[""] = true
	}
	// The paths, in the order of res.files, are needed only to build
	// trees (and then kept in the new cache).
	var paths []string
	if len(dirty) > 0 {
		paths = make([]string, len(res.files))
		for i, r := range res.files {
			paths[i] = r.path
		}
	}
	trees := make(map[string]plumbing.Hash)
	carried := false
	if len(dirty) == 0 {
		// Nothing changed: the new cache shares the old one's tree ids
		// (neither changes them from now on) instead of copying them.
		trees = cache.trees
	} else if len(cache.trees) > 0 {
		// The clean directories keep their tree ids: one copy of the map
		// without the dirty directories, which build adds back if they
		// still hold files (a directory all of whose files went is
		// dirty, and so are its subdirectories). Copying them during
		// build walked every path of every clean directory: most of a
		// snapshot's tree building when a few files changed.
		trees = maps.Clone(cache.trees)
		for d := range dirty {
			delete(trees, d)
		}
		carried = true
	}
	tb := &treeBuilder{sink: sink, paths: paths, get: func(i int, _ string) *fileRec { return res.files[i] },
		prev: cache.trees, dirty: dirty, known: s.treesKnown, trees: trees, carried: carried}
	root, err := tb.build("", 0, len(paths))
	if err != nil {
		return fail(err)
	}
	known := scanChanges(cache, res)
	snap, err := s.commitSnapshot(ctx, opts, refPrefix, cache.trees[""], root, changed, res.m, res.files, res.emptyDirs, res.skipped, sink, &pw, &known)
	if err != nil {
		return fail(err)
	}
	skipped := make(map[string]SkippedFile, len(res.skipped))
	for _, sk := range res.skipped {
		skipped[sk.Path] = sk
	}
	next := &statCache{scanStart: res.start, files: res.m, trees: tb.trees, sorted: paths, skipped: skipped, recs: res.files, emptyDirs: res.emptyDirs}
	if res.unchanged {
		next.byDir = cache.byDir // the same records
	} else if cache.byDir != nil {
		next.deriveDirIndex(cache.byDir, res.touched)
	}
	s.cache = next
	s.treesKnown = make(map[plumbing.Hash]struct{}, len(tb.trees))
	for _, h := range tb.trees {
		s.treesKnown[h] = struct{}{}
	}
	if s.watcher != nil {
		s.watchBase = s.cache
	}
	// A few files re-hashed without a change only because they were racy
	// (modified within the racy window before the last scan) are not
	// worth rewriting the whole cache for, 6 MB on a large tree: saved
	// now they would still be racy for the next process. Files whose stat
	// changed (rewritten unchanged, as a restore does) are: otherwise
	// every later process hashes them again.
	if changed > 0 || res.statChanged > 0 || res.hashed > racyResave || s.cacheID == "" {
		if opts.unsavedCache != nil {
			*opts.unsavedCache = true
		} else {
			s.saveCacheAsync()
		}
	}
	if err := s.consolidatePacks(ctx); err != nil {
		s.log.Warn("gitops: could not merge small packs; gc will retry", "dir", s.dir, "err", err)
	}
	return snap, res, nil
}

// scanChanges lists the files that differ between the cache and the scan
// made from it, as diffTrees would between their trees (in its order):
// only re-hashed files can differ, and the removed ones are gone.
func scanChanges(cache *statCache, res *scanResult) []FileChange {
	out := []FileChange{}
	for _, r := range res.rehashed {
		old := cache.file(r.path)
		switch {
		case old == nil:
			out = append(out, FileChange{Path: r.path, Kind: ChangeAdded})
		case old.hash != r.hash || old.mode != r.mode && (old.mode == filemode.Symlink || r.mode == filemode.Symlink):
			out = append(out, FileChange{Path: r.path, Kind: ChangeModified})
		case old.mode != r.mode:
			out = append(out, FileChange{Path: r.path, Kind: ChangeMode})
		}
	}
	for _, p := range res.removed {
		out = append(out, FileChange{Path: p, Kind: ChangeDeleted})
	}
	slices.SortFunc(out, func(a, b FileChange) int { return treeOrder(a.Path, b.Path) })
	return out
}

// treeOrder compares paths as diffTrees lists them: component by
// component, a file before the directory of the same name.
func treeOrder(a, b string) int {
	for {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		ac, bc := a, b
		if ai >= 0 {
			ac = a[:ai]
		}
		if bi >= 0 {
			bc = b[:bi]
		}
		if c := strings.Compare(ac, bc); c != 0 {
			return c
		}
		switch {
		case ai < 0 && bi < 0:
			return 0
		case ai < 0:
			return -1
		case bi < 0:
			return 1
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}

// checkOverrideChanges makes commitSnapshot check the changes it was
// given for its overrides against the trees, and panic if they differ
// (every test of the package turns it on).
var checkOverrideChanges = false

// racyResave is how many files re-hashed without a change make a
// snapshot save the stat cache anyway.
const racyResave = 64

// commitSnapshot writes the snapshot's commit, completes the pack (if one
// was started), then writes the reference: once it returns, all of it is
// on disk. recs are the disk's files (sorted, if not nil, the same records
// in path order, which are cheaper to go through). known, if not nil, are the changes from prevRoot to root as the
// scan found them (scanChanges): used instead of reading both trees when
// root is what the scan built and prevRoot is not replaced below.
func (s *Store) commitSnapshot(ctx context.Context, opts SnapshotOptions, refPrefix string, prevRoot, root plumbing.Hash, changed int,
	recs map[string]*fileRec, sorted []*fileRec, emptyDirs map[string]bool, skipped []SkippedFile, sink objSink, pw **packWriter, known *[]FileChange) (*Snapshot, error) {
	files := len(recs)
	each := maps.Values(recs)
	if sorted != nil {
		files, each = len(sorted), slices.Values(sorted)
	}
	defer func() {
		s.stMu.Lock()
		s.pendingTrees = nil
		s.stMu.Unlock()
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cacheRoot, diskPrev := root, prevRoot
	var ov map[string]*treeFile
	if len(opts.Contents) > 0 || len(opts.overrides) > 0 {
		var err error
		if ov, err = s.contentOverrides(opts.Contents, sink); err != nil {
			return nil, err
		}
		for p, f := range opts.overrides {
			if _, given := ov[p]; !given {
				ov[p] = f
			}
		}
	}
	// The kept paths (ignored files the agent changed) as they are now,
	// unless given above.
	kept, err := s.loadKept()
	if err != nil {
		s.log.Warn("gitops: the kept paths cannot be read; this snapshot records no ignored file", "err", err)
	}
	var keptOv map[string]*treeFile
	if len(kept) > 0 {
		if ov == nil {
			ov = map[string]*treeFile{}
		}
		keptOv, _ = s.keptOverrides(kept, func(p string) bool { _, given := ov[p]; return given }, sink)
		for p, f := range keptOv {
			ov[p] = f
		}
	}
	if len(ov) > 0 {
		if root, err = s.patchTree(root, ov, sink); err != nil {
			return nil, fmt.Errorf("record the contents given: %w", err)
		}
	}
	keptRec := kept.paths()
	// Against the previous snapshot's tree: the one this process
	// committed if the cache is still the one it left, else the cache's
	// (what the store last recorded of the disk, by any process).
	if s.lastCommit.cacheRoot == prevRoot && !prevRoot.IsZero() {
		if s.lastCommit.commitRoot != prevRoot {
			known = nil
		}
		prevRoot = s.lastCommit.commitRoot
	}
	limitPerms := map[string]uint32{}
	if opts.Limit != nil {
		known = nil // both trees are the limited ones
		var err error
		if root, prevRoot, keptRec, err = s.limitTree(opts.Limit, diskPrev, cacheRoot, root, sink, limitPerms, keptRec); err != nil {
			return nil, fmt.Errorf("limit the snapshot to the step's paths: %w", err)
		}
	}
	var changes []FileChange
	omitted := 0
	if !prevRoot.IsZero() {
		switch {
		case known != nil && root == cacheRoot:
			changes = *known
		case opts.overrideChanges != nil && prevRoot == diskPrev && opts.Limit == nil && len(opts.Contents) == 0 && len(keptOv) == 0:
			changes = *opts.overrideChanges
			if checkOverrideChanges {
				want, err := s.diffTrees(prevRoot, root)
				if err != nil {
					return nil, err
				}
				if !slices.Equal(changes, want) {
					panic(fmt.Sprintf("gitops: the changes given for the overrides are %v, the trees differ in %v", changes, want))
				}
			}
		default:
			var err error
			if changes, err = s.diffTrees(prevRoot, root); err != nil {
				return nil, fmt.Errorf("compare with the previous snapshot: %w", err)
			}
		}
		changed = len(changes)
		if len(changes) > MaxRecordedChanges {
			omitted = len(changes) - MaxRecordedChanges
			changes = changes[:MaxRecordedChanges]
		}
	}
	kind := opts.kind
	if kind == "" {
		kind = KindManual
		if opts.RunID != "" {
			kind = KindRun
		}
	}
	meta := &snapMeta{RunID: opts.RunID, StepID: opts.StepID, Label: opts.Label, CreatedAt: time.Now().UTC(), Kind: kind,
		FilesChanged: changed, Changes: changes, ChangesOmitted: omitted, Files: files, Skipped: skipped, Absent: opts.absent, Kept: keptRec}
	if opts.Limit != nil && root != cacheRoot {
		meta.Disk = cacheRoot.String()
	}
	meta.permRecord(each)
	for p, f := range ov {
		if f != nil && f.perm != 0 {
			if meta.Perms == nil {
				meta.Perms = map[string]uint32{}
			}
			meta.Perms[p] = f.perm
		}
	}
	for p, pm := range limitPerms {
		if meta.Perms == nil {
			meta.Perms = map[string]uint32{}
		}
		meta.Perms[p] = pm
	}
	for d := range emptyDirs {
		meta.EmptyDirs = append(meta.EmptyDirs, d)
	}
	sort.Strings(meta.EmptyDirs)
	msg, err := commitMessage(meta)
	if err != nil {
		return nil, err
	}
	sig := agentdSig
	sig.When = meta.CreatedAt
	ch, data, err := encodeObject(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: root})
	if err != nil {
		return nil, err
	}
	if err := sink.put(plumbing.CommitObject, ch, data); err != nil {
		return nil, err
	}
	if *pw != nil {
		idx, err := (*pw).finish()
		*pw = nil
		if err != nil {
			return nil, err
		}
		s.packWritten(idx)
	}
	// Every object is on disk: now the reference.
	if opts.beforeRef != nil {
		if err := opts.beforeRef(); err != nil {
			return nil, err
		}
	}
	if refPrefix == "" {
		refPrefix = manRefPrefix
		if opts.RunID != "" {
			refPrefix = runRefPrefix + refSafeRunID(opts.RunID) + "/"
		}
	}
	snap, err := s.setSnapshotRef(ch, refPrefix, meta)
	if err != nil {
		return nil, err
	}
	s.lastCommit.cacheRoot, s.lastCommit.commitRoot = cacheRoot, root
	return snap, nil
}

// setSnapshotRef points the next reference under refPrefix at commit ch
// (every object of it on disk already), whose metadata is meta.
func (s *Store) setSnapshotRef(ch plumbing.Hash, refPrefix string, meta *snapMeta) (*Snapshot, error) {
	ref, err := s.nextRef(refPrefix)
	if err != nil {
		return nil, err
	}
	s.changed = true
	s.stMu.Lock()
	err = s.st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(ref), ch))
	s.stMu.Unlock()
	if err != nil {
		s.refCache = nil
		return nil, fmt.Errorf("write reference %s: %w", ref, err)
	}
	if s.refCache != nil {
		s.refCache[ref] = ch
	}
	snap := metaToSnapshot(ch, ref, meta)
	s.metaCache[ch] = snap
	cp := *snap
	return &cp, nil
}

func metaToSnapshot(h plumbing.Hash, ref string, m *snapMeta) *Snapshot {
	kind := m.Kind
	switch {
	case kind != "":
	case m.RunID != "":
		kind = KindRun
	case strings.HasPrefix(m.Label, "before restore to "): // written before kinds were recorded
		kind = KindSafety
	default:
		kind = KindManual
	}
	return &Snapshot{ID: h.String(), Ref: ref, RunID: m.RunID, StepID: m.StepID, Label: m.Label, Kind: kind,
		CreatedAt: m.CreatedAt, FilesChanged: m.FilesChanged, Changes: m.Changes, ChangesOmitted: m.ChangesOmitted,
		Files: m.Files, Skipped: m.Skipped, EmptyDirs: m.EmptyDirs}
}

// nextRef returns prefix + (the highest number there + 1).
func (s *Store) nextRef(prefix string) (string, error) {
	dir := filepath.Join(s.dir, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	max := 0
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > max {
			max = n
		}
	}
	return prefix + strconv.Itoa(max+1), nil
}

// refs returns every snapshot reference: name -> commit.
func (s *Store) refs() (map[string]plumbing.Hash, error) {
	if s.refCache != nil {
		return s.refCache, nil
	}
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if out, ok := s.readRefFiles(); ok {
		s.refCache = out
		return out, nil
	}
	it, err := s.st.IterReferences()
	if err != nil {
		return nil, err
	}
	out := make(map[string]plumbing.Hash)
	err = it.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && strings.HasPrefix(r.Name().String(), agentdRefRoot) {
			out[r.Name().String()] = r.Hash()
		}
		return nil
	})
	if err == nil {
		s.refCache = out
	}
	return out, err
}

// readRefFiles reads the snapshot references straight from their files
// under refs/agentd, one open, read and close each (a one-shot restore
// reads them all to find its target): go-git's reader goes through its
// filesystem layer, stats and buffers each file, and reads every
// reference of the repository. ok is false if they cannot all be read
// that way (a packed-refs file, or a file that is not a plain id), and
// go-git reads them.
func (s *Store) readRefFiles() (map[string]plumbing.Hash, bool) {
	if _, err := os.Lstat(filepath.Join(s.dir, "packed-refs")); !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	out := make(map[string]plumbing.Hash)
	var walk func(name string) bool
	walk = func(name string) bool {
		ents, err := os.ReadDir(filepath.Join(s.dir, filepath.FromSlash(name)))
		if err != nil {
			return errors.Is(err, fs.ErrNotExist) && name == strings.TrimSuffix(agentdRefRoot, "/")
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				continue // a temporary file (durableFS), never a reference
			}
			ref := name + "/" + e.Name()
			switch {
			case e.IsDir():
				if !walk(ref) {
					return false
				}
			case e.Type().IsRegular():
				h, ok := readRefFile(filepath.Join(s.dir, filepath.FromSlash(ref)))
				if !ok {
					return false
				}
				out[ref] = h
			default:
				return false
			}
		}
		return true
	}
	if !walk(strings.TrimSuffix(agentdRefRoot, "/")) {
		return nil, false
	}
	return out, true
}

// readRefFile reads a loose reference holding a commit id; ok is false if
// it cannot be read or holds anything else.
func readRefFile(name string) (plumbing.Hash, bool) {
	f, err := os.Open(name)
	if err != nil {
		return plumbing.ZeroHash, false
	}
	defer f.Close()
	var buf [64]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && err != io.ErrUnexpectedEOF {
		return plumbing.ZeroHash, false
	}
	id := strings.TrimRight(string(buf[:n]), "\n")
	if len(id) != 40 || !isHexPrefix(id) {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(id), true
}

// snapshots returns every snapshot's metadata, newest first.
func (s *Store) snapshots(runID string) ([]*Snapshot, error) {
	refs, err := s.refs()
	if err != nil {
		return nil, fmt.Errorf("gitops: list snapshots in %s: %w", s.dir, err)
	}
	var out []*Snapshot
	for name, h := range refs {
		if runID != "" && !strings.HasPrefix(name, runRefPrefix+refSafeRunID(runID)+"/") {
			continue
		}
		snap, err := s.snapshotAt(name, h)
		if err != nil {
			return nil, err
		}
		if runID != "" && snap.RunID != runID {
			continue
		}
		out = append(out, snap)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].Ref > out[j].Ref
	})
	return out, nil
}

// snapshotAt returns the metadata of snapshot h, which reference name
// points to.
func (s *Store) snapshotAt(name string, h plumbing.Hash) (*Snapshot, error) {
	snap, ok := s.metaCache[h]
	if !ok {
		c, err := s.readCommit(h)
		if err != nil {
			return nil, fmt.Errorf("gitops: read snapshot %s (%s): %w", h, name, err)
		}
		m, err := parseCommitMessage(c.Message)
		if err != nil {
			m = &snapMeta{Label: strings.TrimSpace(c.Message), CreatedAt: c.Committer.When}
		}
		snap = metaToSnapshot(h, name, m)
		s.metaCache[h] = snap
	}
	cp := *snap
	cp.Ref = name
	return &cp, nil
}

// List returns snapshots newest first, all or one run's.
func (s *Store) List(ctx context.Context, runID string) ([]*Snapshot, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.snapshots(runID)
}

// Get returns one snapshot by id or unique id prefix (or by reference:
// "refs/agentd/manual/3", "manual/3", "runs/RUN/2").
func (s *Store) Get(ctx context.Context, id string) (*Snapshot, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.getLocked(id)
}

func (s *Store) getLocked(id string) (*Snapshot, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, fmt.Errorf("gitops: no snapshot id given; run 'agentd snapshot list' to see snapshots: %w", ErrNotFound)
	}
	if isHexPrefix(id) {
		// An id (or prefix) is matched against the references' commit ids:
		// only the match's metadata is read, not every snapshot's (a
		// one-shot restore's first step).
		return s.getByID(strings.ToLower(id))
	}
	all, err := s.snapshots("")
	if err != nil {
		return nil, err
	}
	var match *Snapshot
	lower := strings.ToLower(id)
	for _, sn := range all {
		if sn.Ref == id || sn.Ref == agentdRefRoot+id {
			return sn, nil
		}
		if len(lower) >= 4 && strings.HasPrefix(sn.ID, lower) {
			if match != nil && match.ID != sn.ID {
				return nil, fmt.Errorf("gitops: snapshot id %q is ambiguous (%s, %s, ...); give more characters", id, match.ID[:12], sn.ID[:12])
			}
			if match == nil {
				match = sn
			}
		}
	}
	if match == nil {
		return nil, fmt.Errorf("gitops: snapshot %q not found in %s; run 'agentd snapshot list' to see snapshots: %w", id, s.dir, ErrNotFound)
	}
	return match, nil
}

// isHexPrefix reports whether id can only be a snapshot id or id prefix
// (at least 4 hex digits; a reference has a '/').
func isHexPrefix(id string) bool {
	if len(id) < 4 || len(id) > 40 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// getByID returns the snapshot whose id starts with prefix (lower-case
// hex). Of several references to it, the greatest name is reported, as
// the list (newest first, then by reference, descending) has it first.
func (s *Store) getByID(prefix string) (*Snapshot, error) {
	refs, err := s.refs()
	if err != nil {
		return nil, fmt.Errorf("gitops: list snapshots in %s: %w", s.dir, err)
	}
	var match plumbing.Hash
	name := ""
	for n, h := range refs {
		if !strings.HasPrefix(h.String(), prefix) {
			continue
		}
		if name != "" && h != match {
			return nil, fmt.Errorf("gitops: snapshot id %q is ambiguous (%s, %s, ...); give more characters", prefix, match.String()[:12], h.String()[:12])
		}
		if n > name {
			match, name = h, n
		}
	}
	if name == "" {
		return nil, fmt.Errorf("gitops: snapshot %q not found in %s; run 'agentd snapshot list' to see snapshots: %w", prefix, s.dir, ErrNotFound)
	}
	return s.snapshotAt(name, match)
}

// Files lists a snapshot's files (slash-separated, sorted).
func (s *Store) Files(ctx context.Context, id string) ([]string, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap, err := s.getLocked(id)
	if err != nil {
		return nil, err
	}
	files, err := s.snapshotFiles(snap.ID)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// snapshotFiles flattens a snapshot commit's tree.
func (s *Store) snapshotFiles(id string) (map[string]treeFile, error) {
	c, err := s.readCommit(plumbing.NewHash(id))
	if err != nil {
		return nil, fmt.Errorf("gitops: read snapshot %s: %w", id, err)
	}
	files, err := s.flatten(c.TreeHash)
	if err != nil {
		return nil, fmt.Errorf("gitops: read snapshot %s: %w", id, err)
	}
	return files, nil
}
