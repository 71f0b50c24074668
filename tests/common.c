/* SPDX-License-Identifier: Apache-2.0 */
/* common.c - helpers shared by the test files. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The type INFINIRT_TEST_DEVICE names into *out (cpu when unset): 0, or
 * -1 when it names none.  Names only (infinirtGetDeviceTypeName needs no
 * initialised loader: this also runs in exit handlers after shutdown, and
 * in the runner's process before it forks a test). */
static int parse_device(infiniDevice_t *out)
{
    const char *d = getenv("INFINIRT_TEST_DEVICE");
    *out = INFINI_DEVICE_CPU;
    if (d == NULL || d[0] == '\0')
        return 0;
    if (strcmp(d, "cuda") == 0) {
        *out = INFINI_DEVICE_NVIDIA;
        return 0;
    }
    for (int t = 0; t <= INFINI_DEVICE_TYPE_COUNT; t++) {
        infiniDevice_t type = t < INFINI_DEVICE_TYPE_COUNT ? (infiniDevice_t)t : INFINI_DEVICE_OPENCL;
        if (strcmp(d, infinirtGetDeviceTypeName(type)) == 0) {
            *out = type;
            return 0;
        }
    }
    return -1;
}

static void say_bad_device(void)
{
    const char *d = getenv("INFINIRT_TEST_DEVICE");
    fprintf(stderr, "INFINIRT_TEST_DEVICE=%s is not a device type name; name one of:", d);
    for (int t = 0; t <= INFINI_DEVICE_TYPE_COUNT; t++)
        fprintf(stderr, " %s",
                infinirtGetDeviceTypeName(t < INFINI_DEVICE_TYPE_COUNT ? (infiniDevice_t)t : INFINI_DEVICE_OPENCL));
    fprintf(stderr, " (or cuda, for nvidia)%s; infinirt-info lists the types that have devices\n",
            strchr(d, ':') != NULL ? ".  A type, not a device: the suite tests devices 0 and 1 of it, and the "
                                     "plugin's config chooses which devices those are"
                                   : "");
}

infiniDevice_t tc_device_type(void)
{
    infiniDevice_t type;
    if (parse_device(&type) != 0) {
        say_bad_device();
        fflush(NULL);
        _exit(2); /* not abort: a bad setting is no crash */
    }
    return type;
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
 * second to start) stay out.  tests/loader/config_tests.c writes its files itself
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

/* Each feature's name (what INFINIRT_TEST_UNSUPPORTED lists) and meaning
 * (what --features prints). */
static const struct {
    const char *name, *meaning;
} k_features[TC_FEATURE_COUNT] = {
    [TC_STREAMS] = {"streams", "infinirtStreamCreate, and work queued on a stream or the NULL stream "
                               "(MemcpyAsync, MallocAsync, FreeAsync, ...)"},
    [TC_EVENTS] = {"events", "infinirtEventCreate, EventRecord, EventQuery, EventSynchronize, StreamWaitEvent"},
    [TC_MEMSET] = {"memset", "infinirtMemset, and MemsetAsync where there are streams"},
    [TC_PINNED_MEMORY] = {"pinned_memory", "infinirtMallocHost and FreeHost (page-locked host memory)"},
    [TC_MEM_INFO] = {"mem_info", "infinirtGetMemInfo, and the memory capacity of a resource snapshot"},
    [TC_HOST_FUNCTIONS] = {"host_functions", "infinirtLaunchHostFunc"},
    [TC_ASYNC_STREAMS] = {"async_streams", "stream work runs after the call that queued it returns, so a host "
                                           "function can hold a stream (not the CPU backend's streams = inline)"},
    [TC_PEER_ACCESS] = {"peer_access", "a stream of device 0 reads or writes memory of device 1"},
    [TC_FOREIGN_MEMORY] = {"foreign_memory", "the suite can make device memory without infinirt (malloc on the CPU "
                                             "backend, SVM on OpenCL; no other backend)"},
    [TC_GRAPHS] = {"graphs", "infinirtStreamBeginCapture, EndCapture, GraphInstantiate, GraphLaunch"},
};

const char *tc_feature_name(tc_feature f)
{
    return (unsigned)f < TC_FEATURE_COUNT ? k_features[f].name : "unknown feature";
}

