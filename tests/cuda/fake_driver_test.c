/*
 * fake_driver_test.c - the CUDA plugin against fake_libcuda.c, a stand-in
 * driver that runs everything on the host.  These run on every machine
 * (label "cuda") and cover what a GPU-less CI could otherwise not reach:
 * the "no device" / "driver too old" / broken-driver reasons, the config
 * keys, lazy primary contexts and their release, context switching across
 * threads, event state, memory routing and error logging.
 *
 * FAKE_CUDA_PATH / FAKE_CUDA_NOSYM_PATH are the fake driver builds;
 * CUDA_STUB_LIBCUDA is the toolkit's link-time stub libcuda.so.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h> /* flag values only */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "cuda_internal.h" /* the plugin's driver symbol table */
#include "cuda_test_util.h"

/* The fake's inspection functions, found in the same loaded copy the
 * plugin uses (dlopen of the same path returns the same handle). */
static struct {
    int (*refcount)(int);
    int (*live_streams)(void);
    int (*live_events)(void);
    int (*live_allocs)(void);
    int (*alloc_device)(const void *);
    unsigned (*host_flags)(const void *);
    unsigned (*stream_flags)(const void *);
    unsigned (*last_event_flags)(void);
    int (*wait_event_calls)(void);
    void (*set_current)(int);
} fake;

static int fake_bind(void)
{
    void *dl = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL)
        TEST_FAILED_("dlopen(%s): %s", FAKE_CUDA_PATH, dlerror());
#define BIND_(field)                                         \
    do {                                                     \
        void *s_ = dlsym(dl, "fake_cuda_" #field);           \
        ASSERT(s_ != NULL);                                  \
        memcpy(&fake.field, &s_, sizeof s_);                 \
    } while (0)
    BIND_(refcount);
    BIND_(live_streams);
    BIND_(live_events);
    BIND_(live_allocs);
    BIND_(alloc_device);
    BIND_(host_flags);
    BIND_(stream_flags);
    BIND_(last_event_flags);
    BIND_(wait_event_calls);
    BIND_(set_current);
#undef BIND_
    return TEST_OK;
}

/* Open the plugin and init it on the fake driver in `mode`, with extra
 * config pairs. */
static infiniStatus_t fake_init(cuda_plugin *p, const char *mode, const infinirtPluginKeyValue *extra, size_t n)
{
    infinirtPluginKeyValue kv[8] = {{"driver_library", FAKE_CUDA_PATH}};
    for (size_t i = 0; i < n && i < 7; i++)
        kv[i + 1] = extra[i];
    setenv("FAKE_CUDA_MODE", mode, 1);
    return plugin_init_kv(p, kv, n + 1);
}

/* Open, bind and init in mode "ok"; fails the test unless init succeeds. */
static int fake_open(cuda_plugin *p, const infinirtPluginKeyValue *extra, size_t n)
{
    CHECK(plugin_open(p));
    CHECK(fake_bind());
    ASSERT_OK(fake_init(p, "ok", extra, n));
    return TEST_OK;
}

/* Shutdown leaves nothing behind in the driver. */
static int fake_close(cuda_plugin *p)
{
    p->ops->shutdown();
    for (int d = 0; d < 8; d++)
        ASSERT_EQ(fake.refcount(d), 0);
    ASSERT_EQ(fake.live_streams(), 0);
    return TEST_OK;
}

/* ------------------------------------------------ reasons for no device */

static int test_missing_library(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", "/nonexistent/libcuda.so.1"}};
    CHECK(plugin_open(&p));
    ASSERT_OK(plugin_init_kv(&p, kv, 1));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "/nonexistent/libcuda.so.1 not found (no NVIDIA driver installed): ");
    ASSERT_STR_CONTAINS(p.msg, "No such file");
    p.ops->shutdown();
    return TEST_OK;
}

static int test_no_device(void)
{
    cuda_plugin p;
    CHECK(plugin_open(&p));
    ASSERT_OK(fake_init(&p, "nodevice", NULL, 0));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_EQ(p.msg, "no CUDA-capable device (cuInit: CUDA_ERROR_NO_DEVICE)");
    p.ops->shutdown();
    return TEST_OK;
}

static int test_zero_devices(void)
{
    cuda_plugin p;
    setenv("FAKE_CUDA_DEVICES", "0", 1);
    CHECK(plugin_open(&p));
    ASSERT_OK(fake_init(&p, "ok", NULL, 0));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "no CUDA-capable device");
    p.ops->shutdown();
    return TEST_OK;
}

