/*
 * loader_tests.c - the loader against fake plugins, configs and threads.
 *
 * Each test is its own process (one CTest entry each), so each writes its
 * config and environment before its first infinirt call, which is when the
 * loader reads them.  FAKE_DIR and CPU_PLUGIN come from CMake.
 */
#define _GNU_SOURCE
#include "common.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *log_path(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/infinirt.log", tc_temp_dir());
    return p;
}

/* Write a config and point the loader at it; logging goes to a file. */
static void use_config(const char *text)
{
    tc_use_config(text);
    tc_setenv("INFINIRT_LOG_FILE", log_path());
    tc_setenv("INFINIRT_LOG", "info");
}

static int find_plugin(const char *name, infinirtPluginInfo_t *out)
{
    int n = 0;
    if (infinirtGetPluginCount(&n) != INFINI_STATUS_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++)
        if (infinirtGetPluginInfo(i, out) == INFINI_STATUS_SUCCESS && strcmp(out->name, name) == 0)
            return i;
    return -1;
}

/* The cpu plugin still serves: allocate, copy, free. */
static int cpu_still_works(void)
{
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    char a[100], b[100];
    tc_pattern(a, sizeof a, 5);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, sizeof a));
    ASSERT_OK(infinirtMemcpy(d, a, sizeof a, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(b, d, sizeof a, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, sizeof a);
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

/* A config with the cpu plugin and one more section. */
static int bad_plugin_case(const char *extra, const char *name, infinirtPluginStatus_t want, const char *msg_part)
{
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\n\n[plugin.%s]\n%s\n", CPU_PLUGIN, name, extra);
    use_config(cfg);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin(name, &pi), 0);
    if (pi.status != want)
        TEST_FAILED_("plugin %s: status %s (%s), want %s", name, infinirtGetPluginStatusString(pi.status), pi.message,
                     infinirtGetPluginStatusString(want));
    ASSERT_STR_CONTAINS(pi.message, msg_part);
    ASSERT_EQ(pi.device_count, 0);
    /* The reason reached the log too, with the plugin's name. */
    const char *log = tc_read_file(log_path());
    ASSERT_STR_CONTAINS(log, name);
    CHECK(cpu_still_works());
    int counts[INFINI_DEVICE_TYPE_COUNT];
    ASSERT_OK(infinirtGetAllDeviceCount(counts));
    ASSERT_EQ(counts[INFINI_DEVICE_CPU], 1);
    ASSERT_EQ(counts[INFINI_DEVICE_ASCEND], 0);
    return TEST_OK;
}

int test_loader_missing_file(void)
{
    return bad_plugin_case("library = /nonexistent/libinfinirt_ghost.so", "ghost", INFINIRT_PLUGIN_NOT_FOUND,
                           "No such file");
}

int test_loader_not_shared_object(void)
{
    const char *p = tc_write_temp("libinfinirt_text.so", "this is not an ELF file\n");
    char extra[600];
    snprintf(extra, sizeof extra, "library = %s", p);
    return bad_plugin_case(extra, "text", INFINIRT_PLUGIN_DLOPEN_ERROR, "libinfinirt_text.so");
}

int test_loader_no_entry(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_no_entry.so", "noentry", INFINIRT_PLUGIN_ENTRY_MISSING,
                           "infinirtPluginEntry");
}

int test_loader_abi_major(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_abi2.so", "abi2", INFINIRT_PLUGIN_ABI_MISMATCH,
                           "plugin ABI 2.0");
}

int test_loader_table_too_small(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_small_table.so", "small", INFINIRT_PLUGIN_ABI_MISMATCH,
                           "40 bytes");
}

/* A table that claims minor 1 must hold the 1.1 entries. */
int test_loader_table_short_for_minor(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_short11.so", "short11", INFINIRT_PLUGIN_ABI_MISMATCH,
                           "ABI 1.1 needs at least");
}

/* ... and one that claims minor 2 the 1.2 entries. */
int test_loader_table_short_for_minor_2(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_short12.so", "short12", INFINIRT_PLUGIN_ABI_MISMATCH,
                           "ABI 1.2 needs at least");
}

int test_loader_table_short_for_minor_5(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_short15.so", "short15", INFINIRT_PLUGIN_ABI_MISMATCH,
                           "ABI 1.5 needs at least");
}

/* Native graphs come whole: a part of the seven entries is refused. */
int test_loader_incoherent_partial_graph(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_partial_graph.so\nanswer = 42", "partial",
                           INFINIRT_PLUGIN_ABI_MISMATCH, "stream_begin_capture without stream_end_capture");
}

/* A vendor plugin without native graphs (here of ABI 1.0, on a device
 * that is not the CPU's) gets stream capture from the loader: the
 * operations are recorded, not run, and each launch issues them again
 * through the plugin's own entries, reading memory at launch time. */
int test_loader_vendor_plugin_graph(void)
{
    use_config("[plugin.streams]\nlibrary = " FAKE_DIR "/libfake_streams.so\nanswer = 42\ndevices = 1\n");
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    infinirtStream_t s, l;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&l));
    unsigned char *d = NULL, host[64], out[64];
    ASSERT_OK(infinirtMalloc((void **)&d, 64));
    memset(out, 0, sizeof out);
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMemsetAsync(d, 0x11, 64, s));
    ASSERT_OK(infinirtMemcpyAsync(d + 8, host, 8, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(out, d, 64, INFINIRT_MEMCPY_D2H, s));
    infinirtGraph_t g = NULL;
    infinirtGraphExec_t x = NULL;
    ASSERT_OK(infinirtStreamEndCapture(s, &g));
    ASSERT_EQ(out[0], 0); /* the fake runs operations at once: not run means not issued */
    ASSERT_OK(infinirtGraphInstantiate(&x, g, NULL, NULL, 0));
    for (int r = 1; r <= 2; r++) {
        memset(host, r, sizeof host);
        ASSERT_OK(infinirtGraphLaunch(x, l));
        ASSERT_OK(infinirtStreamSynchronize(l));
        ASSERT_EQ(out[0], 0x11);
        ASSERT_EQ(out[8], r);
        ASSERT_EQ(out[15], r);
        ASSERT_EQ(out[16], 0x11);
    }
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(l));
    return TEST_OK;
}

