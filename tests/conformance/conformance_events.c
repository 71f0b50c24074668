/* SPDX-License-Identifier: Apache-2.0 */
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

int test_conformance_events(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_EVENTS);
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
    TC_NEEDS(TC_STREAMS, TC_EVENTS);
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
    TC_NEEDS(TC_STREAMS, TC_EVENTS, TC_MEMSET);
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
    TC_NEEDS(TC_STREAMS, TC_EVENTS);
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
    TC_NEEDS(TC_STREAMS, TC_EVENTS, TC_MEMSET, TC_PINNED_MEMORY);
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
    TC_NEEDS(TC_STREAMS, TC_EVENTS, TC_MEMSET, TC_PINNED_MEMORY);
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

/* ------------------------------------- streams made after NULL-stream work */

/* A blocking stream waits for the NULL stream's earlier work however late
 * it was made, as with CUDA's legacy default stream: InfiniCore makes its
 * streams lazily, after setup work on the NULL stream.  Each round holds
 * the NULL stream (with a gate, or through a wait for a held stream),
 * queues one kind of NULL-stream action, then makes a stream and queues
 * one kind of action on it: that action must not complete while the NULL
 * stream is held, and must see the NULL stream's work once it ran. */
enum { LATER_MEMSET, LATER_COPY, LATER_HOST_FN, LATER_WAIT, LATER_RECORD, LATER_ROUNDS };

static const char *const k_later_names[LATER_ROUNDS] = {
    "NULL: MemsetAsync; later stream: D2H MemcpyAsync",
    "NULL: H2D MemcpyAsync; later stream: MemsetAsync",
    "NULL: LaunchHostFunc; later stream: LaunchHostFunc",
    "NULL: StreamWaitEvent (held stream); later stream: D2D MemcpyAsync",
    "NULL: EventRecord; later stream: EventRecord",
};

typedef struct {
    int marked; /* the NULL stream's host function ran */
    int ran;    /* the later stream's host function ran ... */
    int saw;    /* ... after the NULL stream's */
} later_probe;

static void later_mark(void *p)
{
    __atomic_store_n(&((later_probe *)p)->marked, 1, __ATOMIC_SEQ_CST);
}

