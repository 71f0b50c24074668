/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance_in_flight.c - memory freed while queued work still uses it,
 * written once against the public API like the rest of the conformance
 * suite: a stream destroyed with a FreeAsync'd block pending, every
 * asynchronous operation counted as work in flight, pinned and device
 * memory freed behind work on another device's or another backend's
 * stream; and the copies and frees that cross devices and backends.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
/* StreamDestroy of a stream whose FreeAsync'd block is still to be used by
 * its queued work: while the destroy waits for that work, the block must
 * not be handed to anyone else (the stream's cache moves to the device
 * only after its work has completed). */
typedef struct {
    infinirtStream_t s;
    void *ptr;
    infiniDevice_t type;
    infiniStatus_t st;
    volatile int done;
} destroyer_arg;

static void *destroyer(void *p)
{
    destroyer_arg *a = p;
    infinirtSetDevice(a->type, 0);
    /* Here, not in the test's thread: without the allocator's cache a
     * FreeAsync behind gated work waits for it. */
    a->st = infinirtFreeAsync(a->ptr, a->s);
    if (a->st == INFINI_STATUS_SUCCESS)
        a->st = infinirtStreamDestroy(a->s);
    __atomic_store_n(&a->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

int test_conformance_destroy_pending_free(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_MEMSET, TC_PINNED_MEMORY);
    enum { N = 64 * 1024 };
    /* Non-blocking: the synchronous copies below must not wait for the
     * gated stream (a blocking one would order them after it). */
    infinirtStream_t s;
    ASSERT_OK(tc_stream_create_nonblocking(&s));
    void *p;
    ASSERT_OK(infinirtMallocAsync(&p, N, s));
    static tc_gate gate;
    CHECK(tc_hold_stream(s, &gate));
    ASSERT_OK(infinirtMemsetAsync(p, 0xab, N, s));
    destroyer_arg arg = {.s = s, .ptr = p, .type = tc_device_type()};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, destroyer, &arg), 0);
    tc_sleep_ms(100); /* the destroy is now waiting for the gated work */
    ASSERT_EQ(__atomic_load_n(&arg.done, __ATOMIC_SEQ_CST), 0);
    /* Allocations of the same size, on the default stream and a new one,
     * filled with a pattern that the gated memset must not overwrite. */
    infinirtStream_t s2;
    ASSERT_OK(infinirtStreamCreate(&s2));
    void *q1, *q2;
    ASSERT_OK(infinirtMalloc(&q1, N));
    ASSERT_OK(infinirtMallocAsync(&q2, N, s2));
    ASSERT_PTR_NE(q1, p);
    ASSERT_PTR_NE(q2, p);
    /* Pinned: an asynchronous copy of pageable memory may wait for its
     * stream, or complete, before it returns (CUDA's rule); nothing here
     * may wait while the gate is shut. */
    unsigned char *want, *got = malloc(N);
    ASSERT_OK(infinirtMallocHost((void **)&want, N));
    ASSERT(got != NULL);
    tc_pattern(want, N, 11);
    /* Both on s2: nothing here may wait for the gated stream. */
    ASSERT_OK(infinirtMemcpyAsync(q1, want, N, INFINIRT_MEMCPY_H2D, s2));
    ASSERT_OK(infinirtMemcpyAsync(q2, want, N, INFINIRT_MEMCPY_H2D, s2));
    ASSERT_OK(infinirtStreamSynchronize(s2));
    tc_gate_open(&gate);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(arg.st);
    ASSERT_OK(infinirtMemcpy(got, q1, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, N);
    ASSERT_OK(infinirtMemcpy(got, q2, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, N);
    ASSERT_OK(infinirtFree(q1));
    ASSERT_OK(infinirtFreeAsync(q2, s2));
    ASSERT_OK(infinirtStreamDestroy(s2));
    ASSERT_OK(infinirtFreeHost(want));
    free(got);
    return TEST_OK;
}

/* Every asynchronous operation counts as work in flight for the allocator:
 * a block freed while a long MemsetAsync or MemcpyAsync still writes it -
 * the only work on its stream - is not handed out until that work is done.
 * (A same-size allocation right after the free gets the block back only
 * once the write finished, so the pattern written into it survives.) */
static int check_write_then_free(bool copy)
{
    enum { MB = 1 << 20 };
    size_t n = 128 * (size_t)MB, free_b = 0, total_b = 0;
    infiniDevice_t type;
    int id;
    ASSERT_OK(infinirtGetDevice(&type, &id));
    if (infinirtGetMemInfo(type, id, &free_b, &total_b) == INFINI_STATUS_SUCCESS && total_b / 4 < n)
        n = total_b / 4 / MB * MB; /* small devices (the fake CUDA driver's) */
    ASSERT_GE(n, (size_t)MB);
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    void *p, *src = NULL;
    ASSERT_OK(infinirtMalloc(&p, n));
    if (copy) {
        ASSERT_OK(infinirtMalloc(&src, n));
        ASSERT_OK(infinirtMemset(src, 0x5a, n));
        ASSERT_OK(infinirtMemcpyAsync(p, src, n, INFINIRT_MEMCPY_D2D, s));
    } else {
        ASSERT_OK(infinirtMemsetAsync(p, 0xab, n, s));
    }
    ASSERT_OK(infinirtFree(p));
    void *q;
    ASSERT_OK(infinirtMalloc(&q, n));
    unsigned char *want = malloc(MB), *got = malloc(MB);
    ASSERT(want && got);
    tc_pattern(want, MB, 3);
    /* The pattern at the end of the block, which the write reaches last. */
    ASSERT_OK(infinirtMemcpy((char *)q + n - MB, want, MB, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtMemcpy(got, (char *)q + n - MB, MB, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, MB);
    ASSERT_OK(infinirtFree(q));
    if (src != NULL)
        ASSERT_OK(infinirtFree(src));
    ASSERT_OK(infinirtStreamDestroy(s));
    free(want);
    free(got);
    return TEST_OK;
}

int test_conformance_async_ops_fence(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_MEMSET);
    CHECK(check_write_then_free(false));
    CHECK(check_write_then_free(true));
    return TEST_OK;
}

/* Pinned host memory read by a queued copy on another device's stream:
 * FreeHost from device 0 must not hand it out again before that copy ran.
 * The free runs in a thread of its own: without the cache it waits for the
 * copy. */
typedef struct {
    void *h;
    size_t n;
    infiniDevice_t type;
    int device;
    bool device_memory; /* Free/Malloc (filled with 0x55) instead of FreeHost/MallocHost */
    infiniStatus_t st;
} refree_arg;

/* Free a->h, allocate the same size again on a->type:a->device and fill it
 * (what the gated work must not see, or overwrite); a->h becomes the new
 * block. */
static void *free_and_reuse(void *p)
{
    refree_arg *a = p;
    void *h2 = NULL;
    infinirtSetDevice(a->type, a->device);
    if (a->device_memory) {
        a->st = infinirtFree(a->h);
        if (a->st == INFINI_STATUS_SUCCESS)
            a->st = infinirtMalloc(&h2, a->n);
        if (a->st == INFINI_STATUS_SUCCESS)
            a->st = infinirtMemset(h2, 0x55, a->n);
    } else {
        a->st = infinirtFreeHost(a->h);
        if (a->st == INFINI_STATUS_SUCCESS)
            a->st = infinirtMallocHost(&h2, a->n);
        if (a->st == INFINI_STATUS_SUCCESS)
            memset(h2, 0xee, a->n); /* must not reach the gated copy's source */
    }
    if (a->st == INFINI_STATUS_SUCCESS)
        a->h = h2;
    return NULL;
}

/* free_and_reuse(a) on a thread of its own while the gate holds the
 * stream's work, then the gate opened and the thread joined: a free that
 * waits for that work returns only then. */
static int refree_past_gate(refree_arg *a, tc_gate *gate)
{
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, free_and_reuse, a), 0);
    tc_sleep_ms(100);
    tc_gate_open(gate);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(a->st);
    return TEST_OK;
}

