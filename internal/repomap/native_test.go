//go:build cgo && (amd64 || arm64)

package repomap

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Native builds do not embed parsers.wasm; the tests that exercise the
// wasm backend (the darwin and windows/arm64 releases' parsers) read it
// from the package folder.
func init() {
	b, err := os.ReadFile("parsers.wasm")
	if err != nil {
		panic("repomap tests: " + err.Error())
	}
	parsersWasm = b
}

// TestNativeMatchesWasm: the native parsers (glue.c by cgo) and
// parsers.wasm give the same tree, byte for byte, for every source file of
// this repository, Go's net/http and the grammar modules' own sources and
// examples, in every language, so a release built either way has the same
// repository map.
func TestNativeMatchesWasm(t *testing.T) {
	ctx := context.Background()
	wasm, err := getEngine(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	nat, err := defaultPool(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nat.(*native); !ok {
		t.Fatalf("this build's parsers are %T, want the native ones", nat)
	}
	for l := range allLangs {
		if !slices.Equal(wasm.kinds[l], theNative.kinds[l]) || len(wasm.fields[l]) != len(theNative.fields[l]) {
			t.Fatalf("%s: the node kinds or fields differ between parsers.wasm and the native grammar; rebuild parsers.wasm (make parsers)", allLangs[l].name)
		}
	}
	wp := parsers{pool: wasm}
	np := parsers{pool: nat}
	defer wp.close()
	defer np.close()

	roots := []string{"../..", filepath.Join(goroot(t), "src", "net", "http")}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}",
		"github.com/tree-sitter/tree-sitter-go", "github.com/tree-sitter/tree-sitter-javascript",
		"github.com/tree-sitter/tree-sitter-typescript", "github.com/tree-sitter/tree-sitter-python",
		"github.com/tree-sitter/tree-sitter-rust", "github.com/tree-sitter-grammars/tree-sitter-lua",
		"github.com/tree-sitter/tree-sitter-java", "github.com/tree-sitter/tree-sitter-c",
		"github.com/tree-sitter/tree-sitter-cpp").Output()
	if err != nil {
		t.Fatalf("go list the grammar modules: %v", err)
	}
	roots = append(roots, strings.Fields(string(out))...)

	files := map[string]int{}
	nodes := 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == ".git" || n == "node_modules" || n == ".cache" {
					return filepath.SkipDir
				}
				return nil
			}
			l := langOf(p)
			if l == nil {
				return nil
			}
			// The grammars' generated parser.c files (megabytes of tables)
			// would only slow the test.
			if info, err := d.Info(); err != nil || info.Size() > 512<<10 {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			a, err := treeOf(ctx, &wp, l, src)
			if err != nil {
				t.Errorf("%s: wasm: %v", p, err)
				return nil
			}
			b, err := treeOf(ctx, &np, l, src)
			if err != nil {
				t.Errorf("%s: native: %v", p, err)
				return nil
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s (%s): the native tree (%d nodes) differs from the wasm one (%d nodes)", p, l.name, len(b)/nodeSize, len(a)/nodeSize)
			}
			files[l.name]++
			nodes += len(a) / nodeSize
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range allLangs {
		if files[l.name] == 0 {
			t.Errorf("no %s file was compared: add one to testdata (testdata/tsx has the TSX one)", l.name)
		}
	}
	t.Logf("same trees for %v (%d nodes)", files, nodes)
}

// treeOf is p's tree of src, copied out of the parser's memory.
func treeOf(ctx context.Context, w *parsers, l *lang, src []byte) ([]byte, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	tr, err := p.tree(ctx, l, src)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(tr.buf[:int(tr.n)*nodeSize]), nil
}