/* A plugin built against ABI 1.0 (its table ends after memset_async) keeps
 * working: its stream and event objects are the handles, the 1.1 calls
 * answer from the loader's defaults, and what needs an entry it lacks is
 * NOT_IMPLEMENTED. */
/* get_device_uuid's text reaches the device properties; text that is not
 * terminated or not printable, or a failure, gives "" and a warning; the
 * CPU plugin has no UUID. */
int test_loader_device_uuid(void)
{
    use_config("[plugin.good]\nlibrary = " FAKE_DIR "/libfake_good.so\nanswer = 42\ndevices = 4\n"
               "[plugin.cpu]\nlibrary = " CPU_PLUGIN "\n");
    infinirtDeviceProperties_t props;
    ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_ASCEND, 0, &props));
    ASSERT_STR_EQ(props.uuid, "FAKE-0000-UUID");
    for (int d = 1; d < 4; d++) {
        memset(&props, 0x55, sizeof props);
        ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_ASCEND, d, &props));
        ASSERT_STR_EQ(props.uuid, "");
        ASSERT_STR_CONTAINS(props.name, "fake device"); /* the rest of the device is fine */
    }
    ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_CPU, 0, &props));
    ASSERT_STR_EQ(props.uuid, "");
    const char *log = tc_read_file(log_path());
    ASSERT_STR_CONTAINS(log, "get_device_uuid(1) gave no printable, terminated text: device 1 has no UUID");
    ASSERT_STR_CONTAINS(log, "get_device_uuid(2) gave no printable, terminated text: device 2 has no UUID");
    ASSERT_STR_CONTAINS(log, "get_device_uuid(3) failed: INTERNAL_ERROR");
    return TEST_OK;
}

int test_loader_abi_1_0_plugin(void)
{
    /* plugins = streams: the real plugins beside the loader stay out of
     * the report's count. */
    use_config("[loader]\nplugins = streams\n[plugin.streams]\nlibrary = " FAKE_DIR
               "/libfake_streams.so\nanswer = 42\ndevices = 1\n");
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    infinirtPluginInfo_t info;
    int n = 0;
    ASSERT_OK(infinirtGetPluginCount(&n));
    ASSERT_GE(n, 1);
    ASSERT_OK(infinirtGetPluginInfo(0, &info));
    ASSERT_STR_EQ(info.name, "streams");
    ASSERT_EQ(info.abi_minor, 0);
    /* The plugins found beside the loader are reported, not loaded. */
    for (int i = 1; i < n; i++) {
        infinirtPluginInfo_t other;
        ASSERT_OK(infinirtGetPluginInfo(i, &other));
        ASSERT_EQ(other.status, INFINIRT_PLUGIN_DISABLED);
        ASSERT_STR_CONTAINS(other.message, "not in [loader] plugins = streams");
    }
    infinirtDeviceProperties_t props;
    memset(&props, 0x55, sizeof props);
    ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_ASCEND, 0, &props));
    ASSERT_STR_EQ(props.uuid, ""); /* a 1.0 table has no get_device_uuid */
    infinirtStream_t s, s0;
    infinirtEvent_t e;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreateWithFlags(&s0, INFINIRT_STREAM_DEFAULT));
    ASSERT_STATUS(infinirtStreamCreateWithFlags(&s, INFINIRT_STREAM_NON_BLOCKING), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_OK(infinirtEventCreate(&e));
    void *native = NULL;
    ASSERT_OK(infinirtStreamGetNativeHandle(s, &native));
    ASSERT_PTR_EQ(native, s);
    ASSERT_STATUS(infinirtStreamCreateFromNative(&s0, (void *)&native), INFINI_STATUS_NOT_IMPLEMENTED);
    void *d = (void *)1, *c = (void *)1;
    ASSERT_OK(infinirtDeviceGetNativeHandle(INFINI_DEVICE_ASCEND, 0, &d, &c));
    ASSERT_PTR_EQ(d, NULL);
    ASSERT_PTR_EQ(c, NULL);
    void *p = NULL;
    size_t off = 9;
    ASSERT_OK(infinirtMallocAsync(&p, 256, s));
    ASSERT_OK(infinirtMemGetNativeHandle((char *)p + 8, &native, &off));
    ASSERT_PTR_EQ(native, (char *)p + 8);
    ASSERT_EQ(off, 0);
    ASSERT_OK(infinirtMemsetAsync(p, 7, 256, s));
    ASSERT_OK(infinirtEventRecord(e, s));
    ASSERT_OK(infinirtFreeAsync(p, s));
    ASSERT_OK(infinirtEventSynchronize(e));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(s0));
    return TEST_OK;
}

/* Tables whose entries do not make sense together are refused at load,
 * with the reason, instead of failing (or crashing) at the first call. */
int test_loader_incoherent_no_query(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_no_query.so\nanswer = 42", "noquery",
                           INFINIRT_PLUGIN_ABI_MISMATCH, "event_record without event_query");
}

int test_loader_incoherent_no_stream_destroy(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_no_stream_destroy.so\nanswer = 42", "nodestroy",
                           INFINIRT_PLUGIN_ABI_MISMATCH, "stream_create without stream_destroy");
}

int test_loader_init_failure(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_init_fail.so", "initfail", INFINIRT_PLUGIN_INIT_FAILED,
                           "fake init refused: no licence");
}

