// Package repomap is the planner's repository map: every source file of a
// workspace with its top-level symbols (functions, types, methods, classes,
// constants) and where they are defined, ranked for a request and cut to a
// token budget, the way Aider's repo map is.
//
// It hides tree-sitter: the tree-sitter runtime and the grammars of Go,
// JavaScript, TypeScript/TSX, Python, Rust, Lua, Java, C and C++, with
// wasm/glue.c, which parses a file and returns its tree as a flat array of
// nodes that symbols.go walks in Go. The same C is built two ways, so every
// target has the same parsers (TestNativeMatchesWasm compares the trees):
// natively by cgo where the build has a C compiler (native.go: the linux
// and windows/amd64 releases, go build with cgo), else as one WebAssembly
// module (parsers.wasm, built by wasm/build.sh and committed) that wazero
// runs in pure Go (wasm.go: darwin, windows/arm64, CGO_ENABLED=0). The wasm
// module is compiled once per process, only when a file needs parsing (or
// in the background from Prepare, for the daemon), and kept compiled in
// wazero's compilation cache in the user's cache dir
// (os.UserCacheDir()/agentd/wazero), so only a machine's first process
// pays the compile; without a writable cache dir every process compiles.
// A parse stops when its context is done. Symbols come from each file's syntax tree;
// references between files come from the identifiers a file uses (a
// lexical scan), which is enough to rank neighbours.
//
// Parsing is the cost, so the results are cached per file by content hash:
// in memory for the life of a Map, and in a cache file in agentd's state
// dir (Options.CacheFile) between processes. Update re-reads only files
// whose size, mtime or inode changed and re-parses only content it has not
// seen. The editor's unsaved buffers (Source.Overlay) win over the disk.
//
// The cache file is laid out for a new process (persist.go): mapped, not
// decoded; it holds an inverted index of identifiers that the ranking
// looks up instead of scanning every file's; small changes go to a delta
// file beside it; and the file set's directory listings are kept beside
// it too, so a new process reads again only the directories whose stat
// changed.
//
// Finding what changed: without a watcher Update walks the tree and stats
// every source file (the walk itself stats nothing). With Options.Watch
// (the daemon) the map keeps a fileset.Watcher and checks only the paths
// it reports; it walks again every fullWalkEvery Updates, on overflow, and
// when ignore rules change.
//
// Ranking (Rank, Render) puts first the files the user looks at (Query.Focus:
// the selection's file, open buffers), the files the request names, and
// the files defining symbols the request names (a name defined in many
// files counts for less) or whose symbols share words with it; then the
// files those reference (define identifiers they use) and the files that
// reference them; then a small prior for files with more symbols nearer the
// root.
package repomap
