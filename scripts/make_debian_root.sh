#!/usr/bin/env bash
# Makes (once) a bare Debian 12 root as a tarball, for the .deb test (tests/python/
# test_install_package.py): `mmdebstrap --variant=minbase` from Debian's mirror, ~1-2 minutes.
#
#   scripts/make_debian_root.sh            # prints the tarball's path; creates it if missing
#
# Cached at ${XDG_CACHE_HOME:-~/.cache}/geniex/debian12-minbase.tar; delete it to refresh. Needs
# root (mmdebstrap --mode=root) and the network; scripts/setup.sh runs it where both are there.
set -euo pipefail

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/geniex"
TAR="$CACHE/debian12-minbase.tar"
MIRROR="http://deb.debian.org/debian"

if [[ -s "$TAR" ]]; then
  echo "$TAR"
  exit 0
fi
if [[ $EUID -ne 0 ]]; then
  echo "make_debian_root: needs root (mmdebstrap --mode=root)" >&2
  exit 1
fi
command -v mmdebstrap >/dev/null || {
  echo "make_debian_root: mmdebstrap not installed (scripts/setup.sh installs it)" >&2
  exit 1
}
mkdir -p "$CACHE"
tmp="$(mktemp "$CACHE/debian12-minbase.XXXXXX.tar")"
trap 'rm -f "$tmp"' EXIT
mmdebstrap --quiet --variant=minbase --mode=root bookworm "$tmp" \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
  "deb ${MIRROR%/debian}/debian-security bookworm-security main" >&2
mv "$tmp" "$TAR"
trap - EXIT
echo "$TAR"
