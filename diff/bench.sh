#!/usr/bin/env bash
# Compares diff.Compute (+ Unified rendering) with `git diff --no-index` on
# the same generated files (10k and 100k lines, 1% and 10% of lines edited),
# running the two benchmarks alternately in several rounds, and prints the
# ratio of their median times per case (agentd / git; below 1 is faster).
#
# Usage: diff/bench.sh [rounds]   (default 5)
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/diff.test" .
for ((r = 1; r <= rounds; r++)); do
	for b in BenchmarkCompute BenchmarkGitDiffNoIndex; do
		"$tmp/diff.test" -test.run '^$' -test.bench "^$b\$" -test.benchtime 1s >>"$tmp/out.txt"
	done
done
awk '
/^Benchmark(Compute|GitDiffNoIndex)\// {
	split($1, p, "/"); kind = p[1]; sub(/-[0-9]+$/, "", p[2]); c = p[2]
	n = ++cnt[kind, c]; t[kind, c, n] = $3; cases[c] = 1
}
function median(kind, c,   n, i, j, a, x) {
	n = cnt[kind, c]
	for (i = 1; i <= n; i++) a[i] = t[kind, c, i]
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "%-10s %14s %14s %8s %8s\n", "case", "agentd ns/op", "git ns/op", "ratio", "limit"
	split("10k-1% 10k-10% 100k-1% 100k-10%", order, " ")
	for (i = 1; i <= 4; i++) {
		c = order[i]
		if (!(c in cases)) continue
		a = median("BenchmarkCompute", c); g = median("BenchmarkGitDiffNoIndex", c)
		limit = (c ~ /-1%$/) ? 1.0 : 2.0
		printf "%-10s %14d %14d %8.2f %8.1f%s\n", c, a, g, a / g, limit, (a / g > limit ? "  OVER" : "")
	}
}' "$tmp/out.txt"
