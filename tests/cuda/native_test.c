/* SPDX-License-Identifier: Apache-2.0 */
/*
 * native_test.c - InfiniCore's view of the CUDA backend, through the public
 * API, over the fake driver (fake_libcuda.c): the handles an application
 * holds are the driver's own CUstream and CUevent, infinirtSetDevice makes
 * the device's primary context current on the calling thread, calls routed
 * to another device leave it current, and a CUstream the application made
 * can be wrapped.
 *
 *   cuda_native_test NAME     (INFINIRT_CONFIG: the cuda-fake config)
 *
 * FAKE_CUDA_PATH is the fake driver the config names: dlopen of the same
 * path gives the copy the plugin uses, so the test reads the driver's state
 * (the calling thread's current context, the streams it made) and calls it
 * as an application would.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h> /* types and values only */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "fake_gpu_ids.h"
#include "infinirt.h"
#include "native_list.h"
#include "test.h"

static struct {
    void *(*ctx)(int);
    void *(*last_stream)(void);
    int (*live_streams)(void);
    int (*refcount)(int);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuStreamGetCtx)(CUstream, CUcontext *);
    CUresult (*cuStreamQuery)(CUstream);
    CUresult (*cuEventQuery)(CUevent);
    CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn, void *);
    CUresult (*cuStreamBeginCapture_v2)(CUstream, CUstreamCaptureMode);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphDestroy)(CUgraph);
} fake;

static int fake_bind(void)
{
    void *dl = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL)
        TEST_FAILED_("dlopen(%s): %s", FAKE_CUDA_PATH, dlerror());
#define BIND_(field, sym)                    \
    do {                                     \
        void *s_ = dlsym(dl, sym);           \
        ASSERT(s_ != NULL);                  \
        memcpy(&fake.field, &s_, sizeof s_); \
    } while (0)
    BIND_(ctx, "fake_cuda_ctx");
    BIND_(last_stream, "fake_cuda_last_stream");
    BIND_(live_streams, "fake_cuda_live_streams");
    BIND_(refcount, "fake_cuda_refcount");
    BIND_(cuCtxGetCurrent, "cuCtxGetCurrent");
    BIND_(cuStreamCreate, "cuStreamCreate");
    BIND_(cuStreamDestroy_v2, "cuStreamDestroy_v2");
    BIND_(cuStreamGetCtx, "cuStreamGetCtx");
    BIND_(cuStreamQuery, "cuStreamQuery");
    BIND_(cuEventQuery, "cuEventQuery");
    BIND_(cuLaunchHostFunc, "cuLaunchHostFunc");
    BIND_(cuStreamBeginCapture_v2, "cuStreamBeginCapture_v2");
    BIND_(cuStreamEndCapture, "cuStreamEndCapture");
    BIND_(cuGraphDestroy, "cuGraphDestroy");
#undef BIND_
    return TEST_OK;
}

/* Two fake GPUs through the loader, the fake bound. */
static int setup(void)
{
    int n = 0;
    CHECK(fake_bind());
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_NVIDIA, &n));
    ASSERT_GE(n, 2);
    return TEST_OK;
}

/* The driver's current context on this thread is device `dev`'s. */
#define ASSERT_CURRENT(dev)                                 \
    do {                                                    \
        CUcontext c_ = NULL;                                \
        ASSERT_EQ(fake.cuCtxGetCurrent(&c_), CUDA_SUCCESS); \
        ASSERT_PTR_EQ((void *)c_, fake.ctx(dev));           \
    } while (0)

/* infinirtStreamCreate gives the CUstream the driver created, of the
 * current device's context, and infinirtEventCreate a live CUevent. */
static int test_handles(void)
{
    infinirtStream_t s;
    infinirtEvent_t e;
    void *n = NULL;
    CUcontext c = NULL;

    CHECK(setup());
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 1));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_PTR_EQ((void *)s, fake.last_stream());
    ASSERT_EQ(fake.cuStreamGetCtx((CUstream)s, &c), CUDA_SUCCESS);
    ASSERT_PTR_EQ((void *)c, fake.ctx(1));
    ASSERT_OK(infinirtStreamGetNativeHandle(s, &n));
    ASSERT_PTR_EQ(n, (void *)s);
    ASSERT_OK(infinirtStreamGetNativeHandle(NULL, &n));
    ASSERT_PTR_EQ(n, NULL); /* the legacy default stream */

    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventGetNativeHandle(e, &n));
    ASSERT_PTR_EQ(n, (void *)e);
    /* A CUevent of device 1's context: the fake checks both. */
    ASSERT_EQ(fake.cuEventQuery((CUevent)e), CUDA_SUCCESS);
    ASSERT_OK(infinirtEventRecord(e, s));
    ASSERT_OK(infinirtEventSynchronize(e));

    void *dev = NULL, *ctx = NULL;
    ASSERT_OK(infinirtDeviceGetNativeHandle(INFINI_DEVICE_NVIDIA, 0, &dev, &ctx));
    ASSERT_EQ((intptr_t)dev, 0);
    ASSERT_PTR_EQ(ctx, fake.ctx(0));
    ASSERT_CURRENT(1);

    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* infinirtSetDevice makes the device's primary context current on the
 * calling thread; calls routed to device 0 by stream, event or pointer
 * while device 1 is current leave device 1's context current. */
