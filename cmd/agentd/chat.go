package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// agentd chat: a conversation at the terminal. Each turn makes a plan from
// what the user typed (with the repository map and exploration, as agentd
// plan does), shows it and runs it with the usual review (runWith); the
// turn (plan, review decisions and reasons, results, failures) is handed
// to the next turn's planner as context. Wiring only: planning, running,
// reviewing and undoing are the core's, reached as agentd run and agentd
// undo reach them.

type chatOptions struct {
	w       wsFlags
	model   string
	yes     bool
	review  string
	verbose bool
	explore int
}

// chatTurn is what the next turn is told about one turn.
type chatTurn struct {
	request  string
	plan     *engine.Plan
	runID    string
	status   engine.RunStatus
	steps    []string // "step w: completed", with notes and errors
	review   []string // "change X (step w): rejected: reason"
	failure  string   // the failed steps with their errors and output
	undone   bool
	tokens   int
	costUSD  float64
	startSnp string // the run's start snapshot, for /diff
}

const chatHelp = `Type what you want changed; each turn makes a plan, shows it and runs it with the review.
  /plan         show the last plan; the next plan waits for [r]un/[e]dit/[q]uit before it runs
  /undo         undo the last run (the same undo as agentd undo)
  /diff         what the last turn's run changed (from its start snapshot to now)
  /runs         the runs of this workspace
  /model [M]    show or set the model (provider:model or a profile)
  /help         this help
  f             after a turn that failed: hand the failure back to the model ("fix it")
  Ctrl-D        end the conversation`

func newChatCmd(a *app) *cobra.Command {
	var o chatOptions
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "a conversation: each request is planned, shown, run and reviewed, and kept as context",
		Long: `A conversation with the model at the terminal (also 'agentd' with no arguments on a
terminal). Each turn makes a plan from your request, with the repository map and exploration,
shows it and runs it with the usual review; the turn (plan, your review decisions and
reasons, results, failures) is context for the next. /help lists the commands.`,
		Args: noArgs,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			return cmdChat(a, o)
		}),
	}
	fs := cmd.Flags()
	addWSFlags(fs, &o.w)
	fs.StringVar(&o.model, "model", "", "the `MODEL` (provider:model or a profile; default AGENTD_MODEL or the config file)")
	fs.BoolVar(&o.yes, "yes", false, "answer yes to every approval and review")
	fs.StringVar(&o.review, "review", "", "show file changes `MODE`: before, after or none (default: before)")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "show the model's text as it streams in while it plans")
	fs.IntVar(&o.explore, "explore", 0, "let the model read and search the workspace for up to `N` rounds before each plan (default 6; -1: none)")
	completeDirs(cmd, "workspace", "state-dir")
	completeWords(cmd, "review", "before", "after", "none")
	return cmd
}

type chat struct {
	a       *app
	o       chatOptions
	root    string
	j       *engine.Journal
	con     *console
	turns   []*chatTurn
	confirm bool // /plan: the next plan waits for r/e/q
}

func cmdChat(a *app, o chatOptions) int {
	ws, err := workspace.Open(o.w.dir, workspace.Options{})
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd chat: workspace %s: %v\n", o.w.dir, err)
		return exitUsage
	}
	root := ws.Root()
	ws.Close()
	j, err := session.OpenJournal(o.w.stateDir, root, nil)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd chat: %v\n", err)
		return exitFailed
	}
	c := &chat{a: a, o: o, root: root, j: j, con: newConsole(a.stdout, stdin)}
	c.con.Println(c.con.paint("1", "agentd chat") + " in " + root + c.modelNote() + "\n/help lists the commands; Ctrl-D ends the conversation.")
	for {
		q := "›"
		if c.failed() != nil {
			q = "› (f + Enter: fix it)"
		}
		line, err := c.con.Prompt(a.ctx, "", q)
		switch {
		case errors.Is(err, errNoAnswer):
			c.con.Println(fmt.Sprintf("end of the conversation (%d turn%s)", len(c.turns), plural(len(c.turns))))
			return exitOK
		case err != nil:
			return exitCancelled
		}
		if a.ctx.Err() != nil {
			return exitCancelled
		}
		c.command(line)
	}
}

func (c *chat) modelNote() string {
	if c.o.model != "" {
		return " (model " + c.o.model + ")"
	}
	return ""
}

// failed is the last turn when it failed and was not undone.
func (c *chat) failed() *chatTurn {
	if n := len(c.turns); n > 0 && c.turns[n-1].failure != "" && !c.turns[n-1].undone {
		return c.turns[n-1]
	}
	return nil
}

