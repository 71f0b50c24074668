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
 *                        routed to another device leaves it.
 *
 *   cuda_kernels_test NAME    (INFINIRT_CONFIG: a config with the CUDA plugin)
 *
 * Exits 77 (skipped) without an NVIDIA device, unless
 * INFINIRT_CUDA_TEST_REQUIRE_GPU=1 (tests/gpu/run-cuda-checks.sh).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "infinirt.h"

#define TEST_OK 0
#define TEST_FAIL 1
#define TEST_SKIP 77

#define FAIL_(...)                                                \
    do {                                                          \
        fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);     \
        fprintf(stderr, __VA_ARGS__);                             \
        fputc('\n', stderr);                                      \
        return TEST_FAIL;                                         \
    } while (0)
#define OK_(call)                                                                     \
    do {                                                                              \
        infiniStatus_t st_ = (call);                                                  \
        if (st_ != INFINI_STATUS_SUCCESS)                                             \
            FAIL_("%s = %s", #call, infinirtGetErrorName(st_));                       \
    } while (0)
#define STATUS_(call, want)                                                           \
    do {                                                                              \
        infiniStatus_t st_ = (call);                                                  \
        if (st_ != (want))                                                            \
            FAIL_("%s = %s, want %s", #call, infinirtGetErrorName(st_),               \
                  infinirtGetErrorName(want));                                        \
    } while (0)
#define CU_(call)                                                                     \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess)                                                        \
            FAIL_("%s = %s", #call, cudaGetErrorString(e_));                          \
    } while (0)
#define CHECK_(cond)                     \
    do {                                 \
        if (!(cond))                     \
            FAIL_("%s", #cond);          \
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
            FAIL_("%s: q[%zu] = 0x%08x: the block was handed out while the kernel still wrote it", what, i,
                  out[i]);
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

struct test_entry {
    const char *name;
    int (*fn)(void);
};

static const test_entry tests[] = {
    {"kernels_interleaved", test_kernels_interleaved},
    {"free_under_kernel", test_free_under_kernel},
    {"wrap_native", test_wrap_native},
    {"set_device", test_set_device},
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
