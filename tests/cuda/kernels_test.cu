/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernels_test.cu - CUDA kernels on infinirt's streams (label gpu).
 *
 * InfiniCore's kernels cast infinirtStream_t to cudaStream_t and launch
 * with <<<>>>; these tests do the same through the public API on a real
 * GPU, interleaved with infinirt copies, and check every element:
 *
 *   kernels_interleaved  kernels on (cudaStream_t)stream between async
 *                        copies, a synchronous D2H right after them (legacy
 *                        ordering), kernels on the NULL stream, events used
 *                        as cudaEvent_t;
 *   free_under_kernel    a kernel that writes a block for 200 ms while the
 *                        block is FreeAsync'd / Freed: a same-size block
 *                        allocated meanwhile on another stream and filled
 *                        must keep its contents (the allocator did not hand
 *                        the block out early, though the kernel was queued
 *                        natively where the loader's counters cannot see it);
 *   wrap_native          a cudaStream_t of the application's, wrapped;
 *   set_device           cudaGetDevice follows infinirtSetDevice, and a call
 *                        routed to another device leaves it;
 *   graph_kernel         a cudart kernel launched on (cudaStream_t)stream
 *                        between infinirt copies is captured natively; the
 *                        graph, launched twice, reads the input as it is at
 *                        each launch;
 *   graph_global_threads a GLOBAL capture while another thread runs
 *                        infinirtMalloc/infinirtFree (the allocator's raw
 *                        cuMemAlloc/cuMemFree and its fence events): the
 *                        capture stays valid and replays;
 *   graph_malloc_miss    a capture whose infinirtMallocAsync asks for a size
 *                        never allocated before (the allocator's cache
 *                        misses, so the plugin allocates during the capture);
 *                        the block is stable across launches.
 *
 *   cuda_kernels_test NAME    (INFINIRT_CONFIG: a config with the CUDA plugin)
 *
 * Exits 77 (skipped) without an NVIDIA device, unless
 * INFINIRT_CUDA_TEST_REQUIRE_GPU=1 (tests/gpu/run-cuda-checks.sh).
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#include "infinirt.h"

#define TEST_OK 0
#define TEST_FAIL 1
#define TEST_SKIP 77

#define FAIL_(...)                                            \
    do {                                                      \
        fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                         \
        fputc('\n', stderr);                                  \
        return TEST_FAIL;                                     \
    } while (0)
#define OK_(call)                                               \
    do {                                                        \
        infiniStatus_t st_ = (call);                            \
        if (st_ != INFINI_STATUS_SUCCESS)                       \
            FAIL_("%s = %s", #call, infinirtGetErrorName(st_)); \
    } while (0)
#define STATUS_(call, want)                                                                          \
    do {                                                                                             \
        infiniStatus_t st_ = (call);                                                                 \
        if (st_ != (want))                                                                           \
            FAIL_("%s = %s, want %s", #call, infinirtGetErrorName(st_), infinirtGetErrorName(want)); \
    } while (0)
#define CU_(call)                                            \
    do {                                                     \
        cudaError_t e_ = (call);                             \
        if (e_ != cudaSuccess)                               \
            FAIL_("%s = %s", #call, cudaGetErrorString(e_)); \
    } while (0)
#define CHECK_(cond)            \
    do {                        \
        if (!(cond))            \
            FAIL_("%s", #cond); \
    } while (0)

/* ------------------------------------------------------------- kernels */

__global__ void axpb(float *x, size_t n, float a, float b)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = a * x[i] + b;
}

__device__ unsigned long long now_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* One block: waits `ns` nanoseconds of GPU time, then writes v everywhere.
 * The write comes last, so memory handed out early would be overwritten
 * after its new owner filled it. */
__global__ void slow_fill(unsigned *p, size_t n, unsigned v, unsigned long long ns)
{
    if (threadIdx.x == 0) {
        unsigned long long t0 = now_ns();
        while (now_ns() - t0 < ns)
            ;
    }
    __syncthreads();
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        p[i] = v;
}

static unsigned grid(size_t n)
{
    return (unsigned)((n + 255) / 256);
}

/* ----------------------------------------------------------- the tests */

static int devices(void)
{
    int n = 0;
    if (infinirtGetDeviceCount(INFINI_DEVICE_NVIDIA, &n) != INFINI_STATUS_SUCCESS)
        n = 0;
    return n;
}

static int test_kernels_interleaved(void)
{
    const size_t n = (size_t)1 << 20;
    std::vector<float> h(n), out(n);
    infinirtStream_t s;
    infinirtEvent_t e0, e1;
    float *a, *b;
    void *native = NULL;

    OK_(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    OK_(infinirtStreamCreate(&s));
    OK_(infinirtStreamGetNativeHandle(s, &native));
    CHECK_(native == (void *)s);
    cudaStream_t cs = (cudaStream_t)s;
    CU_(cudaStreamQuery(cs)); /* a live stream to the runtime too */
    unsigned flags = 99;
    CU_(cudaStreamGetFlags(cs, &flags));
    CHECK_(flags == cudaStreamDefault); /* blocking, as cudaStreamCreate's */

    for (size_t i = 0; i < n; i++)
        h[i] = (float)i;
    OK_(infinirtMallocAsync((void **)&a, n * sizeof(float), s));
    OK_(infinirtMallocAsync((void **)&b, n * sizeof(float), s));
    OK_(infinirtEventCreate(&e0));
    OK_(infinirtEventCreate(&e1));
    OK_(infinirtEventRecord(e0, s));
    OK_(infinirtMemcpyAsync(a, h.data(), n * sizeof(float), INFINIRT_MEMCPY_H2D, s));
    axpb<<<grid(n), 256, 0, cs>>>(a, n, 2.0f, 1.0f); /* a = 2i + 1 */
    OK_(infinirtMemcpyAsync(b, a, n * sizeof(float), INFINIRT_MEMCPY_D2D, s));
    axpb<<<grid(n), 256, 0, cs>>>(b, n, 3.0f, 0.0f);  /* b = 6i + 3 */
    axpb<<<grid(n), 256, 0, cs>>>(a, n, 1.0f, -1.0f); /* a = 2i */
    CU_(cudaGetLastError());
    CU_(cudaEventRecord((cudaEvent_t)e1, cs)); /* infinirt's event, recorded natively */

    /* InfiniCore's pattern: a synchronous D2H right after kernels on its
     * blocking stream, with no synchronize between. */
    OK_(infinirtMemcpy(out.data(), b, n * sizeof(float), INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < n; i++)
        if (out[i] != 6.0f * (float)i + 3.0f)
            FAIL_("b[%zu] = %g, want %g", i, out[i], 6.0 * (double)i + 3.0);
    OK_(infinirtEventSynchronize(e1));
    float ms = -1;
    OK_(infinirtEventElapsedTime(&ms, e0, e1));
    CHECK_(ms >= 0.0f);
    CU_(cudaEventQuery((cudaEvent_t)e1));

    OK_(infinirtMemcpyAsync(out.data(), a, n * sizeof(float), INFINIRT_MEMCPY_D2H, s));
    OK_(infinirtStreamSynchronize(s));
    for (size_t i = 0; i < n; i++)
        if (out[i] != 2.0f * (float)i)
            FAIL_("a[%zu] = %g, want %g", i, out[i], 2.0 * (double)i);

    /* The NULL stream is stream 0: a kernel there, then an infinirt copy on
     * NULL, then one on the blocking stream that must see it. */
    axpb<<<grid(n), 256, 0, 0>>>(a, n, 1.0f, 5.0f); /* a = 2i + 5 */
    CU_(cudaGetLastError());
    OK_(infinirtMemcpyAsync(b, a, n * sizeof(float), INFINIRT_MEMCPY_D2D, NULL));
    axpb<<<grid(n), 256, 0, cs>>>(b, n, 1.0f, 1.0f); /* b = 2i + 6 */
    OK_(infinirtMemcpyAsync(out.data(), b, n * sizeof(float), INFINIRT_MEMCPY_D2H, s));
    OK_(infinirtStreamSynchronize(s));
    for (size_t i = 0; i < n; i++)
        if (out[i] != 2.0f * (float)i + 6.0f)
            FAIL_("b[%zu] = %g, want %g", i, out[i], 2.0 * (double)i + 6.0);

    OK_(infinirtFreeAsync(a, s));
    OK_(infinirtFreeAsync(b, s));
    OK_(infinirtEventDestroy(e0));
    OK_(infinirtEventDestroy(e1));
    OK_(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* One case of free_under_kernel: a block written by a 200 ms kernel on
 * `ks` is freed (FreeAsync on ks, or Free) right after the launch; a block
 * of the same size is allocated on the non-blocking stream `other`,
 * filled there, and read back once everything is done. */
static int free_case(const char *what, infinirtStream_t ks, infinirtStream_t other, int async)
{
    const size_t n = (size_t)4 << 20; /* 16 MiB */
    std::vector<unsigned> h(n, 0x55555555u), out(n);
    unsigned *p, *q;

    OK_(infinirtMallocAsync((void **)&p, n * sizeof(unsigned), ks));
    slow_fill<<<1, 256, 0, (cudaStream_t)ks>>>(p, n, 0xAAAAAAAAu, 200ull * 1000 * 1000);
    CU_(cudaGetLastError());
    if (async)
        OK_(infinirtFreeAsync(p, ks));
    else
        OK_(infinirtFree(p));
    OK_(infinirtMallocAsync((void **)&q, n * sizeof(unsigned), other));
    OK_(infinirtMemcpyAsync(q, h.data(), n * sizeof(unsigned), INFINIRT_MEMCPY_H2D, other));
    OK_(infinirtStreamSynchronize(other));
    OK_(infinirtDeviceSynchronize()); /* the kernel has written by now */
    OK_(infinirtMemcpyAsync(out.data(), q, n * sizeof(unsigned), INFINIRT_MEMCPY_D2H, other));
    OK_(infinirtStreamSynchronize(other));
    fprintf(stderr, "%s: new block %s the freed one\n", what, q == p ? "is" : "is not");
    for (size_t i = 0; i < n; i++)
        if (out[i] != 0x55555555u)
            FAIL_("%s: q[%zu] = 0x%08x: the block was handed out while the kernel still wrote it", what, i, out[i]);
    OK_(infinirtFreeAsync(q, other));
    OK_(infinirtStreamSynchronize(other));
    return TEST_OK;
}

static int test_free_under_kernel(void)
{
    infinirtStream_t blocking, nonblocking, other;

    OK_(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    OK_(infinirtStreamCreate(&blocking));
    OK_(infinirtStreamCreateWithFlags(&nonblocking, INFINIRT_STREAM_NON_BLOCKING));
    OK_(infinirtStreamCreateWithFlags(&other, INFINIRT_STREAM_NON_BLOCKING));
    if (free_case("FreeAsync, blocking stream", blocking, other, 1) != TEST_OK ||
        free_case("FreeAsync, non-blocking stream", nonblocking, other, 1) != TEST_OK ||
        free_case("Free, kernel on a blocking stream", blocking, other, 0) != TEST_OK ||
        free_case("Free, kernel on a non-blocking stream", nonblocking, other, 0) != TEST_OK)
        return TEST_FAIL;
    OK_(infinirtStreamDestroy(blocking));
    OK_(infinirtStreamDestroy(nonblocking));
    OK_(infinirtStreamDestroy(other));
    return TEST_OK;
}

static int test_wrap_native(void)
{
    const size_t n = (size_t)1 << 16;
    std::vector<float> h(n), out(n);
    cudaStream_t mine;
    infinirtStream_t w;
    float *a;

    OK_(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    CU_(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
    OK_(infinirtStreamCreateFromNative(&w, (void *)mine));
    CHECK_((void *)w == (void *)mine);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)(i % 1000);
    OK_(infinirtMallocAsync((void **)&a, n * sizeof(float), w));
    OK_(infinirtMemcpyAsync(a, h.data(), n * sizeof(float), INFINIRT_MEMCPY_H2D, w));
    axpb<<<grid(n), 256, 0, mine>>>(a, n, -1.0f, 7.0f);
    CU_(cudaGetLastError());
    OK_(infinirtMemcpyAsync(out.data(), a, n * sizeof(float), INFINIRT_MEMCPY_D2H, w));
    OK_(infinirtFreeAsync(a, w));
    OK_(infinirtStreamDestroy(w)); /* waits, leaves `mine` */
    for (size_t i = 0; i < n; i++)
        if (out[i] != 7.0f - (float)(i % 1000))
            FAIL_("a[%zu] = %g", i, out[i]);
    CU_(cudaStreamQuery(mine));
    CU_(cudaStreamDestroy(mine));
    STATUS_(infinirtStreamCreateFromNative(&w, NULL), INFINI_STATUS_BAD_PARAM);
    return TEST_OK;
}

static int test_set_device(void)
{
    int count = devices(), cur = -1;
    infinirtStream_t s0;
    void *p0;

    OK_(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    CU_(cudaGetDevice(&cur));
    CHECK_(cur == 0);
    if (count < 2) {
        fprintf(stderr, "one GPU: the routed-call part needs two\n");
        return TEST_OK;
    }
    OK_(infinirtStreamCreate(&s0));
    OK_(infinirtMalloc(&p0, 4096));
    OK_(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 1));
    CU_(cudaGetDevice(&cur));
    CHECK_(cur == 1);
    OK_(infinirtMemsetAsync(p0, 1, 4096, s0)); /* routed to device 0 */
    OK_(infinirtStreamSynchronize(s0));
    OK_(infinirtFree(p0));
    OK_(infinirtStreamDestroy(s0));
    CU_(cudaGetDevice(&cur));
    CHECK_(cur == 1);
    float *x;
    CU_(cudaMalloc(&x, 16)); /* the application's own call goes to device 1 */
    cudaPointerAttributes attr;
    CU_(cudaPointerGetAttributes(&attr, x));
    CHECK_(attr.device == 1);
    CU_(cudaFree(x));
    return TEST_OK;
}

/* ----------------------------------------------------------- graphs */

/* InfiniCore's flow (graph.cc): capture, instantiate with a log buffer,
 * infinirtGraphLuanch.  *exec on success; the graph is destroyed here. */
static int end_and_instantiate(infinirtStream_t s, infinirtGraphExec_t *exec)
{
    infinirtGraph_t graph = NULL;
    infinirtGraphNode_t node = NULL;
    char log[4096] = "";

    OK_(infinirtStreamEndCapture(s, &graph));
    CHECK_(graph != NULL);
    infiniStatus_t st = infinirtGraphInstantiate(exec, graph, &node, log, sizeof log);
    if (st != INFINI_STATUS_SUCCESS)
        FAIL_("infinirtGraphInstantiate = %s: %s", infinirtGetErrorName(st), log);
    OK_(infinirtGraphDestroy(graph));
    return TEST_OK;
}

static int test_graph_kernel(void)
{
    const size_t n = (size_t)1 << 20;
    std::vector<float> h(n), out(n);
    infinirtStream_t s, s2;
    infinirtGraphExec_t exec = NULL;
    float *a;

    OK_(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    OK_(infinirtStreamCreate(&s));
    OK_(infinirtStreamCreate(&s2));
    OK_(infinirtMalloc((void **)&a, n * sizeof(float)));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)i;
    std::fill(out.begin(), out.end(), -1.0f);

    OK_(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    CU_(cudaStreamIsCapturing((cudaStream_t)s, &cs)); /* CUDA's own capture */
    CHECK_(cs == cudaStreamCaptureStatusActive);
    OK_(infinirtMemcpyAsync(a, h.data(), n * sizeof(float), INFINIRT_MEMCPY_H2D, s));
    axpb<<<grid(n), 256, 0, (cudaStream_t)s>>>(a, n, 2.0f, 1.0f);
    CU_(cudaGetLastError());
    OK_(infinirtMemcpyAsync(out.data(), a, n * sizeof(float), INFINIRT_MEMCPY_D2H, s));
    if (end_and_instantiate(s, &exec) != TEST_OK)
        return TEST_FAIL;
    OK_(infinirtDeviceSynchronize());
    CHECK_(out[0] == -1.0f && out[n - 1] == -1.0f); /* nothing ran during the capture */

    for (int launch = 1; launch <= 2; launch++) {
        for (size_t i = 0; i < n; i++)
            h[i] = (float)(i % 4096) * (float)launch; /* read at launch time */
        OK_(infinirtGraphLuanch(exec, s2));
        OK_(infinirtStreamSynchronize(s2));
        for (size_t i = 0; i < n; i++)
            if (out[i] != 2.0f * h[i] + 1.0f)
                FAIL_("launch %d: out[%zu] = %g, want %g", launch, i, out[i], 2.0 * h[i] + 1.0);
    }
    OK_(infinirtGraphExecDestroy(exec));
    OK_(infinirtFree(a));
    OK_(infinirtStreamDestroy(s));
    OK_(infinirtStreamDestroy(s2));
    return TEST_OK;
}

struct churn_arg {
    volatile int stop;
    volatile int rounds;
    infiniStatus_t st;
};

/* Allocations of sizes the cache has not seen, so the allocator calls the
 * driver (and frees: trim gives the memory back). */
static void *churn(void *p)
{
    churn_arg *c = (churn_arg *)p;
    c->st = infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0);
    while (c->st == INFINI_STATUS_SUCCESS && (c->rounds < 50 || !c->stop)) {
        void *x = NULL;
        c->st = infinirtMalloc(&x, ((size_t)3 << 20) + (size_t)c->rounds * 4096);
        if (c->st == INFINI_STATUS_SUCCESS)
            c->st = infinirtFree(x);
        c->rounds++;
    }
    return NULL;
}

static int test_graph_global_threads(void)
{
    const size_t n = (size_t)1 << 16;
    std::vector<float> h(n, 1.0f), out(n);
    infinirtStream_t s;
    infinirtGraphExec_t exec = NULL;
    churn_arg c = {0, 0, INFINI_STATUS_SUCCESS};
    pthread_t th;
    float *a;

    OK_(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    OK_(infinirtStreamCreate(&s));
    OK_(infinirtMalloc((void **)&a, n * sizeof(float)));
    OK_(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_(pthread_create(&th, NULL, churn, &c) == 0);
    OK_(infinirtMemcpyAsync(a, h.data(), n * sizeof(float), INFINIRT_MEMCPY_H2D, s));
    for (int k = 0; k < 20; k++) /* time for the other thread to allocate */
        axpb<<<grid(n), 256, 0, (cudaStream_t)s>>>(a, n, 1.0f, 1.0f);
    CU_(cudaGetLastError());
    OK_(infinirtMemcpyAsync(out.data(), a, n * sizeof(float), INFINIRT_MEMCPY_D2H, s));
    while (c.rounds < 50 && c.st == INFINI_STATUS_SUCCESS)
        ;
    c.stop = 1;
    pthread_join(th, NULL);
    OK_(c.st);
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    CU_(cudaStreamIsCapturing((cudaStream_t)s, &cs));
    CHECK_(cs == cudaStreamCaptureStatusActive); /* not invalidated */
    if (end_and_instantiate(s, &exec) != TEST_OK)
        return TEST_FAIL;
    OK_(infinirtGraphLuanch(exec, s));
    OK_(infinirtStreamSynchronize(s));
    for (size_t i = 0; i < n; i++)
        if (out[i] != 21.0f)
            FAIL_("out[%zu] = %g, want 21", i, out[i]);
    OK_(infinirtGraphExecDestroy(exec));
    OK_(infinirtFree(a));
    OK_(infinirtStreamDestroy(s));
    return TEST_OK;
}

static int test_graph_malloc_miss(void)
{
    /* An odd size, larger than anything the other tests allocate. */
    const size_t n = ((size_t)37 << 20) / sizeof(float) + 123;
    std::vector<float> h(n), out(n);
    infinirtStream_t s;
    infinirtGraphExec_t exec = NULL;
    float *a = NULL;

    OK_(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    OK_(infinirtStreamCreate(&s));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)(i % 1000);
    OK_(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    OK_(infinirtMallocAsync((void **)&a, n * sizeof(float), s)); /* a cache miss */
    OK_(infinirtMemcpyAsync(a, h.data(), n * sizeof(float), INFINIRT_MEMCPY_H2D, s));
    axpb<<<grid(n), 256, 0, (cudaStream_t)s>>>(a, n, -1.0f, 0.0f);
    CU_(cudaGetLastError());
    OK_(infinirtMemcpyAsync(out.data(), a, n * sizeof(float), INFINIRT_MEMCPY_D2H, s));
    OK_(infinirtFreeAsync(a, s));
    if (end_and_instantiate(s, &exec) != TEST_OK)
        return TEST_FAIL;
    for (int launch = 0; launch < 2; launch++) {
        std::fill(out.begin(), out.end(), 1.0f);
        OK_(infinirtGraphLuanch(exec, s));
        OK_(infinirtStreamSynchronize(s));
        for (size_t i = 0; i < n; i++)
            if (out[i] != -(float)(i % 1000))
                FAIL_("launch %d: out[%zu] = %g", launch, i, out[i]);
    }
    OK_(infinirtGraphExecDestroy(exec));
    OK_(infinirtStreamDestroy(s));
    return TEST_OK;
}

struct test_entry {
    const char *name;
    int (*fn)(void);
};

static const test_entry tests[] = {
    {"kernels_interleaved", test_kernels_interleaved},
    {"free_under_kernel", test_free_under_kernel},
    {"wrap_native", test_wrap_native},
    {"set_device", test_set_device},
    {"graph_kernel", test_graph_kernel},
    {"graph_global_threads", test_graph_global_threads},
    {"graph_malloc_miss", test_graph_malloc_miss},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    const char *require = getenv("INFINIRT_CUDA_TEST_REQUIRE_GPU");

    for (const test_entry *t = tests; argc == 2 && t->name != NULL; t++) {
        if (strcmp(t->name, argv[1]) != 0)
            continue;
        if (devices() == 0) {
            fprintf(stderr, "no NVIDIA device through infinirt\n");
            return require != NULL && strcmp(require, "1") == 0 ? TEST_FAIL : TEST_SKIP;
        }
        int r = t->fn();
        fprintf(stderr, "%s: %s\n", t->name, r == TEST_OK ? "ok" : "FAILED");
        return r;
    }
    fprintf(stderr, "usage: %s TEST\n", argv[0]);
    return 2;
}
