//go:build parsersources

// Package wasm holds the C side of internal/repomap's parsers: glue.c
// (built into parsers.wasm by build.sh, and natively by ../native.go with
// cgo) and include/tree_sitter/api.h (the pinned runtime's header, for the
// cgo build). This file is never built (its tag is never set); it only
// makes go.mod pin the tree-sitter runtime and grammar modules whose C
// sources build.sh compiles, so `go mod tidy` keeps them and the versions
// live in one place.
package wasm

import (
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
