/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance_graph_memory.c - memory and graphs, written once against the
 * public API like the rest of the conformance suite (include/infinirt.h,
 * "graph"): memory allocated or freed in a capture stays the graph's until
 * the graph, its executable graphs and their queued launches are gone; a
 * capture never gets a block its stream's queued work may still use;
 * repeated capture cycles reserve no more; and a GLOBAL capture while
 * another thread allocates is never handed the capture's block.
 */
#define _GNU_SOURCE
#include "conformance_graph.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SZ ((size_t)65536) /* bytes of the blocks allocated in captures */
#define NPROBE 8           /* same-size allocations per probe and kind */

static bool overlaps(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + nb && y < x + na;
}

typedef struct {
    const void *p;
    size_t n;
    const char *what;
} held;

/* Blocks the graph holds are not handed out: NPROBE same-size allocations
 * each by Malloc, by MallocAsync on `other` and (when not NULL) on `same`,
 * none overlapping a held block.  Each is filled with 0xee (a block handed
 * out early would so corrupt the graph's data) and freed. */
static int probe_no_reuse(const held *h, int nh, infinirtStream_t same, infinirtStream_t other)
{
    void *got[3 * NPROBE];
    int ng = 0;
    for (int i = 0; i < NPROBE; i++)
        ASSERT_OK(infinirtMalloc(&got[ng++], SZ));
    for (int i = 0; i < NPROBE; i++)
        ASSERT_OK(infinirtMallocAsync(&got[ng++], SZ, other));
    if (same != NULL)
        for (int i = 0; i < NPROBE; i++)
            ASSERT_OK(infinirtMallocAsync(&got[ng++], SZ, same));
    for (int i = 0; i < ng; i++)
        for (int k = 0; k < nh; k++)
            if (overlaps(got[i], SZ, h[k].p, h[k].n))
                TEST_FAILED_("allocation %d (%p) was handed the graph's %s block %p", i, got[i], h[k].what, h[k].p);
    for (int i = 0; i < ng; i++)
        ASSERT_OK(infinirtMemsetAsync(got[i], 0xee, SZ, other));
    for (int i = 0; i < ng; i++)
        ASSERT_OK(infinirtFreeAsync(got[i], other));
    ASSERT_OK(infinirtStreamSynchronize(other));
    return TEST_OK;
}

/* MallocAsync in a capture: the block's address serves every launch, and
 * neither it, nor a block freed in the capture, nor a block allocated
 * before the capture and freed in it is handed out (by Malloc, or by
 * MallocAsync on another stream or the capturing one) while the graph or
 * an executable graph of it lives.  A Free of a block the capture left
 * allocated is accepted while the graph lives and keeps it held. */
