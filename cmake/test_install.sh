#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_install.sh BUILD_DIR - install into a temporary prefix and use it as a
# user would: build the vendor plugin and the app out of tree against that
# prefix only, enable the plugin through an INI file, check infinirt-info
# --json lists it with its devices, run the app and the conformance suite on
# it; then move the prefix and check it all still works.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/infinirt-install-XXXXXX)
trap 'rm -rf "$T"' EXIT
step() { echo "-- install test: $*"; }

step "cmake --install into $T/prefix"
cmake --install "$build" --prefix "$T/prefix" >/dev/null
for f in lib/libinfinirt.so include/infinirt.h include/infinicore.h include/infinirt_plugin.h include/infinirt_cpu.h \
         etc/infinirt/infinirt.ini lib/cmake/infinirt/infinirtConfig.cmake \
         lib/cmake/infinirt/infinirtConfigVersion.cmake lib/pkgconfig/infinirt.pc \
         bin/infinirt-info bin/infinirt-conformance bin/infinirt-trace lib/infinirt/libinfinirt_cpu.so \
         share/man/man1/infinirt-info.1 share/man/man1/infinirt-trace.1 share/man/man5/infinirt.ini.5 \
         share/licenses/infinirt/LICENSE; do
    [ -e "$T/prefix/$f" ] || { echo "missing from the install: $f"; exit 1; }
done
# The pages as configured: the version and this prefix's folders filled in.
for f in share/man/man1/infinirt-info.1 share/man/man1/infinirt-trace.1 share/man/man5/infinirt.ini.5; do
    ! grep -q '@[A-Z_]*@' "$T/prefix/$f" || { echo "an unreplaced @...@ in the installed $f"; exit 1; }
done
readelf -d "$T/prefix/lib/libinfinirt.so" | grep -q 'SONAME.*libinfinirt.so.0' || { echo "no SONAME"; exit 1; }
# The installed infinirt-trace reads a trace (it needs nothing else).
"$T/prefix/bin/infinirt-trace" "$src/tests/trace/fixtures/small.json" | grep -q '^infinirt trace .*42 events' ||
    { echo "the installed infinirt-trace does not summarise tests/trace/fixtures/small.json"; exit 1; }

step "vendor plugin, out of tree, find_package"
cmake -S "$src/examples/vendor-plugin" -B "$T/vendor" -DCMAKE_PREFIX_PATH="$T/prefix" >/dev/null
cmake --build "$T/vendor" >/dev/null
step "app, out of tree, find_package"
cmake -S "$src/examples/app" -B "$T/app" -DCMAKE_PREFIX_PATH="$T/prefix" >/dev/null
cmake --build "$T/app" >/dev/null
step "app, out of tree, pkg-config"
mkdir -p "$T/pc"
cp "$src/examples/app/app.c" "$src/examples/app/Makefile" "$T/pc/"
PKG_CONFIG_PATH="$T/prefix/lib/pkgconfig" make -s -C "$T/pc" >/dev/null
mv "$T/pc/infinirt-app-pc" "$T/app-pc"

step "the README's pkg-config line, exactly, and the program it builds starts"
readme_cc=$(grep -m1 '^cc myapp.c \$(pkg-config' "$src/README.md") ||
    { echo "README.md has no 'cc myapp.c \$(pkg-config ...' line"; exit 1; }
mkdir -p "$T/readme"
cat >"$T/readme/myapp.c" <<'C'
#include <infinirt.h>
#include <stdio.h>
int main(void)
{
    int major = -1, minor = -1, patch = -1;
    infinirtGetVersion(&major, &minor, &patch);
    printf("myapp: infinirt %d.%d.%d\n", major, minor, patch);
    return major < 0;
}
C
(cd "$T/readme" && PKG_CONFIG_PATH="$T/prefix/lib/pkgconfig" bash -ec "$readme_cc") ||
    { echo "the README's pkg-config line does not build: $readme_cc"; exit 1; }
