// Package engine schedules and executes plans (engine/plans) against a
// workspace: step kinds, retries, failure policy, recovery and bounded
// re-planning, budget, events and run state, and the Markdown summary. It
// knows no front end: the terminal and the JSON-RPC server both subscribe
// to its events and plug in approval, review, input, snapshots and a
// planner through the interfaces in hooks.go (the Approver in
// engine/approval).
//
// The rules every front end relies on live here, once: the journal of
// runs (Journal), which steps get a snapshot after them and how run
// options are read (RunOptions.UnmarshalJSON). The plan model (parse,
// validate, references, conditions, edits, plan files) is engine/plans';
// whether a call may happen (the approval policy, the remembered "always"
// answers, the sensitive-read gate) is engine/approval's.
package engine