int test_loader_zero_devices(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_zero.so", "zero", INFINIRT_PLUGIN_NO_DEVICES,
                           "no fake hardware present");
}

int test_loader_duplicate_type(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_dup_cpu.so", "dupcpu", INFINIRT_PLUGIN_DUPLICATE_TYPE,
                           "already served by plugin cpu");
}

int test_loader_disabled(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_good.so\nenabled = false\nanswer = 42", "good",
                           INFINIRT_PLUGIN_DISABLED, "enabled = false");
}

int test_loader_bad_plugin_key(void)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\ndevices = lots\n\n[plugin.good]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\n",
             CPU_PLUGIN);
    use_config(cfg);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    /* A bad value is a warning with file:line and the default is used:
     * the backend stays. */
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_EQ(pi.device_count, 1);
    char want[PATH_MAX + 128], resolved[PATH_MAX];
    ASSERT(realpath(getenv("INFINIRT_CONFIG"), resolved) != NULL);
    snprintf(want, sizeof want, "%s:3: [plugin.cpu] devices = 'lots': not a number from 0 to 64; using 1", resolved);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    /* The other plugin serves too. */
    ASSERT_GE(find_plugin("good", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    return TEST_OK;
}

/* A vendor plugin's devices appear under its type and calls reach it. */
int test_loader_fake_device_routing(void)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "[loader]\ndefault_device = ascend:1\n\n[plugin.cpu]\nlibrary = %s\n\n[plugin.good]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\ndevices = 3\n",
             CPU_PLUGIN);
    use_config(cfg);
    int counts[INFINI_DEVICE_TYPE_COUNT];
    ASSERT_OK(infinirtGetAllDeviceCount(counts));
    ASSERT_EQ(counts[INFINI_DEVICE_CPU], 1);
    ASSERT_EQ(counts[INFINI_DEVICE_ASCEND], 3); /* the devices key reached the plugin */
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id)); /* the configured default */
    ASSERT_EQ(t, INFINI_DEVICE_ASCEND);
    ASSERT_EQ(id, 1);
    infinirtDeviceProperties_t p;
    ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_ASCEND, 2, &p));
    ASSERT_STR_EQ(p.name, "fake device 2");
    ASSERT_STR_EQ(p.plugin, "good");
    void *d;
    char a[64], b[64];
    tc_pattern(a, 64, 1);
    ASSERT_OK(infinirtMalloc(&d, 64));
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 1, &st));
    ASSERT_EQ(st.active_blocks, 1);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtMemcpy(d, a, 64, INFINIRT_MEMCPY_H2D)); /* routed by pointer, not current device */
    ASSERT_OK(infinirtMemcpy(b, d, 64, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, 64);
    /* Cross-backend D2D goes through host memory. */
    void *c;
    ASSERT_OK(infinirtMalloc(&c, 64));
    ASSERT_OK(infinirtMemcpy(c, d, 64, INFINIRT_MEMCPY_D2D));
    memset(b, 0, 64);
    ASSERT_OK(infinirtMemcpy(b, c, 64, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, 64);
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFree(c));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 1, &st));
    ASSERT_EQ(st.active_blocks, 0);
    /* The fake has no streams: a clear NOT_IMPLEMENTED, not a crash. */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    infinirtStream_t s;
    ASSERT_STATUS(infinirtStreamCreate(&s), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_STATUS(infinirtMallocHost(&d, 64), INFINI_STATUS_NOT_IMPLEMENTED);
    return TEST_OK;
}

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

/* A plugin declaring a device type outside infiniDevice_t is an ABI
 * mismatch; the others keep working. */
int test_loader_device_type_out_of_range(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_bad_type.so\nanswer = 42", "badtype",
                           INFINIRT_PLUGIN_ABI_MISMATCH, "device type 99 is not an infiniDevice_t");
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

/* -------------------------------------------------------------- routing */

/* Pointers, streams and events made on device 1 are used and released
 * while device 0 is current, and reach device 1. */
int test_routing_two_devices(void)
{
    char cfg[1024];
    /* async: a stream of device 1 is held while calls route to it. */
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 2\nstreams = async\n", CPU_PLUGIN);
    use_config(cfg);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 1));
    void *p;
    infinirtStream_t s;
    infinirtEvent_t e;
    ASSERT_OK(infinirtMalloc(&p, 4096));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));

    infinirtAllocatorStats_t st0, st1;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st0));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 1, &st1));
    ASSERT_EQ(st0.active_blocks, 0);
    ASSERT_EQ(st1.active_blocks, 1);

    char a[4096], b[4096];
    tc_pattern(a, sizeof a, 11);
    static tc_gate gate; /* static: the runner may open it after we return */
    ASSERT_OK(tc_hold_stream(s, &gate));
    ASSERT_OK(infinirtMemcpyAsync(p, a, sizeof a, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(b, p, sizeof a, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtEventRecord(e, s));
    infinirtEventStatus_t es;
    ASSERT_OK(infinirtEventQuery(e, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY);
    /* Device 0's synchronize does not wait for device 1's stream. */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtEventQuery(e, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtEventSynchronize(e));
    ASSERT_MEM_EQ(a, b, sizeof a);
    /* NULL stream for an event means the event's own device. */
    ASSERT_OK(infinirtEventRecord(e, NULL));
    ASSERT_OK(infinirtEventSynchronize(e));
    /* A device-0 stream cannot record a device-1 event. */
    infinirtStream_t s0;
    ASSERT_OK(infinirtStreamCreate(&s0));
    ASSERT_STATUS(infinirtEventRecord(e, s0), INFINI_STATUS_BAD_PARAM);
    /* ...but it can wait on it: same backend. */
    ASSERT_OK(infinirtStreamWaitEvent(s0, e));
    ASSERT_OK(infinirtStreamSynchronize(s0));
    ASSERT_OK(infinirtStreamDestroy(s0));

    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 1, &st1));
    ASSERT_EQ(st1.active_blocks, 0);
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtEventDestroy(e));
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(id, 0); /* nothing above changed the current device */
    return TEST_OK;
}

