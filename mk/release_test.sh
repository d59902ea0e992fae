#!/usr/bin/env bash
# Tests of the release's own machinery, with stub builders (no toolchain):
# - make release without VERSION (or with a bad one, or an unknown target)
#   fails at once, saying what to pass, before any recipe runs;
# - a TARGETS= trial replaces only its targets' files in dist/, and the .vsix
#   carries the release's version (the stub vsix writer records it);
# - mk/apt-install.sh asks apt-get to wait for the package lock.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. Inputs checked first: make -n would print the recipes it would run;
#    none may run (nor print) before the version is refused.
for args in "" "VERSION=" "VERSION=banana" "VERSION=1.2.0 TARGETS=plan9/amd64"; do
  # shellcheck disable=SC2086
  out=$(make -n release $args 2>&1); rc=$?
  if [ $rc -eq 0 ] || grep -q "wasm/build.sh\|release.sh \"" <<<"$out"; then
    fail "make release $args: exit $rc, and it went on to build:"; echo "$out" | head -5
  fi
  case "$args" in
    ""|VERSION=) want="make release needs a version: make release VERSION=1.2.0" ;;
    VERSION=banana) want="VERSION banana: give MAJOR.MINOR.PATCH" ;;
    *) want="TARGETS: unknown target plan9/amd64" ;;
  esac
  grep -qF "$want" <<<"$out" || { fail "make release $args does not say: $want"; echo "$out" | head -5; }
done
mk/release.sh --check v1.3.0-rc.1 || fail "a pre-release tag's version is refused"

# 2. A TARGETS= trial leaves other targets' files alone.
cat > "$tmp/gobuild.sh" <<'STUB'
#!/usr/bin/env bash
printf 'agentd for %s\n' "$1" > "$2"
STUB
cat > "$tmp/notices.sh" <<'STUB'
#!/usr/bin/env bash
echo notices > "$1"
STUB
cat > "$tmp/vsix.sh" <<'STUB'
#!/usr/bin/env bash
printf 'vsix %s version %s\n' "$1" "$AGENTD_VSIX_VERSION" > "$3"
STUB
chmod +x "$tmp"/*.sh
dist=$tmp/dist
mkdir -p "$dist"
echo old > "$dist/agentd_1.0.0_linux_arm64.tar.gz"
echo old > "$dist/agentd-vscode_1.0.0_linux-arm64.vsix"
echo old > "$dist/agentd_1.0.0_linux_amd64.tar.gz"
stub=(RELEASE_DIST="$dist" RELEASE_GOBUILD="$tmp/gobuild.sh" RELEASE_NOTICES="$tmp/notices.sh" RELEASE_VSIX="$tmp/vsix.sh")
if ! env "${stub[@]}" TARGETS="linux/amd64 windows/amd64" mk/release.sh 1.2.0-rc.1 > "$tmp/log" 2>&1; then
  fail "the stubbed trial failed:"; cat "$tmp/log"
fi
for f in agentd_1.0.0_linux_arm64.tar.gz agentd-vscode_1.0.0_linux-arm64.vsix; do
  [ "$(cat "$dist/$f" 2>/dev/null)" = old ] || fail "a TARGETS= trial removed or changed another target's $f"
done
[ -e "$dist/agentd_1.0.0_linux_amd64.tar.gz" ] && fail "the trial left its own target's older archive"
for f in agentd_1.2.0-rc.1_linux_amd64.tar.gz agentd_1.2.0-rc.1_windows_amd64.zip SHA256SUMS; do
  [ -s "$dist/$f" ] || fail "the trial did not write $f"
done
grep -qx "vsix win32-x64 version 1.2.0-rc.1" "$dist/agentd-vscode_1.2.0-rc.1_win32-x64.vsix" 2>/dev/null ||
  fail "the .vsix is not given the release's version"
(cd "$dist" && sha256sum -c --quiet SHA256SUMS) || fail "SHA256SUMS does not match dist/"

# 3. The package lock: apt-get is asked to wait for it.
cat > "$tmp/apt-get" <<'STUB'
#!/usr/bin/env bash
echo "$*" >> "$APT_LOG"
STUB
chmod +x "$tmp/apt-get"
if [ "$(id -u)" = 0 ]; then
  APT_LOG=$tmp/apt.log APT_GET=$tmp/apt-get APT_LOCK_TIMEOUT=7 mk/apt-install.sh "the test" zip >/dev/null ||
    fail "mk/apt-install.sh with a stub apt-get failed"
  grep -q "^-o DPkg::Lock::Timeout=7 update" "$tmp/apt.log" && grep -q "^-o DPkg::Lock::Timeout=7 install -y -qq zip" "$tmp/apt.log" ||
    { fail "apt-get is not asked to wait for the package lock:"; cat "$tmp/apt.log"; }
else
  echo "note: not root: the apt-get stub would be run through sudo; the package lock check is left to CI (root)"
fi

if [ $fails -gt 0 ]; then echo "release tests: $fails failed"; exit 1; fi
echo "release tests: ok"
