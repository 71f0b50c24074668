/* common.c - helpers shared by the test files. */
#define _GNU_SOURCE
#include "common.h"

#include "infinirt_cpu.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

infiniDevice_t tc_device_type(void)
{
    const char *d = getenv("INFINIRT_TEST_DEVICE");
    if (d == NULL || d[0] == '\0')
        return INFINI_DEVICE_CPU;
    if (strcmp(d, "cuda") == 0)
        return INFINI_DEVICE_NVIDIA;
    /* Names only (infinirtGetDeviceTypeName needs no initialised loader:
     * this also runs in exit handlers after shutdown). */
    for (int t = 0; t <= INFINI_DEVICE_TYPE_COUNT; t++) {
        infiniDevice_t type = t < INFINI_DEVICE_TYPE_COUNT ? (infiniDevice_t)t : INFINI_DEVICE_OPENCL;
        if (strcmp(d, infinirtGetDeviceTypeName(type)) == 0)
            return type;
    }
    fprintf(stderr, "INFINIRT_TEST_DEVICE=%s is not a device type name (cpu, nvidia, opencl, ascend, ...)\n", d);
    abort();
}

int tc_use_device(int id)
{
    int n = 0;
    if (infinirtGetDeviceCount(tc_device_type(), &n) != INFINI_STATUS_SUCCESS || n <= id) {
        /* On the GPU machine (tests/gpu/run-cuda-checks.sh) an NVIDIA
         * backend without its first device is a failure; a test that
         * needs a second one still skips on a one-GPU machine. */
        const char *require = getenv("INFINIRT_CUDA_TEST_REQUIRE_GPU");
        bool fail = id == 0 && n == 0 && tc_device_type() == INFINI_DEVICE_NVIDIA && require != NULL &&
                    strcmp(require, "1") == 0;
        fprintf(stderr, "%s: needs %d %s device(s), found %d%s\n", fail ? "FAIL" : "skip", id + 1,
                infinirtGetDeviceTypeName(tc_device_type()), n, fail ? " (INFINIRT_CUDA_TEST_REQUIRE_GPU=1)" : "");
        return fail ? TEST_FAIL : TEST_SKIP;
    }
    if (infinirtSetDevice(tc_device_type(), id) != INFINI_STATUS_SUCCESS)
        return TEST_FAIL;
    return TEST_OK;
}

