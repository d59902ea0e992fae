package gitops

import (
	"context"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/agentd/agentd/diff"
)

// Diff compares two snapshots, or a snapshot with the workspace now (to "").
func (s *Store) Diff(ctx context.Context, from, to string) ([]*diff.FileDiff, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	a, err := s.getLocked(from)
	if err != nil {
		return nil, err
	}
	oldFiles, err := s.snapshotFiles(a.ID)
	if err != nil {
		return nil, err
	}
	var newFiles map[string]treeFile
	var cur *scanResult
	if to == "" {
		if cur, _, err = s.scan(ctx, nil); err != nil {
			return nil, fmt.Errorf("gitops: diff against the workspace: %w", err)
		}
		newFiles = make(map[string]treeFile, len(cur.byPath()))
		for p, r := range cur.byPath() {
			newFiles[p] = treeFile{mode: r.mode, hash: r.hash}
		}
	} else {
		b, err := s.getLocked(to)
		if err != nil {
			return nil, err
		}
		if newFiles, err = s.snapshotFiles(b.ID); err != nil {
			return nil, err
		}
	}
	var paths []string
	for p, o := range oldFiles {
		if n, ok := newFiles[p]; !ok || n != o {
			paths = append(paths, p)
		}
	}
	for p := range newFiles {
		if _, ok := oldFiles[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	out := make([]*diff.FileDiff, 0, len(paths))
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o, inO := oldFiles[p]
		n, inN := newFiles[p]
		var oldData, newData []byte
		oldPath, newPath := "", ""
		if inO {
			oldPath = p
			if oldData, err = s.readBlob(o.hash); err != nil {
				return nil, fmt.Errorf("gitops: diff %s: %w", p, err)
			}
		}
		if inN {
			newPath = p
			if cur != nil {
				if newData, err = s.readEntry(cur.byPath()[p]); err != nil {
					return nil, fmt.Errorf("gitops: diff %s: %w", p, err)
				}
			} else if newData, err = s.readBlob(n.hash); err != nil {
				return nil, fmt.Errorf("gitops: diff %s: %w", p, err)
			}
		}
		fd := diff.Compute(oldPath, newPath, oldData, newData)
		if inO {
			fd.OldMode = uint32(o.mode)
		}
		if inN {
			fd.NewMode = uint32(n.mode)
		}
		out = append(out, fd)
	}
	return out, nil
}

var _ = plumbing.ZeroHash
