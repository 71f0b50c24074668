/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - infinirt-tests, the suite of test_list.h, on the shared runner
 * (harness/test.h: NAME, --list, --all, --tap, --help, --version; and
 * --features).  Built with
 * TC_CONFORMANCE_ONLY it is infinirt-conformance, the installed conformance
 * suite that plugin authors run against their backend.
 */
#include "common.h"
#include "infinirt_plugin.h" /* INFINIRT_PLUGIN_ABI_*, for --version */

#include <stdio.h>
#include <string.h>

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

#ifdef TC_CONFORMANCE_ONLY
#define PROG "infinirt-conformance"
#else
#define PROG "infinirt-tests"
#endif

/* What only this suite answers: --features (each feature a plugin may
 * declare unsupported, and what it means), --version (the loader's too). */
static int option(const char *arg)
{
    if (strcmp(arg, "--features") == 0) {
        printf("Features a plugin may lack, declared in INFINIRT_TEST_UNSUPPORTED (comma-separated);\n"
               "a test that needs one skips where it is declared and fails where it is not:\n");
        for (int f = 0; f < TC_FEATURE_COUNT; f++)
            printf("  %-15s %s\n", tc_feature_name((tc_feature)f), tc_feature_meaning((tc_feature)f));
        return 0;
    }
    if (strcmp(arg, "--version") == 0) {
        int major = 0, minor = 0, patch = 0;
        infinirtGetVersion(&major, &minor, &patch); /* the library loaded, which may be newer */
        printf(PROG " (infinirt) %d.%d.%d; libinfinirt %d.%d.%d; plugin ABI %d.%d\n", INFINIRT_VERSION_MAJOR,
               INFINIRT_VERSION_MINOR, INFINIRT_VERSION_PATCH, major, minor, patch, INFINIRT_PLUGIN_ABI_MAJOR,
               INFINIRT_PLUGIN_ABI_MINOR);
        return 0;
    }
    return -1;
}

static const char k_help_options[] =
    "  --features list the features a plugin may declare unsupported, and what each is\n";

static const char k_help_environment[] =
    "  INFINIRT_TEST_DEVICE  the device type under test: cpu (the default), nvidia (or\n"
    "             cuda), opencl, ascend, kunlun, ... (a type's name; the tests use its\n"
    "             devices 0 and 1); --all fails when it has no device\n"
    "  INFINIRT_TEST_UNSUPPORTED  the features the plugin under test lacks, comma-separated\n"
    "             (see --features), e.g. streams,events,memset; the in-tree plugins'\n"
    "             are known without it\n"
    "  INFINIRT_CONFIG  the config file that names the plugins (README, \"Configuration\"):\n"
    "             [plugin.NAME] library = /path/to/libyourplugin.so\n"
    "  INFINIRT_LOG  how much the loader logs (error, warn, info, debug)\n";

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
    static const test_cli cli = {option, tc_check_environment, k_help_options, k_help_environment};
    test_set_cli(&cli);
    return test_main(argc, argv, &suite);
}