static void later_look(void *p)
{
    later_probe *q = p;
    __atomic_store_n(&q->saw, __atomic_load_n(&q->marked, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
    __atomic_store_n(&q->ran, 1, __ATOMIC_SEQ_CST);
}

/* `done` stays NOT_READY for 50 ms: time for a wrong answer to show (it
 * fails as soon as it does; a slow machine can only hide it). */
static int stays_pending(infinirtEvent_t done, const char *what)
{
    for (int i = 0; i < 50; i++) {
        infinirtEventStatus_t st;
        ASSERT_OK(infinirtEventQuery(done, &st));
        if (st != INFINIRT_EVENT_NOT_READY)
            fprintf(stderr, "%s: the later stream ran while the NULL stream was held\n", what);
        ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
        tc_sleep_ms(1);
    }
    return TEST_OK;
}

/* Every byte of the device buffer d (n bytes) is v; buf is pinned scratch. */
static int device_holds(const void *d, unsigned char *buf, size_t n, unsigned char v)
{
    memset(buf, ~v, n);
    ASSERT_OK(infinirtMemcpy(buf, d, n, INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < n; i++)
        ASSERT_EQ(buf[i], v);
    return TEST_OK;
}

int test_conformance_null_orders_later_streams(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    size_t n = 1 * MiB;
    unsigned char *src, *dst;
    void *d, *d2;
    infinirtStream_t h, b;
    infinirtEvent_t ev, done;
    /* static: the runner may open the gates, and host functions may read
     * the probe, after we return */
    static tc_gate gates[LATER_ROUNDS];
    static later_probe probe;
    ASSERT_OK(infinirtMallocHost((void **)&src, n));
    ASSERT_OK(infinirtMallocHost((void **)&dst, n));
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    ASSERT_OK(tc_stream_create_nonblocking(&h));
    ASSERT_OK(infinirtEventCreate(&ev));
    ASSERT_OK(infinirtEventCreate(&done));
    memset(src, 0xAB, n);
    for (int r = 0; r < LATER_ROUNDS; r++) {
        memset(&probe, 0, sizeof probe);
        memset(dst, 0, n);
        ASSERT_OK(infinirtMemset(d, 0, n));
        ASSERT_OK(infinirtMemset(d2, 0, n));

        /* The NULL stream's action, held. */
        CHECK(tc_hold_stream(r == LATER_WAIT ? h : NULL, &gates[r]));
        switch (r) {
        case LATER_MEMSET:
            ASSERT_OK(infinirtMemsetAsync(d, 0xAB, n, NULL));
            break;
        case LATER_COPY:
            ASSERT_OK(infinirtMemcpyAsync(d, src, n, INFINIRT_MEMCPY_H2D, NULL));
            break;
        case LATER_HOST_FN:
            ASSERT_OK(infinirtLaunchHostFunc(NULL, later_mark, &probe));
            break;
        case LATER_WAIT: /* h is non-blocking: only the wait orders it */
            ASSERT_OK(infinirtMemsetAsync(d, 0xAB, n, h));
            ASSERT_OK(infinirtEventRecord(ev, h));
            ASSERT_OK(infinirtStreamWaitEvent(NULL, ev));
            break;
        default:
            ASSERT_OK(infinirtMemsetAsync(d, 0xAB, n, NULL));
            ASSERT_OK(infinirtEventRecord(ev, NULL));
            break;
        }

        /* A blocking stream made now, and its first action. */
        ASSERT_OK(infinirtStreamCreate(&b));
        switch (r) {
        case LATER_MEMSET:
            ASSERT_OK(infinirtMemcpyAsync(dst, d, n, INFINIRT_MEMCPY_D2H, b));
            break;
        case LATER_COPY:
            ASSERT_OK(infinirtMemsetAsync(d, 0xCD, n, b));
            break;
        case LATER_HOST_FN:
            ASSERT_OK(infinirtLaunchHostFunc(b, later_look, &probe));
            break;
        case LATER_WAIT:
            ASSERT_OK(infinirtMemcpyAsync(d2, d, n, INFINIRT_MEMCPY_D2D, b));
            break;
        default:
            break; /* the record below is its first action */
        }
        ASSERT_OK(infinirtEventRecord(done, b));
        CHECK(stays_pending(done, k_later_names[r]));
        if (r == LATER_MEMSET)
            ASSERT_EQ(dst[0], 0); /* the copy has not run */

        tc_gate_open(&gates[r]);
        ASSERT_OK(infinirtStreamSynchronize(b));
        ASSERT_OK(infinirtStreamSynchronize(NULL));
        ASSERT_OK(infinirtStreamSynchronize(h));
        switch (r) {
        case LATER_MEMSET:
            for (size_t i = 0; i < n; i++)
                ASSERT_EQ(dst[i], 0xAB);
            break;
        case LATER_COPY: /* the later stream's fill came last */
            CHECK(device_holds(d, dst, n, 0xCD));
            break;
        case LATER_HOST_FN:
            ASSERT_EQ(__atomic_load_n(&probe.ran, __ATOMIC_SEQ_CST), 1);
            ASSERT_EQ(__atomic_load_n(&probe.saw, __ATOMIC_SEQ_CST), 1);
            break;
        case LATER_WAIT:
            CHECK(device_holds(d2, dst, n, 0xAB));
            break;
        default:
            break;
        }
        ASSERT_OK(infinirtStreamDestroy(b));
    }
    ASSERT_OK(infinirtEventDestroy(ev));
    ASSERT_OK(infinirtEventDestroy(done));
    ASSERT_OK(infinirtStreamDestroy(h));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtFreeHost(src));
    ASSERT_OK(infinirtFreeHost(dst));
    return TEST_OK;
}

/* A non-blocking stream made after NULL-stream work does not wait for it:
 * its copy completes while the NULL stream is held. */
int test_conformance_null_spares_nonblocking(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    size_t n = 64 * 1024;
    unsigned char *dst;
    void *d;
    infinirtStream_t nb;
    infinirtEvent_t held;
    infinirtEventStatus_t st;
    static tc_gate gate; /* static: the runner may open it after we return */
    ASSERT_OK(infinirtMallocHost((void **)&dst, n));
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtEventCreate(&held));
    ASSERT_OK(infinirtMemset(d, 0x11, n));
    memset(dst, 0, n);

    CHECK(tc_hold_stream(NULL, &gate));
    ASSERT_OK(infinirtMemsetAsync(d, 0xAB, n, NULL));
    ASSERT_OK(infinirtEventRecord(held, NULL));
    infiniStatus_t made = infinirtStreamCreateWithFlags(&nb, INFINIRT_STREAM_NON_BLOCKING);
    if (made != INFINI_STATUS_NOT_IMPLEMENTED) { /* else every stream is blocking: nothing to check */
        ASSERT_OK(made);
        ASSERT_OK(infinirtMemcpyAsync(dst, d, n, INFINIRT_MEMCPY_D2H, nb));
        ASSERT_OK(infinirtStreamSynchronize(nb)); /* returns while NULL is held */
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(dst[i], 0x11);
        ASSERT_OK(infinirtEventQuery(held, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
        ASSERT_OK(infinirtStreamDestroy(nb));
    }
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(NULL));
    ASSERT_OK(infinirtEventQuery(held, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    ASSERT_OK(infinirtEventDestroy(held));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFreeHost(dst));
    return TEST_OK;
}

/* Whether e completes within ms milliseconds (polled).  Used while a
 * stream is held: work ordered behind the hold must not complete, and a
 * slow machine can only make a wrong order harder to see, never make a
 * right one fail. */
static int completes_within(infinirtEvent_t e, int ms, int *done)
{
    infinirtEventStatus_t st = INFINIRT_EVENT_NOT_READY;
    for (int t = 0; t <= ms; t++) {
        ASSERT_OK(infinirtEventQuery(e, &st));
        if (st == INFINIRT_EVENT_COMPLETE)
            break;
        tc_sleep_ms(1);
    }
    *done = st == INFINIRT_EVENT_COMPLETE;
    return TEST_OK;
}

/* What the NULL-stream wait tests use: blocking streams s3 and s4, events
 * e0 (the one waited for) and done, device buffer d (zeroed), pinned host
 * buffers h5, h7, h9. */
typedef struct {
    size_t n;
    infinirtStream_t s3, s4;
    infinirtEvent_t e0, done;
    void *d;
    unsigned char *h5, *h7, *h9;
} null_waiters;

static int null_waiters_make(null_waiters *w, size_t n)
{
    w->n = n;
    ASSERT_OK(infinirtStreamCreate(&w->s3));
    ASSERT_OK(infinirtStreamCreate(&w->s4));
    ASSERT_OK(infinirtEventCreate(&w->e0));
    ASSERT_OK(infinirtEventCreate(&w->done));
    ASSERT_OK(infinirtMalloc(&w->d, n));
    ASSERT_OK(infinirtMemset(w->d, 0, n));
    /* Pinned: a copy of pageable memory queued behind a held stream may
     * not return before it has run (CUDA's D2H), which would block the
     * only thread that can open the gate. */
    ASSERT_OK(infinirtMallocHost((void **)&w->h5, n));
    ASSERT_OK(infinirtMallocHost((void **)&w->h7, n));
    ASSERT_OK(infinirtMallocHost((void **)&w->h9, n));
    tc_pattern(w->h5, n, 5);
    tc_pattern(w->h9, n, 9);
    memset(w->h7, 0, n);
    return TEST_OK;
}

static int null_waiters_free(null_waiters *w)
{
    ASSERT_OK(infinirtEventDestroy(w->e0));
    ASSERT_OK(infinirtEventDestroy(w->done));
    ASSERT_OK(infinirtStreamDestroy(w->s3));
    ASSERT_OK(infinirtStreamDestroy(w->s4));
    ASSERT_OK(infinirtFree(w->d));
    ASSERT_OK(infinirtFreeHost(w->h5));
    ASSERT_OK(infinirtFreeHost(w->h7));
    ASSERT_OK(infinirtFreeHost(w->h9));
    return TEST_OK;
}

/* A StreamWaitEvent on the NULL stream is work of the NULL stream even
 * when the record it waits for has already completed (docs/semantics.md,
 * R2; CUDA: "when an action is taken in the legacy stream such as ...
 * cudaStreamWaitEvent(), the legacy stream first waits on all blocking
 * streams, the action is queued in the legacy stream, and then all
 * blocking streams wait on the legacy stream").  So it comes after the
 * work queued on every blocking stream, and work queued on a blocking
 * stream afterwards comes after it.  The two programs are the ones
 * infinirt-semantics shrank (seeds 2000008 and 1184), with a held stream
 * in place of their host functions' sleeps. */
int test_conformance_null_wait_orders_blocking(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    null_waiters w;
    int early;
    CHECK(null_waiters_make(&w, 64 * 1024));

    /* (a) s3's copy is held; e0 is recorded on s4 and complete.  The NULL
     * wait comes after s3's copy, and s4's fill after the NULL wait: the
     * fill lands last. */
    static tc_gate ga; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(w.s3, &ga));
    ASSERT_OK(infinirtMemcpyAsync(w.d, w.h5, w.n, INFINIRT_MEMCPY_H2D, w.s3));
    ASSERT_OK(infinirtEventRecord(w.e0, w.s4));
    ASSERT_OK(infinirtEventSynchronize(w.e0)); /* the record is complete before the wait */
    ASSERT_OK(infinirtStreamWaitEvent(NULL, w.e0));
    ASSERT_OK(infinirtMemsetAsync(w.d, 0xaa, w.n, w.s4));
    ASSERT_OK(infinirtEventRecord(w.done, w.s4));
    CHECK(completes_within(w.done, 50, &early));
    tc_gate_open(&ga);
    ASSERT_EQ(early, 0); /* s4's fill ran while s3's copy was held */
    ASSERT_OK(infinirtDeviceSynchronize());
    CHECK(tc_device_all(w.d, w.n, 0xaa));

    /* (b) e0 is recorded on the NULL stream and complete; s4 (held) copies
     * h5 in and back out to h7.  The NULL wait comes after s4's copies,
     * and s3's copy of h9 after the NULL wait: h7 holds h5's bytes. */
    ASSERT_OK(infinirtEventRecord(w.e0, NULL));
    ASSERT_OK(infinirtEventSynchronize(w.e0));
    static tc_gate gb;
    CHECK(tc_hold_stream(w.s4, &gb));
    ASSERT_OK(infinirtMemcpyAsync(w.d, w.h5, w.n, INFINIRT_MEMCPY_H2D, w.s4));
    ASSERT_OK(infinirtMemcpyAsync(w.h7, w.d, w.n, INFINIRT_MEMCPY_D2H, w.s4));
    ASSERT_OK(infinirtStreamWaitEvent(NULL, w.e0));
    ASSERT_OK(infinirtMemcpyAsync(w.d, w.h9, w.n, INFINIRT_MEMCPY_H2D, w.s3));
    ASSERT_OK(infinirtEventRecord(w.done, w.s3));
    CHECK(completes_within(w.done, 50, &early));
    tc_gate_open(&gb);
    ASSERT_EQ(early, 0); /* s3's copy ran while s4's copies were held */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_MEM_EQ(w.h7, w.h5, w.n);
    memset(w.h7, 0, w.n);
    ASSERT_OK(infinirtMemcpy(w.h7, w.d, w.n, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(w.h7, w.h9, w.n);

    return null_waiters_free(&w);
}

/* The same rule seen from a blocking stream.  A StreamWaitEvent there is
 * not itself ordered after the NULL stream's earlier work: on real CUDA a
 * StreamSynchronize of a blocking stream whose last work is a wait returns
 * while the NULL stream is held, whether the record was complete or
 * pending at the wait (an H200, driver 580.159.04; docs/cuda.md, "The
 * ordering model against the driver").  But the wait stands in for nothing:
 * work queued on the stream after it is still ordered after the NULL
 * stream's work (R2), here a record after a wait for a complete record. */
int test_conformance_wait_then_record_after_null(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    infinirtStream_t s;
    infinirtEvent_t e, done;
    int early;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventCreate(&done));
    ASSERT_OK(infinirtEventRecord(e, s));
    ASSERT_OK(infinirtEventSynchronize(e));
    static tc_gate gate; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(NULL, &gate));
    ASSERT_OK(infinirtStreamWaitEvent(s, e));
    ASSERT_OK(infinirtEventRecord(done, s));
    CHECK(completes_within(done, 50, &early));
    tc_gate_open(&gate);
    ASSERT_EQ(early, 0); /* the record after the wait completed while the NULL stream was held */
    ASSERT_OK(infinirtEventSynchronize(done));
    ASSERT_OK(infinirtEventDestroy(done));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* ------------------------------------------------- which record a call binds
 * A StreamWaitEvent waits for the record current when it is called, as on
 * CUDA: a later record of the event, wherever it is queued and whenever it
 * completes, neither releases a wait already queued nor holds it back.
 * EventQuery and EventSynchronize look at the record current when they
 * are called.  Each test holds the first record's stream with a gate, so
 * a wait released too early shows as a stream that runs while the gate is
 * closed (polled for a while: no load can make a right answer wrong), and
 * in the data it copies once the gate is open. */

#define BIND_BYTES ((size_t)64 << 10)
#define BIND_POLL_MS 100 /* how long a wrong release has to show */

/* `e` stays NOT_READY for BIND_POLL_MS; fails at the first COMPLETE. */
static int stays_not_ready(infinirtEvent_t e, const char *what)
{
    infinirtEventStatus_t st;
    for (int i = 0; i < BIND_POLL_MS; i++) {
        ASSERT_OK(infinirtEventQuery(e, &st));
        if (st != INFINIRT_EVENT_NOT_READY)
            TEST_FAILED_("%s completed while the stream it waits for was held (after %d ms)", what, i);
        tc_sleep_ms(1);
    }
    return TEST_OK;
}

static int event_is(infinirtEvent_t e, infinirtEventStatus_t want)
{
    infinirtEventStatus_t st;
    ASSERT_OK(infinirtEventQuery(e, &st));
    ASSERT_EQ(st, want);
    return TEST_OK;
}

/* Every byte of the n bytes at h is v. */
static int host_all(const unsigned char *h, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] != v)
            TEST_FAILED_("host byte %zu of %zu is 0x%02x, want 0x%02x", i, n, h[i], v);
    return TEST_OK;
}

/* What the binding tests use, all of device 0: a device buffer d the held
 * stream s1 fills and a pinned host buffer h the waiting stream s2 copies
 * it into (zeroed), a third stream s3, the event ev that s2 waits for and
 * `done`, recorded on s2 behind the wait. */
typedef struct {
    unsigned char *h;
    void *d;
    infinirtStream_t s1, s2, s3;
    infinirtEvent_t ev, done;
} binders;

/* nonblocking: s1 and s2 are INFINIRT_STREAM_NON_BLOCKING, so that a
 * record on the NULL stream does not wait for the held s1. */
static int binders_make(binders *b, bool nonblocking)
{
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtMallocHost((void **)&b->h, BIND_BYTES));
    memset(b->h, 0, BIND_BYTES);
    ASSERT_OK(infinirtMalloc(&b->d, BIND_BYTES));
    ASSERT_OK(infinirtMemset(b->d, 0, BIND_BYTES));
    if (nonblocking) {
        ASSERT_OK(tc_stream_create_nonblocking(&b->s1));
        ASSERT_OK(tc_stream_create_nonblocking(&b->s2));
    } else {
        ASSERT_OK(infinirtStreamCreate(&b->s1));
        ASSERT_OK(infinirtStreamCreate(&b->s2));
    }
    ASSERT_OK(infinirtStreamCreate(&b->s3));
    ASSERT_OK(infinirtEventCreate(&b->ev));
    ASSERT_OK(infinirtEventCreate(&b->done));
    return TEST_OK;
}