const char *tc_feature_meaning(tc_feature f)
{
    return (unsigned)f < TC_FEATURE_COUNT ? k_features[f].meaning : "";
}

/* What each plugin of this tree (and the vendor example) declares
 * unsupported, each in its own file, tests/conformance/declared_*.c.
 * A plugin outside the tree declares its own with
 * INFINIRT_TEST_UNSUPPORTED (tests/fixtures/smallest_plugin.c's
 * registration in tests/CMakeLists.txt does, as a vendor would). */
static const tc_declaration *const k_declared[] = {
    &tc_declared_cpu,
    &tc_declared_opencl,
    &tc_declared_cuda,
    &tc_declared_vendor,
};

/* INFINIRT_TEST_UNSUPPORTED's list into *bits: 0, or -1 with *bad and *nbad
 * naming the first word that is no feature. */
static int parse_features(const char *list, unsigned *bits, const char **bad, int *nbad)
{
    *bits = 0;
    for (const char *p = list + strspn(list, ", "); *p != '\0'; p += strspn(p, ", ")) {
        size_t n = strcspn(p, ", ");
        int f = 0;
        while (f < TC_FEATURE_COUNT && !(strlen(k_features[f].name) == n && strncmp(p, k_features[f].name, n) == 0))
            f++;
        if (f == TC_FEATURE_COUNT) {
            *bad = p;
            *nbad = (int)n;
            return -1;
        }
        *bits |= TC_BIT(f);
        p += n;
    }
    return 0;
}

static void say_bad_features(const char *list, const char *bad, int nbad)
{
    fprintf(stderr, "INFINIRT_TEST_UNSUPPORTED=%s: '%.*s' is not a feature; the features are:", list, nbad, bad);
    for (int f = 0; f < TC_FEATURE_COUNT; f++)
        fprintf(stderr, " %s", k_features[f].name);
    fprintf(stderr, " (infinirt-conformance --features says what each means)\n");
}

/* INFINIRT_TEST_UNSUPPORTED, parsed; a word that is no feature ends the
 * process, saying so (tc_check_environment says it before any test). */
static unsigned env_declared(const char *list)
{
    unsigned bits;
    const char *bad;
    int nbad;
    if (parse_features(list, &bits, &bad, &nbad) == 0)
        return bits;
    say_bad_features(list, bad, nbad);
    fflush(NULL);
    _exit(2);
}

