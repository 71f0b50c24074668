#!/bin/sh
# selftest.sh HARNESS_SELFTEST - the harness's verdicts, output and time
# limit (selftest.c says what each test does).  Fails on the first wrong one.
set -u
prog=$1
T=$(mktemp -d /tmp/infinirt-harness-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() {
    echo "harness selftest: $*" >&2
    for f in "$T"/*; do
        echo "--- $f" >&2
        cat "$f" >&2
    done
    exit 1
}
run() { # run the program, keep stdout, stderr and the exit code
    INFINIRT_TEST_TIMEOUT=1 "$@" >"$T/out" 2>"$T/err"
    rc=$?
}
want() { grep -q -- "$1" "$T/$2" || fail "no line matching '$1' in $2"; }
never() { ! grep -q -- "$1" "$T/$2" || fail "a line matches '$1' in $2"; }

run "$prog" selftest.pass
[ "$rc" -eq 0 ] || fail "a passing test exits $rc"
run "$prog" selftest.skip
[ "$rc" -eq 77 ] || fail "a skipped test exits $rc, not 77"
run "$prog" selftest.fail
[ "$rc" -eq 1 ] || fail "a failed test exits $rc, not 1"
want "selftest.c:[0-9]*: FAIL: two + 1 == 4 (3 vs 4)$" err
want "^selftest: failure hook ran$" err
want "^selftest.fail: FAILED$" err
never "after the failed assertion" err
never "atexit ran" err
run "$prog" selftest.thread_fail
[ "$rc" -eq 1 ] || fail "an assertion failed in a thread exits $rc, not 1"
want "FAIL: 0 returned 0 (SUCCESS), want 3 (BAD_PARAM)" err
run "$prog" no.such_test
[ "$rc" -eq 2 ] || fail "an unknown name exits $rc, not 2"
run "$prog" --list
[ "$(cat "$T/out" | tr '\n' ' ')" = "selftest.pass selftest.fail selftest.skip selftest.hang selftest.thread_fail " ] ||
    fail "--list prints the wrong names"

start=$(date +%s)
run "$prog" --all
[ $(($(date +%s) - start)) -lt 20 ] || fail "--all took too long: the time limit did not stop the hang"
[ "$rc" -eq 1 ] || fail "--all with failures exits $rc, not 1"
want "^selftest.pass  *ok$" out
want "^selftest.fail  *FAILED$" out
want "^selftest.skip  *skipped$" out
want "^selftest.hang  *FAILED (timed out after 1 s)$" out
want "^selftest.thread_fail  *FAILED$" out
want "^1 passed, 3 failed, 1 skipped$" out
want "selftest.hang: timed out after 1 s" err

run "$prog" --tap
[ "$rc" -eq 1 ] || fail "--tap with failures exits $rc, not 1"
printf '%s\n' "TAP version 13" "1..5" "ok 1 selftest.pass" "not ok 2 selftest.fail" "ok 3 selftest.skip # SKIP" \
    "not ok 4 selftest.hang (timed out)" "not ok 5 selftest.thread_fail" "# 1 passed, 3 failed, 1 skipped" >"$T/tap"
cmp -s "$T/out" "$T/tap" || fail "--tap output is not the expected TAP"
echo "harness selftest: ok"
