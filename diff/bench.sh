#!/usr/bin/env bash
# Compares diff.Compute (+ Unified rendering) with `git diff --no-index` on
# the same generated files (10k and 100k lines, 1% and 10% of lines edited),
# running the two alternately, case by case, in several rounds, and prints the
# ratio of their median times per case (agentd / git; below 1 is faster),
# both wall-clock and CPU time (user+system; steadier on a busy machine).
#
# Usage: diff/bench.sh [rounds]   (default 5)
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/diff.test" .
for ((r = 1; r <= rounds; r++)); do
	for c in 10k-1% 10k-10% 100k-1% 100k-10%; do
		for b in BenchmarkCompute BenchmarkGitDiffNoIndex; do
			"$tmp/diff.test" -test.run '^$' -test.bench "^$b/$c\$" -test.benchtime 1s >>"$tmp/out.txt"
		done
	done
done
awk '
/^Benchmark(Compute|GitDiffNoIndex)\// {
	split($1, p, "/"); kind = p[1]; sub(/-[0-9]+$/, "", p[2]); c = p[2]
	n = ++cnt[kind, c]; wall[kind, c, n] = $3; cases[c] = 1
	for (i = 4; i <= NF; i++) if ($i == "cpu-ns/op") cpu[kind, c, n] = $(i - 1)
}
function median(arr, kind, c,   n, i, j, a, x) {
	n = cnt[kind, c]
	for (i = 1; i <= n; i++) a[i] = arr[kind, c, i]
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "%-9s %13s %13s %6s   %13s %13s %6s   %5s\n", "case", "agentd wall", "git wall", "ratio", "agentd cpu", "git cpu", "ratio", "limit"
	split("10k-1% 10k-10% 100k-1% 100k-10%", order, " ")
	for (i = 1; i <= 4; i++) {
		c = order[i]
		if (!(c in cases)) continue
		aw = median(wall, "BenchmarkCompute", c); gw = median(wall, "BenchmarkGitDiffNoIndex", c)
		ac = median(cpu, "BenchmarkCompute", c); gc = median(cpu, "BenchmarkGitDiffNoIndex", c)
		limit = (c ~ /-1%$/) ? 1.0 : 2.0
		printf "%-9s %11.2fms %11.2fms %6.2f   %11.2fms %11.2fms %6.2f   %5.1f%s\n", c, aw / 1e6, gw / 1e6, aw / gw, ac / 1e6, gc / 1e6, ac / gc, limit, (aw / gw > limit ? "  OVER" : "")
	}
	print "(times are medians of ns/op per round; cpu = user+system time of the process doing the work)"
}' "$tmp/out.txt"
