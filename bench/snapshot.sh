#!/usr/bin/env bash
# bench/snapshot.sh [DIR] [snapbench flags]
#
# Compares agentd's snapshots with the git command line doing the same job
# the way other agents do (git --git-dir=S --work-tree=W add -A && git
# commit; restore with git clean -fd && git reset --hard), interleaved in one
# run, and prints the ratios agentd/git for: the initial snapshot, no change,
# 10 changed files, a restore of 10 modified + 5 created + 5 deleted files,
# the same snapshots with the watcher running (as in the daemon), the same
# again with agentd run per process (agentd snapshot create / restore
# --overwrite as separate, cold processes, as agentd run's first snapshot
# and the terminal pay), and the store size after the initial snapshot.
#
# The undo row: the agent changes 10 files of the tree (recorded as a run's
# ledger edits with Store.RecordEdits before the writes, as the engine
# does), the user then edits 3 of them on other lines, and agentd's
# Store.Revert takes the run back (the user's lines stay). git's side is
# the same change as one commit; git revert refuses to run over
# uncommitted edits to the files it touches, so the user's edits are the
# next commit and `git revert --no-commit AGENT_COMMIT` reverts the
# agent's commit under them (the same three-way merge per file). Both
# must leave the same bytes.
# Each row is the median of -reps runs (default 3) and shows the ratio of
# wall times and, beside it, of CPU times (user + system: this process's
# own for agentd in process, the commands' for agentd per process and for
# git), since on a shared machine the wall time depends on what else runs.
#
# A tree that is a git repository tracking files its own .gitignore
# matches works too: agentd keeps tracked files (as git ls-files does), so
# the git side adds those with -f and both see the same file set.
#
# Each timed operation, of either tool, starts after sync(2): without that
# barrier the first fsync of an operation waits for the writeback the other
# tool's previous operation left in flight (git's 8 MB index for the Linux
# tree). Pass -barrier=false to measure without it.
#
# DIR defaults to the tree bench/tree.sh prints (the Linux 6.1 sources). The
# benchmark works on a copy in a temporary directory, so DIR is left exactly
# as it was found.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ge 1 ] && [ "${1#-}" = "$1" ]; then
  src=$(cd "$1" && pwd)
  shift
else
  linux="$top/.cache/trees/linux"
  # Another process may be unpacking it: wait for it to finish.
  for _ in $(seq 1 180); do
    if [ -f "$linux/.complete" ] || [ ! -d "$linux" ]; then break; fi
    echo "waiting for $linux to finish unpacking..." >&2
    sleep 5
  done
  src=$("$top/bench/tree.sh")
  debian_tree=1
fi
command -v git >/dev/null || { echo "bench/snapshot.sh: git is needed (apt-get install git)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/agentd-snapbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "copying $src to $work/tree ..." >&2
cp -a "$src" "$work/tree"
rm -f "$work/tree/.complete"
if [ -n "${debian_tree:-}" ] || { grep -qx '/\*' "$work/tree/.gitignore" 2>/dev/null && grep -qx '!/debian/' "$work/tree/.gitignore"; }; then
  # Debian's linux-source appends "/*" and "!/debian/" to the top-level
  # .gitignore, which ignores the whole tree (for git and agentd alike):
  # drop those two lines in the copy so the sources are snapshotted.
  sed -i -e '/^\/\*$/d' -e '/^!\/debian\/$/d' "$work/tree/.gitignore"
fi
(cd "$top" && go build -o "$work/snapbench" ./gitops/internal/snapbench && go build -o "$work/agentd" ./cmd/agentd)
git --version
"$work/snapbench" -tree "$work/tree" -work "$work" -agentd "$work/agentd" "$@"
