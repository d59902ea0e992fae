#!/usr/bin/env bash
# Installs Neovim from Debian's packages (with their own libc and loader) into
# a private folder, without touching the system's apt configuration; see
# the project's testing notes. Prints the wrapper's path on success.
# Usage: install-nvim.sh DIR [SUITE]   (e.g. .cache/nvim)
# SUITE trixie (the default): Neovim 0.10.4, Debian 13's, for the plugin's
# suite. SUITE forky: Debian testing's Neovim (0.12 when written, >= 0.11
# required), for the CodeCompanion suite (CodeCompanion needs 0.11); its
# packages are the dependency closure apt computes, since testing's
# library names move.
set -euo pipefail
D=${1:?usage: install-nvim.sh DIR [SUITE]}
SUITE=${2:-trixie}
case "$SUITE" in
  trixie) MIN=10 roots=() ;;
  forky) MIN=11 roots=(neovim neovim-plenary) ;;
  *) echo "install-nvim: unknown suite $SUITE (trixie or forky)" >&2; exit 1 ;;
esac
# runs: the wrapper prints NVIM v0.MINOR with MINOR >= MIN.
runs() {
  local v
  v=$("$1" --version 2>/dev/null | head -1 | sed -n 's/^NVIM v0\.\([0-9][0-9]*\)\..*/\1/p')
  [ -n "$v" ] && [ "$v" -ge "$MIN" ]
}
mkdir -p "$D"
D=$(cd "$D" && pwd)
if [ -x "$D/nvim" ] && runs "$D/nvim" && { [ "$SUITE" = trixie ] || [ -d "$D/root/usr/share/neovim-plenary/lua/plenary" ]; }; then
  echo "$D/nvim"; exit 0
fi
mirror=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || { echo "install-nvim: no Debian mirror found in /etc/apt/sources.list(.d); cannot install Neovim from $SUITE" >&2; exit 1; }
echo "deb $mirror $SUITE main" > "$D/sources.list"
mkdir -p "$D/lists/partial" "$D/cache/archives/partial" "$D/debs" "$D/root"
A=(-o Dir::Etc::SourceList="$D/sources.list" -o Dir::Etc::SourceParts=/nonexistent
   -o Dir::State::Lists="$D/lists" -o Dir::Cache="$D/cache")
apt-get "${A[@]}" -qq update >&2 || { echo "install-nvim: apt-get update for $SUITE failed" >&2; exit 1; }
if [ "$SUITE" = trixie ]; then
  pkgs=(neovim neovim-runtime libc6 libgcc-s1 gcc-14-base libluajit-5.1-2 libluajit-5.1-common
        libmsgpack-c2 libtree-sitter0.22 libunibilium4 libuv1t64 libvterm0 lua-lpeg lua-luv)
else
  mapfile -t pkgs < <(apt-cache "${A[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${roots[@]}" | grep -v -e '^ ' -e '^<' | sort -u)
  [ ${#pkgs[@]} -gt 2 ] || { echo "install-nvim: apt-cache found no packages for ${roots[*]} in $SUITE" >&2; exit 1; }
fi
(cd "$D/debs" && apt-get "${A[@]}" -qq download "${pkgs[@]}" >&2) || { echo "install-nvim: apt-get download of ${pkgs[*]} from $SUITE failed" >&2; exit 1; }
for f in "$D"/debs/*.deb; do dpkg-deb -x "$f" "$D/root"; done
# Debian's Neovim finds its Tree-sitter parsers (markdown, lua, ...) in
# /usr/lib/nvim; the forky wrapper names the private copy (CodeCompanion's
# chat needs the markdown parser). The trixie wrapper stays as it was.
extra=""
[ "$SUITE" = trixie ] || extra="--cmd 'set rtp+=$D/root/usr/lib/nvim' "
cat > "$D/nvim" <<WRAP
#!/bin/sh
VIMRUNTIME=$D/root/usr/share/nvim/runtime exec $D/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path $D/root/usr/lib/x86_64-linux-gnu $D/root/usr/bin/nvim $extra"\$@"
WRAP
chmod +x "$D/nvim"
runs "$D/nvim" || { echo "install-nvim: the Neovim installed from $SUITE does not run, or is older than 0.$MIN" >&2; exit 1; }
rm -rf "$D/debs" "$D/cache" "$D/lists"
echo "$D/nvim"