func (c *chat) wsArgs(args ...string) []string {
	args = append(args, "--workspace", c.root)
	if c.o.w.stateDir != "" {
		args = append(args, "--state-dir", c.o.w.stateDir)
	}
	return args
}

// sub runs another agentd command in this process (undo, runs, snapshot
// diff), so the chat means by them what they mean everywhere.
func (c *chat) sub(args ...string) int {
	var code int
	c.con.Hold(func() { code = runCLI(c.a.ctx, args, stdin, c.a.stdout, c.a.stderr) })
	return code
}

func (c *chat) command(line string) {
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case line == "":
		return
	case word == "/help" || word == "/?":
		c.con.Println(chatHelp)
	case word == "/undo":
		if c.sub(c.wsArgs("undo")...) == exitOK {
			for i := len(c.turns) - 1; i >= 0; i-- {
				if !c.turns[i].undone && c.turns[i].startSnp != "" {
					c.turns[i].undone = true
					break
				}
			}
		}
	case word == "/runs":
		c.sub(c.wsArgs("runs")...)
	case word == "/diff":
		var last *chatTurn
		for i := len(c.turns) - 1; i >= 0 && last == nil; i-- {
			if c.turns[i].startSnp != "" {
				last = c.turns[i]
			}
		}
		if last == nil {
			c.con.Println("no run of this conversation took a snapshot yet: nothing to diff")
			return
		}
		c.sub(c.wsArgs("snapshot", "diff", last.startSnp)...)
	case word == "/model":
		if rest != "" {
			c.o.model = rest
		}
		if c.o.model == "" {
			c.con.Println("the model is the configured one (AGENTD_MODEL or the config file); /model provider:model sets it")
		} else {
			c.con.Println("model: " + c.o.model)
		}
	case word == "/plan":
		if n := len(c.turns); n > 0 && c.turns[n-1].plan != nil {
			showPlan(c.con, c.turns[n-1].plan)
		}
		c.confirm = true
		c.con.Println("the next plan will wait for [r]un, [e]dit or [q]uit before it runs")
	case strings.HasPrefix(word, "/"):
		c.con.Println(fmt.Sprintf("unknown command %s; /help lists them", word))
	case (line == "f" || line == "F") && c.failed() != nil:
		// The failure (step, error, the end of its output) is in the
		// context, under the last turn's "What failed".
		c.turn("fix it", "The last turn failed (see what failed above). Fix what made it fail, without undoing what it did right.")
	default:
		c.turn(line, line)
	}
}

// turn plans from request (with the conversation so far), shows the plan,
// runs it with the review, and keeps what happened.
func (c *chat) turn(shown, request string) {
	t := &chatTurn{request: shown}
	budget := engine.NewBudget(0, 0)
	var used engine.Usage
	p, _ := makePlan(c.a.ctx, "chat", c.context()+request, c.root, c.o.model, c.a.stderr,
		planOpts{stateDir: c.o.w.stateDir, budget: budget, used: &used, verbose: c.o.verbose, explore: c.o.explore})
	t.tokens, t.costUSD = used.InputTokens+used.OutputTokens, used.CostUSD
	if p == nil {
		c.con.Println("no plan this turn; say it another way, or /help")
		return
	}
	p.ID = requestPlanID(shown, time.Now())
	p.Request = shown
	t.plan = p
	c.turns = append(c.turns, t)
	if c.confirm {
		c.confirm = false
		hint := func(args ...string) string { return hintCommand(c.root, c.o.w.stateDir, args...) }
		np, _ := confirmPlan(c.a.ctx, c.con, p, c.j, c.o.yes, hint)
		if np == nil {
			t.status = "not run"
			c.usage(t, nil)
			return
		}
		p, t.plan = np, np
	} else {
		if err := c.j.SavePlan(p); err != nil {
			c.con.Println(fmt.Sprintf("agentd chat: cannot save the plan: %v", err))
			return
		}
		showPlan(c.con, p)
	}
	lvl, file := "warn", ""
	ro := runOptions{planPath: c.j.PlanFile(p.ID), wsDir: c.root, stateDir: c.o.w.stateDir, review: c.o.review, yes: c.o.yes,
		model: c.o.model, parallel: 4, stepTimeout: engine.DefaultStepTimeout, log: logFlags{file: &file, level: &lvl}}
	c.con.Hold(func() { runWith(c.a.ctx, ro, c.a.stdout, c.a.stderr) })
	st := c.runOf(p.ID)
	if st != nil {
		c.learn(t, st)
	}
	c.usage(t, st)
}