/* Lines of the fake plugin's ledger file; "" when it has none yet. */
static const char *ledger_text(const char *path)
{
    const char *t = tc_read_file(path);
    return t ? t : "";
}

/* Handles and pointers of one backend are used while a device of another
 * backend is current: every call goes to the owner's plugin and device.
 * The fake plugin (ascend, with a ledger of the calls it received) and the
 * cpu plugin are the two backends; each direction is checked by what only
 * the right plugin could have done. */
int test_routing_other_backend(void)
{
    char ledger[600], cfg[2048];
    snprintf(ledger, sizeof ledger, "%s/fake.ledger", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\ndevices = 2\nstreams = async\n\n[plugin.streams]\nlibrary = " FAKE_DIR
             "/libfake_streams.so\nanswer = 42\ndevices = 2\nledger = %s\n",
             CPU_PLUGIN, ledger);
    use_config(cfg);
    enum { N = 8192 };
    static unsigned char a[N], b[N];
    infinirtAllocatorStats_t st;

    /* cpu:1 objects while ascend:0 is current.  The fake completes every
     * event at once and would log any call it received, so a NOT_READY
     * answer and an empty ledger show that the cpu plugin answered. */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 1));
    void *pc;
    infinirtStream_t sc;
    infinirtEvent_t ec;
    ASSERT_OK(infinirtMalloc(&pc, N));
    ASSERT_OK(infinirtStreamCreate(&sc));
    ASSERT_OK(infinirtEventCreate(&ec));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    static tc_gate gate; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(sc, &gate));
    ASSERT_OK(infinirtMemsetAsync(pc, 0x5a, N, sc));
    ASSERT_OK(infinirtEventRecord(ec, sc));
    infinirtEventStatus_t es;
    ASSERT_OK(infinirtEventQuery(ec, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(sc));
    ASSERT_OK(infinirtMemcpy(b, pc, N, INFINIRT_MEMCPY_D2H));
    memset(a, 0x5a, N);
    ASSERT_MEM_EQ(a, b, N); /* the fill ran before StreamSynchronize returned */
    ASSERT_OK(infinirtEventSynchronize(ec));
    ASSERT_OK(infinirtEventQuery(ec, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_COMPLETE);
    ASSERT_OK(infinirtMemset(pc, 0x33, N));
    tc_pattern(a, N, 3);
    ASSERT_OK(infinirtMemcpy(pc, a, 100, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(b, pc, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, 100);
    ASSERT_EQ(b[100], 0x33);
    ASSERT_EQ(b[N - 1], 0x33);
    ASSERT_OK(infinirtFreeAsync(pc, sc));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 1, &st));
    ASSERT_EQ(st.active_blocks, 0);
    ASSERT_OK(infinirtStreamSynchronize(sc));
    ASSERT_OK(infinirtStreamDestroy(sc));
    ASSERT_OK(infinirtEventDestroy(ec));
    ASSERT_STR_EQ(ledger_text(ledger), ""); /* the fake saw none of it */

    /* ascend:1 objects while cpu:0 is current: the fake's ledger names
     * each call with the device that received it and the device that made
     * the object. */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    void *pf;
    infinirtStream_t sf;
    infinirtEvent_t ef;
    ASSERT_OK(infinirtMalloc(&pf, N));
    ASSERT_OK(infinirtStreamCreate(&sf));
    ASSERT_OK(infinirtEventCreate(&ef));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtMemset(pf, 0x11, N));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "memset dev=1\n");
    ASSERT_OK(infinirtMemcpy(b, pf, N, INFINIRT_MEMCPY_D2H));
    memset(a, 0x11, N);
    ASSERT_MEM_EQ(a, b, N);
    ASSERT_STR_CONTAINS(ledger_text(ledger), "memcpy dev=1\n");
    ASSERT_OK(infinirtMemsetAsync(pf, 0x22, N, sf));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "memset_async dev=1 owner=1\n");
    ASSERT_OK(infinirtMemsetAsync(pf, 0x23, 16, NULL)); /* the pointer's device's default stream */
    ASSERT_STR_CONTAINS(ledger_text(ledger), "memset_async dev=1 owner=-1\n");
    ASSERT_OK(infinirtStreamSynchronize(sf));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "stream_synchronize dev=1 owner=1\n");
    ASSERT_OK(infinirtMemcpy(b, pf, N, INFINIRT_MEMCPY_D2H));
    ASSERT_EQ(b[0], 0x23);
    ASSERT_EQ(b[16], 0x22);
    ASSERT_EQ(b[N - 1], 0x22);
    ASSERT_OK(infinirtEventRecord(ef, sf));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "event_record dev=1 owner=1\n");
    ASSERT_OK(infinirtEventQuery(ef, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_COMPLETE);
    ASSERT_STR_CONTAINS(ledger_text(ledger), "event_query dev=1 owner=1\n");
    ASSERT_OK(infinirtEventSynchronize(ef));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "event_synchronize dev=1 owner=1\n");
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 1, &st));
    ASSERT_EQ(st.active_blocks, 1);
    ASSERT_OK(infinirtFreeAsync(pf, sf));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 1, &st));
    ASSERT_EQ(st.active_blocks, 0);
    ASSERT_OK(infinirtStreamDestroy(sf));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "stream_destroy dev=1 owner=1\n");
    ASSERT_OK(infinirtEventDestroy(ef)); /* no other reference: the plugin's event goes now */
    ASSERT_STR_CONTAINS(ledger_text(ledger), "event_destroy dev=1 owner=1\n");
    /* Nothing reached the fake's device 0, nor a fake call a cpu object. */
    ASSERT(strstr(ledger_text(ledger), "dev=0") == NULL);
    ASSERT(strstr(ledger_text(ledger), "owner=0") == NULL);
    ASSERT(strstr(ledger_text(ledger), "device_synchronize") == NULL);
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(t, INFINI_DEVICE_CPU);
    ASSERT_EQ(id, 0);
    return TEST_OK;
}

