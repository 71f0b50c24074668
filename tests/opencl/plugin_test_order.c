/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_test_order.c - a synchronous copy against a blocking stream that
 * went idle and busy again: it still waits for the stream's work, however
 * the plugin learnt the stream was idle (a synchronize, a query, the
 * marker of an earlier copy) and whoever queued the work (the plugin, or
 * the application natively); and an idle stream costs the copy no command
 * on its queue (the calls counted by cl_calls.c).
 */
#include "plugin_harness.h"

#include "cl_calls.h"

#include <stdlib.h>
#include <string.h>

enum { N = 1 << 20 };

typedef struct {
    void *dst;
    const void *src;
    atomic_int done;
    infiniStatus_t st;
} copy_job;

static void *copy_thread(void *p)
{
    copy_job *j = p;

    j->st = ops->memcpy(0, j->dst, j->src, N, INFINIRT_PLUGIN_MEMCPY_D2H);
    atomic_store(&j->done, 1);
    return NULL;
}

static int done_within(atomic_int *flag, int ms)
{
    for (double t0 = now_ms(); now_ms() - t0 < ms; sleep_ms(1))
        if (atomic_load(flag))
            return 1;
    return atomic_load(flag);
}

/* What holds the stream: released once the copy had its chance to pass. */
typedef struct {
    blocker blk;   /* the plugin's host function */
    cl_event user; /* a native barrier's user event */
} hold;

static void release(hold *h)
{
    atomic_store(&h->blk.release, 1);
    if (h->user != NULL) {
        clSetUserEventStatus(h->user, CL_COMPLETE);
        clReleaseEvent(h->user);
        h->user = NULL;
    }
}

/* A synchronous D2H of p on another thread while h holds the stream that
 * is to write `want` into p: it must not finish before the release, and
 * then reads `want`.  The hold is released on every path. */
static int sync_copy_waits(void *p, const unsigned char *want, hold *h, const char *what)
{
    static copy_job job;
    unsigned char *got = malloc(N);
    pthread_t t;
    int early, finished;

    if (got == NULL) {
        release(h);
        TEST_FAILED_("%s: out of memory", what);
    }
    job = (copy_job){.dst = got, .src = p};
    if (pthread_create(&t, NULL, copy_thread, &job) != 0) {
        release(h);
        free(got);
        TEST_FAILED_("%s: pthread_create", what);
    }
    early = done_within(&job.done, 300);
    release(h);
    finished = done_within(&job.done, 10000);
    if (!finished)
        TEST_FAILED_("%s: the synchronous copy did not finish after the release", what); /* thread left behind */
    pthread_join(t, NULL);
    if (job.st != INFINI_STATUS_SUCCESS || early || memcmp(got, want, N) != 0) {
        free(got);
        if (job.st != INFINI_STATUS_SUCCESS)
            TEST_FAILED_("%s: the synchronous copy failed with status %d", what, (int)job.st);
        if (early)
            TEST_FAILED_("%s: a synchronous copy finished while a blocking stream's earlier work was held", what);
        TEST_FAILED_("%s: the synchronous copy did not read what the held stream wrote", what);
    }
    free(got);
    return TEST_OK;
}

/* Busy through the plugin: a host function holds s, a copy of x into p
 * waits behind it. */
static int hold_plugin(void *s, void *p, const unsigned char *x, hold *h)
{
    h->user = NULL;
    blocker_reset(&h->blk);
    ASSERT_OK(ops->launch_host_func(0, s, block_fn, &h->blk));
    if (ops->memcpy_async(0, p, x, N, INFINIRT_PLUGIN_MEMCPY_H2D, s) != INFINI_STATUS_SUCCESS) {
        release(h);
        TEST_FAILED_("%s", "memcpy_async failed");
    }
    return TEST_OK;
}

/* Busy natively, nothing of the plugin's: a barrier on a user event holds
 * s's queue, a write of x into p (its cl_mem, or SVM) waits behind it. */
