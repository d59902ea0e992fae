package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// planFromRequest makes a plan from a plain-language request with a model.
// It is set by plan.go; it returns the plan or an exit code with the error
// already printed.
// It also returns what the planner used (the summary shows it).
// con asks before the planner's model reads a sensitive file.
var planFromRequest func(ctx context.Context, o runOptions, con *console, stderr io.Writer) (*plans.Plan, *engine.PlanningUsage, int)

// stdin is where prompts read answers (tests replace it).
var stdin io.Reader = os.Stdin

// runOptions is what the command line chose for "agentd run". The flag
// parsing fills it; runWith does the work, so the CLI layer and the terminal
// front end stay apart.
type runOptions struct {
	planPath    string // the plan file, or "" with request
	request     string // make the plan from this request with a model
	wsDir       string
	parallel    int
	sequential  bool
	review      string // before, after, none or "" (default by terminal)
	yes         bool
	jsonOut     bool
	stateDir    string
	allowBroad  bool
	rollback    bool
	dryRun      bool
	concurrent  bool
	noSnapshots bool
	stepTimeout time.Duration
	model       string
	verbose     bool     // stream the model's text (planning, llm steps)
	explore     int      // with request: the planner's exploration rounds, as agentd plan --explore
	maxFileSize sizeFlag // files larger than this are not read by tools nor kept in snapshots
	log         logFlags
	// brief: a chat turn's run, whose summary is a few lines (briefSummary);
	// the turn's line after it gives the tokens and cost.
	brief bool
}

func newRunCmd(a *app) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run PLAN",
		Short: "run a plan against a workspace",
		Long: `Runs the plan file PLAN (JSON or YAML) against a workspace, or with --request a plan a
model makes. Without --workspace the current folder is the workspace when it holds the
plan file at its top or in a folder just below (plans/fix.json); otherwise agentd asks on
a terminal, or stops and says how to choose.

Exit codes: 0 completed, 1 failed, 2 usage error or invalid plan, 3 partial, 130 cancelled.`,
		Example: `  agentd run examples/plans/refactor.json --workspace ./demo
  agentd run plan.yaml --sequential --review after
  agentd run --request "add a --verbose flag" --workspace .`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case cmd.Flags().Changed("sequential") && cmd.Flags().Changed("parallel"):
				return fmt.Errorf("--sequential and --parallel %d conflict: --sequential runs one step at a time; give one of them", o.parallel)
			case o.request != "" && len(args) > 0:
				return fmt.Errorf("give a plan file or --request, not both (got %s and --request)", quoteAll(args))
			case o.request == "" && len(args) == 0:
				return fmt.Errorf("missing the plan file: agentd run PLAN, or agentd run --request \"...\"")
			}
			return argsBetween(0, 1, "one plan file")(cmd, args)
		},
		ValidArgsFunction: completePlans,
	}
	fs := cmd.Flags()
	fs.StringVar(&o.wsDir, "workspace", ".", "the workspace `DIR` to run the plan in (default: the current folder, if it holds the plan at its top or one folder down)")
	fs.Lookup("workspace").DefValue = ""
	fs.IntVar(&o.parallel, "parallel", 4, "run up to `N` independent steps at once")
	fs.BoolVar(&o.sequential, "sequential", false, "run one step at a time, in dependency order")
	fs.StringVar(&o.review, "review", "", "show file changes `MODE`: before they are applied (ask y/n/a/q), after (apply, then show), or none; default: before on a terminal, after otherwise")
	fs.BoolVar(&o.yes, "yes", false, "answer yes to every approval and review")
	fs.BoolVar(&o.jsonOut, "json", false, "write events as JSON lines to stdout")
	fs.StringVar(&o.stateDir, "state-dir", "", "agentd's state `DIR` (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd)")
	addAllowBroadFlag(fs, &o.allowBroad)
	fs.BoolVar(&o.rollback, "rollback-on-failure", false, "restore the workspace to the run's start snapshot if the run fails")
	fs.BoolVar(&o.dryRun, "dry-run", false, "propose changes and show them, but write nothing and run no command")
	fs.BoolVar(&o.concurrent, "concurrent", false, "run even while another run of the workspace is running or paused")
	fs.BoolVar(&o.noSnapshots, "no-snapshots", false, "do not take snapshots (no undo)")
	fs.DurationVar(&o.stepTimeout, "step-timeout", plans.DefaultStepTimeout, "default `TIMEOUT` of a step (e.g. 30s, 5m)")
	fs.StringVar(&o.request, "request", "", "make the plan from this `REQUEST` with a model, then run it")
	fs.IntVar(&o.explore, "explore", 0, "with --request: let the model read and search the workspace for up to `N` rounds before planning (default 6; -1: none)")
	o.log = addLogFlags(cmd, "warn")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "show the model's text as it streams in while it plans")
	fs.Var(&o.maxFileSize, "max-file-size", "the largest `SIZE` of a file tools read and snapshots keep (e.g. 50MiB; default: maxFileSize in the config file, else 20MiB)")
	fs.StringVar(&o.model, "model", "", "the `MODEL` for llm and agent steps, recovery and --request (provider:model or a profile; default AGENTD_MODEL or the config file)")
	cmd.MarkFlagsMutuallyExclusive("sequential", "parallel")
	completeDirs(cmd, "workspace", "state-dir")
	completeWords(cmd, "review", "before", "after", "none")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		if len(args) == 1 {
			o.planPath = args[0]
		}
		return cmdRun(a.ctx, cmd, o, a.stdout, a.stderr)
	})
	return cmd
}