static int binders_free(binders *b)
{
    ASSERT_OK(infinirtEventDestroy(b->ev));
    ASSERT_OK(infinirtEventDestroy(b->done));
    ASSERT_OK(infinirtStreamDestroy(b->s1));
    ASSERT_OK(infinirtStreamDestroy(b->s2));
    ASSERT_OK(infinirtStreamDestroy(b->s3));
    ASSERT_OK(infinirtFree(b->d));
    ASSERT_OK(infinirtFreeHost(b->h));
    return TEST_OK;
}

/* s1: gate, fill d with 0xAB, record ev; s2 waits for that record. */
static int bind_first_record(binders *b, tc_gate *g)
{
    CHECK(tc_hold_stream(b->s1, g));
    ASSERT_OK(infinirtMemsetAsync(b->d, 0xAB, BIND_BYTES, b->s1));
    ASSERT_OK(infinirtEventRecord(b->ev, b->s1));
    ASSERT_OK(infinirtStreamWaitEvent(b->s2, b->ev));
    return TEST_OK;
}

/* s2, behind its wait: copy d into h and record done; done stays
 * NOT_READY while the gate is closed; once it is open, h holds s1's fill. */
static int bind_check_waiter(binders *b, tc_gate *g)
{
    ASSERT_OK(infinirtMemcpyAsync(b->h, b->d, BIND_BYTES, INFINIRT_MEMCPY_D2H, b->s2));
    ASSERT_OK(infinirtEventRecord(b->done, b->s2));
    CHECK(stays_not_ready(b->done, "the stream waiting for the first record"));
    tc_gate_open(g);
    ASSERT_OK(infinirtStreamSynchronize(b->s2));
    CHECK(event_is(b->done, INFINIRT_EVENT_COMPLETE));
    CHECK(host_all(b->h, BIND_BYTES, 0xAB));
    ASSERT_OK(infinirtStreamSynchronize(b->s1));
    return TEST_OK;
}

