#!/usr/bin/env bash
# Benchmarks the planner's repository map (internal/repomap) on a
# 40,000-file tree: the first 40,000 files (in path order) of the Linux 6.1
# sources from bench/tree.sh, or of DIR if given, copied into a temporary
# folder outside any git repository (a tree under the checkout's .cache/
# would be ignored by the checkout's own .gitignore); the copy is kept in
# $REPOMAP_DIR (default $TMPDIR/agentd-repomap-40k) for the next run.
# Page cache warm: the first run after the copy reads from memory.
#   bench/repomap.sh [DIR]      RUNS=3 by default
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=$("$top/bench/tree.sh" "$@")
runs=${RUNS:-3}
tmp=${REPOMAP_DIR:-${TMPDIR:-/tmp}/agentd-repomap-40k}
if [ ! -f "$tmp/.complete" ]; then
rm -rf "$tmp" && mkdir -p "$tmp"
(cd "$src" && find . -type f -not -path './.git/*' | LC_ALL=C sort | sed -n '1,40000s|^\./||p') > "$tmp/list"
mkdir -p "$tmp/tree"
(cd "$src" && tar -cf - -T "$tmp/list") | tar -C "$tmp/tree" -xf -
[ -f "$src/.gitignore" ] && cp "$src/.gitignore" "$tmp/tree/" || true
touch "$tmp/.complete"
fi
echo "tree: $(wc -l < "$tmp/list") files, $(du -sh "$tmp/tree" | cut -f1), from $src" >&2
cd "$top"
REPOMAP_TREE="$tmp/tree" go test -run '^$' -bench 'FirstMap|AfterOneChange' -benchtime "${runs}x" -count 1 ./internal/repomap/
