package rpc

import (
	"slices"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
)

// Decisions made in another agentd process on the workspace's change sets
// (agentd review at a terminal, another editor's daemon, agentd acp) reach
// this daemon through the journal: review.Book.Sync takes the records
// written since it last looked, and the editor is told as for any other
// change of a set (agentd/changes/didChange). The rule of who wins is the
// book's (review/sync.go); this file only looks and tells.

// ChangesSyncInterval is how often the daemon looks for change-set records
// another process wrote. While nothing changes a look is one stat of the
// records' folder (journal.ScanChanges): an idle daemon measured 0.16 s of
// CPU in 300 s with it (0.05% of a core, the wake-ups mostly) against none
// without, for the user seeing a terminal's decision within about half a
// second. A watch on the folder (fsnotify) was the other way: no cheaper
// when idle, one more descriptor per workspace, and it still needs this
// scan to tell a record from a temp file and our own save from another's.
var ChangesSyncInterval = 500 * time.Millisecond

// watchChanges looks for other processes' records until the session ends.
func (s *Server) watchChanges(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		synced, err := s.changes.Sync()
		if err != nil {
			s.log.Warn("looking for change sets another agentd process recorded", "error", err)
		}
		s.rebaseSynced(synced)
	}
}

// onChangesSynced tells the editor the new state of each set the book took
// from another process's record, with the files whose units changed.
// Sets the book did not hold are left for agentd/changes/list, as before.
func (s *Server) onChangesSynced(synced []review.Synced) {
	var notes []*ChangesDidChangeParams
	s.changes.Read(func() {
		for _, sy := range synced {
			if sy.Added {
				continue
			}
			c := sy.Set
			n := &ChangesDidChangeParams{ChangeID: c.ID, Status: string(c.Status()), Counts: wireCounts(c.Counts()), Files: []FileInfo{}}
			for _, fr := range c.Files {
				if slices.Contains(sy.Paths, fr.Path) {
					n.Files = append(n.Files, s.fileInfo(c.Review, fr, true))
				}
			}
			notes = append(notes, n)
		}
	})
	for _, n := range notes {
		s.notify("agentd/changes/didChange", n)
	}
}

// rebaseSynced moves the open hunks of the `before` sets taken from the
// journal onto the buffers the editor has open of their files: the record
// is computed on the file on disk, the editor shows the buffer. A buffer
// that is the file on disk changes nothing (and sends nothing more). A
// file the other process wrote (it applied a hunk) is left until the
// editor reloads the buffer from disk: a rebase takes the accepted hunks
// to be in the buffer, and until then they are not; the reload's
// textDocument/didChange rebases it.
func (s *Server) rebaseSynced(synced []review.Synced) {
	var rels []string
	s.changes.Read(func() {
		for _, sy := range synced {
			if sy.Added || sy.Set.Review != engine.ReviewBefore {
				continue
			}
			for _, p := range sy.Paths {
				if !slices.Contains(rels, p) && !slices.Contains(sy.Wrote, p) {
					rels = append(rels, p)
				}
			}
		}
	})
	if len(rels) == 0 {
		return
	}
	ws, err := s.workspace()
	if err != nil {
		return
	}
	t := &s.typing
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rel := range rels {
		if _, open := ws.Buffer(rel); open {
			s.onUserEdit(s.bufferURI(rel), rel, nil)
		}
	}
}
