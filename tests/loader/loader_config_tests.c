/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader_config_tests.c - how the loader finds and reads its config: the
 * INFINIRT_CONFIG and XDG locations, relative library paths, malformed
 * files, comments, size suffixes and the default device.  Each test is its
 * own process and writes its config before its first infinirt call.
 */
#define _GNU_SOURCE
#include "loader_tests.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
int test_loader_malformed_ini(void)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "; comment\n"                    /* 1 */
             "[loader]\n"                     /* 2 */
             "this line has no equals sign\n" /* 3 */
             "colour = blue\n"                /* 4: unknown loader key */
             "default_device = gpu-ish\n"     /* 5 */
             "[plugin.cpu\n"                  /* 6: no closing bracket */
             "[plugin.cpu]\n"                 /* 7 */
             "library = %s\n"                 /* 8 */
             "devices = 2\n"                  /* 9: read despite the errors above */
             "[allocator]\n"                  /* 10 */
             "granularity = 300\n",           /* 11: not a power of two */
             CPU_PLUGIN);
    use_config(cfg);
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n));
    ASSERT_EQ(n, 2);
    const char *cfgpath = getenv("INFINIRT_CONFIG");
    char resolved[PATH_MAX], want[PATH_MAX + 64];
    ASSERT(realpath(cfgpath, resolved) != NULL);
    const char *log = tc_read_file(log_path());
    snprintf(want, sizeof want, "%s:3: not a [section] header, a KEY = VALUE line or a comment", resolved);
    ASSERT_STR_CONTAINS(log, want);
    snprintf(want, sizeof want, "%s:4: [loader] unknown key 'colour' ignored", resolved);
    ASSERT_STR_CONTAINS(log, want);
    snprintf(want, sizeof want, "%s:5: [loader] default_device = 'gpu-ish': not TYPE[:ID]", resolved);
    ASSERT_STR_CONTAINS(log, want);
    snprintf(want, sizeof want, "%s:6: section header without a closing ']'", resolved);
    ASSERT_STR_CONTAINS(log, want);
    snprintf(want, sizeof want,
             "%s:11: [allocator] granularity = '300': granularity must be a power of two "
             "up to 1G; using 512",
             resolved);
    ASSERT_STR_CONTAINS(log, want);
    return TEST_OK;
}

int test_loader_config_env(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[loader]\ndefault_device = cpu:2\n[plugin.cpu]\nlibrary = %s\ndevices = 3\n",
             CPU_PLUGIN);
    use_config(cfg);
    const char *path = NULL;
    ASSERT_OK(infinirtGetConfigPath(&path));
    char resolved[PATH_MAX];
    ASSERT(realpath(getenv("INFINIRT_CONFIG"), resolved) != NULL);
    ASSERT_STR_EQ(path, resolved);
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(t, INFINI_DEVICE_CPU);
    ASSERT_EQ(id, 2);
    return TEST_OK;
}

/* Plugin paths in a file are relative to that file. */
int test_loader_relative_library(void)
{
    char dir[600], link[700];
    snprintf(dir, sizeof dir, "%s/plugins", tc_temp_dir());
    ASSERT_EQ(mkdir(dir, 0755), 0);
    snprintf(link, sizeof link, "%s/libinfinirt_cpu.so", dir);
    ASSERT_EQ(symlink(CPU_PLUGIN, link), 0);
    use_config("[plugin.cpu]\nlibrary = plugins/libinfinirt_cpu.so\n");
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_STR_CONTAINS(pi.path, tc_temp_dir());
    return cpu_still_works();
}

/* INFINIRT_CONFIG names a file that does not exist: the operator asked
 * for that file, so infinirt does not start with another one; the error
 * names the file and what is wrong. */