static int test_driver_too_old(void)
{
    cuda_plugin p;
    CHECK(plugin_open(&p));
    ASSERT_OK(fake_init(&p, "old", NULL, 0));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "driver too old for this build: driver supports CUDA 10.2, plugin built with CUDA ");
    p.ops->shutdown();
    return TEST_OK;
}

/* A driver that is there but fails is an init failure, not "no device". */
static int test_init_failure(void)
{
    cuda_plugin p;
    CHECK(plugin_open(&p));
    ASSERT_STATUS(fake_init(&p, "initfail", NULL, 0), INFINI_STATUS_DEVICE_NOT_INITIALIZED);
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "cuInit failed: CUDA_ERROR_OPERATING_SYSTEM");
    return TEST_OK;
}

static int test_missing_symbol(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", FAKE_CUDA_NOSYM_PATH}};
    CHECK(plugin_open(&p));
    ASSERT_STATUS(plugin_init_kv(&p, kv, 1), INFINI_STATUS_DEVICE_NOT_INITIALIZED);
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "does not export cuMemsetD8Async");
    return TEST_OK;
}

/* The toolkit's link-time stub libcuda.so (found first on a misconfigured
 * library path) is "no driver", not a broken one. */
static int test_toolkit_stub(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", CUDA_STUB_LIBCUDA}};
    FILE *f = fopen(CUDA_STUB_LIBCUDA, "rb");
    if (f == NULL) {
        fprintf(stderr, "no %s in this toolkit\n", CUDA_STUB_LIBCUDA);
        return TEST_SKIP;
    }
    fclose(f);
    CHECK(plugin_open(&p));
    ASSERT_OK(plugin_init_kv(&p, kv, 1));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "is the CUDA Toolkit's stub library, not a driver (no NVIDIA driver installed)");
    p.ops->shutdown();
    return TEST_OK;
}

/* Every versioned symbol the plugin asks for is exported by this toolkit's
 * driver interface (the stub exports exactly the real driver's names). */
static int test_driver_symbols(void)
{
    void *stub = dlopen(CUDA_STUB_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    int missing = 0;
    if (stub == NULL) {
        fprintf(stderr, "no %s in this toolkit\n", CUDA_STUB_LIBCUDA);
        return TEST_SKIP;
    }
#define CHECK_SYM_(field, sym, alt, type)                     \
    if (dlsym(stub, sym) == NULL) {                           \
        fprintf(stderr, "%s does not export %s\n", CUDA_STUB_LIBCUDA, sym); \
        missing++;                                            \
    }
    INFINIRT_CUDA__DRIVER_FUNCS(CHECK_SYM_)
#undef CHECK_SYM_
    ASSERT_EQ(missing, 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ config */

static int test_config(void)
{
    cuda_plugin p;

    /* Malformed lists are rejected with the value quoted. */
    static const char *const bad[] = {"", "1,x", "-1", "0,,2", "0,", "99999999999"};
    CHECK(plugin_open(&p));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const infinirtPluginKeyValue kv[] = {{"devices", bad[i]}};
        ASSERT_STATUS(fake_init(&p, "ok", kv, 1), INFINI_STATUS_BAD_PARAM);
        ASSERT_STR_CONTAINS(p.msg, "expected a comma-separated list");
    }

    /* An unknown key is a warning, nothing more. */
    test_log_clear();
    const infinirtPluginKeyValue unknown[] = {{"devicez", "1"}};
    CHECK(fake_bind());
    ASSERT_OK(fake_init(&p, "ok", unknown, 1));
    ASSERT_EQ(p.count, 3);
    ASSERT_EQ(test_log_count("WARN", "unknown key \"devicez\""), 1);
    CHECK(fake_close(&p));

    /* Ordinals that do not exist are skipped with a warning; when nothing
     * is left, no device and a reason. */
    test_log_clear();
    const infinirtPluginKeyValue none[] = {{"devices", "7, 5"}};
    ASSERT_OK(fake_init(&p, "ok", none, 1));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "selects none of the 3 CUDA device(s)");
    ASSERT_EQ(test_log_count("WARN", "CUDA device 7 does not exist"), 1);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* devices = 2, 0 exposes two devices in that order: plugin device 0 is
 * CUDA device 2, and its memory lands there. */
static int test_devices_subset(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"devices", " 2 , 0,2"}};
    infinirtPluginDeviceInfo info;
    void *a, *b;

    test_log_clear();
    CHECK(fake_open(&p, kv, 1));
    ASSERT_EQ(p.count, 2);
    ASSERT_EQ(test_log_count("WARN", "CUDA device 2 listed twice"), 1);
    ASSERT_OK(p.ops->get_device_info(0, &info));
    ASSERT_STR_EQ(info.name, "Fake GPU 2");
    ASSERT_STR_CONTAINS(info.description, "compute capability 9.0, driver 13.0, 132 SMs, CUDA device 2");
    ASSERT_EQ(info.total_memory, 64 << 20);
    ASSERT_EQ(info.max_alloc_size, 0);
    ASSERT_OK(p.ops->get_device_info(1, &info));
    ASSERT_STR_EQ(info.name, "Fake GPU 0");
    ASSERT_OK(p.ops->malloc_device(0, &a, 100));
    ASSERT_OK(p.ops->malloc_device(1, &b, 100));
    ASSERT_EQ(fake.alloc_device(a), 2);
    ASSERT_EQ(fake.alloc_device(b), 0);
    ASSERT_OK(p.ops->free_device(0, a));
    ASSERT_OK(p.ops->free_device(1, b));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* --------------------------------------------------------- contexts */

/* Primary contexts are retained on first use, once, and released at
 * shutdown; device info needs no context. */
static int test_lazy_context(void)
{
    cuda_plugin p;
    infinirtPluginDeviceInfo info;
    size_t fr, tot;
    void *d;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_EQ(p.count, 3);
    ASSERT_OK(p.ops->get_device_info(2, &info));
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fake.refcount(i), 0);
    ASSERT_OK(p.ops->malloc_device(1, &d, 4096));
    ASSERT_OK(p.ops->get_mem_info(1, &fr, &tot));
    ASSERT_EQ(tot, 64 << 20);
    ASSERT_EQ(fr, (64 << 20) - 4096);
    ASSERT_OK(p.ops->device_synchronize(1));
    ASSERT_EQ(fake.refcount(0), 0);
    ASSERT_EQ(fake.refcount(1), 1);
    ASSERT_EQ(fake.refcount(2), 0);
    ASSERT_EQ(fake.live_streams(), 1); /* device 1's default stream */
    ASSERT_OK(p.ops->free_device(1, d));
    CHECK(fake_close(&p));
    return TEST_OK;
}

