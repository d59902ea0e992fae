package gitops

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/agentd/agentd/internal/cachefile"
	"github.com/agentd/agentd/internal/fileset"
	"github.com/agentd/agentd/workspace"
)

// Defaults of Options.
const (
	DefaultMaxFileSize = 20 << 20
	DefaultKeepRuns    = 50
	DefaultQuota       = 1 << 30
)

// lister is what the store needs of the workspace's file set: exactly the
// files git would consider, with their lstat data, and the ignore rules.
// *fileset.Set implements it.
type lister interface {
	Walk(ctx context.Context, opts fileset.Options, fn func(fileset.Entry) error) error
	WalkDirs(ctx context.Context, opts fileset.Options, fn func(dir string, files []fileset.Entry) error) error
	Ignored(rel string, isDir bool) bool
	IgnoredBy(rel string, isDir bool, read func(string) []byte) bool
}

// dirCacheSaver is implemented by *fileset.Set: its directory cache (the
// listings after ignore matching) is kept in the store between processes,
// so that a CLI command's walk reads again only directories that changed.
type dirCacheSaver interface {
	SaveDirCache(w io.Writer) error
	LoadDirCache(data []byte) error
	DirCacheGen() uint64
	DirCacheChanges() (dirs, entries, total int, all bool)
}

// dirResave is how many entries (files and sub-directories) the listings
// that changed since the directory cache was loaded or saved must hold
// for a process to save it (or an eighth of its directories must have
// changed: on a small tree saving costs little). Listing them again costs
// each later process a millisecond at most.
const dirResave = 256

// watchable is implemented by *fileset.Set.
type watchable interface {
	Watch(ctx context.Context) (*fileset.Watcher, error)
}

// Layout of the store directory (a bare git repository) beyond git's files.
const (
	agentdDir     = "agentd"
	lockName      = "agentd/lock"
	cacheName     = "agentd/statcache"
	dirCacheName  = "agentd/dircache"
	journalName   = "agentd/restore-journal.json"
	rootName      = "agentd/root"
	gcGenName     = "agentd/gc-generation"
	runRefPrefix  = "refs/agentd/runs/"
	manRefPrefix  = "refs/agentd/manual/"
	agentdRefRoot = "refs/agentd/"
)

// Open opens (creating if needed) the store for ws, finishing or rolling
// back any restore a crash interrupted.
func Open(ctx context.Context, ws *workspace.Workspace, opts Options) (*Store, error) {
	if ws == nil {
		return nil, errors.New("gitops: open store: no workspace")
	}
	return openStore(ctx, ws.Root(), ws.Files(), opts)
}

// StoreDir is the shadow repository's path for the workspace root under
// stateDir ("" = DefaultStateDir()).
func StoreDir(stateDir, root string) string {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return filepath.Join(stateDir, "workspaces", hex.EncodeToString(sum[:])[:20])
}

