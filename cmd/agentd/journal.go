package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// openJournal opens the journal of the workspace at wsDir: the one the
// editor server and agentd run of that workspace keep.
func openJournal(cmd, wsDir, stateDir string, stderr io.Writer) (*engine.Journal, bool) {
	ws, err := workspace.Open(wsDir, workspace.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: workspace %s: %v\n", cmd, wsDir, err)
		return nil, false
	}
	root := ws.Root()
	ws.Close()
	j, err := engine.OpenJournal(stateDir, root, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
		return nil, false
	}
	return j, true
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// cmdRules lists and revokes remembered approval rules ("always" answers),
// shared by the terminal and the editors.
func cmdRules(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("rules", "list|revoke [RULE-ID...] [flags]", stderr)
	wsDir := fs.String("workspace", ".", "the workspace `dir`")
	stateDir := fs.String("state-dir", "", "agentd's state `dir` (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd)")
	jsonOut := fs.Bool("json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) == 0 || (pos[0] != "list" && pos[0] != "revoke") || (pos[0] == "list" && len(pos) > 1) || (pos[0] == "revoke" && len(pos) < 2) {
		fs.Usage()
		return exitUsage
	}
	j, ok := openJournal("rules", *wsDir, *stateDir, stderr)
	if !ok {
		return exitFailed
	}
	store := j.Rules()
	if pos[0] == "revoke" {
		if err := store.Revoke(pos[1:]...); err != nil {
			fmt.Fprintf(stderr, "agentd rules revoke: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "revoked %s\n", strings.Join(pos[1:], ", "))
		return exitOK
	}
	rules, err := store.List()
	if err != nil {
		fmt.Fprintf(stderr, "agentd rules list: %v\n", err)
		return exitFailed
	}
	if *jsonOut {
		writeJSON(stdout, rules)
		return exitOK
	}
	if len(rules) == 0 {
		fmt.Fprintln(stdout, "no remembered approval rules")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tANSWER\tCATEGORY\tTOOL\tCOMMAND\tCREATED")
	for _, r := range rules {
		ans := "reject"
		if r.Allow {
			ans = "allow"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, ans, r.Category, orDash(r.Tool), orDash(r.Command), r.CreatedAt.Local().Format(time.DateTime))
	}
	tw.Flush()
	return exitOK
}

// cmdRuns lists the workspace's past runs (from the editor and the
// terminal alike), or prints one run's summary.
func cmdRuns(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("runs", "[RUN-ID] [flags]", stderr)
	wsDir := fs.String("workspace", ".", "the workspace `dir`")
	stateDir := fs.String("state-dir", "", "agentd's state `dir` (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd)")
	jsonOut := fs.Bool("json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) > 1 {
		fs.Usage()
		return exitUsage
	}
	j, ok := openJournal("runs", *wsDir, *stateDir, stderr)
	if !ok {
		return exitFailed
	}
	runs, err := j.Runs()
	if err != nil {
		fmt.Fprintf(stderr, "agentd runs: %v\n", err)
		return exitFailed
	}
	if len(pos) == 1 {
		for _, st := range runs {
			if st.RunID == pos[0] {
				if *jsonOut {
					writeJSON(stdout, st)
					return exitOK
				}
				sum := st.Summary
				if sum == "" {
					sum = engine.Summary(st.FinalPlan, st)
				}
				fmt.Fprint(stdout, sum)
				printChangeSets(stdout, j, st.RunID)
				return exitOK
			}
		}
		fmt.Fprintf(stderr, "agentd runs: no run %q in this workspace's journal (agentd runs lists them)\n", pos[0])
		return exitFailed
	}
	if *jsonOut {
		for i := range runs {
			runs[i].Steps, runs[i].OriginalPlan, runs[i].FinalPlan = nil, nil, nil
		}
		if runs == nil {
			runs = []engine.RunState{}
		}
		writeJSON(stdout, runs)
		return exitOK
	}
	if len(runs) == 0 {
		fmt.Fprintln(stdout, "no runs recorded for this workspace")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tSTEPS\tSUMMARY")
	for _, st := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\n", st.RunID, st.Status, st.StartTime.Local().Format(time.DateTime),
			st.CompletedSteps, st.TotalSteps, oneLine(st))
	}
	tw.Flush()
	return exitOK
}

// oneLine is a run's summary in one line: its plan's title and its error.
func oneLine(st engine.RunState) string {
	s := ""
	if st.FinalPlan != nil && st.FinalPlan.Title != "" {
		s = st.FinalPlan.Title
	} else if st.PlanID != "" {
		s = "plan " + st.PlanID
	}
	if st.FailedSteps > 0 {
		s += fmt.Sprintf(" (%d failed)", st.FailedSteps)
	}
	if st.Error != "" {
		e := st.Error
		if len(e) > 80 {
			e = e[:77] + "..."
		}
		s += ": " + e
	}
	return strings.TrimSpace(s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printChangeSets lists a run's change sets with their review state, as
// the journal records them (from the editor or the terminal).
func printChangeSets(w io.Writer, j *engine.Journal, runID string) {
	sets, err := review.Recorded(j, runID)
	if err != nil {
		fmt.Fprintf(w, "\n(change sets unreadable: %v)\n", err)
	}
	if len(sets) == 0 {
		return
	}
	fmt.Fprintln(w, "\nReview of the change sets (from the journal):")
	for _, c := range sets {
		files := make([]string, len(c.Files))
		for i, f := range c.Files {
			files[i] = f.Path
		}
		fmt.Fprintf(w, "  %s  step %s  %s (review %s)  %s\n", c.ID, orDash(c.StepID), c.Status(), c.Review, strings.Join(files, ", "))
	}
}
