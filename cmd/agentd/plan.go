package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

func init() {
	planFromRequest = func(ctx context.Context, o runOptions, con *console, stderr io.Writer) (*plans.Plan, *engine.PlanningUsage, int) {
		// The planner's repository map is cached in the run's state dir;
		// its calls are counted, so the run's summary shows them.
		budget := engine.NewBudget(0, 0)
		var used engine.Usage
		p, code := makePlan(ctx, "run", o.request, o.wsDir, o.model, stderr, planOpts{stateDir: o.stateDir, budget: budget, used: &used, verbose: o.verbose,
			explore: o.explore, con: con, yes: o.yes})
		if p == nil {
			return nil, nil, code
		}
		return p, &engine.PlanningUsage{Calls: budget.Calls(), Usage: used}, code
	}
}

func newPlanCmd(a *app) *cobra.Command {
	var wsDir, out, model string
	var po planOpts
	var allowBroad bool
	cmd := &cobra.Command{
		Use:   "plan REQUEST",
		Short: "make a plan from a request with a model",
		Long: `Asks the configured model for a plan that does REQUEST in the workspace, and writes
it as JSON to stdout (or --output FILE). Needs a model: AGENTD_MODEL, --model or the
config file.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := argsBetween(1, 1, "the request, in quotes")(cmd, args); err != nil {
				return err
			}
			if strings.TrimSpace(args[0]) == "" {
				return fmt.Errorf("the request is empty: say what the plan should do, e.g. agentd plan \"add a --verbose flag\"")
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&wsDir, "workspace", ".", "the workspace `DIR` the plan is for (default: the current folder)")
	fs.Lookup("workspace").DefValue = ""
	fs.StringVarP(&out, "output", "o", "", "write the plan to `FILE` instead of stdout")
	fs.StringVar(&model, "model", "", "the `MODEL` (provider:model or a profile; default AGENTD_MODEL or the config file)")
	fs.IntVar(&po.explore, "explore", 0, "let the model read and search the workspace for up to `N` rounds before planning (default 6; -1: none)")
	fs.IntVar(&po.mapTokens, "map-tokens", 0, "the repository map's budget in `TOKENS` (default 2000; -1: no map)")
	fs.StringVar(&po.stateDir, "state-dir", "", "agentd's state `DIR`, for the repository map's cache (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd)")
	fs.BoolVarP(&po.verbose, "verbose", "v", false, "show the model's text as it streams in")
	addAllowBroadFlag(fs, &allowBroad)
	completeDirs(cmd, "workspace", "state-dir")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		// The map's cache goes to the state dir: the same places rules as
		// agentd run and agentd map, before anything is written.
		if !checkPlaces("plan", wsDir, po.stateDir, allowBroad, a.stderr) {
			return exitUsage
		}
		return cmdPlan(a.ctx, args[0], wsDir, out, model, po, a.stdout, a.stderr)
	})
	return cmd
}

func cmdPlan(ctx context.Context, request, wsDir, out, model string, po planOpts, stdout, stderr io.Writer) int {
	plan, code := makePlan(ctx, "plan", request, wsDir, model, stderr, po)
	if plan == nil {
		return code
	}
	data, err := planJSON(plan)
	if err != nil {
		fmt.Fprintf(stderr, "agentd plan: %v\n", err)
		return exitFailed
	}
	if out == "" {
		if _, err := stdout.Write(data); err != nil {
			return exitFailed
		}
		return exitOK
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		fmt.Fprintf(stderr, "agentd plan: writing %s: %v\n", out, err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "agentd plan: wrote %s (%d steps)\n", out, len(plan.Steps))
	return exitOK
}

// planJSON is the plan as a person reads and edits it: indented, and
// without HTML escaping ("&&" stays "&&", not "\u0026\u0026").
func planJSON(plan *plans.Plan) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(plan); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// wireModel sets cfg's Model, Planner and Rules from the model settings
// (AGENTD_MODEL, ~/.config/agentd/config.json, the workspace's
// .agentd/config.json) when a model is configured; without one, llm and
// agent steps fail with the engine's "no model" error and recovery falls
// back to asking the user. run.go calls it before engine.New.
func wireModel(cfg *engine.Config, wsRoot, model string) error {
	opts := session.ModelOptions{Root: wsRoot, Model: model, Tools: cfg.Tools}
	if cfg.Logger != nil {
		// The model client's retries go to the run's log (above the
		// status line, and to --log-file), not raw to stderr.
		opts.Logger = cfg.Logger.With("component", "llm")
	}
	models, err := session.LoadModels(opts)
	if err != nil {
		return err
	}
	models.Wire(cfg)
	return nil
}

// planLogLevel is the planner's log level at the terminal: warn, info
// with --verbose, or what AGENTD_LOG says.
func planLogLevel(verbose bool) slog.Level {
	name := "warn"
	if verbose {
		name = "info"
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(logLevelDefault(name))); err != nil {
		return slog.LevelWarn
	}
	return l
}

// makePlan asks the configured model for a plan; on failure it prints the
// error and returns a nil plan with the exit code.
func makePlan(ctx context.Context, cmd, request, wsDir, model string, stderr io.Writer, po planOpts) (*plans.Plan, int) {
	ws, err := session.OpenWorkspace(wsDir, 0) // the config's maxFileSize, as the run reads
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
		return nil, exitUsage
	}
	defer ws.Close()
	live := newPlanLive(cmd, stderr)
	live.verbose = po.verbose
	models, err := session.LoadModels(session.ModelOptions{Root: ws.Root(), Model: model, StateDir: po.stateDir,
		// The model client's log lines (a retry after a 429) print above
		// the live line, never over it.
		// A retry is one line in the terminal's words; other records
		// only from warn up, unless --verbose or AGENTD_LOG asks for more.
		Logger: slog.New(frontLog{say: func(line string) { fmt.Fprintf(live, "agentd %s: %s\n", cmd, line) },
			next: slog.NewTextHandler(live, &slog.HandlerOptions{Level: planLogLevel(po.verbose)})})})
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
		return nil, exitUsage
	}
	con := po.con
	if con == nil {
		con = newConsole(stderr, stdin)
	}
	plan, err := models.MakePlan(ctx, session.PlanRequest{Request: request, Workspace: ws, ExploreRounds: po.explore, MapTokens: po.mapTokens,
		OnProgress: live.progress, OnWarnings: live.warnings, OnText: live.streamed, Budget: po.budget,
		Approve: live.approver(con, po.yes)})
	live.done(plan)
	used := models.PlannerUsed()
	if po.used != nil {
		*po.used = used
	}
	if used.InputTokens+used.OutputTokens > 0 {
		fmt.Fprintf(stderr, "agentd %s: planner used %d tokens in, %d out ($%.4f)\n", cmd, used.InputTokens, used.OutputTokens, used.CostUSD)
	}
	if err != nil {
		var ve *plans.ValidationError
		switch {
		case errors.Is(err, engine.ErrNoModel):
			fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
			return nil, exitUsage
		case errors.As(err, &ve):
			fmt.Fprintf(stderr, "agentd %s: the model's plan is still invalid after a repair round:\n", cmd)
			printProblems(stderr, "plan", ve.Problems)
			keepInvalidPlan(cmd, request, ws.Root(), po.stateDir, err, stderr)
			return nil, exitUsage
		case ctx.Err() != nil:
			fmt.Fprintf(stderr, "agentd %s: cancelled\n", cmd)
			return nil, exitCancelled
		}
		fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
		return nil, exitFailed
	}
	return plan, exitOK
}

// serveModel connects engine/llm to the rpc server of `agentd serve`: it is
// the server's PlanMaker and its Configure hook (serve.go wires both), and
// it takes the editor's initializationOptions.model from Configure.
type serveModel struct {
	log      *slog.Logger
	stateDir string // --state-dir, for the planner's repository map cache

	mu     sync.Mutex
	editor *session.EditorModel
	ws     *workspace.Workspace
	models *session.ModelSwitch // nil before initialize; agentd/model/set changes its model
}

func newServeModel(log *slog.Logger) *serveModel {
	if log == nil {
		log = slog.Default()
	}
	return &serveModel{log: log}
}

// close stops what the planner keeps running (its maps' file watchers)
// when the daemon stops.
func (m *serveModel) close() {
	m.mu.Lock()
	ms := m.models
	m.mu.Unlock()
	if ms != nil {
		ms.Close()
	}
}

// setEditorModel records the editor's initializationOptions.model.
func (m *serveModel) setEditorModel(o rpc.ModelOptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.editor = &o
}

// configure is rpc.Options.Configure: it loads the model settings for the
// workspace and adds the step model, planner and rules to cfg.
func (m *serveModel) configure(cfg *engine.Config, model *rpc.ModelOptions) {
	if model != nil {
		m.setEditorModel(*model)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ws = cfg.WS
	root := ""
	if cfg.WS != nil {
		root = cfg.WS.Root()
	}
	m.models = session.NewModelSwitch(session.ModelOptions{Root: root, Editor: m.editor, LoadLogger: m.log,
		Logger: m.log.With("component", "llm"), Tools: cfg.Tools, StateDir: m.stateDir,
		WatchMaps: true}) // a long-lived daemon: later plans' maps re-check only changed files
	// The editor may set a model later (agentd/model/set): the engine asks
	// the switch at each model call.
	m.models.Wire(cfg)
	if err := m.models.LoadErr(); err != nil {
		m.log.Warn("model settings not loaded; plan/create and llm steps will fail", "err", err)
	} else if !m.models.Configured() {
		m.log.Info("no model configured", "help", session.NoModelHelp)
	}
}

// SetModel implements rpc.ModelSetter (agentd/model/set).
func (m *serveModel) SetModel(ctx context.Context, c session.ModelChoice) (session.ModelInfo, error) {
	m.mu.Lock()
	ms := m.models
	m.mu.Unlock()
	if ms == nil {
		return session.ModelInfo{}, errors.New("no workspace is open yet: send initialize first")
	}
	return ms.Set(ctx, c)
}

// ModelInfo implements rpc.ModelSetter (agentd/model/get).
func (m *serveModel) ModelInfo(ctx context.Context) (session.ModelInfo, error) {
	m.mu.Lock()
	ms := m.models
	m.mu.Unlock()
	if ms == nil {
		return session.ModelInfo{}, errors.New("no workspace is open yet: send initialize first")
	}
	return ms.Info(), nil
}

// MakePlan implements rpc.PlanMaker (create, and regenerate when
// req.Previous is set).
func (m *serveModel) MakePlan(ctx context.Context, req rpc.PlanRequest) (*plans.Plan, error) {
	pl, cr, err := m.createRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Previous != nil {
		return pl.Regenerate(ctx, req.Previous, req.Feedback)
	}
	return pl.Create(ctx, cr)
}

// createRequest is the planner and its request for req: the open files
// and the selection resolved in the workspace.
func (m *serveModel) createRequest(ctx context.Context, req rpc.PlanRequest) (*session.Planner, session.PlanRequest, error) {
	m.mu.Lock()
	ms, ws := m.models, m.ws
	m.mu.Unlock()
	if ms == nil {
		return nil, session.PlanRequest{}, fmt.Errorf("%w; %s", engine.ErrNoModel, session.NoModelHelp)
	}
	pl, err := ms.Planner()
	if err != nil {
		return nil, session.PlanRequest{}, err
	}
	cr := session.PlanRequest{Request: req.Request, Workspace: ws, ExploreRounds: req.ExploreRounds, MapTokens: req.MapTokens,
		Approve: req.Approve, Images: req.Images, Guidance: req.Guidance}
	if req.Progress != nil {
		cr.OnProgress = func(p session.PlanProgress) { req.Progress(p.String()) }
	}
	if ws != nil {
		for _, u := range req.URIs {
			if rel, _, err := ws.Resolve(u); err == nil {
				cr.OpenFiles = append(cr.OpenFiles, rel)
			}
		}
		if sel := req.Selection; sel != nil {
			if rel, _, err := ws.Resolve(sel.URI); err == nil {
				if data, err := ws.ReadFile(ctx, rel); err == nil {
					// An LSP range that ends at character 0 of a line (a
					// linewise selection, as editors send it) ends on the
					// line before.
					end := sel.Range.End.Line
					if sel.Range.End.Character == 0 && end > sel.Range.Start.Line {
						end--
					}
					cr.Selection = &session.PlanSelection{Path: rel, StartLine: sel.Range.Start.Line + 1, EndLine: end + 1,
						Text: linesOf(string(data), sel.Range.Start.Line, end)}
				}
			}
		}
	}
	return pl, cr, nil
}

// CheckImages implements rpc.ImageChecker: whether the model in force
// takes images (session.ModelSwitch.CheckImages).
func (m *serveModel) CheckImages(imgs []session.Image) error {
	m.mu.Lock()
	ms := m.models
	m.mu.Unlock()
	if ms == nil {
		return fmt.Errorf("%w; %s", engine.ErrNoModel, session.NoModelHelp)
	}
	return ms.CheckImages(imgs)
}

// Answer implements rpc.Answerer (agentd/chat/ask): the planner's model
// reads with the exploration tools and answers in words.
func (m *serveModel) Answer(ctx context.Context, req rpc.PlanRequest, onText func(string)) (*rpc.Answer, error) {
	pl, cr, err := m.createRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	cr.OnText = onText
	a, err := pl.Answer(ctx, cr)
	if err != nil {
		return nil, err
	}
	return &rpc.Answer{Text: a.Text, Read: a.Read}, nil
}

// linesOf returns lines from..to (0-based, inclusive).
func linesOf(s string, from, to int) string {
	lines := strings.Split(s, "\n")
	if from < 0 || from >= len(lines) {
		return ""
	}
	to = min(to, len(lines)-1)
	return strings.Join(lines[from:to+1], "\n")
}