int test_conformance_graph_malloc_async_pool(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
    infinirtAllocatorSettings_t as;
    ASSERT_OK(infinirtGetAllocatorSettings(&as));
    infinirtAllocatorStats_t st0, st1;
    ASSERT_OK(infinirtGetAllocatorStats(tc_device_type(), 0, &st0));
    unsigned char *hin, *hout, *hpre;
    CHECK(pinned(&hin, SZ, 0));
    CHECK(pinned(&hout, SZ, 0));
    CHECK(pinned(&hpre, SZ, 0));
    infinirtStream_t s, other;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&other));
    void *pre, *p1, *p2;
    ASSERT_OK(infinirtMallocAsync(&pre, SZ, s));
    ASSERT_OK(infinirtMemsetAsync(pre, 0x33, SZ, s));
    ASSERT_OK(infinirtStreamSynchronize(s));

    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMallocAsync(&p1, SZ, s)); /* freed in the capture */
    ASSERT_OK(infinirtMallocAsync(&p2, SZ, s)); /* left allocated */
    ASSERT(p1 != NULL && p2 != NULL);
    ASSERT(!overlaps(p1, SZ, p2, SZ));
    ASSERT(!overlaps(p1, SZ, pre, SZ));
    ASSERT(!overlaps(p2, SZ, pre, SZ));
    ASSERT_OK(infinirtMemcpyAsync(p1, hin, SZ, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(p2, p1, SZ, INFINIRT_MEMCPY_D2D, s));
    ASSERT_OK(infinirtMemcpyAsync(hout, p2, SZ, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtMemcpyAsync(hpre, pre, SZ, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtFreeAsync(pre, s));
    ASSERT_OK(infinirtFreeAsync(p1, s));
    infinirtGraph_t g;
    CHECK(end_ok(s, &g));
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));
    const held h[] = {{pre, SZ, "pre-capture, freed in the capture"},
                      {p1, SZ, "captured, freed in the capture"},
                      {p2, SZ, "captured, kept"}};

    for (int k = 0; k < 4; k++) {
        if (k == 1)
            ASSERT_OK(infinirtFree(p2)); /* honoured when the graph goes */
        if (k == 2)
            ASSERT_OK(infinirtGraphDestroy(g)); /* the exec still holds everything */
        tc_pattern(hin, SZ, 30 + (unsigned)k);
        memset(hout, 0, SZ);
        memset(hpre, 0, SZ);
        ASSERT_OK(infinirtGraphLaunch(x, s));
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_MEM_EQ(hout, hin, SZ);
        CHECK(host_all(hpre, SZ, 0x33)); /* pre still holds what it held */
        CHECK(probe_no_reuse(h, 3, s, other));
    }
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtDeviceSynchronize());
    /* Everything the capture held is released: the memory may be handed
     * out again, and nothing is still counted as allocated. */
    void *q;
    ASSERT_OK(infinirtMallocAsync(&q, SZ, s));
    ASSERT_OK(infinirtFreeAsync(q, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtGetAllocatorStats(tc_device_type(), 0, &st1));
    if (as.enabled) {
        ASSERT_EQ(st1.allocated_bytes, st0.allocated_bytes);
        ASSERT_EQ(st1.active_blocks, st0.active_blocks);
    }
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(other));
    ASSERT_OK(infinirtFreeHost(hin));
    ASSERT_OK(infinirtFreeHost(hout));
    ASSERT_OK(infinirtFreeHost(hpre));
    return TEST_OK;
}

typedef struct {
    infinirtGraphExec_t x;
    infinirtGraph_t g;
    infiniStatus_t x_st, g_st;
} destroyer_arg;

static void *destroyer(void *p)
{
    destroyer_arg *a = p;
    a->x_st = infinirtGraphExecDestroy(a->x);
    a->g_st = infinirtGraphDestroy(a->g);
    return NULL;
}

/* A block allocated in a capture and kept after it belongs to the
 * application, but a Free of it while the graph lives only marks it: the
 * graph's launches still write it, so no allocation gets it (its own
 * segment, empty once freed, would be the first to be taken) until the
 * graph and its executable graph are gone.  A second Free is BAD_PARAM. */
int test_conformance_graph_free_kept_block(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_GRAPHS, TC_MEMSET);
    enum { BIG = 4 << 20 };
    infinirtStream_t s, other;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&other));
    void *p = NULL;
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMallocAsync(&p, BIG, s));
    ASSERT_OK(infinirtMemsetAsync(p, 3, BIG, s));
    infinirtGraph_t g;
    CHECK(end_ok(s, &g));
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));
    ASSERT_OK(infinirtGraphLaunch(x, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtFree(p));
    ASSERT_STATUS(infinirtFree(p), INFINI_STATUS_BAD_PARAM);
    for (int k = 0; k < 8; k++) {
        void *q = NULL, *r = NULL;
        ASSERT_OK(infinirtMallocAsync(&q, BIG, other));
        ASSERT_OK(infinirtMalloc(&r, BIG));
        ASSERT(q != p && r != p);
        ASSERT_OK(infinirtFreeAsync(q, other));
        ASSERT_OK(infinirtFree(r));
        ASSERT_OK(infinirtDeviceSynchronize());
    }
    ASSERT_OK(infinirtGraphLaunch(x, s)); /* still the graph's to write */
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_STATUS(infinirtFree(p), INFINI_STATUS_BAD_PARAM); /* released with the graph */
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(other));
    return TEST_OK;
}