static int hold_native(void *s, void *p, const unsigned char *x, cl_context ctx, hold *h)
{
    cl_command_queue q = NULL;
    void *native = NULL;
    size_t off = 0;
    cl_int err;

    blocker_reset(&h->blk);
    ASSERT_OK(ops->stream_get_native(0, s, (void **)&q));
    ASSERT_OK(ops->mem_get_native(0, p, &native, &off));
    h->user = clCreateUserEvent(ctx, NULL);
    ASSERT(h->user != NULL);
    ASSERT_EQ(clEnqueueBarrierWithWaitList(q, 1, &h->user, NULL), CL_SUCCESS);
    if (native == p)
        err = clEnqueueSVMMemcpy(q, CL_FALSE, p, x, N, 0, NULL, NULL);
    else
        err = clEnqueueWriteBuffer(q, (cl_mem)native, CL_FALSE, off, N, x, 0, NULL, NULL);
    clFlush(q);
    if (err != CL_SUCCESS) {
        release(h);
        TEST_FAILED_("native write failed: %d", (int)err);
    }
    return TEST_OK;
}

int test_blocking_idle_busy(void)
{
    static hold h;
    unsigned char *x = malloc(N), *back = malloc(N);
    cl_context ctx = NULL;
    void *s, *p;
    int idle = 0;

    ASSERT(x && back);
    CHECK(start(NULL));
    ASSERT_OK(ops->device_get_native(0, NULL, (void **)&ctx));
    ASSERT_OK(ops->malloc_device(0, &p, N));
    ASSERT_OK(ops->stream_create(0, &s));

    /* 1. Idle after a synchronize (a synchronous copy with it idle
     *    between), then busy through the plugin. */
    ASSERT_OK(ops->memset_async(0, p, 0, N, s));
    ASSERT_OK(ops->stream_synchronize(0, s));
    ASSERT_OK(ops->memcpy(0, back, p, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    fill_pattern(x, N, 31);
    CHECK(hold_plugin(s, p, x, &h));
    CHECK(sync_copy_waits(p, x, &h, "idle after a synchronize, busy again"));

    /* 2. Idle as the last copy's marker says (it waited for it), then busy
     *    again; twice, with copies in between. */
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(ops->memcpy(0, back, p, N, INFINIRT_PLUGIN_MEMCPY_D2H));
        ASSERT_OK(ops->memset(0, p, 7, N));
        fill_pattern(x, N, 32 + (unsigned)i);
        CHECK(hold_plugin(s, p, x, &h));
        CHECK(sync_copy_waits(p, x, &h, "idle after a synchronous copy, busy again"));
    }

    /* 3. Idle as a query says, then busy again. */
    ASSERT_OK(ops->memset_async(0, p, 3, N, s));
    for (double t0 = now_ms(); !idle && now_ms() - t0 < 10000; sleep_ms(1))
        ASSERT_OK(ops->stream_query(0, s, &idle));
    ASSERT(idle);
    fill_pattern(x, N, 34);
    CHECK(hold_plugin(s, p, x, &h));
    CHECK(sync_copy_waits(p, x, &h, "idle after a query, busy again"));

    /* 4. Idle to the plugin, busy with native commands only: twice, then
     *    through the plugin again. */
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(ops->stream_synchronize(0, s));
        ASSERT_OK(ops->memcpy(0, back, p, N, INFINIRT_PLUGIN_MEMCPY_D2H));
        fill_pattern(x, N, 35 + (unsigned)i);
        CHECK(hold_native(s, p, x, ctx, &h));
        CHECK(sync_copy_waits(p, x, &h, "idle to the plugin, busy natively"));
    }
    fill_pattern(x, N, 37);
    CHECK(hold_plugin(s, p, x, &h));
    CHECK(sync_copy_waits(p, x, &h, "busy natively, then through the plugin"));

    ASSERT_OK(ops->stream_destroy(0, s));
    ASSERT_OK(ops->free_device(0, p));
    stop();
    free(x);
    free(back);
    return TEST_OK;
}

