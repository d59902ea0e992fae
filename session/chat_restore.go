package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
)

// Checkpoints of a chat, the same for every front end (the editors'
// agentd/chat/restore, unrewind and fork; agentd chat's /restore and
// /fork):
//
//   - Restore to before turn N, files: the runs of turns N.. that are not
//     undone yet are taken back, newest first, as one undo (the ledger's
//     revert of their owners together, Session.revert): the user's lines
//     stay, a conflict changes nothing unless the caller chose, the undo
//     is recorded (its writes under "undo/<id>", so undo/restore takes it
//     back) and each run is marked undone as UndoRun marks it.
//   - Restore to before turn N, conversation: turns N.. are rewound, kept
//     and shown but not told to the planner (Conversation.told), under a
//     rewind id that Unrewind takes back.
//   - Fork at turn N: a new chat with copies of turns ..N-1, the original
//     unchanged and listing its branch; no file is touched.

// What a chat restore takes back.
const (
	RestoreFiles        = "files"
	RestoreConversation = "conversation"
	RestoreBoth         = "both"
)

// ChatRestoreOptions say what to restore and how (DryRun, OnConflict as
// for an undo).
type ChatRestoreOptions struct {
	// Turn is the turn (0-based) to restore to before: it and every turn
	// after it are taken back.
	Turn int
	What string
	UndoOptions
}

// ChatRestoreResult is what a chat restore did (or would do, DryRun; or
// refused to do: Applied false, nothing changed).
type ChatRestoreResult struct {
	ChatID  string
	Turn    int
	What    string
	DryRun  bool
	Applied bool
	// Files is the files part (files, both); Conversation the
	// conversation part (conversation, both; when Applied is false, the
	// turns it would have rewound).
	Files        *ChatRestoreFiles
	Conversation *ChatRewind
}

// ChatRestoreFiles is the undo of the turns' runs.
type ChatRestoreFiles struct {
	UndoResult
	Runs  []string // newest first
	Turns []int    // 0-based
}

// ChatRewind is the turns rewound (RewindID "" with DryRun, or when there
// was none to rewind).
type ChatRewind struct {
	RewindID string
	Turns    []int
}

// ErrNoRewind: the chat has no turn rewound by that rewind id.
var ErrNoRewind = errors.New("no turn of the chat is rewound by that rewind: agentd/chat/load shows each rewound turn's rewindId")

// RestoreChat restores chat id to before turn opts.Turn (see the top of
// this file). Files first, then the conversation: a files part refused by
// a conflict rewinds nothing. A turn whose run is still running or
// paused is refused, naming it.
func (s *Session) RestoreChat(ctx context.Context, id string, opts ChatRestoreOptions) (*ChatRestoreResult, error) {
	files, conv := false, false
	switch opts.What {
	case RestoreFiles:
		files = true
	case RestoreConversation:
		conv = true
	case RestoreBoth:
		files, conv = true, true
	default:
		return nil, &FieldError{Field: "what", Message: fmt.Sprintf("%q is not a choice: use %q, %q or %q", opts.What, RestoreFiles, RestoreConversation, RestoreBoth)}
	}
	switch opts.OnConflict {
	case gitops.RefuseOnConflict, gitops.KeepConflicts, gitops.OverwriteConflicts:
	default:
		return nil, &FieldError{Field: "onConflict", Message: fmt.Sprintf(`%q is not a choice: use "" (change nothing on a conflict), "keep" or "overwrite"`, opts.OnConflict)}
	}
	c, err := s.chats.Get(id)
	if err != nil {
		return nil, err
	}
	if opts.Turn < 0 || opts.Turn >= len(c.Turns) {
		return nil, &FieldError{Field: "turn", Message: fmt.Sprintf("chat %s has no turn %d: its turns are 0 to %d (agentd/chat/load shows them)", id, opts.Turn, len(c.Turns)-1)}
	}
	out := &ChatRestoreResult{ChatID: id, Turn: opts.Turn, What: opts.What, DryRun: opts.DryRun, Applied: true}
	if files {
		f, err := s.restoreChatFiles(ctx, c, opts)
		if err != nil {
			return nil, err
		}
		out.Files, out.Applied = f, f.Applied
	}
	if conv {
		dry := opts.DryRun || !out.Applied
		rw, err := s.chats.Rewind(ctx, id, opts.Turn, dry)
		if err != nil {
			if out.Files != nil && out.Files.UndoID != "" {
				return nil, fmt.Errorf("the files are restored (undo %s takes them back), but the conversation is not rewound: %w", out.Files.UndoID, err)
			}
			return nil, err
		}
		out.Conversation = rw
	}
	return out, nil
}

