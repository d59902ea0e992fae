package workspace

import (
	"maps"
	"sync"
)

// The editor's saves (didSave) are the user's writes the daemon is told
// about: a file saved while a command runs changed on disk, and the
// snapshots around the command cannot tell that change from the
// command's. What each save left on disk is kept (the latest per file),
// numbered, so that the command's effect is recorded from it
// (engine/step_snapshot.go, gitops.Store.RecordSnapshotEditsOver): the
// user's line typed and saved during `go test` stays the user's, and
// undo keeps it.

type saveLog struct {
	mu    sync.Mutex
	seq   uint64
	files map[string]savedFile // by real rel
}

type savedFile struct {
	seq  uint64
	data []byte
}

// maxSavedFiles bounds the log: the oldest saves are forgotten first
// (a command that outlives that many saves records them as its own).
const maxSavedFiles = 256

// noteSave records what the editor's save of real left on disk.
func (w *Workspace) noteSave(real string) {
	data, _, err := w.readDisk(real)
	if err != nil {
		return // gone, or too big: nothing to record it against
	}
	w.saves.mu.Lock()
	defer w.saves.mu.Unlock()
	if w.saves.files == nil {
		w.saves.files = map[string]savedFile{}
	}
	w.saves.seq++
	w.saves.files[real] = savedFile{seq: w.saves.seq, data: data}
	if len(w.saves.files) > maxSavedFiles {
		oldest, at := "", w.saves.seq
		for p, f := range w.saves.files {
			if f.seq < at {
				oldest, at = p, f.seq
			}
		}
		delete(w.saves.files, oldest)
	}
}

// SaveSeq numbers the editor's saves so far: SavedSince(SaveSeq()) later
// lists the files saved in between.
func (w *Workspace) SaveSeq() uint64 {
	w.saves.mu.Lock()
	defer w.saves.mu.Unlock()
	return w.saves.seq
}

// SavedSince are the files the editor saved after save number seq
// (workspace-relative slash paths, symlinks resolved) with what the
// latest save of each left on disk.
func (w *Workspace) SavedSince(seq uint64) map[string][]byte {
	w.saves.mu.Lock()
	defer w.saves.mu.Unlock()
	out := map[string][]byte{}
	for p, f := range w.saves.files {
		if f.seq > seq {
			out[p] = f.data
		}
	}
	if len(out) == 0 {
		return nil
	}
	return maps.Clone(out)
}
