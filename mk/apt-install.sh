#!/usr/bin/env bash
# mk/apt-install.sh WHAT PKG...: installs Debian packages for WHAT ("the
# release") with apt-get, as root or through sudo. When another apt or dpkg
# holds the package lock (unattended-upgrades, a second make), it waits for
# it (up to APT_LOCK_TIMEOUT seconds, default 600) instead of failing at
# once. APT_GET replaces apt-get (for the tests).
set -euo pipefail
what=$1; shift
apt=${APT_GET:-apt-get}
timeout=${APT_LOCK_TIMEOUT:-600}
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
echo "installing: $* (waiting up to ${timeout}s for the package lock if apt or dpkg holds it)"
lock=(-o "DPkg::Lock::Timeout=$timeout")
if ! $sudo "$apt" "${lock[@]}" update -qq || ! DEBIAN_FRONTEND=noninteractive $sudo "$apt" "${lock[@]}" install -y -qq "$@"; then
  echo "$what needs: $* (apt-get install $*)" >&2
  exit 1
fi