int test_loader_config_env_missing(void)
{
    tc_setenv("INFINIRT_CONFIG", "/nonexistent/infinirt.ini");
    tc_setenv("INFINIRT_LOG_FILE", log_path());
    tc_setenv("XDG_CONFIG_HOME", tc_temp_dir());
    int n = -1;
    ASSERT_STATUS(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n), INFINI_STATUS_DEVICE_NOT_INITIALIZED);
    ASSERT_EQ(n, -1);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()),
                        "error: INFINIRT_CONFIG=/nonexistent/infinirt.ini does not exist; infinirt does not start");
    return TEST_OK;
}

/* The user's XDG config is read when INFINIRT_CONFIG is unset. */
int test_loader_xdg_config(void)
{
    char dir[600], path[700], cfg[1024];
    snprintf(dir, sizeof dir, "%s/infinirt", tc_temp_dir());
    ASSERT_EQ(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/infinirt.ini", dir);
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 4\n", CPU_PLUGIN);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs(cfg, f);
    fclose(f);
    unsetenv("INFINIRT_CONFIG");
    tc_setenv("XDG_CONFIG_HOME", tc_temp_dir());
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n));
    ASSERT_EQ(n, 4);
    const char *used;
    ASSERT_OK(infinirtGetConfigPath(&used));
    ASSERT_STR_CONTAINS(used, "/infinirt/infinirt.ini");
    return TEST_OK;
}

/* Size suffixes G and T, in the cpu plugin's memory_limit and in the
 * allocator's size keys (KiB-style spellings too). */
int test_loader_size_suffix_g(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[allocator]\nmax_cached = 2T\nmax_split_size = 3GiB\ngranularity = 1K\n\n"
             "[plugin.cpu]\nlibrary = %s\nmemory_limit = 1G\n",
             CPU_PLUGIN);
    use_config(cfg);
    infinirtAllocatorSettings_t a;
    ASSERT_OK(infinirtGetAllocatorSettings(&a));
    ASSERT_EQ(a.max_cached_bytes, (size_t)2 << 40);
    ASSERT_EQ(a.max_split_size, (size_t)3 << 30);
    ASSERT_EQ(a.granularity, 1024);
    size_t free_b, total;
    ASSERT_OK(infinirtGetMemInfo(INFINI_DEVICE_CPU, 0, &free_b, &total));
    ASSERT_EQ(total, (size_t)1 << 30); /* every test machine has more than 1 GiB */
    ASSERT(strstr(tc_read_file(log_path()), "is not a size") == NULL);
    return TEST_OK;
}

int test_loader_size_suffix_t(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[allocator]\nmax_cached = 5G\nmax_split_size = 1t\n\n[plugin.cpu]\nlibrary = %s\nmemory_limit = 2T\n",
             CPU_PLUGIN);
    use_config(cfg);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    if (pi.status != INFINIRT_PLUGIN_LOADED)
        TEST_FAILED_("plugin cpu: %s (%s)", infinirtGetPluginStatusString(pi.status), pi.message);
    infinirtAllocatorSettings_t a;
    ASSERT_OK(infinirtGetAllocatorSettings(&a));
    ASSERT_EQ(a.max_cached_bytes, (size_t)5 << 30);
    ASSERT_EQ(a.max_split_size, (size_t)1 << 40);
    /* The limit is larger than the machine, so only the description shows it. */
    infinirtDeviceProperties_t p;
    ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_CPU, 0, &p));
    ASSERT_STR_CONTAINS(p.description, "memory_limit 2199023255552 bytes");
    return TEST_OK;
}

