/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance_memory.c - the range checks of copies and fills, written once
 * against the public API like the rest of the conformance suite: every side
 * of every Memcpy/MemcpyAsync/Memset/MemsetAsync that the loader can see is
 * checked, a rejected call writes nothing and changes no statistics, and a
 * call with nothing to do still rejects a dead stream.
 */
#define _GNU_SOURCE
#include "common.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N 1000
#define BIG 8000

/* Every field, so a rejected call that touched the allocator shows which. */
static int same_stats(const infinirtAllocatorStats_t *a, const infinirtAllocatorStats_t *b)
{
    ASSERT_EQ(a->allocated_bytes, b->allocated_bytes);
    ASSERT_EQ(a->peak_allocated_bytes, b->peak_allocated_bytes);
    ASSERT_EQ(a->reserved_bytes, b->reserved_bytes);
    ASSERT_EQ(a->peak_reserved_bytes, b->peak_reserved_bytes);
    ASSERT_EQ(a->active_blocks, b->active_blocks);
    ASSERT_EQ(a->segments, b->segments);
    ASSERT_EQ(a->raw_allocs, b->raw_allocs);
    ASSERT_EQ(a->raw_frees, b->raw_frees);
    ASSERT_EQ(a->alloc_requests, b->alloc_requests);
    ASSERT_EQ(a->retries, b->retries);
    ASSERT_EQ(a->oom_count, b->oom_count);
    ASSERT_EQ(a->cached_free_bytes, b->cached_free_bytes);
    return TEST_OK;
}

typedef struct {
    infinirtAllocatorStats_t dev, host;
} stats_pair;

static int snap(stats_pair *s)
{
    ASSERT_OK(infinirtGetAllocatorStats(tc_device_type(), 0, &s->dev));
    ASSERT_OK(infinirtGetHostAllocatorStats(tc_device_type(), &s->host));
    return TEST_OK;
}

static int unchanged(const stats_pair *before)
{
    stats_pair now;
    CHECK(snap(&now));
    CHECK(same_stats(&before->dev, &now.dev));
    CHECK(same_stats(&before->host, &now.host));
    return TEST_OK;
}

