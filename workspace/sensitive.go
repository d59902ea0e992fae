package workspace

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultSensitive are the files whose content a model step may read only
// after the user says yes (secrets: environment files, keys). A pattern
// without a slash matches a file's name in any folder; one with a slash
// matches the workspace-relative path (doublestar: ** is any depth).
var DefaultSensitive = []string{".env", ".env.*", "*.pem", "*.key", "id_rsa*"}

// sensitiveConfig is what a workspace's .agentd/config.json adds to the
// default list ("sensitive": [patterns]). A workspace can only add: a
// cloned repository must not be able to take a secret off the list.
type sensitiveConfig struct {
	Sensitive []string `json:"sensitive"`
}

// SensitivePattern returns the pattern of the sensitive list (the default
// one and what .agentd/config.json adds) that rel matches, or "" when rel
// is not sensitive. rel is a workspace-relative slash path (or anything
// Resolve takes). The list is matched against the path as written and
// against the file it leads to: symbolic links and ".." are followed
// inside the workspace, so config.txt -> .env and src/notes.md ->
// ../id_rsa are sensitive, and a link leading outside the workspace is
// matched by its target's name.
func (w *Workspace) SensitivePattern(rel string) string {
	return w.SensitiveMatcher()(rel)
}

// SensitiveMatcher returns SensitivePattern with the list read once, for
// a walk that asks of many files.
func (w *Workspace) SensitiveMatcher() func(rel string) string {
	match := w.SensitiveNameMatcher()
	return func(p string) string {
		if pat := match(p); pat != "" {
			return pat
		}
		for _, q := range w.sensitiveAliases(p) {
			if pat := match(q); pat != "" {
				return pat
			}
		}
		return ""
	}
}

// SensitiveNameMatcher matches the path as written only, without looking
// at the disk: for a walk that never follows links (fileset reports a link
// as a link), where a regular file's path is the file itself.
func (w *Workspace) SensitiveNameMatcher() func(rel string) string {
	list := append(append([]string(nil), DefaultSensitive...), w.extraSensitive()...)
	return func(rel string) string {
		rel = path.Clean(filepath.ToSlash(rel))
		for _, p := range list {
			target := rel
			if !strings.Contains(p, "/") {
				target = path.Base(rel)
			}
			if ok, err := doublestar.Match(p, target); err == nil && ok {
				return p
			}
		}
		return ""
	}
}

// sensitiveAliases are the other names of what p leads to: the clean
// lexical path, the symlink-free path inside the workspace, and, for a
// link that leaves the workspace, the name of the file it reaches.
func (w *Workspace) sensitiveAliases(p string) []string {
	r, err := w.resolve(p)
	if err == nil {
		return []string{r.rel, r.real}
	}
	name, err := pathOf(p)
	if err != nil {
		return nil
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(w.root, name)
	}
	if real, err := filepath.EvalSymlinks(name); err == nil {
		return []string{filepath.Base(real)}
	}
	return nil
}

// extraSensitive reads the workspace config's additions (read each time:
// the file is small, and an edit takes effect at once).
func (w *Workspace) extraSensitive() []string {
	name := filepath.Join(w.Root(), ".agentd", "config.json")
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return nil
	}
	var c sensitiveConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil // the model config reports a malformed file
	}
	return c.Sensitive
}