// restoreChatFiles takes back the runs of c's turns from opts.Turn on,
// as one undo.
func (s *Session) restoreChatFiles(ctx context.Context, c *Chat, opts ChatRestoreOptions) (*ChatRestoreFiles, error) {
	if s.Journal == nil {
		return nil, ErrNoJournal
	}
	defer s.Journal.LockUndo()()
	turnOfPlan, turnOfRun := map[string]int{}, map[string]int{}
	for i := opts.Turn; i < len(c.Turns); i++ {
		t := c.Turns[i]
		if t.PlanID != "" {
			turnOfPlan[t.PlanID] = i
		} else if t.RunID != "" {
			turnOfRun[t.RunID] = i
		}
	}
	all, err := s.Journal.Runs() // newest first
	if err != nil {
		return nil, fmt.Errorf("reading the runs of chat %s: %w", c.ID, err)
	}
	out := &ChatRestoreFiles{UndoResult: UndoResult{Applied: true, DryRun: opts.DryRun}, Runs: []string{}, Turns: []int{}}
	var runs []*engine.RunState
	for i := range all {
		st := &all[i]
		turn, ok := turnOfPlan[st.PlanID]
		if !ok || st.PlanID == "" {
			if turn, ok = turnOfRun[st.RunID]; !ok {
				continue
			}
		}
		if st.Status == engine.RunRunning || st.Status == engine.RunPaused {
			return nil, fmt.Errorf("turn %d's run %s is still %s: cancel it (agentd/run/cancel) or let it end, then restore again", turn, st.RunID, st.Status)
		}
		if st.Undone != nil || st.DryRun {
			continue
		}
		runs = append(runs, st)
		out.Runs = append(out.Runs, st.RunID)
		if !slices.Contains(out.Turns, turn) {
			out.Turns = append(out.Turns, turn)
		}
	}
	slices.Sort(out.Turns)
	if len(runs) == 0 {
		return out, nil
	}
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	owners := make([]string, len(runs))
	touched := map[string][]string{} // run -> the files its ledger names
	for i, st := range runs {
		owners[i] = "run/" + st.RunID
		entries, err := store.Ledger(ctx, owners[i])
		if err != nil {
			return nil, fmt.Errorf("restoring chat %s: reading what run %s wrote: %w", c.ID, st.RunID, err)
		}
		if len(entries) == 0 && s.changedWithoutLedger(ctx, store, st) {
			return nil, fmt.Errorf("restoring chat %s: run %s (turn %d) was recorded before undo became a revert (it has no ledger): undo it alone first (agentd/undo/run with its runId, agentd undo %s), then restore again", c.ID, st.RunID, turnOf(turnOfPlan, turnOfRun, st), st.RunID)
		}
		for _, e := range entries {
			if !slices.Contains(touched[st.RunID], e.Path) {
				touched[st.RunID] = append(touched[st.RunID], e.Path)
			}
		}
	}
	id := journal.NewRestoreID(time.Now())
	rec := journal.Restore{ID: id, Owner: "undo/" + id}
	if len(runs) == 1 {
		// One run: the same record as its undo (agentd/undo/run).
		rec.RunID = runs[0].RunID
		if len(runs[0].Snapshots) > 0 {
			rec.SnapshotID = runs[0].Snapshots[0]
		}
	} else {
		rec.RunIDs = slices.Clone(out.Runs)
	}
	if !opts.DryRun {
		if err := s.beginUndo(rec); err != nil {
			return nil, fmt.Errorf("restoring chat %s to before turn %d: %w", c.ID, opts.Turn, err)
		}
	}
	res, err := s.revert(ctx, store, owners, id, opts.UndoOptions, fmt.Sprintf("restoring chat %s to before turn %d", c.ID, opts.Turn), nil)
	if err != nil {
		if !opts.DryRun {
			s.failedPending(store, id)
		}
		return nil, fmt.Errorf("restoring chat %s to before turn %d: %w", c.ID, opts.Turn, err)
	}
	if !opts.DryRun {
		defer s.endPending(id)
	}
	if err := s.nameNewerRuns(ctx, store, runs[0], res.Conflicts); err != nil {
		return nil, err
	}
	out.UndoResult = *res
	if !res.Applied || opts.DryRun {
		return out, nil
	}
	rec.Before, rec.Kept = res.UndoSnapshot, res.Kept
	if _, err := s.Journal.RecordRestore(rec); err != nil {
		s.log.Error("the chat's restore is done but not recorded; undo restore will not find it", "chat", c.ID, "err", err)
	}
	out.UndoID = id
	for _, st := range runs {
		var kept []string
		for _, k := range res.Kept {
			if slices.Contains(touched[st.RunID], k) {
				kept = append(kept, k)
			}
		}
		if err := s.Journal.MarkUndoneBy(st.RunID, journal.Undone{How: journal.HowUndo, UndoID: id, Kept: kept}); err != nil {
			return nil, fmt.Errorf("run %s is undone but that is not recorded (the next undo would pick it again): %w", st.RunID, err)
		}
		if s.Book != nil {
			if _, err := s.Book.Withdraw(context.WithoutCancel(ctx), st.RunID, "the run was undone"); err != nil {
				s.log.Warn("the undone run's open change sets are still listed as pending", "run", st.RunID, "err", err)
			}
		}
		s.chats.Undid(ctx, st.RunID)
	}
	return out, nil
}

func turnOf(byPlan, byRun map[string]int, st *engine.RunState) int {
	if t, ok := byPlan[st.PlanID]; ok && st.PlanID != "" {
		return t
	}
	return byRun[st.RunID]
}

