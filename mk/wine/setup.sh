#!/usr/bin/env bash
# Prepares Wine for agentd's Windows tests (mk/wine.mk) and prints the
# environment to use, as shell assignments:
#   - Debian's wine64 and mingw-w64 (installed when missing; the 64-bit Wine
#     alone runs windows/amd64 programs, so no i386 architecture is added);
#   - a throwaway Wine prefix under .cache/wine/prefix, with the
#     bcryptprimitives.dll stub Go >= 1.22 needs and Wine 8.0 lacks;
#   - a go build -overlay file that adds Wine 8's answer (STATUS_NOT_IMPLEMENTED)
#     to the statuses Go's os.Root Remove and os.RemoveAll treat as "no POSIX
#     delete here, use the old way"; without it every file removal fails under
#     Wine with "Invalid function". Real Windows 10 and later never need it;
#     release binaries are built without it.
# Fails loudly when anything cannot be set up.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache="$root/.cache/wine"
mkdir -p "$cache"
die() { echo "wine setup: FAILED: $*" >&2; exit 1; }
log() { echo "wine setup: $*" >&2; }

missing=()
[ -x /usr/lib/wine/wine64 ] || missing+=(wine64)
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 || die "apt-get update"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    die "apt-get install ${missing[*]} (Debian's wine64 and gcc-mingw-w64-x86-64 packages are needed to run the Windows tests)"
fi
[ -x /usr/lib/wine/wine64 ] || die "/usr/lib/wine/wine64 missing after installing wine64"

dll="$cache/bcryptprimitives.dll"
if [ ! -f "$dll" ] || [ "$here/bcryptprimitives.c" -nt "$dll" ]; then
  x86_64-w64-mingw32-gcc -shared -O2 -o "$dll" "$here/bcryptprimitives.c" "$here/bcryptprimitives.def" -ladvapi32 ||
    die "building the bcryptprimitives.dll stub with mingw-w64"
fi

export WINEPREFIX="$cache/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  log "creating the Wine prefix (once, ~30 s)"
  /usr/lib/wine/wine64 wineboot -i >/dev/null 2>&1 || die "wineboot -i in $WINEPREFIX"
  /usr/lib/wine/wineserver -w 2>/dev/null || true
fi
sys32="$WINEPREFIX/drive_c/windows/system32"
[ -d "$sys32" ] || die "no $sys32 after wineboot"
cp "$dll" "$sys32/bcryptprimitives.dll"

goroot=$(${GO:-go} env GOROOT)
src="$goroot/src/internal/syscall/windows/at_windows.go"
ovl="$cache/overlay"
mkdir -p "$ovl"
python3 - "$src" "$ovl/at_windows.go" <<'PY' || die "patching $src for the overlay (Go's source changed: update mk/wine/setup.sh)"
import sys
s = open(sys.argv[1]).read()
old = '\t\tSTATUS_NOT_SUPPORTED:     // the file system'
if s.count(old) != 1:
    sys.exit("the Deleteat fallback list was not found")
s = s.replace(old, '\t\tNTStatus(0xC0000002), // STATUS_NOT_IMPLEMENTED: what Wine 8 answers\n' + old)
open(sys.argv[2], 'w').write(s)
PY
printf '{"Replace":{"%s":"%s"}}\n' "$src" "$ovl/at_windows.go" > "$ovl/overlay.json"

echo "export WINEPREFIX='$WINEPREFIX' WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml='"
echo "export WINE64=/usr/lib/wine/wine64 WINE_OVERLAY='$ovl/overlay.json'"
