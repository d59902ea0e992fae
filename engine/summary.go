package engine

import (
	"fmt"
	"github.com/agentd/agentd/engine/plans"
	"slices"
	"strings"
	"time"
)

// Summary renders the Markdown summary of a finished run: status,
// durations, one row per step, files changed, snapshots, plan updates,
// rollback and model usage. Both front ends show it.
func Summary(p *plans.Plan, st RunState) string {
	var b strings.Builder
	title := "Run " + st.RunID
	if p != nil && p.Title != "" {
		title = p.Title
	}
	fmt.Fprintf(&b, "# %s\n\n", mdText(title))
	fmt.Fprintf(&b, "**Status:** %s  \n", st.Status)
	if st.DryRun {
		b.WriteString("**Dry run:** nothing was written and no command ran; the change sets below were only proposed.  \n")
	}
	fmt.Fprintf(&b, "**Run:** `%s`", st.RunID)
	if st.PlanVersion > 0 {
		fmt.Fprintf(&b, " (plan version %d)", st.PlanVersion)
	}
	b.WriteString("  \n")
	fmt.Fprintf(&b, "**Duration:** %s  \n", fmtMs(st.ElapsedMs))
	fmt.Fprintf(&b, "**Steps:** %d completed, %d failed, %d skipped, %d blocked of %d\n",
		st.CompletedSteps, st.FailedSteps, st.SkippedSteps, st.BlockedSteps, st.TotalSteps)
	if st.Error != "" {
		fmt.Fprintf(&b, "\n**Error:** %s\n", mdText(st.Error))
	}
	if len(st.Steps) > 0 {
		b.WriteString("\n| step | status | attempts | duration | note |\n|---|---|---|---|---|\n")
		for _, s := range st.Steps {
			note := s.Error
			if note == "" {
				note = s.Reason
			}
			dur := ""
			if s.StartedAt != nil && s.EndedAt != nil {
				dur = fmtMs(s.DurationMs)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", mdCell(s.ID), s.Status, s.Attempts, dur, mdCell(note))
		}
	}
	if len(st.FilesChanged) > 0 {
		b.WriteString("\n## Files changed\n\n")
		for _, f := range st.FilesChanged {
			fmt.Fprintf(&b, "- `%s`\n", f)
		}
	}
	var changes, rejected, partly, unapplied []string
	for _, s := range st.Steps {
		for _, id := range s.ChangeIDs {
			switch {
			case slices.Contains(s.RejectedChangeIDs, id):
				rejected = append(rejected, id)
			case slices.Contains(s.UnappliedChangeIDs, id):
				unapplied = append(unapplied, id)
			case slices.Contains(s.PartlyRejectedChangeIDs, id):
				partly = append(partly, id)
			default:
				changes = append(changes, id)
			}
		}
	}
	ids := func(l []string) string { return "`" + strings.Join(l, "`, `") + "`" }
	if len(changes) > 0 {
		label := "Change sets"
		if st.DryRun {
			label = "Proposed change sets (dry run, not applied)"
		}
		fmt.Fprintf(&b, "\n%s: %s\n", label, ids(changes))
	}
	if len(partly) > 0 {
		fmt.Fprintf(&b, "\nPartly applied change sets (some hunks rejected; see the step's note): %s\n", ids(partly))
	}
	if len(rejected) > 0 {
		fmt.Fprintf(&b, "\nRejected change sets (not applied): %s\n", ids(rejected))
	}
	if len(unapplied) > 0 {
		fmt.Fprintf(&b, "\nChange sets not applied (the run stopped before they were decided, or applying them failed): %s\n", ids(unapplied))
	}
	if len(st.SkippedFiles) > 0 {
		b.WriteString("\n## Left out of snapshots\n\nA restore cannot bring these back; back them up yourself if they matter.\n\n")
		for _, f := range st.SkippedFiles {
			fmt.Fprintf(&b, "- `%s` (%s)\n", f.Path, mdText(f.Reason))
		}
	}
	if len(st.Snapshots) > 0 {
		b.WriteString("\n## Snapshots\n\n")
		for i, id := range st.Snapshots {
			label := st.SnapshotLabels[id]
			if label == "" { // a record of an older build
				label = "taken by the run"
				if i == 0 {
					label = "run start"
				}
				for _, s := range st.Steps {
					if s.SnapshotID == id {
						label = "after " + s.ID
					}
				}
			}
			fmt.Fprintf(&b, "- `%s` %s\n", id, label)
		}
	}
	if p != nil {
		var ups []plans.PlanUpdate
		from := 0 // updates made during the run, when the state says where it began
		if st.OriginalPlan != nil {
			from = st.OriginalPlan.Version
		}
		for _, u := range p.History {
			if u.Source != "load" && u.Version > from {
				ups = append(ups, u)
			}
		}
		if len(ups) > 0 {
			b.WriteString("\n## Plan updates\n\n")
			for _, u := range ups {
				fmt.Fprintf(&b, "- v%d (%s", u.Version, u.Source)
				if u.Action != "" {
					fmt.Fprintf(&b, ", %s", u.Action)
				}
				fmt.Fprintf(&b, "): %s", mdText(u.Reason))
				if len(u.StepIDs) > 0 {
					fmt.Fprintf(&b, " — steps %s", strings.Join(u.StepIDs, ", "))
				}
				b.WriteString("\n")
			}
		}
	}
	if st.RePlans > 0 {
		fmt.Fprintf(&b, "\nRe-planned %d time(s).\n", st.RePlans)
	}
	if r := st.Rollback; r != nil && r.Reverted {
		b.WriteString("\n## Rollback\n\n")
		rollbackRevert(&b, r)
	} else if r != nil {
		b.WriteString("\n## Rollback\n\n")
		fmt.Fprintf(&b, "Restored the start snapshot `%s`: %d file(s) restored", r.SnapshotID, len(r.Restored))
		if len(r.Restored) > 0 {
			fmt.Fprintf(&b, " (%s)", codeList(r.Restored))
		}
		if len(r.Conflicts) > 0 {
			fmt.Fprintf(&b, "; %d left alone because they changed meanwhile: %s", len(r.Conflicts), strings.Join(r.Conflicts, ", "))
		}
		b.WriteString(".\n")
		if r.Error != "" {
			fmt.Fprintf(&b, "\n**Rollback error:** %s\n", mdText(r.Error))
		}
	}
	if st.LLMCalls > 0 || st.Tokens > 0 || st.ToolCalls > 0 || st.Planning != nil {
		b.WriteString("\n## Usage\n\n")
		fmt.Fprintf(&b, "%d model call(s), %d token(s), $%.4f; %d tool call(s).\n", st.LLMCalls, st.Tokens, st.CostUSD, st.ToolCalls)
		if p := st.Planning; p != nil {
			fmt.Fprintf(&b, "Making the plan (included above): %d model call(s), %d token(s) in, %d out, $%.4f.\n",
				p.Calls, p.Usage.InputTokens, p.Usage.OutputTokens, p.Usage.CostUSD)
		}
	}
	return b.String()
}

func fmtMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// mdCell keeps a table cell on one line and its pipes literal.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

func mdText(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// rollbackRevert says what a rollback by revert did: every file it changed
// and every file it kept, with why and the command that overwrites them.
func rollbackRevert(b *strings.Builder, r *RestoreInfo) {
	if len(r.Restored) == 0 {
		b.WriteString("Took back the run's changes: no file needed changing.\n")
	} else {
		fmt.Fprintf(b, "Took back the run's changes in %d file(s): %s.\n", len(r.Restored), codeList(r.Restored))
	}
	if len(r.Kept) > 0 {
		fmt.Fprintf(b, "\nKept %d file(s) as they are:\n\n", len(r.Kept))
		for _, k := range r.Kept {
			fmt.Fprintf(b, "- `%s`: %s\n", k.Path, mdText(k.Reason))
		}
		fmt.Fprintf(b, "\nTo give them their state from before the run anyway (a safety snapshot keeps yours): `%s`\n", r.Overwrite)
	}
	if r.RecordedAs != "" {
		fmt.Fprintf(b, "\nThe rollback is recorded as `%s`, so it can be undone too.\n", r.RecordedAs)
	}
	if r.Error != "" {
		fmt.Fprintf(b, "\n**Rollback error:** %s\n", mdText(r.Error))
	}
}

func codeList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = "`" + p + "`"
	}
	return strings.Join(q, ", ")
}