typedef struct {
    const infinirtPluginOps *ops;
    int dev;
    void *ptr;
    infiniStatus_t st;
} thread_arg;

static void *alloc_thread(void *arg)
{
    thread_arg *t = arg;
    t->st = t->ops->malloc_device(t->dev, &t->ptr, 256);
    return NULL;
}

/* Work lands on the device asked for, whatever context the thread had
 * current: a fresh thread has none, and the application may have switched
 * it (cudaSetDevice) since our last call. */
static int test_context_switch(void)
{
    cuda_plugin p;
    void *a, *b, *c;
    pthread_t th;
    thread_arg t[3];

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &a, 256));
    ASSERT_EQ(fake.alloc_device(a), 0);
    ASSERT_OK(p.ops->malloc_device(2, &b, 256)); /* device 2 becomes current */
    fake.set_current(1);                             /* the app switches behind our back */
    ASSERT_OK(p.ops->malloc_device(2, &c, 256));
    ASSERT_EQ(fake.alloc_device(c), 2);
    ASSERT_OK(p.ops->free_device(2, c));
    fake.set_current(-1);
    ASSERT_OK(p.ops->malloc_device(2, &c, 256));
    ASSERT_EQ(fake.alloc_device(c), 2);
    ASSERT_OK(p.ops->free_device(2, c));

    for (int i = 0; i < 3; i++) {
        t[i] = (thread_arg){p.ops, i, NULL, INFINI_STATUS_INTERNAL_ERROR};
        ASSERT_EQ(pthread_create(&th, NULL, alloc_thread, &t[i]), 0);
        pthread_join(th, NULL);
        ASSERT_OK(t[i].st);
        ASSERT_EQ(fake.alloc_device(t[i].ptr), i);
        ASSERT_OK(p.ops->free_device(i, t[i].ptr));
    }
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fake.refcount(i), 1); /* retained once, however many threads */
    ASSERT_OK(p.ops->free_device(0, a));
    ASSERT_OK(p.ops->free_device(2, b));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* ----------------------------------------------------- streams, events */

static int host_fn_calls;
static void count_call(void *arg)
{
    host_fn_calls += (int)(intptr_t)arg;
}

