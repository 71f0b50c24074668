/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader_tests.c - the loader against fake plugins: the plugins it refuses
 * and why, the ABI minors it accepts, and plugins started on first use;
 * with the helpers the loader tests share (loader_tests.h).  The config,
 * routing, thread and plugin-file tests are in loader_config_tests.c,
 * routing_tests.c, threads_tests.c and loader_plugin_files_tests.c.
 *
 * Each test is its own process (one CTest entry each), so each writes its
 * config and environment before its first infinirt call, which is when the
 * loader reads them.  FAKE_DIR and CPU_PLUGIN come from CMake.
 */
#define _GNU_SOURCE
#include "loader_tests.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *log_path(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/infinirt.log", tc_temp_dir());
    return p;
}

/* Write a config and point the loader at it; logging goes to a file. */
void use_config(const char *text)
{
    tc_use_config(text);
    tc_setenv("INFINIRT_LOG_FILE", log_path());
    tc_setenv("INFINIRT_LOG", "info");
}

int find_plugin(const char *name, infinirtPluginInfo_t *out)
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
int cpu_still_works(void)
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
int bad_plugin_case(const char *extra, const char *name, infinirtPluginStatus_t want, const char *msg_part)
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
/* Lines of the fake plugin's ledger file; "" when it has none yet. */
const char *ledger_text(const char *path)
{
    const char *t = tc_read_file(path);
    return t ? t : "";
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

int test_loader_table_short_for_minor_6(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_short16.so", "short16", INFINIRT_PLUGIN_ABI_MISMATCH,
                           "ABI 1.6 needs at least");
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

/* A plugin built against ABI 1.0 (its table ends after memset_async) keeps
 * working: its stream and event objects are the handles, the 1.1 calls
 * answer from the loader's defaults, and what needs an entry it lacks is
 * NOT_IMPLEMENTED.  Nothing past its struct_size is read: the fake's table
 * has a get_device_uuid there. */
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

/* A plugin declaring a device type outside infiniDevice_t is an ABI
 * mismatch; the others keep working. */
int test_loader_device_type_out_of_range(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_bad_type.so\nanswer = 42", "badtype",
                           INFINIRT_PLUGIN_ABI_MISMATCH, "device type 99 is not an infiniDevice_t");
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
    ASSERT_GE(n, 3);                        /* and the plugins found beside the loader, left out */
    ASSERT_STR_EQ(ledger_text(starts), ""); /* the count needs no start */
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

/* ------------------------------------------------ per-type start-up */

/* A call made in a thread of its own, so that the test can wait for it
 * with a time limit and fail, instead of hanging, if it never returns. */
typedef struct {
    pthread_t t;
    int (*fn)(void *arg);
    void *arg;
    int rc;
    atomic_int done;
} bg_call;

static void *bg_main(void *arg)
{
    bg_call *c = arg;
    c->rc = c->fn(c->arg);
    atomic_store(&c->done, 1);
    return NULL;
}

static void bg_start(bg_call *c, int (*fn)(void *), void *arg)
{
    c->fn = fn;
    c->arg = arg;
    atomic_init(&c->done, 0);
    if (pthread_create(&c->t, NULL, bg_main, c) != 0)
        abort();
}

/* Whether c returned within `seconds`. */
static bool bg_wait(bg_call *c, double seconds)
{
    for (double waited = 0; !atomic_load(&c->done) && waited < seconds; waited += 0.002)
        nanosleep(&(struct timespec){0, 2000000L}, NULL);
    return atomic_load(&c->done);
}

static int bg_cpu_work(void *arg)
{
    (void)arg;
    char a[64], b[64];
    void *d = NULL;
    tc_pattern(a, sizeof a, 7);
    if (infinirtSetDevice(INFINI_DEVICE_CPU, 0) != INFINI_STATUS_SUCCESS ||
        infinirtMalloc(&d, sizeof a) != INFINI_STATUS_SUCCESS ||
        infinirtMemcpy(d, a, sizeof a, INFINIRT_MEMCPY_H2D) != INFINI_STATUS_SUCCESS ||
        infinirtMemcpy(b, d, sizeof a, INFINIRT_MEMCPY_D2H) != INFINI_STATUS_SUCCESS ||
        infinirtFree(d) != INFINI_STATUS_SUCCESS)
        return -1;
    return memcmp(a, b, sizeof a) == 0 ? 0 : -2;
}

static int bg_count_ascend(void *arg)
{
    return infinirtGetDeviceCount(INFINI_DEVICE_ASCEND, arg) == INFINI_STATUS_SUCCESS ? 0 : -1;
}

static int bg_set_ascend(void *arg)
{
    (void)arg;
    return (int)infinirtSetDevice(INFINI_DEVICE_ASCEND, 1);
}

static int bg_all_counts(void *arg)
{
    return infinirtGetAllDeviceCount(arg) == INFINI_STATUS_SUCCESS ? 0 : -1;
}

static int bg_plugin_count(void *arg)
{
    return infinirtGetPluginCount(arg) == INFINI_STATUS_SUCCESS ? 0 : -1;
}

/* The report entry of plugin `name` as it stands (infinirtPeekPluginInfo). */
static int peek_plugin(const char *name, infinirtPluginInfo_t *out)
{
    int n = 0;
    ASSERT_OK(infinirtGetPluginCount(&n));
    for (int i = 0; i < n; i++) {
        ASSERT_OK(infinirtPeekPluginInfo(i, out));
        if (strcmp(out->name, name) == 0)
            return i;
    }
    return -1;
}

/* Each device type starts on its own.  While the fake's init (ascend) is
 * held on a gate the test controls - a driver whose start-up takes long,
 * or hangs - a first CPU call and the plugin count complete; the calls
 * that need ascend (its count, SetDevice on it, every type's count) wait,
 * and succeed once the gate opens; the report says the fake is starting,
 * and that cpu is loaded.  With one start lock for every type, the CPU
 * call waited behind the fake's init, as long as it ran (for ever behind a
 * hung driver).  Every wait here has a time limit, so the test fails (60
 * s) rather than hangs. */
int test_loader_start_per_type(void)
{
    char starts[600], gate[600], cfg[2048];
    snprintf(starts, sizeof starts, "%s/fake.starts", tc_temp_dir());
    snprintf(gate, sizeof gate, "%s/fake.gate", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[loader]\nplugins = cpu, fake\n\n[plugin.cpu]\nlibrary = %s\n\n[plugin.fake]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\nstarts = %s\ninit_gate = %s\n",
             CPU_PLUGIN, starts, gate);
    use_config(cfg);
    ASSERT_OK(infinirtInit());
    infinirtPluginInfo_t pi;
    ASSERT_GE(peek_plugin("fake", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_NOT_STARTED);
    ASSERT_STR_CONTAINS(pi.message, "no call has needed ascend devices yet");

    int ascend = -1;
    bg_call count;
    bg_start(&count, bg_count_ascend, &ascend);
    /* The fake's init is running (it writes its line, then waits). */
    for (int i = 0; i < 30000 && strcmp(ledger_text(starts), "init\n") != 0; i++)
        nanosleep(&(struct timespec){0, 2000000L}, NULL);
    ASSERT_STR_EQ(ledger_text(starts), "init\n");

    bg_call cpu, nplugins;
    int n = -1;
    bg_start(&cpu, bg_cpu_work, NULL);
    if (!bg_wait(&cpu, 60))
        TEST_FAILED_("%s", "a first CPU call waited 60 s for the ascend plugin's start (its init is held)");
    ASSERT_EQ(cpu.rc, 0);
    bg_start(&nplugins, bg_plugin_count, &n);
    if (!bg_wait(&nplugins, 60))
        TEST_FAILED_("%s", "infinirtGetPluginCount waited 60 s for the ascend plugin's start");
    ASSERT_EQ(nplugins.rc, 0);
    ASSERT_GE(n, 2);

    /* Calls that need ascend wait for its start. */
    int all[INFINI_DEVICE_TYPE_COUNT];
    memset(all, 0xff, sizeof all);
    bg_call set, counts;
    bg_start(&set, bg_set_ascend, NULL);
    bg_start(&counts, bg_all_counts, all);
    ASSERT_GE(peek_plugin("fake", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_STARTING);
    ASSERT_STR_CONTAINS(pi.message, "its init has been running for ");
    ASSERT_EQ(pi.device_count, 0);
    ASSERT_GE(peek_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_EQ(atomic_load(&count.done), 0); /* the gate holds the init */
    ASSERT_EQ(atomic_load(&set.done), 0);
    ASSERT_EQ(atomic_load(&counts.done), 0);

    FILE *f = fopen(gate, "w"); /* open the gate */
    ASSERT(f != NULL);
    fclose(f);
    ASSERT(bg_wait(&count, 60) && bg_wait(&set, 60) && bg_wait(&counts, 60));
    pthread_join(count.t, NULL);
    pthread_join(set.t, NULL);
    pthread_join(counts.t, NULL);
    pthread_join(cpu.t, NULL);
    pthread_join(nplugins.t, NULL);
    ASSERT_EQ(count.rc, 0);
    ASSERT_EQ(ascend, 2);
    ASSERT_EQ(set.rc, INFINI_STATUS_SUCCESS);
    ASSERT_EQ(counts.rc, 0);
    ASSERT_EQ(all[INFINI_DEVICE_ASCEND], 2);
    ASSERT_EQ(all[INFINI_DEVICE_CPU], 1);
    ASSERT_STR_EQ(ledger_text(starts), "init\n"); /* once */
    ASSERT_GE(peek_plugin("fake", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_EQ(pi.device_count, 2);
    return TEST_OK;
}

static int bg_get_device(void *arg)
{
    int *id = arg;
    infiniDevice_t t = INFINI_DEVICE_TYPE_COUNT;
    if (infinirtGetDevice(&t, id) != INFINI_STATUS_SUCCESS)
        return -1;
    return (int)t;
}

/* A configured default device whose plugin is slow to start holds up only
 * the threads that use the default: infinirtInit and a thread that sets
 * the CPU device go on, and a thread asking for its device waits, then
 * gets the default.  (infinirtInit used to check the default device, so
 * every call waited for that plugin's init.) */
int test_loader_start_default_device_lazy(void)
{
    char starts[600], gate[600], cfg[2048];
    snprintf(starts, sizeof starts, "%s/fake.starts", tc_temp_dir());
    snprintf(gate, sizeof gate, "%s/fake.gate", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[loader]\nplugins = cpu, fake\ndefault_device = ascend:1\n\n[plugin.cpu]\nlibrary = %s\n\n"
             "[plugin.fake]\nlibrary = " FAKE_DIR "/libfake_good.so\nanswer = 42\nstarts = %s\ninit_gate = %s\n",
             CPU_PLUGIN, starts, gate);
    use_config(cfg);
    bg_call init, cpu, dev;
    bg_start(&init, bg_plugin_count, &(int){0}); /* infinirtInit, then the count */
    if (!bg_wait(&init, 60))
        TEST_FAILED_("%s", "infinirtInit waited 60 s for the default device's plugin to start");
    ASSERT_STR_EQ(ledger_text(starts), ""); /* nothing needed ascend yet */
    int id = -1;
    bg_start(&dev, bg_get_device, &id); /* needs the default: starts ascend */
    for (int i = 0; i < 30000 && strcmp(ledger_text(starts), "init\n") != 0; i++)
        nanosleep(&(struct timespec){0, 2000000L}, NULL);
    ASSERT_STR_EQ(ledger_text(starts), "init\n");
    bg_start(&cpu, bg_cpu_work, NULL);
    if (!bg_wait(&cpu, 60))
        TEST_FAILED_("%s", "a CPU call waited 60 s for the default device's plugin to start");
    ASSERT_EQ(cpu.rc, 0);
    ASSERT_EQ(atomic_load(&dev.done), 0);
    FILE *f = fopen(gate, "w");
    ASSERT(f != NULL);
    fclose(f);
    ASSERT(bg_wait(&dev, 60));
    pthread_join(init.t, NULL);
    pthread_join(cpu.t, NULL);
    pthread_join(dev.t, NULL);
    ASSERT_EQ(dev.rc, INFINI_DEVICE_ASCEND);
    ASSERT_EQ(id, 1);
    return TEST_OK;
}

/* ------------------------------------------------ NULL objects of a plugin */

/* A config with the fake whose create entries listed in `nulls` answer
 * SUCCESS with a NULL object; its ledger file is *ledger. */
static void use_null_objects(const char *nulls, const char **ledger)
{
    static char path[600];
    char cfg[2048];
    snprintf(path, sizeof path, "%s/nulls.ledger", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[plugin.nulls]\nlibrary = " FAKE_DIR
             "/libfake_null_objects.so\nanswer = 42\ndevices = 1\nledger = %s\nnull = %s\n",
             path, nulls);
    use_config(cfg);
    *ledger = path;
}

/* stream_create_with_flags, stream_create_from_native and event_create
 * answering SUCCESS with a NULL object (a plugin without native-handle
 * getters, whose objects are the handles): each creation fails with
 * INTERNAL_ERROR and a log line naming the plugin, the output keeps its
 * value, and nothing is registered - the next creation fails the same way
 * (not on a handle value already live), and NULL is no live stream or
 * event.  An allocator fence whose event comes back NULL goes by the
 * loader's counts: no record on a NULL event reaches the plugin. */
int test_loader_null_objects_create(void)
{
    const char *ledger;
    use_null_objects("stream_create_with_flags, stream_create_from_native, event_create", &ledger);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    void *const mark = (void *)(uintptr_t)0x5a50;
    static int native_stream;
    for (int round = 0; round < 2; round++) {
        infinirtStream_t s = mark;
        ASSERT_STATUS(infinirtStreamCreate(&s), INFINI_STATUS_INTERNAL_ERROR);
        ASSERT_PTR_EQ(s, mark);
        ASSERT_STATUS(infinirtStreamCreateWithFlags(&s, INFINIRT_STREAM_NON_BLOCKING), INFINI_STATUS_INTERNAL_ERROR);
        ASSERT_PTR_EQ(s, mark);
        ASSERT_STATUS(infinirtStreamCreateFromNative(&s, &native_stream), INFINI_STATUS_INTERNAL_ERROR);
        ASSERT_PTR_EQ(s, mark);
        infinirtEvent_t e = mark;
        ASSERT_STATUS(infinirtEventCreate(&e), INFINI_STATUS_INTERNAL_ERROR);
        ASSERT_PTR_EQ(e, mark);
        ASSERT_STATUS(infinirtEventCreateWithFlags(&e, INFINIRT_EVENT_DISABLE_TIMING), INFINI_STATUS_INTERNAL_ERROR);
        ASSERT_PTR_EQ(e, mark);
    }
    infinirtEventStatus_t es;
    ASSERT_STATUS(infinirtEventQuery(NULL, &es), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventDestroy(NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamDestroy(NULL), INFINI_STATUS_BAD_PARAM);
    const char *log = tc_read_file(log_path());
    ASSERT_STR_CONTAINS(log, "(plugin nulls): stream_create_with_flags answered SUCCESS with a NULL stream");
    ASSERT_STR_CONTAINS(log, "(plugin nulls): stream_create_from_native answered SUCCESS with a NULL stream");
    ASSERT_STR_CONTAINS(log, "(plugin nulls): event_create answered SUCCESS with a NULL event");

    /* A free behind work queued on the default stream takes a fence. */
    unsigned char *d, host[256];
    ASSERT_OK(infinirtMalloc((void **)&d, sizeof host));
    ASSERT_OK(infinirtMemsetAsync(d, 7, sizeof host, NULL));
    ASSERT_OK(infinirtFree(d));
    ASSERT(strstr(ledger_text(ledger), "event_record") == NULL);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), "event_create for a fence failed (INTERNAL_ERROR)");
    /* The device still serves. */
    ASSERT_OK(infinirtMalloc((void **)&d, sizeof host));
    ASSERT_OK(infinirtMemsetAsync(d, 9, sizeof host, NULL));
    ASSERT_OK(infinirtMemcpy(host, d, sizeof host, INFINIRT_MEMCPY_D2H));
    ASSERT_EQ(host[0], 9);
    ASSERT_EQ(host[sizeof host - 1], 9);
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtDeviceSynchronize());
    return TEST_OK;
}

/* stream_end_capture answering SUCCESS with a NULL graph ends the capture
 * with INTERNAL_ERROR and *graph_ptr = NULL (as the call's other failures
 * after the capture ended), a log line naming the plugin, and no graph
 * handle; the stream can capture again. */
int test_loader_null_objects_graph(void)
{
    const char *ledger;
    use_null_objects("stream_end_capture", &ledger);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    for (int round = 0; round < 2; round++) {
        ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
        infinirtGraph_t g = (infinirtGraph_t)(uintptr_t)0x5a50;
        ASSERT_STATUS(infinirtStreamEndCapture(s, &g), INFINI_STATUS_INTERNAL_ERROR);
        ASSERT_PTR_EQ(g, NULL);
    }
    ASSERT_STR_CONTAINS(tc_read_file(log_path()),
                        "(plugin nulls): stream_end_capture answered SUCCESS with a NULL graph");
    ASSERT(strstr(ledger_text(ledger), "graph_destroy") == NULL); /* nothing to destroy */
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* graph_instantiate answering SUCCESS with a NULL executable graph: the
 * same, with the graph left as it was and the caller's output untouched. */
int test_loader_null_objects_exec(void)
{
    const char *ledger;
    use_null_objects("graph_instantiate", &ledger);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    infinirtGraph_t g = NULL;
    ASSERT_OK(infinirtStreamEndCapture(s, &g));
    infinirtGraphExec_t x = (infinirtGraphExec_t)(uintptr_t)0x5a50;
    char why[128];
    for (int round = 0; round < 2; round++) {
        ASSERT_STATUS(infinirtGraphInstantiate(&x, g, NULL, why, sizeof why), INFINI_STATUS_INTERNAL_ERROR);
        ASSERT_PTR_EQ(x, (infinirtGraphExec_t)(uintptr_t)0x5a50);
        ASSERT_STR_CONTAINS(why, "INTERNAL_ERROR");
    }
    ASSERT_STR_CONTAINS(tc_read_file(log_path()),
                        "(plugin nulls): graph_instantiate answered SUCCESS with a NULL executable graph");
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "graph_destroy");
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}
