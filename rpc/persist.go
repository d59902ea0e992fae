package rpc

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/gitops"
)

// defaultStateDir is $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd, else
// ~/.local/state/agentd (the same rule as gitops.DefaultStateDir).
func defaultStateDir() string {
	if d := os.Getenv("AGENTD_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentd")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "agentd")
	}
	return filepath.Join(os.TempDir(), "agentd-state")
}

// WorkspaceStateDir is where the server keeps a workspace's plans, runs,
// change sets and policy: rpc/ in the directory of the workspace's shadow
// repository (gitops.StoreDir), so that one directory holds all of a
// workspace's state.
func WorkspaceStateDir(stateDir, root string) string {
	return filepath.Join(gitops.StoreDir(stateDir, root), "rpc")
}

// legacyStateDir is where earlier builds kept it, under a hash of its own.
func legacyStateDir(stateDir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(stateDir, "workspaces", hex.EncodeToString(sum[:8]), "rpc")
}

// moveLegacyState moves state kept where older versions kept it to dir, once.
func moveLegacyState(legacy, dir string, log *slog.Logger) {
	if _, err := os.Stat(legacy); err != nil {
		return
	}
	if _, err := os.Lstat(dir); err == nil {
		return // both exist: the new one wins, the old one is left for the user
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err == nil {
		err = os.Rename(legacy, dir)
		if err == nil {
			_ = os.Remove(filepath.Dir(legacy)) // only if empty
			log.Info("moved the workspace's saved plans and runs", "from", legacy, "to", dir)
			return
		}
		log.Warn("could not move the workspace's saved plans and runs; they stay where they are", "from", legacy, "to", dir, "err", err)
	}
}

// persister writes the server's state as atomic JSON files so that a
// restarted daemon finds plans, runs and pending change sets.
type persister struct {
	dir string
	log *slog.Logger
}

// newPersister returns nil when there is no workspace (nothing to keep).
func newPersister(stateDir, root string, log *slog.Logger) *persister {
	if root == "" || stateDir == "" {
		return nil
	}
	dir := WorkspaceStateDir(stateDir, root)
	moveLegacyState(legacyStateDir(stateDir, root), dir, log)
	return &persister{dir: dir, log: log}
}

func safeName(id string) string {
	return strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace(id)
}

// writeJSON writes v to rel atomically: temp file, fsync, rename, fsync dir.
func (p *persister) writeJSON(rel string, v any) error {
	if p == nil {
		return nil
	}
	path := filepath.Join(p.dir, rel)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("saving %s: %w", path, werr)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

func (p *persister) save(rel string, v any) {
	if err := p.writeJSON(rel, v); err != nil {
		p.log.Error("persisting state failed", "error", err)
	}
}

// readAll decodes every *.json file of sub, sorted by name, with newT
// returning a fresh value to decode into.
func readAll[T any](p *persister, sub string) []T {
	if p == nil {
		return nil
	}
	dir := filepath.Join(p.dir, sub)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	var out []T
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			p.log.Warn("reading saved state", "file", e.Name(), "error", err)
			continue
		}
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			p.log.Warn("saved state is damaged; ignoring it", "file", filepath.Join(dir, e.Name()), "error", err)
			continue
		}
		out = append(out, v)
	}
	return out
}

func (p *persister) savePlan(pl *engine.Plan) {
	p.save(filepath.Join("plans", safeName(pl.ID)+".json"), pl)
}

func (p *persister) loadPlans() []*engine.Plan { return readAll[*engine.Plan](p, "plans") }

func (p *persister) saveRun(st engine.RunState) {
	p.save(filepath.Join("runs", safeName(st.RunID)+".json"), st)
}

func (p *persister) loadRuns() []engine.RunState { return readAll[engine.RunState](p, "runs") }

func (p *persister) loadChanges() []*changeRecord { return readAll[*changeRecord](p, "changes") }

type savedPolicy struct {
	Policy ApprovalPolicy `json:"policy"`
	Rules  []Rule         `json:"rules"`
}

func (p *persister) savePolicy(pol ApprovalPolicy, rules []Rule) {
	p.save("policy.json", savedPolicy{Policy: pol, Rules: rules})
}

func (p *persister) loadPolicy() (savedPolicy, bool) {
	if p == nil {
		return savedPolicy{}, false
	}
	data, err := os.ReadFile(filepath.Join(p.dir, "policy.json"))
	if err != nil {
		return savedPolicy{}, false
	}
	var sp savedPolicy
	if err := json.Unmarshal(data, &sp); err != nil {
		p.log.Warn("saved policy is damaged; using defaults", "error", err)
		return savedPolicy{}, false
	}
	return sp, true
}
