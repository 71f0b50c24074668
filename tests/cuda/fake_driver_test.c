/*
 * fake_driver_test.c - the CUDA plugin against fake_libcuda.c, a stand-in
 * driver that runs everything on the host.  These run on every machine
 * (label "cuda") and cover what a GPU-less CI could otherwise not reach:
 * the "no device" / "driver too old" / broken-driver reasons, the config
 * keys, lazy primary contexts and their release, context switching across
 * threads, event state, memory routing and error logging; and ABI 1.1:
 * native handles, blocking streams against the legacy default stream,
 * set_device and the caller's context kept, pointer ownership, wrapped
 * application streams.
 *
 * FAKE_CUDA_PATH / FAKE_CUDA_NOSYM_PATH / FAKE_CUDA_OLDSYM_PATH are the fake
 * driver builds, FAKE_NVML_PATH the fake NVML;
 * CUDA_STUB_LIBCUDA is the toolkit's link-time stub libcuda.so.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h> /* flag values only */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "cuda_internal.h" /* the plugin's driver symbol table */
#include "cuda_test_util.h"
#include "fake_driver_list.h"
#include "fake_gpu_ids.h"

/* The fake's inspection functions, found in the same loaded copy the
 * plugin uses (dlopen of the same path returns the same handle). */
static struct {
    int (*refcount)(int);
    int (*live_streams)(void);
    int (*live_events)(void);
    int (*live_allocs)(void);
    int (*alloc_device)(const void *);
    int (*alloc_ctx)(const void *);
    unsigned (*host_flags)(const void *);
    unsigned (*stream_flags)(const void *);
    unsigned (*last_event_flags)(void);
    int (*wait_event_calls)(void);
    int (*elapsed_calls)(int);
    void (*set_current)(int);
    int (*current_device)(void);
    void *(*ctx)(int);
    int (*set_current_calls)(void);
    void *(*last_stream)(void);
    void (*inject_sync_error)(CUresult);
    int (*peer_enabled)(int, int);
    int (*peer_copies)(void);
    int (*staged_copies)(void);
    int (*peer_faults)(void);
    int (*strict)(void);
    void (*inject_sticky)(int, CUresult);
    void (*unload)(void);
    int (*host_fn_max_concurrent)(void);
    int (*host_fn_refusals)(void);
    int (*ctx_stack_depth)(void);
    /* driver entries, called as the application would call them */
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuStreamGetCtx)(CUstream, CUcontext *);
    CUresult (*cuStreamQuery)(CUstream);
    CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn, void *);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventQuery)(CUevent);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuCtxPushCurrent_v2)(CUcontext);
    CUresult (*cuCtxPopCurrent_v2)(CUcontext *);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuDeviceGetCount)(int *);
} fake;

static int fake_bind(void)
{
    void *dl = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL)
        TEST_FAILED_("dlopen(%s): %s", FAKE_CUDA_PATH, dlerror());
