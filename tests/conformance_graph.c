/*
 * conformance_graph.c - stream capture and graphs, written once against the
 * public API like the rest of the conformance suite (include/infinirt.h,
 * "graph"): a capture runs nothing, every launch replays the captured work
 * in order on the launch stream and reads memory as it is then; memory
 * allocated or freed in a capture stays the graph's until the graph and
 * its executable graphs are gone; calls that cannot be captured fail with
 * INVALID_STATE, end the capture and leave the stream usable; handles are
 * checked; InfiniCore's graph manager's sequence of calls works as it is.
 *
 * Host buffers of captured copies are infinirtMallocHost memory, as a CUDA
 * graph's memcpy nodes want page-locked memory.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N 4096             /* bytes moved by the captured copies */
#define SZ ((size_t)65536) /* bytes of the blocks allocated in captures */
#define NPROBE 8           /* same-size allocations per probe and kind */

/* ------------------------------------------------------------ helpers */

static void count_fn(void *counter)
{
    __atomic_add_fetch((int *)counter, 1, __ATOMIC_SEQ_CST);
}

static int counted(int *counter)
{
    return __atomic_load_n(counter, __ATOMIC_SEQ_CST);
}

/* infinirtMallocHost of n bytes, filled with `fill`. */
static int pinned(unsigned char **h, size_t n, int fill)
{
    ASSERT_OK(infinirtMallocHost((void **)h, n));
    memset(*h, fill, n);
    return TEST_OK;
}

static int host_all(const unsigned char *h, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] != v)
            TEST_FAILED_("host byte %zu of %zu is 0x%02x, want 0x%02x", i, n, h[i], v);
    return TEST_OK;
}