/* The event recorded again, on an idle stream, right after the wait: the
 * new record completes (EventSynchronize waits for it alone), and the
 * waiting stream still waits for the held one.  Then with the waiting stream on device 1 (when there is
 * one), and with the re-record on the NULL stream (s1 and s2 not
 * blocking, so that the NULL stream's record does not wait for s1). */
int test_conformance_wait_binds_current_record(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    int ndev = 0;
    ASSERT_OK(infinirtGetDeviceCount(tc_device_type(), &ndev));
    static tc_gate gates[3]; /* static: the runner may open them after we return */
    for (int round = 0; round < 3; round++) {
        binders b;
        CHECK(binders_make(&b, round == 2));
        tc_gate *g = &gates[round];
        if (round == 1) {
            if (ndev < 2) {
                CHECK(binders_free(&b));
                continue;
            }
            /* s2 and done on device 1; the copy becomes a fill there
             * (device 0's memory may not be reachable from it). */
            ASSERT_OK(infinirtStreamDestroy(b.s2));
            ASSERT_OK(infinirtEventDestroy(b.done));
            CHECK(tc_use_device(1));
            ASSERT_OK(infinirtStreamCreate(&b.s2));
            ASSERT_OK(infinirtEventCreate(&b.done));
            void *d1;
            ASSERT_OK(infinirtMalloc(&d1, BIND_BYTES));
            CHECK(tc_use_device(0));
            CHECK(bind_first_record(&b, g));
            ASSERT_OK(infinirtEventRecord(b.ev, b.s3));
            ASSERT_OK(infinirtMemsetAsync(d1, 0x5A, BIND_BYTES, b.s2));
            ASSERT_OK(infinirtEventRecord(b.done, b.s2));
            CHECK(stays_not_ready(b.done, "a stream of device 1 waiting for the first record"));
            tc_gate_open(g);
            ASSERT_OK(infinirtStreamSynchronize(b.s2));
            CHECK(event_is(b.done, INFINIRT_EVENT_COMPLETE));
            CHECK(tc_use_device(1));
            CHECK(tc_device_all(d1, BIND_BYTES, 0x5A));
            ASSERT_OK(infinirtFree(d1));
            CHECK(tc_use_device(0));
            CHECK(tc_device_all(b.d, BIND_BYTES, 0xAB));
            CHECK(binders_free(&b));
            continue;
        }
        CHECK(bind_first_record(&b, g));
        ASSERT_OK(infinirtEventRecord(b.ev, round == 2 ? NULL : b.s3));
        /* The event stands for the new record now, which completes
         * though s1 is held. */
        ASSERT_OK(infinirtEventSynchronize(b.ev));
        CHECK(event_is(b.ev, INFINIRT_EVENT_COMPLETE));
        CHECK(bind_check_waiter(&b, g));
        CHECK(binders_free(&b));
    }
    return TEST_OK;
}

