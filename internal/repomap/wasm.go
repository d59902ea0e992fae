package repomap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// engine is parsers.wasm (parsersWasm: the tree-sitter runtime and every
// grammar of lang.go compiled to one wasm32-wasi module by wasm/build.sh)
// compiled by wazero, shared by the whole process: wazero compiles it once
// (or loads it from the compilation cache on disk) and every parser is an
// instance of it.
type engine struct {
	rt     wazero.Runtime
	mod    wazero.CompiledModule
	kinds  [][]string          // per language: node kind names by symbol id
	fields []map[string]uint16 // per language: field ids by name

	idle idle[*parser] // instances between parses, reused across Maps
}

var (
	engineOnce sync.Once
	theEngine  *engine
	engineErr  error
	// engineCacheDir, when set (tests, benchmarks), is used instead of
	// compileCacheDir's answer.
	engineCacheDir string
	preparing      sync.WaitGroup // Prepare's compile
)

// getEngine returns the process's compiled parsers.wasm, compiling them (or
// loading them from the compilation cache) on first use; log says, at
// debug level, where they came from.
func getEngine(ctx context.Context, log *slog.Logger) (*engine, error) {
	startEngine(ctx, log)
	return theEngine, engineErr
}

func startEngine(ctx context.Context, log *slog.Logger) {
	engineOnce.Do(func() {
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		theEngine, engineErr = newEngine(ctx, log)
	})
}

// prepareWasm compiles parsers.wasm in the background (Prepare, in
// builds without native parsers). Only the first call (of prepareWasm or
// a parse) compiles.
func prepareWasm(log *slog.Logger) {
	preparing.Go(func() { startEngine(context.Background(), log) })
}

// compileCacheDir is where wazero keeps the compiled parsers between
// processes: the user's cache dir (os.UserCacheDir: $XDG_CACHE_HOME or
// ~/.cache, ~/Library/Caches, %LocalAppData%), never the workspace.
// wazero files them under a folder per wazero version, OS and
// architecture, by the module's hash, and writes each through a
// temporary file renamed into place, so processes of different builds
// and processes running at once share the folder safely.
func compileCacheDir() (string, error) {
	if engineCacheDir != "" {
		return engineCacheDir, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "agentd", "wazero"), nil
}

func newEngine(ctx context.Context, log *slog.Logger) (*engine, error) {
	// The engine outlives the context of the call that happened to start
	// it; compiling is not cancelled halfway.
	ctx = context.WithoutCancel(ctx)
	dir, err := compileCacheDir()
	if err == nil {
		var cache wazero.CompilationCache
		if err = os.MkdirAll(dir, 0o700); err == nil {
			cache, err = wazero.NewCompilationCacheWithDir(dir)
		}
		if err == nil {
			e, err2 := compileEngine(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
			if err2 == nil {
				log.Debug("repository map: parsers ready", "compilationCache", dir)
				return e, nil
			}
			err = err2
			cache.Close(ctx)
		}
	}
	// No usable cache (no cache dir, not writable, full): the map works
	// the same, at the cost of compiling in every process.
	log.Debug("repository map: parsers compiled without the compilation cache", "dir", dir, "err", err)
	return compileEngine(ctx, wazero.NewRuntimeConfig())
}

func compileEngine(ctx context.Context, cfg wazero.RuntimeConfig) (*engine, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("repository map: wasi: %w", err)
	}
	// cancelled is asked every 100 parse operations: a Go function without
	// reflection, as wazero's fast path for host calls.
	_, err := rt.NewHostModuleBuilder("agentd").
		NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
		if ctx.Err() != nil {
			stack[0] = 1
		} else {
			stack[0] = 0
		}
	}), nil, []api.ValueType{api.ValueTypeI32}).Export("cancelled").Instantiate(ctx)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("repository map: host module: %w", err)
	}
	if len(parsersWasm) == 0 {
		rt.Close(ctx)
		return nil, errors.New("repository map: this build has no parsers.wasm")
	}
	mod, err := rt.CompileModule(ctx, parsersWasm)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("repository map: compiling the parsers: %w", err)
	}
	e := &engine{rt: rt, mod: mod}
	p, err := e.wasmInstance(ctx)
	if err != nil {
		rt.Close(ctx)
		return nil, err
	}
	defer e.release(p)
	if err := e.loadTables(ctx, p); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	return e, nil
}

