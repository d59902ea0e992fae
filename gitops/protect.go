package gitops

import (
	"context"
	"fmt"
)

// The protection rule, in one place for every front end (the editor
// server, agentd snapshot restore, agentd run --rollback-on-failure):
//
// A restore without Overwrite must not replace what someone other than
// the agent changed. The protection base is the newest snapshot (by
// creation time, across every run) that records a state the agent left
// the workspace in:
//
//   - a run's snapshots (KindRun: before and after each step) — the
//     workspace as the agent had it at that moment;
//   - a restore's result (KindRestored) — the state the restore wrote,
//     with the files it left alone as conflicts recorded as they were in
//     that restore's own base, so they stay the user's at the next
//     restore too.
//
// Not counted: manual snapshots (KindManual, agentd snapshot create) and
// a restore's safety snapshot (KindSafety): they record the user's state,
// and counting them would hand the user's edits to the agent.
//
// A file whose content or mode now differs from the base (or that exists
// in only one of them) was changed by someone else: a conflict, left
// alone. When no such snapshot exists or it cannot be read, Restore
// refuses with ErrNoProtectionBase rather than overwrite anything.

// ProtectionBase returns the id of the snapshot a restore to target
// without Overwrite compares the workspace with (see the rule above). The
// error wraps ErrNoProtectionBase when there is none, ErrNotFound when
// target is unknown.
func (s *Store) ProtectionBase(ctx context.Context, target string) (string, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	t, err := s.getLocked(target)
	if err != nil {
		return "", err
	}
	return s.protectionBaseLocked(t)
}

func (s *Store) protectionBaseLocked(target *Snapshot) (string, error) {
	all, err := s.snapshots("")
	if err != nil {
		return "", err
	}
	for _, sn := range all { // newest first
		if sn.Kind == KindRun || sn.Kind == KindRestored {
			return sn.ID, nil
		}
	}
	return "", fmt.Errorf("gitops: restore to snapshot %s: %w, so edits made since cannot be told from the agent's and would be overwritten; restore with --overwrite to restore anyway (a safety snapshot still lets you undo it)",
		short(target.ID), ErrNoProtectionBase)
}
