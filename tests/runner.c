/*
 * runner.c - the single test runner.  `infinirt-tests NAME` runs one test;
 * `infinirt-tests --list` prints every name (CMake registers each one with
 * CTest on its own, so one failing test never hides another).
 */
#include "common.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*fn)(void);
} entry;

static const entry k_tests[] = {
#define ENTRY(group, name) {#group "." #name, test_##group##_##name},
    TEST_LIST(ENTRY)
#undef ENTRY
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TEST | --list\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < sizeof k_tests / sizeof k_tests[0]; i++)
            printf("%s\n", k_tests[i].name);
        return 0;
    }
    for (size_t i = 0; i < sizeof k_tests / sizeof k_tests[0]; i++) {
        if (strcmp(argv[1], k_tests[i].name) == 0) {
            int rc = k_tests[i].fn();
            fprintf(stderr, "%s: %s\n", k_tests[i].name,
                    rc == TEST_OK ? "ok" : rc == TEST_SKIP ? "skipped" : "FAILED");
            return rc;
        }
    }
    fprintf(stderr, "no test named %s\n", argv[1]);
    return 2;
}
