#!/usr/bin/env bash
# Installs Neovim 0.10 (Debian 13's package, with its own libc and loader) into
# a private folder, without touching the system's apt configuration; see
# the project's testing notes. Prints the wrapper's path on success.
# Usage: install-nvim.sh DIR   (e.g. .cache/nvim)
set -euo pipefail
D=${1:?usage: install-nvim.sh DIR}
mkdir -p "$D"
D=$(cd "$D" && pwd)
if [ -x "$D/nvim" ] && "$D/nvim" --version 2>/dev/null | head -1 | grep -q '^NVIM v0\.1[0-9]'; then
  echo "$D/nvim"; exit 0
fi
mirror=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || { echo "install-nvim: no Debian mirror found in /etc/apt/sources.list(.d); cannot install Neovim 0.10" >&2; exit 1; }
echo "deb $mirror trixie main" > "$D/sources.list"
mkdir -p "$D/lists/partial" "$D/cache/archives/partial" "$D/debs" "$D/root"
A=(-o Dir::Etc::SourceList="$D/sources.list" -o Dir::Etc::SourceParts=/nonexistent
   -o Dir::State::Lists="$D/lists" -o Dir::Cache="$D/cache")
apt-get "${A[@]}" -qq update >&2 || { echo "install-nvim: apt-get update for trixie failed" >&2; exit 1; }
pkgs=(neovim neovim-runtime libc6 libgcc-s1 gcc-14-base libluajit-5.1-2 libluajit-5.1-common
      libmsgpack-c2 libtree-sitter0.22 libunibilium4 libuv1t64 libvterm0 lua-lpeg lua-luv)
(cd "$D/debs" && apt-get "${A[@]}" -qq download "${pkgs[@]}" >&2) || { echo "install-nvim: apt-get download failed" >&2; exit 1; }
for f in "$D"/debs/*.deb; do dpkg-deb -x "$f" "$D/root"; done
cat > "$D/nvim" <<WRAP
#!/bin/sh
VIMRUNTIME=$D/root/usr/share/nvim/runtime exec $D/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path $D/root/usr/lib/x86_64-linux-gnu $D/root/usr/bin/nvim "\$@"
WRAP
chmod +x "$D/nvim"
"$D/nvim" --version | head -1 | grep -q '^NVIM v0\.1[0-9]' || { echo "install-nvim: installed Neovim does not run" >&2; exit 1; }
rm -rf "$D/debs" "$D/cache" "$D/lists"
echo "$D/nvim"
