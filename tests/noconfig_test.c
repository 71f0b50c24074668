/*
 * noconfig_test.c - with no config file anywhere, the loader loads every
 * plugin found beside it.
 *
 * The loader and its plugins are copied into a fresh prefix and dlopened
 * from there: this program does not link libinfinirt, because the dynamic
 * linker would hand back the already-loaded build-tree copy (same SONAME).
 */
#define _GNU_SOURCE
#include "infinirt.h"
#include "test.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The one test; CMake registers it as loader.no_config. */
#define NOCONFIG_LIST(X) X(no_config)
NOCONFIG_LIST(TEST_DECLARE)

static int run(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

int test_no_config(void)
{
    const char *loader_file = INFINIRT_LOADER_FILE, *plugin_dir = INFINIRT_PLUGIN_DIR;
    char prefix[] = "/tmp/infinirt-noconfig-XXXXXX";
    ASSERT(mkdtemp(prefix) != NULL);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/lib/infinirt %s/home && cp %s %s/lib/libinfinirt.so && cp %s/*.so %s/lib/infinirt/", prefix,
             prefix, loader_file, prefix, plugin_dir, prefix);
    ASSERT_EQ(run(cmd), 0);
    /* Nothing to find: no INFINIRT_CONFIG, an empty home, no etc/ beside. */
    unsetenv("INFINIRT_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
    snprintf(cmd, sizeof cmd, "%s/home", prefix);
    setenv("HOME", cmd, 1);

    snprintf(cmd, sizeof cmd, "%s/lib/libinfinirt.so", prefix);
    void *h = dlopen(cmd, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        TEST_FAILED_("dlopen: %s", dlerror());
    infiniStatus_t (*get_path)(const char **);
    infiniStatus_t (*count)(int *);
    infiniStatus_t (*info)(int, infinirtPluginInfo_t *);
    infiniStatus_t (*dev_count)(infiniDevice_t, int *);
    *(void **)&get_path = dlsym(h, "infinirtGetConfigPath");
    *(void **)&count = dlsym(h, "infinirtGetPluginCount");
    *(void **)&info = dlsym(h, "infinirtGetPluginInfo");
    *(void **)&dev_count = dlsym(h, "infinirtGetDeviceCount");
    ASSERT(get_path && count && info && dev_count);

    const char *path = "unset";
    ASSERT_EQ(get_path(&path), INFINI_STATUS_SUCCESS);
    ASSERT_STR_EQ(path, ""); /* the embedded default */
    int n = 0, found_cpu = 0;
    ASSERT_EQ(count(&n), INFINI_STATUS_SUCCESS);
    ASSERT_GE(n, 1);
    for (int i = 0; i < n; i++) {
        infinirtPluginInfo_t pi;
        ASSERT_EQ(info(i, &pi), INFINI_STATUS_SUCCESS);
        ASSERT_STR_CONTAINS(pi.path, prefix); /* found beside the copied loader */
        if (strcmp(pi.name, "cpu") == 0) {
            found_cpu = 1;
            ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
        }
    }
    ASSERT_EQ(found_cpu, 1);
    int c = 0;
    ASSERT_EQ(dev_count(INFINI_DEVICE_CPU, &c), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(c, 1);
    snprintf(cmd, sizeof cmd, "rm -rf %s", prefix);
    run(cmd);
    fprintf(stderr, "noconfig: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {NOCONFIG_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
