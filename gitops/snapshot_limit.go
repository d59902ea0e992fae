package gitops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// SnapshotLimit limits a snapshot to what one step of a run changed, so
// that the user's own edits made meanwhile are not recorded as the
// agent's (a restore of the run's start then keeps them, as conflicts).
//
// The snapshot takes from the disk only the paths in Paths, and with
// ChangedOnDisk also every path that changed on disk since the store's
// previous snapshot; every other path keeps its version in Base (a tree
// level merge). Its recorded changes are against Base.
type SnapshotLimit struct {
	// Base is the snapshot every path left out keeps its version from:
	// the run's previous snapshot. Required.
	Base string
	// Paths are workspace-relative slash paths the step is known to have
	// changed (a file tool's change set, both paths of a move); a
	// directory covers everything below it.
	Paths []string
	// ChangedOnDisk also takes every path whose file changed on disk
	// since the store's previous snapshot (of any kind): used while a
	// command ran, which may have written anything.
	ChangedOnDisk bool
}

// limitTree applies lim to the snapshot being committed: root is its tree
// (with SnapshotOptions.Contents in place), diskRoot the disk's tree it was
// built from, and diskPrev the disk's tree at the store's previous
// snapshot. It returns the limited tree and Base's tree (to compare with),
// and records in perms the permission bits of the paths kept from Base.
//
// kept are the kept paths recorded in root; it returns those the limited
// tree records: the ones the step took, and the ones Base records (the
// others keep Base's state, which stands for their pre-images).
func (s *Store) limitTree(lim *SnapshotLimit, diskPrev, diskRoot, root plumbing.Hash, sink objSink, perms map[string]uint32, kept []string) (plumbing.Hash, plumbing.Hash, []string, error) {
	if lim.Base == "" {
		return plumbing.ZeroHash, plumbing.ZeroHash, nil, fmt.Errorf("a limited snapshot needs the snapshot to keep the other paths from (SnapshotLimit.Base)")
	}
	base, err := s.getLocked(lim.Base)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, nil, fmt.Errorf("the limit's base snapshot %s: %w", lim.Base, err)
	}
	c, err := s.readCommit(plumbing.NewHash(base.ID))
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, nil, fmt.Errorf("the limit's base snapshot %s: %w", short(base.ID), err)
	}
	baseMeta, err := parseCommitMessage(c.Message)
	if err != nil {
		baseMeta = &snapMeta{}
	}
	take := map[string]bool{}
	var dirs []string
	for _, p := range lim.Paths {
		p = strings.TrimSuffix(p, "/")
		if err := checkRel(p); err != nil {
			return plumbing.ZeroHash, plumbing.ZeroHash, nil, fmt.Errorf("SnapshotLimit.Paths: %w", err)
		}
		take[p] = true
		dirs = append(dirs, p+"/")
	}
	if lim.ChangedOnDisk && diskPrev != diskRoot {
		moved, err := s.diffTrees(diskPrev, diskRoot)
		if err != nil {
			return plumbing.ZeroHash, plumbing.ZeroHash, nil, fmt.Errorf("compare the disk with the previous snapshot: %w", err)
		}
		for _, ch := range moved {
			take[ch.Path] = true
		}
	}
	taken := func(p string) bool {
		if take[p] {
			return true
		}
		for _, d := range dirs {
			if strings.HasPrefix(p, d) {
				return true
			}
		}
		return false
	}
	changes, err := s.diffTrees(c.TreeHash, root)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, nil, fmt.Errorf("compare with the limit's base snapshot %s: %w", short(base.ID), err)
	}
	var keptRec []string
	for _, p := range kept {
		if taken(p) || slices.Contains(baseMeta.Kept, p) {
			keptRec = append(keptRec, p)
		}
	}
	var keep []string
	for _, ch := range changes {
		if !taken(ch.Path) {
			keep = append(keep, ch.Path)
		}
	}
	if len(keep) == 0 {
		return root, c.TreeHash, keptRec, nil
	}
	old, err := s.lookupFiles(c.TreeHash, keep)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, nil, err
	}
	ov := make(map[string]*treeFile, len(keep))
	for _, p := range keep {
		if f, ok := old[p]; ok {
			ov[p] = &treeFile{mode: f.mode, hash: f.hash}
			if pm := baseMeta.perm(p, f.mode); pm != 0 {
				perms[p] = pm
			}
		} else {
			ov[p] = nil // added since Base, not by the step
		}
	}
	limited, err := s.patchTree(root, ov, sink)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, nil, fmt.Errorf("keep the paths the step did not change: %w", err)
	}
	return limited, c.TreeHash, keptRec, nil
}