/* The fake's ledger since the last call, emptied: what one step did. */
static const char *ledger_take(const char *path)
{
    const char *t = ledger_text(path);
    unlink(path);
    return t;
}

/* Device memory the loader did not allocate goes to the plugin that says it
 * owns it (pointer_get_device), asked of the current device's plugin, the
 * stream's, or the plugin of a copy's other, known side; where that plugin
 * cannot tell, to the current device or the stream's.  The fake plugin
 * (ascend, 3 devices, ABI 1.1) reads its answer from the memory asked
 * about and logs every call with the device that received it. */
int test_routing_foreign_pointer(void)
{
    char ledger[600], cfg[2048];
    snprintf(ledger, sizeof ledger, "%s/fake.ledger", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\ndevices = 2\n\n[plugin.ptrdev]\nlibrary = " FAKE_DIR
             "/libfake_ptrdev.so\nanswer = 42\ndevices = 3\nledger = %s\n",
             CPU_PLUGIN, ledger);
    use_config(cfg);
    enum { N = 256 };
    static char f[N], a[N], b[N], keep[N];
    tc_pattern(a, N, 7);

    /* Synchronous: the current device's plugin is asked. */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    strcpy(f, "dev=2");
    ASSERT_OK(infinirtMemcpy(f, a, N, INFINIRT_MEMCPY_H2D));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy dev=2\n");
    ASSERT_MEM_EQ(f, a, N);
    strcpy(f, "bad!"); /* cannot tell: the current device */
    ASSERT_OK(infinirtMemcpy(b, f, N, INFINIRT_MEMCPY_D2H));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy dev=0\n");
    ASSERT_STR_EQ(b, "bad!");
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    memset(f, 0, N); /* NOT_IMPLEMENTED: the current device */
    ASSERT_OK(infinirtMemset(f, 0x44, N));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemset dev=1\n");
    ASSERT_EQ(f[N - 1], 0x44);
    /* A device the plugin does not have, or a failure of the query: the
     * call fails, nothing is copied. */
    strcpy(f, "dev=7");
    memcpy(keep, f, N);
    ASSERT_STATUS(infinirtMemcpy(f, a, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_INTERNAL_ERROR);
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\n");
    ASSERT_MEM_EQ(f, keep, N);
    strcpy(f, "err!");
    memcpy(keep, f, N);
    ASSERT_STATUS(infinirtMemset(f, 0, N), INFINI_STATUS_INTERNAL_ERROR);
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\n");
    ASSERT_MEM_EQ(f, keep, N);

    /* Queued: the stream's plugin is asked, whatever device is current;
     * the copy goes on the stream, to its device.  With the NULL stream,
     * the resolved device's default stream. */
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s)); /* on ascend:1 */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    strcpy(f, "dev=2");
    ASSERT_OK(infinirtMemcpyAsync(f, a, N, INFINIRT_MEMCPY_H2D, s));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy_async dev=1 owner=1\n");
    ASSERT_MEM_EQ(f, a, N);
    memset(f, 0, N);
    ASSERT_OK(infinirtMemsetAsync(f, 0x55, N, s));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemset_async dev=1 owner=1\n");
    ASSERT_EQ(f[0], 0x55);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    strcpy(f, "dev=2");
    ASSERT_OK(infinirtMemsetAsync(f, 0x66, 8, NULL));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemset_async dev=2 owner=-1\n");
    strcpy(f, "bad!");
    ASSERT_OK(infinirtMemcpyAsync(b, f, N, INFINIRT_MEMCPY_D2H, NULL));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy_async dev=0 owner=-1\n");
    ASSERT_STR_EQ(b, "bad!");

    /* D2D with one known side: routed by the known one, whose plugin is
     * asked about the other; the current device plays no part. */
    void *pf, *pc;
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    ASSERT_OK(infinirtMalloc(&pf, N));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 1));
    ASSERT_OK(infinirtMalloc(&pc, N));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    strcpy(f, "dev=2");
    ASSERT_OK(infinirtMemcpy(pf, f, N, INFINIRT_MEMCPY_D2D));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy dev=1\n");
    ASSERT_OK(infinirtMemcpy(b, pf, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(b, f, N);
    ledger_take(ledger);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    ASSERT_OK(infinirtMemcpy(f, pc, N, INFINIRT_MEMCPY_D2D)); /* the cpu plugin's copy */
    ASSERT_STR_EQ(ledger_take(ledger), "");
    /* Known pointers never ask. */
    ASSERT_OK(infinirtMemcpy(pf, a, N, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemsetAsync(pf, 0, N, s));
    ASSERT(strstr(ledger_text(ledger), "pointer_get_device") == NULL);

    /* Free never takes a foreign pointer, and asks no plugin. */
    ledger_take(ledger);
    strcpy(f, "dev=2");
    ASSERT_STATUS(infinirtFree(f), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtFreeAsync(f, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STR_EQ(ledger_take(ledger), "");
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(pf));
    ASSERT_OK(infinirtFree(pc));
    return TEST_OK;
}

/* memory_limit makes raw allocation fail with OUT_OF_MEMORY, and a failed
 * allocation changes nothing. */
int test_routing_memory_limit(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nmemory_limit = 4M\n", CPU_PLUGIN);
    use_config(cfg);
    void *p = NULL, *q = (void *)1;
    ASSERT_OK(infinirtMalloc(&p, 3u << 20));
    infinirtAllocatorStats_t before, after;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &before));
    ASSERT_STATUS(infinirtMalloc(&q, 2u << 20), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_PTR_EQ(q, (void *)1);
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &after));
    ASSERT_EQ(after.allocated_bytes, before.allocated_bytes);
    ASSERT_EQ(after.oom_count, before.oom_count + 1);
    size_t f, t;
    ASSERT_OK(infinirtGetMemInfo(INFINI_DEVICE_CPU, 0, &f, &t));
    ASSERT_EQ(t, 4u << 20);
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtMalloc(&q, 2u << 20));
    ASSERT_OK(infinirtFree(q));
    return TEST_OK;
}