/* '#' and ';' comments: whole lines, indented, and after a value. */
int test_loader_comments(void)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "# a hash comment first\n"
             "; a semicolon comment\n"
             "[loader]  # after a section header\n"
             "   # an indented comment\n"
             "default_device = cpu:2   # inline, after spaces\n"
             "[allocator]\n"
             "max_split_size = 2M\t; inline, after a tab\n"
             "granularity = 4K # inline\n"
             "[plugin.cpu]\n"
             "# library = /nonexistent/commented-out.so\n"
             "library = %s\n"
             "devices = 3 # three devices\n"
             "memory_limit = 64M ; per device\n",
             CPU_PLUGIN);
    use_config(cfg);
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n));
    ASSERT_EQ(n, 3);
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(t, INFINI_DEVICE_CPU);
    ASSERT_EQ(id, 2);
    infinirtAllocatorSettings_t a;
    ASSERT_OK(infinirtGetAllocatorSettings(&a));
    ASSERT_EQ(a.max_split_size, (size_t)2 << 20);
    ASSERT_EQ(a.granularity, 4096);
    size_t free_b, total;
    ASSERT_OK(infinirtGetMemInfo(INFINI_DEVICE_CPU, 0, &free_b, &total));
    ASSERT_EQ(total, (size_t)64 << 20);
    /* No line of it was taken for a malformed one or an unknown key. */
    const char *log = tc_read_file(log_path());
    ASSERT(strstr(log, "malformed") == NULL);
    ASSERT(strstr(log, "unknown") == NULL);
    ASSERT(strstr(log, "is not") == NULL);
    return TEST_OK;
}
static void *default_of_new_thread(void *arg)
{
    int *out = arg;
    infiniDevice_t t;
    if (infinirtGetDevice(&t, &out[1]) == INFINI_STATUS_SUCCESS)
        out[0] = (int)t;
    return NULL;
}

/* A default_device id that does not exist is warned about and falls back
 * to cpu:0, on every thread. */
int test_loader_default_device_missing(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[loader]\ndefault_device = cpu:7\n[plugin.cpu]\nlibrary = %s\ndevices = 2\n",
             CPU_PLUGIN);
    use_config(cfg);
    infiniDevice_t t = INFINI_DEVICE_TYPE_COUNT;
    int id = -1;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(t, INFINI_DEVICE_CPU);
    ASSERT_EQ(id, 0);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), "default_device cpu:7 does not exist");
    int other[2] = {-1, -1};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, default_of_new_thread, other), 0);
    pthread_join(th, NULL);
    ASSERT_EQ(other[0], INFINI_DEVICE_CPU);
    ASSERT_EQ(other[1], 0);
    /* The fallback device works. */
    void *p;
    ASSERT_OK(infinirtMalloc(&p, 64));
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

/* A negative default_device id is malformed: warned about and ignored, so
 * the current device stays cpu:0 (never device -1 of the table). */
int test_loader_default_device_negative(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[loader]\ndefault_device = cpu:-1\n[plugin.cpu]\nlibrary = %s\ndevices = 2\n",
             CPU_PLUGIN);
    use_config(cfg);
    infiniDevice_t t = INFINI_DEVICE_TYPE_COUNT;
    int id = -1;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(t, INFINI_DEVICE_CPU);
    ASSERT_EQ(id, 0);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), "[loader] default_device = 'cpu:-1': not TYPE[:ID]");
    void *p;
    ASSERT_OK(infinirtMalloc(&p, 64));
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

/* ------------------------------------------------ INFINIRT_VISIBLE_DEVICES */

/* INFINIRT_VISIBLE_DEVICES=cpu:3,1 serves the cpu plugin's devices 3 and 1
 * (of the 4 the config asks for) as cpu:0 and cpu:1, in that order; a type
 * it does not name keeps every device. */
