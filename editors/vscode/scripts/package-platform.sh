#!/usr/bin/env bash
# Builds the platform .vsix for one VS Code target, bundling the given agentd:
#   package-platform.sh TARGET AGENTD_BIN OUT.vsix
# TARGET is one of vsce's targets: linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64
# win32-arm64. The binary goes to bin/TARGET/agentd[.exe] inside the extension, where
# src/binary.ts looks first. `make release` calls this once per target.
# Needs only Node 24 and the extension's npm packages (install-tools.sh --package):
# never code-server or Chromium.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ext=$(cd "$here/.." && pwd)
die() { echo "package-platform: $*" >&2; exit 1; }
[ $# -eq 3 ] || die "usage: package-platform.sh TARGET AGENTD_BIN OUT.vsix"
target=$1 bin=$2 out=$3
case "$target" in
  linux-x64|linux-arm64|darwin-x64|darwin-arm64|win32-x64|win32-arm64) ;;
  *) die "unknown target '$target' (linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64)";;
esac
[ -f "$bin" ] || die "AGENTD_BIN '$bin' is not a file"
exe=agentd; [[ $target == win32-* ]] && exe=agentd.exe
# The binary must be for the target (file(1) names the format), so a mix-up fails here,
# not on a user's machine.
if command -v file >/dev/null; then
  desc=$(file -b "$bin")
  case "$target" in
    linux-x64) want='ELF 64-bit.*x86-64';; linux-arm64) want='ELF 64-bit.*(aarch64|ARM aarch64)';;
    darwin-x64) want='Mach-O 64-bit.*x86_64';; darwin-arm64) want='Mach-O 64-bit.*arm64';;
    win32-x64) want='PE32\+.*x86-64';; win32-arm64) want='PE32\+.*(Aarch64|ARM64)';;
  esac
  grep -Eq "$want" <<<"$desc" || die "$bin is not an agentd for $target: file says '$desc'"
fi
"$here/install-tools.sh" --package >&2
eval "$("$here/install-tools.sh" --env)"
cd "$ext"
npm run --silent typecheck
node esbuild.mjs --production
# Stage a copy of what the package holds, with the binary, so that parallel targets and
# the source folder never see each other's bin/.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/out" "$stage/media" "$stage/bin/$target"
cp package.json README.md CHANGELOG.md LICENSE .vscodeignore "$stage/"
# The release's version (mk/release.sh sets AGENTD_VSIX_VERSION; see its rule
# for pre-releases), not package.json's development 0.1.0.
if [ -n "${AGENTD_VSIX_VERSION:-}" ]; then
  node -e 'const fs=require("fs"),f=process.argv[1],p=JSON.parse(fs.readFileSync(f));p.version=process.argv[2];fs.writeFileSync(f,JSON.stringify(p,null,2)+"\n")' \
    "$stage/package.json" "$AGENTD_VSIX_VERSION"
fi
cp out/extension.js "$stage/out/"
cp media/*.png media/*.svg "$stage/media/"
install -m 0755 "$bin" "$stage/bin/$target/$exe"
# The licences of what the bundled binary is built from (mk/notices.sh writes them beside it
# in a release): the .vsix ships that binary, so it ships them too.
if [ -f "$(dirname "$bin")/THIRD_PARTY_NOTICES" ]; then
  cp "$(dirname "$bin")/THIRD_PARTY_NOTICES" "$stage/"
fi
outabs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
# Relative links and images in the README point into the repository's editors/vscode on
# the main branch, where they are (the marketplace shows the README without the folder).
(cd "$stage" && "$ext/node_modules/.bin/vsce" package --target "$target" --no-dependencies \
  --baseContentUrl https://github.com/agentd/agentd/blob/main/editors/vscode \
  --baseImagesUrl https://github.com/agentd/agentd/raw/main/editors/vscode -o "$outabs") >&2
echo "$outabs"
