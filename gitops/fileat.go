package gitops

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
)

// FileAt reads one file of a snapshot: its content, its mode (0o644,
// 0o755 or fs.ModeSymlink, whose content is the link's target) and
// whether the snapshot holds it at all (false, with no error, when it
// does not). path is slash-separated and relative to the workspace.
func (s *Store) FileAt(ctx context.Context, id, path string) ([]byte, fs.FileMode, bool, error) {
	if err := checkRel(path); err != nil {
		return nil, 0, false, fmt.Errorf("gitops: read %s from snapshot %s: %w", path, id, err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	defer unlock()
	snap, err := s.getLocked(id)
	if err != nil {
		return nil, 0, false, err
	}
	c, err := s.readCommit(plumbing.NewHash(snap.ID))
	if err != nil {
		return nil, 0, false, fmt.Errorf("gitops: read snapshot %s: %w", short(snap.ID), err)
	}
	files, err := s.lookupFiles(c.TreeHash, []string{path})
	if err != nil {
		return nil, 0, false, fmt.Errorf("gitops: read %s from snapshot %s: %w", path, short(snap.ID), err)
	}
	f, ok := files[path]
	if !ok {
		return nil, 0, false, nil
	}
	data, err := s.readBlob(f.hash)
	if err != nil {
		return nil, 0, false, fmt.Errorf("gitops: read %s from snapshot %s: %w", path, short(snap.ID), err)
	}
	return data, fsModeOf(f.mode), true, nil
}
