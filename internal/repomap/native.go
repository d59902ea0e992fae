//go:build cgo && (amd64 || arm64)

package repomap

// glue.c compiled natively: the tree-sitter runtime (lib.c) and the
// grammars are compiled by the cgo packages of the same modules whose C
// build.sh compiles into parsers.wasm (imported below, at the versions
// go.mod pins: these imports are also what keeps them in go.mod), and
// glue.c calls them. wasm/include holds the runtime's api.h, checked
// against the pinned module's by `make check-parsers`.

/*
#cgo CPPFLAGS: -I${SRCDIR}/wasm/include
#cgo CFLAGS: -std=c11 -O2
#include "wasm/glue.c"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"unsafe"

	_ "github.com/tree-sitter-grammars/tree-sitter-lua/bindings/go"
	_ "github.com/tree-sitter/go-tree-sitter"
	_ "github.com/tree-sitter/tree-sitter-c/bindings/go"
	_ "github.com/tree-sitter/tree-sitter-cpp/bindings/go"
	_ "github.com/tree-sitter/tree-sitter-go/bindings/go"
	_ "github.com/tree-sitter/tree-sitter-java/bindings/go"
	_ "github.com/tree-sitter/tree-sitter-javascript/bindings/go"
	_ "github.com/tree-sitter/tree-sitter-python/bindings/go"
	_ "github.com/tree-sitter/tree-sitter-rust/bindings/go"
	_ "github.com/tree-sitter/tree-sitter-typescript/bindings/go"
)

// parsersWasm is not embedded where the parsers are native; the tests
// that compare the two backends read it from disk.
var parsersWasm []byte

// nativeParsers says which backend this build parses with.
const nativeParsers = true

// native is the process's native parsers: every language's node kind and
// field names, and idle parsers for reuse.
type native struct {
	kinds  [][]string
	fields []map[string]uint16

	idle idle[*nativeParser]
}

var (
	nativeOnce sync.Once
	theNative  *native
	nativeErr  error
)

func defaultPool(context.Context, *slog.Logger) (parserPool, error) {
	nativeOnce.Do(func() { theNative, nativeErr = newNative() })
	if nativeErr != nil {
		return nil, nativeErr
	}
	return theNative, nil
}

// Prepare does nothing where the parsers are native: there is nothing to
// compile at start.
func Prepare(*slog.Logger) {}

func newNative() (*native, error) {
	if C.glue_init() != 0 {
		return nil, errors.New("repository map: no memory for the parsers' tables")
	}
	n := int(C.export_langs())
	if n != len(allLangs) {
		return nil, fmt.Errorf("repository map: glue.c has %d languages, lang.go %d", n, len(allLangs))
	}
	e := &native{}
	for l := range n {
		cl := C.uint32_t(l)
		sc := uint32(C.export_symbol_count(cl))
		kinds := make([]string, sc)
		for id := range sc {
			if s := C.export_symbol_name(cl, C.uint32_t(id)); s != nil {
				kinds[id] = C.GoString(s)
			}
		}
		fc := uint32(C.export_field_count(cl))
		fields := map[string]uint16{}
		for id := uint32(1); id <= fc; id++ {
			if s := C.export_field_name(cl, C.uint32_t(id)); s != nil {
				if name := C.GoString(s); name != "" {
					fields[name] = uint16(id)
				}
			}
		}
		e.kinds = append(e.kinds, kinds)
		e.fields = append(e.fields, fields)
	}
	return e, nil
}

func (e *native) instance(context.Context) (treeParser, error) {
	if p, ok := e.idle.take(); ok {
		return p, nil
	}
	g := C.glue_new()
	if g == nil {
		return nil, errors.New("repository map: no memory for a parser")
	}
	return &nativeParser{e: e, g: g}, nil
}

// release keeps p for the next parse (a few per core), or frees it.
func (e *native) release(tp treeParser) {
	p, _ := tp.(*nativeParser)
	if p == nil {
		return
	}
	if !e.idle.keep(p) {
		C.glue_free(p.g)
	}
}

// nativeParser is one glue: one file at a time.
type nativeParser struct {
	e *native
	g *C.glue
}

func (p *nativeParser) tree(ctx context.Context, l *lang, src []byte) (*tree, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// A done context sets glue's cancel flag, which tree-sitter's progress
	// callback reads every 100 operations. The flag is cleared before each
	// parse, after the last parse's setter has finished.
	flag := (*int32)(unsafe.Pointer(&p.g.cancel))
	atomic.StoreInt32(flag, 0)
	set := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		atomic.StoreInt32(flag, 1)
		close(set)
	})
	var ptr *C.char
	if len(src) > 0 {
		ptr = (*C.char)(unsafe.Pointer(&src[0]))
	}
	n := int32(C.glue_parse(p.g, C.uint32_t(l.id), ptr, C.uint32_t(len(src))))
	if !stop() {
		<-set
	}
	if err := parseFailed(ctx, l, n); err != nil {
		return nil, err
	}
	if n == 0 {
		return &tree{kinds: p.e.kinds[l.id], fields: p.e.fields[l.id]}, nil
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(p.g.out)), int(n)*nodeSize)
	return &tree{buf: buf, n: n, kinds: p.e.kinds[l.id], fields: p.e.fields[l.id]}, nil
}
