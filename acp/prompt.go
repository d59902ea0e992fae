package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	agentsession "github.com/agentd/agentd/session"
)

// wait blocks until the running turn, if any, has ended or d has passed.
func (s *session) wait(d time.Duration) {
	s.mu.Lock()
	busy, done := s.busy, s.turnDone
	s.mu.Unlock()
	if !busy {
		return
	}
	select {
	case <-done:
	case <-time.After(d):
		s.log.Warn("a turn did not end in time; closing the session anyway", "after", d)
	}
}

// cancel ends the running turn, if any (session/cancel).
func (s *session) cancel() {
	s.mu.Lock()
	c := s.turnCancel
	s.mu.Unlock()
	if c != nil {
		c()
	}
}

// prompt handles session/prompt: a slash command, or a request that
// becomes a plan and, unless the mode is plan-only, runs.
func (s *session) prompt(ctx context.Context, blocks []sdk.ContentBlock) (sdk.PromptResponse, error) {
	imgs, err := s.promptImages(blocks)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	// One turn at a time: the line reader refuses a prompt sent while
	// another runs (promptGate); what else takes the session (session/load
	// of the same id) waits for the turn to end.
	s.mu.Lock()
	for s.busy {
		done := s.turnDone
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		s.mu.Lock()
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.busy, s.turnCancel, s.turnDone = true, cancel, done
	s.mu.Unlock()
	defer func() {
		cancel()
		s.mu.Lock()
		s.busy, s.turnCancel = false, nil
		s.mu.Unlock()
		close(done)
	}()

	parts := s.promptText(blocks)
	for _, b := range blocks {
		if b.Image != nil {
			// The session file keeps a note of the image, not its bytes.
			b = sdk.TextBlock(fmt.Sprintf("[image: %s, %s]", b.Image.MimeType, sizeOf(base64.StdEncoding.DecodedLen(len(b.Image.Data)))))
		}
		s.mu.Lock()
		s.saved.Transcript = append(s.saved.Transcript, sdk.UpdateUserMessage(b))
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.turnUsage = engine.Usage{}
	recovered := s.recovered
	s.recovered = ""
	s.mu.Unlock()
	if recovered != "" {
		// Before anything else: what a crash interrupted, and the way back.
		s.say(recovered + "\n")
	}
	stop, err := s.turn(ctx, parts, imgs)
	s.syncPlannerUsage()
	if serr := s.save(); serr != nil && err == nil {
		err = serr
	}
	if err != nil && ctx.Err() == nil {
		return sdk.PromptResponse{}, err
	}
	if ctx.Err() != nil {
		stop = sdk.StopReasonCancelled
	}
	s.mu.Lock()
	u := s.turnUsage
	s.mu.Unlock()
	return sdk.PromptResponse{StopReason: stop, Usage: &sdk.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		TotalTokens: u.InputTokens + u.OutputTokens}}, nil
}

// promptParts is what a prompt's blocks say: the request (each text block
// and embedded file a paragraph of its own, never glued to the next), the
// workspace files it links to, and the slash command one of its text
// blocks starts with, if any.
type promptParts struct {
	text  string
	files []string
	// cmd and arg are the slash command (a text block starting with
	// /NAME) and the rest of its block; beside is the prompt's other
	// text (and embedded files), joined as text is.
	isCmd    bool
	cmd, arg string
	beside   string
	// also names a second slash command; a prompt runs one.
	also string
}

// promptText joins the prompt's text and embedded files into the request,
// a blank line between blocks, and finds its slash command.
func (s *session) promptText(blocks []sdk.ContentBlock) promptParts {
	var p promptParts
	var all, beside []string
	for _, c := range blocks {
		part := ""
		switch {
		case c.Text != nil:
			part = strings.TrimSpace(c.Text.Text)
			if cmd, arg, ok := slashCommand(part); ok {
				if !p.isCmd {
					p.isCmd, p.cmd, p.arg = true, cmd, arg
					all = append(all, part)
					continue
				}
				if p.also == "" {
					p.also = "/" + cmd
				}
			}
		case c.ResourceLink != nil:
			if rel, ok := s.relOf(c.ResourceLink.Uri); ok {
				p.files = append(p.files, rel)
			}
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			name := r.Uri
			if rel, ok := s.relOf(r.Uri); ok {
				name = rel
				p.files = append(p.files, rel)
			}
			part = fmt.Sprintf("<file name=%q>\n%s\n</file>", name, r.Text)
		}
		if part != "" {
			all = append(all, part)
			beside = append(beside, part)
		}
	}
	p.text = strings.Join(all, "\n\n")
	p.beside = strings.Join(beside, "\n\n")
	return p
}

// relOf turns a file URI or absolute path into a workspace path.
func (s *session) relOf(uri string) (string, bool) {
	p := uri
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		p = u.Path
	}
	rel, _, err := s.ws.Resolve(p)
	return rel, err == nil
}

