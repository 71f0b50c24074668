/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allocator_tests.c - the caching allocator through the public API, on the
 * CPU plugin's real asynchronous streams: reuse is never unsafe, same-stream
 * reuse is immediate, out-of-memory retries, threads.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

/* Worker-thread streams (streams = async): the tests hold streams with gates
 * to keep work queued behind freed memory. */
static void cpu_config(const char *extra)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 2\nstreams = async\n%s", CPU_PLUGIN, extra);
    tc_use_config(cfg);
}

static int overlaps(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + nb && y < x + na;
}

/* A block freed on a held stream A, with work on A still to touch it, is
 * not handed to stream B (nor to the default stream after a synchronous
 * Free) until that work is done; and the held work really writes into it. */
int test_allocator_reuse_cross_stream(void)
{
    cpu_config("");
    const size_t n = 1 * MiB;
    infinirtStream_t a, b;
    ASSERT_OK(infinirtStreamCreate(&a));
    ASSERT_OK(infinirtStreamCreate(&b));
    static tc_gate gate; /* static: the runner may open it after we return */
    void *p, *p2;
    ASSERT_OK(infinirtMallocAsync(&p, n, a));
    ASSERT_OK(infinirtMalloc(&p2, n));
    ASSERT_OK(tc_hold_stream(a, &gate));
    ASSERT_OK(infinirtMemsetAsync(p, 0xAA, n, a));  /* queued behind the gate */
    ASSERT_OK(infinirtMemsetAsync(p2, 0xBB, n, a)); /* p2 is touched by A too */
    ASSERT_OK(infinirtFreeAsync(p, a));
    ASSERT_OK(infinirtFree(p2)); /* synchronous free: covers every stream */

    /* Neither block may come back while A is held, on B or on the default
     * stream, whatever the sizes asked for. */
    void *got[8];
    static const size_t sizes[8] = {1 * MiB, 1 * MiB, 512 * 1024, 4096, 1 * MiB, 256, 64 * 1024, 1 * MiB};
    for (int i = 0; i < 8; i++) {
        if (i % 2 == 0)
            ASSERT_OK(infinirtMallocAsync(&got[i], sizes[i], b));
        else
            ASSERT_OK(infinirtMalloc(&got[i], sizes[i]));
        ASSERT(!overlaps(got[i], sizes[i], p, n));
        ASSERT(!overlaps(got[i], sizes[i], p2, n));
    }
    infinirtEventStatus_t st;
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventRecord(e, a));
    ASSERT_OK(infinirtEventQuery(e, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY); /* A really was held throughout */
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(a));
    for (int i = 0; i < 8; i++) {
        if (i % 2 == 0)
            ASSERT_OK(infinirtFreeAsync(got[i], b));
        else
            ASSERT_OK(infinirtFree(got[i]));
    }
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(a));
    ASSERT_OK(infinirtStreamDestroy(b));
    return TEST_OK;
}

/* FreeAsync then MallocAsync on the same held stream: reused at once,
 * without waiting (stream order makes it safe). */
int test_allocator_reuse_same_stream(void)
{
    cpu_config("");
    infinirtStream_t a;
    ASSERT_OK(infinirtStreamCreate(&a));
    static tc_gate gate; /* static: the runner may open it after we return */
    void *p, *q;
    ASSERT_OK(infinirtMallocAsync(&p, 3 * MiB, a));
    ASSERT_OK(tc_hold_stream(a, &gate));
    ASSERT_OK(infinirtMemsetAsync(p, 1, 3 * MiB, a));
    ASSERT_OK(infinirtFreeAsync(p, a));
    ASSERT_OK(infinirtMallocAsync(&q, 3 * MiB, a));
    ASSERT_PTR_EQ(q, p);
    infinirtAllocatorStats_t s;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s));
    ASSERT_EQ(s.active_blocks, 1);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtFreeAsync(q, a));
    ASSERT_OK(infinirtStreamSynchronize(a));
    ASSERT_OK(infinirtStreamDestroy(a));
    /* The NULL stream's own allocation after a free on it: immediate reuse
     * (not for Malloc: conformance.*.malloc_after_null_free_async). */
    void *d0, *d1;
    ASSERT_OK(infinirtMallocAsync(&d0, 5000, NULL));
    ASSERT_OK(infinirtFreeAsync(d0, NULL));
    ASSERT_OK(infinirtMallocAsync(&d1, 5000, NULL));
    ASSERT_PTR_EQ(d1, d0);
    ASSERT_OK(infinirtFreeAsync(d1, NULL));
    return TEST_OK;
}

