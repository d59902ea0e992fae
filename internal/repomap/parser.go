package repomap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// The parsers come from one of two backends, both built from the same C
// (wasm/glue.c, the tree-sitter runtime and the grammars at the versions
// go.mod pins), so every target has the same repository map:
//   - native (native.go): glue.c compiled by cgo, where the build has a C
//     compiler (linux and windows releases, go build with cgo on amd64 and
//     arm64);
//   - wasm (wasm.go): parsers.wasm run by wazero, pure Go, everywhere
//     else (darwin, windows/arm64, CGO_ENABLED=0).
// TestNativeMatchesWasm parses the same files with both and compares the
// trees byte for byte.

// treeParser parses one file at a time.
type treeParser interface {
	// tree parses src as l. The tree is valid until the next call.
	tree(ctx context.Context, l *lang, src []byte) (*tree, error)
}

// parserPool hands out parsers and takes them back for reuse.
type parserPool interface {
	instance(ctx context.Context) (treeParser, error)
	release(treeParser)
}

var errCancelled = errors.New("parse cancelled")

// parseFailed is the error of glue's parse result n when it is negative
// (-1: cancelled; -2: a bad language or no memory), nil otherwise.
func parseFailed(ctx context.Context, l *lang, n int32) error {
	switch {
	case n == -1:
		if err := ctx.Err(); err != nil {
			return err
		}
		return errCancelled
	case n < 0:
		return fmt.Errorf("repository map: parsing as %s failed (%d)", l.name, n)
	}
	return nil
}

// idle keeps parsers between parses for reuse (a few per core), for both
// backends.
type idle[P any] struct {
	mu   sync.Mutex
	free []P
}

// take returns an idle parser, if there is one.
func (l *idle[P]) take() (P, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var p P
	n := len(l.free)
	if n == 0 {
		return p, false
	}
	p = l.free[n-1]
	l.free = l.free[:n-1]
	return p, true
}

// keep keeps p for the next parse, or reports false when enough are kept
// (the caller then closes p).
func (l *idle[P]) keep(p P) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.free) >= 16 {
		return false
	}
	l.free = append(l.free, p)
	return true
}

// tree is a parsed file as glue.c writes it: visible nodes in preorder,
// without the insides of function bodies (no symbol is found there), each
// 20 bytes (kind u16, field u16 with the named bit, start byte, end
// byte, start row, index after its subtree), little-endian, read in place
// from the parser's memory (the wasm instance's, or glue's C heap).
type tree struct {
	buf    []byte
	n      int32
	kinds  []string
	fields map[string]uint16
}

const nodeSize = 20

// tsNode is one node of a tree (nil: none).
type tsNode struct {
	t *tree
	i int32
}

func (t *tree) root() *tsNode {
	if t.n == 0 {
		return nil
	}
	return &tsNode{t: t, i: 0}
}

func (n *tsNode) u16(off int) uint16 {
	return binary.LittleEndian.Uint16(n.t.buf[int(n.i)*nodeSize+off:])
}

func (n *tsNode) u32(off int) uint32 {
	return binary.LittleEndian.Uint32(n.t.buf[int(n.i)*nodeSize+off:])
}

// Kind is the node's type, as tree-sitter names it.
func (n *tsNode) Kind() string {
	k := n.u16(0)
	switch {
	case int(k) < len(n.t.kinds):
		return n.t.kinds[k]
	case k == 0xFFFF:
		return "ERROR"
	default:
		return ""
	}
}

func (n *tsNode) named() bool   { return n.u16(2)&0x8000 != 0 }
func (n *tsNode) field() uint16 { return n.u16(2) & 0x7FFF }
func (n *tsNode) next() int32   { return int32(n.u32(16)) }

// ByteRange is the node's start and end byte.
func (n *tsNode) ByteRange() (uint, uint) { return uint(n.u32(4)), uint(n.u32(8)) }

// StartRow is the node's first line (0-based).
func (n *tsNode) StartRow() int { return int(n.u32(12)) }

// ChildByFieldName is the first child held in the field name, or nil.
func (n *tsNode) ChildByFieldName(name string) *tsNode {
	id, ok := n.t.fields[name]
	if !ok {
		return nil
	}
	end := n.next()
	for j := n.i + 1; j < end; {
		c := &tsNode{t: n.t, i: j}
		if c.field() == id {
			return c
		}
		j = c.next()
	}
	return nil
}

// NamedChildren lists the node's named children.
func (n *tsNode) NamedChildren() []tsNode {
	var out []tsNode
	end := n.next()
	for j := n.i + 1; j < end; {
		c := tsNode{t: n.t, i: j}
		if c.named() {
			out = append(out, c)
		}
		j = c.next()
	}
	return out
}

// parsers is one worker's parser: taken from the build's backend
// (defaultPool) on first use and given back by close.
type parsers struct {
	pool parserPool
	p    treeParser
	log  *slog.Logger // for the backend's start (nil: none)
}

func (w *parsers) get(ctx context.Context) (treeParser, error) {
	if w.p != nil {
		return w.p, nil
	}
	if w.pool == nil {
		pool, err := defaultPool(ctx, w.log)
		if err != nil {
			return nil, err
		}
		w.pool = pool
	}
	p, err := w.pool.instance(ctx)
	if err != nil {
		return nil, err
	}
	w.p = p
	return p, nil
}

func (w *parsers) close() {
	if w.p != nil {
		w.pool.release(w.p)
		w.p = nil
	}
}

// Parsers says how this build parses: "native" (glue.c by cgo) or "wasm"
// (parsers.wasm under wazero). agentd version prints it.
func Parsers() string {
	if nativeParsers {
		return "native"
	}
	return "wasm"
}