int test_loader_visible_devices(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\ndevices = 4\n\n[plugin.fake]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\ndevices = 2\n",
             CPU_PLUGIN);
    use_config(cfg);
    tc_setenv("INFINIRT_VISIBLE_DEVICES", "cpu:3,1");
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n));
    ASSERT_EQ(n, 2);
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_ASCEND, &n));
    ASSERT_EQ(n, 2);
    infinirtDeviceProperties_t p;
    ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_CPU, 0, &p));
    ASSERT_STR_CONTAINS(p.description, "logical device 3 of 4");
    ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_CPU, 1, &p));
    ASSERT_STR_CONTAINS(p.description, "logical device 1 of 4");
    ASSERT_STATUS(infinirtGetDeviceProperties(INFINI_DEVICE_CPU, 2, &p), INFINI_STATUS_DEVICE_NOT_FOUND);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.device_count, 2);
    ASSERT_STR_CONTAINS(pi.message,
                        "INFINIRT_VISIBLE_DEVICES shows 2 of its 4 devices: cpu:0 is its 3, cpu:1 is its 1");
    /* The renumbered device works, and its memory is its own. */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 1));
    char a[64], b[64];
    tc_pattern(a, sizeof a, 9);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, sizeof a));
    ASSERT_OK(infinirtMemcpy(d, a, sizeof a, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(b, d, sizeof a, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, sizeof a);
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 1, &st));
    ASSERT_GE(st.allocated_bytes, sizeof a);
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
    ASSERT_EQ(st.allocated_bytes, 0);
    ASSERT_OK(infinirtFree(d));
    /* The allocator knows a block's device by the loader's id (cpu:0 is
     * the plugin's 3, which is no id of the loader's). */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtMalloc(&d, sizeof a));
    void *native = NULL;
    size_t off = 1;
    ASSERT_OK(infinirtMemGetNativeHandle(d, &native, &off));
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

static const char *ledger_take(const char *path)
{
    const char *t = ledger_text(path);
    unlink(path);
    return t;
}

/* Renumbered devices: every plugin call gets the plugin's own index, and
 * memory the plugin places on one of its devices is found under the id
 * the loader gave it; memory of a device the variable hides is routed as
 * memory the plugin cannot place (to the current device).  The fake
 * plugin (ascend, 3 devices) logs each call with the device it received. */
int test_loader_visible_renumbers_calls(void)
{
    char ledger[600], cfg[2048];
    snprintf(ledger, sizeof ledger, "%s/fake.ledger", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\n\n[plugin.ptrdev]\nlibrary = " FAKE_DIR
             "/libfake_ptrdev.so\nanswer = 42\ndevices = 3\nledger = %s\n",
             CPU_PLUGIN, ledger);
    use_config(cfg);
    tc_setenv("INFINIRT_VISIBLE_DEVICES", "ascend:2,0");
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_ASCEND, &n));
    ASSERT_EQ(n, 2);
    enum { N = 64 };
    static char f[N], a[N];
    tc_pattern(a, N, 4);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    ledger_take(ledger);
    ASSERT_OK(infinirtMemset(d, 0x11, N));
    ASSERT_STR_EQ(ledger_take(ledger), "memset dev=2\n");
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    ASSERT_OK(infinirtMemcpy(f, a, 8, INFINIRT_MEMCPY_H2D)); /* the plugin cannot place it: ascend:1 */
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy dev=0\n");
    strcpy(f, "dev=2"); /* its device 2 is ascend:0 */
    ASSERT_OK(infinirtMemcpy(f, a, N, INFINIRT_MEMCPY_H2D));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy dev=2\n");
    ASSERT_MEM_EQ(f, a, N);
    strcpy(f, "dev=1"); /* hidden: as if the plugin could not tell */
    ASSERT_OK(infinirtMemset(f, 0x22, N));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemset dev=0\n");
    ASSERT_EQ(f[N - 1], 0x22);
    strcpy(f, "dev=7"); /* a device the plugin does not have at all */
    ASSERT_STATUS(infinirtMemset(f, 0, N), INFINI_STATUS_INTERNAL_ERROR);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

/* An empty list hides a type; an index the plugin does not have is
 * skipped with a warning, and the report says why nothing is served. */