// loadTables reads every language's node kind and field names.
func (e *engine) loadTables(ctx context.Context, p *parser) error {
	call := func(name string, args ...uint64) (uint64, error) {
		r, err := p.m.ExportedFunction(name).Call(ctx, args...)
		if err != nil {
			return 0, err
		}
		return r[0], nil
	}
	n, err := call("langs")
	if err != nil {
		return err
	}
	if int(n) != len(allLangs) {
		return fmt.Errorf("repository map: parsers.wasm has %d languages, lang.go %d: rebuild it (make parsers)", n, len(allLangs))
	}
	for l := range uint64(n) {
		sc, err := call("symbol_count", l)
		if err != nil {
			return err
		}
		kinds := make([]string, sc)
		for id := range sc {
			ptr, err := call("symbol_name", l, id)
			if err != nil {
				return err
			}
			kinds[id] = p.cstring(uint32(ptr))
		}
		fc, err := call("field_count", l)
		if err != nil {
			return err
		}
		fields := map[string]uint16{}
		for id := uint64(1); id <= fc; id++ {
			ptr, err := call("field_name", l, id)
			if err != nil {
				return err
			}
			if s := p.cstring(uint32(ptr)); s != "" {
				fields[s] = uint16(id)
			}
		}
		e.kinds = append(e.kinds, kinds)
		e.fields = append(e.fields, fields)
	}
	return nil
}

// parser is one instance of the module: one file at a time.
type parser struct {
	e      *engine
	m      api.Module
	mem    api.Memory
	input  api.Function
	parse  api.Function
	output api.Function
	broken bool // a call failed: the instance is closed, not reused
}

func (e *engine) instance(ctx context.Context) (treeParser, error) {
	return e.wasmInstance(ctx)
}

func (e *engine) wasmInstance(ctx context.Context) (*parser, error) {
	if p, ok := e.idle.take(); ok {
		return p, nil
	}
	m, err := e.rt.InstantiateModule(context.WithoutCancel(ctx), e.mod, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return nil, fmt.Errorf("repository map: starting a parser: %w", err)
	}
	return &parser{e: e, m: m, mem: m.Memory(), input: m.ExportedFunction("input"),
		parse: m.ExportedFunction("parse"), output: m.ExportedFunction("output")}, nil
}

// release keeps p for the next parse (a few per core), or closes it.
func (e *engine) release(tp treeParser) {
	p, _ := tp.(*parser)
	if p == nil {
		return
	}
	if p.broken || !e.idle.keep(p) {
		p.m.Close(context.Background())
	}
}

func (p *parser) cstring(ptr uint32) string {
	if ptr == 0 {
		return ""
	}
	var b []byte
	for i := ptr; ; i++ {
		c, ok := p.mem.ReadByte(i)
		if !ok || c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
}

// tree parses src as l. The tree is valid until the next call on p.
func (p *parser) tree(ctx context.Context, l *lang, src []byte) (t *tree, err error) {
	defer func() {
		if err != nil && !errors.Is(err, errCancelled) && ctx.Err() == nil {
			p.broken = true
		}
	}()
	r, err := p.input.Call(ctx, uint64(len(src)))
	if err != nil {
		return nil, err
	}
	if !p.mem.Write(uint32(r[0]), src) {
		return nil, errors.New("repository map: parser out of memory")
	}
	r, err = p.parse.Call(ctx, uint64(l.id))
	if err != nil {
		return nil, err
	}
	n := int32(r[0])
	if err := parseFailed(ctx, l, n); err != nil {
		return nil, err
	}
	o, err := p.output.Call(ctx)
	if err != nil {
		return nil, err
	}
	buf, ok := p.mem.Read(uint32(o[0]), uint32(n)*nodeSize)
	if !ok {
		return nil, errors.New("repository map: parser output out of range")
	}
	return &tree{buf: buf, n: n, kinds: p.e.kinds[l.id], fields: p.e.fields[l.id]}, nil
}