func newRewindID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "rw-" + hex.EncodeToString(b[:])
}

// Rewind rewinds the turns of chat id from turn on that are not rewound
// yet (dry: says which, changes nothing).
func (cs *ChatStore) Rewind(ctx context.Context, id string, turn int, dry bool) (*ChatRewind, error) {
	pick := func(c *Chat) ([]int, error) {
		if turn < 0 || turn >= len(c.Turns) {
			return nil, &FieldError{Field: "turn", Message: fmt.Sprintf("chat %s has no turn %d: its turns are 0 to %d", id, turn, len(c.Turns)-1)}
		}
		turns := []int{}
		for i := turn; i < len(c.Turns); i++ {
			if !c.Turns[i].Rewound {
				turns = append(turns, i)
			}
		}
		return turns, nil
	}
	if dry {
		c, err := cs.load(id)
		if err != nil {
			return nil, err
		}
		turns, err := pick(c)
		if err != nil {
			return nil, err
		}
		return &ChatRewind{Turns: turns}, nil
	}
	out := &ChatRewind{}
	_, err := cs.update(ctx, id, func(c *Chat) error {
		turns, err := pick(c)
		if err != nil {
			return err
		}
		out.Turns = turns
		if len(turns) == 0 {
			return nil
		}
		out.RewindID = newRewindID()
		for _, i := range turns {
			c.Turns[i].Rewound, c.Turns[i].RewindID = true, out.RewindID
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Unrewind brings back the turns of chat id that rewind rewindID
// rewound: the next turns' planner is told them again. ErrNoRewind when
// none is.
func (cs *ChatStore) Unrewind(ctx context.Context, id, rewindID string) ([]int, error) {
	if strings.TrimSpace(rewindID) == "" {
		return nil, &FieldError{Field: "rewindId", Message: "name the rewind (a rewound turn's rewindId, or agentd/chat/restore's conversation.rewindId)"}
	}
	var turns []int
	_, err := cs.update(ctx, id, func(c *Chat) error {
		for i, t := range c.Turns {
			if t.Rewound && t.RewindID == rewindID {
				t.Rewound, t.RewindID = false, ""
				turns = append(turns, i)
			}
		}
		if len(turns) == 0 {
			return fmt.Errorf("chat %s, rewind %s: %w", id, rewindID, ErrNoRewind)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return turns, nil
}

// Fork makes a new chat from chat id's turns before turn (copies: the
// planner of its next turn is told them), forked from id at turn; id is
// left as it is but for the branch it lists. request, the edited
// message, titles a branch made at turn 0; it is planned by the caller
// (no file is touched here).
func (cs *ChatStore) Fork(ctx context.Context, id string, turn int, request string) (*Chat, error) {
	orig, err := cs.Get(id)
	if err != nil {
		return nil, err
	}
	if turn < 0 || turn > len(orig.Turns) {
		return nil, &FieldError{Field: "turn", Message: fmt.Sprintf("chat %s has %d turns: branch at a turn from 0 to %d", id, len(orig.Turns), len(orig.Turns))}
	}
	fork := &Chat{Title: orig.Title, ForkedFrom: &ChatRef{ChatID: id, Turn: turn}}
	if turn == 0 && strings.TrimSpace(request) != "" {
		fork.Title = titleOf(request)
	}
	for _, t := range orig.Turns[:turn] {
		nt := *t
		nt.PlanSteps = slices.Clone(t.PlanSteps)
		nt.Steps, nt.Review, nt.Read = slices.Clone(t.Steps), slices.Clone(t.Review), slices.Clone(t.Read)
		if t.Tokens != nil {
			tk := *t.Tokens
			nt.Tokens = &tk
		}
		fork.Turns = append(fork.Turns, &nt)
	}
	if fork, err = cs.create(ctx, fork); err != nil {
		return nil, err
	}
	if _, err := cs.update(ctx, id, func(c *Chat) error {
		c.Branches = append(c.Branches, ChatRef{ChatID: fork.ID, Turn: turn})
		return nil
	}); err != nil {
		return fork, fmt.Errorf("the branch %s is made, but chat %s does not list it: %w", fork.ID, id, err)
	}
	return fork, nil
}

// liveBranches leaves out of c's branches those deleted since.
func (cs *ChatStore) liveBranches(c *Chat) {
	if len(c.Branches) == 0 {
		return
	}
	live := c.Branches[:0]
	for _, b := range c.Branches {
		if checkChatID(b.ChatID) != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(cs.dir(), b.ChatID+".json")); err == nil {
			live = append(live, b)
		}
	}
	c.Branches = live
}

// UnrewindChat brings back the turns rewound by rewindID.
func (s *Session) UnrewindChat(ctx context.Context, id, rewindID string) ([]int, error) {
	return s.chats.Unrewind(ctx, id, rewindID)
}

// ForkChat branches chat id at turn (ChatStore.Fork).
func (s *Session) ForkChat(ctx context.Context, id string, turn int, request string) (*Chat, error) {
	return s.chats.Fork(ctx, id, turn, request)
}
