#!/usr/bin/env bash
# mk/gobuild.sh OS/ARCH OUT LDFLAGS [GO BUILD FLAGS...]: builds ./cmd/agentd
# for one target the way a release does (mk/release.sh; mk/wine.mk builds
# the agentd.exe its tests run the same way). The one place that says how
# each target is built:
#   - linux/amd64, linux/arm64, windows/amd64: with cgo and the target's C
#     compiler from Debian (x86_64-linux-gnu-gcc, aarch64-linux-gnu-gcc,
#     x86_64-w64-mingw32-gcc), so the repository map's tree-sitter parsers
#     are native (internal/repomap/native.go), statically linked: the Linux
#     binaries need no particular glibc (netgo and osusergo keep Go's
#     resolver and user lookup off libc), the Windows one no MinGW DLL;
#   - darwin/amd64, darwin/arm64, windows/arm64: without cgo (no C cross
#     compiler for them here), so the parsers are parsers.wasm run by wazero.
# Both are built from the same C (internal/repomap/wasm/glue.c and the
# pinned grammars); TestNativeMatchesWasm checks that they give the same
# trees.
#   mk/gobuild.sh --parsers OS/ARCH   prints "native CC" or "wasm" (mk/notices.sh)
set -euo pipefail
if [ "${1-}" = --parsers ]; then
  mode=parsers
  shift
fi
t=${1:?usage: mk/gobuild.sh OS/ARCH OUT LDFLAGS [GO BUILD FLAGS...]}
os=${t%/*} arch=${t#*/}
cc="" pkg=""
case "$t" in
  linux/amd64) cc=x86_64-linux-gnu-gcc pkg=gcc ;;
  linux/arm64) cc=aarch64-linux-gnu-gcc pkg=gcc-aarch64-linux-gnu ;;
  windows/amd64) cc=x86_64-w64-mingw32-gcc pkg=gcc-mingw-w64-x86-64 ;;
esac
if [ "${mode-}" = parsers ]; then
  if [ -n "$cc" ]; then echo "native $cc"; else echo wasm; fi
  exit 0
fi
out=${2:?usage: mk/gobuild.sh OS/ARCH OUT LDFLAGS [GO BUILD FLAGS...]}
ldflags=${3-}
shift 3
cd "$(dirname "$0")/.."
if [ -n "$cc" ]; then
  command -v "$cc" >/dev/null || {
    echo "gobuild: $t is built with cgo and needs the C compiler $cc (apt-get install $pkg, or make release-deps)" >&2
    exit 1
  }
  tags=()
  [ "$os" = linux ] && tags=(-tags netgo,osusergo)
  CGO_ENABLED=1 CC=$cc GOOS=$os GOARCH=$arch ${GO:-go} build "${tags[@]}" \
    -ldflags "$ldflags -linkmode external -extldflags -static" "$@" -o "$out" ./cmd/agentd
else
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch ${GO:-go} build -ldflags "$ldflags" "$@" -o "$out" ./cmd/agentd
fi
