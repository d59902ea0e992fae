package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/internal/repomap"
	"github.com/agentd/agentd/workspace"
)

// MapQuery is what a repository map is ranked for.
type MapQuery struct {
	// Request is the user's request: the symbols, files and words it names
	// rank first ("" for a map of the whole workspace).
	Request string
	// Focus are workspace-relative paths the user is looking at, the most
	// important first (the selection's file, then the open buffers).
	Focus []string
	// Tokens is the map's budget (0: repomap.DefaultTokens).
	Tokens int
}

// RepoMap is a repository map as the planner's model sees it.
type RepoMap struct {
	// Text is the map, as it goes into the planner's prompt.
	Text string
	// Files are the paths it lists, best first (workspace-relative, with /).
	Files []string
	// SourceFiles is how many files of the workspace the map knows.
	SourceFiles int
	// Tokens is the map's size and Budget its budget, in tokens as the
	// map counts them.
	Tokens, Budget int
}

// RepositoryMap brings the repository map of ws up to date and renders it
// for q: the map Create puts before the request (`agentd map` prints it).
// The map is cached in StateDir (see mapCacheBase) and, with WatchMaps,
// kept watched until Close. A cache that cannot be saved is logged, not
// an error: the map is good all the same.
func (p *Planner) RepositoryMap(ctx context.Context, ws *workspace.Workspace, q MapQuery) (RepoMap, error) {
	m := p.repoMap(ws)
	if err := m.Update(ctx); err != nil {
		return RepoMap{}, err
	}
	text, listed, err := m.Render(ctx, repomap.Query{Request: q.Request, Focus: append([]string(nil), q.Focus...), Tokens: q.Tokens})
	if err != nil {
		return RepoMap{}, err
	}
	if err := m.Save(); err != nil {
		p.Logger.Warn("repository map cache not saved", "err", err)
	}
	for i, f := range listed {
		listed[i] = filepath.ToSlash(f)
	}
	return RepoMap{Text: text, Files: listed, SourceFiles: m.Stats().Files,
		Tokens: repomap.TokensOf(text), Budget: repomap.Budget(q.Tokens)}, nil
}

// mapCacheBase is where the repository map of the workspace at root is
// cached: <state dir>/repomap/<hash of the root> (+ ".map").
func mapCacheBase(stateDir, root string) string {
	if stateDir == "" {
		stateDir = gitops.DefaultStateDir()
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(stateDir, "repomap", hex.EncodeToString(sum[:8]))
}

// repoMap returns the planner's repository map of ws, made once per
// workspace and kept up to date by Update.
func (p *Planner) repoMap(ws *workspace.Workspace) *repomap.Map {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.maps == nil {
		p.maps = map[string]*repomap.Map{}
	}
	if m, ok := p.maps[ws.Root()]; ok {
		return m
	}
	cacheFile := ""
	// A state dir inside the workspace (or a .git) is never written: the
	// map is then kept in memory only. Front ends refuse such a state dir
	// before they get here; this is the rule for any that does not.
	if err := gitops.CheckStateDir(p.StateDir, ws.Root()); err != nil {
		p.Logger.Warn("repository map not cached", "err", err)
	} else {
		cache := mapCacheBase(p.StateDir, ws.Root())
		// Builds before the flat binary cache named it .gob; a cache by
		// that name is of no use now (its version is older) and only
		// takes space.
		for _, old := range []string{".gob", ".gob.delta", ".gob.dirs"} {
			_ = os.Remove(cache + old)
		}
		cacheFile = cache + ".map"
	}
	m := repomap.New(ws, repomap.Options{
		CacheFile: cacheFile,
		Watch:     p.WatchMaps,
		// The map shows symbols, made of content: the sensitive list's
		// files are left out (a walk sees links as links, so the name
		// is the file).
		Secret: ws.SensitiveNameMatcher,
		Logger: p.Logger.With("component", "repomap"),
	})
	p.maps[ws.Root()] = m
	return m
}

// repositoryMap renders the map for the request (empty without a
// workspace or with MapTokens < 0). A map that cannot be made is logged
// and left out: the model plans without it.
func (p *Planner) repositoryMap(ctx context.Context, req CreateRequest) (string, error) {
	if req.Workspace == nil || req.MapTokens < 0 {
		return "", nil
	}
	if req.OnProgress != nil {
		req.OnProgress(Progress{Message: "mapping the repository"})
	}
	q := MapQuery{Request: req.Request, Focus: append([]string(nil), req.OpenFiles...), Tokens: req.MapTokens}
	if req.Selection != nil {
		q.Focus = append([]string{req.Selection.Path}, q.Focus...)
	}
	rm, err := p.RepositoryMap(ctx, req.Workspace, q)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return "", err
		}
		p.Logger.Warn("no repository map", "err", err)
		return "", nil
	}
	return rm.Text, nil
}