// cmdRun is agentd run's command-line layer: it settles what the flags
// leave open (which folder is the workspace), then runWith does the run.
func cmdRun(ctx context.Context, cmd *cobra.Command, o runOptions, stdout, stderr io.Writer) int {
	if !cmd.Flags().Changed("workspace") {
		// Bad flags and a refused place are said before asking whether the
		// current folder is the workspace: the answer would be for nothing.
		if code := checkRunFlags(o, stderr); code != exitOK {
			return code
		}
		if !checkPlaces("run", ".", o.stateDir, o.allowBroad, stderr) {
			return exitUsage
		}
		dir, code := defaultWorkspace(o, stdin, stderr)
		if dir == "" {
			return code
		}
		o.wsDir = dir
	}
	return runWith(ctx, o, stdout, stderr)
}

// checkRunFlags refuses flag values agentd run cannot use, naming the flag.
func checkRunFlags(o runOptions, stderr io.Writer) int {
	if _, err := session.ParseReview("--review", o.review); err != nil {
		if fe := (*session.FieldError)(nil); errors.As(err, &fe) {
			fmt.Fprintf(stderr, "agentd run: %s %s\n", fe.Field, fe.Message)
		} else {
			fmt.Fprintf(stderr, "agentd run: %v\n", err)
		}
		return exitUsage
	}
	if o.explore != 0 && o.request == "" {
		fmt.Fprintf(stderr, "agentd run: --explore is for --request (the model explores before it plans); a plan file runs as written\n")
		return exitUsage
	}
	if o.parallel < 1 {
		fmt.Fprintf(stderr, "agentd run: --parallel must be at least 1\n")
		return exitUsage
	}
	return exitOK
}