/* Freed memory is reused without calling the plugin. */
int test_allocator_cached_reuse(void)
{
    cpu_config("");
    infinirtAllocatorStats_t s0, s1;
    void *p;
    ASSERT_OK(infinirtMalloc(&p, 100000));
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s0));
    for (int i = 0; i < 1000; i++) {
        ASSERT_OK(infinirtMalloc(&p, 100000));
        ASSERT_OK(infinirtFree(p));
    }
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s1));
    ASSERT_EQ(s1.raw_allocs, s0.raw_allocs);
    ASSERT_EQ(s1.alloc_requests, s0.alloc_requests + 1000);
    ASSERT_EQ(s1.active_blocks, 0);
    ASSERT_EQ(s1.allocated_bytes, 0);
    ASSERT_GT(s1.reserved_bytes, 0);
    ASSERT_GE(s1.peak_allocated_bytes, 100000);
    /* Trim gives every free segment back; peak reset to current. */
    ASSERT_OK(infinirtTrimCache(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtResetPeakStats(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s1));
    ASSERT_EQ(s1.reserved_bytes, 0);
    ASSERT_EQ(s1.segments, 0);
    ASSERT_EQ(s1.raw_frees, s1.raw_allocs);
    ASSERT_EQ(s1.peak_allocated_bytes, 0);
    return TEST_OK;
}

/* The [allocator] section reaches the pools and the settings query. */
int test_allocator_settings(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[allocator]\ngranularity = 4K\nmax_split_size = 1M\nrelease_on_free = true\n"
             "[plugin.cpu]\nlibrary = %s\n",
             CPU_PLUGIN);
    tc_use_config(cfg);
    infinirtAllocatorSettings_t as;
    ASSERT_OK(infinirtGetAllocatorSettings(&as));
    ASSERT_EQ(as.enabled, 1);
    ASSERT_EQ(as.granularity, 4096);
    ASSERT_EQ(as.max_split_size, 1 * MiB);
    ASSERT_EQ(as.release_on_free, 1);
    ASSERT_STATUS(infinirtGetAllocatorSettings(NULL), INFINI_STATUS_NULL_POINTER);
    /* Rounding follows the granularity: two 1-byte blocks sit 4 KiB apart
     * or more, and a freed segment goes back at once (release_on_free). */
    void *a, *b;
    ASSERT_OK(infinirtMalloc(&a, 1));
    ASSERT_OK(infinirtMalloc(&b, 1));
    uintptr_t d = (uintptr_t)a > (uintptr_t)b ? (uintptr_t)a - (uintptr_t)b : (uintptr_t)b - (uintptr_t)a;
    ASSERT_GE(d, 4096);
    ASSERT_OK(infinirtFree(a));
    ASSERT_OK(infinirtFree(b));
    infinirtAllocatorStats_t s;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s));
    ASSERT_EQ(s.reserved_bytes, 0);
    return TEST_OK;
}

/* With memory_limit, cached memory is released and the request retried;
 * what cannot fit fails cleanly and leaves the allocator consistent. */
int test_allocator_oom_retry(void)
{
    cpu_config("memory_limit = 16M\n");
    void *p[4], *big;
    for (int i = 0; i < 4; i++)
        ASSERT_OK(infinirtMalloc(&p[i], 3 * MiB));
    for (int i = 0; i < 4; i++)
        ASSERT_OK(infinirtFree(p[i]));
    infinirtAllocatorStats_t s;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s));
    size_t retries0 = s.retries;
    ASSERT_GE(s.reserved_bytes, 12 * MiB); /* cached, not given back */
    /* 14 MiB fits the limit only once the cached segments are released. */
    ASSERT_OK(infinirtMalloc(&big, 14 * MiB));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s));
    ASSERT_GT(s.retries, retries0);
    ASSERT_EQ(s.allocated_bytes >= 14 * MiB, 1);
    /* Cannot fit at all: fails, nothing changes, the allocator still works. */
    void *q = (void *)1;
    infinirtAllocatorStats_t before, after;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &before));
    ASSERT_STATUS(infinirtMalloc(&q, 8 * MiB), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_PTR_EQ(q, (void *)1);
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &after));
    ASSERT_EQ(after.allocated_bytes, before.allocated_bytes);
    ASSERT_EQ(after.active_blocks, before.active_blocks);
    ASSERT_EQ(after.oom_count, before.oom_count + 1);
    ASSERT_OK(infinirtFree(big));
    ASSERT_OK(infinirtMalloc(&q, 8 * MiB));
    ASSERT_OK(infinirtFree(q));
    size_t f, t;
    ASSERT_OK(infinirtGetMemInfo(INFINI_DEVICE_CPU, 0, &f, &t));
    ASSERT_LE(f, t);
    return TEST_OK;
}

/* Threads allocate, fill, check and free on their own streams of two
 * devices; blocks never overlap and data is never clobbered. */