/* The peer operation just queued on s0 (a stream of device 0) returned
 * st.  Where the backend refuses peer access the test ends unsupported,
 * with s0 destroyed and device 1's block p (n bytes) freed; else *arg is
 * set up for refree_past_gate to free and reuse p. */
static int peer_refree(infiniStatus_t st, infinirtStream_t s0, tc_gate *gate, void *p, size_t n, refree_arg *arg)
{
    if (st == INFINI_STATUS_BAD_PARAM || st == INFINI_STATUS_NOT_IMPLEMENTED) {
        tc_gate_open(gate); /* nothing to check */
        ASSERT_OK(infinirtStreamDestroy(s0));
        ASSERT_OK(infinirtFree(p));
        TC_UNSUPPORTED(TC_PEER_ACCESS);
    }
    ASSERT_OK(st);
    TC_SUPPORTED(TC_PEER_ACCESS);
    *arg = (refree_arg){.h = p, .n = n, .type = tc_device_type(), .device = 1, .device_memory = true};
    return TEST_OK;
}

int test_conformance_pinned_other_device(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_PINNED_MEMORY);
    CHECK(tc_needs_async());
    CHECK(tc_use_device(1));
    enum { N = 256 * 1024 };
    infinirtStream_t s1;
    ASSERT_OK(infinirtStreamCreate(&s1));
    void *d1, *h;
    ASSERT_OK(infinirtMalloc(&d1, N));
    ASSERT_OK(infinirtMallocHost(&h, N));
    unsigned char *want = malloc(N), *got = malloc(N);
    ASSERT(want && got);
    tc_pattern(want, N, 21);
    memcpy(h, want, N);
    static tc_gate gate;
    CHECK(tc_hold_stream(s1, &gate));
    ASSERT_OK(infinirtMemcpyAsync(d1, h, N, INFINIRT_MEMCPY_H2D, s1));
    refree_arg arg = {.h = h, .n = N, .type = tc_device_type()};
    CHECK(refree_past_gate(&arg, &gate));
    void *h2 = arg.h;
    ASSERT_OK(infinirtStreamSynchronize(s1));
    ASSERT_OK(infinirtMemcpy(got, d1, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, N);
    ASSERT_OK(infinirtFreeHost(h2));
    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtStreamDestroy(s1));
    free(want);
    free(got);
    return TEST_OK;
}

