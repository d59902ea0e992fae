package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/workspace"
)

// Planning: every front end asks the planner here (the terminal's agentd
// plan, run REQUEST and chat; the editors' agentd/plan/create and
// regenerate; ACP's prompts), and maps the repository here (agentd map),
// so that a plan is made, made again and refused for want of a model by
// one rule wherever the user stands.

// The planner's plain data, as a front end fills it in or shows it.
type (
	// PlanRequest asks the planner for a new plan (Models.MakePlan).
	PlanRequest = llm.CreateRequest
	// PlanProgress is what the planner is doing, for a front end's
	// progress line.
	PlanProgress = llm.Progress
	// PlanSelection is the editor's selection the planner is told of.
	PlanSelection = llm.Selection
	// Image is an image of a request, for a model configured with vision.
	Image = llm.Image
	// MapQuery is what a repository map is ranked for, and RepoMap the map.
	MapQuery = llm.MapQuery
	RepoMap  = llm.RepoMap
	// RepairError is a plan the model could not repair: its problems and
	// its text (KeepInvalidPlan keeps it for the user to fix).
	RepairError = llm.RepairError
	// ModelSettings are the loaded model settings (Models.Settings).
	ModelSettings = llm.Settings
	// Planner is the planner of Models (nil without a configured model).
	Planner = llm.Planner
)

// NoModelHelp says how to configure a model.
const NoModelHelp = llm.NoModelHelp

// noModel is the error of a plan asked for without a configured model.
func noModel() error { return fmt.Errorf("%w; %s", engine.ErrNoModel, NoModelHelp) }

// MakePlan asks the planner for a plan for req. Without a configured model
// (m nil, or no planner) it fails with engine.ErrNoModel and the help to
// configure one, as every front end says it.
func (m *Models) MakePlan(ctx context.Context, req PlanRequest) (*plans.Plan, error) {
	if m == nil || m.Planner == nil {
		return nil, noModel()
	}
	return m.Planner.Create(ctx, req)
}

// RegeneratePlan asks the planner to make prev again in the light of the
// user's feedback (agentd/plan/regenerate); the same refusal without a
// model as MakePlan.
func (m *Models) RegeneratePlan(ctx context.Context, prev *plans.Plan, feedback string) (*plans.Plan, error) {
	if m == nil || m.Planner == nil {
		return nil, noModel()
	}
	return m.Planner.Regenerate(ctx, prev, feedback)
}

// PlannerUsed is what the planner's calls used so far (tokens and cost).
func (m *Models) PlannerUsed() engine.Usage {
	if m == nil || m.Planner == nil {
		return engine.Usage{}
	}
	return m.Planner.Used()
}

// RepositoryMap is the repository map the planner would put before a
// request (agentd map): the same map, cache (in stateDir) and ranking as
// the planner of LoadModels, with no model settings to load (a bad model
// config does not stop a map). log takes what mapping notices.
func RepositoryMap(ctx context.Context, ws *workspace.Workspace, stateDir string, log *slog.Logger, q MapQuery) (RepoMap, error) {
	p := llm.NewPlanner(&llm.Settings{}, nil)
	p.StateDir = stateDir
	if log != nil {
		p.Logger = log
	}
	defer p.Close()
	return p.RepositoryMap(ctx, ws, q)
}

// KeepInvalidPlan keeps the plan the model could not repair (err wraps a
// *RepairError with its text) in the workspace's journal, beside the
// plans made from requests but apart from them (invalid-plans/, never read
// as a plan), as name.json, indented for a person to fix. It returns the
// file's path; "" and no error when err carries no plan to keep.
func KeepInvalidPlan(stateDir, root, name string, err error) (string, error) {
	var re *RepairError
	if !errors.As(err, &re) || re.Text == "" {
		return "", nil
	}
	j, err := OpenJournal(stateDir, root, nil)
	if err != nil {
		return "", err
	}
	data := []byte(re.Text)
	var v any
	if json.Unmarshal(data, &v) == nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if enc.Encode(v) == nil {
			data = b.Bytes()
		}
	}
	path := filepath.Join(j.Dir(), "invalid-plans", name+".json")
	err = os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		return "", err
	}
	return path, nil
}