func openStore(ctx context.Context, root string, files lister, opts Options) (*Store, error) {
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir()
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.KeepRuns <= 0 {
		opts.KeepRuns = DefaultKeepRuns
	}
	if opts.Quota <= 0 {
		opts.Quota = DefaultQuota
	}
	if files == nil {
		return nil, errors.New("gitops: open store: workspace has no file set")
	}
	root = filepath.Clean(root)
	dir := StoreDir(opts.StateDir, root)
	if err := CheckStateDir(opts.StateDir, root); err != nil {
		return nil, fmt.Errorf("gitops: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, agentdDir), 0o755); err != nil {
		return nil, fmt.Errorf("gitops: create snapshot store %s: %w", dir, err)
	}
	s := &Store{root: root, files: files, opts: opts, dir: dir, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if lg, ok := files.(interface{ SetLogger(*slog.Logger) }); ok && opts.Logger != nil {
		lg.SetLogger(opts.Logger)
	}
	s.metaCache = make(map[plumbing.Hash]*Snapshot)
	lk, err := lockFile(ctx, filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("gitops: open snapshot store %s: %w", dir, err)
	}
	defer lk.unlock()
	if err := s.openStorage(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if _, err := git.Init(s.st, nil); err != nil && !errors.Is(err, git.ErrRepositoryAlreadyExists) {
			return nil, fmt.Errorf("gitops: initialise snapshot store %s: %w", dir, err)
		}
		if err := writeFileAtomic(filepath.Join(dir, rootName), []byte(root+"\n"), 0o644, true); err != nil {
			return nil, fmt.Errorf("gitops: initialise snapshot store %s: %w", dir, err)
		}
	}
	s.removeTempFiles()
	if err := s.recoverRestore(ctx); err != nil {
		return nil, err
	}
	// The stat cache (6 MB for 80k files) is read and decoded while the
	// directory cache is, and while the caller gets on with its operation
	// (reading the references and packs a restore needs): a one-shot
	// command waited for one and then the other. It goes with the gc
	// generation read here: a gc by another process before this one's
	// first operation drops it (refreshFromDisk).
	if gen, err := os.ReadFile(filepath.Join(dir, gcGenName)); err == nil {
		s.gcGen = string(gen)
	}
	s.preloadCache()
	s.loadDirCache()
	return s, nil
}

// cacheMode is how a cache file is read: mapped whole in a one-shot
// process, whose decoded caches point into it (reading them into the heap
// first was, with its page faults, a tenth of a cold no-change snapshot's
// system time); read by the daemon, which outlives the files.
func cacheMode() cachefile.Mode {
	if oneShot.Load() {
		return cachefile.MapAll
	}
	return cachefile.Copy
}

// loadDirCache gives the file set the directory cache saved in the store.
func (s *Store) loadDirCache() {
	dc, ok := s.files.(dirCacheSaver)
	if !ok {
		return
	}
	if data, err := cachefile.Load(filepath.Join(s.dir, dirCacheName), cacheMode()); err == nil {
		if err := dc.LoadDirCache(data); err != nil {
			s.log.Debug("gitops: saved directory cache not used; the next walk lists every directory", "dir", s.dir, "err", err)
		}
	}
	s.dirCacheGen = dc.DirCacheGen()
}

// dirCacheSave returns a function that saves the file set's directory
// cache if it changed since it was loaded or last saved (nil: nothing to
// do). It may run in the background: the cache is safe for concurrent use.
func (s *Store) dirCacheSave() func() {
	dc, ok := s.files.(dirCacheSaver)
	if !ok || dc.DirCacheGen() == s.dirCacheGen {
		return nil
	}
	if dirs, entries, total, all := dc.DirCacheChanges(); !all && entries <= dirResave && dirs <= total/8 {
		// The next process lists these few directories again (their
		// saved listings are stale by their stamps), and so does every
		// process until one saves: less, while they hold few entries,
		// than writing the whole cache (4 MB for a large tree) each time.
		return nil
	}
	s.dirCacheGen = dc.DirCacheGen()
	return func() {
		var b bytes.Buffer
		if err := dc.SaveDirCache(&b); err != nil {
			return
		}
		if err := writeFileAtomic(filepath.Join(s.dir, dirCacheName), b.Bytes(), 0o644, false); err != nil {
			s.log.Warn("gitops: could not save the directory cache; the next process lists every directory", "dir", s.dir, "err", err)
		}
	}
}

func (s *Store) openStorage() error {
	s.closePacks()
	base := osfs.New(s.dir)
	dfs := &durableFS{Filesystem: base, root: s.dir}
	s.st = filesystem.NewStorageWithOptions(dfs, cache.NewObjectLRU(32*cache.MiByte), filesystem.Options{})
	return nil
}

// removeTempFiles deletes what a killed writer left in objects/ (its
// temporary objects and packs). The caller holds the store lock, so no
// writer is running.
func (s *Store) removeTempFiles() {
	for _, d := range []string{filepath.Join(s.dir, "objects"), filepath.Join(s.dir, "objects", "pack"), filepath.Join(s.dir, agentdDir)} {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, "tmp_obj_") || strings.HasPrefix(n, "tmp_pack_") || strings.HasPrefix(n, ".tmp-") {
				_ = os.Remove(filepath.Join(d, n))
			}
		}
	}
	// A pack without its index (or the reverse) is one a killed process was
	// writing or merging: no reference needs it (references are written
	// after the pack is complete; merged objects are in the new pack
	// before an old one is deleted), and go-git cannot open the store
	// while it is there.
	packDir := filepath.Join(s.dir, "objects", "pack")
	if ents, err := os.ReadDir(packDir); err == nil {
		have := make(map[string]bool, len(ents))
		for _, e := range ents {
			have[e.Name()] = true
		}
		for _, e := range ents {
			n := e.Name()
			if base, ok := strings.CutSuffix(n, ".pack"); ok && !have[base+".idx"] {
				_ = os.Remove(filepath.Join(packDir, n))
			}
			if base, ok := strings.CutSuffix(n, ".idx"); ok && !have[base+".pack"] {
				_ = os.Remove(filepath.Join(packDir, n))
			}
		}
	}
	// Temporary reference files (durableFS.Create) live beside the refs.
	_ = filepath.WalkDir(filepath.Join(s.dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".tmp-") {
			_ = os.Remove(p)
		}
		return nil
	})
}