// runWith runs a plan as the options say, and returns the exit code.
func runWith(ctx context.Context, o runOptions, stdout, stderr io.Writer) int {
	var pos []string
	if o.planPath != "" {
		pos = []string{o.planPath}
	}
	if code := checkRunFlags(o, stderr); code != exitOK {
		return code
	}
	if !checkPlaces("run", o.wsDir, o.stateDir, o.allowBroad, stderr) {
		return exitUsage
	}
	// The console owns the terminal: lines, the status line and prompts.
	// With --json it writes to stderr, so stdout holds only JSON.
	var jsonW io.Writer
	conOut := stderr
	if o.jsonOut {
		jsonW = stdout
	} else {
		conOut = stdout
	}
	con := newConsole(conOut, stdin)

	plan, planning, code := runPlan(ctx, o, pos, con, stderr)
	if plan == nil {
		return code
	}

	logOut := stderr
	if con.tty {
		logOut = consoleLog{con} // above the status line, never over it
	}
	logger, closeLog, ok := o.log.frontLogger("run", logOut, func(line string) { fmt.Fprintln(logOut, "agentd run: "+line) })
	if !ok {
		return exitUsage
	}
	defer closeLog()

	ws, sess, code := openRunSession(ctx, o, plan, pos, logger, stderr)
	if sess == nil {
		return code
	}
	defer sess.Close()
	rec, err := sess.Recovered(ctx)
	sayRecovery(stderr, "run", rec, err, ws.Root(), o.stateDir)

	// The run is cancelled by watchInterrupts (and q, closed input) with
	// a cause that says why; a signal that reached ctx first says the same.
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stopAfter := context.AfterFunc(ctx, func() { cancel(signalCause(context.Cause(ctx))) })
	defer stopAfter()

	interactive := isTerminal(stdin) && !o.yes
	// The run's answer mode and review mode, composed by the session as
	// for every front end (session.RunRequest: the one default, the one
	// meaning of --review none).
	req := session.RunRequest{Answer: session.AnswerAsk, Review: engine.ReviewMode(o.review), Unattended: !isTerminal(stdin)}
	if o.yes {
		req.Answer = session.AnswerYes
	}
	mode := req.ReviewMode()
	disp := newDisplay(con, jsonW, plan)
	t := &terminal{con: con, ws: ws, yes: o.yes, cancel: cancel, quiet: mode == engine.ReviewNone || o.jsonOut, disp: disp}
	disp.dryRun, disp.render, disp.root = o.dryRun, t.renderChange, ws.Root()

	cfg := sess.Config()
	cfg.Tools, cfg.Approver, cfg.Reviewer, cfg.Inputter, cfg.Logger = session.BuiltinTools(), t, t, t, logger
	if interactive {
		cfg.OnFailure = t
	}
	if err := wireModel(&cfg, ws.Root(), o.model); err != nil {
		fmt.Fprintf(stderr, "agentd run: %v\n", err)
		return exitUsage
	}
	// The journal records the run and holds the remembered approval
	// rules, shared with the editors working on this workspace.
	t.keepChanges(sess.Book, stderr)
	defer t.book.Close() // what review.RecordDelay holds back is recorded
	if o.noSnapshots || o.dryRun {
		cfg.Snapshots = nil
	}
	eng := engine.New(cfg)

	req.Options = engine.RunOptions{
		MaxParallel:       o.parallel,
		RollbackOnFailure: o.rollback,
		DryRun:            o.dryRun,
		Concurrent:        o.concurrent,
		StepTimeout:       o.stepTimeout,
		Planning:          planning,
		Subscribers:       []engine.Subscriber{disp},
	}
	if o.sequential {
		req.Options.Mode = "sequential"
	}
	stopSignals := watchInterrupts(con, cancel)
	defer stopSignals()
	run, err := sess.StartRun(runCtx, eng, plan, req)
	if err != nil {
		disp.close()
		return sayNotStarted(stderr, err, planName(plan, pos))
	}
	disp.setRun(run)
	st, err := run.Wait(context.WithoutCancel(ctx))
	disp.close()
	con.Done()
	if err != nil {
		fmt.Fprintf(stderr, "agentd run: %v\n", err)
		return exitFailed
	}
	return sayRunEnd(ctx, o, sess, t, ws.Root(), st, stdout, stderr)
}