static int test_streams(void)
{
    cuda_plugin p;
    void *s0, *s1;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->stream_create(0, &s0));
    ASSERT_OK(p.ops->stream_create(1, &s1));
    ASSERT_EQ(fake.stream_flags(s0), CU_STREAM_NON_BLOCKING);
    ASSERT_EQ(fake.live_streams(), 4); /* two default streams, two created */
    ASSERT_OK(p.ops->stream_synchronize(0, s0));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_OK(p.ops->launch_host_func(0, s0, count_call, (void *)(intptr_t)1));
    ASSERT_OK(p.ops->launch_host_func(1, NULL, count_call, (void *)(intptr_t)10));
    ASSERT_OK(p.ops->stream_synchronize(0, s0));
    ASSERT_OK(p.ops->device_synchronize(1));
    ASSERT_EQ(host_fn_calls, 11);
    ASSERT_OK(p.ops->stream_destroy(0, s0));
    ASSERT_OK(p.ops->stream_destroy(1, s1));
    ASSERT_STATUS(p.ops->stream_destroy(1, NULL), INFINI_STATUS_BAD_PARAM);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* A host function that holds its stream until the test opens the gate. */
static atomic_int gate_open_flag;
static void gate_wait(void *arg)
{
    struct timespec ms = {0, 1000000};
    (void)arg;
    for (int i = 0; i < 20000 && !atomic_load(&gate_open_flag); i++)
        nanosleep(&ms, NULL);
}

static int test_events(void)
{
    cuda_plugin p;
    void *a, *b, *never, *notime, *s, *s1;
    int done = -1;
    float ms = -1;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC, &a));
    ASSERT_EQ(fake.last_event_flags(), CU_EVENT_BLOCKING_SYNC);
    ASSERT_OK(p.ops->event_create(0, 0, &b));
    ASSERT_EQ(fake.last_event_flags(), CU_EVENT_DEFAULT);
    ASSERT_OK(p.ops->event_create(0, 0, &never));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING | INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC,
                                  &notime));
    ASSERT_EQ(fake.last_event_flags(), CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
    ASSERT_STATUS(p.ops->event_create(0, 0x4, &s), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.live_events(), 4);

    /* Never recorded: complete, nothing to wait for, no elapsed time, and
     * no CUDA call (the driver would say INVALID_HANDLE). */
    test_log_clear();
    ASSERT_OK(p.ops->event_query(0, never, &done));
    ASSERT_EQ(done, 1);
    ASSERT_OK(p.ops->event_synchronize(0, never));
    ASSERT_OK(p.ops->stream_wait_event(1, NULL, never));
    ASSERT_EQ(fake.wait_event_calls(), 0);
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, never, a), INFINI_STATUS_INVALID_STATE);

    /* Recorded behind a gate: not ready, and a stream of device 1 that
     * waits for it is held too. */
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create(1, &s1));
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->event_record(0, a, s));
    ASSERT_OK(p.ops->launch_host_func(0, s, gate_wait, NULL));
    ASSERT_OK(p.ops->event_record(0, b, s));
    ASSERT_OK(p.ops->event_query(0, b, &done));
    ASSERT_EQ(done, 0);
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, a, b), INFINI_STATUS_NOT_READY);
    ASSERT_OK(p.ops->stream_wait_event(1, s1, b));
    ASSERT_EQ(fake.wait_event_calls(), 1);
    void *after;
    ASSERT_OK(p.ops->event_create(1, 0, &after));
    ASSERT_OK(p.ops->event_record(1, after, s1));
    ASSERT_OK(p.ops->event_query(1, after, &done));
    ASSERT_EQ(done, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->event_synchronize(0, b));
    ASSERT_OK(p.ops->event_query(0, b, &done));
    ASSERT_EQ(done, 1);
    ASSERT_OK(p.ops->event_elapsed_time(0, &ms, a, b));
    ASSERT(ms >= 0);
    ASSERT_OK(p.ops->stream_synchronize(1, s1));
    ASSERT_OK(p.ops->event_query(1, after, &done));
    ASSERT_EQ(done, 1);

    /* Timing disabled. */
    ASSERT_OK(p.ops->event_record(0, notime, s));
    ASSERT_OK(p.ops->event_synchronize(0, notime));
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, a, notime), INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(test_log_count("ERROR", NULL), 0); /* none of that is a failure */

    ASSERT_OK(p.ops->event_destroy(0, a));
    ASSERT_OK(p.ops->event_destroy(0, b));
    ASSERT_OK(p.ops->event_destroy(0, never));
    ASSERT_OK(p.ops->event_destroy(0, notime));
    ASSERT_OK(p.ops->event_destroy(1, after));
    ASSERT_EQ(fake.live_events(), 0);
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(1, s1));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* ------------------------------------------------------------- memory */

