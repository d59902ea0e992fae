package fileset

import (
	"io/fs"
	"sync"
	"sync/atomic"
	"time"
)

// dirRacyWindow is how old a directory's last change must be before its
// listing is cached: a second change within the same timestamp tick would
// otherwise leave its stat unchanged (git's "racy" rule, as for files).
var dirRacyWindow = 2 * time.Second

// dirCache keeps, across walks, each directory's listing after ignore
// matching (what git's untracked cache does): a directory whose stat is
// unchanged, and whose ignore rules are the same parsed files, is not read
// again; only its files are lstat'ed. The rule sources outside the tree
// (index, info/exclude, global excludes) are the cache's key: when one of
// them changes, the whole cache is dropped. The .gitignore files on a
// directory's path are compared by identity (the file cache re-parses a
// file whose stat changed, which yields a new list). Safe for concurrent
// use.
type dirCache struct {
	mu      sync.Mutex
	index   *gitIndex
	exclude *patternList
	global  *patternList
	top     string                // the rules' top, for rulesKey
	dirs    map[string]*cachedDir // repository-relative directory
	hits    atomic.Int64          // listings reused (tests check the cache is used)
	gen     atomic.Uint64         // changes with every change of dirs
	// loaded is the rulesKey of a cache loaded from disk and not yet bound
	// to the rules of a walk (nil otherwise).
	loaded *fingerprint
	// changed are the directories put or dropped since the cache was
	// loaded or saved (all: it was cleared meanwhile), and entries the
	// files and sub-directories their listings held.
	changed map[string]bool
	entries int
	all     bool
}

type cachedDir struct {
	st        stamp
	hasIgnore bool           // the directory has a .gitignore entry
	lists     []*patternList // the ignore chain that applied, innermost first
	fps       []fingerprint  // instead of lists, for a listing loaded from disk
	files     []cachedFileEnt
	subdirs   []string // names of sub-directories walked into
	excluded  []string // names of excluded sub-directories (tracked files only)
}

type cachedFileEnt struct {
	name    string
	path    string      // repository-relative: kept, not joined again each walk
	typ     fs.FileMode // 0 or fs.ModeSymlink
	tracked bool
}

// begin makes the cache apply to r: it is cleared when a rule source
// outside the tree changed.
func (c *dirCache) begin(r *rules) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded != nil {
		// A cache from disk applies if it was made under the same rules.
		if *c.loaded == rulesKey(r) {
			c.index, c.exclude, c.global, c.top = r.index, r.exclude, r.global, r.top
		}
		c.loaded = nil
	}
	if c.dirs == nil || !sameIndex(c.index, r.index) || c.exclude != r.exclude || c.global != r.global {
		c.dirs = make(map[string]*cachedDir)
		c.index, c.exclude, c.global, c.top = r.index, r.exclude, r.global, r.top
		c.gen.Add(1)
		c.all = true
	}
}

// valid reports whether r is still the rule set the cache applies to (a
// concurrent walk may have started with other rules).
func (c *dirCache) get(r *rules, dir string) *cachedDir {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sameIndex(c.index, r.index) || c.exclude != r.exclude || c.global != r.global {
		return nil
	}
	return c.dirs[dir]
}

func (c *dirCache) put(r *rules, dir string, d *cachedDir) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sameIndex(c.index, r.index) || c.exclude != r.exclude || c.global != r.global {
		return
	}
	if d == nil {
		if old, ok := c.dirs[dir]; ok {
			delete(c.dirs, dir)
			c.gen.Add(1)
			c.noteChanged(dir, old)
		}
		return
	}
	c.dirs[dir] = d
	c.gen.Add(1)
	c.noteChanged(dir, d)
}

// noteChanged records that dir's listing changed, to d or from d (c.mu
// held).
func (c *dirCache) noteChanged(dir string, d *cachedDir) {
	if c.all {
		return
	}
	if c.changed == nil {
		c.changed = make(map[string]bool)
	}
	c.changed[dir] = true
	if d != nil {
		c.entries += len(d.files) + len(d.subdirs) + len(d.excluded)
	}
}

// chainLists returns the pattern lists of n's chain, innermost first.
func chainLists(n *dirNode) []*patternList {
	var out []*patternList
	for ; n != nil; n = n.parent {
		if n.list != nil {
			out = append(out, n.list)
		}
	}
	return out
}

func sameChain(n *dirNode, lists []*patternList) bool {
	i := 0
	for ; n != nil; n = n.parent {
		if n.list == nil {
			continue
		}
		if i >= len(lists) || lists[i] != n.list {
			return false
		}
		i++
	}
	return i == len(lists)
}

// dirStamp returns the stat data of the open directory d, and whether it
// is old enough (not racy) for its listing to be cached.
func dirStamp(d *dirHandle, now time.Time) (stamp, bool) {
	st, err := d.stat()
	if err != nil {
		return stamp{}, false
	}
	limit := now.Add(-dirRacyWindow).UnixNano()
	return st, st.mtime < limit && st.ctime < limit
}

// sameIndex reports whether a and b are the same parsed index (an absent
// index is a new empty one each time).
func sameIndex(a, b *gitIndex) bool {
	if a == b {
		return true
	}
	return a != nil && b != nil && len(a.tracked) == 0 && len(b.tracked) == 0 && len(a.gitlink) == 0 && len(b.gitlink) == 0
}
