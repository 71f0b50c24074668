/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_graph_tests.c - the order of an executable graph's launches
 * (docs/graphs.md, "Launch order") where the plugin has no events, or its
 * event calls fail: the fault plugin (fixtures/fault_plugin.c) wraps the CPU plugin
 * with worker-thread streams and serves a backend the loader replays
 * operation by operation.
 *
 * The graph of each test holds its first launch on a gate (at its first
 * call only) and counts the launches that ran to the end, so a test can
 * tell whether a second launch was queued before the first had run.
 */
#define _GNU_SOURCE
#include "fault_tests.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

typedef struct {
    tc_gate gate;
    int calls;    /* of gate_fn */
    int released; /* the held call of gate_fn returned */
    int done;     /* of done_fn: launches that ran to the end */
} launches;

static void gate_fn(void *arg)
{
    launches *l = arg;
    if (__atomic_fetch_add(&l->calls, 1, __ATOMIC_SEQ_CST) == 0) {
        tc_gate_wait_fn(&l->gate);
        __atomic_store_n(&l->released, 1, __ATOMIC_SEQ_CST);
    }
}

static void done_fn(void *arg)
{
    __atomic_fetch_add(&((launches *)arg)->done, 1, __ATOMIC_SEQ_CST);
}

static int done_count(launches *l)
{
    return __atomic_load_n(&l->done, __ATOMIC_SEQ_CST);
}

/* Capture on c: the gate (held = true) and the count, and instantiate. */
static int make_exec(infinirtStream_t c, launches *l, bool held, infinirtGraph_t *g, infinirtGraphExec_t *x)
{
    memset(l, 0, sizeof *l);
    tc_gate_arm(&l->gate);
    ASSERT_OK(infinirtStreamBeginCapture(c, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    if (held)
        ASSERT_OK(infinirtLaunchHostFunc(c, gate_fn, l));
    ASSERT_OK(infinirtLaunchHostFunc(c, done_fn, l));
    ASSERT_OK(infinirtStreamEndCapture(c, g));
    ASSERT_OK(infinirtGraphInstantiate(x, *g, NULL, NULL, 0));
    return TEST_OK;
}

static int until_reached(const tc_gate *g)
{
    for (int ms = 0; ms < 30000 && !__atomic_load_n(&g->reached, __ATOMIC_SEQ_CST); ms++)
        tc_sleep_ms(1);
    ASSERT(__atomic_load_n(&g->reached, __ATOMIC_SEQ_CST));
    return TEST_OK;
}

/* Opens a gate after `ms` milliseconds: the test's own thread is about to
 * wait on the host for the work the gate holds. */
typedef struct {
    tc_gate *gate;
    int ms;
    pthread_t t;
} opener;

static void *opener_main(void *arg)
{
    opener *o = arg;
    tc_sleep_ms(o->ms);
    tc_gate_open(o->gate);
    return NULL;
}

static int opener_start(opener *o, tc_gate *g, int ms)
{
    o->gate = g;
    o->ms = ms;
    ASSERT_EQ(pthread_create(&o->t, NULL, opener_main, o), 0);
    return TEST_OK;
}

/* The first launch is held on s1; the second, on s2, must not be queued
 * before the first has run: it waits on the host (stream_synchronize of
 * s1), so when it returns the first launch is done. */
static int second_launch_waits_on_host(fault_api *api, launches *l, infinirtGraphExec_t x, infinirtStream_t s2)
{
    long syncs = api->calls("stream_synchronize"), waits = api->calls("stream_wait_event");
    opener o;
    CHECK(opener_start(&o, &l->gate, 100));
    infiniStatus_t st = infinirtGraphLaunch(x, s2);
    int released = __atomic_load_n(&l->released, __ATOMIC_SEQ_CST), done = done_count(l);
    ASSERT_EQ(pthread_join(o.t, NULL), 0);
    ASSERT_OK(st);
    if (!released || done < 1)
        TEST_FAILED_("the second launch was queued while the first was held (%d launches done)", done);
    ASSERT_EQ(api->calls("stream_synchronize"), syncs + 1);
    ASSERT_EQ(api->calls("stream_wait_event"), waits);
    ASSERT_OK(infinirtStreamSynchronize(s2));
    ASSERT_EQ(done_count(l), 2);
    return TEST_OK;
}

/* A plugin without events: the next launch on another stream waits on the
 * host for the previous one; on the same stream, stream order suffices. */
int test_fault_graph_no_events(void)
{
    ft_config("event_create,event_destroy,event_record,event_query,event_synchronize,event_elapsed_time,"
              "stream_wait_event",
              NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t c, s1, s2;
    ASSERT_OK(ft_stream(&c));
    ASSERT_OK(ft_stream(&s1));
    ASSERT_OK(ft_stream(&s2));
    static launches l;
    infinirtGraph_t g;
    infinirtGraphExec_t x;
    CHECK(make_exec(c, &l, true, &g, &x));
    ASSERT_OK(infinirtGraphLaunch(x, s1));
    CHECK(until_reached(&l.gate));
    CHECK(second_launch_waits_on_host(&api, &l, x, s2));
    long syncs = api.calls("stream_synchronize");
    ASSERT_OK(infinirtGraphLaunch(x, s2));
    ASSERT_EQ(api.calls("stream_synchronize"), syncs);
    /* And from the default stream's launch to a created stream's. */
    ASSERT_OK(infinirtGraphLaunch(x, NULL));
    ASSERT_OK(infinirtGraphLaunch(x, s1));
    ASSERT_OK(infinirtStreamSynchronize(s1));
    ASSERT_EQ(done_count(&l), 5);
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(c));
    ASSERT_OK(infinirtStreamDestroy(s1));
    ASSERT_OK(infinirtStreamDestroy(s2));
    return TEST_OK;
}

/* The wait for the previous launch fails: the launch reports it and
 * queues nothing; the next one works.  The launch event goes with the
 * executable graph. */
int test_fault_graph_wait_fails(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t c, s1, s2;
    ASSERT_OK(ft_stream(&c));
    ASSERT_OK(ft_stream(&s1));
    ASSERT_OK(ft_stream(&s2));
    static launches l;
    infinirtGraph_t g;
    infinirtGraphExec_t x;
    long created = api.calls("event_create");
    CHECK(make_exec(c, &l, false, &g, &x));
    ASSERT_OK(infinirtGraphLaunch(x, s1));
    ASSERT_EQ(api.calls("event_create"), created + 1);
    ASSERT_OK(infinirtStreamSynchronize(s1));
    ASSERT_EQ(api.set("stream_wait_event", FAULT_NTH, 1, FAIL_ST), 0);
    long fns = api.calls("launch_host_func"), waits = api.calls("stream_wait_event");
    ASSERT_STATUS(infinirtGraphLaunch(x, s2), FAIL_ST);
    ASSERT_EQ(api.calls("stream_wait_event"), waits + 1);
    ASSERT_EQ(api.calls("launch_host_func"), fns); /* nothing queued */
    ASSERT_EQ(log_count("stream_wait_event (a graph launch waiting for the previous launch"), 1);
    ASSERT_OK(infinirtStreamSynchronize(s2));
    ASSERT_EQ(done_count(&l), 1);
    ASSERT_OK(infinirtGraphLaunch(x, s2));
    ASSERT_OK(infinirtStreamSynchronize(s2));
    ASSERT_EQ(done_count(&l), 2);
    long destroyed = api.calls("event_destroy");
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_EQ(api.calls("event_destroy"), destroyed + 1);
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(c));
    ASSERT_OK(infinirtStreamDestroy(s1));
    ASSERT_OK(infinirtStreamDestroy(s2));
    return TEST_OK;
}

/* The launch event cannot be made: the first launch reports it and queues
 * nothing; the next one works. */
int test_fault_graph_event_create_fails(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t c, s1;
    ASSERT_OK(ft_stream(&c));
    ASSERT_OK(ft_stream(&s1));
    static launches l;
    infinirtGraph_t g;
    infinirtGraphExec_t x;
    CHECK(make_exec(c, &l, false, &g, &x));
    ASSERT_EQ(api.set("event_create", FAULT_NTH, 1, FAIL_ST), 0);
    long fns = api.calls("launch_host_func");
    ASSERT_STATUS(infinirtGraphLaunch(x, s1), FAIL_ST);
    ASSERT_EQ(api.calls("launch_host_func"), fns);
    ASSERT_EQ(log_count("event_create (an executable graph's launch event)"), 1);
    ASSERT_OK(infinirtGraphLaunch(x, s1));
    ASSERT_OK(infinirtStreamSynchronize(s1));
    ASSERT_EQ(done_count(&l), 1);
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(c));
    ASSERT_OK(infinirtStreamDestroy(s1));
    return TEST_OK;
}

