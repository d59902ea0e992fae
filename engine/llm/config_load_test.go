package llm

import (
	"log/slog"
	"os"
	"path/filepath"
)

// LoadOptions and Load read the two config files as session.LoadSettings
// does (the product's one reader) and decode them with Decode, for this
// package's tests.
type LoadOptions struct {
	Getenv    func(string) string
	Workspace string
	Logger    *slog.Logger
}

func Load(opts LoadOptions) (*Settings, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	read := func(path string) ConfigBytes {
		if path == "" {
			return ConfigBytes{}
		}
		data, err := os.ReadFile(path)
		return ConfigBytes{Path: path, Data: data, Err: err}
	}
	src := Sources{User: read(ConfigPath(getenv)), Getenv: getenv, Logger: opts.Logger}
	if opts.Workspace != "" {
		src.Workspace = read(filepath.Join(opts.Workspace, ".agentd", "config.json"))
	}
	return Decode(src)
}