int test_loader_visible_hides(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\ndevices = 2\n\n[plugin.fake]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\ndevices = 2\n",
             CPU_PLUGIN);
    use_config(cfg);
    tc_setenv("INFINIRT_VISIBLE_DEVICES", " cpu: ; ascend : 5 ");
    int counts[INFINI_DEVICE_TYPE_COUNT];
    ASSERT_OK(infinirtGetAllDeviceCount(counts));
    ASSERT_EQ(counts[INFINI_DEVICE_CPU], 0);
    ASSERT_EQ(counts[INFINI_DEVICE_ASCEND], 0);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_NO_DEVICES);
    ASSERT_STR_EQ(pi.message, "INFINIRT_VISIBLE_DEVICES shows none of its 2 devices");
    ASSERT_GE(find_plugin("fake", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_NO_DEVICES);
    ASSERT_STR_EQ(pi.message, "INFINIRT_VISIBLE_DEVICES shows none of its 2 devices (it has no device 5)");
    ASSERT_STR_CONTAINS(tc_read_file(log_path()),
                        "warn: INFINIRT_VISIBLE_DEVICES: ascend device 5 skipped: the plugin serving ascend has 2 "
                        "devices");
    return TEST_OK;
}

/* One malformed value in a fresh process: an error naming the variable
 * and the bad part, and no device of any type. */
static int visible_malformed_child(const char *value, const char *bad, int k)
{
    char cfg[1024], log[700];
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\ndevices = 2\n\n[plugin.fake]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\n",
             CPU_PLUGIN);
    use_config(cfg);
    snprintf(log, sizeof log, "%s/visible-%d.log", tc_temp_dir(), k);
    tc_setenv("INFINIRT_LOG_FILE", log);
    tc_setenv("INFINIRT_VISIBLE_DEVICES", value);
    int counts[INFINI_DEVICE_TYPE_COUNT];
    ASSERT_OK(infinirtGetAllDeviceCount(counts));
    ASSERT_EQ(counts[INFINI_DEVICE_CPU], 0);
    ASSERT_EQ(counts[INFINI_DEVICE_ASCEND], 0);
    char want[512];
    snprintf(want, sizeof want, "error: INFINIRT_VISIBLE_DEVICES='%s': %s", value, bad);
    ASSERT_STR_CONTAINS(tc_read_file(log), want);
    ASSERT_STR_CONTAINS(tc_read_file(log), "; no device of any type is shown (fix the value, or unset it)");
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_NO_DEVICES);
    ASSERT_STR_CONTAINS(pi.message, "INFINIRT_VISIBLE_DEVICES is malformed (see the log)");
    return TEST_OK;
}

/* A malformed INFINIRT_VISIBLE_DEVICES fails closed: the variable is how a
 * job is kept to its devices, and a typo must not hand it every device of
 * the machine.  Each value in a child, as the loader reads it once. */
int test_loader_visible_malformed(void)
{
    static const struct {
        const char *value, *bad;
    } cases[] = {
        {"cpu:1,x", "'x' in 'cpu:1,x' is not a device number (0 to 4095)"},
        {"cpu:-1", "'-1' in 'cpu:-1' is not a device number"},
        {"cpu:4096", "'4096' in 'cpu:4096' is not a device number"},
        {"cpu:0,,1", "'cpu:0,,1' has an empty item"},
        {"cpu:0;gpu:0", "'gpu' is not a device type"},
        {"cpu", "'cpu' has no ':'"},
        {"cpu:0;ascend:1;cpu:1", "type cpu is named twice"},
        {"ascend:1,0,1", "device 1 is listed twice for ascend"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fflush(NULL);
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0)
            _exit(visible_malformed_child(cases[k].value, cases[k].bad, (int)k) == TEST_OK ? 0 : 1);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            TEST_FAILED_("INFINIRT_VISIBLE_DEVICES='%s': the child failed (status %d)", cases[k].value, status);
    }
    return TEST_OK;
}

/* The allocator's peer rule holds on renumbered devices: a block of
 * device 1 written by a gated write on a stream of device 0 is not reused
 * while the write is pending, with the two ids swapped by the variable
 * (the rule marks peers by the loader's ids, not the plugin's). */
int test_conformance_peer_memset_free(void);
int test_loader_visible_peer_free(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 2\nstreams = async\n", CPU_PLUGIN);
    use_config(cfg);
    tc_setenv("INFINIRT_VISIBLE_DEVICES", "cpu:1,0");
    return test_conformance_peer_memset_free();
}
