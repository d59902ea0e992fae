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
#
# The map is measured as the linux/amd64 and linux/arm64 releases build it
# ("release": cgo, native tree-sitter parsers, the tags mk/gobuild.sh
# gives), as the darwin and windows/arm64 releases build it ("wasm":
# CGO_ENABLED=0, parsers.wasm run by wazero), and, in the same run, as the
# last build before WebAssembly ("cgo": tree-sitter's cgo bindings,
# CGO_BASE, default bd89d72, the parent of the commit that moved to
# WebAssembly, unpacked with git archive into .cache/ and built with cgo),
# each benchmark alternating between the builds so all see the same load;
# then the ratios, release over cgo and wasm over cgo. For wasm, the first
# maps ("walk", "watch") load the compiled parsers from wazero's
# compilation cache, as every process after a machine's first does;
# "walk-cold" starts from an empty cache, as that first process does
# (CompileParsers is its compile alone); "daemon" is "watch" with the
# parsers already loaded, as agentd serve's Prepare at start leaves them
# (compared with the cgo build's "watch"). The native build has nothing to
# compile: its walk-cold and daemon are its walk and watch again.
# CGO_BASE=none skips the cgo build; BUILDS="release cgo" picks builds.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3}
after=${AFTER_RUNS:-40}
tmp=${REPOMAP_DIR:-${TMPDIR:-/tmp}/agentd-repomap-40k}
if [ $# -eq 0 ] && [ -f "$tmp/.complete" ]; then
  src="the copy kept in $tmp"
else
  src=$("$top/bench/tree.sh" "$@")
fi
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
read -r -a builds <<< "${BUILDS:-release wasm cgo}"
has() { [[ " ${builds[*]} " == *" $1 "* ]]; }
has release && CGO_ENABLED=1 go test -c -trimpath -tags netgo,osusergo -o "$tmp/repomap-release.test" ./internal/repomap/
has wasm && CGO_ENABLED=0 go test -c -trimpath -o "$tmp/repomap-wasm.test" ./internal/repomap/
base=${CGO_BASE:-bd89d72}
[ "$base" = none ] && builds=("${builds[@]/cgo}")
if has cgo; then
  sha=$(git rev-parse --verify "$base^{commit}")
  bdir=$top/.cache/repomap-cgo/$sha
  if [ ! -f "$bdir/.complete" ]; then
    rm -rf "$bdir" && mkdir -p "$bdir"
    git archive "$sha" | tar -x -C "$bdir"
    touch "$bdir/.complete"
  fi
  (cd "$bdir" && CGO_ENABLED=1 go test -c -o "$tmp/repomap-cgo.test" ./internal/repomap/)
fi
read -r -a builds <<< "${builds[*]}"
# run BUILD PATTERN BENCHTIME: one benchmark run of one build.
run() {
  local bin=$tmp/repomap-$1.test
  (cd internal/repomap && REPOMAP_TREE="$tmp/tree" "$bin" -test.run '^$' \
    -test.bench "$2" -test.benchtime "$3" -test.count 1) | sed -n "s/^Benchmark/$1 Benchmark/p"
}
echo "load before: $(uptime)"
out=$(
  for ((i = 0; i < runs; i++)); do
    for b in "${builds[@]}"; do run "$b" 'FirstMap' 1x; done
  done
  has wasm && run wasm 'CompileParsers' "${runs}x"
  for b in "${builds[@]}"; do run "$b" 'AfterOneChange' "${after}x"; done
)
echo "$out"
echo "load after:  $(uptime)"
echo
printf '%-8s %-32s %5s %12s %12s %12s %8s\n' build benchmark runs "cpu mean" "cpu max" "wall mean" limit
echo "$out" | awk '
  { b=$1; name=$2; sub(/-[0-9]+$/, "", name); k=b" "name
    if (!(k in n)) order[++keys]=k
    n[k]+=$3; wall[k]+=$3*$4/1e9
    for (i=5; i<=NF; i++) { if ($(i+1)=="cpu-s/op") cpu[k]+=$3*$i; if ($(i+1)=="cpu-max-s" && $i>mx[k]) mx[k]=$i }
  }
  END {
    for (j=1; j<=keys; j++) { k=order[j]; split(k, p, " ")
      limit = (p[2] ~ /FirstMap/) ? "10 s" : (p[2] ~ /Compile/) ? "-" : "0.2 s"
      printf "%-8s %-32s %5d %10.3f s %10.3f s %10.3f s %8s\n", p[1], p[2], n[k], cpu[k]/n[k], mx[k], wall[k]/n[k], limit
    }
    if (("cgo BenchmarkFirstMap/walk") in n) {
      split("release wasm", bs, " ")
      for (bi=1; bi<=2; bi++) {
        if (!(("" bs[bi] " BenchmarkFirstMap/walk") in n)) continue
        print ""
        printf "%-7s / cgo (1.5 at most):                cpu    wall\n", bs[bi]
        split("FirstMap/walk FirstMap/watch FirstMap/walk-cold FirstMap/daemon AfterOneChange/walk AfterOneChange/watch AfterOneChange/process", names, " ")
        for (j=1; j<=7; j++) {
          nm=names[j]; c=nm; sub(/-cold$/, "", c); sub(/daemon$/, "watch", c)
          rk=bs[bi] " Benchmark" nm; ck="cgo Benchmark" c
          if (!(rk in n) || !(ck in n)) continue
          printf "  %-40s %5.2f  %5.2f\n", nm (nm ~ /cold/ ? " (vs cgo walk)" : nm ~ /daemon/ ? " (vs cgo watch)" : ""), (cpu[rk]/n[rk])/(cpu[ck]/n[ck]), (wall[rk]/n[rk])/(wall[ck]/n[ck])
        }
      }
    }
  }'
