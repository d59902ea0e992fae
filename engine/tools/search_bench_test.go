package tools

import (
	"bytes"
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
	defer ws.Close()
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

// BenchmarkPrefilter scans real kernel sources (from $AGENTD_BENCH_TREE, or
// generated text) for sequences, against bytes.Index for the literals.
func BenchmarkPrefilter(b *testing.B) {
	data := []byte(strings.Repeat("static int foo(struct device *dev) { return spin_lock(&dev->lock); }\n", 1<<14))
	if root := os.Getenv("AGENTD_BENCH_TREE"); root != "" {
		data = nil
		for _, f := range []string{"kernel/sched/core.c", "fs/namei.c", "mm/memory.c", "net/core/dev.c"} {
			d, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				b.Fatal(err)
			}
			data = append(data, d...)
		}
	}
	count := func(index func([]byte) int) int {
		n := 0
		for i := 0; ; {
			r := index(data[i:])
			if r < 0 {
				return n
			}
			n++
			i += r + 1
		}
	}
	for _, pat := range []string{`struct file_operations`, `EXPORT_SYMBOL_GPL`, `ioctl`, `(?i)spin_lock_irqsave`, `[A-Z]{4}_[0-9]{4}`} {
		p := newPrefilter(pat)
		b.Run(pat, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				count(p.index)
			}
		})
		if lit := p.alts[0].lit; lit != nil {
			b.Run(pat+"/bytes.Index", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					count(func(d []byte) int { return bytes.Index(d, lit) })
				}
			})
		}
	}
}
