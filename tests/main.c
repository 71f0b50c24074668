/*
 * main.c - infinirt-tests, the suite of test_list.h, on the shared runner
 * (harness/test.h: NAME, --list, --all, --tap).  Built with
 * TC_CONFORMANCE_ONLY it is infinirt-conformance, the installed conformance
 * suite that plugin authors run against their backend.
 */
#include "common.h"

#include <stdio.h>

/* After each test, in its process: open the gates a test that returned
 * early left closed, and fail a test whose gate timed out. */
static int finish(int rc)
{
    tc_open_all_gates();
    return tc_gate_verdict(rc);
}

/* --all fails when a test failed, and when there was no INFINIRT_TEST_DEVICE
 * device (nothing was tested). */
static int after_all(int passed, int failed, int skipped)
{
    if (failed)
        return 1;
    /* A suite that found no device to run on proved nothing (the few tests
     * that need none may pass); it must not read as a pass.  One test run
     * alone still answers 77, which CTest counts as a skip. */
    int n = 0;
    infiniDevice_t t = tc_device_type();
    if (infinirtGetDeviceCount(t, &n) != INFINI_STATUS_SUCCESS)
        n = 0;
    if (n == 0 || passed == 0) {
        fprintf(stderr,
                "nothing was tested: %d of %d tests skipped and no test ran on a device; INFINIRT_TEST_DEVICE "
                "names %s, of which %d device(s) found (see infinirt-info)\n",
                skipped, passed + failed + skipped, infinirtGetDeviceTypeName(t), n);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
#ifdef TC_CONFORMANCE_ONLY
        CONFORMANCE_LIST(TEST_ENTRY2)
#else
        TEST_LIST(TEST_ENTRY2)
#endif
    };
    /* A failed assertion opens every gate before the process ends: a held
     * stream's host function may still be waiting on one. */
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), finish, tc_open_all_gates, after_all};
    return test_main(argc, argv, &suite);
}