// turn does what the prompt asks and returns the stop reason. A prompt
// with a slash command in one of its text blocks runs that command; the
// text beside it is part of /plan's request, and otherwise is sent
// nowhere, which the chat says (docs/acp.md, "Slash
// commands").
func (s *session) turn(ctx context.Context, p promptParts, imgs []agentsession.Image) (sdk.StopReason, error) {
	if p.isCmd {
		if p.also != "" {
			return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"prompt": fmt.Sprintf(
				"this prompt has two slash commands, /%s and %s, so neither ran: send one command per prompt", p.cmd, p.also)})
		}
		arg := p.arg
		if p.beside != "" {
			if p.cmd == "plan" {
				arg = strings.TrimSpace(arg + "\n\n" + p.beside)
			} else {
				s.say(fmt.Sprintf("Not sent: /%s runs alone, so the text beside it went to no model:\n> %s\n\nSend it as a prompt of its own to have it planned.\n",
					p.cmd, strings.ReplaceAll(clip(p.beside, 300), "\n", "\n> ")))
			}
		}
		return s.command(ctx, p.cmd, arg, p.files, imgs)
	}
	text := p.text
	if text == "" {
		return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"prompt": "say what you want done"})
	}
	plan, err := s.makePlan(ctx, text, p.files, imgs)
	if err != nil {
		return sdk.StopReasonEndTurn, err
	}
	if s.mode() == modePlanOnly {
		s.say(fmt.Sprintf("Plan-only mode: nothing was run. Type /run to run these %d steps, or switch the mode to ask or auto.", len(plan.Steps)))
		return sdk.StopReasonEndTurn, nil
	}
	return s.runPlan(ctx, plan)
}

// clip shortens s to about n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// slashCommand reads a text block that starts with /NAME: a command word
// with no further slash, so a block that starts with a path
// (/home/me/a.go is broken) is a request, not an unknown command.
func slashCommand(text string) (cmd, arg string, ok bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	rest := strings.TrimPrefix(text, "/")
	cmd, arg = rest, ""
	if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
		cmd, arg = rest[:i], strings.TrimSpace(rest[i:])
	}
	if strings.Contains(cmd, "/") {
		return "", "", false
	}
	return cmd, arg, true
}

// command runs one of availableCommands.
func (s *session) command(ctx context.Context, cmd, arg string, files []string, imgs []agentsession.Image) (sdk.StopReason, error) {
	switch cmd {
	case "plan":
		if arg == "" {
			return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"prompt": "/plan needs a request: /plan add a README"})
		}
		plan, err := s.makePlan(ctx, arg, files, imgs)
		if err != nil {
			return sdk.StopReasonEndTurn, err
		}
		s.say(fmt.Sprintf("Type /run to run these %d steps.", len(plan.Steps)))
		return sdk.StopReasonEndTurn, nil
	case "run":
		s.mu.Lock()
		plan := s.saved.Plan
		s.mu.Unlock()
		if plan == nil {
			return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"prompt": errNoPlan.Error()})
		}
		return s.runPlan(ctx, plan.Clone())
	case "snapshots":
		return sdk.StopReasonEndTurn, s.listSnapshots(ctx)
	case "restore":
		f := strings.Fields(arg)
		overwrite := len(f) == 2 && f[1] == "--overwrite"
		if len(f) == 0 || len(f) > 2 || (len(f) == 2 && !overwrite) {
			return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"prompt": "use /restore ID [--overwrite]; /snapshots lists the ids"})
		}
		return sdk.StopReasonEndTurn, s.restore(ctx, f[0], overwrite)
	case "rules":
		return sdk.StopReasonEndTurn, s.listRules()
	case "revoke":
		ids := strings.Fields(arg)
		if len(ids) == 0 {
			return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"prompt": "use /revoke RULE-ID...; /rules lists them"})
		}
		if err := s.sess.Revoke(ids...); err != nil {
			return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"prompt": err.Error() + "; nothing was revoked (/rules lists them)"})
		}
		s.say("Revoked " + strings.Join(ids, ", ") + ".\n")
		return sdk.StopReasonEndTurn, nil
	case "undo", "undo-restore":
		u, err := parseUndo(cmd, arg)
		if err != nil {
			return sdk.StopReasonEndTurn, err
		}
		if cmd == "undo" {
			return sdk.StopReasonEndTurn, s.undoRun(ctx, u)
		}
		return sdk.StopReasonEndTurn, s.undoRestore(ctx, u)
	}
	return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"prompt": fmt.Sprintf("unknown command /%s; the commands are /plan, /run, /snapshots, /restore ID, /undo, /undo-restore, /rules and /revoke ID", cmd)})
}

