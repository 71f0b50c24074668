/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance_graph.c - stream capture and graphs, written once against the
 * public API like the rest of the conformance suite (include/infinirt.h,
 * "graph"): a capture runs nothing, every launch replays the captured work
 * in order on the launch stream and reads memory as it is then;
 * InfiniCore's graph manager's sequence of calls works as it is.  With the
 * helpers the graph tests share (conformance_graph.h).  Memory in captures
 * is tested in conformance_graph_memory.c; calls that cannot be captured
 * and bad handles in conformance_graph_misuse.c.
 *
 * Host buffers of captured copies are infinirtMallocHost memory, as a CUDA
 * graph's memcpy nodes want page-locked memory.
 */
#define _GNU_SOURCE
#include "conformance_graph.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
int pinned(unsigned char **h, size_t n, int fill)
{
    ASSERT_OK(infinirtMallocHost((void **)h, n));
    memset(*h, fill, n);
    return TEST_OK;
}

int host_all(const unsigned char *h, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] != v)
            TEST_FAILED_("host byte %zu of %zu is 0x%02x, want 0x%02x", i, n, h[i], v);
    return TEST_OK;
}

/* The stream works: a copy queued on it round-trips through d. */
int stream_works(infinirtStream_t s, void *d, unsigned seed)
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
int instantiate(infinirtGraphExec_t *x, infinirtGraph_t g)
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
int end_ok(infinirtStream_t s, infinirtGraph_t *g)
{
    *g = NULL;
    ASSERT_OK(infinirtStreamEndCapture(s, g));
    ASSERT(*g != NULL);
    return TEST_OK;
}

/* --------------------------------------------------------------- tests */

/* In every capture mode: the capture runs nothing; each launch copies the
 * host buffer as it is at that launch. */
int test_conformance_graph_replay(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
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
    TC_NEEDS(TC_STREAMS, TC_GRAPHS);
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
    TC_NEEDS(TC_STREAMS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
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
    TC_NEEDS(TC_STREAMS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
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
    TC_NEEDS(TC_STREAMS, TC_EVENTS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
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

/* ---- launch order: the launches of one executable graph run one after
 * the other, on any streams (as CUDA runs a graphExec's); launches of
 * different executable graphs do not wait for each other ---- */

/* A captured host function that holds its stream on `gate` at its first
 * call only: the first launch of the graph stops there, later ones pass. */
typedef struct {
    tc_gate gate;
    int calls;
} first_gate;

static void first_gate_fn(void *arg)
{
    first_gate *f = arg;
    if (__atomic_fetch_add(&f->calls, 1, __ATOMIC_SEQ_CST) == 0)
        tc_gate_wait_fn(&f->gate);
}

/* Shut the gate for the next first call. */
static void first_gate_arm(first_gate *f)
{
    tc_gate_arm(&f->gate);
    __atomic_store_n(&f->calls, 0, __ATOMIC_SEQ_CST);
}

/* The held launch reached its gate (30 s at most: a loaded machine). */
static int until_reached(const tc_gate *g)
{
    for (int ms = 0; ms < 30000 && !__atomic_load_n(&g->reached, __ATOMIC_SEQ_CST); ms++)
        tc_sleep_ms(1);
    if (!__atomic_load_n(&g->reached, __ATOMIC_SEQ_CST))
        TEST_FAILED_("%s", "the first launch did not reach its gate within 30 s");
    return TEST_OK;
}

/* e, recorded behind a launch that must wait for the held one, does not
 * complete.  200 ms: work that did not wait completes well within that;
 * on a slower machine the check only gets weaker, never fails wrongly. */
static int stays_pending(infinirtEvent_t e, const char *what)
{
    for (int ms = 0; ms < 200; ms++) {
        infinirtEventStatus_t es;
        ASSERT_OK(infinirtEventQuery(e, &es));
        if (es == INFINIRT_EVENT_COMPLETE)
            TEST_FAILED_("%s ran while the previous launch of its executable graph was held", what);
        tc_sleep_ms(1);
    }
    return TEST_OK;
}

/* A graph whose first node holds the first launch on a gate, then fills
 * d with 0xa1, launched on one stream and again on another: the second
 * launch, and a fill queued after it on its stream, wait until the first
 * launch has run, so that fill is the last write to d.  Launches that
 * overlapped would let the held launch write last.  For each pair of a
 * created stream and the NULL stream, both ways; and last, the executable
 * graph and its graph destroyed while both launches are queued (they
 * still run, in order). */
int test_conformance_graph_launches_in_order(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    unsigned char *h;
    CHECK(pinned(&h, N, 0));
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtMemset(d, 0, N));
    /* Non-blocking: the NULL stream and the created ones hold each other
     * only through the launches. */
    infinirtStream_t c, s1, s2;
    ASSERT_OK(tc_stream_create_nonblocking(&c));
    ASSERT_OK(tc_stream_create_nonblocking(&s1));
    ASSERT_OK(tc_stream_create_nonblocking(&s2));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    static first_gate fg;
    first_gate_arm(&fg);
    ASSERT_OK(infinirtStreamBeginCapture(c, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtLaunchHostFunc(c, first_gate_fn, &fg));
    ASSERT_OK(infinirtMemsetAsync(d, 0xa1, N, c));
    infinirtGraph_t g;
    CHECK(end_ok(c, &g));
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));
    ASSERT_EQ(counted(&fg.calls), 0);

    const struct {
        infinirtStream_t held, then;
    } pairs[] = {{s1, s2}, {NULL, s1}, {s2, NULL}, {s1, s2}};
    for (int i = 0; i < 4; i++) {
        const unsigned char v = (unsigned char)(0xb2 + i);
        bool last = i == 3;
        if (i > 0)
            first_gate_arm(&fg);
        ASSERT_OK(infinirtGraphLaunch(x, pairs[i].held));
        CHECK(until_reached(&fg.gate));
        ASSERT_OK(infinirtGraphLaunch(x, pairs[i].then));
        ASSERT_OK(infinirtMemsetAsync(d, v, N, pairs[i].then));
        ASSERT_OK(infinirtEventRecord(e, pairs[i].then));
        if (last) { /* launches already queued still run */
            ASSERT_OK(infinirtGraphExecDestroy(x));
            ASSERT_OK(infinirtGraphDestroy(g));
        }
        CHECK(stays_pending(e, "a launch on another stream"));
        ASSERT_EQ(counted(&fg.calls), 1);
        tc_gate_open(&fg.gate);
        ASSERT_OK(infinirtStreamSynchronize(pairs[i].then));
        ASSERT_EQ(counted(&fg.calls), 2);
        ASSERT_OK(infinirtStreamSynchronize(pairs[i].held));
        ASSERT_OK(infinirtMemcpyAsync(h, d, N, INFINIRT_MEMCPY_D2H, s2));
        ASSERT_OK(infinirtStreamSynchronize(s2));
        CHECK(host_all(h, N, v));
    }
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(c));
    ASSERT_OK(infinirtStreamDestroy(s1));
    ASSERT_OK(infinirtStreamDestroy(s2));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFreeHost(h));
    return TEST_OK;
}

