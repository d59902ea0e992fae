#!/usr/bin/env bash
# Unpacks the pinned CodeCompanion.nvim (the ACP client the CodeCompanion
# suite drives agentd acp with) into DIR/codecompanion.nvim and prints that
# path. The copy comes from the first of:
#   $AGENTD_VENDOR_DIR/codecompanion.nvim-f1afd02537c6.tar.gz
#   <repository>/../shared/vendor/codecompanion.nvim-f1afd02537c6.tar.gz
# (its sha256 must be the one ../shared/vendor/README.md gives), else the
# same commit fetched with git from github.com/olimorris/codecompanion.nvim.
# Either way the unpacked files must hash to the pinned tree (MANIFEST: the
# sha256 of `sha256sum` over every file but .git and the two notes for
# coding assistants, AGENTS.md and CLAUDE.md, which the vendored copy
# leaves out). Anything else fails, saying what to do; it never skips.
# Usage: codecompanion.sh DIR   (e.g. .cache/codecompanion)
set -euo pipefail
COMMIT=f1afd02537c68b3dd6e0d41d4adda5ef538e0473
TARBALL=codecompanion.nvim-f1afd02537c6.tar.gz
SHA256=3796c6b4955b23f59a5a47b4b237e8294003a9149a0e55274764412ad9f45638
MANIFEST=9c6c653f14afce9ee47edb4ba5181bc82c7f454740ba1dced949237c060fa253
HOME_URL=https://github.com/olimorris/codecompanion.nvim
D=${1:?usage: codecompanion.sh DIR}
mkdir -p "$D"
D=$(cd "$D" && pwd)
repo=$(cd "$(dirname "$0")/../../.." && pwd)
dest="$D/codecompanion.nvim"

manifest() {
  (cd "$1" && find . -type f ! -path './.git/*' ! -name AGENTS.md ! -name CLAUDE.md -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

if [ -f "$dest/.pinned" ] && [ "$(cat "$dest/.pinned")" = "$COMMIT" ]; then
  echo "$dest"; exit 0
fi
rm -rf "$dest" "$D/unpack"
mkdir -p "$D/unpack"

tarball=""
for dir in "${AGENTD_VENDOR_DIR:-}" "$repo/../shared/vendor"; do
  if [ -n "$dir" ] && [ -f "$dir/$TARBALL" ]; then tarball="$dir/$TARBALL"; break; fi
done
if [ -n "$tarball" ]; then
  got=$(sha256sum "$tarball" | cut -d' ' -f1)
  [ "$got" = "$SHA256" ] || { echo "codecompanion: $tarball has sha256 $got, not the pinned $SHA256 (../shared/vendor/README.md); replace it with the pinned copy or remove it to fetch commit $COMMIT from $HOME_URL" >&2; exit 1; }
  tar xzf "$tarball" -C "$D/unpack"
  src="$D/unpack/codecompanion.nvim"
else
  echo "codecompanion: no $TARBALL in \$AGENTD_VENDOR_DIR (${AGENTD_VENDOR_DIR:-unset}) nor $repo/../shared/vendor; fetching commit $COMMIT from $HOME_URL" >&2
  command -v git >/dev/null || { echo "codecompanion: git is needed to fetch $HOME_URL (make deps installs it)" >&2; exit 1; }
  src="$D/unpack/codecompanion.nvim"
  git init -q "$src"
  git -C "$src" fetch -q --depth 1 "$HOME_URL" "$COMMIT" ||
    { echo "codecompanion: could not fetch commit $COMMIT from $HOME_URL; put $TARBALL (sha256 $SHA256) in a folder and name it with AGENTD_VENDOR_DIR" >&2; exit 1; }
  git -C "$src" -c advice.detachedHead=false checkout -q FETCH_HEAD
  [ "$(git -C "$src" rev-parse HEAD)" = "$COMMIT" ] || { echo "codecompanion: $HOME_URL gave $(git -C "$src" rev-parse HEAD), not commit $COMMIT" >&2; exit 1; }
fi
got=$(manifest "$src")
[ "$got" = "$MANIFEST" ] || { echo "codecompanion: the files of $src hash to $got, not the pinned tree $MANIFEST (commit $COMMIT)" >&2; exit 1; }
mv "$src" "$dest"
rm -rf "$D/unpack"
echo "$COMMIT" > "$dest/.pinned"
echo "$dest"
