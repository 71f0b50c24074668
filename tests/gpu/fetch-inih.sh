#!/usr/bin/env bash
# fetch-inih.sh - bring inih along to a machine that cannot install it (no
# network, no package manager, maybe not Debian), such as a lent GPU machine.
#
#   tests/gpu/fetch-inih.sh [DIR]        # default: third_party/inih-local
#
# Run it on a Debian or Ubuntu machine with apt (no root needed) before the
# checkout travels.  It downloads Debian's libinih-dev (ini.h and the static,
# position-independent libinih.a; libinih1 is not needed) with
# `apt-get download` and unpacks it with `dpkg-deb -x` into DIR, a folder of
# the checkout that git ignores, so copy it with the checkout (or name it in
# the device tool's `carry`).  Then configure with the two variables it prints,
# e.g.
#
#   cmake -S . -B build -DINIH_INCLUDE_DIR=third_party/inih-local/usr/include \
#         -DINIH_LIBRARY=third_party/inih-local/usr/lib/x86_64-linux-gnu/libinih.a
#
# The library links into libinfinirt.so, so the GPU machine needs nothing of
# inih at run time.  Environment: ARCH (default: dpkg's own) picks the
# package's architecture, which must be the GPU machine's (arm64 for Grace
# Hopper; apt must know that architecture: dpkg --add-architecture).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:-$root/third_party/inih-local}
arch=${ARCH:-$(dpkg --print-architecture)}
for tool in apt-get dpkg-deb; do
    command -v $tool >/dev/null || { echo "fetch-inih: $tool not found (run this on Debian or Ubuntu)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 777 "$work" # apt's unprivileged download user writes there
(cd "$work" && apt-get download "libinih-dev:$arch") || {
    echo "fetch-inih: apt-get download failed (as root, apt-get update first)" >&2
    exit 1
}
rm -rf "$dir"
mkdir -p "$dir"
dpkg-deb -x "$work"/libinih-dev_*.deb "$dir"
cp "$work"/libinih-dev_*.deb "$dir"/
# The .so links point into libinih1, not downloaded: drop them, so only the
# static library can be found and the folder holds plain files only.
find "$dir" -type l -delete

inc=$(dirname "$(find "$dir" -name ini.h -print -quit)")
lib=$(find "$dir" -name libinih.a -print -quit)
if [ ! -f "$inc/ini.h" ] || [ ! -f "$lib" ]; then
    echo "fetch-inih: the package has no ini.h or libinih.a" >&2
    exit 1
fi
rel() { case $1 in "$root"/*) echo "${1#"$root"/}" ;; *) echo "$1" ;; esac; }
echo "inih $(dpkg-deb -f "$dir"/libinih-dev_*.deb Version) ($arch) unpacked in $(rel "$dir"); configure with:"
echo "  -DINIH_INCLUDE_DIR=$(rel "$inc") -DINIH_LIBRARY=$(rel "$lib")"
