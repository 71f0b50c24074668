/* SPDX-License-Identifier: Apache-2.0 */
/*
 * secure_plugin_test.c - in a setuid/setgid process the loader refuses a
 * plugin file that another user could have changed, and still loads the
 * safe ones.
 *
 * The loader asks getauxval(AT_SECURE) whether the process runs with
 * privileges its caller does not have; this program defines getauxval, so
 * the loader's call reaches it and hears "yes" (glibc's own secure_getenv
 * reads its internal flag, so INFINIRT_CONFIG still steers this test).
 * It defines secure_getenv too, answering as glibc's does in such a
 * process (NULL) for every variable but the three these tests steer the
 * loader with: so the environment overrides are shown to be read with
 * secure_getenv, and ignored there.
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

__attribute__((visibility("default"))) char *secure_getenv(const char *name)
{
    static const char *const steering[] = {"INFINIRT_CONFIG", "INFINIRT_LOG", "INFINIRT_LOG_FILE"};
    for (size_t i = 0; i < sizeof steering / sizeof steering[0]; i++)
        if (strcmp(name, steering[i]) == 0)
            return getenv(name);
    return NULL;
}

/* CMake registers each as loader.NAME. */
#define SECURE_LIST(X)              \
    X(secure_refuses_unsafe_plugin) \
    X(secure_ignores_environment)
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

/* In a setuid/setgid process the environment overrides are ignored, each
 * reported so (a warning, and its report entry), without its value. */
int test_secure_ignores_environment(void)
{
    const char *cpu = CPU_PLUGIN, *fake = FAKE_PLUGIN;
    char dir[] = "/tmp/infinirt-secure-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char cfg[256], log[256], lib[256], cmd[1200], text[1400];
    snprintf(lib, sizeof lib, "%s/libinfinirt_extra.so", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fake, lib);
    ASSERT_EQ(system(cmd), 0);
    snprintf(cfg, sizeof cfg, "%s/infinirt.ini", dir);
    snprintf(log, sizeof log, "%s/infinirt.log", dir);
    snprintf(text, sizeof text, "[loader]\nplugins = cpu\n[plugin.cpu]\nlibrary = %s\ndevices = 2\n", cpu);
    FILE *f = fopen(cfg, "w");
    ASSERT(f != NULL);
    fputs(text, f);
    fclose(f);
    setenv("INFINIRT_CONFIG", cfg, 1);
    setenv("INFINIRT_LOG_FILE", log, 1);
    /* Each would change what loads, were it obeyed. */
    setenv("INFINIRT_PLUGINS", "cpu,extra", 1);
    setenv("INFINIRT_PLUGIN_PATH", dir, 1);
    setenv("INFINIRT_VISIBLE_DEVICES", "cpu:", 1);

    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n));
    ASSERT_EQ(n, 2);
    ASSERT_OK(infinirtGetPluginCount(&n));
    for (int i = 0; i < n; i++) {
        infinirtPluginInfo_t pi;
        ASSERT_OK(infinirtGetPluginInfo(i, &pi));
        if (strcmp(pi.name, "cpu") == 0)
            ASSERT_STR_EQ(pi.path, cpu);
        else
            ASSERT_EQ(pi.status, INFINIRT_PLUGIN_DISABLED); /* extra is not even found */
        ASSERT(strcmp(pi.name, "extra") != 0);
    }
    static const char *const ignored[] = {"INFINIRT_PLUGINS", "INFINIRT_PLUGIN_PATH", "INFINIRT_VISIBLE_DEVICES"};
    int count = 0, seen = 0;
    ASSERT_OK(infinirtGetConfigEntryCount(&count));
    for (int i = 0; i < count; i++) {
        infinirtConfigEntry_t e;
        ASSERT_OK(infinirtGetConfigEntry(i, &e));
        for (size_t k = 0; k < 3; k++) {
            if (e.kind == INFINIRT_CONFIG_ENTRY_ENVIRONMENT && strcmp(e.name, ignored[k]) == 0) {
                seen++;
                ASSERT_STR_EQ(e.value, "");
                ASSERT_EQ(e.problem, 1);
                ASSERT_STR_CONTAINS(e.message, "set, but ignored: a setuid or setgid process");
            }
        }
    }
    ASSERT_EQ(seen, 3);
    FILE *lf = fopen(log, "r");
    ASSERT(lf != NULL);
    static char logtext[65536];
    logtext[fread(logtext, 1, sizeof logtext - 1, lf)] = '\0';
    fclose(lf);
    ASSERT_STR_CONTAINS(logtext, "warn: INFINIRT_VISIBLE_DEVICES is set but ignored: a setuid or setgid process");
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
