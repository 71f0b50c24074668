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