enum { THREADS = 4, ROUNDS = 400 };

/* A failed assertion here ends the whole test process, from this thread. */
static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    infinirtStream_t s;
    unsigned char *host = malloc(64 * 1024);
    ASSERT(host != NULL);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, id % 2));
    ASSERT_OK(infinirtStreamCreate(&s));
    uint32_t x = 1234567u * (uint32_t)(id + 1);
    void *live[8] = {0};
    size_t sz[8] = {0};
    for (int r = 0; r < ROUNDS; r++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        int k = (int)(x % 8);
        if (live[k] != NULL) {
            /* The block still holds this thread's byte for it. */
            memset(host, 0, sz[k]);
            ASSERT_OK(infinirtMemcpyAsync(host, live[k], sz[k], INFINIRT_MEMCPY_D2H, s));
            ASSERT_OK(infinirtStreamSynchronize(s));
            for (size_t i = 0; i < sz[k]; i++)
                ASSERT_EQ(host[i], (unsigned char)(id * 8 + k));
            ASSERT_OK(r & 1 ? infinirtFreeAsync(live[k], s) : infinirtFree(live[k]));
            live[k] = NULL;
        } else {
            sz[k] = 1 + x % (64 * 1024 - 1);
            ASSERT_OK(infinirtMallocAsync(&live[k], sz[k], s));
            ASSERT_OK(infinirtMemsetAsync(live[k], id * 8 + k, sz[k], s));
        }
    }
    for (int k = 0; k < 8; k++)
        if (live[k] != NULL)
            ASSERT_OK(infinirtFreeAsync(live[k], s));
    ASSERT_OK(infinirtStreamDestroy(s));
    free(host);
    return NULL;
}

int test_allocator_threads(void)
{
    cpu_config("");
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int d = 0; d < 2; d++) {
        infinirtAllocatorStats_t s;
        ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, d, &s));
        ASSERT_EQ(s.active_blocks, 0);
        ASSERT_EQ(s.allocated_bytes, 0);
    }
    return TEST_OK;
}

/* ----------------------------------------------- what counts as in flight */

/* A large block freed behind work still queued (on `on`, NULL for a
 * synchronous Free) must not come back from a Malloc of the same size: the
 * bins hold nothing else of that size, so a block released early would be
 * handed out again at once. */
#define BIG (8 * MiB)

/* The only operation queued since the device was last synchronised is a
 * host function: the free's fence is one submission past the device's idle
 * mark, and must not count as complete at that mark. */
int test_allocator_fence_one_past_sync(void)
{
    cpu_config("");
    infinirtStream_t a;
    ASSERT_OK(infinirtStreamCreate(&a));
    void *p, *q;
    ASSERT_OK(infinirtMalloc(&p, BIG));
    ASSERT_OK(infinirtDeviceSynchronize());
    static tc_gate gate;
    ASSERT_OK(tc_hold_stream(a, &gate)); /* may use p, as far as the loader knows */
    ASSERT_OK(infinirtFreeAsync(p, a));
    ASSERT_OK(infinirtMalloc(&q, BIG));
    ASSERT(!overlaps(q, BIG, p, BIG));
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(a));
    ASSERT_OK(infinirtFree(q));
    ASSERT_OK(infinirtStreamDestroy(a));
    return TEST_OK;
}

/* Work queued on the default stream keeps a synchronously freed block
 * pending even when no created stream has work (the counters must look at
 * the default stream too). */
int test_allocator_default_stream_in_flight(void)
{
    cpu_config("");
    unsigned char *p;
    void *q;
    ASSERT_OK(infinirtMalloc((void **)&p, BIG));
    static tc_gate gate;
    ASSERT_OK(tc_hold_stream(NULL, &gate));
    ASSERT_OK(infinirtMemsetAsync(p, 0x5A, BIG, NULL));
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtMalloc(&q, BIG));
    ASSERT(!overlaps(q, BIG, p, BIG));
    tc_gate_open(&gate);
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtFree(q));
    return TEST_OK;
}

/* A stream whose only work is a wait on another stream's event has work in
 * flight: a block freed on it (ordered after A's memset by that wait) stays
 * pending until A is done. */
int test_allocator_wait_event_in_flight(void)
{
    cpu_config("");
    infinirtStream_t a, s;
    infinirtEvent_t e;
    ASSERT_OK(infinirtStreamCreate(&a));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&e));
    void *p, *q;
    ASSERT_OK(infinirtMalloc(&p, BIG));
    static tc_gate gate;
    ASSERT_OK(tc_hold_stream(a, &gate));
    ASSERT_OK(infinirtMemsetAsync(p, 0x11, BIG, a));
    ASSERT_OK(infinirtEventRecord(e, a));
    ASSERT_OK(infinirtStreamWaitEvent(s, e));
    ASSERT_OK(infinirtFreeAsync(p, s));
    ASSERT_OK(infinirtMalloc(&q, BIG));
    ASSERT(!overlaps(q, BIG, p, BIG));
    tc_gate_open(&gate);
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtFree(q));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(a));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* A destroyed stream's cached blocks join the device's arena 0, which
 * serves Malloc (its work is done, so any stream may have them): a small
 * block freed on it, in a segment that still holds a live block
 * (so no other stream could take the segment whole), serves the next
 * Malloc without a new raw allocation. */
