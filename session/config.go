package session

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentd/agentd/workspace"
)

// The largest file tools read and snapshots keep is the session's, for
// every front end: "maxFileSize" in the workspace's .agentd/config.json,
// else in the user's config file (~/.config/agentd/config.json), else
// workspace.DefaultMaxFileSize; a front end's own override (the
// terminal's --max-file-size) wins over both.

// MaxFileSizeKey is the config key.
const MaxFileSizeKey = "maxFileSize"

// ParseSize reads a byte size: 1048576, 512KiB, 50MiB, 1GiB (KB, MB, GB
// and K, M, G mean the same powers of 1024). It must be positive.
func ParseSize(v string) (int64, error) {
	t := strings.TrimSpace(v)
	mult := int64(1)
units:
	for _, u := range []struct {
		suffixes []string
		m        int64
	}{{[]string{"GiB", "GB", "G"}, 1 << 30}, {[]string{"MiB", "MB", "M"}, 1 << 20}, {[]string{"KiB", "KB", "K"}, 1 << 10}, {[]string{"B"}, 1}} {
		for _, suf := range u.suffixes {
			if len(t) > len(suf) && strings.EqualFold(t[len(t)-len(suf):], suf) {
				t, mult = strings.TrimSpace(t[:len(t)-len(suf)]), u.m
				break units
			}
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || n*float64(mult) < 1 || n*float64(mult) > 1<<50 {
		return 0, fmt.Errorf("%q is not a size: write e.g. 50MiB, 512KiB or 1048576", v)
	}
	return int64(n * float64(mult)), nil
}

// ConfigError is a bad value in a config file, naming the file and key.
type ConfigError struct {
	File, Key string
	Err       error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s: %s: %v (fix it or remove the key: the default is %dMiB)", e.File, e.Key, e.Err, workspace.DefaultMaxFileSize>>20)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// ConfigMaxFileSize is the maxFileSize the config gives the workspace at
// root (getenv finds the user's config file; os.Getenv if nil); 0 when no
// config sets it. The user's config file sets the limit. A workspace's
// .agentd/config.json may only raise it (above the user's value, or the
// default): as with the sensitive list, a cloned repository must not be
// able to take files out of the snapshots that undo relies on. A lower
// value there is not used. A value that is not a size is a *ConfigError.
// A file that is not JSON is left to the model settings, which report it
// (llm.Load).
func ConfigMaxFileSize(root string, getenv func(string) string) (int64, error) {
	user, err := userConfigFile(getenv).size()
	if err != nil {
		return 0, err
	}
	if root == "" {
		return user, nil
	}
	ws, err := readConfigFile(filepath.Join(root, ".agentd", "config.json")).size()
	if err != nil {
		return 0, err
	}
	floor := user
	if floor == 0 {
		floor = workspace.DefaultMaxFileSize
	}
	if ws > floor {
		return ws, nil
	}
	return user, nil
}

// size is the file's maxFileSize; 0 when the file or the key is missing
// (or the file is not JSON).
func (c *configFile) size() (int64, error) {
	raw, ok := c.value(MaxFileSizeKey)
	if !ok {
		return 0, nil
	}
	var str string
	if json.Unmarshal(raw, &str) != nil {
		str = string(raw) // a number of bytes
	}
	n, err := ParseSize(str)
	if err != nil {
		return 0, &ConfigError{File: c.path, Key: MaxFileSizeKey, Err: err}
	}
	return n, nil
}

// OpenWorkspace opens the workspace at root with the session's file size
// limit: override when it is set (a front end's flag), else the config's
// maxFileSize (ConfigMaxFileSize), else the default. Every front end
// opens its workspaces here, so that tools and snapshots use the same
// limit wherever the user stands.
func OpenWorkspace(root string, override int64) (*workspace.Workspace, error) {
	size := override
	if size <= 0 {
		real := root // named in full in errors
		if a, err := filepath.Abs(root); err == nil {
			real = a
		}
		if r, err := filepath.EvalSymlinks(real); err == nil {
			real = r
		}
		n, err := ConfigMaxFileSize(real, nil)
		if err != nil {
			return nil, err
		}
		size = n
	}
	return workspace.Open(root, workspace.Options{MaxFileSize: size})
}

// TrustedMCPServersKey is the key of the user's config file that names
// the MCP servers whose readOnlyHint is trusted.
const TrustedMCPServersKey = "mcpTrustedServers"

// ConfigTrustedMCPServers are the names of the MCP servers whose tools'
// readOnlyHint the user trusts ("mcpTrustedServers": ["docs", "search"]
// in the user's config file; getenv finds it, os.Getenv if nil): a tool
// such a server marks read-only is a read of low risk, which the default
// policy runs without asking. Only the user's config file is read: a
// workspace's .agentd/config.json (a cloned repository) must not be able
// to make a server's word enough. A value that is not a list of names is
// an error naming the file and the key.
func ConfigTrustedMCPServers(getenv func(string) string) ([]string, error) {
	c := userConfigFile(getenv)
	raw, ok := c.value(TrustedMCPServersKey)
	if !ok {
		return nil, nil
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, fmt.Errorf("%s: %s: want a list of MCP server names, as the editor names them (%v); fix it or remove the key: no server's hints are trusted then",
			c.path, TrustedMCPServersKey, err)
	}
	return names, nil
}
