/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selftest.c - a suite whose verdicts are known, run by selftest.sh to prove
 * the harness: a failed assertion ends the test (and nothing after it runs,
 * not even atexit handlers) after the failure hook; a skip is 77; a test that
 * hangs is killed at the time limit; --tap speaks TAP.  With
 * HARNESS_SELFTEST_ROWS=1 the suite is selftest.pass and four rows of a
 * table (test_main_rows): quiet, ended by _exit, with a limit of their own
 * (1 s, or HARNESS_SELFTEST_ROW_TIMEOUT seconds: selftest.sh raises it on a
 * machine too loaded for 1 s).
 */
#define _POSIX_C_SOURCE 200809L
#include "selftest_list.h"
#include "test.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

SELFTEST_LIST(TEST_DECLARE2)

static void said_at_exit(void)
{
    fprintf(stderr, "selftest: atexit ran\n");
}

int test_selftest_pass(void)
{
    ASSERT_EQ(1 + 1, 2);
    ASSERT_STR_EQ("a", "a");
    return TEST_OK;
}

int test_selftest_fail(void)
{
    atexit(said_at_exit);
    int two = 2;
    ASSERT_EQ(two + 1, 4);
    fprintf(stderr, "selftest: after the failed assertion\n");
    return TEST_OK;
}

int test_selftest_skip(void)
{
    return TEST_SKIP;
}

int test_selftest_hang(void)
{
    for (;;)
        pause();
}

static void *fail_in_thread(void *arg)
{
    (void)arg;
    ASSERT_STATUS(0, 3);
    return NULL;
}

/* An assertion in another thread ends the whole test. */
int test_selftest_thread_fail(void)
{
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, fail_in_thread, NULL), 0);
    pthread_join(th, NULL);
    for (;;)
        pause();
}

static void on_failure(void)
{
    fprintf(stderr, "selftest: failure hook ran\n");
}

/* The rows: each says something on stdout and stderr, which --all shows
 * only for the ones that fail, and leaves an atexit handler that _exit must
 * not run. */
static const char *const k_row_names[] = {"row/pass", "row/fail", "row/skip", "row/hang"};

static const char *row_name(size_t i)
{
    return k_row_names[i];
}

static int row_run(size_t i)
{
    atexit(said_at_exit);
    printf("%s stdout\n", k_row_names[i]);
    if (i == 3) /* killed: what it did not flush is lost */
        fflush(stdout);
    fprintf(stderr, "%s stderr\n", k_row_names[i]);
    switch (i) {
    case 0:
        return TEST_OK;
    case 1:
        return TEST_FAIL;
    case 2:
        return TEST_SKIP;
    default:
        for (;;)
            pause();
    }
}

/* The rows' own time limit in seconds. */
static int row_timeout(void)
{
    const char *v = getenv("HARNESS_SELFTEST_ROW_TIMEOUT");
    int n = v != NULL ? atoi(v) : 0;
    return n > 0 ? n : 1;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {SELFTEST_LIST(TEST_ENTRY2)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, on_failure, NULL};
    const char *rows_on = getenv("HARNESS_SELFTEST_ROWS");
    if (rows_on != NULL && strcmp(rows_on, "1") == 0) {
        const test_suite own = {tests, 1, NULL, on_failure, NULL}; /* selftest.pass */
        const test_rows rows = {.count = TEST_SUITE_COUNT(k_row_names),
                                .name = row_name,
                                .run = row_run,
                                .timeout = row_timeout(),
                                .quiet = 1,
                                .quick_exit = 1};
        return test_main_rows(argc, argv, &own, &rows);
    }
    return test_main(argc, argv, &suite);
}
