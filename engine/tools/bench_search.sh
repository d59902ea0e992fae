#!/usr/bin/env bash
# Compares agentd's search_code with ripgrep on the same tree and patterns.
# Runs are interleaved (ours, rg, ours, rg, ...) so both see the same page
# cache and machine load; prints the median of each and their ratio.
#
#   engine/tools/bench_search.sh [TREE]      (default: bench/tree.sh, Linux 6.1)
#   RUNS=7 engine/tools/bench_search.sh
#
# The cached Linux tree lives under .cache/, which agentd's own repository
# ignores, and Debian's linux-source adds "/*" to the tree's root .gitignore:
# either makes git -- and so agentd and rg -- ignore every file. The script
# therefore searches a hard-linked copy outside any repository whose root
# .gitignore is the upstream one (the Debian lines cut off). Both tools honour
# the same ignore files: rg runs with --hidden --no-require-git.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
runs=${RUNS:-5}

if ! command -v rg >/dev/null; then
  apt-get install -y -qq ripgrep >&2 || { apt-get update -qq >&2 && apt-get install -y -qq ripgrep >&2; }
fi

src=$("$top/bench/tree.sh" "$@")
dest=${BENCH_DIR:-${TMPDIR:-/tmp}/agentd-bench/$(basename "$src")}
if [ ! -f "$dest/.agentd-bench-complete" ]; then
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  cp -al "$src" "$dest" 2>/dev/null || cp -a "$src" "$dest"
  if grep -q '^# Debian packaging' "$dest/.gitignore" 2>/dev/null; then
    sed '/^# Debian packaging/,$d' "$dest/.gitignore" | sed '$d' >"$dest/.gitignore.new"
    rm -f "$dest/.gitignore" # a hard link: never edit it in place
    mv "$dest/.gitignore.new" "$dest/.gitignore"
  fi
  touch "$dest/.agentd-bench-complete"
fi
if git -C "$dest" rev-parse --show-toplevel >/dev/null 2>&1; then
  echo "bench_search: $dest is inside a git repository; set BENCH_DIR elsewhere" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin="$tmp/searchbench"
(cd "$top" && go build -o "$bin" ./engine/tools/internal/searchbench)

nfiles=$(cd "$dest" && rg --files --hidden --no-require-git | wc -l)
echo "tree: $dest ($nfiles files searched by rg), $runs interleaved runs each, $(nproc) CPUs"
echo "agentd: search_code with maxResults 200 (all files scanned; files list complete)"
echo "rg:     rg --hidden --no-require-git -n --column PATTERN > file"
echo

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

patterns=(
  'EXPORT_SYMBOL_GPL'
  'struct file_operations'
  '(?i)spin_lock_irqsave'
  'mutex_lock|spin_lock'
  'ioctl\w*\('
  '^static int \w+_probe\('
  '[A-Z]{4}_[0-9]{4}'
  'zzq_not_there_at_all'
  '\S{60}'
)
printf '%-28s %10s %10s %8s  %s\n' pattern agentd_ms rg_ms ratio "files(agentd/rg)"
for p in "${patterns[@]}"; do
  : >"$tmp/ours"; : >"$tmp/rg"
  for ((i = 0; i < runs; i++)); do
    t0=$(now); out=$("$bin" -root "$dest" -pattern "$p"); t1=$(now)
    echo $(((t1 - t0) / 1000000)) >>"$tmp/ours"
    t0=$(now); (cd "$dest" && rg --hidden --no-require-git -n --column --no-heading --color never -e "$p" >"$tmp/rg.out" || true); t1=$(now)
    echo $(((t1 - t0) / 1000000)) >>"$tmp/rg"
  done
  ours=$(median <"$tmp/ours"); rgms=$(median <"$tmp/rg")
  ofiles=$(sed -n 's/.*files=\([0-9]*\).*/\1/p' <<<"$out")
  rfiles=$(cut -d: -f1 "$tmp/rg.out" | sort -u | wc -l)
  printf '%-28s %10d %10d %7.2fx  %s/%s\n' "$p" "$ours" "$rgms" "$(awk -v a="$ours" -v b="$rgms" 'BEGIN{print (b > 0 ? a / b : 0)}')" "$ofiles" "$rfiles"
done
