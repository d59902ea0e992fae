package rpc

import (
	"sync"
	"time"

	"github.com/agentd/agentd/workspace"
)

// The rebase of pending hunks onto the user's typing (onUserEdit) waits
// until the typing pauses: RebaseDelay after the last edit, at most
// RebaseMaxDelay after the first edit not rebased yet, and at once before
// the server handles any other message, so every request sees the hunks
// rebased onto the buffer the editor last sent (docs/protocol.md,
// agentd/changes/didChange). A rebase re-diffs the file and records the
// change set in the journal: done on each keystroke, it competed with the
// editor drawing that keystroke (with 200 hunks in a 2,000-line file, a few
// ms of CPU per key on a 2-core machine); a burst of typing now costs one.
const (
	RebaseDelay    = 150 * time.Millisecond
	RebaseMaxDelay = time.Second
)

// typing holds the user's edits not rebased yet, by buffer.
type typing struct {
	// mu is held while an edit is applied to a buffer and while the
	// pending edits are rebased, so a rebase sees a buffer and the list of
	// edits that made it, never one without the other.
	mu      sync.Mutex
	pending []*typed
	first   time.Time
	timer   *time.Timer
	closed  bool
}

// typed is the edits of one buffer since its last rebase.
type typed struct {
	uri, rel string
	edits    []workspace.TextEdit
}

// editTyped applies an edit of the editor's to its buffer (apply) and, when
// it is the user's, queues the rebase of the hunks in it. An edit of the
// agent's only joins a queue already there (the editor moves hunks by every
// edit, so the server follows them the same way).
func (s *Server) editTyped(uri, rel string, edits []workspace.TextEdit, apply func() (byUser bool, err error)) error {
	t := &s.typing
	t.mu.Lock()
	defer t.mu.Unlock()
	byUser, err := apply()
	if err != nil {
		return err
	}
	burst := len(t.pending) == 0
	var p *typed
	for _, x := range t.pending {
		if x.uri == uri {
			p = x
		}
	}
	if p == nil {
		if !byUser {
			return nil
		}
		p = &typed{uri: uri, rel: rel}
		t.pending = append(t.pending, p)
	}
	p.edits = append(p.edits, edits...)
	if t.closed {
		return nil
	}
	now := time.Now()
	if burst {
		t.first = now
	}
	delay := s.rebaseDelay()
	if maxAt := t.first.Add(s.rebaseMaxDelay()); now.Add(delay).After(maxAt) {
		delay = max(0, maxAt.Sub(now))
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(delay, s.flushTyping)
	} else {
		t.timer.Reset(delay)
	}
	return nil
}

// flushTyping rebases every buffer with edits not rebased yet.
func (s *Server) flushTyping() {
	t := &s.typing
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
	}
	pending := t.pending
	t.pending = nil
	for _, p := range pending {
		s.onUserEdit(p.uri, p.rel, p.edits)
	}
}

// closeTyping rebases what is left and stops the timer (the server ends).
func (s *Server) closeTyping() {
	s.typing.mu.Lock()
	s.typing.closed = true
	s.typing.mu.Unlock()
	s.flushTyping()
}

func (s *Server) rebaseDelay() time.Duration {
	if s.opts.RebaseDelay > 0 {
		return s.opts.RebaseDelay
	}
	return RebaseDelay
}

func (s *Server) rebaseMaxDelay() time.Duration {
	if d := s.opts.RebaseDelay; d > RebaseMaxDelay {
		return d
	}
	return RebaseMaxDelay
}