/* The event recorded again on another stream behind work of its own (a
 * large fill: not a second gate, since a backend may run the host
 * functions of all streams on one thread, as CUDA may): the new record is
 * queued, completes first (EventSynchronize waits for it alone), and the
 * waiting stream still waits for the first. */
int test_conformance_wait_binds_other_stream(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    size_t nbig = 64 * MiB, free_b = 0, total_b = 0;
    if (infinirtGetMemInfo(tc_device_type(), 0, &free_b, &total_b) == INFINI_STATUS_SUCCESS && total_b / 4 < nbig)
        nbig = total_b / 4 / MiB * MiB; /* small devices (the fake CUDA driver's) */
    ASSERT_GE(nbig, MiB);
    binders b;
    CHECK(binders_make(&b, false));
    void *big;
    ASSERT_OK(infinirtMalloc(&big, nbig));
    static tc_gate g1; /* static: the runner may open it after we return */
    CHECK(bind_first_record(&b, &g1));
    ASSERT_OK(infinirtMemsetAsync(big, 0x11, nbig, b.s3));
    ASSERT_OK(infinirtEventRecord(b.ev, b.s3));
    ASSERT_OK(infinirtEventSynchronize(b.ev)); /* the record on s3; s1 is still held */
    CHECK(event_is(b.ev, INFINIRT_EVENT_COMPLETE));
    CHECK(bind_check_waiter(&b, &g1));
    ASSERT_OK(infinirtFree(big));
    return binders_free(&b);
}