/* MallocAsync in a capture never gets a block the capturing stream freed
 * before the capture while work queued on it may still use the block:
 * stream order protects such a block only from later work on the same
 * stream, and the graph's launches run on whatever stream they are given. */
int test_conformance_graph_malloc_not_stream_cache(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_GRAPHS, TC_MEMSET);
    CHECK(tc_needs_async());
    /* Without the caching allocator there is no cache: a free waits for
     * the work instead. */
    CHECK(tc_needs_caching_allocator(false));
    infinirtStream_t s;
    ASSERT_OK(tc_stream_create_nonblocking(&s));
    static tc_gate gate;
    CHECK(tc_hold_stream(s, &gate));
    void *b = NULL, *p = NULL;
    ASSERT_OK(infinirtMallocAsync(&b, SZ, s));
    ASSERT_OK(infinirtMemsetAsync(b, 5, SZ, s)); /* queued behind the gate */
    ASSERT_OK(infinirtFreeAsync(b, s));
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMallocAsync(&p, SZ, s));
    ASSERT_OK(infinirtFreeAsync(p, s));
    infinirtGraph_t g;
    CHECK(end_ok(s, &g));
    ASSERT(p != b);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* A launch still queued when the graph and its exec are destroyed keeps the
 * capture's memory: nothing of it is handed out until that launch ran. */
int test_conformance_graph_pool_queued_launch(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_GRAPHS, TC_PINNED_MEMORY);
    CHECK(tc_needs_async());
    unsigned char *hin, *hout;
    CHECK(pinned(&hin, SZ, 0));
    CHECK(pinned(&hout, SZ, 0));
    /* Non-blocking: the synchronous calls below must not wait for the held
     * stream. */
    infinirtStream_t s, other;
    ASSERT_OK(tc_stream_create_nonblocking(&s));
    ASSERT_OK(tc_stream_create_nonblocking(&other));
    void *p;
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMallocAsync(&p, SZ, s));
    ASSERT_OK(infinirtMemcpyAsync(p, hin, SZ, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(hout, p, SZ, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtFreeAsync(p, s));
    infinirtGraph_t g;
    CHECK(end_ok(s, &g));
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));
    tc_pattern(hin, SZ, 41);
    static tc_gate gate;
    CHECK(tc_hold_stream(s, &gate));
    ASSERT_OK(infinirtGraphLaunch(x, s));
    /* The destroys in a thread: without the caching allocator, releasing
     * the memory waits for the launch, as a Free does. */
    static destroyer_arg arg;
    arg = (destroyer_arg){.x = x, .g = g};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, destroyer, &arg), 0);
    tc_sleep_ms(100); /* destroyed, or waiting for the launch */
    const held h[] = {{p, SZ, "captured"}};
    CHECK(probe_no_reuse(h, 1, NULL, other)); /* the launch cannot have run: the gate is shut */
    tc_gate_open(&gate);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(arg.x_st); /* the queued launch still runs */
    ASSERT_OK(arg.g_st);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_MEM_EQ(hout, hin, SZ);
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(other));
    ASSERT_OK(infinirtFreeHost(hin));
    ASSERT_OK(infinirtFreeHost(hout));
    return TEST_OK;
}

/* One capture / instantiate / launch / destroy cycle with allocations made
 * and freed in the capture, and a block from before it freed in it. */