/* The same with memory private to the capture (MallocAsync'ed in it: the
 * same address at every launch): in -> private -> out by D2D, the first
 * launch held between the two copies, `in` rewritten before the second
 * launch.  Each launch must deliver its own input; overlapping launches
 * would have the second overwrite the private block under the first. */
int test_conformance_graph_private_in_order(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    unsigned char *hin, *hout;
    static unsigned char want[2][N];
    CHECK(pinned(&hin, N, 0));
    CHECK(pinned(&hout, N, 0));
    void *in, *out, *p = NULL;
    ASSERT_OK(infinirtMalloc(&in, N));
    ASSERT_OK(infinirtMalloc(&out, N));
    infinirtStream_t c, s1, s2;
    ASSERT_OK(tc_stream_create_nonblocking(&c));
    ASSERT_OK(tc_stream_create_nonblocking(&s1));
    ASSERT_OK(tc_stream_create_nonblocking(&s2));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    static first_gate fg;
    static snap_state st;
    memset(&st, 0, sizeof st);
    st.hout = hout;
    first_gate_arm(&fg);
    ASSERT_OK(infinirtStreamBeginCapture(c, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMallocAsync(&p, N, c));
    ASSERT_OK(infinirtMemcpyAsync(p, in, N, INFINIRT_MEMCPY_D2D, c));
    ASSERT_OK(infinirtLaunchHostFunc(c, first_gate_fn, &fg));
    ASSERT_OK(infinirtMemcpyAsync(out, p, N, INFINIRT_MEMCPY_D2D, c));
    ASSERT_OK(infinirtMemcpyAsync(hout, out, N, INFINIRT_MEMCPY_D2H, c));
    ASSERT_OK(infinirtLaunchHostFunc(c, snap_fn, &st));
    ASSERT_OK(infinirtFreeAsync(p, c));
    infinirtGraph_t g;
    CHECK(end_ok(c, &g));
    infinirtGraphExec_t x;
    CHECK(instantiate(&x, g));

    tc_pattern(want[0], N, 51);
    tc_pattern(want[1], N, 52);
    memcpy(hin, want[0], N);
    ASSERT_OK(infinirtMemcpy(in, hin, N, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtGraphLaunch(x, s1));
    CHECK(until_reached(&fg.gate)); /* its in -> private copy ran */
    memcpy(hin, want[1], N);
    ASSERT_OK(infinirtMemcpy(in, hin, N, INFINIRT_MEMCPY_H2D)); /* no blocking stream waits */
    ASSERT_OK(infinirtGraphLaunch(x, s2));
    ASSERT_OK(infinirtEventRecord(e, s2));
    CHECK(stays_pending(e, "the launch on s2"));
    tc_gate_open(&fg.gate);
    ASSERT_OK(infinirtStreamSynchronize(s2));
    ASSERT_OK(infinirtStreamSynchronize(s1));
    ASSERT_EQ(st.k, 2);
    ASSERT_MEM_EQ(st.snaps[0], want[0], N);
    ASSERT_MEM_EQ(st.snaps[1], want[1], N);

    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(c));
    ASSERT_OK(infinirtStreamDestroy(s1));
    ASSERT_OK(infinirtStreamDestroy(s2));
    ASSERT_OK(infinirtFree(in));
    ASSERT_OK(infinirtFree(out));
    ASSERT_OK(infinirtFreeHost(hin));
    ASSERT_OK(infinirtFreeHost(hout));
    return TEST_OK;
}

/* Two executable graphs, even of one graph, are independent: exec A,
 * queued on s1 behind a gate, does not stop exec B on s2 from running to
 * the end.  (The graph has no host function: CUDA may run host functions
 * of different streams one at a time, so one in B could wait for the
 * gate's.) */
int test_conformance_graph_execs_independent(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    unsigned char *h;
    CHECK(pinned(&h, N, 0));
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtMemset(d, 0, N));
    infinirtStream_t c, s1, s2;
    ASSERT_OK(tc_stream_create_nonblocking(&c));
    ASSERT_OK(tc_stream_create_nonblocking(&s1));
    ASSERT_OK(tc_stream_create_nonblocking(&s2));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtStreamBeginCapture(c, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMemsetAsync(d, 0x5c, N, c));
    infinirtGraph_t g;
    CHECK(end_ok(c, &g));
    infinirtGraphExec_t xa, xb;
    CHECK(instantiate(&xa, g));
    CHECK(instantiate(&xb, g));

    static tc_gate gate;
    CHECK(tc_hold_stream(s1, &gate));
    ASSERT_OK(infinirtGraphLaunch(xa, s1));
    ASSERT_OK(infinirtEventRecord(e, s1));
    ASSERT_OK(infinirtGraphLaunch(xb, s2));
    /* Waiting for A here would hang until the gate times out (30 s), and
     * the gate's timeout fails the test. */
    ASSERT_OK(infinirtStreamSynchronize(s2));
    ASSERT_OK(infinirtMemcpyAsync(h, d, N, INFINIRT_MEMCPY_D2H, s2));
    ASSERT_OK(infinirtStreamSynchronize(s2));
    CHECK(host_all(h, N, 0x5c)); /* B ran */
    infinirtEventStatus_t es;
    ASSERT_OK(infinirtEventQuery(e, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY); /* while A is still held */
    /* And A's next launch, on s2, waits for A's first. */
    ASSERT_OK(infinirtMemsetAsync(d, 0, N, s2));
    ASSERT_OK(infinirtGraphLaunch(xa, s2));
    ASSERT_OK(infinirtEventRecord(e, s2));
    CHECK(stays_pending(e, "exec A's second launch"));
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(s2));
    ASSERT_OK(infinirtStreamSynchronize(s1));
    ASSERT_OK(infinirtMemcpyAsync(h, d, N, INFINIRT_MEMCPY_D2H, s2));
    ASSERT_OK(infinirtStreamSynchronize(s2));
    CHECK(host_all(h, N, 0x5c));

    ASSERT_OK(infinirtGraphExecDestroy(xa));
    ASSERT_OK(infinirtGraphExecDestroy(xb));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(c));
    ASSERT_OK(infinirtStreamDestroy(s1));
    ASSERT_OK(infinirtStreamDestroy(s2));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFreeHost(h));
    return TEST_OK;
}
