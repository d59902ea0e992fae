package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/internal/fileset"
)

// Ignored files a command writes (node_modules/..., build/...) are in no
// snapshot, so the snapshots around the command cannot record them. When
// the workspace is small enough to list (ignoredLimit files, ignored or
// not), the step's first command is bracketed by two listings of its
// ignored files: a file that appears is recorded in the ledger as the
// step's create (undo removes it, unless it was changed since); a file
// that was there and changed cannot be taken back (its old content was
// never kept) and is named in the step's state (StepState.IgnoredChanged),
// so the run's record and undo can name it. Over the limit nothing is
// listed, and the step's output says so.

// ignoredLimit bounds the files listed to find a command's ignored files.
var ignoredLimit = 20000

// ignoredNamed bounds the ignored files a step's state names.
const ignoredNamed = 50

type fileStamp struct {
	size int64
	mod  time.Time
	mode fs.FileMode
}

var errTooMany = errors.New("too many files")

// listIgnored lists the workspace's ignored files (nil, false when there
// are more than ignoredLimit files in all).
func (s *sched) listIgnored(ctx context.Context) (map[string]fileStamp, bool) {
	if s.cfg.WS == nil || s.cfg.WS.Files() == nil {
		return nil, false
	}
	set := s.cfg.WS.Files()
	var mu sync.Mutex
	all := map[string]fileStamp{}
	err := set.Walk(ctx, fileset.Options{NoIgnore: true}, func(e fileset.Entry) error {
		mu.Lock()
		defer mu.Unlock()
		if len(all) >= ignoredLimit {
			return errTooMany
		}
		if !e.Tracked {
			all[e.Path] = fileStamp{size: e.Size, mod: e.ModTime, mode: e.Mode}
		}
		return nil
	})
	if err != nil {
		return nil, false
	}
	for p := range all {
		if !set.Ignored(p, false) {
			delete(all, p)
		}
	}
	return all, true
}

// ignoredBefore lists the ignored files before the step's first command;
// the caller holds s.snapOrder.mu.
func (w *worker) ignoredBefore(ctx context.Context) {
	if w.s.recorder() == nil {
		return
	}
	list, ok := w.s.listIgnored(ctx)
	if !ok {
		w.output("log", fmt.Sprintf("agentd: the workspace has over %d files: ignored files the commands of step %s create are not recorded for undo\n", ignoredLimit, w.j.step.ID))
		return
	}
	w.ignored = list
}

// recordIgnored records the ignored files the step's commands created as
// the step's creates, and names those they changed.
func (w *worker) recordIgnored(ctx context.Context) {
	before := w.ignored
	w.ignored = nil
	if before == nil {
		return
	}
	s := w.s
	after, ok := s.listIgnored(ctx)
	if !ok {
		return
	}
	var created, changed []string
	for p, st := range after {
		if old, was := before[p]; !was {
			created = append(created, p)
		} else if old != st {
			changed = append(changed, p)
		}
	}
	slices.Sort(created)
	slices.Sort(changed)
	var edits []gitops.Edit
	for _, p := range created {
		data, err := s.cfg.WS.ReadFile(ctx, p)
		if err != nil {
			changed = append(changed, p) // named: it cannot be recorded
			continue
		}
		mode := fs.FileMode(0o644)
		if after[p].mode&0o111 != 0 {
			mode = 0o755
		}
		if after[p].mode&fs.ModeSymlink != 0 {
			changed = append(changed, p)
			continue
		}
		edits = append(edits, gitops.Edit{Path: p, After: &gitops.FileState{Data: data, Mode: mode}})
	}
	if len(edits) > 0 {
		if err := s.cfg.Ledger.RecordEdits(context.WithoutCancel(ctx), RunOwner(s.r.id), w.j.step.ID, edits); err != nil {
			s.log.Warn("recording the ignored files a command created failed", "step", w.j.step.ID, "err", err)
			for _, e := range edits {
				changed = append(changed, e.Path)
			}
		}
	}
	if len(changed) == 0 {
		return
	}
	slices.Sort(changed)
	named := changed
	if len(named) > ignoredNamed {
		named = append(slices.Clone(named[:ignoredNamed]), fmt.Sprintf("... and %d more", len(changed)-ignoredNamed))
	}
	w.mu.Lock()
	w.res.ignoredChanged = named
	w.mu.Unlock()
	w.output("log", fmt.Sprintf("agentd: the commands of step %s changed ignored files undo cannot take back: %v\n", w.j.step.ID, named))
}