void tc_pattern(void *buf, size_t n, unsigned seed)
{
    unsigned char *p = buf;
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

int tc_device_all(const void *d, size_t n, unsigned char v)
{
    unsigned char *b = malloc(n);
    ASSERT(b != NULL);
    ASSERT_OK(infinirtMemcpy(b, d, n, INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < n; i++)
        if (b[i] != v)
            TEST_FAILED_("device byte %zu of %zu is 0x%02x, want 0x%02x", i, n, b[i], v);
    free(b);
    return TEST_OK;
}

const char *tc_temp_dir(void)
{
    static char dir[256];
    if (dir[0] == '\0') {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/infinirt-test-XXXXXX", base && base[0] ? base : "/tmp");
        if (mkdtemp(dir) == NULL) {
            perror("mkdtemp");
            abort();
        }
    }
    return dir;
}

const char *tc_write_temp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tc_temp_dir(), name);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

const char *tc_read_file(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Tests see only the plugins their config names: unless the text lists
 * them itself, a [loader] plugins = line naming its [plugin.NAME] sections
 * is appended, so the plugins beside the loader (PoCL's OpenCL takes a
 * second to start) stay out.  tests/config_tests.c writes its files itself
 * to test what a file without the list does. */
void tc_use_config(const char *text)
{
    static char buf[65536];
    size_t n = (size_t)snprintf(buf, sizeof buf, "%s", text);
    if (strstr(text, "\nplugins =") == NULL && strstr(text, "[plugin.") != NULL && n < sizeof buf) {
        n += (size_t)snprintf(buf + n, sizeof buf - n, "\n[loader]\nplugins = ");
        for (const char *p = strstr(text, "[plugin."); p != NULL && n < sizeof buf; p = strstr(p + 1, "[plugin.")) {
            const char *close = strchr(p, ']');
            if (close != NULL)
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%.*s,", (int)(close - p - 8), p + 8);
        }
        if (n < sizeof buf)
            snprintf(buf + n, sizeof buf - n, "\n");
    }
    if (n >= sizeof buf)
        abort();
    tc_setenv("INFINIRT_CONFIG", tc_write_temp("infinirt.ini", buf));
}

void tc_setenv(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0)
        abort();
}

/* ------------------------------------------------ declared unsupported */

static const char *const k_feature_names[TC_FEATURE_COUNT] = {
    [TC_HOST_FUNCTIONS] = "host_functions",
    [TC_ASYNC_STREAMS] = "async_streams",
    [TC_PEER_ACCESS] = "peer_access",
    [TC_FOREIGN_MEMORY] = "foreign_memory",
};

const char *tc_feature_name(tc_feature f)
{
    return (unsigned)f < TC_FEATURE_COUNT ? k_feature_names[f] : "unknown feature";
}

#define BIT(f) (1u << (f))

/* The CPU backend with streams = inline runs stream work on the caller's
 * thread; it says so in every stream's ops flags (infinirt_cpu.h). */
static unsigned cpu_by_config(void)
{
    infinirtStream_t s;
    void *native = NULL;
    unsigned bits = 0;
    if (infinirtStreamCreate(&s) != INFINI_STATUS_SUCCESS)
        return 0;
    if (infinirtStreamGetNativeHandle(s, &native) == INFINI_STATUS_SUCCESS && native != NULL &&
        (infinirtCpuStreamGetOps(native)->flags & INFINIRT_CPU_STREAM_INLINE))
        bits |= BIT(TC_ASYNC_STREAMS);
    infinirtStreamDestroy(s);
    return bits;
}

/* OpenCL with memory = buffer hands out cl_mem buffers, not pointers into
 * the device's SVM: no memory made outside infinirt can stand for them. */
static unsigned opencl_by_config(void)
{
    void *d = NULL, *native = NULL;
    unsigned bits = 0;
    if (infinirtMalloc(&d, 256) != INFINI_STATUS_SUCCESS)
        return 0;
    if (infinirtMemGetNativeHandle(d, &native, NULL) == INFINI_STATUS_SUCCESS && native != d)
        bits |= BIT(TC_FOREIGN_MEMORY);
    infinirtFree(d);
    return bits;
}

/* What each plugin of this tree (and the vendor example) does not support:
 * `always`, plus what its config decides, read from what the plugin says
 * of itself. */
static const struct {
    const char *plugin;
    unsigned always;
    unsigned (*by_config)(void);
} k_declared[] = {
    {"cpu", 0, cpu_by_config},
    {"opencl", 0, opencl_by_config},
    /* The suite links no CUDA: it makes no CUDA memory of its own. */
    {"cuda", BIT(TC_FOREIGN_MEMORY), NULL},
    /* examples/vendor-plugin: launch_host_func is NULL; its device memory
     * is the plugin's own, which the suite cannot make. */
    {"vendor", BIT(TC_HOST_FUNCTIONS) | BIT(TC_FOREIGN_MEMORY), NULL},
};

/* INFINIRT_TEST_UNSUPPORTED, parsed: the bits it names. */
static unsigned env_declared(const char *list)
{
    unsigned bits = 0;
    const char *p = list;
    while (*p != '\0') {
        size_t n = strcspn(p, ", ");
        int f = 0;
        while (n > 0 && f < TC_FEATURE_COUNT &&
               !(strlen(k_feature_names[f]) == n && strncmp(p, k_feature_names[f], n) == 0))
            f++;
        if (n > 0 && f == TC_FEATURE_COUNT) {
            fprintf(stderr, "INFINIRT_TEST_UNSUPPORTED=%s: '%.*s' is not a feature (known:", list, (int)n, p);
            for (f = 0; f < TC_FEATURE_COUNT; f++)
                fprintf(stderr, " %s", k_feature_names[f]);
            fprintf(stderr, ")\n");
            abort();
        }
        if (n > 0)
            bits |= BIT(f);
        p += n;
        p += strspn(p, ", ");
    }
    return bits;
}

/* The name of the plugin serving the current device ("" when none). */
static const char *current_plugin(void)
{
    static infinirtDeviceProperties_t props;
    infiniDevice_t type;
    int id;
    props.plugin[0] = '\0';
    if (infinirtGetDevice(&type, &id) != INFINI_STATUS_SUCCESS ||
        infinirtGetDeviceProperties(type, id, &props) != INFINI_STATUS_SUCCESS)
        props.plugin[0] = '\0';
    return props.plugin;
}

/* The declared bits of `plugin`, computed once per plugin and process
 * (by_config may create a stream: tc_hold_stream asks before it holds
 * one). */
static unsigned declared_bits(const char *plugin)
{
    static struct {
        char plugin[64];
        unsigned bits;
    } cache[8];
    static int ncache;
    for (int i = 0; i < ncache; i++)
        if (strcmp(cache[i].plugin, plugin) == 0)
            return cache[i].bits;
    const char *env = getenv("INFINIRT_TEST_UNSUPPORTED");
    unsigned bits = 0;
    if (env != NULL) {
        bits = env_declared(env);
    } else {
        for (size_t i = 0; i < sizeof k_declared / sizeof k_declared[0]; i++)
            if (strcmp(k_declared[i].plugin, plugin) == 0)
                bits = k_declared[i].always | (k_declared[i].by_config ? k_declared[i].by_config() : 0);
    }
    if (ncache < 8) {
        snprintf(cache[ncache].plugin, sizeof cache[ncache].plugin, "%s", plugin);
        cache[ncache++].bits = bits;
    }
    return bits;
}

bool tc_declared_unsupported(tc_feature f)
{
    return (declared_bits(current_plugin()) & BIT(f)) != 0;
}

int tc_unsupported(tc_feature f)
{
    const char *plugin = current_plugin();
    if (declared_bits(plugin) & BIT(f)) {
        fprintf(stderr, "skip: the %s plugin declares %s unsupported\n", plugin, tc_feature_name(f));
        return TEST_SKIP;
    }
    fprintf(stderr,
            "FAIL: the %s plugin lacks %s but does not declare it unsupported: a skip must be declared "
            "(tests/common.c's table, or INFINIRT_TEST_UNSUPPORTED=%s)\n",
            plugin, tc_feature_name(f), tc_feature_name(f));
    return TEST_FAIL;
}

int tc_supported(tc_feature f)
{
    const char *plugin = current_plugin();
    if (declared_bits(plugin) & BIT(f)) {
        fprintf(stderr, "FAIL: the %s plugin declares %s unsupported, but it works: correct the declaration\n",
                plugin, tc_feature_name(f));
        return TEST_FAIL;
    }
    return TEST_OK;
}

int tc_needs_devices(infiniDevice_t type, int n)
{
    int have = 0;
    if (infinirtGetDeviceCount(type, &have) != INFINI_STATUS_SUCCESS)
        have = 0;
    if (have >= n)
        return TEST_OK;
    fprintf(stderr, "skip: needs %d %s device(s), found %d\n", n, infinirtGetDeviceTypeName(type), have);
    return TEST_SKIP;
}

int tc_needs_caching_allocator(bool need_cache)
{
    infinirtAllocatorSettings_t as;
    if (infinirtGetAllocatorSettings(&as) != INFINI_STATUS_SUCCESS)
        return TEST_FAIL;
    if (as.enabled && !(need_cache && as.release_on_free))
        return TEST_OK;
    fprintf(stderr, "skip: needs the caching allocator%s, which this config turns off\n",
            need_cache ? " keeping freed memory" : "");
    return TEST_SKIP;
}

int tc_gate_timeout_ms = 30000;
static int g_gate_timeouts;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tc_gate_wait_fn(void *arg)
{
    tc_gate *g = arg;
    if (g->armed && pthread_equal(g->launcher, pthread_self())) {
        g->ran_inline = 1;
        return;
    }
    __atomic_store_n(&g->reached, 1, __ATOMIC_SEQ_CST);
    int limit = __atomic_load_n(&tc_gate_timeout_ms, __ATOMIC_SEQ_CST);
    int64_t deadline = now_ms() + limit;
    while (!__atomic_load_n(&g->open, __ATOMIC_SEQ_CST)) {
        if (now_ms() >= deadline) {
            __atomic_fetch_add(&g_gate_timeouts, 1, __ATOMIC_SEQ_CST);
            fprintf(stderr,
                    "a gate holding a stream was not opened within %d ms: the thread that opens it is "
                    "blocked (a deadlock: is a copy of pageable host memory queued behind the gate?); "
                    "the stream is let go and the test fails\n",
                    limit);
            return;
        }
        tc_sleep_ms(1);
    }
}

int tc_gate_verdict(int rc)
{
    int n = __atomic_load_n(&g_gate_timeouts, __ATOMIC_SEQ_CST);
    if (n == 0)
        return rc;
    fprintf(stderr, "FAIL: %d gate(s) timed out in this test (see above)\n", n);
    return TEST_FAIL;
}

void tc_gate_timeouts_reset(void)
{
    __atomic_store_n(&g_gate_timeouts, 0, __ATOMIC_SEQ_CST);
}

/* What a host function launched to hold a stream says of the backend:
 * launched with status st, and run on the caller's thread (ran_inline). */
static int host_fn_verdict(infiniStatus_t st, bool ran_inline)
{
    if (st == INFINI_STATUS_NOT_IMPLEMENTED)
        return tc_unsupported(TC_HOST_FUNCTIONS);
    if (st != INFINI_STATUS_SUCCESS) {
        fprintf(stderr, "infinirtLaunchHostFunc failed: %s\n", infinirtGetErrorName(st));
        return TEST_FAIL;
    }
    CHECK(tc_supported(TC_HOST_FUNCTIONS));
    if (ran_inline) /* stream work runs on the caller's thread */
        return tc_unsupported(TC_ASYNC_STREAMS);
    return tc_supported(TC_ASYNC_STREAMS);
}

/* Gates handed to host functions, so the runner can open them all when a
 * test returns early on a failed assertion: otherwise the held stream's
 * worker would wait for ever and the process hang at exit instead of
 * reporting the failure. */
static tc_gate *g_gates[64];
static int g_ngates;

void tc_open_all_gates(void)
{
    for (int i = 0; i < g_ngates; i++)
        tc_gate_open(g_gates[i]);
    g_ngates = 0;
}

int tc_hold_stream(infinirtStream_t s, tc_gate *g)
{
    (void)tc_declared_unsupported(TC_HOST_FUNCTIONS); /* before the stream is held */
    if (g_ngates < 64)
        g_gates[g_ngates++] = g;
    /* Every field set here: a gate left uninitialised (an automatic
     * variable) read a stale ran_inline or open and skipped or ran past. */
    g->open = 0;
    g->reached = 0;
    g->ran_inline = 0;
    g->launcher = pthread_self();
    g->armed = 1;
    infiniStatus_t st = infinirtLaunchHostFunc(s, tc_gate_wait_fn, g);
    return host_fn_verdict(st, st == INFINI_STATUS_SUCCESS && g->ran_inline);
}

typedef struct {
    pthread_t t;
    int ran;
} ran_on;

static void note_thread(void *p)
{
    ran_on *r = p;
    r->t = pthread_self();
    __atomic_store_n(&r->ran, 1, __ATOMIC_SEQ_CST);
}

int tc_needs_async(void)
{
    (void)tc_declared_unsupported(TC_HOST_FUNCTIONS); /* not in the middle of the probe */
    infinirtStream_t s;
    if (infinirtStreamCreate(&s) != INFINI_STATUS_SUCCESS)
        return TEST_FAIL;
    ran_on seen = {0};
    infiniStatus_t st = infinirtLaunchHostFunc(s, note_thread, &seen);
    bool inline_ran = st == INFINI_STATUS_SUCCESS && __atomic_load_n(&seen.ran, __ATOMIC_SEQ_CST) &&
                      pthread_equal(seen.t, pthread_self());
    infinirtStreamSynchronize(s);
    infinirtStreamDestroy(s);
    return host_fn_verdict(st, inline_ran);
}

void tc_gate_open(tc_gate *g)
{
    __atomic_store_n(&g->open, 1, __ATOMIC_SEQ_CST);
}

void tc_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