/* Memory of device 1 written by a gated MemsetAsync on a device-0 stream,
 * then freed synchronously: the free waits for device 0's streams too, so
 * the block is not handed out while that write is pending. */
int test_conformance_peer_memset_free(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_MEMSET);
    CHECK(tc_use_device(1));
    enum { N = 64 * 1024 };
    void *p;
    ASSERT_OK(infinirtMalloc(&p, N));
    CHECK(tc_use_device(0));
    infinirtStream_t s0;
    ASSERT_OK(infinirtStreamCreate(&s0));
    static tc_gate gate;
    CHECK(tc_hold_stream(s0, &gate));
    /* Free and reuse from a thread of their own: without the cache the
     * free waits for the gated write. */
    refree_arg arg;
    CHECK(peer_refree(infinirtMemsetAsync(p, 0xaa, N, s0), s0, &gate, p, N, &arg));
    CHECK(refree_past_gate(&arg, &gate));
    ASSERT_OK(infinirtStreamSynchronize(s0));
    unsigned char *got = malloc(N);
    ASSERT(got != NULL);
    CHECK(tc_use_device(1));
    ASSERT_OK(infinirtMemcpy(got, arg.h, N, INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < N; i++)
        ASSERT_EQ(got[i], 0x55); /* the new owner's bytes, not the gated memset's */
    ASSERT_OK(infinirtFree(arg.h));
    ASSERT_OK(infinirtStreamDestroy(s0));
    free(got);
    return TEST_OK;
}

/* The same for an async copy between blocks this thread has just used
 * (memory.c, quick_copy_async), on a stream of device 0: an H2D into
 * device 1's block, or a D2D out of it into device 0's.  It must hold a
 * synchronous free of device 1's block until it has run.  (One direction
 * per test: a device once marked as a peer's stays marked.) */