// chat is the session's chat (made at its first prompt); "" when the
// chat store cannot keep one (logged: the prompt is planned alone).
func (s *session) chat(ctx context.Context) string {
	s.mu.Lock()
	id := s.saved.ChatID
	s.mu.Unlock()
	if id != "" {
		_, err := s.sess.Chat(id)
		if err == nil {
			return id
		}
		s.log.Warn("the session's chat cannot be read; a new chat starts", "chat", id, "error", err)
	}
	c, err := s.sess.NewChat(ctx, "")
	if err != nil {
		s.log.Error("no chat can be kept for the session; the prompt is planned without the turns before", "error", err)
		return ""
	}
	s.mu.Lock()
	s.saved.ChatID = c.ID
	s.mu.Unlock()
	return c.ID
}

// makePlan asks the planner for a plan and shows it.
func (s *session) makePlan(ctx context.Context, request string, files []string, imgs []agentsession.Image) (*plans.Plan, error) {
	if s.models == nil {
		return nil, &sdk.RequestError{Code: -32603, Message: "Internal error",
			Data: map[string]any{"error": fmt.Sprintf("%v; %s", engine.ErrNoModel, agentsession.NoModelHelp)}}
	}
	req := agentsession.PlanRequest{Workspace: s.ws, OpenFiles: files, Images: imgs,
		// A sensitive file the planner's model wants to read asks
		// (session/request_permission), as a step's read does.
		Approve: (*approver)(s).Approve}
	if s.caps.Fs.ReadTextFile {
		// The planner's oldText check must judge the text the edit will
		// see: the editor's buffer, read as the edit step reads it.
		req.ReadFile = func(ctx context.Context, rel string) ([]byte, error) {
			s.readThroughClient(ctx, rel)
			return s.ws.ReadFile(ctx, rel)
		}
	}
	// The turns before this one (what they asked and planned, the user's
	// review decisions and reasons, what failed, what was undone), as
	// every conversation's planner is told them (session.ChatStore.PlanTurn);
	// the plan is kept in the workspace's plan store, as every front
	// end's.
	plan, chatID, err := s.sess.PlanChatTurn(ctx, agentsession.ChatTurn{ChatID: s.chat(ctx), Where: "in the editor", Request: request,
		Plan: func(ctx context.Context, request string) (*plans.Plan, error) {
			req.Request = request
			defer s.syncPlannerUsage()
			return s.models.MakePlan(ctx, req)
		},
		Keep: func(plan *plans.Plan) (*plans.Plan, error) {
			return s.sess.Plans().Store(plan, "model", "created from a request")
		}})
	if tn := (*agentsession.TurnNotKeptError)(nil); errors.As(err, &tn) {
		s.log.Error("the prompt's turn is not kept in the session's chat", "chat", chatID, "error", tn.Err)
		err = nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ve *plans.ValidationError
		if errors.As(err, &ve) {
			return nil, &sdk.RequestError{Code: -32603, Message: "Internal error",
				Data: map[string]any{"error": "the model's plan is still invalid after a repair round: " + ve.Error()}}
		}
		return nil, &sdk.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"error": "making the plan: " + err.Error()}}
	}
	s.mu.Lock()
	s.saved.Plan = plan
	s.mu.Unlock()
	s.send(sdk.UpdatePlan(planEntries(plan, nil)...), true)
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** — %d steps:\n", plan.Title, len(plan.Steps))
	for i, st := range plan.Steps {
		fmt.Fprintf(&b, "%d. `%s` %s\n", i+1, st.ID, stepTitle(st))
	}
	s.say(b.String())
	return plan, nil
}