env -u LD_LIBRARY_PATH "$T/readme/a.out" | grep -q '^myapp: infinirt ' ||
    { echo "a program built with the README's pkg-config line does not start: $readme_cc"; exit 1; }

# The INI enables the vendor plugin by a path relative to the INI itself.
mkdir -p "$T/conf"
# Only cpu and the vendor's: every other plugin of the prefix (opencl) would
# load too, with its defaults, were they not listed.
cat >"$T/conf/vendor.ini" <<'INI'
[loader]
plugins = cpu, vendor
[plugin.cpu]
[plugin.vendor]
library = ../vendor/libinfinirt_vendor.so
devices = 2
INI

# A bad value and an unknown key: warnings with file and line, the default
# (1 device) kept, the plugin loaded (the policy the header asks plugins for).
cat >"$T/conf/vendor-bad.ini" <<'INI'
[loader]
plugins = vendor
[plugin.vendor]
library = ../vendor/libinfinirt_vendor.so
devices = lots
colour = red
INI

check_prefix() { # prefix
    local p=$1 json
    json=$(INFINIRT_CONFIG="$T/conf/vendor-bad.ini" "$p/bin/infinirt-info" --json 2>"$T/vendor-bad.err")
    echo "$json" | grep -Eq '"name":"vendor","path":"[^"]*libinfinirt_vendor.so","status":"loaded","loaded":true,"device_type":"ascend","device_count":1' ||
        { echo "a bad vendor key must warn and keep 1 device:"; echo "$json"; cat "$T/vendor-bad.err"; exit 1; }
    grep -q "vendor-bad.ini:5: \[plugin.vendor\] devices = 'lots'" "$T/vendor-bad.err" &&
        grep -q "vendor-bad.ini:6: \[plugin.vendor\] colour = 'red'" "$T/vendor-bad.err" ||
        { echo "no file:line warnings for the bad vendor keys:"; cat "$T/vendor-bad.err"; exit 1; }
    json=$(INFINIRT_CONFIG="$T/conf/vendor.ini" "$p/bin/infinirt-info" --json)
    echo "$json" | grep -Eq '"name":"vendor","path":"[^"]*libinfinirt_vendor.so","status":"loaded","loaded":true,"device_type":"ascend","device_count":2' ||
        { echo "infinirt-info --json does not list the vendor plugin with 2 devices:"; echo "$json"; exit 1; }
    echo "$json" | grep -q "\"path\":\"$p/lib/infinirt/libinfinirt_cpu.so\",\"status\":\"loaded\"" ||
        { echo "the cpu plugin was not found beside the loader in $p:"; echo "$json"; exit 1; }
    # No config at all but the installed one, found relative to the loader.
    env -u INFINIRT_CONFIG XDG_CONFIG_HOME="$T/none" "$p/bin/infinirt-info" --json |
        grep -q "\"config\":\"$p/etc/infinirt/infinirt.ini\"" ||
        { echo "the installed config in $p was not used"; exit 1; }
    # The suite's own help, as a vendor first meets it.
    "$p/bin/infinirt-conformance" --help | grep -q INFINIRT_TEST_UNSUPPORTED &&
        "$p/bin/infinirt-conformance" --features | grep -q '^  host_functions ' ||
        { echo "infinirt-conformance --help or --features fails in $p"; exit 1; }
    # The vendor's way (examples/vendor-plugin/README.md): what the plugin
    # lacks declared in INFINIRT_TEST_UNSUPPORTED.  Expected-error warnings
    # go to a log, shown only if the run fails.
    INFINIRT_CONFIG="$T/conf/vendor.ini" INFINIRT_TEST_DEVICE=ascend \
        INFINIRT_TEST_UNSUPPORTED=host_functions,foreign_memory "$p/bin/infinirt-conformance" --all \
        >"$T/conformance.out" 2>"$T/conformance.err" || true
    tail -1 "$T/conformance.out"
    # Nothing failed, and every skip was declared: a skip the plugin did
    # not declare unsupported fails the test that skipped, and each skip
    # says why on a "skip:" line.
    local skipped declared
    skipped=$(tail -1 "$T/conformance.out" | sed -n 's/^[0-9]* passed, 0 failed, \([0-9]*\) skipped$/\1/p')
    declared=$(grep -c '^skip: ' "$T/conformance.err" || true)
    [ -n "$skipped" ] && [ "$skipped" = "$declared" ] ||
        { echo "conformance on the vendor plugin failed, or skipped without saying why ($declared skip lines):"
          cat "$T/conformance.out" "$T/conformance.err"; exit 1; }
}