// Dir is the shadow repository's path.
func (s *Store) Dir() string { return s.dir }

// Root is the workspace root the store snapshots.
func (s *Store) Root() string { return s.root }

// Close releases the store (and its watcher).
func (s *Store) Close() error {
	s.mu.Lock()
	w := s.watcher
	s.watcher = nil
	s.mu.Unlock()
	var err error
	if w != nil {
		err = w.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitCacheSave()
	if s.cacheUnsaved && s.cache != nil {
		s.saveCache()
	} else if save := s.dirCacheSave(); save != nil {
		save()
	}
	s.stMu.Lock()
	s.closePacks()
	s.stMu.Unlock()
	if s.st != nil {
		if cerr := s.st.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// lock takes the in-process and the cross-process lock of the store and
// reloads what another process may have changed meanwhile. Every process
// that changes the store writes a new token into the lock file before it
// unlocks, so an unchanged token means nothing needs reloading.
func (s *Store) lock(ctx context.Context) (func(), error) {
	s.mu.Lock()
	lk, err := lockFile(ctx, filepath.Join(s.dir, lockName))
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.waitCacheSave()
	buf := make([]byte, 64)
	n, _ := lk.f.ReadAt(buf, 0)
	if tok := string(buf[:n]); tok != s.token || tok == "" {
		s.refreshFromDisk()
		s.token = tok
	}
	s.changed = false
	return func() {
		if s.changed {
			s.tokenSeq++
			tok := fmt.Sprintf("%d-%d-%d", os.Getpid(), time.Now().UnixNano(), s.tokenSeq)
			if _, err := lk.f.WriteAt([]byte(tok), 0); err == nil && lk.f.Truncate(int64(len(tok))) == nil {
				s.token = tok
			} else {
				s.token = ""
			}
		}
		lk.unlock()
		s.mu.Unlock()
	}, nil
}

// refreshFromDisk drops in-memory state another process may have made
// stale: a gc elsewhere may have pruned objects the cache names, and a
// snapshot elsewhere may have added packs and references.
func (s *Store) refreshFromDisk() {
	gen, _ := os.ReadFile(filepath.Join(s.dir, gcGenName))
	if string(gen) != s.gcGen {
		s.gcGen = string(gen)
		s.cache = nil
		s.dropPreload()
		s.treesKnown = nil
	}
	if fi, err := os.Stat(filepath.Join(s.dir, cacheName)); err == nil {
		id := fmt.Sprintf("%d/%d/%d", fi.Size(), fi.ModTime().UnixNano(), inode(fi))
		if id != s.cacheID && s.cacheID != "" {
			// Another process snapshotted since: our cache is still correct
			// (the objects it names exist) but theirs is newer.
			s.cache = nil
			s.treesKnown = nil
			s.dropPreload()
		}
	}
	s.refCache = nil
	s.stMu.Lock()
	s.st.ObjectStorage.Reindex()
	s.packsStale = true
	s.stMu.Unlock()
}

func (s *Store) ensureCache() *statCache {
	if s.cache == nil {
		if pre := s.takePreload(); pre != nil {
			s.cache = pre
		} else {
			s.cache = loadStatCache(filepath.Join(s.dir, cacheName))
			s.noteCacheID()
		}
	}
	return s.cache
}

// preloadedCache is a stat cache read in the background, with the
// identity (size, mtime, inode) of the file it was read from.
type preloadedCache struct {
	c  *statCache
	id string
}

// preloadCache starts reading the saved stat cache in the background;
// ensureCache takes it if the file is still the one read.
func (s *Store) preloadCache() {
	ch := make(chan preloadedCache, 1)
	s.preload = ch
	name := filepath.Join(s.dir, cacheName)
	go func() {
		var out preloadedCache
		if f, err := os.Open(name); err == nil {
			if fi, err := f.Stat(); err == nil {
				data, err := cachefile.Open(f, fi.Size(), cacheMode())
				if err == nil {
					if c, err := decodeStatCache(data); err == nil {
						out = preloadedCache{c: c, id: fmt.Sprintf("%d/%d/%d", fi.Size(), fi.ModTime().UnixNano(), inode(fi))}
					}
				}
			}
			f.Close()
		}
		ch <- out
	}()
}

// takePreload returns the preloaded stat cache if the saved file is still
// the one it was read from (nil: load it now), and notes the file's
// identity.
func (s *Store) takePreload() *statCache {
	ch := s.preload
	if ch == nil {
		return nil
	}
	s.preload = nil
	pre := <-ch
	s.noteCacheID()
	if pre.c == nil || pre.id != s.cacheID {
		return nil
	}
	return pre.c
}

// dropPreload forgets a stat cache being read in the background.
func (s *Store) dropPreload() {
	if s.preload != nil {
		<-s.preload
		s.preload = nil
	}
}

func (s *Store) noteCacheID() {
	if fi, err := os.Stat(filepath.Join(s.dir, cacheName)); err == nil {
		s.cacheID = fmt.Sprintf("%d/%d/%d", fi.Size(), fi.ModTime().UnixNano(), inode(fi))
	} else {
		s.cacheID = ""
	}
}

func (s *Store) saveCache() {
	s.waitCacheSave()
	if save := s.dirCacheSave(); save != nil {
		save()
	}
	if s.cache == nil {
		return
	}
	s.cacheUnsaved = false
	if err := writeFileAtomic(filepath.Join(s.dir, cacheName), s.cache.encode(), 0o644, false); err != nil {
		s.log.Warn("gitops: could not save the stat cache; the next snapshot re-hashes files", "dir", s.dir, "err", err)
		s.cacheID = ""
		return
	}
	s.noteCacheID()
}

// saveCacheAsync saves a cache that nothing changes any more (a full
// scan's) in the background; every operation waits for it first (lock).
func (s *Store) saveCacheAsync() {
	s.waitCacheSave()
	c := s.cache
	s.cacheUnsaved = false
	saveDirs := s.dirCacheSave()
	done := make(chan struct{})
	s.saving = done
	go func() {
		defer close(done)
		if saveDirs != nil {
			saveDirs()
		}
		if err := writeFileAtomic(filepath.Join(s.dir, cacheName), c.encode(), 0o644, false); err != nil {
			s.log.Warn("gitops: could not save the stat cache; the next snapshot re-hashes files", "dir", s.dir, "err", err)
		}
	}()
}

// waitCacheSave waits for a background save (caller holds s.mu).
func (s *Store) waitCacheSave() {
	if s.saving != nil {
		<-s.saving
		s.saving = nil
		s.noteCacheID()
	}
}

func isInside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// storeState is the mutable part of Store, guarded by Store.mu.
type storeState struct {
	cache        *statCache
	cacheID      string
	preload      chan preloadedCache // the stat cache being read in the background (preloadCache)
	gcGen        string
	treesKnown   map[plumbing.Hash]struct{}
	metaCache    map[plumbing.Hash]*Snapshot
	watcher      *fileset.Watcher
	watchBase    *statCache    // the cache the watcher's dirty sets apply to
	watchFull    int           // snapshots since the last full walk while watching
	cacheUnsaved bool          // the in-memory cache is newer than the persisted one
	dirCacheGen  uint64        // the file set's DirCacheGen when its cache was last loaded or saved
	saving       chan struct{} // closed when a background cache save is done
	// Paths the watcher reported that no snapshot has looked at yet.
	pending         map[string]struct{}
	pendingOverflow bool
	walks           atomic.Int64 // full walks (tests check the watcher is used)
	walkNo          uint32       // the number of the last full walk (fileRec.seen)

	token    string // the lock file's content when we last held it
	tokenSeq int
	changed  bool                     // this operation changed the store
	refCache map[string]plumbing.Hash // snapshot references; nil = reload

	hashed atomic.Int64 // files read and hashed (tests check the cache)

	// lastCommit: the tree this process last committed (commitRoot, with
	// SnapshotOptions.Contents and overrides) and the disk's tree the
	// cache got from that snapshot (cacheRoot).
	lastCommit struct{ cacheRoot, commitRoot plumbing.Hash }
}

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
