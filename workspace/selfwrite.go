package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// SelfWriteWindow is how long a write by agentd itself is remembered for
// RecentlyWritten. File watchers report within milliseconds; the window is
// generous so a busy machine does not turn agentd's own write into a
// "user edit".
var SelfWriteWindow = 5 * time.Second

// selfWrite is one write agentd made.
type selfWrite struct {
	at   time.Time
	hash string // sha256 hex of the content written; "" for a removal or rename
}

// noteWrite records that agentd wrote (data != nil), removed or renamed
// (data == nil) the symlink-free rel.
func (w *Workspace) noteWrite(real string, data []byte) {
	now := time.Now()
	h := ""
	if data != nil {
		h = Hash(data)
	}
	w.writesMu.Lock()
	defer w.writesMu.Unlock()
	if len(w.writes) >= w.pruneAt {
		// Amortised: a large change set writes thousands of files at once.
		for p, sw := range w.writes {
			if now.Sub(sw.at) > SelfWriteWindow {
				delete(w.writes, p)
			}
		}
		w.pruneAt = max(256, 2*len(w.writes))
	}
	w.writes[real] = selfWrite{at: now, hash: h}
}

// RecentlyWritten reports whether agentd itself wrote, removed or renamed
// the path within SelfWriteWindow, so a file watcher can drop the events its
// own writes cause. When the watcher can read the file, SelfWritten is the
// stricter test.
func (w *Workspace) RecentlyWritten(p string) bool {
	_, _, ok := w.lastWrite(p)
	return ok
}

// SelfWritten reports whether content is exactly what agentd wrote to the
// path within SelfWriteWindow: an event for the path whose content differs
// is someone else's change.
func (w *Workspace) SelfWritten(p string, content []byte) bool {
	_, h, ok := w.lastWrite(p)
	if !ok {
		return false
	}
	if h == "" {
		return content == nil
	}
	return content != nil && h == Hash(content)
}

// lastWrite returns agentd's last write of p within the window.
func (w *Workspace) lastWrite(p string) (time.Time, string, bool) {
	r, err := w.resolve(p)
	if err != nil {
		return time.Time{}, "", false
	}
	w.writesMu.Lock()
	sw, ok := w.writes[r.real]
	if !ok {
		// A removed link's own name is recorded, not its target's.
		sw, ok = w.writes[r.rel]
	}
	w.writesMu.Unlock()
	if !ok || time.Since(sw.at) > SelfWriteWindow {
		return time.Time{}, "", false
	}
	return sw.at, sw.hash, true
}

// Hash is the hex sha256 of content, the form of FileChange.BaseHash.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}
