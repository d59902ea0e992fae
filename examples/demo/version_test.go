package main

import (
	"encoding/json"
	"os"
	"testing"
)

func TestVersionMatchesConfig(t *testing.T) {
	data, err := os.ReadFile("config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("config.json: %v", err)
	}
	if cfg.Version != Version {
		t.Fatalf("config.json version %q != Version %q in version.go", cfg.Version, Version)
	}
}
