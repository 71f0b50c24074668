/* SPDX-License-Identifier: Apache-2.0 */
/*
 * noconfig_test.c - with no config file anywhere, the loader loads every
 * plugin found beside it; the drop-ins of the installed config's folder
 * (<prefix>/etc/infinirt/plugins.d) are read with or without a config
 * file, merged by name with those beside the config in use.
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

/* CMake registers each as loader.NAME. */
#define NOCONFIG_LIST(X)     \
    X(no_config)             \
    X(dropins_system_folder) \
    X(dropins_without_config)
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

/* A fresh prefix holding copies of the loader and its plugins, and an
 * empty home (no INFINIRT_CONFIG): the loader from there, dlopened. */
static void *make_prefix(char *prefix)
{
    char cmd[4096];
    if (mkdtemp(prefix) == NULL)
        return NULL;
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/lib/infinirt %s/home %s/etc/infinirt/plugins.d && cp %s %s/lib/libinfinirt.so && "
             "cp %s/*.so %s/lib/infinirt/",
             prefix, prefix, prefix, INFINIRT_LOADER_FILE, prefix, INFINIRT_PLUGIN_DIR, prefix);
    if (run(cmd) != 0)
        return NULL;
    unsetenv("INFINIRT_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
    snprintf(cmd, sizeof cmd, "%s/home", prefix);
    setenv("HOME", cmd, 1);
    return prefix;
}

static void write_at(const char *prefix, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", prefix, rel);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

typedef struct {
    infiniStatus_t (*dev_count)(infiniDevice_t, int *);
    infiniStatus_t (*entry_count)(int *);
    infiniStatus_t (*entry)(int, infinirtConfigEntry_t *);
    infiniStatus_t (*get_path)(const char **);
} loader_calls;

static int open_loader(const char *prefix, loader_calls *c)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/lib/libinfinirt.so", prefix);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        TEST_FAILED_("dlopen: %s", dlerror());
    *(void **)&c->dev_count = dlsym(h, "infinirtGetDeviceCount");
    *(void **)&c->entry_count = dlsym(h, "infinirtGetConfigEntryCount");
    *(void **)&c->entry = dlsym(h, "infinirtGetConfigEntry");
    *(void **)&c->get_path = dlsym(h, "infinirtGetConfigPath");
    ASSERT(c->dev_count && c->entry_count && c->entry && c->get_path);
    return TEST_OK;
}

/* The FILE entries of the config report, "name value" lines. */
static const char *files_read(const loader_calls *c)
{
    static char out[8192];
    int n = 0;
    size_t o = 0;
    out[0] = '\0';
    if (c->entry_count(&n) != INFINI_STATUS_SUCCESS)
        return "(no report)";
    for (int i = 0; i < n && o < sizeof out; i++) {
        infinirtConfigEntry_t e;
        if (c->entry(i, &e) == INFINI_STATUS_SUCCESS && e.kind == INFINIRT_CONFIG_ENTRY_FILE)
            o += (size_t)snprintf(out + o, sizeof out - o, "%s %s\n", e.name, e.value);
    }
    return out;
}

/* Drop-ins of the installed config's folder are read after the user's
 * config too, merged by name with those beside it: of two files of one
 * name, the one beside the config in use is read (here an empty one,
 * which hides the system's). */
int test_dropins_system_folder(void)
{
#ifdef INFINIRT_FHS_BUILD
    return TEST_SKIP; /* the loader reads /etc/infinirt/plugins.d, whatever the prefix */
#endif
    char prefix[] = "/tmp/infinirt-dropins-XXXXXX", want[4096];
    ASSERT(make_prefix(prefix) != NULL);
    write_at(prefix, "etc/infinirt/plugins.d/50-sys.ini", "[plugin.cpu]\ndevices = 2\n");
    write_at(prefix, "etc/infinirt/plugins.d/60-masked.ini", "[plugin.cpu]\ndevices = 7\n");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/home/.config/infinirt/plugins.d", prefix);
    ASSERT_EQ(run(cmd), 0);
    write_at(prefix, "home/.config/infinirt/infinirt.ini", "[loader]\nplugins = cpu\n");
    write_at(prefix, "home/.config/infinirt/plugins.d/60-masked.ini", "");
    write_at(prefix, "home/.config/infinirt/plugins.d/70-user.ini", "[plugin.cpu]\nstreams = inline\n");
    loader_calls c;
    CHECK(open_loader(prefix, &c));
    int n = 0;
    ASSERT_EQ(c.dev_count(INFINI_DEVICE_CPU, &n), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(n, 2);
    snprintf(want, sizeof want,
             "config %s/home/.config/infinirt/infinirt.ini\n"
             "drop-in %s/etc/infinirt/plugins.d/50-sys.ini\n"
             "drop-in %s/home/.config/infinirt/plugins.d/60-masked.ini\n"
             "drop-in %s/home/.config/infinirt/plugins.d/70-user.ini\n",
             prefix, prefix, prefix, prefix);
    ASSERT_STR_EQ(files_read(&c), want);
    snprintf(cmd, sizeof cmd, "rm -rf %s", prefix);
    run(cmd);
    return TEST_OK;
}

/* With no config file at all, the installed folder's drop-ins still count
 * (a package adds its plugin there). */
int test_dropins_without_config(void)
{
#ifdef INFINIRT_FHS_BUILD
    return TEST_SKIP; /* the loader reads /etc/infinirt/plugins.d, whatever the prefix */
#endif
    char prefix[] = "/tmp/infinirt-dropins-XXXXXX", want[2048];
    ASSERT(make_prefix(prefix) != NULL);
    write_at(prefix, "etc/infinirt/plugins.d/50-sys.ini", "[plugin.cpu]\ndevices = 3\n");
    loader_calls c;
    CHECK(open_loader(prefix, &c));
    int n = 0;
    ASSERT_EQ(c.dev_count(INFINI_DEVICE_CPU, &n), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(n, 3);
    const char *path = "unset";
    ASSERT_EQ(c.get_path(&path), INFINI_STATUS_SUCCESS);
    ASSERT_STR_EQ(path, "");
    snprintf(want, sizeof want, "drop-in %s/etc/infinirt/plugins.d/50-sys.ini\n", prefix);
    ASSERT_STR_EQ(files_read(&c), want);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", prefix);
    run(cmd);
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {NOCONFIG_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
