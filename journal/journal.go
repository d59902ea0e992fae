// Package journal is a workspace's record of what agentd did there: its
// runs, plans, change sets and their review state, remembered approval
// rules, the approval policy, and the undo log (which runs and restores
// were undone). It sits below engine and review: it stores records and
// owns the rules that are about records only (which run "undo" means,
// which restore "undo restore" means), and knows nothing of how a run
// runs.
package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentd/agentd/gitops"
)

// Journal is a workspace's record of its runs, plans, pending change sets
// and remembered approval rules, kept in the state dir beside the
// workspace's shadow repository (never inside the workspace). Every front
// end (the editor server, agentd run, ACP) writes and reads the same
// journal, so a restarted daemon and `agentd runs` find what any of them
// did. Each record is written atomically (temp file, fsync, rename, fsync
// of the directory) before the save returns: what a front end
// acknowledges is on disk. A save that fails returns an error naming the
// file.
type Journal struct {
	dir string
	log *slog.Logger

	undoMu sync.Mutex // one undo bookkeeping at a time in this process
}

// Dir is where the journal of the workspace at root lives under
// stateDir ("" = the default state dir): beside its shadow repository.
func Dir(stateDir, root string) string {
	return filepath.Join(gitops.StoreDir(stateDir, root), "journal")
}

// Open opens (creating it if needed) the journal of the workspace
// at root, the workspace's real path (workspace.Workspace.Root). log
// receives warnings about damaged records; nil discards them.
func Open(stateDir, root string, log *slog.Logger) (*Journal, error) {
	if root == "" {
		return nil, errors.New("journal: no workspace root")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stateDir == "" {
		stateDir = gitops.DefaultStateDir()
	}
	dir := Dir(stateDir, root)
	// Earlier builds kept the server's state in rpc/ beside the shadow
	// repository, and before that under a hash of their own.
	sum := sha256.Sum256([]byte(root))
	for _, old := range []string{
		filepath.Join(gitops.StoreDir(stateDir, root), "rpc"),
		filepath.Join(stateDir, "workspaces", hex.EncodeToString(sum[:8]), "rpc"),
	} {
		moveOnce(old, dir, log)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: creating %s: %w (the state dir is not writable)", dir, err)
	}
	return &Journal{dir: dir, log: log}, nil
}

// moveOnce moves state an older build kept at old to dir, if dir does not
// exist yet; the newer state wins and the older is left for the user.
func moveOnce(old, dir string, log *slog.Logger) {
	if _, err := os.Stat(old); err != nil {
		return
	}
	if _, err := os.Lstat(dir); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		log.Warn("could not move the workspace's saved state; it stays where it is", "from", old, "to", dir, "err", err)
		return
	}
	if err := os.Rename(old, dir); err != nil {
		log.Warn("could not move the workspace's saved state; it stays where it is", "from", old, "to", dir, "err", err)
		return
	}
	_ = os.Remove(filepath.Dir(old)) // only if empty
	log.Info("moved the workspace's saved state", "from", old, "to", dir)
}

// Dir is the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// Log is where the journal reports damaged records.
func (j *Journal) Log() *slog.Logger { return j.log }

func safeName(id string) string {
	return strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace(id)
}

// RecordName is the file name (without .json) of the record of id.
func RecordName(id string) string { return safeName(id) }

// Warn logs a problem with a record of the journal, naming its file.
func (j *Journal) Warn(msg, file string, err error) { j.log.Warn(msg, "file", file, "err", err) }

// Save writes v as JSON to name (a slash path inside the journal, such as
// "policy.json") atomically.
func (j *Journal) Save(name string, v any) error {
	return WriteJSONFile(filepath.Join(j.dir, filepath.FromSlash(name)), v)
}

// Load reads name into v; false when there is no such record.
func (j *Journal) Load(name string, v any) (bool, error) {
	path := filepath.Join(j.dir, filepath.FromSlash(name))
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s is damaged: %w (move it away to start afresh)", path, err)
	}
	return true, nil
}

// WriteJSONFile writes v to path atomically: temp file, fsync, rename,
// fsync of the directory. The error names the file and what to do.
func WriteJSONFile(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return WriteFileAtomic(path, data)
}

// WriteFileAtomic writes data to path: temp file, fsync, rename, fsync of
// the directory. The error names the file and what to do.
func WriteFileAtomic(path string, data []byte) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("saving %s: %w (is the state dir writable, with space left?)", path, err)
		}
	}()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Records decodes every *.json record of sub, sorted by name. A record
// that cannot be read is left out and logged with its file name.
func Records[T any](j *Journal, sub string) ([]T, error) {
	dir := filepath.Join(j.dir, sub)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	sort.Slice(ents, func(a, b int) bool { return ents[a].Name() < ents[b].Name() })
	var out []T
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			j.log.Warn("a saved record cannot be read; leaving it out", "file", path, "err", err)
			continue
		}
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			j.log.Warn("a saved record is damaged; leaving it out (move it away to silence this)", "file", path, "err", err)
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// SaveChange records a change set and its review state (v is the front
// end's record of it).
func (j *Journal) SaveChange(id string, v any) error {
	return j.Save("changes/"+RecordName(id)+".json", v)
}

// Changes returns every recorded change set, undecoded.
func (j *Journal) Changes() ([]json.RawMessage, error) {
	return Records[json.RawMessage](j, "changes")
}

// Record is one record of the journal, undecoded, with its file.
type Record struct {
	File string
	Data json.RawMessage
}

// ChangesExcept returns the recorded change sets whose record name
// (RecordName) is not in known, reading only those files: a front end
// picks up what another process recorded since it last looked.
func (j *Journal) ChangesExcept(known map[string]bool) ([]Record, error) {
	dir := filepath.Join(j.dir, "changes")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var out []Record
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if e.IsDir() || !ok || strings.HasPrefix(name, ".") || known[name] {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			j.log.Warn("a saved record cannot be read; leaving it out", "file", path, "err", err)
			continue
		}
		out = append(out, Record{File: path, Data: data})
	}
	return out, nil
}
