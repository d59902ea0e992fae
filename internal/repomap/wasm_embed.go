//go:build !(cgo && (amd64 || arm64))

package repomap

import (
	"context"
	_ "embed"
	"log/slog"
)

// Without cgo (darwin and windows/arm64 releases, CGO_ENABLED=0) the
// parsers are parsers.wasm, compiled from wasm/glue.c and the pinned
// grammars by wasm/build.sh (`make parsers`) and run by wazero.
//
//go:embed parsers.wasm
var parsersWasm []byte

// nativeParsers says which backend this build parses with.
const nativeParsers = false

func defaultPool(ctx context.Context, log *slog.Logger) (parserPool, error) {
	e, err := getEngine(ctx, log)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Prepare compiles the parsers in the background, so that the first map
// of a long-lived process (the daemon) does not wait for them. Only the
// first call (of Prepare or a parse) compiles.
func Prepare(log *slog.Logger) { prepareWasm(log) }
