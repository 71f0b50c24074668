/*
 * selftest.c - a suite whose verdicts are known, run by selftest.sh to prove
 * the harness: a failed assertion ends the test (and nothing after it runs,
 * not even atexit handlers) after the failure hook; a skip is 77; a test that
 * hangs is killed at the time limit; --tap speaks TAP.
 */
#define _POSIX_C_SOURCE 200809L
#include "selftest_list.h"
#include "test.h"

#include <pthread.h>
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

int main(int argc, char **argv)
{
    static const test_case tests[] = {SELFTEST_LIST(TEST_ENTRY2)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, on_failure, NULL};
    return test_main(argc, argv, &suite);
}