/* An allocation of exactly memory_limit succeeds; one byte more fails
 * with OUT_OF_MEMORY and changes nothing. */
static int exact_limit_case(const char *allocator)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "%s[plugin.cpu]\nlibrary = %s\nmemory_limit = 4M\n", allocator, CPU_PLUGIN);
    use_config(cfg);
    const size_t limit = (size_t)4 << 20;
    void *p = NULL, *q = (void *)1;
    ASSERT_OK(infinirtMalloc(&p, limit));
    ASSERT_OK(infinirtMemset(p, 0x7e, limit)); /* all of it is usable */
    ASSERT_STATUS(infinirtMalloc(&q, 1), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_PTR_EQ(q, (void *)1);
    ASSERT_OK(infinirtFree(p));
    ASSERT_STATUS(infinirtMalloc(&q, limit + 1), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_PTR_EQ(q, (void *)1);
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
    ASSERT_EQ(st.allocated_bytes, 0);
    /* The failure released nothing it should not have: the limit is whole. */
    ASSERT_OK(infinirtMalloc(&p, limit));
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

int test_routing_memory_limit_exact(void)
{
    return exact_limit_case("");
}

int test_routing_memory_limit_exact_noalloc(void)
{
    return exact_limit_case("[allocator]\nenabled = false\n\n");
}

/* -------------------------------------------------------------- threads */

enum { NTHREADS = 16 };
static pthread_barrier_t g_barrier;
static int g_counts[NTHREADS];

static void *first_call(void *arg)
{
    int i = (int)(intptr_t)arg;
    int counts[INFINI_DEVICE_TYPE_COUNT];
    pthread_barrier_wait(&g_barrier);
    if (infinirtGetAllDeviceCount(counts) == INFINI_STATUS_SUCCESS)
        g_counts[i] = counts[INFINI_DEVICE_CPU];
    return NULL;
}

int test_threads_first_call(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 3\n", CPU_PLUGIN);
    use_config(cfg);
    pthread_t th[NTHREADS];
    pthread_barrier_init(&g_barrier, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, first_call, (void *)(intptr_t)i), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        ASSERT_EQ(g_counts[i], 3);
    /* The plugin was loaded once: one "loaded" line in the log. */
    const char *log = tc_read_file(log_path());
    const char *first = strstr(log, "plugin cpu (");
    ASSERT(first != NULL);
    ASSERT(strstr(first + 1, "plugin cpu (") == NULL);
    return TEST_OK;
}

static void *on_device_one(void *arg)
{
    int *ok = arg;
    infiniDevice_t t;
    int id = -1;
    /* A new thread starts on the configured default, whatever others chose. */
    *ok = infinirtGetDevice(&t, &id) == INFINI_STATUS_SUCCESS && id == 2;
    *ok = *ok && infinirtSetDevice(INFINI_DEVICE_CPU, 1) == INFINI_STATUS_SUCCESS;
    *ok = *ok && infinirtGetDevice(&t, &id) == INFINI_STATUS_SUCCESS && id == 1;
    return NULL;
}

int test_threads_current_device(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[loader]\ndefault_device = cpu:2\n[plugin.cpu]\nlibrary = %s\ndevices = 3\n",
             CPU_PLUGIN);
    use_config(cfg);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    pthread_t th;
    int ok = 0;
    ASSERT_EQ(pthread_create(&th, NULL, on_device_one, &ok), 0);
    pthread_join(th, NULL);
    ASSERT_EQ(ok, 1);
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(id, 0);
    return TEST_OK;
}

/* Events are destroyed while stream workers still complete or wait on
 * them: right after the record, from a host function on the recording
 * stream, while another stream waits on them, and after a re-record.  The
 * last of the handle, the queued record and the queued wait frees the
 * event; TSan (./dev test) checks that teardown for races. */
static infinirtStream_t g_teardown_streams[2];

static void destroy_event_fn(void *e)
{
    infinirtEventDestroy((infinirtEvent_t)e);
}

static void *event_teardown_worker(void *arg)
{
    int *ok = arg;
    infinirtStream_t a = g_teardown_streams[0], b = g_teardown_streams[1];
    for (int i = 0; i < 400; i++) {
        infinirtEvent_t e;
        if (infinirtEventCreateWithFlags(&e, i & 1 ? INFINIRT_EVENT_DISABLE_TIMING : 0) != INFINI_STATUS_SUCCESS ||
            infinirtEventRecord(e, a) != INFINI_STATUS_SUCCESS)
            return NULL;
        infiniStatus_t st = INFINI_STATUS_SUCCESS;
        switch (i % 4) {
        case 0: /* destroyed while the record is queued */
            st = infinirtEventDestroy(e);
            break;
        case 1: /* destroyed while stream b waits on it */
            st = infinirtStreamWaitEvent(b, e);
            if (st == INFINI_STATUS_SUCCESS)
                st = infinirtEventDestroy(e);
            break;
        case 2: /* destroyed by a host function queued after the record */
            st = infinirtLaunchHostFunc(a, destroy_event_fn, e);
            break;
        default: /* re-recorded, queried, then destroyed */
            st = infinirtEventRecord(e, b);
            infinirtEventStatus_t es;
            if (st == INFINI_STATUS_SUCCESS)
                st = infinirtEventQuery(e, &es);
            if (st == INFINI_STATUS_SUCCESS)
                st = infinirtEventDestroy(e);
            break;
        }
        if (st != INFINI_STATUS_SUCCESS)
            return NULL;
    }
    *ok = 1;
    return NULL;
}

int test_threads_event_teardown(void)
{
    char cfg[1024];
    /* async: the events are destroyed on the streams' worker threads. */
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nstreams = async\n", CPU_PLUGIN);
    use_config(cfg);
    ASSERT_OK(infinirtStreamCreate(&g_teardown_streams[0]));
    ASSERT_OK(infinirtStreamCreate(&g_teardown_streams[1]));
    enum { T = 4 };
    pthread_t th[T];
    int ok[T] = {0};
    for (int i = 0; i < T; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, event_teardown_worker, &ok[i]), 0);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++)
        ASSERT_EQ(ok[i], 1);
    ASSERT_OK(infinirtStreamSynchronize(g_teardown_streams[0]));
    ASSERT_OK(infinirtStreamSynchronize(g_teardown_streams[1]));
    ASSERT_OK(infinirtStreamDestroy(g_teardown_streams[0]));
    ASSERT_OK(infinirtStreamDestroy(g_teardown_streams[1]));
    return TEST_OK;
}