/* The event recorded again on the same stream, behind a second gate: the
 * waiting stream runs once the first record is complete, without waiting
 * for the second, and sees the data as the first record left it. */
int test_conformance_wait_binds_same_stream(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    binders b;
    CHECK(binders_make(&b, false));
    static tc_gate g1, g2; /* static: the runner may open them after we return */
    CHECK(bind_first_record(&b, &g1));
    CHECK(tc_hold_stream(b.s1, &g2));
    ASSERT_OK(infinirtMemsetAsync(b.d, 0xCD, BIND_BYTES, b.s1));
    ASSERT_OK(infinirtEventRecord(b.ev, b.s1));
    ASSERT_OK(infinirtMemcpyAsync(b.h, b.d, BIND_BYTES, INFINIRT_MEMCPY_D2H, b.s2));
    ASSERT_OK(infinirtEventRecord(b.done, b.s2));
    CHECK(stays_not_ready(b.done, "the stream waiting for the first record"));
    tc_gate_open(&g1);
    /* Waiting for the second record would hang here until g2 times out. */
    ASSERT_OK(infinirtStreamSynchronize(b.s2));
    CHECK(host_all(b.h, BIND_BYTES, 0xAB));
    CHECK(event_is(b.ev, INFINIRT_EVENT_NOT_READY)); /* the second record, behind g2 */
    tc_gate_open(&g2);
    ASSERT_OK(infinirtEventSynchronize(b.ev));
    CHECK(tc_device_all(b.d, BIND_BYTES, 0xCD));
    return binders_free(&b);
}

