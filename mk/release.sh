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
#
# The .vsix version follows the release version: X.Y.Z is X.Y.Z. The VS Code
# Marketplace takes only X.Y.Z, so a pre-release X.Y.Z-SUFFIX (1.3.0-rc.1)
# keeps its full version in its .vsix (vsce packages it, VS Code installs it
# from the release page) and is not published to the Marketplace nor Open
# VSX (.github/workflows/release.yml publishes only X.Y.Z tags).
#
# mk/release.sh --check VERSION checks the inputs only (make release runs it
# before anything is built). Tests replace the builders with
# RELEASE_GOBUILD, RELEASE_NOTICES and RELEASE_VSIX, and dist/ with
# RELEASE_DIST.
set -euo pipefail
check_only=
if [ "${1:-}" = --check ]; then check_only=1; shift; fi
version=${1:-}
GO=${GO:-go}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -n "$version" ] || { echo "make release needs a version: make release VERSION=1.2.0 (a tag's name, v1.2.0, works too; 1.3.0-rc.1 is a pre-release)" >&2; exit 2; }
case "$version" in
  v*) version=${version#v} ;;
esac
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  { echo "VERSION $version: give MAJOR.MINOR.PATCH (1.2.0), or a pre-release MAJOR.MINOR.PATCH-SUFFIX (1.3.0-rc.1)" >&2; exit 2; }
vsix_version=$version
all_targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
# TARGETS (optional, space-separated) builds only those, e.g. to try one.
read -r -a targets <<< "${TARGETS:-$all_targets}"
for t in "${targets[@]}"; do
  [[ " $all_targets " == *" $t "* ]] || { echo "TARGETS: unknown target $t (one of: $all_targets)" >&2; exit 2; }
done
[ -z "$check_only" ] || exit 0
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
failed=()
dist=${RELEASE_DIST:-$top/dist}
stage=$top/.cache/release
gobuild=${RELEASE_GOBUILD:-mk/gobuild.sh}
notices=${RELEASE_NOTICES:-mk/notices.sh}
vsix_script=${RELEASE_VSIX:-editors/vscode/scripts/package-platform.sh}
declare -A vscode=([linux/amd64]=linux-x64 [linux/arm64]=linux-arm64 [darwin/amd64]=darwin-x64
  [darwin/arm64]=darwin-arm64 [windows/amd64]=win32-x64 [windows/arm64]=win32-arm64)
# Only the files of the targets built now are replaced: a TARGETS= trial
# leaves the other targets' archives and .vsix in dist/ alone.
mkdir -p "$dist" "$stage"
for t in "${targets[@]}"; do
  os=${t%/*} arch=${t#*/}
  rm -rf "$stage/agentd_"*"_${os}_${arch}"
  rm -f "$dist/agentd_"*"_${os}_${arch}.tar.gz" "$dist/agentd_"*"_${os}_${arch}.zip" "$dist/agentd-vscode_"*"_${vscode[$t]}.vsix"
done
rm -f "$dist/SHA256SUMS"
start=$(date +%s)
for t in "${targets[@]}"; do
  os=${t%/*} arch=${t#*/}
  name=agentd_${version}_${os}_${arch}
  exe=agentd; [ "$os" = windows ] && exe=agentd.exe
  d=$stage/$name
  mkdir -p "$d"
  t0=$(date +%s)
  if ! GO=$GO "$gobuild" "$t" "$d/$exe" "-s -w -X main.version=$version -X main.commit=$commit" -trimpath; then
    echo "release: go build for $t failed (above); going on with the other targets" >&2
    failed+=("$t")
    continue
  fi
  cp README.md LICENSE "$d/"
  GOOS=$os GOARCH=$arch GO=$GO "$notices" "$d/THIRD_PARTY_NOTICES"
  touch -d "@$epoch" "$d" "$d"/*
  if [ "$os" = windows ]; then
    (cd "$stage" && find "$name" -print | LC_ALL=C sort | TZ=UTC zip -q -X -D "$dist/$name.zip" -@)
  else
    tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - "$name" \
      | gzip -n -9 > "$dist/$name.tar.gz"
  fi
  echo "built $t in $(( $(date +%s) - t0 )) s: $(du -h "$d/$exe" | cut -f1) binary, $(file -b "$d/$exe" 2>/dev/null | cut -d, -f1-2)"
  if [ -x "$vsix_script" ] || [ -f "$vsix_script" ]; then
    AGENTD_VSIX_VERSION=$vsix_version bash "$vsix_script" "${vscode[$t]}" "$d/$exe" "$dist/agentd-vscode_${version}_${vscode[$t]}.vsix"
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
