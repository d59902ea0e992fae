package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/workspace"
)

// BenchmarkSearchCode runs search_code over a tree: $AGENTD_BENCH_TREE if
// set (see bench_search.sh, which also runs ripgrep on the same tree for a
// ratio), otherwise a generated tree of 2,000 source-like files.
func BenchmarkSearchCode(b *testing.B) {
	root := os.Getenv("AGENTD_BENCH_TREE")
	if root == "" {
		root = b.TempDir()
		genTree(b, root, 2000)
	}
	ws, err := workspace.Open(root, workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tool, _ := Builtin().Get("search_code")
	env := &Env{WS: ws}
	for _, p := range []string{`EXPORT_SYMBOL_GPL`, `(?i)spin_lock_irqsave`, `ioctl\w*\(`, `zzq_not_there`, `[A-Z]{4}_[0-9]{4}`} {
		b.Run(p, func(b *testing.B) {
			args, _ := json.Marshal(SearchCodeArgs{Pattern: p})
			for b.Loop() {
				if _, err := tool.Run(context.Background(), env, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// genTree writes n C-like files of about 4 KiB in nested directories.
func genTree(tb testing.TB, root string, n int) {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"static", "int", "return", "struct", "device", "mutex_lock", "spin_lock_irqsave", "ioctl_handler(",
		"EXPORT_SYMBOL_GPL", "if", "else", "for", "unsigned", "long", "void", "NULL", "err", "goto", "out", "dev_err"}
	for i := range n {
		var sb strings.Builder
		for sb.Len() < 4096 {
			sb.WriteString("\t")
			for range 3 + r.IntN(8) {
				sb.WriteString(words[r.IntN(len(words))])
				sb.WriteByte(' ')
			}
			sb.WriteString(";\n")
		}
		p := filepath.Join(root, fmt.Sprintf("d%d/e%d/f%d.c", i%10, i%7, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func BenchmarkPrefilter(b *testing.B) {
	data := []byte(strings.Repeat("static int foo(struct device *dev) { return spin_lock(&dev->lock); }\n", 1<<14))
	for _, pat := range []string{`EXPORT_SYMBOL_GPL`, `(?i)spin_lock_irqsave`, `[A-Z]{4}_[0-9]{4}`} {
		p := newPrefilter(pat)
		b.Run(pat, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				p.index(data)
			}
		})
	}
}