int tc_check_environment(void)
{
    infiniDevice_t type;
    if (parse_device(&type) != 0) {
        say_bad_device();
        return 2;
    }
    const char *env = getenv("INFINIRT_TEST_UNSUPPORTED");
    unsigned bits;
    const char *bad;
    int nbad;
    if (env != NULL && parse_features(env, &bits, &bad, &nbad) != 0) {
        say_bad_features(env, bad, nbad);
        return 2;
    }
    return 0;
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

/* The plugin under test: the one serving INFINIRT_TEST_DEVICE's type ("" when
 * no plugin serves it with a device). */
static bool is_plugin_under_test(const char *plugin)
{
    static infinirtDeviceProperties_t props;
    static int asked;
    if (!asked) {
        if (infinirtGetDeviceProperties(tc_device_type(), 0, &props) != INFINI_STATUS_SUCCESS)
            props.plugin[0] = '\0';
        asked = 1;
    }
    return plugin[0] != '\0' && strcmp(plugin, props.plugin) == 0;
}

/* What this process knows of one plugin: its declared bits, and the
 * backend's answers tc_needs got (-2: not asked yet). */
typedef struct {
    char plugin[64];
    unsigned bits;
    signed char has[TC_FEATURE_COUNT];
} plugin_facts;

/* The facts of `plugin`, its declared bits computed once per plugin and
 * process (by_config may create a stream: tc_hold_stream asks before it
 * holds one); NULL when more plugins than the cache holds were asked. */
static plugin_facts *facts_of(const char *plugin)
{
    static plugin_facts cache[8];
    static int ncache;
    for (int i = 0; i < ncache; i++)
        if (strcmp(cache[i].plugin, plugin) == 0)
            return &cache[i];
    const char *env = getenv("INFINIRT_TEST_UNSUPPORTED");
    unsigned bits = 0;
    if (env != NULL && is_plugin_under_test(plugin)) {
        bits = env_declared(env);
    } else {
        for (size_t i = 0; i < sizeof k_declared / sizeof k_declared[0]; i++)
            if (strcmp(k_declared[i]->plugin, plugin) == 0)
                bits = k_declared[i]->always | (k_declared[i]->by_config ? k_declared[i]->by_config() : 0);
    }
    static plugin_facts spare;
    plugin_facts *pf = ncache < 8 ? &cache[ncache++] : &spare;
    snprintf(pf->plugin, sizeof pf->plugin, "%s", plugin);
    pf->bits = bits;
    memset(pf->has, -2, sizeof pf->has);
    return pf;
}

static unsigned declared_bits(const char *plugin)
{
    return facts_of(plugin)->bits;
}

bool tc_declared_unsupported(tc_feature f)
{
    return (declared_bits(current_plugin()) & TC_BIT(f)) != 0;
}

static int say_undeclared(const char *plugin, tc_feature f)
{
    fprintf(stderr,
            "FAIL: the %s plugin lacks %s but does not declare it unsupported: a skip must "
            "be declared (INFINIRT_TEST_UNSUPPORTED=%s, a comma-separated list; infinirt-conformance "
            "--features lists them)\n",
            plugin, tc_feature_name(f), tc_feature_name(f));
    return TEST_FAIL;
}

static int say_declared_works(const char *plugin, tc_feature f)
{
    fprintf(stderr,
            "FAIL: the %s plugin declares %s unsupported, but it works: correct the declaration "
            "(INFINIRT_TEST_UNSUPPORTED)\n",
            plugin, tc_feature_name(f));
    return TEST_FAIL;
}

int tc_unsupported(tc_feature f)
{
    const char *plugin = current_plugin();
    if (declared_bits(plugin) & TC_BIT(f)) {
        fprintf(stderr, "skip: the %s plugin declares %s unsupported\n", plugin, tc_feature_name(f));
        return TEST_SKIP;
    }
    return say_undeclared(plugin, f);
}

int tc_supported(tc_feature f)
{
    const char *plugin = current_plugin();
    if (declared_bits(plugin) & TC_BIT(f))
        return say_declared_works(plugin, f);
    return TEST_OK;
}

/* The answer to a question's call: 1 it worked, 0 NOT_IMPLEMENTED, -1 any
 * other failure (said on stderr). */
static int answer(infiniStatus_t st, const char *call)
{
    if (st == INFINI_STATUS_SUCCESS)
        return 1;
    if (st == INFINI_STATUS_NOT_IMPLEMENTED)
        return 0;
    fprintf(stderr, "FAIL: %s, asked whether the backend has it, returned %s\n", call, infinirtGetErrorName(st));
    return -1;
}

static void noop_fn(void *arg)
{
    (void)arg;
}

/* Whether the current device's backend has f: a call that needs it, and
 * what it answered (as `answer`).  What it creates it destroys. */
static int ask_backend(tc_feature f)
{
    infinirtStream_t s;
    infinirtEvent_t e;
    infinirtGraph_t g;
    void *p;
    int r;
    switch (f) {
    case TC_STREAMS:
        if ((r = answer(infinirtStreamCreate(&s), "infinirtStreamCreate")) == 1 &&
            answer(infinirtStreamDestroy(s), "infinirtStreamDestroy") != 1)
            return -1;
        return r;
    case TC_EVENTS:
        if ((r = answer(infinirtEventCreate(&e), "infinirtEventCreate")) == 1 &&
            answer(infinirtEventDestroy(e), "infinirtEventDestroy") != 1)
            return -1;
        return r;
    case TC_MEMSET:
        if (answer(infinirtMalloc(&p, 256), "infinirtMalloc") != 1)
            return -1;
        r = answer(infinirtMemset(p, 0, 256), "infinirtMemset");
        return answer(infinirtFree(p), "infinirtFree") == 1 ? r : -1;
    case TC_PINNED_MEMORY:
        if ((r = answer(infinirtMallocHost(&p, 256), "infinirtMallocHost")) == 1 &&
            answer(infinirtFreeHost(p), "infinirtFreeHost") != 1)
            return -1;
        return r;
    case TC_MEM_INFO: {
        infiniDevice_t type;
        int id;
        size_t free_b, total_b;
        if (answer(infinirtGetDevice(&type, &id), "infinirtGetDevice") != 1)
            return -1;
        return answer(infinirtGetMemInfo(type, id, &free_b, &total_b), "infinirtGetMemInfo");
    }
    case TC_HOST_FUNCTIONS:
        if ((r = answer(infinirtLaunchHostFunc(NULL, noop_fn, NULL), "infinirtLaunchHostFunc")) == 1 &&
            answer(infinirtStreamSynchronize(NULL), "infinirtStreamSynchronize") != 1)
            return -1;
        return r;
    case TC_GRAPHS:
        /* Only a stream can be captured: without streams, no graphs. */
        if ((r = answer(infinirtStreamCreate(&s), "infinirtStreamCreate")) != 1)
            return r;
        r = answer(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED), "infinirtStreamBeginCapture");
        if (r == 1 && (answer(infinirtStreamEndCapture(s, &g), "infinirtStreamEndCapture") != 1 ||
                       answer(infinirtGraphDestroy(g), "infinirtGraphDestroy") != 1))
            r = -1;
        return answer(infinirtStreamDestroy(s), "infinirtStreamDestroy") == 1 ? r : -1;
    default:
        fprintf(stderr, "FAIL: the suite cannot ask whether a backend has %s (a test tries it where it uses it)\n",
                tc_feature_name(f));
        return -1;
    }
}