// runPlan is the plan to run: the one --request has a model make (and
// the user confirms), or the plan file, checked. Without a plan it
// returns the exit code, with the reason already printed.
func runPlan(ctx context.Context, o runOptions, pos []string, con *console, stderr io.Writer) (*plans.Plan, *engine.PlanningUsage, int) {
	if o.request == "" {
		p, problems, err := loadPlan(ctx, pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "agentd run: %v\n", err)
			return nil, nil, exitUsage
		}
		if len(problems) > 0 {
			printProblems(stderr, pos[0], problems)
			fmt.Fprintf(stderr, "agentd run: %s is not a valid plan (%d problems); fix them and run again\n", pos[0], len(problems))
			return nil, nil, exitUsage
		}
		return p, nil, exitOK
	}
	if planFromRequest == nil {
		fmt.Fprintln(stderr, "agentd run: --request needs a model, and this build has no planner")
		return nil, nil, exitUsage
	}
	p, used, code := planFromRequest(ctx, o, con, stderr)
	if p == nil {
		return nil, nil, code
	}
	ws, err := workspace.Open(o.wsDir, workspace.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "agentd run: workspace %s: %v\n", o.wsDir, err)
		return nil, nil, exitUsage
	}
	root := ws.Root()
	ws.Close()
	j, err := session.OpenJournal(o.stateDir, root, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentd run: %v\n", err)
		return nil, nil, exitFailed
	}
	if p.ID == "" {
		p.ID = requestPlanID(o.request, time.Now())
	}
	hint := func(args ...string) string { return hintCommand(root, o.stateDir, args...) }
	plan, code := confirmPlan(ctx, con, p, j, o.yes, hint)
	if plan == nil {
		return nil, nil, code
	}
	return plan, used, exitOK
}

// openRunSession opens the workspace and the run's session. Without a
// session it returns the exit code, with the reason already printed.
func openRunSession(ctx context.Context, o runOptions, plan *plans.Plan, pos []string, logger *slog.Logger, stderr io.Writer) (*workspace.Workspace, *session.Session, int) {
	// One session per workspace (package session), as the editor server
	// and ACP build it: workspace, journal, review book, snapshot store,
	// approval policy.
	// The flag's limit, else the config's maxFileSize (the session reads
	// it for every front end), else the default.
	ws, err := session.OpenWorkspace(o.wsDir, int64(o.maxFileSize))
	if err != nil {
		var ce *session.ConfigError
		if errors.As(err, &ce) {
			fmt.Fprintf(stderr, "agentd run: %v; or give --max-file-size SIZE\n", err)
		} else {
			fmt.Fprintf(stderr, "agentd run: workspace %s: %v\n", o.wsDir, err)
		}
		return nil, nil, exitUsage
	}
	if o.request == "" && !checkRunWorkspace(ctx, planName(plan, pos), plan, ws, stderr) {
		ws.Close()
		return nil, nil, exitUsage
	}
	// Snapshots keep files up to the same size as tools read.
	sopts := session.Options{WS: ws, StateDir: o.stateDir, Logger: logger, NoSnapshots: o.noSnapshots || o.dryRun,
		AllowBroadWorkspace: o.allowBroad}
	sess, err := session.Open(ctx, sopts)
	if err != nil {
		ws.Close()
		fmt.Fprintf(stderr, "agentd run: %v\n", err)
		if !o.noSnapshots && !o.dryRun {
			fmt.Fprintln(stderr, "(run with --no-snapshots to go on without undo, or choose another --state-dir)")
		}
		return nil, nil, exitFailed
	}
	return ws, sess, exitOK
}