// runPlan runs plan in the session's mode and reports the outcome.
func (s *session) runPlan(ctx context.Context, plan *plans.Plan) (sdk.StopReason, error) {
	// The session composes the run's policy and review mode, as for every
	// front end: ask (and /run from plan-only) runs under the workspace's
	// policy and holds each change set for the user's review; auto asks
	// nothing and writes changes at once (session.AnswerAuto).
	req := agentsession.RunRequest{Answer: agentsession.AnswerAsk}
	if s.mode() == modeAuto {
		req.Answer = agentsession.AnswerAuto
	}
	w := newWatcher(s, plan)
	req.Options.Subscribers = []engine.Subscriber{w}
	s.mu.Lock()
	s.watch = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.watch = nil
		s.mu.Unlock()
	}()
	run, err := s.sess.StartRun(ctx, s.eng, plan, req)
	if err != nil {
		if pe := (*agentsession.PolicyError)(nil); errors.As(err, &pe) {
			return sdk.StopReasonEndTurn, &sdk.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"error": err.Error()}}
		}
		var ve *plans.ValidationError
		if errors.As(err, &ve) {
			return sdk.StopReasonEndTurn, sdk.NewInvalidParams(map[string]any{"plan": ve.Error()})
		}
		var ae *engine.ActiveRunError
		if errors.As(err, &ae) {
			// The core's one-run-at-a-time rule: another front end (the
			// editor server, the terminal) has a run of this workspace.
			return sdk.StopReasonEndTurn, &sdk.RequestError{Code: errPromptRunning,
				Message: fmt.Sprintf("%v: finish or cancel it where it was started (agentd runs lists it), then send the prompt again; the plan is kept, /run runs it", ae),
				Data:    map[string]any{"runId": ae.RunID, "status": ae.Status, "reason": "runActive"}}
		}
		return sdk.StopReasonEndTurn, err
	}
	w.setRun(run)
	st, err := run.Wait(context.WithoutCancel(ctx))
	if err != nil {
		return sdk.StopReasonEndTurn, err
	}
	s.mu.Lock()
	st.OriginalPlan, st.FinalPlan = nil, nil
	s.saved.Run = &st
	s.saved.Runs = append(s.saved.Runs, st.RunID)
	if fp := run.Plan(); fp != nil {
		s.saved.Plan = fp
	}
	s.saved.Run = savedRun(st)
	s.mu.Unlock()
	s.sess.ChatStore().LearnRun(context.WithoutCancel(ctx), &st) // the turn that made the plan
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s: **%s** — %d of %d steps completed", st.RunID, st.Status, st.CompletedSteps, st.TotalSteps)
	if st.FailedSteps > 0 {
		fmt.Fprintf(&b, ", %d failed", st.FailedSteps)
	}
	if st.SkippedSteps > 0 {
		fmt.Fprintf(&b, ", %d skipped", st.SkippedSteps)
	}
	b.WriteString(".\n")
	if st.Error != "" {
		fmt.Fprintf(&b, "\n%s\n", st.Error)
	}
	if len(st.FilesChanged) > 0 {
		// As the run's summary names them (engine.Summary): the change
		// sets' files and what the run's MCP calls changed.
		fmt.Fprintf(&b, "\nFiles changed: `%s`\n", strings.Join(st.FilesChanged, "`, `"))
	}
	if len(st.Snapshots) > 0 {
		b.WriteString("\nUndo the whole run: `/undo`\n")
	}
	s.say(b.String())
	switch {
	case st.Status == engine.RunCancelled || ctx.Err() != nil:
		return sdk.StopReasonCancelled, nil
	case strings.Contains(st.Error, engine.ErrBudgetExceeded.Error()):
		return sdk.StopReasonMaxTokens, nil
	}
	return sdk.StopReasonEndTurn, nil
}

func (s *session) listSnapshots(ctx context.Context) error {
	list, err := s.store.List(ctx, "")
	if err != nil {
		return err
	}
	if len(list) == 0 {
		s.say("No snapshots yet: each run takes one at its start and one after each step.")
		return nil
	}
	var b strings.Builder
	b.WriteString("Snapshots, newest first (restore one with `/restore ID`):\n")
	for i, sn := range list {
		if i == 30 {
			fmt.Fprintf(&b, "… and %d older\n", len(list)-30)
			break
		}
		where := ""
		if sn.RunID != "" {
			where = " run " + sn.RunID
			if sn.StepID != "" {
				where += " step " + sn.StepID
			}
		}
		fmt.Fprintf(&b, "- `%s` %s — %s%s (%d files changed)\n", sn.ID[:12], sn.CreatedAt.Local().Format("15:04:05"), sn.Label, where, sn.FilesChanged)
	}
	s.say(b.String())
	return nil
}

