#!/usr/bin/env bash
# Benchmarks the planner's repository map (internal/repomap) on a
# 40,000-file tree: the first 40,000 files (in path order) of the Linux 6.1
# sources from bench/tree.sh, or of DIR if given, copied into a temporary
# folder outside any git repository (a tree under the checkout's .cache/
# would be ignored by the checkout's own .gitignore); the copy is kept in
# $REPOMAP_DIR (default $TMPDIR/agentd-repomap-40k) for the next run.
# Page cache warm: the first run after the copy reads from memory.
#
# Prints the two figures of issue 14 (limits: first map 10 s, after one
# change 200 ms), as CPU time (user+system of the process: the machine may
# be shared) and wall time per run, with the load before and after. After
# one change: a map kept in memory without a file watcher ("walk"), the
# daemon's map with one ("watch"), and a new process each time ("process":
# agentd plan, agentd run) that maps the cache file, loads the directory
# listings saved beside it, stats every source file and saves the change
# as a delta.
#   bench/repomap.sh [DIR]      RUNS=3 first maps, AFTER_RUNS=40 changes
# (40 runs include the full walk the watched map makes every 20 maps.)
# The first maps load the parsers from wazero's compilation cache, as every
# process after agentd's first does; CompileParsers is that first process's
# cold compile of parsers.wasm.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=$("$top/bench/tree.sh" "$@")
runs=${RUNS:-3}
after=${AFTER_RUNS:-40}
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
go test -c -o "$tmp/repomap.test" ./internal/repomap/
echo "load before: $(uptime)"
out=$(cd internal/repomap && REPOMAP_TREE="$tmp/tree" "$tmp/repomap.test" -test.run '^$' \
  -test.bench 'FirstMap|CompileParsers' -test.benchtime "${runs}x" -test.count 1
  REPOMAP_TREE="$tmp/tree" "$tmp/repomap.test" -test.run '^$' \
  -test.bench 'AfterOneChange' -test.benchtime "${after}x" -test.count 1)
echo "$out"
echo "load after:  $(uptime)"
echo
printf '%-28s %5s %12s %12s %12s %8s\n' benchmark runs "cpu mean" "cpu max" "wall mean" limit
echo "$out" | awk '/^Benchmark/ {
  name=$1; sub(/-[0-9]+$/, "", name); n=$2; wall=$3/1e9; cpu=0; mx=0
  for (i=4; i<=NF; i++) { if ($(i+1)=="cpu-s/op") cpu=$i; if ($(i+1)=="cpu-max-s") mx=$i }
  limit = (name ~ /FirstMap/) ? "10 s" : (name ~ /Compile/) ? "-" : "0.2 s"
  printf "%-28s %5d %10.3f s %10.3f s %10.3f s %8s\n", name, n, cpu, mx, wall, limit }'