// sayNotStarted says why the session did not start the run, and what to
// do, and returns the exit code.
func sayNotStarted(stderr io.Writer, err error, name string) int {
	if pe := (*session.PolicyError)(nil); errors.As(err, &pe) {
		fmt.Fprintf(stderr, "agentd run: %v (fix or remove the file, or set the policy again from an editor)\n", err)
		return exitFailed
	}
	var ve *plans.ValidationError
	if errors.As(err, &ve) {
		printProblems(stderr, name, ve.Problems)
		if errors.Is(err, engine.ErrNoModel) {
			fmt.Fprintln(stderr, "agentd run: or pass --model PROVIDER:MODEL (for example --model openai:gpt-4o), or --dry-run to see the plan run without one")
		}
		return exitUsage
	}
	var active *engine.ActiveRunError
	if errors.As(err, &active) {
		fmt.Fprintf(stderr, "agentd run: not started: %v (see agentd runs).\n"+
			"  Finish it where it runs (resume or cancel it in that editor or terminal), or run this one beside it with --concurrent.\n", err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "agentd run: %v\n", err)
	return exitFailed
}

// sayRunEnd prints the ended run's summary (or its JSON result), what
// is left to review, how to undo it and what it left in the repository,
// and returns the exit code.
func sayRunEnd(ctx context.Context, o runOptions, sess *session.Session, t *terminal, root string, st engine.RunState, stdout, stderr io.Writer) int {
	// What the run left in your repository, recorded by the session for
	// undo (the summary lists the files left out of snapshots itself).
	side := sess.Leftovers(context.WithoutCancel(ctx), st.RunID, nil)
	undo := ""
	if len(st.Snapshots) > 0 && mayHaveChanged(&st) {
		undo = hintCommand(root, o.stateDir, "undo", st.RunID)
	}
	if o.jsonOut {
		newJSONEncoder(stdout).Encode(jsonResult{Type: "result", State: &st, Summary: st.Summary, Undo: undo})
	} else {
		fmt.Fprintln(stdout)
		if o.brief {
			fmt.Fprint(stdout, briefSummary(&st))
		} else {
			fmt.Fprint(stdout, st.Summary)
		}
		if note := pendingNote(t.runPending(st.RunID), hintCommand(root, o.stateDir, "review", st.RunID)); note != "" {
			fmt.Fprintf(stdout, "\n%s\n", note)
		}
		switch {
		case undo != "" && o.brief:
			fmt.Fprintln(stdout, "/undo undoes the run")
		case undo != "":
			fmt.Fprintf(stdout, "\nUndo the whole run: %s\n", undo)
		}
		if side != nil {
			fmt.Fprintln(stdout, side.Text)
		}
	}
	if t.noInput != "" {
		// Honest about why nothing (or not everything) was done, and how
		// to run it without a terminal.
		fmt.Fprintf(stderr, "agentd run: step %s needs an answer and standard input is closed, so the run stopped; pass --yes to allow every step, or --review none to apply file changes without asking (commands still ask)\n", t.noInput)
		return exitUsage
	}
	return exitCode(st.Status, ctx)
}

func exitCode(s engine.RunStatus, ctx context.Context) int {
	switch s {
	case engine.RunCompleted:
		return exitOK
	case engine.RunPartial:
		return exitPartial
	case engine.RunCancelled:
		return exitCancelled
	}
	if ctx.Err() != nil {
		return exitCancelled
	}
	return exitFailed
}

func planName(p *plans.Plan, pos []string) string {
	if len(pos) > 0 {
		return pos[0]
	}
	if p.Source != "" {
		return p.Source
	}
	return "plan"
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// briefSummary is a chat turn's run in a few lines: its status and steps,
// the files it changed, and what failed. The whole summary stays in the
// journal (agentd runs RUN); the turn's line gives the tokens and cost.
func briefSummary(st *engine.RunState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s: %s, %d of %d steps completed", st.RunID, st.Status, st.CompletedSteps, st.TotalSteps)
	for _, c := range []struct {
		n    int
		what string
	}{{st.FailedSteps, "failed"}, {st.SkippedSteps, "skipped"}, {st.BlockedSteps, "blocked"}} {
		if c.n > 0 {
			fmt.Fprintf(&b, ", %d %s", c.n, c.what)
		}
	}
	b.WriteString("\n")
	if n := len(st.FilesChanged); n > 0 {
		files := st.FilesChanged
		more := ""
		if n > 6 {
			files, more = files[:6], fmt.Sprintf(" and %d more", n-6)
		}
		fmt.Fprintf(&b, "changed: %s%s\n", strings.Join(files, ", "), more)
	}
	firstLine := func(s string) string {
		s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		return s
	}
	for _, step := range st.Steps {
		if step.Status == engine.StepFailed && step.Error != "" {
			fmt.Fprintf(&b, "step %s failed: %s\n", step.ID, firstLine(step.Error))
			break
		}
	}
	if st.Error != "" && st.FailedSteps == 0 {
		fmt.Fprintf(&b, "%s\n", firstLine(st.Error))
	}
	return b.String()
}
