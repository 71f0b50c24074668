/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test.h - the infinirt test harness (tests/harness): assertion macros that
 * print both values, the skip convention, and the one runner every test
 * program shares (runner.c).
 *
 * A test is `int test_NAME(void)` returning TEST_OK, or TEST_SKIP (exit code
 * 77, registered as CTest's SKIP_RETURN_CODE) where the hardware it needs is
 * absent.  A failed assertion prints file:line, the expression and both
 * values, runs the failure hook (test_set_failure_hook) and ends the process
 * with _exit(TEST_FAIL): the test stops there, in any thread, and no atexit
 * handler or library destructor runs (one could wait forever on a stream a
 * failed test left held).
 *
 * A suite is a table of (name, function), built from an X-macro list in the
 * suite's *_list.h; its main() is one call of test_main(), which gives
 *   PROG NAME     run one test in this process (CTest registers each alone)
 *   PROG --list   print every name
 *   PROG --all    run every test, each in a child process with a time limit
 *                 (INFINIRT_TEST_TIMEOUT seconds, 120 by default), and print
 *                 "N passed, N failed, N skipped"; no argument does the same
 *   PROG --tap    the same run, reported as TAP version 13
 *   PROG --help   what these do and the environment they read, on stdout
 *   PROG --version  the infinirt version the program was built with
 * and --all ends by naming every test that failed.  Any other argument that
 * starts with '-' is a usage error (exit 2), unless the suite knows it
 * (test_suite.option).  A suite may add tests
 * generated from a table (test_rows, test_main_rows): one test per row.
 * tests/CMakeLists.txt registers every test of a list with CTest by one
 * function, infinirt_add_suite (tests/harness/CMakeLists.txt).
 */
#ifndef INFINIRT_TEST_H_
#define INFINIRT_TEST_H_

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_OK 0
#define TEST_FAIL 1
#define TEST_SKIP 77

typedef struct {
    const char *name;
    int (*fn)(void);
} test_case;

/* Table rows from a list: X(name) gives "name" -> test_name, X(group, name)
 * gives "group.name" -> test_group_name. */
#define TEST_ENTRY(name) {#name, test_##name},
#define TEST_ENTRY2(group, name) {#group "." #name, test_##group##_##name},
#define TEST_DECLARE(name) int test_##name(void);
#define TEST_DECLARE2(group, name) int test_##group##_##name(void);

typedef struct {
    const test_case *tests;
    size_t count;
    /* Optional, in the test's process after the test returned rc: the
     * verdict (the conformance suite opens the gates a test left closed and
     * fails a test whose gate timed out). */
    int (*finish)(int rc);
    /* Optional: run by a failed assertion before the process ends. */
    void (*on_failure)(void);
    /* Optional: the exit code of --all and --tap from the counts (default:
     * 1 when a test failed, else 0). */
    int (*after_all)(int passed, int failed, int skipped);
} test_suite;

#define TEST_SUITE_COUNT(table) (sizeof(table) / sizeof((table)[0]))

/* What a program adds to the runner's command line (test_set_cli), each
 * part optional. */
typedef struct {
    /* An argument starting with '-' (other than the runner's own, except
     * --version, which the program may answer itself): the program's exit
     * code, or -1 when the program does not know it either. */
    int (*option)(const char *arg);
    /* Before any test runs (a test by name, --all, --tap), in the runner's
     * process: 0, or the exit code to end with at once (a bad environment,
     * said on stderr).  It must not start what a forked child could not
     * use (the loader). */
    int (*check)(void);
    /* Lines --help prints after the runner's options (the program's own),
     * and after INFINIRT_TEST_TIMEOUT (the environment it reads); each
     * line "  NAME  what it does\n". */
    const char *help_options;
    const char *help_environment;
} test_cli;

/* Set before test_main: `cli` must live as long as the program. */
void test_set_cli(const test_cli *cli);

/* The shared main: see the top of this file.  Exit code: a test's own (0,
 * 1 or 77), or --all's verdict; 0 for --help, --version and --list; 2 for a
 * usage error or an unknown name; the suite's check's when it fails. */
int test_main(int argc, char **argv, const test_suite *suite);

/* A suite whose tests are the rows of a table (tests/bad_input/bad_input_tests.c):
 * `count` more tests after the suite's own, test i named name(i) (a string
 * that lives as long as the program, listed by --list and selected by NAME
 * like any other) and run by run(i), in the child process --all gives each
 * test.  The other fields say how every test of the program runs. */
typedef struct {
    size_t count;
    const char *(*name)(size_t i);
    int (*run)(size_t i);
    /* Seconds a test may run under --all and --tap (0: 120);
     * INFINIRT_TEST_TIMEOUT, when set, wins. */
    int timeout;
    /* --all and --tap: a test's stdout and stderr are kept in a file and
     * shown after its verdict only when it fails (as "# " lines in TAP). */
    int quiet;
    /* A test ends with _exit(): the exit-time work of the code under test
     * (atexit handlers, library destructors) is no part of it. */
    int quick_exit;
} test_rows;

/* test_main for a suite with rows (NULL: the same as test_main). */
int test_main_rows(int argc, char **argv, const test_suite *suite, const test_rows *rows);

/* What a failed assertion runs before the process ends (NULL: nothing). */
void test_set_failure_hook(void (*hook)(void));

/* Report a failed assertion at file:line and end the process (see above). */
__attribute__((noreturn, format(printf, 3, 4))) void test_fail_(const char *file, int line, const char *fmt, ...);

/* The name of an infiniStatus_t value ("SUCCESS", "BAD_PARAM", ...), from
 * the public header's INFINI_STATUS_MAP: what ASSERT_OK prints, for test
 * programs with and without the loader linked. */
const char *test_status_name(int status);

#define TEST_FAILED_(fmt, ...) test_fail_(__FILE__, __LINE__, fmt, __VA_ARGS__)
#define ASSERT(expr)                                     \
    do {                                                 \
        if (!(expr))                                     \
            TEST_FAILED_("%s", "assertion `" #expr "'"); \
    } while (0)

/* Integer comparisons: both operands are evaluated once, as intmax_t. */
#define ASSERT_CMP_(a, op, b)                                           \
    do {                                                                \
        intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);                \
        if (!(a_ op b_))                                                \
            TEST_FAILED_("%s %s %s (%jd vs %jd)", #a, #op, #b, a_, b_); \
    } while (0)
#define ASSERT_EQ(a, b) ASSERT_CMP_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_CMP_(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_CMP_(a, <, b)
#define ASSERT_LE(a, b) ASSERT_CMP_(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_CMP_(a, >, b)
#define ASSERT_GE(a, b) ASSERT_CMP_(a, >=, b)

#define ASSERT_PTR_EQ(a, b)                                          \
    do {                                                             \
        const void *a_ = (const void *)(a), *b_ = (const void *)(b); \
        if (a_ != b_)                                                \
            TEST_FAILED_("%s == %s (%p vs %p)", #a, #b, a_, b_);     \
    } while (0)
#define ASSERT_PTR_NE(a, b)                                          \
    do {                                                             \
        const void *a_ = (const void *)(a), *b_ = (const void *)(b); \
        if (a_ == b_)                                                \
            TEST_FAILED_("%s != %s (both %p)", #a, #b, a_);          \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                                              \
    do {                                                                                                 \
        const char *a_ = (a), *b_ = (b);                                                                 \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                                             \
            TEST_FAILED_("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)
#define ASSERT_STR_CONTAINS(hay, needle)                                                     \
    do {                                                                                     \
        const char *h_ = (hay), *n_ = (needle);                                              \
        if (h_ == NULL || strstr(h_, n_) == NULL)                                            \
            TEST_FAILED_("%s contains \"%s\" (it is \"%s\")", #hay, n_, h_ ? h_ : "(null)"); \
    } while (0)

/* Byte-compare two buffers; on mismatch print the first differing offset. */
#define ASSERT_MEM_EQ(a, b, n)                                                                                 \
    do {                                                                                                       \
        const unsigned char *a_ = (const unsigned char *)(a), *b_ = (const unsigned char *)(b);                \
        size_t n_ = (n);                                                                                       \
        for (size_t i_ = 0; i_ < n_; i_++)                                                                     \
            if (a_[i_] != b_[i_])                                                                              \
                TEST_FAILED_("%s and %s differ at byte %zu of %zu (0x%02x vs 0x%02x)", #a, #b, i_, n_, a_[i_], \
                             b_[i_]);                                                                          \
    } while (0)

/* An infinirt call that must succeed; prints the status name if not. */
#define ASSERT_OK(call)                                                             \
    do {                                                                            \
        int st_ = (int)(call);                                                      \
        if (st_ != 0)                                                               \
            TEST_FAILED_("%s returned %d (%s)", #call, st_, test_status_name(st_)); \
    } while (0)
/* An infinirt call that must return a given status. */
#define ASSERT_STATUS(call, want)                                                                    \
    do {                                                                                             \
        int st_ = (int)(call), w_ = (int)(want);                                                     \
        if (st_ != w_)                                                                               \
            TEST_FAILED_("%s returned %d (%s), want %d (%s)", #call, st_, test_status_name(st_), w_, \
                         test_status_name(w_));                                                      \
    } while (0)

/* Propagate a sub-check's skip (or a failure it returns without asserting). */
#define CHECK(call)        \
    do {                   \
        int r_ = (call);   \
        if (r_ != TEST_OK) \
            return r_;     \
    } while (0)

#endif /* INFINIRT_TEST_H_ */