/* The stream works: a copy queued on it round-trips through d. */
static int stream_works(infinirtStream_t s, void *d, unsigned seed)
{
    unsigned char *a, *b;
    CHECK(pinned(&a, N, 0));
    CHECK(pinned(&b, N, 0));
    tc_pattern(a, N, seed);
    ASSERT_OK(infinirtMemcpyAsync(d, a, N, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(b, d, N, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_MEM_EQ(a, b, N);
    ASSERT_OK(infinirtFreeHost(a));
    ASSERT_OK(infinirtFreeHost(b));
    return TEST_OK;
}

/* Instantiate as InfiniCore does; on success the node is NULL and the log
 * empty. */
static int instantiate(infinirtGraphExec_t *x, infinirtGraph_t g)
{
    char log[4096];
    memset(log, 'x', sizeof log);
    infinirtGraphNode_t node = (infinirtGraphNode_t)log;
    *x = NULL;
    infiniStatus_t st = infinirtGraphInstantiate(x, g, &node, log, sizeof log);
    if (st != INFINI_STATUS_SUCCESS)
        TEST_FAILED_("infinirtGraphInstantiate returned %s; log: \"%.200s\"", infinirtGetErrorName(st), log);
    ASSERT(*x != NULL);
    ASSERT_PTR_EQ(node, NULL);
    ASSERT_EQ(log[0], '\0');
    return TEST_OK;
}

/* End a capture that must have succeeded. */
static int end_ok(infinirtStream_t s, infinirtGraph_t *g)
{
    *g = NULL;
    ASSERT_OK(infinirtStreamEndCapture(s, g));
    ASSERT(*g != NULL);
    return TEST_OK;
}

/* End a capture an illegal call invalidated: INVALID_STATE and no graph;
 * the stream then works. */
static int end_invalidated(infinirtStream_t s, void *d, unsigned seed)
{
    infinirtGraph_t g = (infinirtGraph_t)&g;
    ASSERT_STATUS(infinirtStreamEndCapture(s, &g), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(g, NULL);
    CHECK(stream_works(s, d, seed));
    return TEST_OK;
}

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

/* --------------------------------------------------------------- tests */

/* In every capture mode: the capture runs nothing; each launch copies the
 * host buffer as it is at that launch. */
int test_conformance_graph_replay(void)
{
    CHECK(tc_use_device(0));
    static const infinirtStreamCaptureMode_t modes[] = {INFINIRT_STREAM_CAPTURE_MODE_GLOBAL,
                                                        INFINIRT_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                        INFINIRT_STREAM_CAPTURE_MODE_RELAXED};
    unsigned char *hin, *hout;
    CHECK(pinned(&hin, N, 0));
    CHECK(pinned(&hout, N, 0));
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    for (int m = 0; m < 3; m++) {
        ASSERT_OK(infinirtMemset(d, 0, N));
        memset(hout, 0, N);
        tc_pattern(hin, N, 100 + (unsigned)m);
        infinirtGraph_t g;
        ASSERT_OK(infinirtStreamBeginCapture(s, modes[m]));
        ASSERT_OK(infinirtMemcpyAsync(d, hin, N, INFINIRT_MEMCPY_H2D, s));
        ASSERT_OK(infinirtMemcpyAsync(hout, d, N, INFINIRT_MEMCPY_D2H, s));
        CHECK(end_ok(s, &g));
        ASSERT_OK(infinirtStreamSynchronize(s));
        CHECK(tc_device_all(d, N, 0)); /* captured, not run */
        CHECK(host_all(hout, N, 0));
        infinirtGraphExec_t x;
        CHECK(instantiate(&x, g));
        for (unsigned k = 0; k < 3; k++) {
            tc_pattern(hin, N, 10 * (unsigned)m + k); /* changed between launches */
            memset(hout, 0, N);
            ASSERT_OK(infinirtGraphLaunch(x, s));
            ASSERT_OK(infinirtStreamSynchronize(s));
            ASSERT_MEM_EQ(hout, hin, N);
        }
        ASSERT_OK(infinirtGraphExecDestroy(x));
        ASSERT_OK(infinirtGraphDestroy(g));
    }
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFreeHost(hin));
    ASSERT_OK(infinirtFreeHost(hout));
    return TEST_OK;
}

static void noop_fn(void *arg)
{
    (void)arg;
}

/* tc_unsupported(TC_HOST_FUNCTIONS) (the stream destroyed) when the backend
 * has no host functions: then none can be captured either (LaunchHostFunc
 * answers NOT_IMPLEMENTED inside a capture as outside). */
static int host_fns_or_skip(infinirtStream_t s)
{
    infiniStatus_t st = infinirtLaunchHostFunc(s, noop_fn, NULL);
    if (st == INFINI_STATUS_NOT_IMPLEMENTED) {
        ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
        ASSERT_STATUS(infinirtLaunchHostFunc(s, noop_fn, NULL), INFINI_STATUS_NOT_IMPLEMENTED);
        infinirtGraph_t g;
        ASSERT_OK(infinirtStreamEndCapture(s, &g)); /* the refusal left the capture valid */
        ASSERT_OK(infinirtGraphDestroy(g));
        ASSERT_OK(infinirtStreamDestroy(s));
        TC_UNSUPPORTED(TC_HOST_FUNCTIONS);
    }
    ASSERT_OK(st);
    TC_SUPPORTED(TC_HOST_FUNCTIONS);
    ASSERT_OK(infinirtStreamSynchronize(s));
    return TEST_OK;
}

/* Captured host functions do not run at capture, and run once per launch. */
int test_conformance_graph_host_fn_count(void)
{
    CHECK(tc_use_device(0));
    static int count;
    count = 0;
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    CHECK(host_fns_or_skip(s));
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(infinirtLaunchHostFunc(s, count_fn, &count));
    tc_sleep_ms(20); /* a worker thread that ran them would have by now */
    ASSERT_EQ(counted(&count), 0);
    infinirtGraph_t g;
    CHECK(end_ok(s, &g));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_EQ(counted(&count), 0);
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));
    ASSERT_EQ(counted(&count), 0);
    for (int k = 1; k <= 5; k++) {
        ASSERT_OK(infinirtGraphLuanch(x, s));
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_EQ(counted(&count), 3 * k);
    }
    /* Queued back to back, then one wait. */
    for (int k = 0; k < 4; k++)
        ASSERT_OK(infinirtGraphLuanch(x, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_EQ(counted(&count), 27);
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_EQ(counted(&count), 27);
    return TEST_OK;
}

typedef struct {
    unsigned char *hout;
    unsigned char snaps[2][N];
    int k;
} snap_state;

/* In the graph after the D2H: keep what arrived, then clear it, so the next
 * launch must write it again. */
static void snap_fn(void *arg)
{
    snap_state *st = arg;
    if (st->k < 2)
        memcpy(st->snaps[st->k], st->hout, N);
    memset(st->hout, 0, N);
    st->k++;
}

/* memset -> H2D -> D2D -> D2H captured on stream A, launched twice back to
 * back on stream B; the graph clears its device buffers at its end, so the
 * second launch shows every step ran again. */
int test_conformance_graph_chain_other_stream(void)
{
    CHECK(tc_use_device(0));
    infinirtStream_t probe;
    ASSERT_OK(infinirtStreamCreate(&probe));
    CHECK(host_fns_or_skip(probe));
    ASSERT_OK(infinirtStreamDestroy(probe));
    unsigned char *hin, *hout, want[N];
    CHECK(pinned(&hin, N, 0));
    CHECK(pinned(&hout, N, 0));
    void *d1, *d2;
    ASSERT_OK(infinirtMalloc(&d1, N));
    ASSERT_OK(infinirtMalloc(&d2, N));
    ASSERT_OK(infinirtMemset(d1, 0, N));
    ASSERT_OK(infinirtMemset(d2, 0, N));
    infinirtStream_t a, b;
    ASSERT_OK(infinirtStreamCreate(&a));
    ASSERT_OK(infinirtStreamCreate(&b));
    tc_pattern(hin, N, 21);
    memcpy(want, hin, N / 2);
    memset(want + N / 2, 0x5a, N / 2);
    static snap_state st;
    memset(&st, 0, sizeof st);
    st.hout = hout;

    ASSERT_OK(infinirtStreamBeginCapture(a, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMemsetAsync(d1, 0x5a, N, a));
    ASSERT_OK(infinirtMemcpyAsync(d1, hin, N / 2, INFINIRT_MEMCPY_H2D, a));
    ASSERT_OK(infinirtMemcpyAsync(d2, d1, N, INFINIRT_MEMCPY_D2D, a));
    ASSERT_OK(infinirtMemcpyAsync(hout, d2, N, INFINIRT_MEMCPY_D2H, a));
    ASSERT_OK(infinirtLaunchHostFunc(a, snap_fn, &st));
    ASSERT_OK(infinirtMemsetAsync(d1, 0, N, a));
    ASSERT_OK(infinirtMemsetAsync(d2, 0, N, a));
    infinirtGraph_t g;
    CHECK(end_ok(a, &g));
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));
    ASSERT_OK(infinirtStreamSynchronize(a));
    ASSERT_EQ(st.k, 0);
    CHECK(tc_device_all(d1, N, 0));

    ASSERT_OK(infinirtGraphLuanch(x, b));
    ASSERT_OK(infinirtGraphLuanch(x, b));
    ASSERT_OK(infinirtStreamSynchronize(b));
    ASSERT_EQ(st.k, 2);
    ASSERT_MEM_EQ(st.snaps[0], want, N);
    ASSERT_MEM_EQ(st.snaps[1], want, N);
    CHECK(host_all(hout, N, 0));
    CHECK(tc_device_all(d1, N, 0));
    CHECK(tc_device_all(d2, N, 0));
    CHECK(stream_works(a, d1, 22)); /* the capturing stream is free again */

    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(a));
    ASSERT_OK(infinirtStreamDestroy(b));
    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtFreeHost(hin));
    ASSERT_OK(infinirtFreeHost(hout));
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

/* Begin a GLOBAL capture on s with one operation in it. */
static int begin_one(infinirtStream_t s, void *d)
{
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMemsetAsync(d, 0x44, N, s));
    return TEST_OK;
}

