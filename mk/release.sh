#!/usr/bin/env bash
# mk/release.sh VERSION: what `make release VERSION=...` runs once the
# parsers are checked. For each target it builds agentd with mk/gobuild.sh
# (native tree-sitter parsers by cgo where Debian has the target's C
# compiler: linux/amd64, linux/arm64, windows/amd64; parsers.wasm run by
# wazero elsewhere; the same C either way) and packs it with
# README.md, LICENSE and THIRD_PARTY_NOTICES (mk/notices.sh: the licences of
# everything compiled into that target's binary) into
# dist/agentd_VERSION_OS_ARCH.tar.gz (.zip for Windows); then one VS Code extension per platform, bundling that binary,
# with editors/vscode/scripts/package-platform.sh when it exists; then
# dist/SHA256SUMS over everything. Archives are reproducible: sorted
# entries, no owners, every mtime the commit's.
set -euo pipefail
version=${1:?usage: mk/release.sh VERSION}
GO=${GO:-go}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
case "$version" in
  v*) version=${version#v} ;;
esac
[[ "$version" =~ ^[0-9A-Za-z.+_-]+$ ]] || { echo "VERSION $version: use letters, digits and . + _ - only" >&2; exit 2; }
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
# TARGETS (optional, space-separated) builds only those, e.g. to try one.
read -r -a targets <<< "${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}"
failed=()
dist=$top/dist
stage=$top/.cache/release
rm -rf "$dist" "$stage"
mkdir -p "$dist" "$stage"
start=$(date +%s)
vsix_script=editors/vscode/scripts/package-platform.sh
declare -A vscode=([linux/amd64]=linux-x64 [linux/arm64]=linux-arm64 [darwin/amd64]=darwin-x64
  [darwin/arm64]=darwin-arm64 [windows/amd64]=win32-x64 [windows/arm64]=win32-arm64)
for t in "${targets[@]}"; do
  os=${t%/*} arch=${t#*/}
  name=agentd_${version}_${os}_${arch}
  exe=agentd; [ "$os" = windows ] && exe=agentd.exe
  d=$stage/$name
  mkdir -p "$d"
  t0=$(date +%s)
  if ! GO=$GO mk/gobuild.sh "$t" "$d/$exe" "-s -w -X main.version=$version -X main.commit=$commit" -trimpath; then
    echo "release: go build for $t failed (above); going on with the other targets" >&2
    failed+=("$t")
    continue
  fi
  cp README.md LICENSE "$d/"
  GOOS=$os GOARCH=$arch GO=$GO mk/notices.sh "$d/THIRD_PARTY_NOTICES"
  touch -d "@$epoch" "$d" "$d"/*
  if [ "$os" = windows ]; then
    (cd "$stage" && find "$name" -print | LC_ALL=C sort | TZ=UTC zip -q -X -D "$dist/$name.zip" -@)
  else
    tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - "$name" \
      | gzip -n -9 > "$dist/$name.tar.gz"
  fi
  echo "built $t in $(( $(date +%s) - t0 )) s: $(du -h "$d/$exe" | cut -f1) binary, $(file -b "$d/$exe" 2>/dev/null | cut -d, -f1-2)"
  if [ -x "$vsix_script" ] || [ -f "$vsix_script" ]; then
    bash "$vsix_script" "${vscode[$t]}" "$d/$exe" "$dist/agentd-vscode_${version}_${vscode[$t]}.vsix"
  fi
done
if [ ! -f "$vsix_script" ]; then
  echo "note: $vsix_script is not in this checkout: no .vsix written" >&2
fi
(cd "$dist" && sha256sum -- $(ls *.tar.gz *.zip *.vsix 2>/dev/null) > SHA256SUMS)
echo "dist/ in $(( $(date +%s) - start )) s:"
(cd "$dist" && ls -l)
if [ ${#failed[@]} -gt 0 ]; then
  echo "release: NOT built: ${failed[*]}; dist/ is incomplete" >&2
  exit 1
fi