/* The record at the end of a launch fails: the launch is queued and
 * succeeds (a warning says so), and the next launch on another stream
 * waits on the host for it instead.  That launch's own record works, and
 * the one after it waits in stream order again. */
int test_fault_graph_record_fails(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t c, s1, s2;
    ASSERT_OK(ft_stream(&c));
    ASSERT_OK(ft_stream(&s1));
    ASSERT_OK(ft_stream(&s2));
    static launches l;
    infinirtGraph_t g;
    infinirtGraphExec_t x;
    CHECK(make_exec(c, &l, true, &g, &x));
    ASSERT_EQ(api.set("event_record", FAULT_NTH, 1, FAIL_ST), 0);
    long records = api.calls("event_record");
    ASSERT_OK(infinirtGraphLaunch(x, s1));
    ASSERT_EQ(api.calls("event_record"), records + 1);
    ASSERT_EQ(log_count("event_record failed (INTERNAL_ERROR) at the end of a graph launch"), 1);
    CHECK(until_reached(&l.gate));
    CHECK(second_launch_waits_on_host(&api, &l, x, s2));
    long waits = api.calls("stream_wait_event");
    ASSERT_OK(infinirtGraphLaunch(x, s1));
    ASSERT_EQ(api.calls("stream_wait_event"), waits + 1);
    ASSERT_OK(infinirtStreamSynchronize(s1));
    ASSERT_EQ(done_count(&l), 3);
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(c));
    ASSERT_OK(infinirtStreamDestroy(s1));
    ASSERT_OK(infinirtStreamDestroy(s2));
    return TEST_OK;
}