/* Device memory's bytes, read through the API. */
static int device_is(const void *d, const unsigned char *want, size_t n)
{
    unsigned char *got = malloc(n);
    ASSERT(got != NULL);
    ASSERT_OK(infinirtMemcpy(got, d, n, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, n);
    free(got);
    return TEST_OK;
}

/* Pinned (MallocHost) and device blocks on either side of every kind,
 * synchronous and queued: a range past the end of its block, a size beyond
 * PTRDIFF_MAX, a range wrapping around the address space - all BAD_PARAM,
 * with not one byte written and the allocator's statistics unchanged. */
int test_conformance_host_ranges(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_PINNED_MEMORY, TC_STREAMS, TC_MEMSET);
    unsigned char *h, *f = malloc(BIG), *g = malloc(BIG), *pf = malloc(BIG), *ph = malloc(N), *pd = malloc(N);
    void *d;
    infinirtStream_t s;
    ASSERT(f && g && pf && ph && pd);
    ASSERT_OK(infinirtMallocHost((void **)&h, N));
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtStreamCreate(&s));
    tc_pattern(pf, BIG, 1);
    tc_pattern(ph, N, 2);
    tc_pattern(pd, N, 3);
    memcpy(f, pf, BIG);
    memset(g, 0, BIG);
    memcpy(h, ph, N);
    ASSERT_OK(infinirtMemcpy(d, pd, N, INFINIRT_MEMCPY_H2D));
    char *dc = d;
    void *top = (void *)(UINTPTR_MAX - 15); /* 64 bytes from here wrap around */
    const size_t huge = (size_t)PTRDIFF_MAX + 1;
    stats_pair before;
    CHECK(snap(&before));

    /* (1) A side inside a known block must fit in it. */
    ASSERT_STATUS(infinirtMemcpy(h, f, BIG, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);       /* pinned dst */
    ASSERT_STATUS(infinirtMemcpy(g, h, BIG, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);       /* pinned src */
    ASSERT_STATUS(infinirtMemcpy(h + N - 1, f, 2, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM); /* interior */
    ASSERT_STATUS(infinirtMemcpy(h + 1, d, N, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);     /* D2H dst */
    ASSERT_STATUS(infinirtMemcpy(d, h + 1, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);     /* H2D src */
    ASSERT_STATUS(infinirtMemcpy(d, f, BIG, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);       /* device dst */
    ASSERT_STATUS(infinirtMemcpy(g, d, BIG, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);       /* device src */
    ASSERT_STATUS(infinirtMemcpyAsync(h + 1, d, N, INFINIRT_MEMCPY_D2H, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(h, f, BIG, INFINIRT_MEMCPY_H2H, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(h, f, BIG, INFINIRT_MEMCPY_H2H, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(d, h + 1, N, INFINIRT_MEMCPY_H2D, NULL), INFINI_STATUS_BAD_PARAM);

    /* (2) Sizes no object has, on every kind and call. */
    ASSERT_STATUS(infinirtMemcpy(g, f, SIZE_MAX, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(g, f, huge, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(g, f, SIZE_MAX, INFINIRT_MEMCPY_H2H, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(d, f, SIZE_MAX, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(g, d, SIZE_MAX, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(d, d, SIZE_MAX, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(d, f, huge, INFINIRT_MEMCPY_H2D, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemset(d, 0, SIZE_MAX), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemsetAsync(d, 0, SIZE_MAX, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemsetAsync(d, 0, huge, NULL), INFINI_STATUS_BAD_PARAM);
    /* ... and ranges that wrap around, on either host side. */
    ASSERT_STATUS(infinirtMemcpy(top, f, 64, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(g, top, 64, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(top, f, 64, INFINIRT_MEMCPY_H2H, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(d, top, 64, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(top, d, 64, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(top, d, 64, INFINIRT_MEMCPY_D2H, s), INFINI_STATUS_BAD_PARAM);

    /* Nothing was written, queued or allocated. */
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_MEM_EQ(h, ph, N);
    ASSERT_MEM_EQ(f, pf, BIG);
    for (size_t i = 0; i < BIG; i++)
        if (g[i] != 0)
            TEST_FAILED_("byte %zu of the foreign destination was written", i);
    CHECK(device_is(d, pd, N));
    CHECK(unchanged(&before));

    /* The largest ranges that fit still work, up to the last byte. */
    ASSERT_OK(infinirtMemcpy(h + N / 2, f, N / 2, INFINIRT_MEMCPY_H2H));
    ASSERT_MEM_EQ(h + N / 2, pf, N / 2);
    ASSERT_OK(infinirtMemcpy(dc + N - 1, h, 1, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpyAsync(h + 1, dc + 1, N - 1, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtMemsetAsync(dc + N - 10, 0x7e, 10, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_MEM_EQ(h + 1, pd + 1, N - 2);
    ASSERT_EQ(h[N - 1], ph[0]);
    ASSERT_OK(infinirtMemcpy(g, d, N, INFINIRT_MEMCPY_D2H));
    ASSERT_EQ(g[N - 10], 0x7e);
    ASSERT_EQ(g[N - 1], 0x7e);

    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFreeHost(h));
    free(f);
    free(g);
    free(pf);
    free(ph);
    free(pd);
    return TEST_OK;
}

/* Device memory as the host side of a copy (H2H either side, H2D's src,
 * D2H's dst).  The CPU backend's device memory is host memory: accepted
 * there, and range-checked.  Any other backend's (an OpenCL buffer handle,
 * a CUDA device address) is BAD_PARAM, never a crash or a silent write. */
int test_conformance_device_as_host(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS);
    bool host_addressable = tc_device_type() == INFINI_DEVICE_CPU;
    unsigned char *f = malloc(N), *g = malloc(N), *p1 = malloc(N), *p2 = malloc(N);
    ASSERT(f && g && p1 && p2);
    void *d1, *d2;
    infinirtStream_t s;
    ASSERT_OK(infinirtMalloc(&d1, N));
    ASSERT_OK(infinirtMalloc(&d2, N));
    ASSERT_OK(infinirtStreamCreate(&s));
    tc_pattern(p1, N, 4);
    tc_pattern(p2, N, 5);
    tc_pattern(f, N, 6);
    ASSERT_OK(infinirtMemcpy(d1, p1, N, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(d2, p2, N, INFINIRT_MEMCPY_H2D));
    stats_pair before;
    CHECK(snap(&before));

    if (host_addressable) {
        ASSERT_OK(infinirtMemcpy(d1, f, N, INFINIRT_MEMCPY_H2H));
        ASSERT_OK(infinirtMemcpy(g, d1, N, INFINIRT_MEMCPY_H2H));
        ASSERT_MEM_EQ(g, f, N);
        ASSERT_OK(infinirtMemcpy(d2, d1, N / 2, INFINIRT_MEMCPY_H2D));                                 /* src */
        ASSERT_OK(infinirtMemcpy((char *)d2 + N / 2, (char *)d1 + N / 2, N / 2, INFINIRT_MEMCPY_D2H)); /* dst */
        CHECK(device_is(d2, f, N));
        ASSERT_OK(infinirtMemset(d1, 0, N));
        ASSERT_OK(infinirtMemcpyAsync(d1, d2, N, INFINIRT_MEMCPY_H2H, s));
        ASSERT_OK(infinirtStreamSynchronize(s));
        /* Still range-checked, as every side the loader knows. */
        ASSERT_STATUS(infinirtMemcpy((char *)d1 + 1, d2, N, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(d2, (char *)d1 + 1, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy((char *)d2 + 1, d1, N, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
        CHECK(device_is(d1, f, N));
        CHECK(device_is(d2, f, N));
    } else {
        memset(g, 0, N);
        ASSERT_STATUS(infinirtMemcpy(d1, f, N, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(g, d1, N, INFINIRT_MEMCPY_H2H), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(d2, d1, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(d2, d1, N, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpyAsync(d1, f, N, INFINIRT_MEMCPY_H2H, s), INFINI_STATUS_BAD_PARAM);
        ASSERT_OK(infinirtMemcpyAsync(g, d2, N, INFINIRT_MEMCPY_D2H, s));
        ASSERT_STATUS(infinirtMemcpyAsync(d1, d2, N, INFINIRT_MEMCPY_H2D, s), INFINI_STATUS_BAD_PARAM);
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_MEM_EQ(g, p2, N); /* the one legal copy */
        CHECK(device_is(d1, p1, N));
        CHECK(device_is(d2, p2, N));
    }
    CHECK(unchanged(&before));

    /* The CPU backend's device memory is host memory for every backend:
     * here the host side of a copy to and from the device under test. */
    int ncpu = 0;
    if (infinirtGetDeviceCount(INFINI_DEVICE_CPU, &ncpu) == INFINI_STATUS_SUCCESS && ncpu > 0) {
        void *c;
        ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
        ASSERT_OK(infinirtMalloc(&c, N));
        CHECK(tc_use_device(0));
        ASSERT_OK(infinirtMemcpy(c, f, N, INFINIRT_MEMCPY_H2H));
        ASSERT_OK(infinirtMemcpy(d1, c, N, INFINIRT_MEMCPY_H2D));
        ASSERT_OK(infinirtMemcpy(c, d2, N, INFINIRT_MEMCPY_D2H));
        ASSERT_STATUS(infinirtMemcpy(d1, (char *)c + 1, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy((char *)c + 1, d2, N, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
        CHECK(device_is(d1, f, N));
        ASSERT_OK(infinirtMemcpy(g, c, N, INFINIRT_MEMCPY_H2H));
        CHECK(device_is(d2, g, N));
        ASSERT_OK(infinirtFree(c));
    }

    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtFree(d2));
    free(f);
    free(g);
    free(p1);
    free(p2);
    return TEST_OK;
}

/* A queued call with nothing to do (size 0) on a destroyed or made-up
 * stream is BAD_PARAM like every other call on a dead handle; on a live or
 * the NULL stream it is a no-op. */
int test_conformance_zero_size_dead_stream(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS);
    void *d;
    char h[16];
    int junk[16] = {0};
    infinirtStream_t s, made_up = (infinirtStream_t)junk;
    ASSERT_OK(infinirtMalloc(&d, 16));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMemsetAsync(d, 0, 0, s));
    ASSERT_OK(infinirtMemcpyAsync(d, h, 0, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemsetAsync(d, 0, 0, NULL));
    ASSERT_OK(infinirtMemcpyAsync(d, h, 0, INFINIRT_MEMCPY_H2D, NULL));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_STATUS(infinirtMemsetAsync(d, 0, 0, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(d, h, 0, INFINIRT_MEMCPY_H2D, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemsetAsync(d, 0, 0, made_up), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(d, h, 0, INFINIRT_MEMCPY_H2D, made_up), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

/* OpenCL's SVM calls, looked up at run time: the suite does not link
 * OpenCL.  (cl_context, cl_svm_mem_flags, size, alignment.) */
typedef void *(*svm_alloc_fn)(void *ctx, uint64_t flags, size_t size, unsigned alignment);
typedef void (*svm_free_fn)(void *ctx, void *ptr);
static void *g_cl_ctx;
static svm_free_fn g_svm_free;

/* SVM memory of OpenCL device 0's context, where that device's memory is
 * SVM (infinirtMemGetNativeHandle gives the pointer itself back, not a
 * cl_mem) and the backend gives its context; else NULL. */
static void *opencl_svm_alloc(size_t n)
{
    void *d = NULL, *native = NULL, *cl_dev = NULL;
    infiniStatus_t st = infinirtMalloc(&d, 256);
    if (st != INFINI_STATUS_SUCCESS)
        return NULL;
    st = infinirtMemGetNativeHandle(d, &native, NULL);
    infinirtFree(d);
    if (st != INFINI_STATUS_SUCCESS || native != d) /* buffer mode: foreign memory cannot be used */
        return NULL;
    if (infinirtDeviceGetNativeHandle(INFINI_DEVICE_OPENCL, 0, &cl_dev, &g_cl_ctx) != INFINI_STATUS_SUCCESS ||
        g_cl_ctx == NULL)
        return NULL;
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return NULL;
    svm_alloc_fn svm_alloc = (svm_alloc_fn)dlsym(lib, "clSVMAlloc");
    g_svm_free = (svm_free_fn)dlsym(lib, "clSVMFree");
    if (svm_alloc == NULL || g_svm_free == NULL)
        return NULL;
    return svm_alloc(g_cl_ctx, 1 /* CL_MEM_READ_WRITE */, n, 0);
}

/* Device memory of the device under test that infinirt did not allocate
 * (InfiniCore's from_blob, a torch tensor), released with foreign_free;
 * NULL where the suite cannot make any.  On the CPU backend device memory
 * is host memory: malloc's is foreign device memory.  On OpenCL, SVM
 * memory of the device's context, in SVM mode only. */
static void *foreign_alloc(size_t n)
{
    if (tc_device_type() == INFINI_DEVICE_CPU)
        return malloc(n);
    if (tc_device_type() == INFINI_DEVICE_OPENCL)
        return opencl_svm_alloc(n);
    return NULL;
}

static void foreign_free(void *p)
{
    if (p == NULL)
        return;
    if (tc_device_type() == INFINI_DEVICE_OPENCL)
        g_svm_free(g_cl_ctx, p);
    else
        free(p);
}

/* Foreign device memory in every copy kind and fill, synchronous and
 * queued (on a stream and on the NULL stream), alone and with a block of
 * the loader's on the other side, interior pointers too: the data arrive,
 * and nothing is allocated.  A block the loader knows is still range
 * checked when the other side is foreign. */
int test_conformance_foreign_memory(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_MEMSET);
    enum { M = 4099 };
    unsigned char *f1 = foreign_alloc(M), *f2 = foreign_alloc(M);
    if (f1 == NULL || f2 == NULL) {
        foreign_free(f1);
        foreign_free(f2);
        fprintf(stderr, "no foreign device memory can be made for %s here\n",
                infinirtGetDeviceTypeName(tc_device_type()));
        TC_UNSUPPORTED(TC_FOREIGN_MEMORY);
    }
    TC_SUPPORTED(TC_FOREIGN_MEMORY);
    unsigned char *p1 = malloc(M), *p2 = malloc(M), *want = malloc(M), *g = malloc(M);
    ASSERT(p1 && p2 && want && g);
    tc_pattern(p1, M, 21);
    tc_pattern(p2, M, 22);
    void *d;
    infinirtStream_t s;
    ASSERT_OK(infinirtMalloc(&d, M));
    ASSERT_OK(infinirtStreamCreate(&s));
    stats_pair before;
    CHECK(snap(&before));

    /* Synchronous: H2D, D2H, D2D foreign to foreign, fills. */
    ASSERT_OK(infinirtMemcpy(f1, p1, M, INFINIRT_MEMCPY_H2D));
    memset(g, 0, M);
    ASSERT_OK(infinirtMemcpy(g, f1, M, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, p1, M);
    ASSERT_OK(infinirtMemcpy(f2, f1, M, INFINIRT_MEMCPY_D2D));
    ASSERT_OK(infinirtMemset(f2 + 7, 0xa5, 100));
    memcpy(want, p1, M);
    memset(want + 7, 0xa5, 100);
    ASSERT_OK(infinirtMemcpy(g, f2, M, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, want, M);
    /* D2D with the loader's block on one side, both ways. */
    ASSERT_OK(infinirtMemcpy(d, f2, M, INFINIRT_MEMCPY_D2D));
    CHECK(device_is(d, want, M));
    ASSERT_OK(infinirtMemcpy(d, p2, M, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(f1 + 1, (char *)d + 1, M - 1, INFINIRT_MEMCPY_D2D));
    memcpy(want, p1, 1);
    memcpy(want + 1, p2 + 1, M - 1);
    ASSERT_OK(infinirtMemcpy(g, f1, M, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, want, M);

    /* Queued on a stream, in stream order. */
    ASSERT_OK(infinirtMemcpyAsync(f1, p2, M, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemsetAsync(f1 + 10, 0x11, 20, s));
    ASSERT_OK(infinirtMemcpyAsync(f2, f1, M, INFINIRT_MEMCPY_D2D, s));
    ASSERT_OK(infinirtMemcpyAsync(d, f2, M, INFINIRT_MEMCPY_D2D, s));
    ASSERT_OK(infinirtMemsetAsync(d, 0x12, 3, s));
    ASSERT_OK(infinirtMemcpyAsync(f1, d, M, INFINIRT_MEMCPY_D2D, s));
    memset(g, 0, M);
    ASSERT_OK(infinirtMemcpyAsync(g, f1, M, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    memcpy(want, p2, M);
    memset(want + 10, 0x11, 20);
    memset(want, 0x12, 3);
    ASSERT_MEM_EQ(g, want, M);
    /* ... and on the NULL stream. */
    ASSERT_OK(infinirtMemcpyAsync(f2, p1, M, INFINIRT_MEMCPY_H2D, NULL));
    ASSERT_OK(infinirtMemsetAsync(f2 + M - 5, 0x22, 5, NULL));
    memset(g, 0, M);
    ASSERT_OK(infinirtMemcpyAsync(g, f2, M, INFINIRT_MEMCPY_D2H, NULL));
    ASSERT_OK(infinirtDeviceSynchronize());
    memcpy(want, p1, M);
    memset(want + M - 5, 0x22, 5);
    ASSERT_MEM_EQ(g, want, M);

    /* The loader's block is still range checked; nothing is written. */
    ASSERT_OK(infinirtMemcpy(d, p1, M, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(g, f1, M, INFINIRT_MEMCPY_D2H)); /* SVM: the host must not read it */
    ASSERT_STATUS(infinirtMemcpy(d, f1, M + 1, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(f1, d, M + 1, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(f1, (char *)d + 1, M, INFINIRT_MEMCPY_D2D, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync((char *)d + 2, f1, M, INFINIRT_MEMCPY_D2D, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtStreamSynchronize(s));
    CHECK(device_is(f1, g, M));
    CHECK(device_is(d, p1, M));
    CHECK(unchanged(&before)); /* nothing above allocated or freed */

    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(d));
    foreign_free(f1);
    foreign_free(f2);
    free(p1);
    free(p2);
    free(want);
    free(g);
    return TEST_OK;
}

/* On every backend: Free, FreeAsync and FreeHost never take memory the
 * loader did not allocate (BAD_PARAM, the memory untouched, the allocator
 * unchanged, no plugin asked), and a block of the loader's beside a
 * foreign side is range checked before any plugin sees the call. */
int test_conformance_foreign_refused(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_MEMSET);
    unsigned char *f = malloc(N), *keep = malloc(N);
    ASSERT(f && keep);
    tc_pattern(f, N, 23);
    memcpy(keep, f, N);
    void *d;
    infinirtStream_t s;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMemset(d, 0x3c, N));
    unsigned char *pd = malloc(N);
    ASSERT(pd);
    memset(pd, 0x3c, N);
    stats_pair before;
    CHECK(snap(&before));

    ASSERT_STATUS(infinirtFree(f), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtFree(f + 64), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtFreeAsync(f, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtFreeAsync(f, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtFreeHost(f), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(d, f, N + 1, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(f, (char *)d + 8, N, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(f, d, N + 1, INFINIRT_MEMCPY_D2D, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync((char *)d + N - 1, f, 2, INFINIRT_MEMCPY_D2D, NULL), INFINI_STATUS_BAD_PARAM);
    /* A range wrapping around the address space is no memory of anyone's. */
    void *top = (void *)(UINTPTR_MAX - 15);
    ASSERT_STATUS(infinirtMemcpy(top, f, 64, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemset(top, 0, 64), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemsetAsync(top, 0, 64, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_MEM_EQ(f, keep, N);
    CHECK(device_is(d, pd, N));
    CHECK(unchanged(&before));

    /* The allocator's own memory outside every live block - a block freed
     * already, while the cache keeps its memory - is refused too. */
    infinirtAllocatorSettings_t as;
    ASSERT_OK(infinirtGetAllocatorSettings(&as));
    void *gone;
    ASSERT_OK(infinirtMalloc(&gone, N));
    ASSERT_OK(infinirtFree(gone));
    if (as.enabled && !as.release_on_free) {
        ASSERT_STATUS(infinirtMemcpy(gone, f, 16, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemset(gone, 0, 16), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemsetAsync(gone, 0, 16, s), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(d, gone, 16, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
        CHECK(device_is(d, pd, N));
    }

    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(d));
    free(f);
    free(keep);
    free(pd);
    return TEST_OK;
}

/* A pointer looked up a moment ago (the loader remembers the last block
 * each thread found) must be looked up afresh once its block is freed or
 * reused: a copy into a freed block, or past the end of a smaller block
 * that took its address, is still refused; a block at the same address
 * with the same size works. */
int test_conformance_lookup_after_free(void)
{
    CHECK(tc_use_device(0));
    /* Freed memory that goes back to the backend leaves nothing to refuse. */
    CHECK(tc_needs_caching_allocator(true));
    enum { LN = 4096 };
    static unsigned char h[LN], back[LN];
    tc_pattern(h, LN, 5);
    for (int round = 0; round < 3; round++) {
        void *p;
        ASSERT_OK(infinirtMalloc(&p, LN));
        ASSERT_OK(infinirtMemcpy(p, h, LN, INFINIRT_MEMCPY_H2D)); /* remembered now */
        ASSERT_OK(infinirtMemcpy(back, p, LN, INFINIRT_MEMCPY_D2H));
        ASSERT_MEM_EQ(back, h, LN);
        ASSERT_OK(infinirtFree(p));
        ASSERT_STATUS(infinirtMemcpy(p, h, LN, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemset(p, 0, 16), INFINI_STATUS_BAD_PARAM);
        /* A smaller block may now sit at p: the old size is not its size. */
        void *q;
        ASSERT_OK(infinirtMalloc(&q, LN / 4));
        ASSERT_OK(infinirtMemcpy(q, h, LN / 4, INFINIRT_MEMCPY_H2D));
        ASSERT_STATUS(infinirtMemcpy(q, h, LN, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(back, q, LN, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
        ASSERT_OK(infinirtFree(q));
    }
    return TEST_OK;
}

/* The same for a device-to-device copy, whose two sides the loader checks
 * together: once either block is freed, a copy from or into it is refused,
 * also when the two blocks were allocated for different streams (and the
 * allocator keeps them apart, so freeing one leaves the other as it was).
 * Each case runs twice in a row, the second time after a look-up of one
 * more block: a look-up that misses fills the thread's other remembered
 * entry, so the two runs put each side in opposite entries (the case a
 * copy's combined look-up of both sides must check either way). */
int test_conformance_lookup_after_free_d2d(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS);
    CHECK(tc_needs_caching_allocator(true));
    enum { LN = 1024 };
    static unsigned char h[LN], back[LN];
    tc_pattern(h, LN, 9);
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    for (int round = 0; round < 8; round++) {
        int apart = (round >> 2) & 1, freed = (round >> 1) & 1; /* freed 0: the source, 1: the destination */
        int pre = round & 1;
        void *a, *b, *c = NULL;
        ASSERT_OK(infinirtMalloc(&a, LN));
        if (apart) {
            ASSERT_OK(infinirtMallocAsync(&b, LN, s));
            ASSERT_OK(infinirtStreamSynchronize(s));
        } else {
            ASSERT_OK(infinirtMalloc(&b, LN));
        }
        if (pre) {
            ASSERT_OK(infinirtMalloc(&c, LN));
            ASSERT_OK(infinirtMemcpy(c, h, 16, INFINIRT_MEMCPY_H2D));
        }
        ASSERT_OK(infinirtMemcpy(b, h, LN, INFINIRT_MEMCPY_H2D));
        ASSERT_OK(infinirtMemcpy(a, b, LN, INFINIRT_MEMCPY_D2D)); /* both remembered now */
        ASSERT_OK(infinirtMemcpy(back, a, LN, INFINIRT_MEMCPY_D2H));
        ASSERT_MEM_EQ(back, h, LN);
        ASSERT_OK(infinirtMemcpy(a, b, LN, INFINIRT_MEMCPY_D2D));
        if (apart) {
            ASSERT_OK(infinirtFreeAsync(b, s));
            ASSERT_OK(infinirtStreamSynchronize(s));
        } else {
            ASSERT_OK(infinirtFree(b));
        }
        /* a looked up afresh (the free may have outdated its entry, which
         * would send the copy below to the full checks): only b's entry is
         * out of date. */
        ASSERT_OK(infinirtMemcpy(back, a, 16, INFINIRT_MEMCPY_D2H));
        if (freed == 0)
            ASSERT_STATUS(infinirtMemcpy(a, b, LN, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
        else
            ASSERT_STATUS(infinirtMemcpy(b, a, LN, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_OK(infinirtFree(a));
        if (c != NULL)
            ASSERT_OK(infinirtFree(c));
    }
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}