// restore restores a snapshot and reports what it did.
func (s *session) restore(ctx context.Context, id string, overwrite bool) error {
	res, err := restoreSnapshot(ctx, s.sess, id, overwrite)
	if err != nil {
		return &sdk.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"error": "restore: " + err.Error()}}
	}
	s.reportRestore(ctx, res, fmt.Sprintf("Restored snapshot %s.\n", id), "/restore "+id+" --overwrite", true)
	return nil
}

// undoArgs are /undo's and /undo-restore's: what to undo (a run ID, or
// a restore's or undo's ID; empty: the newest not undone) and the choice
// on a conflict, or --diff to see the conflicts and change nothing.
type undoArgs struct {
	id   string
	opts agentsession.UndoOptions
	diff bool
}

// parseUndo reads "/undo [RUN] [--keep-conflicts|--overwrite|--diff|--dry-run]"
// and "/undo-restore [ID] [...]".
func parseUndo(cmd, arg string) (undoArgs, error) {
	var u undoArgs
	what := "RUN"
	if cmd == "undo-restore" {
		what = "ID"
	}
	usage := sdk.NewInvalidParams(map[string]any{"prompt": "use /" + cmd + " [" + what + "] [--keep-conflicts | --overwrite | --diff | --dry-run]"})
	for _, f := range strings.Fields(arg) {
		switch f {
		case "--keep-conflicts", "--overwrite":
			if u.opts.OnConflict != "" {
				return u, usage
			}
			u.opts.OnConflict = agentsession.KeepConflicts
			if f == "--overwrite" {
				u.opts.OnConflict = agentsession.OverwriteConflicts
			}
		case "--diff":
			u.diff, u.opts.DryRun = true, true
		case "--dry-run":
			u.opts.DryRun = true
		default:
			if strings.HasPrefix(f, "-") || u.id != "" {
				return u, usage
			}
			u.id = f
		}
	}
	return u, nil
}

// undoRun undoes a run: the one named, else this session's newest prompt
// run not yet undone (again: the run before), or in a session that ran
// nothing the workspace's newest run not yet undone, through the session
// layer, which records it in the journal as every front end's undo does.
func (s *session) undoRun(ctx context.Context, u undoArgs) error {
	id := u.id
	if id == "" {
		s.mu.Lock()
		runs := append([]string(nil), s.saved.Runs...)
		s.mu.Unlock()
		for i := len(runs) - 1; i >= 0; i-- {
			if s.journal.UndoneOf(runs[i]) == nil {
				id = runs[i]
				break
			}
		}
		if id == "" && len(runs) > 0 {
			return sdk.NewInvalidParams(map[string]any{"prompt": "nothing to undo: every run of this session is undone"})
		}
	}
	// A session that ran nothing undoes as every front end does: the
	// workspace's newest run not yet undone.
	opts := u.opts
	opts.ShowLater = true // Shown once said (reportUndo)
	res, err := s.sess.UndoRun(ctx, id, opts)
	if err != nil {
		var ns *agentsession.NoSnapshotsError
		if errors.As(err, &ns) || errors.Is(err, agentsession.ErrNothingToUndo) || errors.Is(err, agentsession.ErrNoSuchRun) || errors.Is(err, agentsession.ErrAmbiguousRun) {
			return sdk.NewInvalidParams(map[string]any{"prompt": err.Error()})
		}
		return &sdk.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"error": "undo: " + err.Error()}}
	}
	// The chat turn that ran it is marked undone by the session's undo.
	s.reportUndo(&res.UndoResult, "run "+res.RunID, "/undo "+res.RunID, u.diff)
	if res.Leftovers != nil && res.Applied && !res.DryRun {
		// What the undo could not take back, in the session's words.
		s.say("```\n" + res.Leftovers.Text + "\n```\n")
	}
	return nil
}