int test_allocator_retired_stream_merged(void)
{
    cpu_config("");
    infinirtStream_t a;
    ASSERT_OK(infinirtStreamCreate(&a));
    void *p1, *p2, *q;
    ASSERT_OK(infinirtMallocAsync(&p1, 4096, a));
    ASSERT_OK(infinirtMallocAsync(&p2, 4096, a));
    ASSERT_OK(infinirtFreeAsync(p1, a));
    ASSERT_OK(infinirtStreamDestroy(a));
    infinirtAllocatorStats_t s0, s1;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s0));
    ASSERT_OK(infinirtMalloc(&q, 4096));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &s1));
    ASSERT_EQ(s1.raw_allocs, s0.raw_allocs);
    ASSERT_OK(infinirtFree(q));
    ASSERT_OK(infinirtFree(p2));
    return TEST_OK;
}

/* The peak is the most bytes ever allocated at once since the last reset:
 * exact, and never lower than before, however allocations and frees spread
 * over streams (each stream has an arena of its own) and however streams
 * retire.  The sequence includes the reported case: 32 MiB on two streams,
 * then one FreeAsync. */
int test_allocator_peak_exact(void)
{
    cpu_config("");
    infinirtStream_t s[3];
    for (int i = 0; i < 3; i++)
        ASSERT_OK(infinirtStreamCreate(&s[i]));
    enum { N = 64 };
    void *ptr[N] = {0};
    size_t len[N] = {0};
    int on[N];
    size_t cur = 0, peak = 0, last_peak = 0;
    infinirtAllocatorStats_t st;
    unsigned seed = 12345;
    for (int step = 0; step < 600; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % N);
        if (step == 0 || step == 1) {
            /* The reported case first: 16 MiB on each of two streams. */
            i = step;
            ASSERT(ptr[i] == NULL);
        }
        if (ptr[i] == NULL) {
            size_t n = step < 2 ? 16 * MiB : ((size_t)((seed >> 16) % 4096) + 1) * 1024;
            int k = step < 2 ? step : (int)((seed >> 4) % 4); /* 3: the default stream */
            ASSERT_OK(infinirtMallocAsync(&ptr[i], n, k < 3 ? s[k] : NULL));
            len[i] = n;
            on[i] = k;
            cur += n;
            peak = cur > peak ? cur : peak;
        } else {
            /* Freed on its own stream or, one time in three, on another
             * of the device's streams. */
            int k = (seed >> 20) % 3 == 0 ? (on[i] + 1) % 4 : on[i];
            ASSERT_OK(infinirtFreeAsync(ptr[i], k < 3 ? s[k] : NULL));
            ptr[i] = NULL;
            cur -= len[i];
        }
        if (step == 300) {
            /* A stream that retires hands its arena to the device's. */
            for (int j = 0; j < N; j++)
                if (ptr[j] != NULL && on[j] == 2) {
                    ASSERT_OK(infinirtFreeAsync(ptr[j], s[2]));
                    ptr[j] = NULL;
                    cur -= len[j];
                }
            ASSERT_OK(infinirtStreamDestroy(s[2]));
            ASSERT_OK(infinirtStreamCreate(&s[2]));
        }
        ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
        ASSERT_EQ(st.allocated_bytes, cur);
        if (st.peak_allocated_bytes < last_peak)
            TEST_FAILED_("step %d: the peak went down from %zu to %zu", step, last_peak,
                         (size_t)st.peak_allocated_bytes);
        if (st.peak_allocated_bytes != peak)
            TEST_FAILED_("step %d: peak %zu, the most allocated at once was %zu", step,
                         (size_t)st.peak_allocated_bytes, peak);
        last_peak = st.peak_allocated_bytes;
        if (step == 450) {
            ASSERT_OK(infinirtResetPeakStats(INFINI_DEVICE_CPU, 0));
            ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
            ASSERT_EQ(st.peak_allocated_bytes, cur);
            peak = last_peak = cur;
        }
    }
    for (int i = 0; i < N; i++)
        if (ptr[i] != NULL)
            ASSERT_OK(infinirtFree(ptr[i]));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(infinirtStreamDestroy(s[i]));
    return TEST_OK;
}
