package session

import (
	"encoding/json"
	"os"

	"github.com/agentd/agentd/engine/llm"
)

// configFile is one config file as agentd reads it: the user's
// (~/.config/agentd/config.json, llm.ConfigPath) or a workspace's
// (.agentd/config.json). Every setting of either file is read through it,
// once per file and question: the file is read and parsed here, and each
// key's reader names the file and the key in its errors.
type configFile struct {
	path string
	// raw is the file's top-level object; nil when there is no path, the
	// file cannot be read or is not a JSON object (the model settings
	// report such a file: LoadSettings).
	raw map[string]json.RawMessage
	// data and err are the file's bytes and what reading it gave, for the
	// model settings' decoder (llm.Decode), which reports a broken file.
	data []byte
	err  error
}

// bytes is the file as the model settings' decoder takes it.
func (c *configFile) bytes() llm.ConfigBytes {
	return llm.ConfigBytes{Path: c.path, Data: c.data, Err: c.err}
}

// userConfigFile is the user's config file (getenv finds it; os.Getenv
// if nil).
func userConfigFile(getenv func(string) string) *configFile {
	if getenv == nil {
		getenv = os.Getenv
	}
	return readConfigFile(llm.ConfigPath(getenv))
}

// readConfigFile reads the config file at path ("" for none).
func readConfigFile(path string) *configFile {
	c := &configFile{path: path}
	if path == "" {
		return c
	}
	data, err := os.ReadFile(path)
	c.data, c.err = data, err
	if err != nil {
		return c
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &raw) == nil {
		c.raw = raw
	}
	return c
}

// value is key's raw JSON; false when the file or the key is missing, or
// the key is null.
func (c *configFile) value(key string) (json.RawMessage, bool) {
	raw, ok := c.raw[key]
	if !ok || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}