static int cycle(infinirtStream_t s, unsigned char *hout, int i)
{
    void *pre, *p, *q;
    ASSERT_OK(infinirtMallocAsync(&pre, SZ, s));
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMallocAsync(&p, SZ, s));
    ASSERT_OK(infinirtMallocAsync(&q, 3 * SZ, s));
    ASSERT_OK(infinirtMemsetAsync(p, i & 0xff, SZ, s));
    ASSERT_OK(infinirtMemcpyAsync(q, p, SZ, INFINIRT_MEMCPY_D2D, s));
    ASSERT_OK(infinirtMemcpyAsync(hout, q, N, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtFreeAsync(pre, s));
    ASSERT_OK(infinirtFreeAsync(q, s));
    ASSERT_OK(infinirtFreeAsync(p, s));
    infinirtGraph_t g;
    CHECK(end_ok(s, &g));
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));
    ASSERT_OK(infinirtGraphLaunch(x, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    CHECK(host_all(hout, N, (unsigned char)(i & 0xff)));
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtDeviceSynchronize());
    return TEST_OK;
}

/* 100 cycles leave the reserved (and allocated) bytes where the first,
 * which warmed the cache, left them. */
int test_conformance_graph_cycles_reserved(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
    unsigned char *hout;
    CHECK(pinned(&hout, N, 0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    CHECK(cycle(s, hout, 1));
    infinirtAllocatorStats_t a, b;
    ASSERT_OK(infinirtGetAllocatorStats(tc_device_type(), 0, &a));
    for (int i = 2; i <= 101; i++)
        CHECK(cycle(s, hout, i));
    ASSERT_OK(infinirtGetAllocatorStats(tc_device_type(), 0, &b));
    ASSERT_EQ(b.reserved_bytes, a.reserved_bytes);
    ASSERT_EQ(b.allocated_bytes, a.allocated_bytes);
    ASSERT_EQ(b.active_blocks, a.active_blocks);
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFreeHost(hout));
    return TEST_OK;
}

typedef struct {
    int stop;
    const void *held_p; /* published by the capturing thread */
    /* The thread goes round only while iters < until (churn_wait raises
     * it): a synchronous Free during the capture is held until the capture
     * ends, so a thread left to spin while the capturing one is
     * descheduled would run the device out of memory. */
    int until;
    int iters, overlaps, errors;
    infiniStatus_t first_error;
    const char *first_call;
} churn_state;

static void churn_fail(churn_state *c, infiniStatus_t st, const char *call)
{
    if (c->errors++ == 0) {
        c->first_error = st;
        c->first_call = call;
    }
}

#define CHURN(call)                       \
    do {                                  \
        infiniStatus_t st_ = (call);      \
        if (st_ != INFINI_STATUS_SUCCESS) \
            churn_fail(c, st_, #call);    \
    } while (0)

static void churn_check(churn_state *c, const void *p)
{
    const void *h = __atomic_load_n(&c->held_p, __ATOMIC_SEQ_CST);
    if (p != NULL && h != NULL && overlaps(p, SZ, h, SZ))
        c->overlaps++;
}

/* Malloc/Free, MallocAsync/FreeAsync and EventQuery on a stream of its
 * own, in a loop, each block written once. */
static void *churn_thread(void *arg)
{
    churn_state *c = arg;
    if (infinirtSetDevice(tc_device_type(), 0) != INFINI_STATUS_SUCCESS) {
        churn_fail(c, INFINI_STATUS_INTERNAL_ERROR, "infinirtSetDevice");
        return NULL;
    }
    infinirtStream_t s2;
    infinirtEvent_t e;
    if (infinirtStreamCreate(&s2) != INFINI_STATUS_SUCCESS || infinirtEventCreate(&e) != INFINI_STATUS_SUCCESS) {
        churn_fail(c, INFINI_STATUS_INTERNAL_ERROR, "stream/event create");
        return NULL;
    }
    while (!__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST)) {
        if (__atomic_load_n(&c->iters, __ATOMIC_SEQ_CST) >= __atomic_load_n(&c->until, __ATOMIC_SEQ_CST)) {
            tc_sleep_ms(1);
            continue;
        }
        void *a = NULL, *b = NULL;
        infinirtEventStatus_t es;
        CHURN(infinirtMalloc(&a, SZ));
        churn_check(c, a);
        CHURN(infinirtMallocAsync(&b, SZ, s2));
        churn_check(c, b);
        if (b != NULL)
            CHURN(infinirtMemsetAsync(b, 0xee, SZ, s2));
        CHURN(infinirtEventRecord(e, s2));
        CHURN(infinirtEventQuery(e, &es));
        if (a != NULL)
            CHURN(infinirtFree(a));
        if (b != NULL)
            CHURN(infinirtFreeAsync(b, s2));
        CHURN(infinirtEventQuery(e, &es));
        __atomic_add_fetch(&c->iters, 1, __ATOMIC_SEQ_CST);
    }
    CHURN(infinirtStreamSynchronize(s2));
    CHURN(infinirtEventDestroy(e));
    CHURN(infinirtStreamDestroy(s2));
    return NULL;
}

/* Let the churning thread go round `more` more times, and wait until it has. */
static void churn_wait(churn_state *c, int more)
{
    int until = __atomic_load_n(&c->iters, __ATOMIC_SEQ_CST) + more;
    __atomic_store_n(&c->until, until, __ATOMIC_SEQ_CST);
    for (int ms = 0; ms < 5000 && __atomic_load_n(&c->iters, __ATOMIC_SEQ_CST) < until; ms++)
        tc_sleep_ms(1);
}

/* A GLOBAL capture while another thread allocates, frees and queries
 * events: the capture succeeds, its launches are right, and the thread is
 * never handed the capture's block. */
int test_conformance_graph_global_churn(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_EVENTS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
    unsigned char *hin, *hout;
    CHECK(pinned(&hin, SZ, 0));
    CHECK(pinned(&hout, SZ, 0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    static churn_state c;
    memset(&c, 0, sizeof c);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, churn_thread, &c), 0);
    churn_wait(&c, 20);

    /* Each step's status, so that a failure still stops the thread before
     * the test returns (it would go on calling into a runtime being torn
     * down). */
    void *p = NULL;
    infiniStatus_t step[5];
    step[0] = infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL);
    step[1] = infinirtMallocAsync(&p, SZ, s);
    __atomic_store_n(&c.held_p, p, __ATOMIC_SEQ_CST);
    churn_wait(&c, 20);
    step[2] = infinirtMemcpyAsync(p, hin, SZ, INFINIRT_MEMCPY_H2D, s);
    churn_wait(&c, 20);
    step[3] = infinirtMemcpyAsync(hout, p, SZ, INFINIRT_MEMCPY_D2H, s);
    step[4] = infinirtFreeAsync(p, s);
    churn_wait(&c, 20);
    infinirtGraph_t g = NULL;
    infiniStatus_t end = infinirtStreamEndCapture(s, &g);
    infinirtGraphExec_t x = NULL;
    int launches_ok = 0;
    if (end == INFINI_STATUS_SUCCESS && instantiate(&x, g) == TEST_OK) {
        for (unsigned k = 0; k < 3; k++) {
            tc_pattern(hin, SZ, 50 + k);
            memset(hout, 0, SZ);
            if (infinirtGraphLaunch(x, s) != INFINI_STATUS_SUCCESS || infinirtStreamSynchronize(s) != 0 ||
                memcmp(hout, hin, SZ) != 0)
                break;
            churn_wait(&c, 20);
            launches_ok++;
        }
    }
    __atomic_store_n(&c.stop, 1, __ATOMIC_SEQ_CST);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    for (int i = 0; i < 5; i++)
        if (step[i] != INFINI_STATUS_SUCCESS)
            TEST_FAILED_("step %d of the capture returned %s", i, infinirtGetErrorName(step[i]));
    if (c.errors)
        TEST_FAILED_("the churning thread's %s returned %s (%d failures)", c.first_call,
                     infinirtGetErrorName(c.first_error), c.errors);
    ASSERT_OK(end);
    ASSERT_EQ(launches_ok, 3);
    ASSERT_EQ(c.overlaps, 0);
    ASSERT_GT(c.iters, 100);
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFreeHost(hin));
    ASSERT_OK(infinirtFreeHost(hout));
    return TEST_OK;
}