static int test_set_device(void)
{
    enum { N = 4096 };
    unsigned char h[N], g[N];
    infinirtStream_t s0;
    infinirtEvent_t e0;
    void *p0, *p1;
    infinirtEventStatus_t es;

    CHECK(setup());
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 1));
    ASSERT_CURRENT(1);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    ASSERT_CURRENT(0);
    ASSERT_OK(infinirtStreamCreate(&s0));
    ASSERT_OK(infinirtEventCreate(&e0));
    ASSERT_OK(infinirtMalloc(&p0, N));

    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 1));
    ASSERT_CURRENT(1);
    ASSERT_OK(infinirtMalloc(&p1, N)); /* device 1's own work */
    ASSERT_CURRENT(1);
    memset(h, 0x3c, N);
#define KEEPS_1_(call)     \
    do {                   \
        ASSERT_OK(call);   \
        ASSERT_CURRENT(1); \
    } while (0)
    KEEPS_1_(infinirtMemcpyAsync(p0, h, N, INFINIRT_MEMCPY_H2D, s0));
    KEEPS_1_(infinirtMemsetAsync(p0, 0x11, 8, s0));
    KEEPS_1_(infinirtEventRecord(e0, s0));
    KEEPS_1_(infinirtEventQuery(e0, &es));
    KEEPS_1_(infinirtStreamWaitEvent(NULL, e0)); /* device 1's NULL stream, device 0's event */
    KEEPS_1_(infinirtEventSynchronize(e0));
    KEEPS_1_(infinirtStreamSynchronize(s0));
    KEEPS_1_(infinirtMemcpy(g, p0, N, INFINIRT_MEMCPY_D2H));
    ASSERT_EQ(g[0], 0x11);
    ASSERT_EQ(g[8], 0x3c);
    KEEPS_1_(infinirtMemset(p0, 0x22, N));
    KEEPS_1_(infinirtMemcpy(p1, p0, N, INFINIRT_MEMCPY_D2D));
    KEEPS_1_(infinirtMemcpy(g, p1, N, INFINIRT_MEMCPY_D2H));
    ASSERT_EQ(g[N - 1], 0x22);
    KEEPS_1_(infinirtFreeAsync(p0, s0));
    KEEPS_1_(infinirtEventDestroy(e0));
    KEEPS_1_(infinirtStreamDestroy(s0));
#undef KEEPS_1_
    infiniDevice_t type;
    int id = -1;
    ASSERT_OK(infinirtGetDevice(&type, &id));
    ASSERT_EQ(type, INFINI_DEVICE_NVIDIA);
    ASSERT_EQ(id, 1);
    ASSERT_OK(infinirtFree(p1));
    ASSERT_CURRENT(1);
    return TEST_OK;
}

static void *other_thread(void *arg)
{
    CUcontext c = NULL;
    (void)arg;
    /* A fresh thread has no current context until it chooses a device. */
    if (fake.cuCtxGetCurrent(&c) != CUDA_SUCCESS || c != NULL)
        return NULL;
    if (infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0) != INFINI_STATUS_SUCCESS)
        return NULL;
    if (fake.cuCtxGetCurrent(&c) != CUDA_SUCCESS || c != fake.ctx(0))
        return NULL;
    return fake.ctx(0);
}

/* The current context is per thread, as infinirt's current device is. */
static int test_set_device_threads(void)
{
    pthread_t t;
    void *r = NULL;

    CHECK(setup());
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 1));
    ASSERT_EQ(pthread_create(&t, NULL, other_thread, NULL), 0);
    ASSERT_EQ(pthread_join(t, &r), 0);
    ASSERT_PTR_EQ(r, fake.ctx(0));
    ASSERT_CURRENT(1);
    return TEST_OK;
}

static void hold_ms(void *arg)
{
    struct timespec ts = {0, (long)(intptr_t)arg * 1000000L};
    nanosleep(&ts, NULL);
}

/* A CUstream the application made on device 0 (with device 0 current, as
 * cudaStreamCreate after infinirtSetDevice would) is wrapped: the handle is
 * that CUstream, infinirt allocations and copies work on it, and destroying
 * the wrapper waits for the work (the application's own included) and
 * leaves the stream alive. */
