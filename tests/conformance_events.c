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

/* Every byte of device memory d equals v (read with a synchronous copy). */
static int device_all(const void *d, size_t n, unsigned char v)
{
    unsigned char *b = malloc(n);
    ASSERT(b != NULL);
    ASSERT_OK(infinirtMemcpy(b, d, n, INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < n; i++)
        if (b[i] != v)
            TEST_FAILED_("device byte %zu of %zu is 0x%02x, want 0x%02x", i, n, b[i], v);
    free(b);
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
    infinirtStream_t s, other;
    infinirtEvent_t e, after;
    infinirtEventStatus_t st;
    void *d, *d2;
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&other));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventCreate(&after));
    for (int round = 0; round < 2; round++) {
        ASSERT_OK(infinirtEventRecord(e, s));
        ASSERT_OK(infinirtEventSynchronize(e));
        ASSERT_OK(infinirtEventQuery(e, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);

        unsigned char v = (unsigned char)(0x31 + round);
        ASSERT_OK(infinirtMemsetAsync(d, v, n, s));
        ASSERT_OK(infinirtEventRecord(e, s));
        ASSERT_OK(infinirtStreamWaitEvent(other, e));
        ASSERT_OK(infinirtMemcpyAsync(d2, d, n, INFINIRT_MEMCPY_D2D, other));
        ASSERT_OK(infinirtEventRecord(after, other));
        ASSERT_OK(infinirtEventSynchronize(e));
        ASSERT_OK(infinirtEventQuery(e, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        ASSERT_OK(infinirtStreamSynchronize(other));
        ASSERT_OK(infinirtEventQuery(after, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        CHECK(device_all(d2, n, v)); /* `other` copied after the new record's memset */
    }
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtEventDestroy(after));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(other));
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
    infinirtStream_t s, other;
    infinirtEvent_t e, after;
    infinirtEventStatus_t st;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&other));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventCreate(&after));
    for (int round = 0; round < 2; round++) {
        ASSERT_OK(infinirtEventRecord(e, s));
        ASSERT_OK(infinirtEventSynchronize(e));
        ASSERT_OK(infinirtEventQuery(e, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);

        static tc_gate gates[2]; /* static: the runner may open them after we return */
        tc_gate *g = &gates[round];
        CHECK(tc_hold_stream(s, g));
        ASSERT_OK(infinirtEventRecord(e, s));
        ASSERT_OK(infinirtStreamWaitEvent(other, e));
        ASSERT_OK(infinirtEventRecord(after, other));
        tc_sleep_ms(10); /* time for a wrong answer to show */
        ASSERT_OK(infinirtEventQuery(e, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
        ASSERT_OK(infinirtEventQuery(after, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY); /* `other` waits for the new record */
        tc_gate_open(g);
        ASSERT_OK(infinirtEventSynchronize(e));
        ASSERT_OK(infinirtEventQuery(e, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        ASSERT_OK(infinirtStreamSynchronize(other));
        ASSERT_OK(infinirtEventQuery(after, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    }
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtEventDestroy(after));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(other));
    return TEST_OK;
}

/* Stream B waits for an event of stream A; B's copy sees the data A wrote
 * before the record, round after round (A's work is still running when B's
 * copy is queued on a backend whose streams run asynchronously). */
int test_conformance_stream_wait_event(void)
{
    CHECK(tc_use_device(0));
    size_t n = 4 * MiB;
    unsigned char *a, *b;
    ASSERT_OK(infinirtMallocHost((void **)&a, n));
    ASSERT_OK(infinirtMallocHost((void **)&b, n));
    void *d, *d2;
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMalloc(&d2, n));
    ASSERT_OK(infinirtMemset(d, 0, n));
    ASSERT_OK(infinirtMemset(d2, 0, n));
    infinirtStream_t sa, sb;
    infinirtEvent_t e;
    ASSERT_OK(infinirtStreamCreate(&sa));
    ASSERT_OK(infinirtStreamCreate(&sb));
    ASSERT_OK(infinirtEventCreate(&e));
    for (unsigned round = 0; round < 3; round++) {
        memset(b, 0, n);
        tc_pattern(a, n, 9 + round);
        ASSERT_OK(infinirtMemcpyAsync(d, a, n, INFINIRT_MEMCPY_H2D, sa));
        ASSERT_OK(infinirtMemcpyAsync(d2, d, n, INFINIRT_MEMCPY_D2D, sa));
        ASSERT_OK(infinirtEventRecord(e, sa));
        ASSERT_OK(infinirtStreamWaitEvent(sb, e));
        ASSERT_OK(infinirtMemcpyAsync(b, d2, n, INFINIRT_MEMCPY_D2H, sb));
        ASSERT_OK(infinirtStreamSynchronize(sb));
        ASSERT_MEM_EQ(a, b, n);
    }
    ASSERT_STATUS(infinirtStreamWaitEvent(sb, (infinirtEvent_t)a), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(sa));
    ASSERT_OK(infinirtStreamDestroy(sb));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtFreeHost(a));
    ASSERT_OK(infinirtFreeHost(b));
    return TEST_OK;
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
    size_t n = 4 * MiB;
    unsigned char *a, *b;
    ASSERT_OK(infinirtMallocHost((void **)&a, n));
    ASSERT_OK(infinirtMallocHost((void **)&b, n));
    memset(b, 0, n);
    tc_pattern(a, n, 9);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMemset(d, 0, n));
    infinirtStream_t sa, sb;
    infinirtEvent_t e, done;
    ASSERT_OK(infinirtStreamCreate(&sa));
    ASSERT_OK(infinirtStreamCreate(&sb));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventCreate(&done));
    static tc_gate gate; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(sa, &gate));
    ASSERT_OK(infinirtMemcpyAsync(d, a, n, INFINIRT_MEMCPY_H2D, sa));
    ASSERT_OK(infinirtEventRecord(e, sa));
    ASSERT_OK(infinirtStreamWaitEvent(sb, e)); /* returns while sa is held */
    ASSERT_OK(infinirtMemcpyAsync(b, d, n, INFINIRT_MEMCPY_D2H, sb));
    ASSERT_OK(infinirtEventRecord(done, sb));
    tc_sleep_ms(10);
    infinirtEventStatus_t st;
    ASSERT_OK(infinirtEventQuery(done, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY); /* sb is waiting on sa */
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(sb));
    ASSERT_MEM_EQ(a, b, n);
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtEventDestroy(done));
    ASSERT_OK(infinirtStreamDestroy(sa));
    ASSERT_OK(infinirtStreamDestroy(sb));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFreeHost(a));
    ASSERT_OK(infinirtFreeHost(b));
    return TEST_OK;
}