/* Opens a gate after a short while, from another thread: a call on the
 * main thread that waits for the gated work is made before it opens. */
static void *open_later(void *gate)
{
    tc_sleep_ms(30);
    tc_gate_open(gate);
    return NULL;
}

/* EventQuery and EventSynchronize answer for the record current at the
 * call: after a re-record on an idle stream the event completes though the
 * first record is held; a re-record behind a gate is not complete though
 * an earlier record completed after it was made (and a stream that waits
 * for the event then waits for it); a synchronize does not wait for work
 * queued behind its record. */
int test_conformance_sync_binds_current_record(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    binders b;
    CHECK(binders_make(&b, false));
    static tc_gate g1, g3, g4, g5; /* static: the runner may open them after we return */
    CHECK(tc_hold_stream(b.s1, &g1));
    ASSERT_OK(infinirtEventRecord(b.ev, b.s1));
    CHECK(event_is(b.ev, INFINIRT_EVENT_NOT_READY));
    ASSERT_OK(infinirtEventRecord(b.ev, b.s3));
    ASSERT_OK(infinirtEventSynchronize(b.ev)); /* returns though s1 is held */
    CHECK(event_is(b.ev, INFINIRT_EVENT_COMPLETE));

    /* s3 held, and the event recorded there after s1's (still held)
     * record: when s1 is let go, its record completes, the event's does
     * not.  s1's gate runs first: a backend may run host functions one at
     * a time (CUDA may), so s3's must queue behind it, not overtake it. */
    for (int i = 0; !__atomic_load_n(&g1.reached, __ATOMIC_SEQ_CST); i++) {
        ASSERT(i < 30000);
        tc_sleep_ms(1);
    }
    CHECK(tc_hold_stream(b.s3, &g3));
    ASSERT_OK(infinirtEventRecord(b.ev, b.s1));
    ASSERT_OK(infinirtEventRecord(b.ev, b.s3));
    tc_gate_open(&g1);
    ASSERT_OK(infinirtStreamSynchronize(b.s1));
    CHECK(event_is(b.ev, INFINIRT_EVENT_NOT_READY));
    ASSERT_OK(infinirtStreamWaitEvent(b.s2, b.ev));
    ASSERT_OK(infinirtEventRecord(b.done, b.s2));
    CHECK(stays_not_ready(b.done, "a stream waiting for the record on the held s3"));
    tc_gate_open(&g3);
    ASSERT_OK(infinirtEventSynchronize(b.ev));
    CHECK(event_is(b.ev, INFINIRT_EVENT_COMPLETE));
    ASSERT_OK(infinirtStreamSynchronize(b.s2));
    CHECK(event_is(b.done, INFINIRT_EVENT_COMPLETE));

    /* s1: gate g4, the record, gate g5.  The synchronize, made while g4
     * holds the record, returns once g4 opens, g5 still closed (waiting
     * for s1's later work would last until g5 timed out). */
    CHECK(tc_hold_stream(b.s1, &g4));
    ASSERT_OK(infinirtEventRecord(b.ev, b.s1));
    CHECK(tc_hold_stream(b.s1, &g5));
    pthread_t opener;
    ASSERT_EQ(pthread_create(&opener, NULL, open_later, &g4), 0);
    ASSERT_OK(infinirtEventSynchronize(b.ev));
    CHECK(event_is(b.ev, INFINIRT_EVENT_COMPLETE));
    ASSERT_EQ(pthread_join(opener, NULL), 0);
    tc_gate_open(&g5);
    ASSERT_OK(infinirtStreamSynchronize(b.s1));
    return binders_free(&b);
}