static int test_wrap_native(void)
{
    enum { N = 2048 };
    unsigned char h[N], g[N];
    CUstream mine = NULL, other = NULL;
    infinirtStream_t w = NULL, w2 = NULL;
    void *p;

    CHECK(setup());
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 1));
    ASSERT_EQ(fake.cuStreamCreate(&other, 0), CUDA_SUCCESS); /* device 1's */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    ASSERT_EQ(fake.cuStreamCreate(&mine, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    int before = fake.live_streams();
    ASSERT_OK(infinirtStreamCreateFromNative(&w, mine));
    ASSERT_PTR_EQ((void *)w, (void *)mine);

    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 7 + 1);
    ASSERT_OK(infinirtMallocAsync(&p, N, w));
    ASSERT_EQ(fake.cuLaunchHostFunc(mine, hold_ms, (void *)(intptr_t)50), CUDA_SUCCESS); /* native work */
    ASSERT_OK(infinirtMemcpyAsync(p, h, N, INFINIRT_MEMCPY_H2D, w));
    ASSERT_OK(infinirtMemcpyAsync(g, p, N, INFINIRT_MEMCPY_D2H, w));
    ASSERT_OK(infinirtFreeAsync(p, w));
    ASSERT_OK(infinirtStreamDestroy(w)); /* waits for all of it */
    ASSERT_MEM_EQ(g, h, N);
    ASSERT_EQ(fake.cuStreamQuery(mine), CUDA_SUCCESS); /* alive and idle */
    ASSERT_EQ(fake.live_streams(), before);

    /* Device 1's stream is not the current device's. */
    ASSERT_STATUS(infinirtStreamCreateFromNative(&w2, other), INFINI_STATUS_BAD_PARAM);
    ASSERT_CURRENT(0);
    ASSERT_EQ(fake.cuStreamDestroy_v2(mine), CUDA_SUCCESS);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 1));
    ASSERT_EQ(fake.cuStreamDestroy_v2(other), CUDA_SUCCESS);
    return TEST_OK;
}

/* A capture the application begins natively (cuStreamBeginCapture on an
 * infinirt stream handle) is seen by the loader: MallocAsync on the stream
 * is served from the capture's private memory (held while the graph
 * lives), infinirtStreamEndCapture ends it and gives a graph that replays;
 * one the application also ends natively leaves the stream usable. */
static int test_native_capture(void)
{
    enum { N = 4096 };
    unsigned char h[N], g[N];
    infinirtStream_t s = NULL, other = NULL;
    infinirtGraph_t graph = NULL;
    infinirtGraphExec_t exec = NULL;
    void *p = NULL;

    CHECK(setup());
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&other));
    ASSERT_EQ(fake.cuStreamBeginCapture_v2((CUstream)s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    ASSERT_OK(infinirtMallocAsync(&p, N, s));
    ASSERT_OK(infinirtMemcpyAsync(p, h, N, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(g, p, N, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtFreeAsync(p, s));
    ASSERT_OK(infinirtStreamEndCapture(s, &graph));
    ASSERT_OK(infinirtGraphInstantiate(&exec, graph, NULL, NULL, 0));
    for (int r = 1; r <= 2; r++) {
        memset(h, r, sizeof h);
        memset(g, 0, sizeof g);
        ASSERT_OK(infinirtGraphLaunch(exec, other));
        ASSERT_OK(infinirtStreamSynchronize(other));
        ASSERT_EQ(g[0], r);
        ASSERT_EQ(g[N - 1], r);
        /* The capture's block is the graph's: never handed out meanwhile. */
        for (int k = 0; k < 8; k++) {
            void *q = NULL;
            ASSERT_OK(infinirtMallocAsync(&q, N, other));
            ASSERT(q != p);
            ASSERT_OK(infinirtFreeAsync(q, other));
        }
    }
    ASSERT_OK(infinirtGraphExecDestroy(exec));
    ASSERT_OK(infinirtGraphDestroy(graph));

    /* Begun and ended natively: nothing of it stays in the way. */
    CUgraph ng = NULL;
    ASSERT_EQ(fake.cuStreamBeginCapture_v2((CUstream)s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamEndCapture((CUstream)s, &ng), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuGraphDestroy(ng), CUDA_SUCCESS);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(other));
    return TEST_OK;
}

/* Each device's properties carry the driver's UUID of its own GPU (the
 * fake's devices: fake_gpu_ids.h); reading them creates no context. */
static int test_device_uuid(void)
{
    int n = 0;
    CHECK(setup());
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_NVIDIA, &n));
    for (int i = 0; i < n; i++) {
        infinirtDeviceProperties_t props;
        char want[64];
        fake_gpu_uuid_string(i, want, sizeof want);
        ASSERT_OK(infinirtGetDeviceProperties(INFINI_DEVICE_NVIDIA, i, &props));
        ASSERT_STR_EQ(props.uuid, want);
        ASSERT_EQ(fake.refcount(i), 0);
    }
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {CUDA_NATIVE_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
