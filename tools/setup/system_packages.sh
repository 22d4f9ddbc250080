#!/usr/bin/env bash
# Installs the Debian packages that `make test` (or `make demo`) needs, where the host allows it
# (root with apt-get). Elsewhere, one line per missing package says what to install and why.
# Usage: system_packages.sh test|demo
# Never fails: a test that needs a missing tool says so itself (tests/system_tools.py).
set -u
purpose="${1:-test}"
# command  package  why
needs=()
if [ "$purpose" = test ]; then
    needs+=("chromium chromium the status page is tested in Debian's Chromium (tests/tools/operator)")
    needs+=("systemd-analyze systemd the unit files in systemd/ are checked with systemd-analyze verify")
fi
missing=()
for need in "${needs[@]+"${needs[@]}"}"; do
    read -r cmd pkg why <<<"$need"
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd $pkg $why")
done
[ ${#missing[@]} -eq 0 ] && exit 0
pkgs=()
for need in "${missing[@]}"; do read -r cmd pkg why <<<"$need"; pkgs+=("$pkg"); done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: ${pkgs[*]} (apt-get, once)"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/tmp/robodyn-apt.log 2>&1; then
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${pkgs[@]}"; } >>/tmp/robodyn-apt.log 2>&1
    fi
fi
for need in "${missing[@]}"; do
    read -r cmd pkg why <<<"$need"
    command -v "$cmd" >/dev/null 2>&1 && continue
    echo "note: '$cmd' is missing and could not be installed here: $why; install it with: sudo apt-get install $pkg"
done
exit 0