static int peer_copy_free(bool d2d)
{
    enum { N = 64 * 1024 };
    static unsigned char src[N], zero[N], got[N];
    tc_pattern(src, N, 31);
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_MEMSET);
    CHECK(tc_use_device(1));
    void *p, *q;
    ASSERT_OK(infinirtMalloc(&p, N));
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtMalloc(&q, N));
    infinirtStream_t s0;
    ASSERT_OK(infinirtStreamCreate(&s0));
    ASSERT_OK(infinirtMemcpy(q, zero, N, INFINIRT_MEMCPY_H2D)); /* both blocks remembered */
    ASSERT_OK(infinirtMemcpy(p, src, N, INFINIRT_MEMCPY_H2D));
    static tc_gate gate;
    CHECK(tc_hold_stream(s0, &gate));
    infiniStatus_t st = d2d ? infinirtMemcpyAsync(q, p, N, INFINIRT_MEMCPY_D2D, s0)
                            : infinirtMemcpyAsync(p, src, N, INFINIRT_MEMCPY_H2D, s0);
    refree_arg arg;
    int rc = peer_refree(st, s0, &gate, p, N, &arg);
    if (rc != TEST_OK) {
        ASSERT_OK(infinirtFree(q));
        return rc;
    }
    CHECK(refree_past_gate(&arg, &gate));
    ASSERT_OK(infinirtStreamSynchronize(s0));
    if (d2d) {
        /* The copy read device 1's block before anyone could reuse it. */
        ASSERT_OK(infinirtMemcpy(got, q, N, INFINIRT_MEMCPY_D2H));
        ASSERT_MEM_EQ(got, src, N);
    } else {
        /* The copy wrote before the new owner did. */
        CHECK(tc_use_device(1));
        ASSERT_OK(infinirtMemcpy(got, arg.h, N, INFINIRT_MEMCPY_D2H));
        for (size_t i = 0; i < N; i++)
            ASSERT_EQ(got[i], 0x55);
    }
    ASSERT_OK(infinirtFree(arg.h));
    ASSERT_OK(infinirtFree(q));
    ASSERT_OK(infinirtStreamDestroy(s0));
    return TEST_OK;
}

int test_conformance_peer_copy_free(void)
{
    return peer_copy_free(false);
}

int test_conformance_peer_d2d_free(void)
{
    return peer_copy_free(true);
}

/* Issues one MemcpyAsync from a thread of its own: the test's thread stays
 * free to open the gate when the copy waits for its stream. */
typedef struct {
    void *dst;
    const void *src;
    size_t n;
    infinirtStream_t s;
    infiniStatus_t st;
    int done;
} copier_arg;