step "infinirt-info, app (both builds) and conformance on the vendor plugin"
check_prefix "$T/prefix"
INFINIRT_CONFIG="$T/conf/vendor.ini" "$T/app/infinirt-app" | tee "$T/app.out"
grep -q "app: 3 of 3 devices ok" "$T/app.out"
INFINIRT_CONFIG="$T/conf/vendor.ini" "$T/app-pc" | tail -1 | grep -q "app: 3 of 3 devices ok"

step "move the prefix and run again"
mv "$T/prefix" "$T/moved"
check_prefix "$T/moved"
INFINIRT_CONFIG="$T/conf/vendor.ini" LD_LIBRARY_PATH="$T/moved/lib" "$T/app-pc" | tail -1 |
    grep -q "app: 3 of 3 devices ok"
step "an FHS prefix (/usr), installed with DESTDIR: the config in /etc/infinirt, read there"
cmake -S "$src" -B "$T/fhs" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
    -DINFINIRT_BUILD_TESTS=OFF -DINFINIRT_BUILD_BENCH=OFF -DINFINIRT_PLUGIN_OPENCL=OFF -DINFINIRT_PLUGIN_CUDA=OFF \
    >"$T/fhs.configure.log" || { cat "$T/fhs.configure.log"; exit 1; }
grep -q "^-- infinirt config: /etc/infinirt/infinirt.ini$" "$T/fhs.configure.log" ||
    { echo "a /usr build does not install its config as /etc/infinirt/infinirt.ini:"; cat "$T/fhs.configure.log"; exit 1; }
cmake --build "$T/fhs" -j "${JOBS:-2}" >/dev/null
DESTDIR="$T/destdir" cmake --install "$T/fhs" >/dev/null
# The manifest names the files without DESTDIR.
grep -qx /etc/infinirt/infinirt.ini "$T/fhs/install_manifest.txt" && [ -f "$T/destdir/etc/infinirt/infinirt.ini" ] &&
    [ ! -e "$T/destdir/usr/etc" ] ||
    { echo "the /usr install did not put its config in (DESTDIR)/etc/infinirt:"; cat "$T/fhs/install_manifest.txt"; exit 1; }
grep -Eq '^;plugin_dir = /usr/lib(/[^/]+)?/infinirt$' "$T/destdir/etc/infinirt/infinirt.ini" ||
    { echo "the /usr config's plugin_dir example does not name /usr/lib/.../infinirt"; exit 1; }
fhs_info=$(find "$T/destdir/usr/bin" -name infinirt-info)
# The loader looks for /etc/infinirt/infinirt.ini (debug line), not for a
# path relative to itself; the plugins it finds beside itself.
INFINIRT_LOG=debug XDG_CONFIG_HOME="$T/none" env -u INFINIRT_CONFIG "$fhs_info" >"$T/fhs.out" 2>&1 || true
grep -Eq "config: (no installed config at|read installed config) /etc/infinirt/infinirt.ini$" "$T/fhs.out" ||
    { echo "the /usr loader does not look for /etc/infinirt/infinirt.ini:"; cat "$T/fhs.out"; exit 1; }
grep -q "^  cpu      loaded" "$T/fhs.out" || { echo "the /usr loader did not load its cpu plugin:"; cat "$T/fhs.out"; exit 1; }
echo "-- install test: passed"