static int test_memory(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    unsigned char h[N], g[N];
    void *d, *e, *z = (void *)1, *ph, *s;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &z, 0));
    ASSERT_PTR_EQ(z, NULL);
    ASSERT_OK(p.ops->free_device(0, NULL));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->malloc_device(1, &e, N));
    fill_pattern(h, N, 9);
    ASSERT_OK(p.ops->memcpy(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_OK(p.ops->memcpy(1, e, d, N, INFINIRT_PLUGIN_MEMCPY_D2D)); /* across devices */
    ASSERT_OK(p.ops->memset(1, (char *)e + 10, 0x1EE, 20));             /* interior; value as a byte */
    ASSERT_OK(p.ops->memcpy(1, g, e, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    memset(h + 10, 0xEE, 20);
    ASSERT_MEM_EQ(g, h, N);
    ASSERT_OK(p.ops->stream_create(1, &s));
    ASSERT_OK(p.ops->memset_async(1, e, 0, N, s));
    ASSERT_OK(p.ops->memcpy_async(1, (char *)e + 1, h, 100, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(p.ops->stream_synchronize(1, s));
    ASSERT_OK(p.ops->memcpy_async(1, g, e, N, INFINIRT_PLUGIN_MEMCPY_D2H, NULL));
    ASSERT_OK(p.ops->stream_synchronize(1, NULL));
    ASSERT_EQ(g[0], 0);
    ASSERT_MEM_EQ(g + 1, h, 100);
    ASSERT_OK(p.ops->stream_destroy(1, s));
    memset(g, 0, N);
    ASSERT_OK(p.ops->memcpy(2, g, h, N, INFINIRT_PLUGIN_MEMCPY_H2H));
    ASSERT_MEM_EQ(g, h, N);
    memset(g, 0, N);
    ASSERT_OK(p.ops->memcpy_async(2, g, h, 64, INFINIRT_PLUGIN_MEMCPY_H2H, NULL));
    ASSERT_MEM_EQ(g, h, 64);
    ASSERT_STATUS(p.ops->memcpy(0, g, d, N, 4), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->memcpy_async(0, g, d, N, -1, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(p.ops->memcpy(0, g, d, 0, INFINIRT_PLUGIN_MEMCPY_D2H));

    /* Pinned host memory is portable across contexts. */
    ASSERT_OK(p.ops->malloc_host(2, &ph, 1000));
    ASSERT_EQ(fake.host_flags(ph), CU_MEMHOSTALLOC_PORTABLE);
    ASSERT_OK(p.ops->free_host(2, ph));

    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->free_device(1, e));
    ASSERT_EQ(fake.live_allocs(), 0);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* A failed CUDA call gives the mapped status and one log line naming the
 * call and the CUDA error. */
static int test_errors(void)
{
    cuda_plugin p;
    void *d = NULL;
    char bogus[16];

    CHECK(fake_open(&p, NULL, 0));
    test_log_clear();
    ASSERT_STATUS(p.ops->malloc_device(0, &d, (size_t)65 << 20), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_EQ(test_log_count("cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY", NULL), 1);
    ASSERT_EQ(test_log_count("WARN device 0: cuMemAlloc_v2", NULL), 1);
    ASSERT_STATUS(p.ops->free_device(1, bogus), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR device 1: cuMemFree_v2 failed: CUDA_ERROR_INVALID_VALUE", NULL), 1);
    ASSERT_STATUS(p.ops->free_host(1, bogus), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "cuMemFreeHost failed"), 1);
    ASSERT_EQ(test_log_count("", NULL), 3); /* and nothing else */
    CHECK(fake_close(&p));
    return TEST_OK;
}

static const test_entry tests[] = {
    {"missing_library", test_missing_library},
    {"no_device", test_no_device},
    {"zero_devices", test_zero_devices},
    {"driver_too_old", test_driver_too_old},
    {"init_failure", test_init_failure},
    {"missing_symbol", test_missing_symbol},
    {"toolkit_stub", test_toolkit_stub},
    {"driver_symbols", test_driver_symbols},
    {"config", test_config},
    {"devices_subset", test_devices_subset},
    {"lazy_context", test_lazy_context},
    {"context_switch", test_context_switch},
    {"streams", test_streams},
    {"events", test_events},
    {"memory", test_memory},
    {"errors", test_errors},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return run_named_test(tests, argc, argv);
}