/* Plugins start on first use: a program that only uses the CPU never runs
 * another plugin's init (PoCL's platform scan costs 80-190 ms), and the
 * first callers needing a plugin start it exactly once between them. */
static void *count_ascend(void *arg)
{
    int *n = arg;
    if (infinirtGetDeviceCount(INFINI_DEVICE_ASCEND, n) != INFINI_STATUS_SUCCESS)
        *n = -1;
    return NULL;
}

int test_loader_lazy_start(void)
{
    char starts[600], cfg[2048];
    snprintf(starts, sizeof starts, "%s/fake.starts", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\n\n[plugin.fake]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\nstarts = %s\n",
             CPU_PLUGIN, starts);
    use_config(cfg);
    int n = 0;
    void *p;
    ASSERT_OK(infinirtInit());
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n));
    ASSERT_EQ(n, 1);
    ASSERT_OK(infinirtMalloc(&p, 64));
    ASSERT_OK(infinirtFree(p));
    ASSERT_STR_EQ(ledger_text(starts), ""); /* not started */

    enum { T = 4 };
    pthread_t t[T];
    int counts[T];
    for (int i = 0; i < T; i++)
        ASSERT_EQ(pthread_create(&t[i], NULL, count_ascend, &counts[i]), 0);
    for (int i = 0; i < T; i++) {
        pthread_join(t[i], NULL);
        ASSERT_EQ(counts[i], 2);
    }
    ASSERT_STR_EQ(ledger_text(starts), "init\n"); /* once, for all four */

    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("fake", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_EQ(pi.device_count, 2);
    ASSERT_STR_EQ(ledger_text(starts), "init\n");
    return TEST_OK;
}

/* The report is complete without any device call: it starts every plugin,
 * and an init failure shows there as it did when plugins started at
 * infinirtInit.  A type's plugins start in config order until one serves:
 * the fake (ascend) serves after initfail (ascend too) failed. */
int test_loader_report_starts_all(void)
{
    char starts[600], cfg[2048];
    snprintf(starts, sizeof starts, "%s/fake.starts", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\n\n[plugin.initfail]\nlibrary = " FAKE_DIR
             "/libfake_init_fail.so\n\n[plugin.fake]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\nstarts = %s\n",
             CPU_PLUGIN, starts);
    use_config(cfg);
    int n = 0;
    ASSERT_OK(infinirtGetPluginCount(&n));
    ASSERT_GE(n, 3); /* and the plugins found beside the loader, left out */
    ASSERT_STR_EQ(ledger_text(starts), "init\n");
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("initfail", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_INIT_FAILED);
    ASSERT_GE(find_plugin("fake", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_ASCEND, &n));
    ASSERT_EQ(n, 2);
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    return TEST_OK;
}

/* ------------------------------------------------- plugin files and counts */

/* A plugin that declares more devices than the loader serves is refused,
 * with the reason in the report; the others keep serving. */
int test_loader_device_cap(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_good.so\nanswer = 42\ndevices = 100000", "huge",
                           INFINIRT_PLUGIN_INIT_FAILED, "declared 100000 devices; a plugin may serve at most 4096");
}

/* The most a plugin may declare loads, and a device costs little until it
 * is used (each one's allocator is made on first use). */
int test_loader_many_devices_cheap(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\n\n[plugin.many]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\ndevices = 4096\n",
             CPU_PLUGIN);
    use_config(cfg);
    tc_setenv("INFINIRT_LOG", "error"); /* the fake's odd UUIDs warn once per device */
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    int counts[INFINI_DEVICE_TYPE_COUNT];
    ASSERT_OK(infinirtGetAllDeviceCount(counts));
    getrusage(RUSAGE_SELF, &after);
    ASSERT_EQ(counts[INFINI_DEVICE_ASCEND], 4096);
    /* 85 KiB a device (348 MB here) when each device made its allocator at
     * load; a few MB now. */
    long grew_kib = after.ru_maxrss - before.ru_maxrss;
    if (grew_kib > 64 * 1024)
        TEST_FAILED_("loading 4096 devices grew the process by %ld KiB", grew_kib);
    /* The last device works, and its statistics start at zero. */
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 4095, &st));
    ASSERT_EQ(st.reserved_bytes, 0);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 4095));
    void *d;
    ASSERT_OK(infinirtMalloc(&d, 4096));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 4095, &st));
    ASSERT_EQ(st.allocated_bytes, 4096);
    ASSERT_OK(infinirtFree(d));
    CHECK(cpu_still_works());
    return TEST_OK;
}

/* `library =` naming what is not a regular file is refused before dlopen,
 * which would block on a FIFO until a writer came. */