// undoRestore undoes a restore or an undo (the named one, else the newest
// not yet undone), from any front end.
func (s *session) undoRestore(ctx context.Context, u undoArgs) error {
	opts := u.opts
	opts.ShowLater = true // Shown once said (reportUndo)
	res, err := s.sess.UndoRestore(ctx, u.id, opts)
	if errors.Is(err, agentsession.ErrNoRestoreToUndo) {
		return sdk.NewInvalidParams(map[string]any{"prompt": err.Error()})
	}
	if err != nil {
		return &sdk.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"error": "undo restore: " + err.Error()}}
	}
	what := "the restore to " + short12(res.Undid.SnapshotID)
	if res.Undid.RunID != "" {
		what = "the undo of run " + res.Undid.RunID
	}
	s.reportUndo(&res.UndoResult, what, "/undo-restore "+res.Undid.ID, u.diff)
	return nil
}

// reportUndo says what an undo of what did, or why it changed nothing and
// the commands (again, which names it) that decide its conflicts.
func (s *session) reportUndo(res *agentsession.UndoResult, what, again string, showDiff bool) {
	defer s.sess.Shown(res.Unshown)
	var b strings.Builder
	list := func(name string, paths []string) {
		if len(paths) > 0 {
			fmt.Fprintf(&b, "- %s: %s\n", name, strings.Join(paths, ", "))
		}
	}
	switch {
	case !res.Applied:
		fmt.Fprintf(&b, "Nothing was undone: undoing %s conflicts with edits made since:\n", what)
	case res.DryRun:
		fmt.Fprintf(&b, "Undoing %s would change (nothing was changed):\n", what)
	default:
		fmt.Fprintf(&b, "Undid %s.\n", what)
	}
	if res.BySnapshot != "" {
		fmt.Fprintf(&b, "(%s)\n", res.BySnapshot)
	}
	verb := ""
	if res.DryRun || !res.Applied {
		verb = "would be "
	}
	if res.Applied || res.DryRun {
		list(verb+"reverted", res.Reverted)
		list(verb+"re-created", res.Created)
		list(verb+"deleted", res.Deleted)
		list(verb+"overwritten (your version is kept in safety snapshot "+short12(res.UndoSnapshot)+")", res.Overwritten)
	}
	for _, c := range res.Conflicts {
		kept := ""
		if res.Applied && !res.DryRun && slices.Contains(res.Kept, c.Path) {
			kept = "kept as it is: "
		}
		fmt.Fprintf(&b, "- conflict: %s%s — %s\n", kept, c.Path, c.Reason)
		if showDiff && c.Diff != "" {
			fmt.Fprintf(&b, "```diff\n%s```\n", c.Diff)
		}
	}
	for _, c := range res.LeftAlone {
		fmt.Fprintf(&b, "- left alone: %s — %s\n", c.Path, c.Message)
	}
	if len(res.Conflicts) > 0 && (!res.Applied || res.DryRun) {
		fmt.Fprintf(&b, "Choose: `%s --keep-conflicts` (undo the rest, keep these files as they are), `%s --overwrite` (overwrite them; a safety snapshot keeps your version), or `%s --diff` (see the conflicts as a diff).\n", again, again, again)
	}
	if res.Applied && !res.DryRun && len(res.Reverted)+len(res.Created)+len(res.Deleted)+len(res.Overwritten) == 0 {
		b.WriteString("Nothing differed.\n")
	}
	if res.UndoID != "" {
		fmt.Fprintf(&b, "Undo this with `/undo-restore %s`.\n", res.UndoID)
	}
	s.say(b.String())
}

func short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// listRules says which remembered approval rules the workspace holds
// (shared with the editors and agentd rules).
func (s *session) listRules() error {
	store, err := s.sess.Rules()
	if err != nil {
		return err
	}
	rules, err := store.List()
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		s.say("No remembered approval rules.\n")
		return nil
	}
	var b strings.Builder
	for _, r := range rules {
		ans := "reject"
		if r.Allow {
			ans = "allow"
		}
		fmt.Fprintf(&b, "- `%s` %s %s", r.ID, ans, r.Category)
		if r.Command != "" {
			fmt.Fprintf(&b, " `%s`", r.Command)
		}
		b.WriteString("\n")
	}
	b.WriteString("Revoke one with `/revoke ID`.\n")
	s.say(b.String())
	return nil
}