// usage prints the turn's token use and cost (planning and run).
func (c *chat) usage(t *chatTurn, st *engine.RunState) {
	tokens, cost := t.tokens, t.costUSD
	if st != nil {
		tokens += st.Tokens
		cost += st.CostUSD
	}
	line := fmt.Sprintf("turn %d: %s; %d token%s, $%.4f", len(c.turns), orDash(string(t.status)), tokens, plural(tokens), cost)
	c.con.Println(c.con.paint("90", line))
	if t.failure != "" {
		c.con.Println(c.con.paint("33", "the turn failed; f + Enter hands the failure back to the model (fix it), /undo undoes the run"))
	}
}

// runOf is the newest run of the plan id in the journal.
func (c *chat) runOf(planID string) *engine.RunState {
	runs, err := c.j.Runs()
	if err != nil {
		return nil
	}
	for i := range runs {
		if runs[i].PlanID == planID {
			return &runs[i]
		}
	}
	return nil
}

// learn records what the run did: statuses, notes and errors of the
// steps, the review decisions with their reasons, and the failures with
// the commands' output.
func (c *chat) learn(t *chatTurn, st *engine.RunState) {
	t.runID, t.status = st.RunID, st.Status
	if len(st.Snapshots) > 0 {
		t.startSnp = st.Snapshots[0]
	}
	var fail strings.Builder
	for _, s := range st.Steps {
		line := fmt.Sprintf("step %s: %s", s.ID, s.Status)
		if s.Reason != "" {
			line += " (" + s.Reason + ")"
		}
		if s.Error != "" {
			line += ": " + s.Error
		}
		t.steps = append(t.steps, line)
		if s.Status == engine.StepFailed {
			fmt.Fprintf(&fail, "%s\n", line)
			var out struct {
				ExitCode *int   `json:"exitCode"`
				Stdout   string `json:"stdout"`
				Stderr   string `json:"stderr"`
			}
			if json.Unmarshal(s.Output, &out) == nil && (out.Stdout != "" || out.Stderr != "") {
				fmt.Fprintf(&fail, "its output (the end):\n%s\n", tailLines(out.Stdout+out.Stderr, 40))
			}
		}
	}
	if st.Status == engine.RunFailed && fail.Len() == 0 && st.Error != "" {
		fmt.Fprintf(&fail, "the run failed: %s\n", st.Error)
	}
	t.failure = strings.TrimSpace(fail.String())
	sets, _ := review.Recorded(c.j.Journal, st.RunID)
	for _, s := range sets {
		line := fmt.Sprintf("change %s (step %s): %s", s.ID, orDash(s.StepID), s.Status())
		if s.Reason != "" {
			line += ", the user's reason: " + s.Reason
		}
		said := map[string]bool{s.Reason: true}
		for _, r := range s.Rejected {
			if k := r.Path + "\x00" + r.Reason; r.Reason != "" && !said[r.Reason] && !said[k] {
				said[k] = true
				line += fmt.Sprintf("; %s rejected, the user's reason: %s", r.Path, r.Reason)
			}
		}
		t.review = append(t.review, line)
	}
}

// context is the conversation so far, for the planner: what each turn
// asked, planned, what the user decided at the review and why, and what
// happened.
func (c *chat) context() string {
	if len(c.turns) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("This request is one turn of a conversation at the terminal. The turns so far, oldest first:\n")
	for i, t := range c.turns {
		fmt.Fprintf(&b, "\nTurn %d. The user asked: %s\n", i+1, t.request)
		if t.plan != nil {
			fmt.Fprintf(&b, "The plan %q:\n", t.plan.Title)
			for _, s := range t.plan.Steps {
				fmt.Fprintf(&b, "  - %s [%s] %s\n", s.ID, orDash(s.Tool), stepTarget(s))
			}
		}
		if t.status != "" {
			fmt.Fprintf(&b, "Result: %s\n", t.status)
		}
		for _, s := range t.steps {
			fmt.Fprintf(&b, "  %s\n", s)
		}
		if len(t.review) > 0 {
			b.WriteString("The user's review of its changes:\n")
			for _, r := range t.review {
				fmt.Fprintf(&b, "  %s\n", r)
			}
		}
		if t.failure != "" {
			fmt.Fprintf(&b, "What failed:\n%s\n", t.failure)
		}
		if t.undone {
			b.WriteString("The user undid this turn's run: the workspace is back as it was before it.\n")
		}
	}
	b.WriteString("\nNow the user asks (plan only this, in the light of the turns above):\n")
	return b.String()
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