int test_loader_library_fifo(void)
{
    char fifo[600], extra[700];
    snprintf(fifo, sizeof fifo, "%s/libinfinirt_pipe.so", tc_temp_dir());
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    snprintf(extra, sizeof extra, "library = %s", fifo);
    return bad_plugin_case(extra, "pipe", INFINIRT_PLUGIN_DLOPEN_ERROR, "a FIFO, not a regular file");
}

int test_loader_library_device(void)
{
    return bad_plugin_case("library = /dev/zero", "zero", INFINIRT_PLUGIN_DLOPEN_ERROR,
                           "a character device, not a regular file");
}

int test_loader_library_directory(void)
{
    char extra[700];
    snprintf(extra, sizeof extra, "library = %s", tc_temp_dir());
    return bad_plugin_case(extra, "folder", INFINIRT_PLUGIN_DLOPEN_ERROR, "a directory, not a regular file");
}

/* Copy the fake plugin to `dst`. */
static int copy_fake(const char *dst)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", FAKE_DIR "/libfake_good.so", dst);
    ASSERT_EQ(system(cmd), 0);
    return TEST_OK;
}

/* A plugin file or folder that others can change is loaded with a warning,
 * in the log and in the report. */
int test_loader_unsafe_plugin_warns(void)
{
    char dir[600], open_dir[700], wfile[800], dfile[800], ofile[800], cfg[4096];
    snprintf(dir, sizeof dir, "%s", tc_temp_dir());
    snprintf(wfile, sizeof wfile, "%s/libww.so", dir);
    CHECK(copy_fake(wfile));
    ASSERT_EQ(chmod(wfile, 0666), 0);
    snprintf(open_dir, sizeof open_dir, "%s/open", dir);
    ASSERT_EQ(mkdir(open_dir, 0755), 0);
    ASSERT_EQ(chmod(open_dir, 0777), 0); /* not sticky: anyone may replace the file */
    snprintf(dfile, sizeof dfile, "%s/libwd.so", open_dir);
    CHECK(copy_fake(dfile));
    /* Owned by someone else: only root can make that file here. */
    bool other_owner = geteuid() == 0;
    snprintf(ofile, sizeof ofile, "%s/libother.so", dir);
    CHECK(copy_fake(ofile));
    if (other_owner)
        ASSERT_EQ(chown(ofile, 4321, 4321), 0);
    /* Three plugins of one device type would be duplicates: each is
     * checked in a process of its own. */
    const char *files[] = {wfile, dfile, ofile};
    const char *want[] = {"the file is world-writable", "is world-writable", "is owned by uid 4321"};
    for (int i = 0; i < (other_owner ? 3 : 2); i++) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
            snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\n\n[plugin.unsafe]\nlibrary = %s\nanswer = 42\n",
                     CPU_PLUGIN, files[i]);
            use_config(cfg);
            infinirtPluginInfo_t pi;
            int rc = find_plugin("unsafe", &pi) >= 0 && pi.status == INFINIRT_PLUGIN_LOADED &&
                             strstr(pi.message, want[i]) != NULL && strstr(pi.message, "warning") != NULL &&
                             strstr(tc_read_file(log_path()), want[i]) != NULL
                         ? 0
                         : 1;
            if (rc != 0)
                fprintf(stderr, "case %d: status %s, message '%s'; log:\n%s\n", i,
                        infinirtGetPluginStatusString(pi.status), pi.message, tc_read_file(log_path()));
            _exit(rc);
        }
        int ws = 0;
        ASSERT_EQ(waitpid(pid, &ws, 0), pid);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            TEST_FAILED_("case %d (%s): the plugin did not load with the warning '%s'", i, files[i], want[i]);
    }
    /* A file of ours in a safe folder: no warning. */
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\n\n[plugin.safe]\nlibrary = " FAKE_DIR "/libfake_good.so\nanswer = 42\n",
             CPU_PLUGIN);
    use_config(cfg);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("safe", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT(strstr(pi.message, "warning") == NULL);
    if (!other_owner)
        fprintf(stderr, "not root: the case of a file owned by another user was not run\n");
    return TEST_OK;
}

/* NOT_READY is an answer, not an error: polling an event that has not
 * completed logs nothing at warn level (it flooded stderr). */
int test_loader_not_ready_is_quiet(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nstreams = async\n", CPU_PLUGIN);
    use_config(cfg);
    tc_setenv("INFINIRT_LOG", "warn");
    infinirtStream_t s;
    infinirtEvent_t a, b;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&a));
    ASSERT_OK(infinirtEventCreate(&b));
    static tc_gate gate; /* static: the runner may open it after we return */
    ASSERT_OK(infinirtEventRecord(a, s));
    CHECK(tc_hold_stream(s, &gate));
    ASSERT_OK(infinirtEventRecord(b, s));
    infinirtEventStatus_t es;
    float ms;
    for (int i = 0; i < 100; i++) {
        ASSERT_OK(infinirtEventQuery(b, &es));
        ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY);
        ASSERT_STATUS(infinirtEventElapsedTime(&ms, a, b), INFINI_STATUS_NOT_READY);
    }
    /* A real mistake next to it is still logged. */
    ASSERT_STATUS(infinirtEventElapsedTime(NULL, a, b), INFINI_STATUS_NULL_POINTER);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtEventElapsedTime(&ms, a, b));
    const char *log = tc_read_file(log_path());
    ASSERT(log != NULL);
    ASSERT_STR_CONTAINS(log, "ms_ptr is NULL");
    if (strstr(log, "NOT_READY") != NULL || strstr(log, "not completed") != NULL)
        TEST_FAILED_("NOT_READY was logged as a warning:\n%s", log);
    ASSERT_OK(infinirtEventDestroy(a));
    ASSERT_OK(infinirtEventDestroy(b));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}
