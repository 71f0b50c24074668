/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance.c - the behaviour every backend must show, written once
 * against the public API.  CMake runs it once per backend present, with
 * INFINIRT_TEST_DEVICE naming the backend and INFINIRT_CONFIG its config.
 * Memory freed behind work in flight, and work across devices and
 * backends, is tested in conformance_in_flight.c.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

int test_conformance_device_count(void)
{
    CHECK(tc_use_device(0));
    int all[INFINI_DEVICE_TYPE_COUNT];
    for (int i = 0; i < INFINI_DEVICE_TYPE_COUNT; i++)
        all[i] = -1;
    ASSERT_OK(infinirtGetAllDeviceCount(all));
    for (int t = 0; t < INFINI_DEVICE_TYPE_COUNT; t++) {
        int n = -1;
        ASSERT_OK(infinirtGetDeviceCount((infiniDevice_t)t, &n));
        ASSERT_EQ(all[t], n); /* every slot written and consistent */
    }
    /* Every type, ours included, through the list; the target among them. */
    infiniDevice_t types[32];
    int ntypes = -1, seen = 0;
    ASSERT_OK(infinirtGetDeviceTypes(NULL, 0, &ntypes));
    ASSERT_GT(ntypes, INFINI_DEVICE_TYPE_COUNT);
    ASSERT_LE(ntypes, 32);
    ASSERT_OK(infinirtGetDeviceTypes(types, 32, &ntypes));
    for (int i = 0; i < ntypes; i++) {
        if (i < INFINI_DEVICE_TYPE_COUNT)
            ASSERT_EQ(types[i], i); /* InfiniCore's first, in order */
        seen += types[i] == tc_device_type();
    }
    ASSERT_EQ(seen, 1);
    int mine = 0;
    ASSERT_OK(infinirtGetDeviceCount(tc_device_type(), &mine));
    ASSERT_GE(mine, 1);
    ASSERT_STATUS(infinirtGetAllDeviceCount(NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_STATUS(infinirtGetDeviceCount(tc_device_type(), NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_STATUS(infinirtGetDeviceCount(INFINI_DEVICE_TYPE_COUNT, &all[0]), INFINI_STATUS_BAD_PARAM);
    return TEST_OK;
}

int test_conformance_set_get_device(void)
{
    CHECK(tc_use_device(0));
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(tc_device_type(), &n));
    infiniDevice_t t = INFINI_DEVICE_TYPE_COUNT;
    int id = -1;
    for (int i = n - 1; i >= 0; i--) {
        ASSERT_OK(infinirtSetDevice(tc_device_type(), i));
        ASSERT_OK(infinirtGetDevice(&t, &id));
        ASSERT_EQ(t, tc_device_type());
        ASSERT_EQ(id, i);
    }
    /* Failures change nothing. */
    ASSERT_STATUS(infinirtSetDevice(tc_device_type(), n), INFINI_STATUS_DEVICE_NOT_FOUND);
    ASSERT_STATUS(infinirtSetDevice(tc_device_type(), -1), INFINI_STATUS_DEVICE_NOT_FOUND);
    ASSERT_STATUS(infinirtSetDevice((infiniDevice_t)99, 0), INFINI_STATUS_BAD_PARAM);
    /* A type with no device here, whichever this run serves. */
    infiniDevice_t unserved;
    if (tc_unserved_type(&unserved))
        ASSERT_STATUS(infinirtSetDevice(unserved, 0), INFINI_STATUS_DEVICE_TYPE_NOT_SUPPORTED);
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(t, tc_device_type());
    ASSERT_EQ(id, 0);
    /* Either output may be NULL, not both (InfiniCore's answer). */
    ASSERT_OK(infinirtGetDevice(NULL, &id));
    ASSERT_OK(infinirtGetDevice(&t, NULL));
    ASSERT_STATUS(infinirtGetDevice(NULL, NULL), INFINI_STATUS_NULL_POINTER);
    return TEST_OK;
}

int test_conformance_mem_info(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_MEM_INFO);
    size_t f = 0, t = 0;
    ASSERT_OK(infinirtGetMemInfo(tc_device_type(), 0, &f, &t));
    ASSERT_GT(t, 0);
    ASSERT_LE(f, t);
    ASSERT_STATUS(infinirtGetMemInfo(tc_device_type(), 0, NULL, &t), INFINI_STATUS_NULL_POINTER);
    ASSERT_STATUS(infinirtGetMemInfo(tc_device_type(), 1000, &f, &t), INFINI_STATUS_DEVICE_NOT_FOUND);
    infinirtDeviceProperties_t p;
    ASSERT_OK(infinirtGetDeviceProperties(tc_device_type(), 0, &p));
    ASSERT_GT(strlen(p.name), 0);
    ASSERT_GT(p.total_memory, 0);
    return TEST_OK;
}

int test_conformance_malloc_free(void)
{
    CHECK(tc_use_device(0));
    void *p = (void *)1;
    ASSERT_OK(infinirtMalloc(&p, 0));
    ASSERT_PTR_EQ(p, NULL);
    ASSERT_OK(infinirtFree(NULL));
    ASSERT_STATUS(infinirtMalloc(NULL, 16), INFINI_STATUS_NULL_POINTER);

    static const size_t sizes[] = {1, 7, 256, 4097, 1 * MiB + 3, 32 * MiB};
    void *ptrs[6];
    for (int i = 0; i < 6; i++) {
        ASSERT_OK(infinirtMalloc(&ptrs[i], sizes[i]));
        ASSERT_PTR_NE(ptrs[i], NULL);
        ASSERT_EQ((uintptr_t)ptrs[i] % 256, 0); /* CUDA-like alignment */
    }
    /* A size of 0 again, now that the device's pool exists (the one-step
     * path of Malloc): NULL and success, as before any allocation. */
    p = (void *)1;
    ASSERT_OK(infinirtMalloc(&p, 0));
    ASSERT_PTR_EQ(p, NULL);
    /* Live blocks never overlap. */
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            if (i != j)
                ASSERT((uintptr_t)ptrs[i] + sizes[i] <= (uintptr_t)ptrs[j] ||
                       (uintptr_t)ptrs[j] + sizes[j] <= (uintptr_t)ptrs[i]);
    ASSERT_STATUS(infinirtFree((char *)ptrs[3] + 1), INFINI_STATUS_BAD_PARAM); /* interior */
    int local;
    ASSERT_STATUS(infinirtFree(&local), INFINI_STATUS_BAD_PARAM); /* unknown */
    for (int i = 0; i < 6; i++)
        ASSERT_OK(infinirtFree(ptrs[i]));
    ASSERT_STATUS(infinirtFree(ptrs[0]), INFINI_STATUS_BAD_PARAM); /* double free */
    return TEST_OK;
}

/* Every kind at sizes 0, 1, odd and large, also at interior offsets. */
int test_conformance_memcpy_kinds(void)
{
    CHECK(tc_use_device(0));
    static const size_t sizes[] = {0, 1, 3, 4097, 12345, 24 * MiB + 5};
    for (int i = 0; i < 6; i++) {
        size_t n = sizes[i], off = n > 100 ? 37 : 0;
        unsigned char *a = malloc(n + 1), *b = malloc(n + 1), *c = malloc(n + 1);
        ASSERT(a && b && c);
        tc_pattern(a, n, (unsigned)i + 1);
        memset(b, 0, n + 1);
        memset(c, 0, n + 1);
        void *d1, *d2;
        ASSERT_OK(infinirtMalloc(&d1, n + off + 1));
        ASSERT_OK(infinirtMalloc(&d2, n + off + 1));
        ASSERT_OK(infinirtMemcpy((char *)d1 + off, a, n, INFINIRT_MEMCPY_H2D));
        ASSERT_OK(infinirtMemcpy(d2, (char *)d1 + off, n, INFINIRT_MEMCPY_D2D));
        ASSERT_OK(infinirtMemcpy(b, d2, n, INFINIRT_MEMCPY_D2H));
        ASSERT_OK(infinirtMemcpy(c, b, n, INFINIRT_MEMCPY_H2H));
        ASSERT_MEM_EQ(a, b, n);
        ASSERT_MEM_EQ(a, c, n);
        ASSERT_OK(infinirtFree(d1));
        ASSERT_OK(infinirtFree(d2));
        free(a);
        free(b);
        free(c);
    }
    return TEST_OK;
}

int test_conformance_memcpy_errors(void)
{
    CHECK(tc_use_device(0));
    void *d;
    char h[64] = {0};
    ASSERT_OK(infinirtMalloc(&d, 32));
    ASSERT_STATUS(infinirtMemcpy(d, h, 33, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM); /* past the end */
    ASSERT_STATUS(infinirtMemcpy((char *)d + 16, h, 17, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(h, d, 33, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
    /* Memory the loader did not allocate is foreign device memory (see
     * foreign_memory), but a range wrapping around is no one's. */
    ASSERT_STATUS(infinirtMemcpy((void *)(UINTPTR_MAX - 3), h, 8, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(NULL, h, 8, INFINIRT_MEMCPY_H2D), INFINI_STATUS_NULL_POINTER);
    ASSERT_STATUS(infinirtMemcpy(d, h, 8, (infinirtMemcpyKind_t)7), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpyAsync(d, h, 8, INFINIRT_MEMCPY_H2D, (infinirtStream_t)h),
                  INFINI_STATUS_BAD_PARAM); /* not a stream */
    ASSERT_STATUS(infinirtMemset((void *)(UINTPTR_MAX - 3), 0, 8), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemset(d, 0, 33), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtMemcpy(d, h, 0, INFINIRT_MEMCPY_H2D)); /* size 0 is a no-op */
    /* The allocator's own memory outside a live block (the rounding behind
     * a block, a block freed already) is refused while the allocator keeps
     * it; without the cache a freed block went back to the backend. */
    infinirtAllocatorSettings_t as;
    ASSERT_OK(infinirtGetAllocatorSettings(&as));
    bool kept = as.enabled && !as.release_on_free;
    if (kept && as.granularity > 40)
        ASSERT_STATUS(infinirtMemcpy((char *)d + 40, h, 8, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtFree(d));
    if (kept)
        ASSERT_STATUS(infinirtMemcpy(d, h, 8, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM); /* freed */
    return TEST_OK;
}

/* Copies whose device sides are blocks this thread has just used are
 * decided from what the thread remembers of them (memory.c, quick_copy):
 * every check of the full path holds there too. */
int test_conformance_memcpy_remembered(void)
{
    CHECK(tc_use_device(0));
    bool pinned;
    CHECK(tc_probe(TC_PINNED_MEMORY, &pinned));
    enum { M = 64 };
    unsigned char h[2 * M], back[M];
    for (int i = 0; i < 2 * M; i++)
        h[i] = (unsigned char)(i * 7 + 1);
    void *d, *d2, *ph;
    ASSERT_OK(infinirtMalloc(&d, M));
    ASSERT_OK(infinirtMalloc(&d2, M));
    ASSERT_OK(infinirtMemcpy(d, h, M, INFINIRT_MEMCPY_H2D)); /* both blocks remembered */
    ASSERT_OK(infinirtMemcpy(d2, d, M, INFINIRT_MEMCPY_D2D));
    /* Ranges past the end of a remembered block. */
    ASSERT_STATUS(infinirtMemcpy((char *)d + 1, h, M, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(h, (char *)d2 + 8, M - 7, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(d2, d, M + 1, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy((char *)d2 + M - 1, d, 2, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
    /* ... which changed nothing; an exact fit at an offset is fine. */
    ASSERT_OK(infinirtMemcpy(back, d2, M, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(back, h, M);
    ASSERT_OK(infinirtMemcpy((char *)d2 + M / 2, h + M, M / 2, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(back, d2, M, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(back, h, M / 2);
    ASSERT_MEM_EQ(back + M / 2, h + M, M / 2);
    /* A remembered device block as the host side: only a CPU device's
     * memory is host memory. */
    ASSERT_STATUS(infinirtMemcpy(d2, d, M, INFINIRT_MEMCPY_H2D),
                  tc_device_type() == INFINI_DEVICE_CPU ? INFINI_STATUS_SUCCESS : INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtMemcpy(d, d2, M, INFINIRT_MEMCPY_D2H),
                  tc_device_type() == INFINI_DEVICE_CPU ? INFINI_STATUS_SUCCESS : INFINI_STATUS_BAD_PARAM);
    /* Pinned host memory, remembered as the host side of a copy, is still
     * not device memory. */
    if (pinned) {
        ASSERT_OK(infinirtMallocHost(&ph, M));
        ASSERT_OK(infinirtMemcpy(d, ph, M, INFINIRT_MEMCPY_H2D));
        ASSERT_STATUS(infinirtMemcpy(ph, h, M, INFINIRT_MEMCPY_H2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(h, ph, M, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(ph, d, M, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(d, ph, M, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
        ASSERT_OK(infinirtFreeHost(ph));
    }
    /* A remembered block freed (kept by the allocator) is refused. */
    infinirtAllocatorSettings_t as;
    ASSERT_OK(infinirtGetAllocatorSettings(&as));
    ASSERT_OK(infinirtMemcpy(back, d2, M, INFINIRT_MEMCPY_D2H));
    ASSERT_OK(infinirtFree(d2));
    if (as.enabled && !as.release_on_free) {
        ASSERT_STATUS(infinirtMemcpy(back, d2, M, INFINIRT_MEMCPY_D2H), INFINI_STATUS_BAD_PARAM);
        ASSERT_STATUS(infinirtMemcpy(d, d2, M, INFINIRT_MEMCPY_D2D), INFINI_STATUS_BAD_PARAM);
    }
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

int test_conformance_memset(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_MEMSET);
    bool streams; /* MemsetAsync too */
    CHECK(tc_probe(TC_STREAMS, &streams));
    size_t n = 3 * MiB + 11;
    void *d;
    unsigned char *h = malloc(n);
    ASSERT(h != NULL);
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMemset(d, 0x5a, n));
    ASSERT_OK(infinirtMemset((char *)d + 100, 0x1c1, 1000)); /* value is converted to unsigned char */
    if (streams) {
        infinirtStream_t s;
        ASSERT_OK(infinirtStreamCreate(&s));
        ASSERT_OK(infinirtMemsetAsync((char *)d + 5000, 0x33, 17, s));
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtStreamDestroy(s));
    }
    ASSERT_OK(infinirtMemcpy(h, d, n, INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < n; i++) {
        unsigned char want = (i >= 100 && i < 1100) ? 0xc1 : (streams && i >= 5000 && i < 5017) ? 0x33 : 0x5a;
        if (h[i] != want)
            TEST_FAILED_("byte %zu is 0x%02x, want 0x%02x", i, h[i], want);
    }
    ASSERT_OK(infinirtFree(d));
    free(h);
    return TEST_OK;
}

/* H2D -> D2D -> D2H on one stream, queued without waiting, repeated with
 * different data: stream order alone makes the result right. */
int test_conformance_async_chain(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS);
    size_t n = 8 * MiB + 3;
    enum { ROUNDS = 6 };
    unsigned char *src[ROUNDS], *dst[ROUNDS];
    void *d1, *d2;
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMalloc(&d1, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    for (int r = 0; r < ROUNDS; r++) {
        src[r] = malloc(n);
        dst[r] = calloc(1, n);
        ASSERT(src[r] && dst[r]);
        tc_pattern(src[r], n, 100u + (unsigned)r);
    }
    for (int r = 0; r < ROUNDS; r++) {
        ASSERT_OK(infinirtMemcpyAsync(d1, src[r], n, INFINIRT_MEMCPY_H2D, s));
        ASSERT_OK(infinirtMemcpyAsync(d2, d1, n, INFINIRT_MEMCPY_D2D, s));
        ASSERT_OK(infinirtMemcpyAsync(dst[r], d2, n, INFINIRT_MEMCPY_D2H, s));
    }
    ASSERT_OK(infinirtStreamSynchronize(s));
    for (int r = 0; r < ROUNDS; r++) {
        ASSERT_MEM_EQ(src[r], dst[r], n);
        free(src[r]);
        free(dst[r]);
    }
    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* The NULL stream is the current device's default stream. */
int test_conformance_default_stream(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS);
    size_t n = 1 * MiB;
    unsigned char *a = malloc(n), *b = calloc(1, n);
    ASSERT(a && b);
    tc_pattern(a, n, 7);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMemcpyAsync(d, a, n, INFINIRT_MEMCPY_H2D, NULL));
    ASSERT_OK(infinirtMemcpyAsync(b, d, n, INFINIRT_MEMCPY_D2H, NULL));
    ASSERT_OK(infinirtStreamSynchronize(NULL));
    ASSERT_MEM_EQ(a, b, n);
    memset(b, 0, n);
    ASSERT_OK(infinirtMemcpyAsync(b, d, n, INFINIRT_MEMCPY_D2H, NULL));
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_MEM_EQ(a, b, n);
    ASSERT_STATUS(infinirtStreamDestroy(NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtFree(d));
    free(a);
    free(b);
    return TEST_OK;
}

typedef struct {
    unsigned char *host;
    size_t n;
    int saw_copy;
} hf_state;

static void check_and_write(void *arg)
{
    hf_state *h = arg;
    h->saw_copy = h->host[0] == 0xab && h->host[h->n - 1] == 0xab;
    memset(h->host, 0xcd, h->n);
}

static void slow_fn(void *flag)
{
    tc_sleep_ms(50);
    *(volatile int *)flag = 1;
}

int test_conformance_host_func_order(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_PINNED_MEMORY, TC_MEMSET);
    size_t n = 2 * MiB;
    /* The host function writes `host` and the copy after it must see that:
     * pinned memory, since an H2D copy from pageable memory may read its
     * source when it is called (CUDA stages it so; infinirt.h). */
    unsigned char *host = NULL, *back = calloc(1, n);
    ASSERT(back != NULL);
    ASSERT_OK(infinirtMallocHost((void **)&host, n));
    memset(host, 0, n);
    void *d1, *d2;
    ASSERT_OK(infinirtMalloc(&d1, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    ASSERT_OK(infinirtMemset(d1, 0xab, n));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    hf_state h = {host, n, 0};
    ASSERT_OK(infinirtMemcpyAsync(host, d1, n, INFINIRT_MEMCPY_D2H, s)); /* before the fn */
    infiniStatus_t hs = infinirtLaunchHostFunc(s, check_and_write, &h);
    if (hs == INFINI_STATUS_NOT_IMPLEMENTED) {
        ASSERT_OK(infinirtStreamDestroy(s));
        ASSERT_OK(infinirtFree(d1));
        ASSERT_OK(infinirtFree(d2));
        ASSERT_OK(infinirtFreeHost(host));
        free(back);
        TC_UNSUPPORTED(TC_HOST_FUNCTIONS);
    }
    ASSERT_OK(hs);
    TC_SUPPORTED(TC_HOST_FUNCTIONS);
    ASSERT_OK(infinirtMemcpyAsync(d2, host, n, INFINIRT_MEMCPY_H2D, s)); /* after: sees 0xcd */
    ASSERT_OK(infinirtMemcpyAsync(back, d2, n, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_EQ(h.saw_copy, 1);
    for (size_t i = 0; i < n; i += 4099)
        ASSERT_EQ(back[i], 0xcd);
    ASSERT_STATUS(infinirtLaunchHostFunc(s, NULL, NULL), INFINI_STATUS_NULL_POINTER);

    /* DeviceSynchronize waits for every stream of the device, not only the
     * default one: a slow host function on a created stream must be done. */
    static volatile int slow_done;
    slow_done = 0;
    ASSERT_OK(infinirtLaunchHostFunc(s, slow_fn, (void *)&slow_done));
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_EQ(slow_done, 1);
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtFreeHost(host));
    free(back);
    return TEST_OK;
}

int test_conformance_malloc_async(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS);
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    size_t n = 1 * MiB + 1;
    unsigned char *a = malloc(n), *b = calloc(1, n);
    ASSERT(a && b);
    for (int r = 0; r < 8; r++) {
        void *d;
        tc_pattern(a, n, (unsigned)r);
        ASSERT_OK(infinirtMallocAsync(&d, n, s));
        ASSERT_OK(infinirtMemcpyAsync(d, a, n, INFINIRT_MEMCPY_H2D, s));
        ASSERT_OK(infinirtMemcpyAsync(b, d, n, INFINIRT_MEMCPY_D2H, s));
        ASSERT_OK(infinirtFreeAsync(d, s));
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_MEM_EQ(a, b, n);
        ASSERT_STATUS(infinirtFreeAsync(d, s), INFINI_STATUS_BAD_PARAM); /* double free */
    }
    void *d;
    ASSERT_OK(infinirtMallocAsync(&d, 100, NULL));
    ASSERT_OK(infinirtFreeAsync(d, NULL));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_STATUS(infinirtMallocAsync(&d, 100, s), INFINI_STATUS_BAD_PARAM); /* destroyed stream */
    free(a);
    free(b);
    return TEST_OK;
}

int test_conformance_malloc_host(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_PINNED_MEMORY, TC_STREAMS);
    size_t n = 3 * MiB + 1;
    unsigned char *h1, *h2;
    ASSERT_OK(infinirtMallocHost((void **)&h1, n));
    ASSERT_OK(infinirtMallocHost((void **)&h2, n));
    tc_pattern(h1, n, 3);
    memset(h2, 0, n);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, n));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMemcpyAsync(d, h1, n, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(h2, d, n, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_MEM_EQ(h1, h2, n);
    ASSERT_STATUS(infinirtFree(h1), INFINI_STATUS_BAD_PARAM);    /* host memory to Free */
    ASSERT_STATUS(infinirtFreeHost(d), INFINI_STATUS_BAD_PARAM); /* device memory to FreeHost */
    ASSERT_OK(infinirtFreeHost(h1));
    ASSERT_OK(infinirtFreeHost(h2));
    ASSERT_STATUS(infinirtFreeHost(h2), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

int test_conformance_bad_handles(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_EVENTS);
    infinirtStream_t s;
    infinirtEvent_t e;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_STATUS(infinirtStreamSynchronize(s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamDestroy(s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventRecord(e, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamWaitEvent(s, e), INFINI_STATUS_BAD_PARAM);
    int junk[16] = {0};
    ASSERT_STATUS(infinirtStreamSynchronize((infinirtStream_t)junk), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventSynchronize((infinirtEvent_t)junk), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventRecord((infinirtEvent_t)junk, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamCreate(NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_OK(infinirtEventDestroy(e));
    infinirtEventStatus_t st;
    ASSERT_STATUS(infinirtEventQuery(e, &st), INFINI_STATUS_BAD_PARAM);
    /* Handles are the backends' own values: as with CUDA, once e is
     * destroyed the backend may give the same value to a new event, which
     * the value then names.  Until then e stays dead, however many slots
     * of the loader's registry are reused meanwhile. */
    infinirtEvent_t live[2100];
    int reused = -1;
    for (int i = 0; i < 2100; i++) {
        ASSERT_OK(infinirtEventCreate(&live[i]));
        for (int j = 0; j < i; j++)
            if (j % 2 == 1 || j == reused)
                ASSERT_PTR_NE(live[i], live[j]); /* live values are distinct */
        if (live[i] == e && reused < 0)
            reused = i;
        if (i % 2 == 0 && i != reused)
            ASSERT_OK(infinirtEventDestroy(live[i]));
        if (reused < 0)
            ASSERT_STATUS(infinirtEventQuery(e, &st), INFINI_STATUS_BAD_PARAM);
    }
    if (reused >= 0) {
        ASSERT_OK(infinirtEventQuery(e, &st)); /* the new event's */
        ASSERT_OK(infinirtEventDestroy(live[reused]));
    }
    ASSERT_STATUS(infinirtEventQuery(e, &st), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventDestroy(e), INFINI_STATUS_BAD_PARAM);
    for (int i = 1; i < 2100; i += 2)
        if (i != reused)
            ASSERT_OK(infinirtEventDestroy(live[i]));
    return TEST_OK;
}

/* Handles are the backend's native values: the getters give the handle
 * itself, a native stream already wrapped cannot be wrapped again, memory
 * maps to a native object and offset that move with the pointer, and the
 * device's native objects can be asked for. */
int test_conformance_native_handles(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_EVENTS);
    infinirtStream_t s;
    infinirtEvent_t e;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&e));
    void *n = NULL;
    ASSERT_OK(infinirtStreamGetNativeHandle(s, &n));
    ASSERT_PTR_EQ(n, s);
    ASSERT_OK(infinirtEventGetNativeHandle(e, &n));
    ASSERT_PTR_EQ(n, e);
    ASSERT_STATUS(infinirtStreamGetNativeHandle(e, &n), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtStreamGetNativeHandle(NULL, &n));
    infinirtStream_t w = NULL;
    ASSERT_STATUS(infinirtStreamCreateFromNative(&w, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_PTR_EQ(w, NULL);
    void *dev = NULL, *ctx = NULL;
    ASSERT_OK(infinirtDeviceGetNativeHandle(tc_device_type(), 0, &dev, &ctx));
    void *p = NULL;
    ASSERT_OK(infinirtMallocAsync(&p, 4096, s));
    void *n0 = NULL, *n1 = NULL;
    size_t o0 = 7, o1 = 7;
    ASSERT_OK(infinirtMemGetNativeHandle(p, &n0, &o0));
    ASSERT_OK(infinirtMemGetNativeHandle((char *)p + 100, &n1, &o1));
    /* Either addressable memory (the pointer itself, offset 0) or one
     * native object with the offset moving by as much as the pointer. */
    if (n0 == p) {
        ASSERT_EQ(o0, 0);
        ASSERT_PTR_EQ(n1, (char *)p + 100);
        ASSERT_EQ(o1, 0);
    } else {
        ASSERT_PTR_EQ(n1, n0);
        ASSERT_EQ(o1, o0 + 100);
    }
    ASSERT_OK(infinirtFreeAsync(p, s));
    ASSERT_STATUS(infinirtMemGetNativeHandle(p, &n0, &o0), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtEventRecord(e, s));
    ASSERT_OK(infinirtEventSynchronize(e));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_STATUS(infinirtStreamGetNativeHandle(s, &n), INFINI_STATUS_BAD_PARAM);
    return TEST_OK;
}

int test_conformance_error_strings(void)
{
    static const infiniStatus_t all[] = {
        INFINI_STATUS_SUCCESS,
        INFINI_STATUS_INTERNAL_ERROR,
        INFINI_STATUS_NOT_IMPLEMENTED,
        INFINI_STATUS_BAD_PARAM,
        INFINI_STATUS_NULL_POINTER,
        INFINI_STATUS_DEVICE_TYPE_NOT_SUPPORTED,
        INFINI_STATUS_DEVICE_NOT_FOUND,
        INFINI_STATUS_DEVICE_NOT_INITIALIZED,
        INFINI_STATUS_DEVICE_ARCHITECTURE_NOT_SUPPORTED,
        INFINI_STATUS_BAD_TENSOR_DTYPE,
        INFINI_STATUS_BAD_TENSOR_SHAPE,
        INFINI_STATUS_BAD_TENSOR_STRIDES,
        INFINI_STATUS_INSUFFICIENT_WORKSPACE,
        INFINI_STATUS_OUT_OF_MEMORY,
        INFINI_STATUS_NOT_READY,
        INFINI_STATUS_INVALID_STATE,
    };
    size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        ASSERT(strcmp(infinirtGetErrorString(all[i]), "unknown status") != 0);
        for (size_t j = 0; j < i; j++) {
            ASSERT(strcmp(infinirtGetErrorString(all[i]), infinirtGetErrorString(all[j])) != 0);
            ASSERT(strcmp(infinirtGetErrorName(all[i]), infinirtGetErrorName(all[j])) != 0);
        }
    }
    ASSERT_STR_EQ(infinirtGetErrorName(INFINI_STATUS_BAD_PARAM), "BAD_PARAM");
    ASSERT_STR_EQ(infinirtGetErrorString((infiniStatus_t)9), "unknown status");
    ASSERT_STR_EQ(infinirtGetErrorString((infiniStatus_t)-5), "unknown status");
    /* InfiniCore's values, unchanged. */
    ASSERT_EQ(INFINI_STATUS_INSUFFICIENT_WORKSPACE, 13);
    ASSERT_EQ(INFINI_DEVICE_ALI, 10);
    ASSERT_EQ(INFINI_DEVICE_TYPE_COUNT, 11);
    /* Ours, far above InfiniCore's range. */
    ASSERT_EQ(INFINI_DEVICE_OPENCL, 0x1000);
    ASSERT_STR_EQ(infinirtGetDeviceTypeName(INFINI_DEVICE_OPENCL), "opencl");
    ASSERT_STR_EQ(infinirtGetDeviceTypeName(INFINI_DEVICE_TYPE_COUNT), "unknown");
    return TEST_OK;
}
