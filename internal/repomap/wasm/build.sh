#!/usr/bin/env bash
# Builds parsers.wasm: the tree-sitter runtime and the grammars of
# internal/repomap, at the versions go.mod pins (their C sources come from the
# Go module cache), with glue.c, as one wasm32-wasi module for wazero.
#   internal/repomap/wasm/build.sh OUT.wasm
#   internal/repomap/wasm/build.sh --modules   (the Go modules whose C it compiles;
#                                               mk/notices.sh names their licences)
# Needs clang, lld (wasm-ld), wasi-libc and libclang-rt-14-dev-wasm32 (Debian).
# The output is reproducible: the same sources and compiler give the same
# bytes (no debug info, no paths), which `make check-parsers` verifies
# against the committed internal/repomap/parsers.wasm.
set -euo pipefail
out=${1:?usage: build.sh OUT.wasm | --modules}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
CLANG=${CLANG:-clang}
mods=(github.com/tree-sitter/go-tree-sitter github.com/tree-sitter/tree-sitter-go
  github.com/tree-sitter/tree-sitter-javascript github.com/tree-sitter/tree-sitter-typescript
  github.com/tree-sitter/tree-sitter-python github.com/tree-sitter/tree-sitter-rust
  github.com/tree-sitter-grammars/tree-sitter-lua github.com/tree-sitter/tree-sitter-java
  github.com/tree-sitter/tree-sitter-c github.com/tree-sitter/tree-sitter-cpp)
if [ "$out" = --modules ]; then printf '%s\n' "${mods[@]}"; exit 0; fi
go mod download "${mods[@]}"
dir() { go list -m -f '{{.Dir}}' "$1"; }
rt=$(dir github.com/tree-sitter/go-tree-sitter)
srcs=("$rt/src/lib.c" "$here/glue.c")
for m in "${mods[@]:1}"; do
  d=$(dir "$m")
  if [ "$m" = github.com/tree-sitter/tree-sitter-typescript ]; then
    for g in typescript tsx; do srcs+=("$d/$g/src/parser.c" "$d/$g/src/scanner.c"); done
  else
    srcs+=("$d/src/parser.c")
    [ -f "$d/src/scanner.c" ] && srcs+=("$d/src/scanner.c")
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(--target=wasm32-wasi --sysroot=/usr -O3 -mbulk-memory -msign-ext -DNDEBUG -std=c11 -D_POSIX_C_SOURCE=200112L -D_DEFAULT_SOURCE -DHAVE_ENDIAN_H
  -fno-ident -ffile-prefix-map="$HOME"=. -Wno-unused-but-set-variable -Wno-unused-parameter
  -I"$rt/include" -I"$rt/src")
# OBJDIR (optional) keeps the objects between builds; a source newer than
# its object is compiled again.
objdir=${OBJDIR:-$tmp}
mkdir -p "$objdir"
objs=()
pids=()
i=0
for s in "${srcs[@]}"; do
  o="$objdir/$i.o"; i=$((i + 1))
  objs+=("$o")
  if [ -n "${OBJDIR:-}" ] && [ "$o" -nt "$s" ] && [ "$o" -nt "$0" ]; then continue; fi
  "$CLANG" "${flags[@]}" -I"$(dirname "$s")" -c "$s" -o "$o.tmp" && mv "$o.tmp" "$o" &
  pids+=($!)
  # JOBS at a time (default 2: the machine may be shared)
  if (( ${#pids[@]} >= ${JOBS:-2} )); then
    for p in "${pids[@]}"; do wait "$p" || { echo "build.sh: compiling failed" >&2; exit 1; }; done
    pids=()
  fi
done
for p in "${pids[@]}"; do wait "$p" || { echo "build.sh: compiling failed" >&2; exit 1; }; done
"$CLANG" --target=wasm32-wasi --sysroot=/usr -nostartfiles -Wl,--no-entry -Wl,--strip-all \
  -Wl,--allow-undefined-file=/dev/null -o "$tmp/out.wasm" "${objs[@]}"
mv "$tmp/out.wasm" "$out"
