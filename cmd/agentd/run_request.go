package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
)

// requestPlanID names a plan made from a request: when it was made and
// what was asked, so that the journal's file of it (engine.Journal.PlanFile,
// the path the terminal prints) reads well in a listing.
func requestPlanID(request string, now time.Time) string {
	slug := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, request)
	slug = strings.Trim(slug, "-")
	for strings.Contains(slug, "--") {
		slug = strings.ReplaceAll(slug, "--", "-")
	}
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	if slug == "" {
		slug = "plan"
	}
	return "plan-" + now.UTC().Format("20060102-150405") + "-" + slug
}

// showPlan prints a plan's steps, one line each.
func showPlan(con *console, p *plans.Plan) {
	title := p.Title
	if title == "" {
		title = "plan"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d step%s)\n", con.paint("1", title), len(p.Steps), plural(len(p.Steps)))
	for i, s := range p.Steps {
		what := s.Tool
		if what == "" {
			what = string(s.EffectiveKind())
		}
		fmt.Fprintf(&b, "  %d. %s [%s] %s", i+1, s.ID, what, s.Description)
		if t := stepTarget(s); t != "" {
			if s.Description != "" {
				b.WriteString(" · ")
			}
			b.WriteString(con.paint("36", t))
		}
		if len(s.DependsOn) > 0 {
			fmt.Fprintf(&b, " %s", con.paint("90", "after "+strings.Join(s.DependsOn, ", ")))
		}
		b.WriteString("\n")
	}
	con.Println(strings.TrimRight(b.String(), "\n"))
}

// confirmPlan saves the plan made from a request in the workspace's
// journal, shows it and asks: run,
// edit in $EDITOR (then check it again), or quit. It returns the plan to
// run, or nil and the exit code.
//
// hint makes a command the user can paste (hintCommand with the run's
// workspace and state dir).
func confirmPlan(ctx context.Context, con *console, p *plans.Plan, j *engine.Journal, yes bool, hint func(args ...string) string) (*plans.Plan, int) {
	// The plan store keeps the plan in the journal, as it keeps the plans
	// an editor or ACP client made: one place, one naming rule, one
	// version rule (session.PlanStore).
	store := session.NewPlanStore(j, nil)
	path := j.PlanFile(p.ID)
	if _, err := store.Store(p, "model", "created from a request"); err != nil {
		con.Println(fmt.Sprintf("agentd run: cannot save the plan: %v", err))
		return nil, exitFailed
	}
	// shown is what the user saw last; bad holds the problems of the
	// saved file after an edit. Only a valid plan runs, and only the one
	// the file holds: an edit that broke it is never replaced by the plan
	// from before the edit.
	shown, bad := p, []string(nil)
	show := true
	shownData, _ := os.ReadFile(path)
	for {
		if show {
			showPlan(con, shown)
			con.Println("plan saved to " + path)
		}
		show = false
		if yes {
			return shown, exitOK
		}
		question := "[r]un it, [e]dit it in $EDITOR, or [q]uit?"
		if bad != nil {
			question = "the saved plan is not valid: [e]dit it again, or [q]uit?"
		}
		ans, err := con.Choose(ctx, "", question, "req", 0)
		switch {
		case errors.Is(err, errNoAnswer):
			con.Println("agentd run: the plan needs a yes, and standard input is closed: pass --yes to run it, or run it later with: " + hint("run", path))
			return nil, exitUsage
		case err != nil:
			return nil, exitCancelled
		}
		switch ans {
		case 'r':
			// Run what the file holds now, and only if it is what was
			// shown: a file changed behind the prompt is shown again.
			data, _ := os.ReadFile(path)
			np, problems, err := loadPlan(ctx, path)
			switch {
			case bad != nil:
				con.Println("the saved plan has problems (above); it does not run until they are fixed: e to edit it, q to quit")
			case err != nil:
				con.Println(fmt.Sprintf("agentd run: %v", err))
			case len(problems) > 0:
				bad = reportPlanProblems(con, path, problems)
			case !bytes.Equal(data, shownData):
				con.Println(path + " changed since it was shown; this is what it holds now:")
				shown, show, shownData = np, true, data
			default:
				return np, exitOK
			}
			continue
		case 'q':
			con.Println("not run; run it later with: " + hint("run", path))
			return nil, exitOK
		}
		ed := editor()
		var eerr error
		con.Hold(func() {
			cmd := editCmd(ctx, ed, path)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			eerr = cmd.Run()
		})
		if eerr != nil {
			con.Println(fmt.Sprintf("the editor %q failed: %v (set $EDITOR to the editor you use)", ed, eerr))
			continue
		}
		data, _ := os.ReadFile(path)
		np, problems, err := loadPlan(ctx, path)
		switch {
		case err != nil:
			con.Println(fmt.Sprintf("agentd run: %v", err))
			bad = []string{err.Error()}
		case len(problems) > 0:
			bad = reportPlanProblems(con, path, problems)
		case bytes.Equal(data, shownData):
			shown, bad, show = np, nil, true
		default:
			// The user's edit is the plan's next version, with its history
			// entry, as an edit from an editor is.
			if _, err := store.Store(np, "user", "edited in $EDITOR"); err != nil {
				con.Println(fmt.Sprintf("agentd run: cannot save the edited plan: %v", err))
				bad = []string{err.Error()}
				continue
			}
			data, _ = os.ReadFile(path)
			shown, bad, show, shownData = np, nil, true, data
		}
	}
}

// reportPlanProblems prints an edited plan's problems and returns them.
func reportPlanProblems(con *console, path string, problems []plans.Problem) []string {
	var out []string
	for _, pr := range problems {
		line := pr.String()
		if !strings.HasPrefix(line, path) { // a problem names its file itself
			line = path + ": " + line
		}
		con.Println(line)
		out = append(out, line)
	}
	con.Println("fix them with e, or quit with q")
	return out
}