static void *copier(void *p)
{
    copier_arg *a = p;
    a->st = infinirtMemcpyAsync(a->dst, a->src, a->n, INFINIRT_MEMCPY_H2D, a->s);
    __atomic_store_n(&a->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Pinned memory from the CPU plugin's host pool (allocated while a CPU
 * device is current) read by a gated copy on the target backend's stream:
 * FreeHost must not hand it out before that copy ran, whichever backend
 * the copy is on.  To another backend that memory may be pageable (CUDA
 * did not pin it), and CUDA may make such a copy wait for its stream before
 * it returns: the copy is issued from a thread of its own, and when it has
 * not returned while the gate is shut the gate is opened first (the copy
 * has read its source once it returned; the free checks less, the data
 * still everything). */
int test_conformance_pinned_other_backend(void)
{
    enum { N = 256 * 1024 };
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS);
    CHECK(tc_needs_async());
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    void *h;
    ASSERT_OK(infinirtMallocHost(&h, N)); /* the CPU plugin's pool */
    unsigned char *want = malloc(N), *got = malloc(N);
    ASSERT(want && got);
    tc_pattern(want, N, 31);
    memcpy(h, want, N);
    CHECK(tc_use_device(0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    static tc_gate gate;
    CHECK(tc_hold_stream(s, &gate));
    copier_arg cp = {.dst = d, .src = h, .n = N, .s = s};
    pthread_t tc;
    ASSERT_EQ(pthread_create(&tc, NULL, copier, &cp), 0);
    for (int i = 0; i < 500 && !__atomic_load_n(&cp.done, __ATOMIC_SEQ_CST); i++)
        tc_sleep_ms(1);
    bool queued = __atomic_load_n(&cp.done, __ATOMIC_SEQ_CST);
    if (!queued) {
        fprintf(stderr, "the copy of the other backend's host memory waits for its stream: "
                        "the gate is opened before the free\n");
        tc_gate_open(&gate);
    }
    ASSERT_EQ(pthread_join(tc, NULL), 0);
    ASSERT_OK(cp.st);
    refree_arg arg = {.h = h, .n = N, .type = INFINI_DEVICE_CPU};
    CHECK(refree_past_gate(&arg, &gate));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtMemcpy(got, d, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, N);
    ASSERT_OK(infinirtFreeHost(arg.h));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtStreamDestroy(s));
    free(want);
    free(got);
    return TEST_OK;
}

/* A synchronous D2D copy between a CPU device and the target device, both
 * ways (staged through host memory when they are different backends). */
int test_conformance_d2d_across_backends(void)
{
    enum { N = 300 * 1000 };
    unsigned char *want = malloc(N), *got = malloc(N);
    ASSERT(want && got);
    tc_pattern(want, N, 41);
    /* Both ends must exist: a suite run on another backend may have no CPU
     * device configured. */
    int rc = tc_use_device(0);
    if (rc == TEST_OK)
        rc = tc_needs_devices(INFINI_DEVICE_CPU, 1);
    if (rc != TEST_OK) {
        free(want);
        free(got);
        return rc;
    }
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    void *c, *c2;
    ASSERT_OK(infinirtMalloc(&c, N));
    ASSERT_OK(infinirtMalloc(&c2, N));
    ASSERT_OK(infinirtMemcpy(c, want, N, INFINIRT_MEMCPY_H2D));
    CHECK(tc_use_device(0));
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtMemcpy(d, c, N, INFINIRT_MEMCPY_D2D)); /* cpu -> target */
    ASSERT_OK(infinirtMemcpy(got, d, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, N);
    /* Again with both blocks remembered by this thread (memory.c,
     * quick_copy): still staged through host memory.  d is cleared with a
     * copy, not Memset: this test needs nothing a plugin may lack. */
    memset(got, 0, N);
    ASSERT_OK(infinirtMemcpy(d, got, N, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(d, c, N, INFINIRT_MEMCPY_D2D));
    memset(got, 0, N);
    ASSERT_OK(infinirtMemcpy(got, d, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, N);
    ASSERT_OK(infinirtMemcpy(c2, d, N, INFINIRT_MEMCPY_D2D)); /* target -> cpu */
    memset(got, 0, N);
    ASSERT_OK(infinirtMemcpy(got, c2, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, N);
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFree(c));
    ASSERT_OK(infinirtFree(c2));
    free(want);
    free(got);
    return TEST_OK;
}

/* FreeAsync orders the free on a stream of the pointer's own device: a
 * stream of another device is BAD_PARAM, and the block stays allocated. */
int test_conformance_free_async_other_device(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS);
    CHECK(tc_use_device(1));
    static unsigned char h[4096];
    void *p;
    ASSERT_OK(infinirtMalloc(&p, 4096));
    CHECK(tc_use_device(0));
    infinirtStream_t s0;
    ASSERT_OK(infinirtStreamCreate(&s0));
    ASSERT_STATUS(infinirtFreeAsync(p, s0), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtMemcpy(p, h, 4096, INFINIRT_MEMCPY_H2D)); /* still live */
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtStreamDestroy(s0));
    return TEST_OK;
}

/* Reuse of a block freed while the work that uses it is held by a gate:
 * the old block, freed on the NULL stream, on a blocking stream or
 * synchronously, then a new block of the same size.  Memory from Malloc
 * may be used at once by any stream, a non-blocking one included (it does
 * not wait for the NULL stream, nor for a blocking one); memory from
 * MallocAsync on a stream by that stream's later work.  Either way the new
 * block must not be memory the held work still writes: the new owner's
 * fill, made and waited for while the gate is shut, must survive the held
 * fill of the old block. */
typedef enum { FREED_ON_NULL, FREED_ON_BLOCKING, FREED_SYNC } freed_how;
typedef enum { NEW_MALLOC, NEW_ASYNC_NONBLOCKING, NEW_ASYNC_NULL } new_how;

static int reuse_case(size_t n, bool made_async, freed_how freed, new_how made, unsigned char *got)
{
    infinirtStream_t nb, bs, on;
    ASSERT_OK(tc_stream_create_nonblocking(&nb));
    ASSERT_OK(infinirtStreamCreate(&bs));
    on = freed == FREED_ON_BLOCKING ? bs : NULL; /* the stream of the held work and of the free */
    void *p, *q;
    if (made_async)
        ASSERT_OK(infinirtMallocAsync(&p, n, on));
    else
        ASSERT_OK(infinirtMalloc(&p, n));
    static tc_gate gates[16];
    static int next;
    tc_gate *gate = &gates[next++ % 16];
    CHECK(tc_hold_stream(on, gate));
    ASSERT_OK(infinirtMemsetAsync(p, 0x86, n, on)); /* runs when the gate opens */
    if (freed == FREED_SYNC)
        ASSERT_OK(infinirtFree(p));
    else
        ASSERT_OK(infinirtFreeAsync(p, on));
    infinirtStream_t use = made == NEW_ASYNC_NULL ? NULL : nb;
    if (made == NEW_MALLOC)
        ASSERT_OK(infinirtMalloc(&q, n));
    else
        ASSERT_OK(infinirtMallocAsync(&q, n, use));
    uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;
    /* The NULL stream's own allocation may have it at once: its work is
     * queued after the held fill. */
    if (made != NEW_ASYNC_NULL && x < y + n && y < x + n)
        TEST_FAILED_("%s of %zu bytes got %p: a block %s freed %s while work queued on %s still writes it",
                     made == NEW_MALLOC ? "Malloc" : "MallocAsync on a non-blocking stream", n, q,
                     made_async ? "MallocAsync made and" : "Malloc made and",
                     freed == FREED_SYNC      ? "with Free"
                     : freed == FREED_ON_NULL ? "on the NULL stream"
                                              : "on a blocking stream",
                     freed == FREED_ON_BLOCKING ? "that stream" : "the NULL stream");
    ASSERT_OK(infinirtMemsetAsync(q, 0xb5, n, use));
    if (use != NULL)
        ASSERT_OK(infinirtStreamSynchronize(use)); /* does not wait for the held stream */
    tc_gate_open(gate);
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtMemcpy(got, q, n, INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < n; i++)
        if (got[i] != 0xb5)
            TEST_FAILED_("byte %zu of the new block is 0x%02x, not 0xb5: the old block's held fill landed on it", i,
                         got[i]);
    if (made == NEW_MALLOC)
        ASSERT_OK(infinirtFree(q));
    else
        ASSERT_OK(infinirtFreeAsync(q, use));
    ASSERT_OK(infinirtStreamDestroy(nb));
    ASSERT_OK(infinirtStreamDestroy(bs));
    return TEST_OK;
}

/* Sizes for a quick list and for a segment of its own. */
static const size_t reuse_sizes[] = {4096, 2 << 20};

/* Malloc after a FreeAsync on the NULL stream (or on a blocking stream)
 * whose work is held: Malloc's memory is any stream's at once. */
int test_conformance_malloc_after_null_free_async(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    CHECK(tc_needs_caching_allocator(false)); /* else the free waits for the gate */
    unsigned char *got = malloc(2 << 20);
    ASSERT(got != NULL);
    for (size_t i = 0; i < 2; i++)
        for (int async = 0; async < 2; async++) {
            CHECK(reuse_case(reuse_sizes[i], async, FREED_ON_NULL, NEW_MALLOC, got));
            CHECK(reuse_case(reuse_sizes[i], async, FREED_ON_BLOCKING, NEW_MALLOC, got));
        }
    free(got);
    return TEST_OK;
}

/* MallocAsync on a non-blocking stream after a FreeAsync on the NULL
 * stream or a Free, the work held: only after the fence.  MallocAsync on
 * the NULL stream itself after a FreeAsync there: at once is right. */
int test_conformance_malloc_async_after_free_held(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    CHECK(tc_needs_caching_allocator(false));
    unsigned char *got = malloc(2 << 20);
    ASSERT(got != NULL);
    for (size_t i = 0; i < 2; i++)
        for (int async = 0; async < 2; async++) {
            CHECK(reuse_case(reuse_sizes[i], async, FREED_ON_NULL, NEW_ASYNC_NONBLOCKING, got));
            CHECK(reuse_case(reuse_sizes[i], async, FREED_SYNC, NEW_ASYNC_NONBLOCKING, got));
            CHECK(reuse_case(reuse_sizes[i], async, FREED_SYNC, NEW_MALLOC, got));
            CHECK(reuse_case(reuse_sizes[i], async, FREED_ON_NULL, NEW_ASYNC_NULL, got));
        }
    free(got);
    return TEST_OK;
}

/* Small work the backend may run on the caller's thread, mixed with work
 * another thread queues on the same stream and holds.  The CPU backend
 * runs a small copy on an idle asynchronous stream right away and the
 * loader then counts nothing for it (a device with stream_query is asked
 * whether a stream is idle instead): a block freed on the stream behind the
 * held work, or freed with Free while that work still writes it, must not
 * be handed out again until the work has run, whatever ran inline before
 * or is queued behind it. */
typedef struct {
    infinirtStream_t s;
    tc_gate *gate;
    void *p, *r;
    size_t n;
    infiniDevice_t type;
    int rc;
} held_fill_arg;

/* Hold a->s on a->gate, and queue fills of a->p and a->r behind it. */
static void *queue_held_fills(void *arg)
{
    held_fill_arg *a = arg;
    a->rc = TEST_FAIL;
    if (infinirtSetDevice(a->type, 0) != INFINI_STATUS_SUCCESS || tc_hold_stream(a->s, a->gate) != TEST_OK)
        return NULL;
    if (infinirtMemsetAsync(a->p, 0x86, a->n, a->s) == INFINI_STATUS_SUCCESS &&
        infinirtMemsetAsync(a->r, 0x86, a->n, a->s) == INFINI_STATUS_SUCCESS)
        a->rc = TEST_OK;
    return NULL;
}

/* Whether [q, q + n) and [p, p + n) overlap. */
static bool overlaps(const void *p, const void *q, size_t n)
{
    uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;
    return x < y + n && y < x + n;
}

int test_conformance_inline_then_held_free(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    CHECK(tc_needs_caching_allocator(false)); /* else the frees wait for the gate */
    enum { N = 4096, SMALL = 64 };
    infinirtStream_t s, nb;
    ASSERT_OK(tc_stream_create_nonblocking(&s));
    ASSERT_OK(tc_stream_create_nonblocking(&nb));
    void *p, *r, *small;
    ASSERT_OK(infinirtMalloc(&p, N));
    ASSERT_OK(infinirtMalloc(&r, N));
    /* Pinned: a copy of pageable memory may wait for its stream (CUDA's
     * rule), and nothing here may wait while the gate is shut. */
    ASSERT_OK(infinirtMallocHost(&small, SMALL));
    memset(small, 0x3c, SMALL);
    /* Small copies on the idle stream, synchronized and not: what the CPU
     * backend runs on the caller. */
    for (int i = 0; i < 8; i++) {
        ASSERT_OK(infinirtMemcpyAsync(p, small, SMALL, INFINIRT_MEMCPY_H2D, s));
        ASSERT_OK(infinirtStreamSynchronize(s));
    }
    ASSERT_OK(infinirtMemcpyAsync(r, small, SMALL, INFINIRT_MEMCPY_H2D, s));
    /* Real queued work from another thread, held. */
    static tc_gate gate;
    held_fill_arg a = {.s = s, .gate = &gate, .p = p, .r = r, .n = N, .type = tc_device_type()};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, queue_held_fills, &a), 0);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(a.rc, TEST_OK);
    /* A small copy again, now behind the held work, then the frees. */
    ASSERT_OK(infinirtMemcpyAsync((char *)p + N - SMALL, small, SMALL, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtFreeAsync(p, s));
    ASSERT_OK(infinirtFree(r));
    void *q[3];
    ASSERT_OK(infinirtMallocAsync(&q[0], N, nb));
    ASSERT_OK(infinirtMalloc(&q[1], N));
    ASSERT_OK(infinirtMalloc(&q[2], N));
    for (int i = 0; i < 3; i++) {
        if (overlaps(p, q[i], N) || overlaps(r, q[i], N))
            TEST_FAILED_("new block %d (%p) is memory the held fills of %p and %p still write: freed %s", i, q[i], p,
                         r, overlaps(p, q[i], N) ? "with FreeAsync on the held stream" : "with Free");
        ASSERT_OK(infinirtMemsetAsync(q[i], 0xb5, N, nb));
    }
    ASSERT_OK(infinirtStreamSynchronize(nb)); /* does not wait for the held stream */
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(s));
    unsigned char got[N];
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(infinirtMemcpy(got, q[i], N, INFINIRT_MEMCPY_D2H));
        for (size_t k = 0; k < N; k++)
            if (got[k] != 0xb5)
                TEST_FAILED_("byte %zu of new block %d is 0x%02x, not 0xb5: a held fill landed on it", k, i, got[k]);
    }
    ASSERT_OK(infinirtFreeAsync(q[0], nb));
    ASSERT_OK(infinirtFree(q[1]));
    ASSERT_OK(infinirtFree(q[2]));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(nb));
    ASSERT_OK(infinirtFreeHost(small));
    return TEST_OK;
}
