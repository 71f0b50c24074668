/*
 * secure_plugin_test.c - in a setuid/setgid process the loader refuses a
 * plugin file that another user could have changed, and still loads the
 * safe ones.
 *
 * The loader asks getauxval(AT_SECURE) whether the process runs with
 * privileges its caller does not have; this program defines getauxval, so
 * the loader's call reaches it and hears "yes" (glibc's own secure_getenv
 * reads its internal flag, so INFINIRT_CONFIG still steers this test).
 * The plugins: CPU_PLUGIN and FAKE_PLUGIN, from the build.
 */
#define _GNU_SOURCE
#include "infinirt.h"
#include "test.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((visibility("default"))) unsigned long getauxval(unsigned long type)
{
    if (type == AT_SECURE)
        return 1;
    unsigned long (*real)(unsigned long);
    void *sym = dlsym(RTLD_NEXT, "getauxval");
    memcpy(&real, &sym, sizeof real);
    return real != NULL ? real(type) : 0;
}

/* The one test; CMake registers it as loader.secure_refuses_unsafe_plugin. */
#define SECURE_LIST(X) X(secure_refuses_unsafe_plugin)
SECURE_LIST(TEST_DECLARE)

int test_secure_refuses_unsafe_plugin(void)
{
    const char *cpu = CPU_PLUGIN, *fake = FAKE_PLUGIN;
    char dir[] = "/tmp/infinirt-secure-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char lib[256], cfg[256], cmd[1200], text[1400];
    snprintf(lib, sizeof lib, "%s/libopen.so", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fake, lib);
    ASSERT_EQ(system(cmd), 0);
    ASSERT_EQ(chmod(lib, 0666), 0);
    snprintf(cfg, sizeof cfg, "%s/infinirt.ini", dir);
    snprintf(text, sizeof text, "[plugin.cpu]\nlibrary = %s\n\n[plugin.open]\nlibrary = %s\nanswer = 42\n", cpu, lib);
    FILE *f = fopen(cfg, "w");
    ASSERT(f != NULL);
    fputs(text, f);
    fclose(f);
    setenv("INFINIRT_CONFIG", cfg, 1);

    /* Every plugin found beside the loader is listed too: look ours up. */
    int n = 0, seen = 0;
    ASSERT_OK(infinirtGetPluginCount(&n));
    for (int i = 0; i < n; i++) {
        infinirtPluginInfo_t pi;
        ASSERT_OK(infinirtGetPluginInfo(i, &pi));
        if (strcmp(pi.name, "open") == 0) {
            seen++;
            ASSERT_EQ(pi.status, INFINIRT_PLUGIN_DLOPEN_ERROR);
            ASSERT_STR_CONTAINS(pi.message, "world-writable");
            ASSERT_STR_CONTAINS(pi.message, "refused in a setuid/setgid process");
        } else if (strcmp(pi.name, "cpu") == 0) {
            seen++;
            ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
        }
    }
    ASSERT_EQ(seen, 2);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)system(cmd);
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {SECURE_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