/* Every call that cannot be captured returns INVALID_STATE and invalidates
 * the capture: later operations on the stream fail, EndCapture gives
 * INVALID_STATE and no graph, and the stream works afterwards. */
int test_conformance_graph_illegal_calls(void)
{
    CHECK(tc_use_device(0));
    void *d, *d2;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtMalloc(&d2, N));
    unsigned char *h;
    CHECK(pinned(&h, N, 0));
    infinirtStream_t s, s2;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&s2));
    infinirtEvent_t e_out, e_in;
    ASSERT_OK(infinirtEventCreate(&e_out));
    ASSERT_OK(infinirtEventCreate(&e_in));
    infinirtEventStatus_t es;

    /* StreamSynchronize of the capturing stream; the stream then refuses
     * work until the capture is ended. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtStreamSynchronize(s), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtMemsetAsync(d, 0, N, s), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 1));

    /* StreamDestroy of it: refused, the stream stays alive. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtStreamDestroy(s), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 2));

    /* DeviceSynchronize while a stream of the device captures. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtDeviceSynchronize(), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 3));
    ASSERT_OK(infinirtDeviceSynchronize());

    /* Synchronous Memcpy and Memset while a blocking stream captures. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtMemcpy(d2, h, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 4));
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtMemset(d2, 0, N), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 5));

    /* A wait on an event recorded outside the capture. */
    ASSERT_OK(infinirtEventRecord(e_out, s2));
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtStreamWaitEvent(s, e_out), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 6));

    /* Query and synchronize of an event recorded in the capture: refused,
     * and the capture is invalidated (CUDA answers CAPTURED_EVENT and
     * invalidates it: seen on an H100, driver 580.159.04).  Recorded again
     * outside a capture, the event works. */
    CHECK(begin_one(s, d));
    ASSERT_OK(infinirtEventRecord(e_in, s));
    ASSERT_STATUS(infinirtEventQuery(e_in, &es), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtMemsetAsync(d2, 0x45, N, s), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 7));
    ASSERT_OK(infinirtEventRecord(e_in, s2));
    ASSERT_OK(infinirtEventSynchronize(e_in));
    CHECK(begin_one(s, d));
    ASSERT_OK(infinirtEventRecord(e_in, s));
    ASSERT_STATUS(infinirtEventSynchronize(e_in), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 8));
    ASSERT_OK(infinirtEventRecord(e_in, s2));
    ASSERT_OK(infinirtEventQuery(e_in, &es));
    ASSERT_OK(infinirtEventSynchronize(e_in));
    infinirtGraph_t g = NULL;

    /* Beginning twice is refused; whether the first capture survives is the
     * backend's (CUDA may invalidate it): ended either way, the stream works. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED), INFINI_STATUS_INVALID_STATE);
    g = NULL;
    infiniStatus_t st = infinirtStreamEndCapture(s, &g);
    if (st == INFINI_STATUS_SUCCESS) {
        ASSERT(g != NULL);
        ASSERT_OK(infinirtGraphDestroy(g));
    } else {
        ASSERT_STATUS(st, INFINI_STATUS_INVALID_STATE);
        ASSERT_PTR_EQ(g, NULL);
    }
    CHECK(stream_works(s, d, 9));

    /* Ending a stream that is not capturing; beginning on the NULL stream. */
    g = NULL;
    ASSERT_STATUS(infinirtStreamEndCapture(s, &g), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(g, NULL);
    ASSERT_STATUS(infinirtStreamBeginCapture(NULL, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtStreamBeginCapture(NULL, INFINIRT_STREAM_CAPTURE_MODE_RELAXED),
                  INFINI_STATUS_INVALID_STATE);
    /* Nothing is capturing now: the device and the default stream work. */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtMemcpy(d2, h, N, INFINIRT_MEMCPY_H2D));
    CHECK(stream_works(NULL, d, 10));
    CHECK(stream_works(s2, d, 11));
    /* A capture on s2 is not disturbed by EndCapture on s. */
    CHECK(begin_one(s2, d));
    ASSERT_STATUS(infinirtStreamEndCapture(s, &g), INFINI_STATUS_INVALID_STATE);
    CHECK(end_ok(s2, &g));
    ASSERT_OK(infinirtGraphDestroy(g));

    ASSERT_OK(infinirtEventDestroy(e_out));
    ASSERT_OK(infinirtEventDestroy(e_in));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(s2));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtFreeHost(h));
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