/* The calls a synchronous copy makes on an idle blocking stream's queue:
 * no marker, barrier or flush there, no barrier on the default queue (at
 * most a clFinish, which returns at once on an idle queue and is how
 * native commands are waited for).  With work of the plugin's pending,
 * a marker; once that marker is complete, none again. */
int test_blocking_idle_calls(void)
{
    enum { COPIES = 50 };
    unsigned char host[64] = {0};
    cl_command_queue qs = NULL, qd = NULL;
    cl_calls on_s, on_def;
    void *s, *p;

    CHECK(start(NULL));
    ASSERT_OK(ops->malloc_device(0, &p, 4096));
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->stream_get_native(0, s, (void **)&qs));
    ASSERT_OK(ops->stream_get_native(0, NULL, (void **)&qd));

    /* Work pending: a marker shows up (and shows the counting works). */
    cl_calls_watch(0, qs);
    ASSERT_OK(ops->memset_async(0, p, 1, 4096, s));
    ASSERT_OK(ops->memcpy(0, host, p, sizeof host, INFINIRT_PLUGIN_MEMCPY_D2H));
    on_s = cl_calls_get(0);
    if (on_s.markers < 1)
        TEST_FAILED_("%s", "no marker counted on a stream with work pending (or the counting entry points are not "
                           "the ones the plugin calls: see cl_calls.list)");

    /* More work, then idle as a synchronize, or a query, says. */
    for (int how = 0; how < 2; how++) {
        int idle = 0;

        ASSERT_OK(ops->memset_async(0, p, 2, 4096, s));
        if (how == 0)
            ASSERT_OK(ops->stream_synchronize(0, s));
        for (double t0 = now_ms(); how == 1 && !idle && now_ms() - t0 < 10000; sleep_ms(1))
            ASSERT_OK(ops->stream_query(0, s, &idle));
        cl_calls_watch(0, qs);
        cl_calls_watch(1, qd);
        for (int i = 0; i < COPIES; i++) {
            ASSERT_OK(ops->memcpy(0, p, host, sizeof host, INFINIRT_PLUGIN_MEMCPY_H2D));
            ASSERT_OK(ops->memcpy(0, host, p, sizeof host, INFINIRT_PLUGIN_MEMCPY_D2H));
            ASSERT_OK(ops->memset(0, p, 2, sizeof host));
        }
        on_s = cl_calls_get(0);
        on_def = cl_calls_get(1);
        if (on_s.markers || on_s.barriers || on_s.flushes || on_def.barriers)
            TEST_FAILED_("%d synchronous copies with a blocking stream idle after a %s: %ld markers, %ld barriers, "
                         "%ld flushes on its queue, %ld barriers on the default queue (want none)",
                         3 * COPIES, how ? "query" : "synchronize", on_s.markers, on_s.barriers, on_s.flushes,
                         on_def.barriers);
        ASSERT(on_s.finishes <= 3 * COPIES);
    }

    /* Busy, waited for by a copy's marker; idle after it. */
    ASSERT_OK(ops->memset_async(0, p, 3, 4096, s));
    cl_calls_watch(0, qs);
    ASSERT_OK(ops->memcpy(0, host, p, sizeof host, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(host[0], 3);
    for (int i = 0; i < COPIES; i++)
        ASSERT_OK(ops->memcpy(0, host, p, sizeof host, INFINIRT_PLUGIN_MEMCPY_D2H));
    on_s = cl_calls_get(0);
    if (on_s.markers > 1 || on_s.barriers)
        TEST_FAILED_("a copy behind work, then %d with the stream idle: %ld markers, %ld barriers on its queue (want "
                     "at most 1 and none)",
                     COPIES, on_s.markers, on_s.barriers);

    cl_calls_watch(0, NULL);
    cl_calls_watch(1, NULL);
    ASSERT_OK(ops->stream_destroy(0, s));
    ASSERT_OK(ops->free_device(0, p));
    stop();
    return TEST_OK;
}
