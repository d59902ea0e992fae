#!/usr/bin/env bash
# mk/notices.sh OUT: writes the third-party licence notices of the agentd
# binary for GOOS/GOARCH (from the environment) to OUT: the Go standard
# library, every module the binary is built from (`go list -deps` for that
# target, as mk/gobuild.sh builds it, so a module only one OS uses is named
# only in that OS's archive), and the C linked in: where the parsers are
# native (mk/gobuild.sh --parsers), the tree-sitter modules are among the
# Go modules and the C library and compiler runtime linked statically (glibc
# and libgcc, or mingw-w64's runtime and libgcc) are named from their Debian
# copyright files; where they are parsers.wasm, what it is compiled from (the
# tree-sitter runtime and grammars build.sh compiles, at go.mod's versions;
# wasi-libc and LLVM's compiler-rt, from their Debian copyright files).
# Each licence text is copied whole from the module cache (LICENSE*,
# COPYING*, NOTICE*): offline, and exactly the versions go.mod pins. A
# module without a licence file stops the release, naming it.
set -euo pipefail
out=${1:?usage: mk/notices.sh OUT}
GO=${GO:-go}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# section TITLE DIR: every licence file of DIR, whole.
section() {
  local files
  files=$(find "$2" -maxdepth 1 -type f \( -iname 'LICEN[CS]E*' -o -iname 'COPYING*' -o -iname 'NOTICE*' \) | LC_ALL=C sort)
  if [ -z "$files" ]; then
    echo "mk/notices.sh: $1 has no licence file in $2: say under which terms it is used before releasing" >&2
    exit 1
  fi
  local f
  for f in $files; do
    printf '%s\n== %s (%s)\n\n' "--------------------------------------------------------------------------------" "$1" "$(basename "$f")"
    cat "$f"
    printf '\n'
  done
}
{
  echo "Third-party notices for agentd ($(${GO} env GOOS)/$(${GO} env GOARCH))"
  echo
  echo "agentd itself is under the licence in LICENSE. The binary also contains the"
  echo "software below, each under its own licence, reproduced whole."
  echo
  section "Go standard library and runtime ($(${GO} env GOVERSION))" "$(${GO} env GOROOT)"
  read -r parsers cc < <(mk/gobuild.sh --parsers "$(${GO} env GOOS)/$(${GO} env GOARCH)")
  if [ "$parsers" = native ]; then
    golist=(env CGO_ENABLED=1 "${GO}" list -tags netgo,osusergo)
  else
    golist=(env CGO_ENABLED=0 "${GO}" list)
  fi
  "${golist[@]}" -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/agentd \
    | LC_ALL=C sort -u | while read -r path version dir; do
      section "$path $version (Go module)" "$dir"
    done
  # debian PKG WHAT: PKG's Debian copyright file.
  debian() {
    local f=/usr/share/doc/$1/copyright
    [ -f "$f" ] || { echo "mk/notices.sh: $f is missing: apt-get install $1 (make release-deps)" >&2; exit 1; }
    printf '%s\n== %s (%s; Debian copyright file)\n\n' "--------------------------------------------------------------------------------" "$1" "$2"
    cat "$f"
    printf '\n'
  }
  if [ "$parsers" = native ]; then
    # The C library and compiler runtime the static link takes in, by
    # the Debian package that holds each archive.
    if [ "$(${GO} env GOOS)" = windows ]; then libs=(libmsvcrt.a libmingwex.a libgcc.a); else libs=(libc.a libgcc.a); fi
    for lib in "${libs[@]}"; do
      f=$(realpath "$("$cc" -print-file-name="$lib")")
      pkg=$(dpkg -S "$f" 2>/dev/null | cut -d: -f1 | head -1)
      [ -n "$pkg" ] || { echo "mk/notices.sh: no Debian package holds $f ($lib of $cc)" >&2; exit 1; }
      src=$(dpkg-query -W -f '${source:Package} ${Version}' "$pkg" 2>/dev/null || echo "$pkg")
      debian "$pkg" "$lib, linked statically into agentd by $cc; built from Debian's source package $src"
    done
  else
    internal/repomap/wasm/build.sh --modules | while read -r m; do
      section "$m $(${GO} list -m -f '{{.Version}}' "$m") (C sources compiled into the repository map's parsers.wasm)" \
        "$(${GO} list -m -f '{{.Dir}}' "$m")"
    done
    for pkg in wasi-libc libclang-rt-14-dev-wasm32; do debian "$pkg" "linked into parsers.wasm"; done
  fi
} > "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$out"
trap - EXIT