// reportRestore refreshes the client's buffers and says what a restore did.
// undoable says whether /undo-restore takes this one back: a restore and
// an undo of a run are recorded restores; an undo of a restore is not (a
// second /undo-restore takes back the restore before it).
func (s *session) reportRestore(ctx context.Context, res *agentsession.RestoreResult, head, again string, undoable bool) {
	var b strings.Builder
	b.WriteString(head)
	list := func(name string, paths []string) {
		if len(paths) > 0 {
			fmt.Fprintf(&b, "- %s: %s\n", name, strings.Join(paths, ", "))
		}
	}
	list("restored", res.Restored)
	list("re-created", res.Created)
	list("deleted", res.Deleted)
	for _, c := range res.Conflicts {
		fmt.Fprintf(&b, "- left alone (changed by someone else since the agent's last snapshot): %s — %s\n", c.Path, c.Message)
	}
	for _, c := range res.LeftAlone {
		fmt.Fprintf(&b, "- left alone: %s — %s\n", c.Path, c.Message)
	}
	if len(res.Conflicts) > 0 {
		fmt.Fprintf(&b, "Restore them too with `%s`.\n", again)
	}
	if len(res.Restored)+len(res.Created)+len(res.Deleted)+len(res.Conflicts)+len(res.LeftAlone) == 0 {
		b.WriteString("Nothing differed.\n")
	}
	if undoable && res.UndoSnapshot != "" {
		b.WriteString("Undo this with `/undo-restore`.\n")
	}
	s.say(b.String())
}

// promptImages takes the prompt's images for the model: decoded, of a type
// and size the providers take, and only for a session whose model is
// configured with vision (a profile's "vision": true; initialize
// advertises promptCapabilities.image when the default model has it).
// Otherwise the prompt is refused naming the block, the model and the
// setting: a prompt whose image was dropped would be answered about
// something the model never saw. Audio is refused the same way: no
// provider agentd speaks is sent audio.
func (s *session) promptImages(blocks []sdk.ContentBlock) ([]agentsession.Image, error) {
	var imgs []agentsession.Image
	first := -1
	for i, c := range blocks {
		refuse := func(msg string) error {
			return sdk.NewInvalidParams(map[string]any{fmt.Sprintf("prompt[%d]", i): msg})
		}
		switch {
		case c.Audio != nil:
			return nil, refuse("this prompt has audio, but agentd sends models text and images only, so it was not run: say it in words and send it again")
		case c.Image == nil:
			continue
		}
		model := s.currentModel()
		if model == "" {
			return nil, refuse(fmt.Sprintf("this prompt has an image, but no model is configured: %v; %s", engine.ErrNoModel, agentsession.NoModelHelp))
		}
		data, err := base64.StdEncoding.DecodeString(c.Image.Data)
		if err != nil {
			return nil, refuse(fmt.Sprintf("the image's data is not base64 (%v); the client sent a broken image block", err))
		}
		img := agentsession.Image{MIMEType: c.Image.MimeType, Data: data}
		if err := s.settings.CheckImages(model, []agentsession.Image{img}); err != nil {
			msg := "this prompt has an image, so it was not run: " + err.Error()
			if others := s.visionChoices(); len(others) > 0 && !slices.Contains(others, model) {
				msg += fmt.Sprintf(", or choose a model that takes images in the model selector: %s", strings.Join(others, ", "))
			}
			return nil, refuse(msg)
		}
		if first < 0 {
			first = i
		}
		imgs = append(imgs, img)
	}
	if len(imgs) > 1 {
		if err := s.settings.CheckImages(s.currentModel(), imgs); err != nil {
			return nil, sdk.NewInvalidParams(map[string]any{"prompt": err.Error()})
		}
	}
	return imgs, nil
}

// sizeOf says n bytes in KiB or MiB.
func sizeOf(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1023)/1024)
}

// savedRun is a run's state as the session file keeps it: a step's output
// longer than a tool call shows (maxShownOutput) is left out with a note,
// so that the file stays bounded as each result is; the whole output
// stays in the workspace's run journal (agentd runs show RUN).
func savedRun(st engine.RunState) *engine.RunState {
	st.Steps = slices.Clone(st.Steps)
	for i, step := range st.Steps {
		if len(step.Output) > maxShownOutput {
			note, _ := json.Marshal(map[string]string{"omitted": fmt.Sprintf(
				"the output (%d bytes) is left out of the session file; the run journal keeps it: agentd runs %s --json", len(step.Output), st.RunID)})
			st.Steps[i].Output = note
		}
	}
	return &st
}
