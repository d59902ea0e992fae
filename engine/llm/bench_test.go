package llm

import (
	"fmt"
	"github.com/agentd/agentd/engine/approval"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/workspace"
)

// benchWorkspace makes a tree of 50,000 files in 500 directories.
func benchWorkspace(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for d := range 500 {
		sub := filepath.Join(dir, "src", fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.go", f)), []byte("package x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# bench\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkWorkspaceSummary is the planner's workspace summary (ignore-aware
// walk, README, tree within 4000 tokens) of a 50k-file tree.
func BenchmarkWorkspaceSummary(b *testing.B) {
	dir := benchWorkspace(b)
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	for b.Loop() {
		s, err := workspaceSummary(b.Context(), approval.ReadGate{WS: ws}, nil, nil, 0, nil)
		if err != nil || len(s) > DefaultSummaryTokens*4+200 {
			b.Fatalf("summary %d chars, %v", len(s), err)
		}
	}
}

// BenchmarkWalkDirBaseline lists the same tree with filepath.WalkDir (no
// ignore rules, nothing rendered): the floor the summary is compared to.
func BenchmarkWalkDirBaseline(b *testing.B) {
	dir := benchWorkspace(b)
	for b.Loop() {
		n := 0
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return err
		})
		if n != 50001 {
			b.Fatalf("%d files", n)
		}
	}
}