#define BIND_(field)                               \
    do {                                           \
        void *s_ = dlsym(dl, "fake_cuda_" #field); \
        ASSERT(s_ != NULL);                        \
        memcpy(&fake.field, &s_, sizeof s_);       \
    } while (0)
    BIND_(refcount);
    BIND_(live_streams);
    BIND_(live_events);
    BIND_(live_allocs);
    BIND_(alloc_device);
    BIND_(alloc_ctx);
    BIND_(host_flags);
    BIND_(stream_flags);
    BIND_(last_event_flags);
    BIND_(wait_event_calls);
    BIND_(elapsed_calls);
    BIND_(set_current);
    BIND_(current_device);
    BIND_(ctx);
    BIND_(set_current_calls);
    BIND_(last_stream);
    BIND_(inject_sync_error);
    BIND_(peer_enabled);
    BIND_(peer_copies);
    BIND_(staged_copies);
    BIND_(peer_faults);
    BIND_(strict);
    BIND_(inject_sticky);
    BIND_(unload);
    BIND_(host_fn_max_concurrent);
    BIND_(host_fn_refusals);
    BIND_(ctx_stack_depth);
#undef BIND_
#define BIND_CU_(field)                      \
    do {                                     \
        void *s_ = dlsym(dl, #field);        \
        ASSERT(s_ != NULL);                  \
        memcpy(&fake.field, &s_, sizeof s_); \
    } while (0)
    BIND_CU_(cuGetErrorName);
    BIND_CU_(cuCtxGetCurrent);
    BIND_CU_(cuCtxEnablePeerAccess);
    BIND_CU_(cuCtxSetCurrent);
    BIND_CU_(cuDevicePrimaryCtxRetain);
    BIND_CU_(cuDevicePrimaryCtxRelease_v2);
    BIND_CU_(cuStreamCreate);
    BIND_CU_(cuStreamDestroy_v2);
    BIND_CU_(cuStreamGetCtx);
    BIND_CU_(cuStreamQuery);
    BIND_CU_(cuLaunchHostFunc);
    BIND_CU_(cuEventRecord);
    BIND_CU_(cuEventQuery);
    BIND_CU_(cuMemAlloc_v2);
    BIND_CU_(cuMemFree_v2);
    BIND_CU_(cuCtxPushCurrent_v2);
    BIND_CU_(cuCtxPopCurrent_v2);
    BIND_CU_(cuCtxSynchronize);
    BIND_CU_(cuMemcpyAsync);
    BIND_CU_(cuMemHostAlloc);
    BIND_CU_(cuMemFreeHost);
    BIND_CU_(cuEventCreate);
    BIND_CU_(cuStreamSynchronize);
    BIND_CU_(cuDeviceGetCount);
#undef BIND_CU_
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

static atomic_int gate_timeouts;

/* Shutdown leaves nothing behind in the driver, and no gate timed out. */
static int fake_close(cuda_plugin *p)
{
    ASSERT_EQ(atomic_load(&gate_timeouts), 0);
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

/* Every versioned symbol the plugin asks for (the optional ones too) is
 * exported by this toolkit's driver interface (the stub exports exactly the real driver's names). */
static int test_driver_symbols(void)
{
    void *stub = dlopen(CUDA_STUB_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    int missing = 0;
    if (stub == NULL) {
        fprintf(stderr, "no %s in this toolkit\n", CUDA_STUB_LIBCUDA);
        return TEST_SKIP;
    }
#define CHECK_SYM_(field, sym, alt, type)                                   \
    if (dlsym(stub, sym) == NULL) {                                         \
        fprintf(stderr, "%s does not export %s\n", CUDA_STUB_LIBCUDA, sym); \
        missing++;                                                          \
    }
    CUDA__DRIVER_FUNCS(CHECK_SYM_)
    CUDA__OPTIONAL_FUNCS(CHECK_SYM_)
#undef CHECK_SYM_
    ASSERT_EQ(missing, 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ config */

static int test_config(void)
{
    cuda_plugin p;

    /* A malformed list is a warning with the value quoted; every device
     * is used instead (one typo never takes the backend down). */
    static const char *const bad[] = {"", "1,x", "-1", "0,,2", "0,", "99999999999"};
    CHECK(plugin_open(&p));
    CHECK(fake_bind());
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const infinirtPluginKeyValue kv[] = {{"devices", bad[i]}};
        test_log_clear();
        ASSERT_OK(fake_init(&p, "ok", kv, 1));
        ASSERT_EQ(p.count, 3);
        ASSERT_EQ(test_log_count("WARN", "not a comma-separated list of CUDA device ordinals"), 1);
        ASSERT_EQ(test_log_count("WARN", "using every device"), 1);
        CHECK(fake_close(&p));
    }

    /* An unknown key is a warning, nothing more. */
    test_log_clear();
    const infinirtPluginKeyValue unknown[] = {{"devicez", "1"}};
    CHECK(fake_bind());
    ASSERT_OK(fake_init(&p, "ok", unknown, 1));
    ASSERT_EQ(p.count, 3);
    ASSERT_EQ(test_log_count("WARN", "devicez = '1': unknown key ignored"), 1);
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

/* get_device_uuid names the GPU behind each device, whatever id `devices =`
 * gives it, without creating a context; a driver that cannot tell means no
 * UUID. */
static int test_device_uuid(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"devices", "2,0"}};
    char want[64], got[64];

    CHECK(fake_open(&p, kv, 1));
    ASSERT(p.ops->get_device_uuid != NULL);
    ASSERT_GE(p.ops->struct_size, INFINIRT_PLUGIN_OPS_SIZE_1_3);
    fake_gpu_uuid_string(2, want, sizeof want);
    ASSERT_OK(p.ops->get_device_uuid(0, got, sizeof got));
    ASSERT_STR_EQ(got, want);
    fake_gpu_uuid_string(0, want, sizeof want);
    ASSERT_OK(p.ops->get_device_uuid(1, got, sizeof got));
    ASSERT_STR_EQ(got, want);
    ASSERT_EQ(strlen(got), 40); /* "GPU-" and 36 */
    for (int d = 0; d < 3; d++)
        ASSERT_EQ(fake.refcount(d), 0);
    setenv("FAKE_CUDA_NO_UUID", "1", 1);
    ASSERT_STATUS(p.ops->get_device_uuid(0, got, sizeof got), INFINI_STATUS_NOT_IMPLEMENTED);
    unsetenv("FAKE_CUDA_NO_UUID");
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* The ABI fields every plugin handles the same way (plugins/README.md,
 * "ABI fields"): init args shorter than ABI 1.0's are refused, with the
 * reason in the log; args of exactly that size (a loader from before
 * config_warnv) are served; a device index outside [0, count) is
 * DEVICE_NOT_FOUND from every entry that starts from one. */
static int test_abi_fields(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", FAKE_CUDA_PATH}};
    infinirtPluginInitArgs args = {
        .struct_size = offsetof(infinirtPluginInitArgs, message_size) + sizeof(size_t) - 1,
        .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
        .abi_minor = 0,
        .config = kv,
        .config_count = 1,
        .plugin_path = INFINIRT_CUDA_PLUGIN_PATH,
        .log = test_log,
        .message = p.msg,
        .message_size = sizeof p.msg,
    };
    infinirtPluginDeviceInfo info;
    infinirtPluginUtilization util;
    size_t fr, tot;
    void *a, *b;
    char uuid[64];

    CHECK(plugin_open(&p));
    CHECK(fake_bind());
    setenv("FAKE_CUDA_MODE", "ok", 1);
    test_log_clear();
    ASSERT_STATUS(p.ops->init(&args, &p.count), INFINI_STATUS_BAD_PARAM);
    ASSERT_STR_CONTAINS(test_log_buf, "init args of");
    args.struct_size++;
    ASSERT_OK(p.ops->init(&args, &p.count));
    ASSERT_EQ(p.count, 3);
    for (int dev = -1; dev <= 3; dev += 4) {
        ASSERT_STATUS(p.ops->get_device_info(dev, &info), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->get_mem_info(dev, &fr, &tot), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->device_synchronize(dev), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->device_get_native(dev, &a, &b), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->set_device(dev), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->get_device_uuid(dev, uuid, sizeof uuid), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->get_utilization(dev, &util), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->malloc_device(dev, &a, 64), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->stream_create(dev, &a), INFINI_STATUS_DEVICE_NOT_FOUND);
    }
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
    ASSERT_EQ(fake.live_streams(), 0); /* the NULL stream is the driver's legacy stream */
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
    fake.set_current(1);                         /* the app switches behind our back */
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
    void *nb, *bl;
    ASSERT_OK(p.ops->stream_create(0, &s0));
    ASSERT_OK(p.ops->stream_create(1, &s1));
    /* Blocking, as cudaStreamCreate's; the flag gives a non-blocking one. */
    ASSERT_EQ(fake.stream_flags(s0), CU_STREAM_DEFAULT);
    ASSERT_OK(p.ops->stream_create_with_flags(1, 0, &bl));
    ASSERT_EQ(fake.stream_flags(bl), CU_STREAM_DEFAULT);
    ASSERT_OK(p.ops->stream_create_with_flags(1, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    ASSERT_EQ(fake.stream_flags(nb), CU_STREAM_NON_BLOCKING);
    test_log_clear();
    void *bad = NULL;
    ASSERT_STATUS(p.ops->stream_create_with_flags(1, 0x2, &bad), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "unknown stream flags 0x2"), 1);
    ASSERT_EQ(fake.live_streams(), 4); /* the NULL streams are the driver's legacy streams */
    ASSERT_OK(p.ops->stream_destroy(1, bl));
    ASSERT_OK(p.ops->stream_destroy(1, nb));
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

/* A host function that holds its stream until the test opens the gate.
 * It gives up after 20 s, so a test whose opener is blocked (a copy of
 * pageable memory queued behind the gate, which the strict fake, like the
 * real driver, returns only after it completes) fails in fake_close
 * instead of hanging. */
static atomic_int gate_open_flag;
static void gate_wait(void *arg)
{
    struct timespec ms = {0, 1000000};
    int i;
    (void)arg;
    for (i = 0; i < 20000 && !atomic_load(&gate_open_flag); i++)
        nanosleep(&ms, NULL);
    if (i == 20000)
        atomic_fetch_add(&gate_timeouts, 1);
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
    ASSERT_OK(
        p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING | INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC, &notime));
    ASSERT_EQ(fake.last_event_flags(), CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
    ASSERT_STATUS(p.ops->event_create(0, 0x4, &s), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.live_events(), 4);

    /* Never recorded: complete, nothing to wait for, no elapsed time
     * (the driver's INVALID_HANDLE there is an answer, not logged). */
    test_log_clear();
    ASSERT_OK(p.ops->event_query(0, never, &done));
    ASSERT_EQ(done, 1);
    ASSERT_OK(p.ops->event_synchronize(0, never));
    ASSERT_OK(p.ops->stream_wait_event(1, NULL, never));
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, never, a), INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(test_log_count("", NULL), 0);

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
    int waits = fake.wait_event_calls();
    ASSERT_OK(p.ops->stream_wait_event(1, s1, b));
    ASSERT_EQ(fake.wait_event_calls(), waits + 1);
    void *after;
    ASSERT_OK(p.ops->event_create(1, 0, &after));
    ASSERT_OK(p.ops->event_record(1, after, s1));
    ASSERT_OK(p.ops->event_query(1, after, &done));
    ASSERT_EQ(done, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->event_synchronize(0, b));
    ASSERT_OK(p.ops->event_query(0, b, &done));
    ASSERT_EQ(done, 1);
    int old_calls = fake.elapsed_calls(0), v2_calls = fake.elapsed_calls(1);
    ASSERT_OK(p.ops->event_elapsed_time(0, &ms, a, b));
    ASSERT(ms >= 0);
    /* A driver with both names: the _v2 one. */
    ASSERT_EQ(fake.elapsed_calls(1), v2_calls + 1);
    ASSERT_EQ(fake.elapsed_calls(0), old_calls);
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

/* A driver from before CUDA 12.8 exports cuEventElapsedTime only: the
 * plugin loads on it and times events with that name. */
static void sleep_20ms(void *arg)
{
    struct timespec t = {0, 20 * 1000000};
    (void)arg;
    nanosleep(&t, NULL);
}

static int test_elapsed_old_symbol(void)
{
    void *dl = dlopen(FAKE_CUDA_OLDSYM_PATH, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL)
        TEST_FAILED_("dlopen(%s): %s", FAKE_CUDA_OLDSYM_PATH, dlerror());
    ASSERT(dlsym(dl, "cuEventElapsedTime") != NULL);
    ASSERT(dlsym(dl, "cuEventElapsedTime_v2") == NULL); /* the variant really is old */
    int (*calls)(int);
    void *sym = dlsym(dl, "fake_cuda_elapsed_calls");
    ASSERT(sym != NULL);
    memcpy(&calls, &sym, sizeof sym);

    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", FAKE_CUDA_OLDSYM_PATH}};
    setenv("FAKE_CUDA_MODE", "ok", 1);
    CHECK(plugin_open(&p));
    ASSERT_OK(plugin_init_kv(&p, kv, 1));
    ASSERT_GT(p.count, 0);
    void *s, *a, *b;
    float ms = -1;
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->event_create(0, 0, &a));
    ASSERT_OK(p.ops->event_create(0, 0, &b));
    ASSERT_OK(p.ops->event_record(0, a, s));
    ASSERT_OK(p.ops->launch_host_func(0, s, sleep_20ms, NULL));
    ASSERT_OK(p.ops->event_record(0, b, s));
    ASSERT_OK(p.ops->event_synchronize(0, b));
    ASSERT_OK(p.ops->event_elapsed_time(0, &ms, a, b));
    ASSERT(ms >= 15.0f && ms < 60000.0f);
    ASSERT_EQ(calls(0), 1);
    ASSERT_EQ(calls(1), 0);
    ASSERT_OK(p.ops->event_destroy(0, a));
    ASSERT_OK(p.ops->event_destroy(0, b));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    p.ops->shutdown();
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
    ASSERT_OK(p.ops->memset(1, (char *)e + 10, 0x1EE, 20));           /* interior; value as a byte */
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

typedef struct {
    const infinirtPluginOps *ops;
    void *ptr;
    infiniStatus_t st;
    int current; /* the thread's current device afterwards */
} host_arg;

static void *malloc_host_thread(void *arg)
{
    host_arg *t = arg;
    t->st = t->ops->malloc_host(0, &t->ptr, 512);
    t->current = fake.current_device();
    return NULL;
}

static void *free_host_thread(void *arg)
{
    host_arg *t = arg;
    t->st = t->ops->free_host(0, t->ptr);
    t->current = fake.current_device();
    return NULL;
}

/* Pinned host memory goes through a context the process has already (the
 * loader asks with device 0 whatever the application uses): a process that
 * only uses device 1 never retains device 0's primary context for it. */
static int test_pinned_host_device(void)
{
    cuda_plugin p;
    void *a, *b, *c, *d;
    pthread_t th;
    host_arg t;

    CHECK(fake_open(&p, NULL, 0));
    /* Nothing used yet: device 0, as asked. */
    ASSERT_OK(p.ops->malloc_host(0, &a, 512));
    ASSERT_EQ(fake.alloc_ctx(a), 0);
    ASSERT_EQ(fake.refcount(0), 1);
    ASSERT_OK(p.ops->free_host(0, a));
    CHECK(fake_close(&p));

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_OK(p.ops->malloc_device(1, &d, 256));
    /* The calling thread's current device. */
    ASSERT_OK(p.ops->malloc_host(0, &a, 512));
    ASSERT_EQ(fake.alloc_ctx(a), 1);
    ASSERT_EQ(fake.host_flags(a), CU_MEMHOSTALLOC_PORTABLE);
    ASSERT_EQ(fake.current_device(), 1);
    /* A thread with no current context: the first device in use; it still
     * has none afterwards. */
    t = (host_arg){p.ops, NULL, INFINI_STATUS_INTERNAL_ERROR, -2};
    ASSERT_EQ(pthread_create(&th, NULL, malloc_host_thread, &t), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(t.st);
    ASSERT_EQ(fake.alloc_ctx(t.ptr), 1);
    ASSERT_EQ(t.current, -1);
    b = t.ptr;
    /* Device 2 chosen on this thread: through it. */
    ASSERT_OK(p.ops->set_device(2));
    ASSERT_OK(p.ops->malloc_host(0, &c, 512));
    ASSERT_EQ(fake.alloc_ctx(c), 2);
    /* A context that is not a primary context we retained (the application
     * made device 0's current itself): not used. */
    fake.set_current(0);
    ASSERT_OK(p.ops->free_host(0, c));
    ASSERT_EQ(fake.current_device(), 0);
    fake.set_current(-1);
    /* Freed from another thread, with no context current. */
    t = (host_arg){p.ops, b, INFINI_STATUS_INTERNAL_ERROR, -2};
    ASSERT_EQ(pthread_create(&th, NULL, free_host_thread, &t), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(t.st);
    ASSERT_EQ(t.current, -1);
    ASSERT_OK(p.ops->free_host(0, a));
    ASSERT_EQ(fake.refcount(0), 0);
    ASSERT_EQ(fake.live_allocs(), 1);
    ASSERT_OK(p.ops->free_device(1, d));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Memory figures of a device whose context the plugin has not retained
 * come from NVML (matched by UUID), so listing every device's memory
 * creates no context; once the context exists, or when NVML cannot tell,
 * the driver answers. */
static int test_mem_info_nvml(void)
{
    const infinirtPluginKeyValue kv[] = {{"nvml_library", FAKE_NVML_PATH}};
    cuda_plugin p;
    size_t fr = 0, tot = 0;
    void *d;

    unsetenv("FAKE_CUDA_NO_UUID");
    CHECK(fake_open(&p, kv, 1));
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(p.ops->get_mem_info(i, &fr, &tot));
        ASSERT_EQ(tot, 64u << 20);
        ASSERT_EQ(fr, (64u << 20) - ((size_t)(i + 1) << 20)); /* the fake NVML's figure for CUDA device i */
        ASSERT_EQ(fake.refcount(i), 0);
    }
    /* The context exists: the driver's exact figure. */
    ASSERT_OK(p.ops->malloc_device(1, &d, 4096));
    ASSERT_OK(p.ops->get_mem_info(1, &fr, &tot));
    ASSERT_EQ(fr, (64u << 20) - 4096);
    ASSERT_OK(p.ops->free_device(1, d));
    /* Found by PCI bus id only (a MIG instance's UUID is not NVML's "GPU-"
     * spelling, and its bus id names the whole GPU): the driver. */
    setenv("FAKE_CUDA_NO_UUID", "1", 1);
    ASSERT_OK(p.ops->get_mem_info(2, &fr, &tot));
    ASSERT_EQ(fr, 64u << 20);
    ASSERT_EQ(fake.refcount(2), 1);
    unsetenv("FAKE_CUDA_NO_UUID");
    ASSERT_EQ(fake.refcount(0), 0);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Without NVML the driver answers, through the device's context. */
static int test_mem_info_no_nvml(void)
{
    const infinirtPluginKeyValue kv[] = {{"nvml_library", "/nonexistent/libnvidia-ml.so.1"}};
    cuda_plugin p;
    size_t fr = 0, tot = 0;

    CHECK(fake_open(&p, kv, 1));
    ASSERT_OK(p.ops->get_mem_info(2, &fr, &tot));
    ASSERT_EQ(tot, 64u << 20);
    ASSERT_EQ(fr, 64u << 20);
    ASSERT_EQ(fake.refcount(2), 1);
    ASSERT_EQ(fake.refcount(0), 0);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Peer access (FAKE_CUDA_PEER=0>1,1>0: devices 0 and 1 reach each other,
 * device 2 neither): a D2D copy between two devices enables the copying
 * context's access to the other one's memory where it can, and then goes
 * directly; where it cannot, it is staged and still right.  A fill of
 * another device's memory is refused unless peer access makes it valid. */
static int test_peer_access(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    unsigned char h[N], g[N];
    void *m[3], *s0, *s1;

    setenv("FAKE_CUDA_PEER", "0>1,1>0", 1);
    CHECK(fake_open(&p, NULL, 0));
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(p.ops->malloc_device(i, &m[i], N));
        ASSERT_OK(p.ops->memset(i, m[i], 0, N));
    }
    ASSERT_OK(p.ops->stream_create(0, &s0));
    ASSERT_OK(p.ops->stream_create(1, &s1));
    fill_pattern(h, N, 4);
    ASSERT_OK(p.ops->memcpy(0, m[0], h, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_EQ(fake.peer_enabled(1, 0), 0); /* lazily: nothing yet */

    /* The application enabled 0 -> 1 itself: already enabled is success. */
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_EQ(fake.cuCtxEnablePeerAccess((CUcontext)fake.ctx(1), 0), CUDA_SUCCESS);
    fake.set_current(-1);

    test_log_clear();
    ASSERT_OK(p.ops->memcpy_async(1, m[1], m[0], N, INFINIRT_PLUGIN_MEMCPY_D2D, s1)); /* 1 reads 0's */
    ASSERT_OK(p.ops->stream_synchronize(1, s1));
    ASSERT_EQ(fake.peer_enabled(1, 0), 1);
    ASSERT_OK(p.ops->memcpy(0, m[0], m[1], N, INFINIRT_PLUGIN_MEMCPY_D2D)); /* 0 reads 1's */
    ASSERT_EQ(fake.peer_copies(), 2);
    ASSERT_EQ(fake.staged_copies(), 0);
    ASSERT_EQ(test_log_count("", NULL), 0);
    ASSERT_OK(p.ops->memcpy(1, g, m[1], N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);

    /* Device 2 reaches nobody: staged, right, one info line per pair. */
    ASSERT_OK(p.ops->memcpy(2, m[2], m[0], N, INFINIRT_PLUGIN_MEMCPY_D2D));
    ASSERT_OK(p.ops->memcpy(2, m[2], m[0], N, INFINIRT_PLUGIN_MEMCPY_D2D));
    ASSERT_EQ(fake.staged_copies(), 2);
    ASSERT_EQ(fake.peer_enabled(2, 0), 0);
    ASSERT_EQ(test_log_count("INFO", "device 2 cannot access device 0's memory directly"), 1);
    ASSERT_EQ(test_log_count("ERROR", NULL), 0);
    ASSERT_OK(p.ops->memcpy(2, g, m[2], N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);

    /* Fills: device 1's memory on a stream of device 0 is valid (peer
     * access); device 2's is refused before the driver is asked. */
    ASSERT_OK(p.ops->memset_async(0, m[1], 0x33, 16, s0));
    ASSERT_OK(p.ops->stream_synchronize(0, s0));
    ASSERT_OK(p.ops->memcpy(1, g, m[1], 16, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(g[0], 0x33);
    ASSERT_EQ(g[15], 0x33);
    test_log_clear();
    ASSERT_STATUS(p.ops->memset_async(0, m[2], 0x44, 16, s0), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "memset_async of"), 1);
    ASSERT_EQ(test_log_count("ERROR", "device 0 cannot access it (no peer access between them)"), 1);
    ASSERT_STATUS(p.ops->memset(1, m[2], 0x44, 16), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->memset_async(2, m[0], 0x44, 16, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.peer_faults(), 0);
    ASSERT_OK(p.ops->memcpy(2, g, m[2], N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N); /* untouched */

    ASSERT_OK(p.ops->stream_destroy(0, s0));
    ASSERT_OK(p.ops->stream_destroy(1, s1));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(p.ops->free_device(i, m[i]));
    CHECK(fake_close(&p));
    ASSERT_EQ(fake.peer_enabled(1, 0), 0); /* gone with the contexts */
    return TEST_OK;
}

/* No pair can reach another: every cross-device copy is staged and right,
 * every cross-device fill refused, and no peer access is attempted. */
static int test_peer_none(void)
{
    enum { N = 1024 };
    cuda_plugin p;
    unsigned char h[N], g[N];
    void *a, *b;

    setenv("FAKE_CUDA_PEER", "none", 1);
    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &a, N));
    ASSERT_OK(p.ops->malloc_device(1, &b, N));
    fill_pattern(h, N, 8);
    ASSERT_OK(p.ops->memcpy(0, a, h, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_OK(p.ops->memcpy(1, b, a, N, INFINIRT_PLUGIN_MEMCPY_D2D));
    ASSERT_OK(p.ops->memcpy_async(0, a, b, N, INFINIRT_PLUGIN_MEMCPY_D2D, NULL));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_EQ(fake.staged_copies(), 2);
    ASSERT_EQ(fake.peer_copies(), 0);
    ASSERT_OK(p.ops->memcpy(0, g, a, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);
    ASSERT_STATUS(p.ops->memset_async(0, b, 1, N, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.peer_faults(), 0);
    ASSERT_OK(p.ops->free_device(0, a));
    ASSERT_OK(p.ops->free_device(1, b));
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

/* Refusals and capture errors are INVALID_STATE; an error after which the
 * context is corrupt says so in its log line, and only such an error. */
static int test_error_states(void)
{
    static const CUresult sticky[] = {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED,
                                      CUDA_ERROR_ECC_UNCORRECTABLE};
    static const CUresult refused[] = {CUDA_ERROR_NOT_PERMITTED,
                                       CUDA_ERROR_ILLEGAL_STATE,
                                       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                                       CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                                       CUDA_ERROR_STREAM_CAPTURE_MERGE,
                                       CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                                       CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                                       CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                                       CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                                       CUDA_ERROR_CAPTURED_EVENT,
                                       CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD};
    const char *unusable = "the device's CUDA context is unusable until the process restarts";
    cuda_plugin p;
    void *s;
    char want[128];

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->stream_create(1, &s));
    for (size_t i = 0; i < sizeof sticky / sizeof sticky[0]; i++) {
        const char *name = NULL;
        ASSERT_EQ(fake.cuGetErrorName(sticky[i], &name), CUDA_SUCCESS);
        test_log_clear();
        fake.inject_sync_error(sticky[i]);
        ASSERT_STATUS(p.ops->stream_synchronize(1, s), INFINI_STATUS_INTERNAL_ERROR);
        snprintf(want, sizeof want, "ERROR device 1: cuStreamSynchronize failed: %s (", name);
        ASSERT_EQ(test_log_count(want, unusable), 1);
        ASSERT_EQ(test_log_count("", NULL), 1);
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        test_log_clear();
        fake.inject_sync_error(refused[i]);
        ASSERT_STATUS(p.ops->stream_synchronize(1, NULL), INFINI_STATUS_INVALID_STATE);
        ASSERT_EQ(test_log_count("ERROR device 1: cuStreamSynchronize failed: CUDA_ERROR_", NULL), 1);
        ASSERT_EQ(test_log_count(unusable, NULL), 0);
    }
    /* Ordinary failures are not sticky. */
    test_log_clear();
    void *d = NULL;
    ASSERT_STATUS(p.ops->malloc_device(1, &d, (size_t)65 << 20), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_STATUS(p.ops->free_device(1, &d), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("failed: CUDA_ERROR_", NULL), 2);
    ASSERT_EQ(test_log_count(unusable, NULL), 0);
    ASSERT_OK(p.ops->stream_destroy(1, s));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* ------------------------------------------------------ ABI 1.1 */

static void sleep_ms_fn(void *arg)
{
    struct timespec ts = {0, (long)(intptr_t)arg * 1000000L};
    nanosleep(&ts, NULL);
}

static void *open_gate_later(void *arg)
{
    sleep_ms_fn(arg);
    atomic_store(&gate_open_flag, 1);
    return NULL;
}

/* The handles the application gets are the driver's own objects: the
 * CUstream the fake created, and the CUevent inside the plugin's event.
 * Work the application queues on them natively is seen by infinirt. */
static int test_native_handles(void)
{
    cuda_plugin p;
    void *s, *native = NULL, *e, *ev = NULL, *dev = NULL, *ctx = NULL;
    CUcontext c = NULL;
    int done = -1, idle = -1;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_PTR_EQ(s, fake.last_stream());
    ASSERT_OK(p.ops->stream_get_native(0, s, &native));
    ASSERT_PTR_EQ(native, s);
    ASSERT_EQ(fake.cuStreamGetCtx((CUstream)native, &c), CUDA_SUCCESS);
    ASSERT_PTR_EQ(c, fake.ctx(0));

    ASSERT_OK(p.ops->event_create(0, 0, &e));
    ASSERT_OK(p.ops->event_get_native(0, e, &ev));
    ASSERT(ev != NULL && ev != e);
    fake.set_current(0);
    ASSERT_EQ(fake.cuEventQuery((CUevent)ev), CUDA_SUCCESS); /* a live CUevent of device 0 */

    /* The application records the CUevent itself, behind a gate. */
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc((CUstream)native, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuEventRecord((CUevent)ev, (CUstream)native), CUDA_SUCCESS);
    ASSERT_OK(p.ops->event_query(0, e, &done));
    ASSERT_EQ(done, 0);
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->event_synchronize(0, e));
    ASSERT_OK(p.ops->event_query(0, e, &done));
    ASSERT_EQ(done, 1);
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 1);

    /* The device: CUdevice and primary context, retained but made current
     * nowhere. */
    fake.set_current(-1);
    ASSERT_OK(p.ops->device_get_native(2, &dev, &ctx));
    ASSERT_EQ((int)(intptr_t)dev, 2);
    ASSERT_PTR_EQ(ctx, fake.ctx(2));
    ASSERT_EQ(fake.refcount(2), 1);
    ASSERT_EQ(fake.current_device(), -1);
    ASSERT_OK(p.ops->device_get_native(2, NULL, &ctx));
    ASSERT_EQ(fake.refcount(2), 1);
    /* Memory is addressable: no mem_get_native, the pointer is the handle. */
    ASSERT(p.ops->mem_get_native == NULL);

    ASSERT_OK(p.ops->event_destroy(0, e));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Blocking streams with the driver's legacy default stream: synchronous
 * copies and fills, and NULL-stream work, come after the work queued on
 * the device's blocking streams, and blocking streams wait for NULL-stream
 * work; a non-blocking stream does neither. */
static int test_blocking_streams(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    unsigned char h[N], g[N];
    void *d, *s, *nb, *eb, *en;
    int done = -1, idle = -1;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memset(0, d, 0, N));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    fill_pattern(h, N, 3);

    /* A synchronous D2H reads what a blocking stream's queued copy, held
     * back 50 ms, writes. */
    ASSERT_OK(p.ops->launch_host_func(0, s, sleep_ms_fn, (void *)(intptr_t)50));
    ASSERT_OK(p.ops->memcpy_async(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(p.ops->memcpy(0, g, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);
    /* A synchronous fill lands after the stream's queued fill. */
    ASSERT_OK(p.ops->launch_host_func(0, s, sleep_ms_fn, (void *)(intptr_t)50));
    ASSERT_OK(p.ops->memset_async(0, d, 0x5a, N, s));
    ASSERT_OK(p.ops->memset(0, d, 0x11, 16));
    ASSERT_OK(p.ops->memcpy(0, g, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(g[0], 0x11);
    ASSERT_EQ(g[15], 0x11);
    ASSERT_EQ(g[16], 0x5a);
    ASSERT_EQ(g[N - 1], 0x5a);

    /* NULL-stream work held by a gate holds later work of the blocking
     * stream, not of the non-blocking one. */
    ASSERT_OK(p.ops->event_create(0, 0, &eb));
    ASSERT_OK(p.ops->event_create(0, 0, &en));
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->launch_host_func(0, NULL, gate_wait, NULL));
    ASSERT_OK(p.ops->event_record(0, eb, s));
    ASSERT_OK(p.ops->event_record(0, en, nb));
    ASSERT_OK(p.ops->event_synchronize(0, en));
    sleep_ms_fn((void *)(intptr_t)50); /* time enough for s, were it not held */
    ASSERT_OK(p.ops->event_query(0, eb, &done));
    ASSERT_EQ(done, 0);
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 0);
    ASSERT_OK(p.ops->stream_query(0, NULL, &idle));
    ASSERT_EQ(idle, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->event_synchronize(0, eb));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_OK(p.ops->stream_query(0, NULL, &idle));
    ASSERT_EQ(idle, 1);

    /* A synchronous copy does not wait for a held non-blocking stream. */
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->launch_host_func(0, nb, gate_wait, NULL));
    ASSERT_OK(p.ops->memcpy(0, g, d, 16, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_OK(p.ops->stream_query(0, nb, &idle));
    ASSERT_EQ(idle, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->stream_synchronize(0, nb));

    ASSERT_OK(p.ops->event_destroy(0, eb));
    ASSERT_OK(p.ops->event_destroy(0, en));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(0, nb));
    ASSERT_OK(p.ops->free_device(0, d));
    CHECK(fake_close(&p));
    return TEST_OK;
}

static void *set_device_2(void *arg)
{
    cuda_plugin *p = arg;
    intptr_t ok = p->ops->set_device(2) == INFINI_STATUS_SUCCESS && fake.current_device() == 2;
    return (void *)ok;
}

/* set_device makes the device's primary context current on the calling
 * thread (only there); every other entry leaves the caller's context as it
 * found it, whichever device it works on, and switches nothing when the
 * device's context is already current. */
static int test_current_context(void)
{
    cuda_plugin p;
    unsigned char h[256] = {1, 2, 3};
    void *d0, *d1, *big, *s0, *e0, *w;
    size_t fr, tot;
    CUcontext c = NULL;
    int done, idle, calls;
    float ms;
    pthread_t th;
    void *thread_ok = NULL;

    CHECK(fake_open(&p, NULL, 0));
    fake.set_current(-1);
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_EQ(fake.cuCtxGetCurrent(&c), CUDA_SUCCESS);
    ASSERT_PTR_EQ(c, fake.ctx(1));

    calls = fake.set_current_calls();
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_OK(p.ops->malloc_device(1, &d1, 256));
    ASSERT_EQ(fake.alloc_device(d1), 1);
    ASSERT_EQ(fake.set_current_calls(), calls); /* already current: no switch */

#define KEEPS_1_(call)                       \
    do {                                     \
        ASSERT_OK(call);                     \
        ASSERT_EQ(fake.current_device(), 1); \
    } while (0)
    KEEPS_1_(p.ops->malloc_device(0, &d0, 256));
    ASSERT_EQ(fake.alloc_device(d0), 0);
    KEEPS_1_(p.ops->stream_create(0, &s0));
    ASSERT_EQ(fake.cuStreamGetCtx((CUstream)s0, &c), CUDA_SUCCESS);
    ASSERT_PTR_EQ(c, fake.ctx(0));
    KEEPS_1_(p.ops->event_create(0, 0, &e0));
    KEEPS_1_(p.ops->memcpy_async(0, d0, h, 256, INFINIRT_PLUGIN_MEMCPY_H2D, s0));
    KEEPS_1_(p.ops->memset_async(0, d0, 7, 8, s0));
    KEEPS_1_(p.ops->launch_host_func(0, s0, count_call, (void *)(intptr_t)0));
    KEEPS_1_(p.ops->event_record(0, e0, s0));
    KEEPS_1_(p.ops->stream_wait_event(0, NULL, e0));
    KEEPS_1_(p.ops->stream_wait_event(1, NULL, e0)); /* device 1's stream, device 0's event */
    KEEPS_1_(p.ops->event_query(0, e0, &done));
    KEEPS_1_(p.ops->event_synchronize(0, e0));
    KEEPS_1_(p.ops->event_elapsed_time(0, &ms, e0, e0));
    KEEPS_1_(p.ops->stream_query(0, s0, &idle));
    KEEPS_1_(p.ops->stream_synchronize(0, s0));
    KEEPS_1_(p.ops->stream_synchronize(0, NULL));
    KEEPS_1_(p.ops->memset(0, d0, 9, 4));
    KEEPS_1_(p.ops->memcpy(0, h, d0, 256, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(h[3], 9);
    ASSERT_EQ(h[4], 7);
    KEEPS_1_(p.ops->memcpy(0, d0, d1, 256, INFINIRT_PLUGIN_MEMCPY_D2D));
    KEEPS_1_(p.ops->get_mem_info(0, &fr, &tot));
    KEEPS_1_(p.ops->device_synchronize(0));
    KEEPS_1_(p.ops->device_get_native(0, NULL, NULL));
    /* an application stream of device 0 */
    ASSERT_EQ(fake.cuCtxSetCurrent((CUcontext)fake.ctx(0)), CUDA_SUCCESS);
    CUstream mine = NULL;
    ASSERT_EQ(fake.cuStreamCreate(&mine, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent((CUcontext)fake.ctx(1)), CUDA_SUCCESS);
    KEEPS_1_(p.ops->stream_create_from_native(0, mine, &w));
    KEEPS_1_(p.ops->stream_destroy(0, w));
    KEEPS_1_(p.ops->event_destroy(0, e0));
    KEEPS_1_(p.ops->stream_destroy(0, s0));
    KEEPS_1_(p.ops->free_device(0, d0));
#undef KEEPS_1_
    /* A failing call restores it too. */
    ASSERT_STATUS(p.ops->malloc_device(0, &big, (size_t)65 << 20), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_EQ(fake.current_device(), 1);

    /* No current context before: none after. */
    fake.set_current(-1);
    ASSERT_OK(p.ops->free_device(1, d1));
    ASSERT_EQ(fake.current_device(), -1);

    /* The current context is the calling thread's. */
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_EQ(pthread_create(&th, NULL, set_device_2, &p), 0);
    ASSERT_EQ(pthread_join(th, &thread_ok), 0);
    ASSERT(thread_ok != NULL);
    ASSERT_EQ(fake.current_device(), 0);

    fake.set_current(0);
    ASSERT_EQ(fake.cuStreamDestroy_v2(mine), CUDA_SUCCESS);
    fake.set_current(-1);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* pointer_get_device: the plugin-local device of a pointer the loader did
 * not allocate, through `devices =`; BAD_PARAM, without a log line, for
 * host memory, unknown pointers and devices not exposed. */
static int test_pointer_device(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"devices", "2,0"}};
    void *a, *b, *ph;
    int dev = -1, local = 0;
    CUcontext c1 = NULL;
    CUdeviceptr other = 0;

    CHECK(fake_open(&p, kv, 1));
    ASSERT_OK(p.ops->malloc_device(0, &a, 4096));
    ASSERT_OK(p.ops->malloc_device(1, &b, 4096));
    ASSERT_OK(p.ops->malloc_host(0, &ph, 64));
    test_log_clear();
    ASSERT_OK(p.ops->pointer_get_device(a, &dev));
    ASSERT_EQ(dev, 0);
    ASSERT_OK(p.ops->pointer_get_device((char *)b + 1000, &dev));
    ASSERT_EQ(dev, 1);
    dev = -1;
    ASSERT_STATUS(p.ops->pointer_get_device(ph, &dev), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->pointer_get_device(&local, &dev), INFINI_STATUS_BAD_PARAM);
    /* memory of CUDA device 1, which this config does not expose */
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent(c1), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&other, 256), CUDA_SUCCESS);
    ASSERT_STATUS(p.ops->pointer_get_device((void *)(uintptr_t)other, &dev), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(dev, -1);
    ASSERT_EQ(test_log_count("", NULL), 0);
    ASSERT_EQ(fake.cuMemFree_v2(other), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(1), CUDA_SUCCESS);
    fake.set_current(-1);

    ASSERT_OK(p.ops->free_host(0, ph));
    ASSERT_OK(p.ops->free_device(0, a));
    ASSERT_OK(p.ops->free_device(1, b));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* stream_create_from_native wraps the application's CUstream of the
 * device's primary context: the handle is that CUstream, infinirt work
 * goes to it, and destroying the wrapper waits for the work queued on it
 * (natively too) but leaves the stream to the application. */
static int test_wrap_native(void)
{
    enum { N = 1024 };
    cuda_plugin p;
    unsigned char *h, g[N];
    CUstream mine = NULL, gone = NULL, other = NULL;
    void *w = NULL, *w2, *d, *pinned;
    int idle = -1;
    pthread_t th;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memset(0, d, 0, N));
    ASSERT_OK(p.ops->set_device(0)); /* the application's own stream, on device 0 */
    ASSERT_EQ(fake.cuStreamCreate(&mine, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_OK(p.ops->stream_create_from_native(0, mine, &w));
    ASSERT_PTR_EQ(w, mine);
    ASSERT_EQ(fake.live_streams(), 1);

    /* Native work holds the stream; infinirt's copy queues behind it.
     * Pinned memory: a pageable copy would return only once done, after
     * the gate that only this thread opens (the driver's rule). */
    ASSERT_OK(p.ops->malloc_host(0, &pinned, N));
    h = pinned;
    fill_pattern(h, N, 5);
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(mine, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_OK(p.ops->memcpy_async(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D, w));
    ASSERT_OK(p.ops->stream_query(0, w, &idle));
    ASSERT_EQ(idle, 0);
    ASSERT_EQ(pthread_create(&th, NULL, open_gate_later, (void *)(intptr_t)50), 0);
    ASSERT_OK(p.ops->stream_destroy(0, w)); /* waits for the gate and the copy */
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_EQ(fake.cuStreamQuery(mine), CUDA_SUCCESS); /* still the application's, idle */
    ASSERT_EQ(fake.live_streams(), 1);
    ASSERT_OK(p.ops->memcpy(0, g, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);

    /* Wrapped again after that; twice at once is refused. */
    ASSERT_OK(p.ops->stream_create_from_native(0, mine, &w));
    test_log_clear();
    ASSERT_STATUS(p.ops->stream_create_from_native(0, mine, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "is wrapped already"), 1);
    ASSERT_OK(p.ops->stream_destroy(0, w));

    /* Not device 1's: its context is device 0's. */
    test_log_clear();
    ASSERT_STATUS(p.ops->stream_create_from_native(1, mine, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "belongs to context"), 1);
    ASSERT_EQ(fake.current_device(), 0);
    /* A stream of device 1, wrapped on device 1, is fine. */
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_EQ(fake.cuStreamCreate(&other, 0), CUDA_SUCCESS);
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_OK(p.ops->stream_create_from_native(1, other, &w2));
    ASSERT_PTR_EQ(w2, other);
    ASSERT_EQ(fake.current_device(), 0);
    ASSERT_OK(p.ops->stream_destroy(1, w2));
    /* The special handles and a destroyed stream are refused. */
    ASSERT_STATUS(p.ops->stream_create_from_native(0, NULL, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->stream_create_from_native(0, CU_STREAM_LEGACY, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->stream_create_from_native(0, CU_STREAM_PER_THREAD, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.cuStreamCreate(&gone, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamDestroy_v2(gone), CUDA_SUCCESS);
    ASSERT_STATUS(p.ops->stream_create_from_native(0, gone, &w2), INFINI_STATUS_BAD_PARAM);

    ASSERT_EQ(fake.live_streams(), 2);
    ASSERT_EQ(fake.cuStreamDestroy_v2(mine), CUDA_SUCCESS);
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_EQ(fake.cuStreamDestroy_v2(other), CUDA_SUCCESS);
    fake.set_current(-1);
    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->free_host(0, pinned));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* ------------------------------------------ the strict fake's own rules */
/* Each rule the strict fake adds (fake_libcuda.c), checked on the fake
 * itself, so that it cannot slip back to the lenient behaviour unnoticed.
 * Every ctest entry sets FAKE_CUDA_STRICT=1; these set it themselves too. */

static int strict_open(cuda_plugin *p)
{
    setenv("FAKE_CUDA_STRICT", "1", 1);
    CHECK(fake_open(p, NULL, 0));
    ASSERT_EQ(fake.strict(), 1);
    return TEST_OK;
}

static CUdeviceptr dptr(void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

/* Rule: an async copy touching pageable memory returns after it has
 * completed, so after the gate before it; a pinned one returns at once. */
static int test_strict_pageable_copy(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    unsigned char *page = malloc(N), *pinned = NULL, want[N];
    void *d;
    CUstream s;
    pthread_t th;

    ASSERT(page != NULL);
    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    fill_pattern(want, N, 9);
    ASSERT_OK(p.ops->memcpy(0, d, want, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_EQ(fake.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

    /* D2H into malloc'd memory behind a gate another thread opens. */
    memset(page, 0, N);
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_EQ(pthread_create(&th, NULL, open_gate_later, (void *)(intptr_t)100), 0);
    ASSERT_EQ(fake.cuMemcpyAsync(dptr(page), dptr(d), N, s), CUDA_SUCCESS);
    ASSERT_EQ(atomic_load(&gate_open_flag), 1); /* it waited for the gate */
    ASSERT_MEM_EQ(page, want, N);               /* and the copy is done */
    ASSERT_EQ(pthread_join(th, NULL), 0);

    /* H2D from malloc'd memory: the source is read before the call
     * returns, without waiting for the gate queued before it (a real
     * driver stages it), so it may be reused at once. */
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, gate_wait, NULL), CUDA_SUCCESS);
    fill_pattern(page, N, 10);
    memcpy(want, page, N);
    ASSERT_EQ(fake.cuMemcpyAsync(dptr(d), dptr(page), N, s), CUDA_SUCCESS);
    ASSERT_EQ(atomic_load(&gate_open_flag), 0); /* it did not wait */
    memset(page, 0xee, N);
    atomic_store(&gate_open_flag, 1);
    ASSERT_EQ(fake.cuStreamSynchronize(s), CUDA_SUCCESS);
    memset(page, 0, N);
    ASSERT_OK(p.ops->memcpy(0, page, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(page, want, N);

    /* Pinned memory: the copy is queued behind the gate, returns at once. */
    ASSERT_EQ(fake.cuMemHostAlloc((void **)&pinned, N, 0), CUDA_SUCCESS);
    memset(pinned, 0, N);
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemcpyAsync(dptr(pinned), dptr(d), N, s), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    atomic_store(&gate_open_flag, 1);
    ASSERT_EQ(fake.cuStreamSynchronize(s), CUDA_SUCCESS);
    ASSERT_MEM_EQ(pinned, want, N);
    ASSERT_EQ(fake.cuMemFreeHost(pinned), CUDA_SUCCESS);

    ASSERT_EQ(fake.cuStreamDestroy_v2(s), CUDA_SUCCESS);
    ASSERT_OK(p.ops->free_device(0, d));
    free(page);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: host functions run one at a time across streams, and a driver call
 * from inside one is refused with CUDA_ERROR_NOT_PERMITTED. */
static atomic_int hf_running, hf_max;
static _Atomic CUresult hf_calls[3];
static void hf_probe(void *arg)
{
    int now = atomic_fetch_add(&hf_running, 1) + 1;
    int seen = atomic_load(&hf_max);
    while (now > seen && !atomic_compare_exchange_weak(&hf_max, &seen, now))
        ;
    if (arg != NULL) {
        CUcontext c;
        int n;
        atomic_store(&hf_calls[0], fake.cuCtxGetCurrent(&c));
        atomic_store(&hf_calls[1], fake.cuStreamQuery((CUstream)arg));
        atomic_store(&hf_calls[2], fake.cuDeviceGetCount(&n));
    }
    struct timespec ts = {0, 30 * 1000000L};
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&hf_running, 1);
}

static int test_strict_host_functions(void)
{
    cuda_plugin p;
    CUstream s[4];

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->set_device(0));
    int refusals = fake.host_fn_refusals();
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fake.cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fake.cuLaunchHostFunc(s[i], hf_probe, i == 0 ? (void *)s[1] : NULL), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fake.cuStreamSynchronize(s[i]), CUDA_SUCCESS);
    ASSERT_EQ(atomic_load(&hf_max), 1);
    ASSERT_EQ(fake.host_fn_max_concurrent(), 1);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(atomic_load(&hf_calls[i]), CUDA_ERROR_NOT_PERMITTED);
    ASSERT_EQ(fake.host_fn_refusals() - refusals, 3);
    /* Outside a host function the same calls work. */
    ASSERT_EQ(fake.cuStreamQuery(s[1]), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fake.cuStreamDestroy_v2(s[i]), CUDA_SUCCESS);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: cuCtxSetCurrent replaces the top of the thread's context stack
 * (NULL pops it); cuCtxPushCurrent / cuCtxPopCurrent push and pop. */
static int test_strict_ctx_stack(void)
{
    cuda_plugin p;
    CUcontext c[3], got = NULL;

    CHECK(strict_open(&p));
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c[i], i), CUDA_SUCCESS);
    fake.set_current(-1);
    ASSERT_EQ(fake.ctx_stack_depth(), 0);
    ASSERT_EQ(fake.cuCtxPushCurrent_v2(c[0]), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxPushCurrent_v2(c[1]), CUDA_SUCCESS);
    ASSERT_EQ(fake.ctx_stack_depth(), 2);
    ASSERT_EQ(fake.cuCtxSetCurrent(c[2]), CUDA_SUCCESS); /* replaces c[1] */
    ASSERT_EQ(fake.ctx_stack_depth(), 2);
    ASSERT_EQ(fake.current_device(), 2);
    ASSERT_EQ(fake.cuCtxPopCurrent_v2(&got), CUDA_SUCCESS);
    ASSERT_PTR_EQ(got, c[2]);
    ASSERT_EQ(fake.current_device(), 0);                 /* c[0] under it, not c[1] */
    ASSERT_EQ(fake.cuCtxSetCurrent(NULL), CUDA_SUCCESS); /* pops c[0] */
    ASSERT_EQ(fake.ctx_stack_depth(), 0);
    ASSERT_EQ(fake.current_device(), -1);
    ASSERT_EQ(fake.cuCtxPopCurrent_v2(&got), CUDA_ERROR_INVALID_CONTEXT);
    ASSERT_EQ(fake.cuCtxSetCurrent(c[1]), CUDA_SUCCESS); /* empty: pushes */
    ASSERT_EQ(fake.ctx_stack_depth(), 1);
    fake.set_current(-1);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(i), CUDA_SUCCESS);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: the last release of a primary context resets it: its streams,
 * events and allocations are gone, and a new retain starts afresh. */
static int test_strict_primary_reset(void)
{
    cuda_plugin p;
    CUcontext c;
    CUstream s;
    CUevent e;
    CUdeviceptr d;
    void *h;

    CHECK(strict_open(&p));
    int allocs = fake.live_allocs(), events = fake.live_events();
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c, 2), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent(c), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamCreate(&s, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuEventCreate(&e, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&d, 1024), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemHostAlloc(&h, 1024, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.live_allocs(), allocs + 2);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(2), CUDA_SUCCESS);
    ASSERT_EQ(fake.refcount(2), 0);
    ASSERT_EQ(fake.live_allocs(), allocs);
    ASSERT_EQ(fake.live_events(), events);
    ASSERT_EQ(fake.live_streams(), 0);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c, 2), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(fake.cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(fake.cuMemFree_v2(d), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(fake.cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
    fake.set_current(-1);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(2), CUDA_SUCCESS);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: cuStreamDestroy returns at once with work queued; the handle is
 * invalid at once and the work still completes. */
static atomic_int after_gate_ran;
static void after_gate(void *arg)
{
    (void)arg;
    atomic_store(&after_gate_ran, 1);
}

static int test_strict_stream_destroy(void)
{
    cuda_plugin p;
    CUstream s;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_EQ(fake.cuStreamCreate(&s, 0), CUDA_SUCCESS);
    atomic_store(&gate_open_flag, 0);
    atomic_store(&after_gate_ran, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, after_gate, NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamDestroy_v2(s), CUDA_SUCCESS); /* gate still shut */
    ASSERT_EQ(atomic_load(&after_gate_ran), 0);
    ASSERT_EQ(fake.cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(fake.live_streams(), 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_EQ(fake.cuCtxSynchronize(), CUDA_SUCCESS); /* waits for it too */
    ASSERT_EQ(atomic_load(&after_gate_ran), 1);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: a sticky error breaks its context only, for every later call,
 * until the context's last release resets it. */
static int test_strict_sticky(void)
{
    cuda_plugin p;
    CUcontext c0, c1;
    CUstream s;
    CUdeviceptr d;

    CHECK(strict_open(&p));
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent(c0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamCreate(&s, 0), CUDA_SUCCESS);
    fake.inject_sticky(0, CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&d, 256), CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuStreamQuery(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuStreamSynchronize(NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuStreamDestroy_v2(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    /* Another context is unaffected. */
    ASSERT_EQ(fake.cuCtxSetCurrent(c1), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&d, 256), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemFree_v2(d), CUDA_SUCCESS);
    /* The last release resets device 0's context. */
    ASSERT_EQ(fake.cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent(c0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&d, 256), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemFree_v2(d), CUDA_SUCCESS);
    fake.set_current(-1);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(1), CUDA_SUCCESS);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: after the driver's teardown every call is DEINITIALIZED; the
 * plugin then fails calls cleanly and shuts down without an error log. */
static int test_strict_deinit(void)
{
    cuda_plugin p;
    void *d = NULL;
    int n = -1;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->malloc_device(0, &d, 256));
    fake.unload();
    ASSERT_EQ(fake.cuDeviceGetCount(&n), CUDA_ERROR_DEINITIALIZED);
    test_log_clear();
    void *d2 = NULL;
    ASSERT(p.ops->malloc_device(0, &d2, 256) != INFINI_STATUS_SUCCESS);
    ASSERT_PTR_EQ(d2, NULL);
    ASSERT_EQ(test_log_count("ERROR", "CUDA_ERROR_DEINITIALIZED"), 1);
    test_log_clear();
    p.ops->shutdown();
    ASSERT_EQ(test_log_count("ERROR", NULL), 0);
    return TEST_OK;
}

/* ------------------------------ the plugin under the strict fake's rules */

/* The plugin makes no driver call from inside a host function: its host
 * functions are the caller's, passed straight to cuLaunchHostFunc. */
static atomic_int plugin_hf_calls;
static void plugin_hf(void *arg)
{
    (void)arg;
    atomic_fetch_add(&plugin_hf_calls, 1);
}

static int test_strict_plugin_host_fn(void)
{
    cuda_plugin p;
    void *s, *nb;

    CHECK(strict_open(&p));
    int refusals = fake.host_fn_refusals();
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create_with_flags(1, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    atomic_store(&plugin_hf_calls, 0);
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(p.ops->launch_host_func(0, s, plugin_hf, NULL));
        ASSERT_OK(p.ops->launch_host_func(1, nb, plugin_hf, NULL));
        ASSERT_OK(p.ops->launch_host_func(0, NULL, plugin_hf, NULL));
    }
    ASSERT_OK(p.ops->stream_synchronize(0, s));
    ASSERT_OK(p.ops->stream_synchronize(1, nb));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_EQ(atomic_load(&plugin_hf_calls), 12);
    ASSERT_EQ(fake.host_fn_refusals(), refusals);
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(1, nb));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* cuStreamDestroy returns at once; the plugin's stream_destroy still
 * returns only after the stream's work (the ABI's promise). */
static int test_strict_plugin_stream_destroy(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    void *s, *d, *h;
    unsigned char want[N];
    pthread_t th;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->malloc_host(0, &h, N));
    fill_pattern(want, N, 4);
    ASSERT_OK(p.ops->memcpy(0, d, want, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    memset(h, 0, N);
    ASSERT_OK(p.ops->stream_create(0, &s));
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->launch_host_func(0, s, gate_wait, NULL));
    ASSERT_OK(p.ops->memcpy_async(0, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, s));
    ASSERT_EQ(pthread_create(&th, NULL, open_gate_later, (void *)(intptr_t)50), 0);
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_MEM_EQ(h, want, N); /* the queued copy is done */
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_EQ(fake.live_streams(), 0);
    ASSERT_OK(p.ops->free_host(0, h));
    ASSERT_OK(p.ops->free_device(0, d));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* After a sticky error every call on that device fails, each with the
 * "unusable" log line; other devices go on; shutdown still releases. */
static int test_strict_plugin_sticky(void)
{
    const char *unusable = "the device's CUDA context is unusable until the process restarts";
    cuda_plugin p;
    void *s, *d = NULL, *e;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->event_create(0, 0, &e));
    fake.inject_sticky(0, CUDA_ERROR_ILLEGAL_ADDRESS);
    test_log_clear();
    ASSERT(p.ops->stream_synchronize(0, s) != INFINI_STATUS_SUCCESS);
    ASSERT(p.ops->malloc_device(0, &d, 256) != INFINI_STATUS_SUCCESS);
    ASSERT_PTR_EQ(d, NULL);
    ASSERT(p.ops->event_record(0, e, s) != INFINI_STATUS_SUCCESS);
    ASSERT_EQ(test_log_count("ERROR device 0", unusable), 3);
    ASSERT_EQ(test_log_count("CUDA_ERROR_ILLEGAL_ADDRESS", NULL), 3);
    /* Device 1 is another context. */
    ASSERT_OK(p.ops->malloc_device(1, &d, 256));
    ASSERT_OK(p.ops->free_device(1, d));
    /* The broken context's handles cannot be destroyed; shutdown releases
     * the context, which resets it. */
    ASSERT(p.ops->stream_destroy(0, s) != INFINI_STATUS_SUCCESS);
    ASSERT(p.ops->event_destroy(0, e) != INFINI_STATUS_SUCCESS);
    p.ops->shutdown();
    for (int dv = 0; dv < 8; dv++)
        ASSERT_EQ(fake.refcount(dv), 0);
    ASSERT_EQ(fake.live_streams(), 0);
    ASSERT_EQ(fake.live_events(), 0);
    return TEST_OK;
}

/* Shutdown releases the primary contexts, which resets them: memory from
 * before is gone, and a later plugin refuses it with a clear error
 * rather than touching it. */
static int test_strict_plugin_reset(void)
{
    cuda_plugin p;
    void *d = NULL;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->malloc_device(0, &d, 256));
    ASSERT_EQ(fake.live_allocs(), 1);
    p.ops->shutdown();
    ASSERT_EQ(fake.refcount(0), 0);
    ASSERT_EQ(fake.live_allocs(), 0);
    ASSERT_OK(fake_init(&p, "ok", NULL, 0));
    test_log_clear();
    ASSERT_STATUS(p.ops->free_device(0, d), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", NULL), 1);
    CHECK(fake_close(&p));
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {CUDA_FAKE_DRIVER_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