/* Made-up, destroyed and wrong-kind graph and executable-graph handles are
 * BAD_PARAM; an executable graph outlives its graph; it launches on the
 * default stream of its device (NULL) but not on another device's stream. */
int test_conformance_graph_bad_handles(void)
{
    CHECK(tc_use_device(0));
    int junk[16] = {0};
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtMemset(d, 0, N));
    infinirtStream_t s, dead;
    infinirtEvent_t e;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&dead));
    ASSERT_OK(infinirtStreamDestroy(dead));
    ASSERT_OK(infinirtEventCreate(&e));
    infinirtGraph_t g;
    infinirtGraphExec_t x, x2 = NULL;
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMemsetAsync(d, 0x17, N, s));
    CHECK(end_ok(s, &g));
    CHECK(instantiate(&x, g));

    /* Capture calls. */
    ASSERT_STATUS(infinirtStreamBeginCapture(dead, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamBeginCapture((infinirtStream_t)junk, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL),
                  INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamBeginCapture(e, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamBeginCapture(s, (infinirtStreamCaptureMode_t)3), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamBeginCapture(s, (infinirtStreamCaptureMode_t)-1), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamEndCapture(s, NULL), INFINI_STATUS_NULL_POINTER);
    infinirtGraph_t g2 = NULL;
    ASSERT_STATUS(infinirtStreamEndCapture(dead, &g2), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamEndCapture((infinirtStream_t)junk, &g2), INFINI_STATUS_BAD_PARAM);
    CHECK(stream_works(s, d, 1)); /* none of that began a capture */
    ASSERT_OK(infinirtMemset(d, 0, N));

    /* Made-up and wrong-kind handles. */
    ASSERT_STATUS(infinirtGraphDestroy(NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphDestroy((infinirtGraph_t)junk), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphDestroy(x), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphDestroy(s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphExecDestroy(NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphExecDestroy((infinirtGraphExec_t)junk), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphExecDestroy(g), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphExecDestroy(e), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphInstantiate(NULL, g, NULL, NULL, 0), INFINI_STATUS_NULL_POINTER);
    ASSERT_STATUS(infinirtGraphInstantiate(&x2, NULL, NULL, NULL, 0), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphInstantiate(&x2, x, NULL, NULL, 0), INFINI_STATUS_BAD_PARAM);
    char log[16];
    memset(log, 'x', sizeof log);
    ASSERT_STATUS(infinirtGraphInstantiate(&x2, (infinirtGraph_t)junk, NULL, log, sizeof log),
                  INFINI_STATUS_BAD_PARAM);
    ASSERT(memchr(log, '\0', sizeof log) != NULL); /* NUL-terminated in the buffer */
    ASSERT_GT(strlen(log), 0);                     /* with a reason */
    ASSERT_PTR_EQ(x2, NULL);
    ASSERT_STATUS(infinirtGraphLuanch(NULL, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLuanch((infinirtGraphExec_t)junk, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(g, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(x, dead), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(x, e), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(x, (infinirtStream_t)junk), INFINI_STATUS_BAD_PARAM);

    /* A stream of another device of the type, and of another backend. */
    int n = 0, ncpu = 0;
    ASSERT_OK(infinirtGetDeviceCount(tc_device_type(), &n));
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &ncpu));
    infinirtStream_t s_other[2] = {NULL, NULL};
    if (n >= 2) {
        ASSERT_OK(infinirtSetDevice(tc_device_type(), 1));
        ASSERT_OK(infinirtStreamCreate(&s_other[0]));
    }
    if (tc_device_type() != INFINI_DEVICE_CPU && ncpu >= 1) {
        ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
        ASSERT_OK(infinirtStreamCreate(&s_other[1]));
    }
    ASSERT_OK(infinirtSetDevice(tc_device_type(), 0));
    if (s_other[0] == NULL && s_other[1] == NULL)
        fprintf(stderr, "one device only: launching on another device's stream is not checked\n");
    for (int i = 0; i < 2; i++) {
        if (s_other[i] == NULL)
            continue;
        ASSERT_STATUS(infinirtGraphLaunch(x, s_other[i]), INFINI_STATUS_BAD_PARAM);
        /* Nor from that device's thread state. */
        ASSERT_OK(infinirtSetDevice(i == 0 ? tc_device_type() : INFINI_DEVICE_CPU, i == 0 ? 1 : 0));
        ASSERT_STATUS(infinirtGraphLuanch(x, s_other[i]), INFINI_STATUS_BAD_PARAM);
        ASSERT_OK(infinirtSetDevice(tc_device_type(), 0));
        ASSERT_OK(infinirtStreamSynchronize(s_other[i]));
        ASSERT_OK(infinirtStreamDestroy(s_other[i]));
    }
    ASSERT_OK(infinirtDeviceSynchronize());
    CHECK(tc_device_all(d, N, 0)); /* no refused launch ran */

    /* NULL: the default stream of the graph's device, whatever is current. */
    if (n >= 2)
        ASSERT_OK(infinirtSetDevice(tc_device_type(), 1));
    ASSERT_OK(infinirtGraphLaunch(x, NULL));
    ASSERT_OK(infinirtSetDevice(tc_device_type(), 0));
    ASSERT_OK(infinirtDeviceSynchronize());
    CHECK(tc_device_all(d, N, 0x17));

    /* Destroyed: the graph first; its exec still launches. */
    ASSERT_OK(infinirtMemset(d, 0, N));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_STATUS(infinirtGraphDestroy(g), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphInstantiate(&x2, g, NULL, NULL, 0), INFINI_STATUS_BAD_PARAM);
    ASSERT_PTR_EQ(x2, NULL);
    ASSERT_OK(infinirtGraphLaunch(x, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    CHECK(tc_device_all(d, N, 0x17));
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_STATUS(infinirtGraphExecDestroy(x), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLuanch(x, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(x, NULL), INFINI_STATUS_BAD_PARAM);

    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

/* ---- InfiniCore's graph manager (src/infinicore/graph/graph.cc) ---- */

typedef struct {
    infinirtGraph_t graph;
    infinirtGraphExec_t exec;
    infinirtGraphNode_t node;
    char log_buffer[4 * 1024];
} ic_device_graph;

typedef struct {
    infinirtStream_t stream; /* the runtime's current stream */
    unsigned char *hin, *hout;
    void *a, *b;
} ic_ops;

/* Segment 1 (capture-safe): H2D, a temporary from the stream-ordered pool,
 * two D2D through it. */
static int ic_segment1(ic_ops *o)
{
    void *tmp;
    ASSERT_OK(infinirtMemcpyAsync(o->a, o->hin, N, INFINIRT_MEMCPY_H2D, o->stream));
    ASSERT_OK(infinirtMallocAsync(&tmp, N, o->stream));
    ASSERT_OK(infinirtMemcpyAsync(tmp, o->a, N, INFINIRT_MEMCPY_D2D, o->stream));
    ASSERT_OK(infinirtMemcpyAsync(o->b, tmp, N, INFINIRT_MEMCPY_D2D, o->stream));
    ASSERT_OK(infinirtFreeAsync(tmp, o->stream));
    return TEST_OK;
}

/* Segment 2 (not capture-safe: replayed eagerly between the graphs). */
static int ic_segment2(ic_ops *o)
{
    ASSERT_OK(infinirtMemsetAsync(o->a, 0, N, o->stream));
    return TEST_OK;
}

/* Segment 3 (capture-safe): overwrite half of b, D2H. */
static int ic_segment3(ic_ops *o)
{
    ASSERT_OK(infinirtMemsetAsync((char *)o->b + N / 2, 0x77, N / 2, o->stream));
    ASSERT_OK(infinirtMemcpyAsync(o->hout, o->b, N, INFINIRT_MEMCPY_D2H, o->stream));
    return TEST_OK;
}

/* Graph::instantiate for one capture-safe segment, call for call. */
static int ic_capture(ic_ops *o, ic_device_graph *dg, int (*segment)(ic_ops *))
{
    dg->graph = NULL;
    dg->exec = NULL;
    dg->node = NULL;
    memset(dg->log_buffer, 0, sizeof dg->log_buffer);
    ASSERT_OK(infinirtStreamBeginCapture(o->stream, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(segment(o));
    ASSERT_OK(infinirtStreamEndCapture(o->stream, &dg->graph));
    infiniStatus_t st =
        infinirtGraphInstantiate(&dg->exec, dg->graph, &dg->node, dg->log_buffer, sizeof dg->log_buffer);
    if (st != INFINI_STATUS_SUCCESS)
        TEST_FAILED_("failed to instantiate device graph: %s", dg->log_buffer);
    return TEST_OK;
}

/* Graph::run: launch, eager segment, launch; then check. */
static int ic_run(ic_ops *o, ic_device_graph dg[2], unsigned seed, bool correct_spelling)
{
    tc_pattern(o->hin, N, seed);
    memset(o->hout, 0, N);
    if (correct_spelling)
        ASSERT_OK(infinirtGraphLaunch(dg[0].exec, o->stream));
    else
        ASSERT_OK(infinirtGraphLuanch(dg[0].exec, o->stream));
    CHECK(ic_segment2(o));
    if (correct_spelling)
        ASSERT_OK(infinirtGraphLaunch(dg[1].exec, o->stream));
    else
        ASSERT_OK(infinirtGraphLuanch(dg[1].exec, o->stream));
    ASSERT_OK(infinirtStreamSynchronize(o->stream));
    ASSERT_MEM_EQ(o->hout, o->hin, N / 2);
    CHECK(host_all(o->hout + N / 2, N / 2, 0x77));
    CHECK(tc_device_all(o->a, N, 0)); /* the eager segment ran between */
    return TEST_OK;
}

/* InfiniCore's flow exactly: warm the op list (5 runs, sync), capture each
 * capture-safe segment with RELAXED on the runtime's stream, instantiate
 * with a 4 KiB log and a node pointer, replay the other segment between;
 * run with infinirtGraphLuanch on the same stream (and infinirtGraphLaunch,
 * the same call); destroy the exec, then the graph. */
int test_conformance_graph_infinicore_flow(void)
{
    CHECK(tc_use_device(0));
    ic_ops o;
    ASSERT_OK(infinirtStreamCreate(&o.stream));
    CHECK(pinned(&o.hin, N, 0));
    CHECK(pinned(&o.hout, N, 0));
    ASSERT_OK(infinirtMalloc(&o.a, N));
    ASSERT_OK(infinirtMalloc(&o.b, N));
    for (int iter = 0; iter < 5; ++iter) {
        CHECK(ic_segment1(&o));
        CHECK(ic_segment2(&o));
        CHECK(ic_segment3(&o));
    }
    ASSERT_OK(infinirtStreamSynchronize(o.stream));
    static ic_device_graph dg[2];
    CHECK(ic_capture(&o, &dg[0], ic_segment1));
    CHECK(ic_segment2(&o));
    CHECK(ic_capture(&o, &dg[1], ic_segment3));
    ASSERT(dg[0].exec != NULL && dg[1].exec != NULL);
    ASSERT_PTR_EQ(dg[0].node, NULL);
    ASSERT_EQ(dg[0].log_buffer[0], '\0');
    for (unsigned k = 0; k < 3; k++)
        CHECK(ic_run(&o, dg, 60 + k, false));
    CHECK(ic_run(&o, dg, 70, true));
    CHECK(ic_run(&o, dg, 71, false));
    for (int i = 0; i < 2; i++) { /* ~DeviceGraph */
        ASSERT_OK(infinirtGraphExecDestroy(dg[i].exec));
        ASSERT_OK(infinirtGraphDestroy(dg[i].graph));
    }
    ASSERT_OK(infinirtStreamDestroy(o.stream));
    ASSERT_OK(infinirtFree(o.a));
    ASSERT_OK(infinirtFree(o.b));
    ASSERT_OK(infinirtFreeHost(o.hin));
    ASSERT_OK(infinirtFreeHost(o.hout));
    return TEST_OK;
}

/* Fork/join inside one capture: B waits on an event recorded on the
 * capturing stream A (and so joins the capture), works, and A waits on an
 * event recorded on B.  The graph runs both branches in order at each
 * launch.  A fork not joined back fails EndCapture with INVALID_STATE, and
 * both streams work afterwards. */
int test_conformance_graph_fork_join(void)
{
    CHECK(tc_use_device(0));
    unsigned char *hin, *hout;
    CHECK(pinned(&hin, N, 0));
    CHECK(pinned(&hout, N, 0));
    void *d1, *d2;
    ASSERT_OK(infinirtMalloc(&d1, N));
    ASSERT_OK(infinirtMalloc(&d2, N));
    ASSERT_OK(infinirtMemset(d1, 0, N));
    ASSERT_OK(infinirtMemset(d2, 0, N));
    infinirtStream_t a, b, c;
    ASSERT_OK(infinirtStreamCreate(&a));
    ASSERT_OK(infinirtStreamCreate(&b));
    ASSERT_OK(infinirtStreamCreate(&c));
    infinirtEvent_t ea, eb;
    ASSERT_OK(infinirtEventCreate(&ea));
    ASSERT_OK(infinirtEventCreate(&eb));

    ASSERT_OK(infinirtStreamBeginCapture(a, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMemcpyAsync(d1, hin, N, INFINIRT_MEMCPY_H2D, a));
    ASSERT_OK(infinirtEventRecord(ea, a));
    ASSERT_OK(infinirtStreamWaitEvent(b, ea)); /* fork */
    ASSERT_OK(infinirtMemcpyAsync(d2, d1, N, INFINIRT_MEMCPY_D2D, b));
    ASSERT_OK(infinirtMemsetAsync(d1, 0, N, b));
    ASSERT_OK(infinirtEventRecord(eb, b));
    ASSERT_OK(infinirtStreamWaitEvent(a, eb)); /* join */
    ASSERT_OK(infinirtMemcpyAsync(hout, d2, N, INFINIRT_MEMCPY_D2H, a));
    ASSERT_OK(infinirtMemsetAsync(d2, 0, N, a));
    infinirtGraph_t g;
    CHECK(end_ok(a, &g));
    ASSERT_OK(infinirtStreamSynchronize(a));
    ASSERT_OK(infinirtStreamSynchronize(b));
    CHECK(host_all(hout, N, 0)); /* neither branch ran at capture */
    CHECK(tc_device_all(d1, N, 0));
    CHECK(tc_device_all(d2, N, 0));
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));
    for (unsigned k = 0; k < 3; k++) {
        infinirtStream_t on = k == 1 ? c : a;
        tc_pattern(hin, N, 80 + k);
        memset(hout, 0, N);
        ASSERT_OK(infinirtGraphLaunch(x, on));
        ASSERT_OK(infinirtStreamSynchronize(on));
        ASSERT_MEM_EQ(hout, hin, N);    /* B's copy ran after A's first, before A's last */
        CHECK(tc_device_all(d1, N, 0)); /* B's memset ran after its copy */
        CHECK(tc_device_all(d2, N, 0));
    }
    CHECK(stream_works(b, d1, 90));
    CHECK(stream_works(a, d1, 91));
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));

    /* Not joined back. */
    ASSERT_OK(infinirtStreamBeginCapture(a, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMemsetAsync(d1, 0x21, N, a));
    ASSERT_OK(infinirtEventRecord(ea, a));
    ASSERT_OK(infinirtStreamWaitEvent(b, ea));
    ASSERT_OK(infinirtMemsetAsync(d2, 0x22, N, b));
    g = (infinirtGraph_t)&g;
    ASSERT_STATUS(infinirtStreamEndCapture(a, &g), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(g, NULL);
    CHECK(stream_works(b, d2, 92));
    CHECK(stream_works(a, d1, 93));
    ASSERT_OK(infinirtDeviceSynchronize());

    ASSERT_OK(infinirtEventDestroy(ea));
    ASSERT_OK(infinirtEventDestroy(eb));
    ASSERT_OK(infinirtStreamDestroy(a));
    ASSERT_OK(infinirtStreamDestroy(b));
    ASSERT_OK(infinirtStreamDestroy(c));
    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtFreeHost(hin));
    ASSERT_OK(infinirtFreeHost(hout));
    return TEST_OK;
}