/* ask_backend's answer, asked once per plugin and process. */
static int has_feature(tc_feature f)
{
    plugin_facts *pf = facts_of(current_plugin());
    if (pf->has[f] == -2) {
        int r = ask_backend(f);
        if (r < 0)
            return r; /* a failure is not kept: asked again, it says why again */
        pf->has[f] = (signed char)r;
    }
    return pf->has[f];
}

int tc_needs(tc_feature f)
{
    if ((unsigned)f >= TC_FEATURE_COUNT)
        return TEST_FAIL;
    if (f == TC_ASYNC_STREAMS)
        return tc_needs_async();
    int r = has_feature(f);
    if (r < 0)
        return TEST_FAIL;
    return r ? tc_supported(f) : tc_unsupported(f);
}

int tc_needs_list(const tc_feature *features)
{
    for (; *features != TC_FEATURE_COUNT; features++)
        CHECK(tc_needs(*features));
    return TEST_OK;
}

int tc_probe(tc_feature f, bool *has)
{
    *has = false;
    int r = (unsigned)f < TC_FEATURE_COUNT && f != TC_ASYNC_STREAMS ? has_feature(f) : -1;
    if (r < 0)
        return TEST_FAIL;
    const char *plugin = current_plugin();
    bool declared = (declared_bits(plugin) & TC_BIT(f)) != 0;
    if (r && declared)
        return say_declared_works(plugin, f);
    if (!r && !declared)
        return say_undeclared(plugin, f);
    if (!r) /* not "skip:": the test goes on, and passes or fails */
        fprintf(stderr,
                "note: the %s plugin declares %s unsupported: the part of this test that needs it is left out\n",
                plugin, tc_feature_name(f));
    *has = r == 1;
    return TEST_OK;
}

bool tc_unserved_type(infiniDevice_t *type)
{
    infiniDevice_t types[64];
    int n = 0;
    if (infinirtGetDeviceTypes(types, 64, &n) != INFINI_STATUS_SUCCESS)
        return false;
    for (int i = 0; i < n && i < 64; i++) {
        int count = -1;
        if (infinirtGetDeviceCount(types[i], &count) == INFINI_STATUS_SUCCESS && count == 0) {
            *type = types[i];
            return true;
        }
    }
    return false;
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

void tc_gate_arm(tc_gate *g)
{
    if (g_ngates < 64)
        g_gates[g_ngates++] = g;
    /* Every field set here: a gate left uninitialised (an automatic
     * variable) read a stale ran_inline or open and skipped or ran past. */
    g->open = 0;
    g->reached = 0;
    g->ran_inline = 0;
    g->launcher = pthread_self();
    g->armed = 1;
}

int tc_hold_stream(infinirtStream_t s, tc_gate *g)
{
    (void)tc_declared_unsupported(TC_HOST_FUNCTIONS); /* before the stream is held */
    tc_gate_arm(g);
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
    CHECK(tc_needs(TC_STREAMS));
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
