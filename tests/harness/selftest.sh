#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# selftest.sh HARNESS_SELFTEST - the harness's verdicts, output and time
# limit (selftest.c says what each test does).  Fails on the first wrong one.
#
# The time limit L: the hang tests must be killed at it; the others end in
# milliseconds, long before it, on a machine that runs them.  A machine
# loaded past its cores (ctest -j8 on two) can starve a test that should
# pass for more than 1 s: that shows as "timed out" on a test that does not
# hang, and says the machine was too slow for L, not that the harness is
# wrong.  Then the time-limited checks run again with twice the limit, up to
# 8 s; a harness that kills a passing test early fails at every limit.
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
L=1
run() { # run the program, keep stdout, stderr and the exit code
    INFINIRT_TEST_TIMEOUT=$L "$@" >"$T/out" 2>"$T/err"
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
# --help and --version answer on stdout with exit 0; an unknown option is a
# usage error, not a test name.
run "$prog" --help
[ "$rc" -eq 0 ] || fail "--help exits $rc, not 0"
want "^usage: .* \[TEST | --all | --tap | --list | --help | --version\]$" out
want "INFINIRT_TEST_TIMEOUT" out
run "$prog" --version
[ "$rc" -eq 0 ] || fail "--version exits $rc, not 0"
want "^harness-selftest (infinirt) [0-9]*\.[0-9]*\.[0-9]*$" out
run "$prog" --bogus
[ "$rc" -eq 2 ] || fail "an unknown option exits $rc, not 2"
want "unknown option --bogus" err
never "no test named" err

# starved: a test that does not hang timed out in the last run (its
# stdout and stderr): the machine was too slow for the limit L.
starved() {
    grep -hv hang "$T/out" "$T/err" | grep -q "timed out"
}

# all_fails RUN: `RUN prog --all` must end in time (the time limit stops the
# hang) and exit 1 (tests failed); returns 2 when the machine starved it.
all_fails() {
    start=$(date +%s)
    "$1" "$prog" --all
    ! starved || return 2
    [ $(($(date +%s) - start)) -lt $((20 * L)) ] || fail "$1 --all took too long: the time limit did not stop the hang"
    [ "$rc" -eq 1 ] || fail "$1 --all with failures exits $rc, not 1"
}

# A suite with rows (test_main_rows): the suite's own test first, then one
# test per row; a row's output shown only when it fails; _exit, so no
# atexit handler runs; the suite's own limit (L here), unless
# INFINIRT_TEST_TIMEOUT says otherwise.
rows() { # run the program on its rows, without INFINIRT_TEST_TIMEOUT
    env -u INFINIRT_TEST_TIMEOUT HARNESS_SELFTEST_ROWS=1 HARNESS_SELFTEST_ROW_TIMEOUT=$L "$@" >"$T/out" 2>"$T/err"
    rc=$?
}

# The checks under the time limit L; 2 when the machine starved a test.
timed_checks() {
    all_fails run || return 2
    want "^selftest.pass  *ok$" out
    want "^selftest.fail  *FAILED$" out
    want "^selftest.skip  *skipped$" out
    want "^selftest.hang  *FAILED (timed out after $L s)$" out
    want "^selftest.thread_fail  *FAILED$" out
    want "^1 passed, 3 failed, 1 skipped$" out
    want "selftest.hang: timed out after $L s" err
    want "^  failed: selftest.fail$" out
    want "^  failed: selftest.hang$" out
    want "^  failed: selftest.thread_fail$" out
    never "failed: selftest.pass" out

    run "$prog" --tap
    ! starved || return 2
    [ "$rc" -eq 1 ] || fail "--tap with failures exits $rc, not 1"
    printf '%s\n' "TAP version 13" "1..5" "ok 1 selftest.pass" "not ok 2 selftest.fail" "ok 3 selftest.skip # SKIP" \
        "not ok 4 selftest.hang (timed out)" "not ok 5 selftest.thread_fail" "# 1 passed, 3 failed, 1 skipped" >"$T/tap"
    cmp -s "$T/out" "$T/tap" || fail "--tap output is not the expected TAP"
    rows "$prog" --list
    [ "$(cat "$T/out" | tr '\n' ' ')" = "selftest.pass row/pass row/fail row/skip row/hang " ] ||
        fail "--list with rows prints the wrong names"
    rows "$prog" row/pass
    [ "$rc" -eq 0 ] || fail "a passing row run alone exits $rc"
    want "^row/pass stderr$" err
    never "atexit ran" err
    rows "$prog" row/fail
    [ "$rc" -eq 1 ] || fail "a failing row run alone exits $rc, not 1"
    rows "$prog" row/skip
    [ "$rc" -eq 77 ] || fail "a skipped row run alone exits $rc, not 77"

    all_fails rows || return 2
    for line in "selftest.pass  *ok" "row/pass  *ok" "row/fail  *FAILED" "row/fail stdout" "row/fail stderr" \
        "row/skip  *skipped" "row/hang  *FAILED (timed out after $L s)" "2 passed, 2 failed, 1 skipped" \
        "  failed: row/fail" "  failed: row/hang"; do
        want "^$line$" out
    done
    for quiet in "row/pass std" "row/skip std" "atexit ran"; do
        never "$quiet" out
        never "$quiet" err
    done
    INFINIRT_TEST_TIMEOUT=$((2 * L)) HARNESS_SELFTEST_ROWS=1 HARNESS_SELFTEST_ROW_TIMEOUT=$L "$prog" --all >"$T/out" 2>"$T/err"
    ! starved || return 2
    want "^row/hang  *FAILED (timed out after $((2 * L)) s)$" out

    rows "$prog" --tap
    ! starved || return 2
    [ "$rc" -eq 1 ] || fail "--tap with failed rows exits $rc, not 1"
    printf '%s\n' "TAP version 13" "1..5" "ok 1 selftest.pass" "ok 2 row/pass" "not ok 3 row/fail" "# row/fail stderr" \
        "# row/fail stdout" "ok 4 row/skip # SKIP" "not ok 5 row/hang (timed out)" "# row/hang stdout" \
        "# row/hang stderr" "# 2 passed, 2 failed, 1 skipped" >"$T/tap"
    cmp -s "$T/out" "$T/tap" || fail "--tap output with rows is not the expected TAP"
}

for L in 1 2 4 8; do
    timed_checks && break
    [ "$L" -lt 8 ] || fail "a test that does not hang timed out at every limit up to $L s"
    echo "harness selftest: a test that does not hang timed out under a ${L} s limit (a loaded machine); again with $((2 * L)) s"
done
echo "harness selftest: ok"
