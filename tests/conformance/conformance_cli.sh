#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# conformance_cli.sh CHECK PROGRAM [CPU_CONFIG SMALLEST_CONFIG] -
# infinirt-conformance's command line, what a vendor meets first.
#   help            --help: exit 0, the usage and the environment it reads on stdout
#   list            --list: exit 0, every test's name, one a line
#   version         --version: exit 0, the version
#   features        --features: exit 0, each feature a plugin may declare, with
#                   its meaning; every name is accepted in INFINIRT_TEST_UNSUPPORTED
#   unknown_option  --bogus: exit 2, "unknown option" (not "no test named")
#   bad_device      INFINIRT_TEST_DEVICE naming no type: exit 2 and why, for a
#                   test by name and for --all (no crash, no test run)
#   bad_unsupported INFINIRT_TEST_UNSUPPORTED naming no feature: exit 2 and why
#   undeclared      the smallest plugin without its declarations: a test that
#                   needs streams fails, saying the skip is undeclared
#   declared_works  the CPU plugin declared without memset: the memset test
#                   fails, saying the declaration is wrong
set -u
check=$1
prog=$2
cpu_ini=${3:-}
smallest_ini=${4:-}
T=$(mktemp -d /tmp/infinirt-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT

run() { # run the program, keep stdout, stderr and the exit code
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
}
fail() {
    echo "FAIL: $*"
    echo "-- exit code $rc; stdout:"
    cat "$T/out"
    echo "-- stderr:"
    cat "$T/err"
    exit 1
}
want() { grep -q -- "$1" "$T/$2" || fail "no line matching '$1' in $2"; }

case $check in
help)
    run "$prog" --help
    [ "$rc" -eq 0 ] || fail "--help exits $rc, not 0"
    want "^usage: .*infinirt-conformance " out
    for word in --all --tap --list --version --features INFINIRT_TEST_DEVICE INFINIRT_TEST_UNSUPPORTED \
        INFINIRT_CONFIG INFINIRT_TEST_TIMEOUT; do
        want "$word" out
    done
    [ ! -s "$T/err" ] || fail "--help wrote to stderr"
    run "$prog" -h
    [ "$rc" -eq 0 ] || fail "-h exits $rc, not 0"
    ;;
list)
    run "$prog" --list
    [ "$rc" -eq 0 ] || fail "--list exits $rc, not 0"
    want "^conformance.malloc_free$" out
    want "^conformance.stream_wait_event_while_held$" out
    [ "$(grep -cv '^conformance\.[a-z0-9_]*$' "$T/out")" -eq 0 ] || fail "--list prints what is not a test name"
    ;;
version)
    run "$prog" --version
    [ "$rc" -eq 0 ] || fail "--version exits $rc, not 0"
    want "^infinirt-conformance (infinirt) [0-9]*\.[0-9]*\.[0-9]*; libinfinirt [0-9.]*; plugin ABI [0-9]*\.[0-9]*$" out
    ;;
features)
    run "$prog" --features
    [ "$rc" -eq 0 ] || fail "--features exits $rc, not 0"
    for f in streams events memset pinned_memory mem_info host_functions async_streams peer_access foreign_memory \
        graphs; do
        want "^  $f  *[A-Za-z]" out
    done
    # Every name listed is one INFINIRT_TEST_UNSUPPORTED accepts.
    all=$(sed -n 's/^  \([a-z_]*\)  .*/\1/p' "$T/out" | paste -sd, -)
    cp "$T/out" "$T/features"
    INFINIRT_TEST_UNSUPPORTED=$all run "$prog" conformance.error_strings
    [ "$rc" -eq 0 ] || fail "INFINIRT_TEST_UNSUPPORTED=$all (every name --features lists) is refused"
    ;;
unknown_option)
    run "$prog" --bogus
    [ "$rc" -eq 2 ] || fail "an unknown option exits $rc, not 2"
    want "unknown option --bogus" err
    ! grep -q "no test named" "$T/err" || fail "an unknown option is taken for a test name"
    ;;
bad_device)
    for value in nosuchtype nvidia:1 99; do
        INFINIRT_TEST_DEVICE=$value run "$prog" conformance.malloc_free
        [ "$rc" -eq 2 ] || fail "INFINIRT_TEST_DEVICE=$value: one test exits $rc, not 2"
        want "INFINIRT_TEST_DEVICE=$value is not a device type name; name one of: cpu " err
        [ "$value" != nvidia:1 ] || want "A type, not a device" err
        INFINIRT_TEST_DEVICE=$value run "$prog" --all
        [ "$rc" -eq 2 ] || fail "INFINIRT_TEST_DEVICE=$value: --all exits $rc, not 2"
        want "INFINIRT_TEST_DEVICE=$value is not a device type name" err
        ! grep -q "passed" "$T/out" || fail "INFINIRT_TEST_DEVICE=$value: --all ran tests"
    done
    ;;
bad_unsupported)
    INFINIRT_TEST_UNSUPPORTED=streams,bogus run "$prog" conformance.malloc_free
    [ "$rc" -eq 2 ] || fail "an unknown feature exits $rc, not 2"
    want "INFINIRT_TEST_UNSUPPORTED=streams,bogus: 'bogus' is not a feature" err
    INFINIRT_TEST_UNSUPPORTED=bogus run "$prog" --all
    [ "$rc" -eq 2 ] || fail "an unknown feature: --all exits $rc, not 2"
    ;;
undeclared)
    INFINIRT_CONFIG=$smallest_ini INFINIRT_TEST_DEVICE=kunlun run "$prog" conformance.async_chain
    [ "$rc" -eq 1 ] || fail "an undeclared missing feature exits $rc, not 1"
    want "the smallest plugin lacks streams but does not declare it unsupported" err
    # Declared, the same test skips, saying why.
    INFINIRT_CONFIG=$smallest_ini INFINIRT_TEST_DEVICE=kunlun INFINIRT_TEST_UNSUPPORTED=streams \
        run "$prog" conformance.async_chain
    [ "$rc" -eq 77 ] || fail "a declared missing feature exits $rc, not 77"
    want "^skip: the smallest plugin declares streams unsupported" err
    ;;
declared_works)
    INFINIRT_CONFIG=$cpu_ini INFINIRT_TEST_DEVICE=cpu INFINIRT_TEST_UNSUPPORTED=memset \
        run "$prog" conformance.memset
    [ "$rc" -eq 1 ] || fail "a feature declared unsupported that works exits $rc, not 1"
    want "the cpu plugin declares memset unsupported, but it works" err
    ;;
*)
    echo "conformance_cli.sh: unknown check $check" >&2
    exit 2
    ;;
esac
echo "ok: $check"
