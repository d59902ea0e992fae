#!/usr/bin/env bash
# mk/notices.sh OUT: writes the third-party licence notices of the agentd
# binary for GOOS/GOARCH (from the environment) to OUT: the Go standard
# library, every module the binary is built from (`go list -deps` for that
# target, so a module only one OS uses is named only in that OS's
# archive), and what parsers.wasm is compiled from (the tree-sitter
# runtime and grammars build.sh compiles, at go.mod's versions; wasi-libc
# and LLVM's compiler-rt, linked in, from their Debian copyright files).
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
  CGO_ENABLED=0 ${GO} list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/agentd \
    | LC_ALL=C sort -u | while read -r path version dir; do
      section "$path $version (Go module)" "$dir"
    done
  internal/repomap/wasm/build.sh --modules | while read -r m; do
    section "$m $(${GO} list -m -f '{{.Version}}' "$m") (C sources compiled into the repository map's parsers.wasm)" \
      "$(${GO} list -m -f '{{.Dir}}' "$m")"
  done
  for pkg in wasi-libc libclang-rt-14-dev-wasm32; do
    f=/usr/share/doc/$pkg/copyright
    [ -f "$f" ] || { echo "mk/notices.sh: $f is missing: apt-get install $pkg (make release-deps)" >&2; exit 1; }
    printf '%s\n== %s (linked into parsers.wasm; Debian copyright file)\n\n' "--------------------------------------------------------------------------------" "$pkg"
    cat "$f"
    printf '\n'
  done
} > "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$out"
trap - EXIT
