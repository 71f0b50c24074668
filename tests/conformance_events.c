/*
 * conformance_events.c - events and stream waits, written once against the
 * public API like the rest of the conformance suite.
 *
 * Each behaviour is tested in two parts.  The first needs nothing but
 * streams and events, so every backend runs it (the vendor example, which
 * has no host functions, too): records complete by a synchronize, a timed
 * pair gives a time, a re-recorded event is waited for in its new place,
 * and a stream that waits for an event sees, in the data it copies, the
 * work queued before the record on the other stream.  The second part
 * (`*_while_held`) holds a stream with a host function (tc_hold_stream) to
 * see what only a held stream shows: queries answer NOT_READY, the wait
 * keeps the other stream from running, a timing includes the held time.
 * It needs host functions and asynchronous streams, which a backend may
 * declare unsupported (common.h).
 */
#define _GNU_SOURCE
#include "common.h"

#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

int test_conformance_events(void)
{
    CHECK(tc_use_device(0));
    infinirtEvent_t a, b, never, notiming;
    infinirtEventStatus_t st;
    float ms = -1;
    ASSERT_OK(infinirtEventCreate(&a));
    ASSERT_OK(infinirtEventCreate(&b));
    ASSERT_OK(infinirtEventCreate(&never));
    ASSERT_OK(infinirtEventCreateWithFlags(&notiming, INFINIRT_EVENT_DISABLE_TIMING));
    ASSERT_STATUS(infinirtEventCreateWithFlags(&a, 0x80), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventCreate(NULL), INFINI_STATUS_NULL_POINTER);

    /* A never-recorded event is complete, and has no time. */
    ASSERT_OK(infinirtEventQuery(never, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    ASSERT_OK(infinirtEventSynchronize(never));
    ASSERT_STATUS(infinirtEventElapsedTime(&ms, never, never), INFINI_STATUS_INVALID_STATE);

    /* Records around a copy: complete once synchronised, and timed. */
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    size_t n = 16 * MiB;
    void *d1, *d2;
    ASSERT_OK(infinirtMalloc(&d1, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    ASSERT_OK(infinirtEventRecord(a, s));
    ASSERT_OK(infinirtMemcpyAsync(d2, d1, n, INFINIRT_MEMCPY_D2D, s));
    ASSERT_OK(infinirtEventRecord(b, s));
    ASSERT_OK(infinirtEventRecord(notiming, s));
    ASSERT_OK(infinirtEventSynchronize(b));
    ASSERT_OK(infinirtEventQuery(b, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    ASSERT_OK(infinirtEventQuery(a, &st)); /* recorded before b on the same stream */
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    ASSERT_OK(infinirtEventElapsedTime(&ms, a, b));
    ASSERT(ms >= 0.0f && ms < 60000.0f);
    ASSERT_OK(infinirtEventSynchronize(notiming));
    ASSERT_STATUS(infinirtEventElapsedTime(&ms, a, notiming), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtEventElapsedTime(NULL, a, b), INFINI_STATUS_NULL_POINTER);

    /* A record is complete once its stream is synchronised. */
    ASSERT_OK(infinirtMemcpyAsync(d1, d2, n, INFINIRT_MEMCPY_D2D, s));
    ASSERT_OK(infinirtEventRecord(b, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtEventQuery(b, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);

    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtEventDestroy(a));
    ASSERT_OK(infinirtEventDestroy(b));
    ASSERT_OK(infinirtEventDestroy(never));
    ASSERT_OK(infinirtEventDestroy(notiming));
    ASSERT_STATUS(infinirtEventDestroy(a), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventQuery(a, &st), INFINI_STATUS_BAD_PARAM);
    return TEST_OK;
}

/* While the stream is held, a record behind the hold is NOT_READY and has
 * no time yet; the time measured across the hold includes it. */
int test_conformance_events_while_held(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    infinirtEvent_t a, b, notiming;
    infinirtEventStatus_t st;
    float ms = -1;
    ASSERT_OK(infinirtEventCreate(&a));
    ASSERT_OK(infinirtEventCreate(&b));
    ASSERT_OK(infinirtEventCreateWithFlags(&notiming, INFINIRT_EVENT_DISABLE_TIMING));

    /* Hold the stream so the record cannot complete yet. */
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    static tc_gate gate; /* static: the runner may open it after we return */
    ASSERT_OK(infinirtEventRecord(a, s));
    CHECK(tc_hold_stream(s, &gate));
    size_t n = 16 * MiB;
    void *d1, *d2;
    ASSERT_OK(infinirtMalloc(&d1, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    ASSERT_OK(infinirtMemcpyAsync(d2, d1, n, INFINIRT_MEMCPY_D2D, s));
    ASSERT_OK(infinirtEventRecord(b, s));
    ASSERT_OK(infinirtEventRecord(notiming, s));
    ASSERT_OK(infinirtEventQuery(b, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
    ASSERT_STATUS(infinirtEventElapsedTime(&ms, a, b), INFINI_STATUS_NOT_READY);
    tc_sleep_ms(20); /* the held interval the timing must include */
    tc_gate_open(&gate);
    ASSERT_OK(infinirtEventSynchronize(b));
    ASSERT_OK(infinirtEventQuery(b, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    ASSERT_OK(infinirtEventElapsedTime(&ms, a, b));
    ASSERT(ms >= 15.0f && ms < 60000.0f);
    ASSERT_OK(infinirtEventSynchronize(notiming));

    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtEventDestroy(a));
    ASSERT_OK(infinirtEventDestroy(b));
    ASSERT_OK(infinirtEventDestroy(notiming));
    return TEST_OK;
}

/* The event is complete (query), after a synchronize of it. */
static int synced_complete(infinirtEvent_t e)
{
    infinirtEventStatus_t st;
    ASSERT_OK(infinirtEventSynchronize(e));
    ASSERT_OK(infinirtEventQuery(e, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    return TEST_OK;
}

/* What the re-record tests use: streams s and other, events e and after. */
typedef struct {
    infinirtStream_t s, other;
    infinirtEvent_t e, after;
} rerecorders;

static int rerecorders_make(rerecorders *r)
{
    ASSERT_OK(infinirtStreamCreate(&r->s));
    ASSERT_OK(infinirtStreamCreate(&r->other));
    ASSERT_OK(infinirtEventCreate(&r->e));
    ASSERT_OK(infinirtEventCreate(&r->after));
    return TEST_OK;
}

static int rerecorders_free(rerecorders *r)
{
    ASSERT_OK(infinirtEventDestroy(r->e));
    ASSERT_OK(infinirtEventDestroy(r->after));
    ASSERT_OK(infinirtStreamDestroy(r->s));
    ASSERT_OK(infinirtStreamDestroy(r->other));
    return TEST_OK;
}

/* An event recorded again after it completed is recorded anew: a stream
 * that then waits for it waits for the work before the new record, which
 * the data it copies show.  The allocator's pooled fence events are
 * re-recorded this way. */
int test_conformance_event_rerecord(void)
{
    CHECK(tc_use_device(0));
    size_t n = 8 * MiB;
    rerecorders r;
    infinirtEventStatus_t st;
    void *d, *d2;
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    CHECK(rerecorders_make(&r));
    for (int round = 0; round < 2; round++) {
        ASSERT_OK(infinirtEventRecord(r.e, r.s));
        CHECK(synced_complete(r.e));

        unsigned char v = (unsigned char)(0x31 + round);
        ASSERT_OK(infinirtMemsetAsync(d, v, n, r.s));
        ASSERT_OK(infinirtEventRecord(r.e, r.s));
        ASSERT_OK(infinirtStreamWaitEvent(r.other, r.e));
        ASSERT_OK(infinirtMemcpyAsync(d2, d, n, INFINIRT_MEMCPY_D2D, r.other));
        ASSERT_OK(infinirtEventRecord(r.after, r.other));
        CHECK(synced_complete(r.e));
        ASSERT_OK(infinirtStreamSynchronize(r.other));
        ASSERT_OK(infinirtEventQuery(r.after, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        CHECK(tc_device_all(d2, n, v)); /* `other` copied after the new record's memset */
    }
    CHECK(rerecorders_free(&r));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFree(d2));
    return TEST_OK;
}

/* An event recorded again after it completed is NOT_READY until the new
 * record completes, and a stream waiting on it waits for the new record. */
int test_conformance_event_rerecord_while_held(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    rerecorders r;
    infinirtEventStatus_t st;
    CHECK(rerecorders_make(&r));
    for (int round = 0; round < 2; round++) {
        ASSERT_OK(infinirtEventRecord(r.e, r.s));
        CHECK(synced_complete(r.e));

        static tc_gate gates[2]; /* static: the runner may open them after we return */
        tc_gate *g = &gates[round];
        CHECK(tc_hold_stream(r.s, g));
        ASSERT_OK(infinirtEventRecord(r.e, r.s));
        ASSERT_OK(infinirtStreamWaitEvent(r.other, r.e));
        ASSERT_OK(infinirtEventRecord(r.after, r.other));
        tc_sleep_ms(10); /* time for a wrong answer to show */
        ASSERT_OK(infinirtEventQuery(r.e, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
        ASSERT_OK(infinirtEventQuery(r.after, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY); /* `other` waits for the new record */
        tc_gate_open(g);
        CHECK(synced_complete(r.e));
        ASSERT_OK(infinirtStreamSynchronize(r.other));
        ASSERT_OK(infinirtEventQuery(r.after, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    }
    return rerecorders_free(&r);
}

/* What the stream-wait tests use: pinned host buffers a and b, device
 * buffers d and d2 (zeroed), streams sa and sb, events e and done. */
typedef struct {
    size_t n;
    unsigned char *a, *b;
    void *d, *d2;
    infinirtStream_t sa, sb;
    infinirtEvent_t e, done;
} waiters;

static int waiters_make(waiters *w, size_t n)
{
    w->n = n;
    ASSERT_OK(infinirtMallocHost((void **)&w->a, n));
    ASSERT_OK(infinirtMallocHost((void **)&w->b, n));
    memset(w->b, 0, n);
    ASSERT_OK(infinirtMalloc(&w->d, n));
    ASSERT_OK(infinirtMalloc(&w->d2, n));
    ASSERT_OK(infinirtMemset(w->d, 0, n));
    ASSERT_OK(infinirtMemset(w->d2, 0, n));
    ASSERT_OK(infinirtStreamCreate(&w->sa));
    ASSERT_OK(infinirtStreamCreate(&w->sb));
    ASSERT_OK(infinirtEventCreate(&w->e));
    ASSERT_OK(infinirtEventCreate(&w->done));
    return TEST_OK;
}

static int waiters_free(waiters *w)
{
    ASSERT_OK(infinirtEventDestroy(w->e));
    ASSERT_OK(infinirtEventDestroy(w->done));
    ASSERT_OK(infinirtStreamDestroy(w->sa));
    ASSERT_OK(infinirtStreamDestroy(w->sb));
    ASSERT_OK(infinirtFree(w->d));
    ASSERT_OK(infinirtFree(w->d2));
    ASSERT_OK(infinirtFreeHost(w->a));
    ASSERT_OK(infinirtFreeHost(w->b));
    return TEST_OK;
}

/* Stream B waits for an event of stream A; B's copy sees the data A wrote
 * before the record, round after round.  A fills a large buffer first, so
 * that on a backend whose streams run asynchronously A's copies are still
 * to come when B's copy is queued: without the wait B reads the last
 * round's data. */
int test_conformance_stream_wait_event(void)
{
    CHECK(tc_use_device(0));
    waiters w;
    size_t nbig = 64 * MiB, free_b = 0, total_b = 0;
    void *big;
    if (infinirtGetMemInfo(tc_device_type(), 0, &free_b, &total_b) == INFINI_STATUS_SUCCESS && total_b / 4 < nbig)
        nbig = total_b / 4 / MiB * MiB; /* small devices (the fake CUDA driver's) */
    ASSERT_GE(nbig, MiB);
    CHECK(waiters_make(&w, 1 * MiB));
    ASSERT_OK(infinirtMalloc(&big, nbig));
    for (unsigned round = 0; round < 4; round++) {
        memset(w.b, 0, w.n);
        tc_pattern(w.a, w.n, 9 + round);
        ASSERT_OK(infinirtMemsetAsync(big, (int)round, nbig, w.sa));
        ASSERT_OK(infinirtMemcpyAsync(w.d, w.a, w.n, INFINIRT_MEMCPY_H2D, w.sa));
        ASSERT_OK(infinirtMemcpyAsync(w.d2, w.d, w.n, INFINIRT_MEMCPY_D2D, w.sa));
        ASSERT_OK(infinirtEventRecord(w.e, w.sa));
        ASSERT_OK(infinirtStreamWaitEvent(w.sb, w.e));
        ASSERT_OK(infinirtMemcpyAsync(w.b, w.d2, w.n, INFINIRT_MEMCPY_D2H, w.sb));
        ASSERT_OK(infinirtStreamSynchronize(w.sb));
        ASSERT_MEM_EQ(w.a, w.b, w.n);
    }
    ASSERT_STATUS(infinirtStreamWaitEvent(w.sb, (infinirtEvent_t)w.a), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtFree(big));
    return waiters_free(&w);
}

/* Stream B waits for an event of stream A without blocking the host, and
 * runs nothing while A is held.  The host buffers are pinned: CUDA returns
 * from a D2H copy into pageable memory only when it has completed, so that
 * copy, queued behind the held stream, would block the only thread that
 * can open the gate. */
int test_conformance_stream_wait_event_while_held(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    waiters w;
    CHECK(waiters_make(&w, 4 * MiB));
    tc_pattern(w.a, w.n, 9);
    static tc_gate gate; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(w.sa, &gate));
    ASSERT_OK(infinirtMemcpyAsync(w.d, w.a, w.n, INFINIRT_MEMCPY_H2D, w.sa));
    ASSERT_OK(infinirtEventRecord(w.e, w.sa));
    ASSERT_OK(infinirtStreamWaitEvent(w.sb, w.e)); /* returns while sa is held */
    ASSERT_OK(infinirtMemcpyAsync(w.b, w.d, w.n, INFINIRT_MEMCPY_D2H, w.sb));
    ASSERT_OK(infinirtEventRecord(w.done, w.sb));
    tc_sleep_ms(10);
    infinirtEventStatus_t st;
    ASSERT_OK(infinirtEventQuery(w.done, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY); /* sb is waiting on sa */
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(w.sb));
    ASSERT_MEM_EQ(w.a, w.b, w.n);
    return waiters_free(&w);
}
