package acp

import (
	"bytes"
	"context"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// outbox is a session's one ordered writer. Every session/update and every
// session/request_permission of the session goes out through it, one at a
// time, in the order its callers reached it; it also knows which tool
// calls the client has been shown. Engine events reach the session on the
// run's subscriber goroutine while approvals, reviews and questions come
// from the step's own goroutine; through the outbox a request that names a
// tool call the client has not seen yet announces that tool call first, in
// the same critical section, so a permission request always follows its
// tool call on the wire.
// There is one per connection (agent.out), so that requests of different
// sessions cannot be mistaken for each other on the wire either.
type outbox struct {
	mu        sync.Mutex
	announced map[sdk.ToolCallId]bool
}

// write sends one update; the caller holds o.mu.
func (s *session) writeLocked(u sdk.SessionUpdate) {
	if err := s.a.conn.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: sdk.SessionId(s.id), Update: u}); err != nil {
		s.log.Debug("session/update not sent", "err", err)
	}
}

// startCall sends the tool_call that mk builds unless the client has seen
// the call already; it says whether it did. record keeps it for
// session/load.
func (s *session) startCall(id sdk.ToolCallId, mk func() sdk.SessionUpdate) bool {
	s.a.out.mu.Lock()
	defer s.a.out.mu.Unlock()
	return s.startCallLocked(id, mk)
}

func (s *session) startCallLocked(id sdk.ToolCallId, mk func() sdk.SessionUpdate) bool {
	if s.a.out.announced[id] {
		return false
	}
	if s.a.out.announced == nil {
		s.a.out.announced = map[sdk.ToolCallId]bool{}
	}
	s.a.out.announced[id] = true
	u := mk()
	s.record(u)
	s.writeLocked(u)
	return true
}

// requestWritten bounds how long the outbox waits for the SDK to put a
// permission request on the wire before it lets later messages go.
var requestWritten = 10 * time.Second

// requestPermission sends a permission request for tool call req.ToolCall
// through the outbox, after the tool call itself (mk builds it if the
// client has not seen it yet), and waits for the answer. The outbox is
// held until the request is written, not until it is answered: updates
// of other steps go on meanwhile.
func (s *session) requestPermission(ctx context.Context, req sdk.RequestPermissionRequest, mk func() sdk.SessionUpdate) (sdk.RequestPermissionResponse, error) {
	type answer struct {
		res sdk.RequestPermissionResponse
		err error
	}
	ch := make(chan answer, 1)
	s.a.out.mu.Lock()
	if mk != nil {
		s.startCallLocked(req.ToolCall.ToolCallId, mk)
	}
	n, written := s.a.wire.requests()
	go func() {
		res, err := s.a.conn.RequestPermission(ctx, req)
		ch <- answer{res, err}
	}()
	var got *answer
	deadline := time.After(requestWritten)
wait:
	for {
		select {
		case <-written:
			m, w := s.a.wire.requests()
			if m > n {
				break wait
			}
			written = w
		case a := <-ch:
			got = &a
			break wait
		case <-deadline:
			s.log.Warn("a permission request was not written in time; later updates go on", "toolCallId", req.ToolCall.ToolCallId)
			break wait
		}
	}
	s.a.out.mu.Unlock()
	if got == nil {
		a := <-ch
		got = &a
	}
	return got.res, got.err
}

// permissionMethod marks a permission request on the wire.
var permissionMethod = []byte(`"method":"` + sdk.ClientMethodSessionRequestPermission + `"`)

// requests returns how many permission requests have been written and a
// channel closed at the next one.
func (l *lockedWriter) requests() (uint64, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nextReq == nil {
		l.nextReq = make(chan struct{})
	}
	return l.nreq, l.nextReq
}

// countRequest is called with l.mu held after each write.
func (l *lockedWriter) countRequest(p []byte) {
	if !bytes.Contains(p, permissionMethod) {
		return
	}
	l.nreq++
	if l.nextReq != nil {
		close(l.nextReq)
		l.nextReq = nil
	}
}
