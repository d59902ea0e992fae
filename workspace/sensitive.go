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
// is not sensitive. rel is a workspace-relative slash path.
func (w *Workspace) SensitivePattern(rel string) string {
	return w.SensitiveMatcher()(rel)
}

// SensitiveMatcher returns SensitivePattern with the list read once, for
// a walk that asks of many files.
func (w *Workspace) SensitiveMatcher() func(rel string) string {
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
