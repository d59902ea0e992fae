package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/session"
)

func newToolsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "tools",
		Short: "list the tools a plan step can call, with their risk and arguments",
		Long: `Lists the built-in tools a plan's tool steps (and agent steps) can call: the kind of
action (read, write, command, ...), the default risk that approvals go by (a step's own
"risk" overrides it), and the arguments (required ones first, optional ones with a ?).`,
		Args: noArgs,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			printTools(a.stdout, session.BuiltinTools())
			return exitOK
		}),
	}
}

// printTools writes one line per tool: name, category, risk, arguments.
func printTools(w io.Writer, reg *session.ToolRegistry) {
	list := reg.List()
	slices.SortFunc(list, func(a, b session.Tool) int { return strings.Compare(a.Name(), b.Name()) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tKIND\tRISK\tARGS")
	for _, t := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name(), t.Category(), toolRisk(t), toolArgs(t.Schema()))
	}
	tw.Flush()
}

// toolRisk is the tool's default risk, "varies" when it depends on the
// call (git: status is low, commit high).
func toolRisk(t session.Tool) string {
	if session.RiskVaries(t) {
		return string(t.Risk()) + " (varies)"
	}
	return string(t.Risk())
}

// toolArgs lists a schema's properties: required ones first, in the
// schema's order of "required", then the optional ones sorted, with a ?.
func toolArgs(schema json.RawMessage) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return "?"
	}
	args := slices.Clone(s.Required)
	var opt []string
	for name := range s.Properties {
		if !slices.Contains(s.Required, name) {
			opt = append(opt, name+"?")
		}
	}
	slices.Sort(opt)
	return strings.Join(append(args, opt...), " ")
}