/* An EventRecord on the NULL stream is work of the NULL stream too (R2):
 * it comes after the work queued on every blocking stream, and the work
 * a blocking stream queues afterwards comes after it - on a stream that
 * existed at the record and on one made after it, when the record is the
 * only NULL-stream work still pending.  infinirt-semantics shrank this
 * from seed 6000017 (opencl-auto), with a held stream in place of its
 * host functions' sleeps: s holds its fill of 0x49 behind a gate, the
 * NULL record comes after it, and the 0xaa fills on `early` and `late`
 * must come after the record, so they land last. */
int test_conformance_null_record_orders_blocking(void)
{
    CHECK(tc_use_device(0));
    CHECK(tc_needs_async());
    const size_t n = 64 * 1024;
    infinirtStream_t s, early, late;
    infinirtEvent_t e, done_early, done_late;
    void *d1, *d2;
    int ran_early, ran_late;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&early));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventCreate(&done_early));
    ASSERT_OK(infinirtEventCreate(&done_late));
    ASSERT_OK(infinirtMalloc(&d1, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    ASSERT_OK(infinirtMemset(d1, 0, n));
    ASSERT_OK(infinirtMemset(d2, 0, n));
    /* Nothing of the NULL stream is pending from here on but the record. */
    ASSERT_OK(infinirtDeviceSynchronize());

    static tc_gate gate; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(s, &gate));
    ASSERT_OK(infinirtMemsetAsync(d1, 0x49, n, s));
    ASSERT_OK(infinirtMemsetAsync(d2, 0x49, n, s));
    ASSERT_OK(infinirtEventRecord(e, NULL)); /* after s's fills */
    ASSERT_OK(infinirtStreamCreate(&late));
    ASSERT_OK(infinirtMemsetAsync(d1, 0xaa, n, early)); /* after the record */
    ASSERT_OK(infinirtEventRecord(done_early, early));
    ASSERT_OK(infinirtMemsetAsync(d2, 0xaa, n, late)); /* after the record */
    ASSERT_OK(infinirtEventRecord(done_late, late));
    CHECK(completes_within(done_early, 50, &ran_early));
    CHECK(completes_within(done_late, 0, &ran_late));
    tc_gate_open(&gate);
    ASSERT_EQ(ran_early, 0); /* a stream made before the record ran while s was held */
    ASSERT_EQ(ran_late, 0);  /* a stream made after the record ran while s was held */
    ASSERT_OK(infinirtDeviceSynchronize());
    CHECK(tc_device_all(d1, n, 0xaa));
    CHECK(tc_device_all(d2, n, 0xaa));

    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtEventDestroy(done_early));
    ASSERT_OK(infinirtEventDestroy(done_late));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(early));
    ASSERT_OK(infinirtStreamDestroy(late));
    ASSERT_OK(infinirtFree(d1));
    ASSERT_OK(infinirtFree(d2));
    return TEST_OK;
}
