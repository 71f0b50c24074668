#!/bin/sh
# tools_test.sh CHECK PROGRAM - the tools tell the truth about what they
# found.  The config comes from INFINIRT_CONFIG (set by CTest).
#   info-no-device        infinirt-info with no device: exits non-zero, says so
#   info-default-device   infinirt-info shows the default device (the config
#                         sets [loader] default_device = cpu:1)
#   conformance-no-device infinirt-conformance --all with no device to test:
#                         the tests skip (none fails), and it exits non-zero
#                         saying so
#   demo-warm             the demo times warm copies and says what it timed
#   dev-usage             ./dev with no argument prints its usage, exits non-zero
set -u
check=$1
prog=$2
T=$(mktemp -d /tmp/infinirt-tools-XXXXXX)
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

case $check in
info-no-device)
    run "$prog"
    [ "$rc" -ne 0 ] || fail "infinirt-info exits 0 with no device"
    grep -q "no device found" "$T/err" || fail "infinirt-info does not say that no device was found"
    run "$prog" --json
    [ "$rc" -ne 0 ] || fail "infinirt-info --json exits 0 with no device"
    grep -q "no device found" "$T/err" || fail "infinirt-info --json does not say that no device was found"
    ;;
info-default-device)
    run "$prog"
    [ "$rc" -eq 0 ] || fail "infinirt-info failed"
    grep -q "^default device: cpu:1 " "$T/out" || fail "infinirt-info does not show the default device cpu:1"
    run "$prog" --json
    [ "$rc" -eq 0 ] || fail "infinirt-info --json failed"
    grep -q '"default_device":{"type":"cpu","id":1,"present":true}' "$T/out" ||
        fail "infinirt-info --json does not show the default device cpu:1"
    ;;
conformance-no-device)
    run "$prog" --all
    [ "$rc" -ne 0 ] || fail "infinirt-conformance --all exits 0 when every test skipped"
    # Only the tests that need no device may run (and pass).
    grep -q "^[0-9]* passed, 0 failed, [1-9][0-9]* skipped" "$T/out" || fail "a test failed with no device"
    grep -q "nothing was tested: .* 0 device(s) found" "$T/err" ||
        fail "infinirt-conformance does not say that nothing was tested"
    ;;
demo-warm)
    run "$prog" cpu
    [ "$rc" -eq 0 ] || fail "the demo failed"
    grep -q "^timed: [0-9]* warm rounds (after 1 untimed round" "$T/out" ||
        fail "the demo does not say that it times warm copies"
    grep -q "GB/s per copy; data correct" "$T/out" || fail "the demo shows no bandwidth or wrong data"
    ;;
dev-usage)
    run "$prog"
    [ "$rc" -ne 0 ] || fail "./dev with no argument exits 0"
    head -1 "$T/err" | grep -q "^usage: ./dev " || fail "./dev with no argument does not start with its usage"
    # The usage, not lines of the script's source.
    ! grep -Eq '^#|\(\)|esac|cmd_' "$T/err" "$T/out" || fail "./dev with no argument prints script source"
    ;;
*)
    echo "tools_test.sh: unknown check $check" >&2
    exit 2
    ;;
esac
echo "ok: $check"
