#!/usr/bin/env bash
# Prints the path of a real open-source tree for benchmarks: the Linux 6.1
# sources from Debian's linux-source-6.1 package (about 80k files), unpacked
# once into .cache/trees/linux, with the top .gitignore as upstream has it. Pass a directory to use your own tree instead.
set -euo pipefail
if [ $# -ge 1 ]; then cd "$1" && pwd; exit 0; fi
top=$(cd "$(dirname "$0")/.." && pwd)
cache="$top/.cache/trees"
dest="$cache/linux"
if [ ! -f "$dest/.complete" ]; then
  mkdir -p "$cache"
  cd "$cache"
  if ! ls linux-source-6.1_*.deb >/dev/null 2>&1; then
    apt-get download linux-source-6.1 >&2 || { apt-get update -qq >&2 && apt-get download linux-source-6.1 >&2; }
  fi
  rm -rf "$dest" x && mkdir -p x
  dpkg-deb -x linux-source-6.1_*.deb x
  tar -C "$cache" -xaf x/usr/src/linux-source-6.1.tar.xz
  mv "$cache"/linux-source-6.1 "$dest"
  # Debian's packaging adds "/*" (and "!/debian/") to the top .gitignore,
  # which would ignore the whole tree; the upstream file does not have them.
  sed -i '/^# Debian packaging/,/^!\/debian\/$/d' "$dest/.gitignore"
  rm -rf x
  touch "$dest/.complete"
fi
echo "$dest"
