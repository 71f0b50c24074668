/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_order.c - blocking streams, ordered with the default stream as CUDA
 * orders streams with its legacy default stream (InfiniCore relies on it:
 * a synchronous D2H after kernels on its own stream reads their results).
 *
 *  before: work on the default queue (and a synchronous copy or fill, which
 *          runs there) waits for everything already queued on the device's
 *          blocking queues.  A marker on each blocking queue captures that
 *          work, queued through the plugin or natively by the application;
 *          markers already complete are dropped, and the default queue gets
 *          one barrier on the rest, or none when all were complete.
 *  idle:   a synchronous operation (copy, fill, synchronize of the default
 *          stream) need not leave the host free while it waits, and most
 *          blocking streams hold nothing by then.  Each blocking stream
 *          counts the commands the plugin queued on it (queued, once
 *          queued) and how many are known complete (settled: advanced by a
 *          synchronize or an idle query of the stream, and by a marker of
 *          "before" seen complete - at once, or as the stream's probe at a
 *          later "before").  Where the two are equal, a synchronous
 *          operation calls clFinish on the queue instead of a marker: it
 *          waits for native commands too, and on an idle queue returns at
 *          once (16 ns on PoCL, where a marker on an idle queue is still
 *          pending when enqueued, and the barrier on it made a 64 B copy
 *          wait for PoCL's driver thread: 2.9-6.4x the instructions of a
 *          direct blocking write with one to four idle streams, now
 *          1.2-1.5x; docs/performance.md).  The counts only choose between
 *          the two ways: clFinish is right whatever they say.  It may also
 *          wait for commands another thread queues while it runs (PoCL's
 *          returns when the queue is empty): more order than the rules ask,
 *          and only where the application's native commands keep the
 *          stream busy, as a stream with work of ours pending gets the
 *          marker.
 *  after:  asynchronous work queued on the default queue - an event record
 *          included, which is work of the stream as a copy is (CUDA's
 *          legacy stream; docs/semantics.md, R2) - is waited for by
 *          whatever the blocking queues get later: a marker on the default
 *          queue (a record's own marker serves) and a barrier on each
 *          blocking queue, unless that marker is already complete.  The
 *          barrier goes in eagerly because work the application queues
 *          natively on a blocking queue passes no code of ours.
 *          Synchronous operations need no "after": they have completed when
 *          the call returns.
 *  join:   a blocking stream made later starts behind the default queue's
 *          earlier asynchronous work: "after" only reached the blocking
 *          queues that existed then (none, while the device had none).
 *          "after" counts that work (default_queued) and a synchronize of
 *          the default stream or the device notes how much of it it saw
 *          complete (default_drained).  While the two differ, the new
 *          stream is joined: a marker on the default queue captures the
 *          work, and the new queue's first command is a barrier on it,
 *          unless the marker is already complete.  Otherwise creation
 *          queues nothing (a marker, its flush and its status cost 20-30 us
 *          on PoCL on the 2-core VM, and the barrier a clFinish more).  The
 *          synchronous copy and fill pay nothing for it; asynchronous
 *          default-stream work pays one atomic add.
 *
 * Non-blocking streams take part in none of it.  Work the application queues
 * natively on the default queue itself is seen by "before" (it precedes the
 * barrier in the queue) but starts no "after".
 *
 * No cycle can form: every wait list names events that were already queued
 * when the waiting command is queued, so waits only point back in time.
 * The device lock is held while markers and barriers are queued (they do
 * not block), so no queue is destroyed under us; a queue to clFinish is
 * retained and finished after the lock is released.
 *
 * A default-stream action on one thread and a stream creation on another:
 * "after" adds to default_queued, then reads blocking_streams; creation
 * adds to blocking_streams (linking the stream), then reads default_queued.
 * All four are sequentially consistent, so at least one side sees the
 * other: the action is counted and joined, or "after" finds the stream on
 * the list.  (Both are read-modify-writes or plain loads: on x86 the
 * ordering costs no extra instruction.)
 */
#include "opencl_internal.h"

#include <stdlib.h>

/* 1: done (completed, or terminated by an earlier failure: nothing left to
 * wait for), 0: pending. */
static int settled(cl_event e)
{
    cl_int status = CL_QUEUED;

    if (clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) != CL_SUCCESS)
        return 0; /* wait for it: never skip a wait on doubt */
    return status == CL_COMPLETE || status < 0;
}

static int is_default(const opencl__stream *s)
{
    return s == &s->dev->default_stream;
}

/* Only forward: a slower wait may report an older count. */
static void advance(_Atomic uint64_t *v, uint64_t to)
{
    uint64_t was = atomic_load_explicit(v, memory_order_relaxed);

    while (was < to &&
           !atomic_compare_exchange_weak_explicit(v, &was, to, memory_order_relaxed, memory_order_relaxed))
        ;
}

void opencl__order_settled(opencl__stream *s, uint64_t queued)
{
    advance(&s->settled, queued);
}

void opencl__order_forget(opencl__stream *s)
{
    if (s->probe != NULL)
        clReleaseEvent(s->probe);
    s->probe = NULL;
}

/* What "before" leaves to do once the device lock is released: a marker
 * the default queue waits for, or a queue to finish. */
typedef struct {
    cl_event mark;
    cl_command_queue finish;
} pending;

static infiniStatus_t before(opencl__stream *s, int sync)
{
    opencl__device *d = s->dev;
    pending local[8], *p = local;
    cl_event marks[8], *wait = marks;
    size_t n = 0, nmarks = 0, cap = sizeof local / sizeof local[0];
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    cl_int err;

    if (!is_default(s) || atomic_load_explicit(&d->blocking_streams, memory_order_acquire) == 0)
        return INFINI_STATUS_SUCCESS;

    pthread_mutex_lock(&d->lock);
    for (opencl__stream *q = d->queues.next; q != &d->queues; q = q->next) {
        pending e = {NULL, NULL};
        uint64_t queued;

        if (q == s || !q->blocking)
            continue;
        /* Acquire: the commands counted were queued before our marker. */
        queued = atomic_load_explicit(&q->queued, memory_order_acquire);
        if (q->probe != NULL && settled(q->probe)) {
            /* An earlier marker, complete by now (most often the one the
             * last synchronous call waited for). */
            opencl__order_settled(q, q->probe_covers);
            clReleaseEvent(q->probe);
            q->probe = NULL;
        }
        if (sync && queued == atomic_load_explicit(&q->settled, memory_order_relaxed)) {
            /* None of ours pending.  Commands queued natively are not
             * counted: clFinish waits for them, and on an idle queue
             * returns at once, where a marker costs a trip through the
             * driver.  Retained, as it runs after the lock is released. */
            clRetainCommandQueue(q->queue);
            e.finish = q->queue;
        } else {
            err = clEnqueueMarkerWithWaitList(q->queue, 0, NULL, &e.mark);
            if (err != CL_SUCCESS) {
                st = opencl__cl_fail("clEnqueueMarkerWithWaitList", err);
                break;
            }
            if (settled(e.mark)) {
                opencl__order_settled(q, queued);
                clReleaseEvent(e.mark);
                continue;
            }
            /* The marker must reach the device even if nobody flushes q. */
            clFlush(q->queue);
            /* Kept: once complete, the next "before" learns from it that
             * q's work counted so far is done, without a marker. */
            clRetainEvent(e.mark);
            if (q->probe != NULL)
                clReleaseEvent(q->probe);
            q->probe = e.mark;
            q->probe_covers = queued;
        }
        if (n == cap) {
            size_t c = cap * 2;
            pending *grown = p == local ? malloc(c * sizeof *grown) : realloc(p, c * sizeof *grown);
            if (grown == NULL) {
                if (e.mark != NULL)
                    clReleaseEvent(e.mark);
                if (e.finish != NULL)
                    clReleaseCommandQueue(e.finish);
                st = INFINI_STATUS_OUT_OF_MEMORY;
                break;
            }
            if (p == local)
                for (size_t i = 0; i < n; i++)
                    grown[i] = local[i];
            p = grown;
            cap = c;
        }
        p[n++] = e;
    }
    pthread_mutex_unlock(&d->lock);

    if (n > sizeof marks / sizeof marks[0] && (wait = malloc(n * sizeof *wait)) == NULL &&
        st == INFINI_STATUS_SUCCESS)
        st = INFINI_STATUS_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) {
        if (p[i].finish != NULL) {
            if (st == INFINI_STATUS_SUCCESS && (err = clFinish(p[i].finish)) != CL_SUCCESS)
                st = opencl__cl_fail("clFinish", err);
            clReleaseCommandQueue(p[i].finish);
        } else if (wait != NULL) {
            wait[nmarks++] = p[i].mark;
        }
    }
    if (st == INFINI_STATUS_SUCCESS && nmarks > 0) {
        err = clEnqueueBarrierWithWaitList(s->queue, (cl_uint)nmarks, wait, NULL);
        if (err != CL_SUCCESS)
            st = opencl__cl_fail("clEnqueueBarrierWithWaitList", err);
    }
    for (size_t i = 0; i < n; i++)
        if (p[i].mark != NULL)
            clReleaseEvent(p[i].mark);
    if (wait != marks)
        free(wait);
    if (p != local)
        free(p);
    return st;
}

infiniStatus_t opencl__order_before(opencl__stream *s)
{
    return before(s, 0);
}

infiniStatus_t opencl__order_before_sync(opencl__stream *s)
{
    return before(s, 1);
}

/* Barriers on m, the default queue's marker, on every blocking queue. */
static infiniStatus_t after_marker(opencl__stream *s, cl_event m)
{
    opencl__device *d = s->dev;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    cl_int err;

    if (settled(m))
        return INFINI_STATUS_SUCCESS;
    pthread_mutex_lock(&d->lock);
    for (opencl__stream *q = d->queues.next; q != &d->queues; q = q->next) {
        if (q == s || !q->blocking)
            continue;
        err = clEnqueueBarrierWithWaitList(q->queue, 1, &m, NULL);
        if (err != CL_SUCCESS && st == INFINI_STATUS_SUCCESS)
            st = opencl__cl_fail("clEnqueueBarrierWithWaitList", err);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* Work was queued on s, not the default stream.  Release: whoever reads
 * the new count sees the command in the queue (a marker queued then is
 * behind it). */
static infiniStatus_t counted(opencl__stream *s)
{
    if (s->blocking)
        atomic_fetch_add_explicit(&s->queued, 1, memory_order_release);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__order_after(opencl__stream *s)
{
    opencl__device *d = s->dev;
    infiniStatus_t st;
    cl_event m = NULL;
    cl_int err;

    if (!is_default(s))
        return counted(s);
    atomic_fetch_add(&d->default_queued, 1); /* seq_cst: see the top */
    if (atomic_load(&d->blocking_streams) == 0)
        return INFINI_STATUS_SUCCESS;
    err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &m);
    if (err != CL_SUCCESS)
        return opencl__cl_fail("clEnqueueMarkerWithWaitList", err);
    clFlush(s->queue);
    st = after_marker(s, m);
    clReleaseEvent(m);
    return st;
}

infiniStatus_t opencl__order_after_marker(opencl__stream *s, cl_event m)
{
    opencl__device *d = s->dev;

    if (!is_default(s))
        return counted(s);
    atomic_fetch_add(&d->default_queued, 1); /* seq_cst: see the top */
    if (atomic_load(&d->blocking_streams) == 0)
        return INFINI_STATUS_SUCCESS;
    return after_marker(s, m);
}

infiniStatus_t opencl__order_join_locked(opencl__stream *s)
{
    opencl__stream *def = &s->dev->default_stream;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    uint64_t queued;
    cl_event m = NULL;
    cl_int err;

    if (!s->blocking)
        return INFINI_STATUS_SUCCESS;
    /* queued first: drained never passes it, so equal values mean all the
     * work counted when queued was read is complete. */
    queued = atomic_load(&s->dev->default_queued);
    if (atomic_load(&s->dev->default_drained) >= queued)
        return INFINI_STATUS_SUCCESS;
    err = clEnqueueMarkerWithWaitList(def->queue, 0, NULL, &m);
    if (err != CL_SUCCESS)
        return opencl__cl_fail("clEnqueueMarkerWithWaitList", err);
    /* The marker must reach the device even if nobody flushes the default
     * queue: the new queue waits for it. */
    clFlush(def->queue);
    if (!settled(m)) {
        err = clEnqueueBarrierWithWaitList(s->queue, 1, &m, NULL);
        if (err != CL_SUCCESS)
            st = opencl__cl_fail("clEnqueueBarrierWithWaitList", err);
    }
    clReleaseEvent(m);
    return st;
}

uint64_t opencl__order_drain_start(opencl__device *d)
{
    return atomic_load_explicit(&d->default_queued, memory_order_acquire);
}

void opencl__order_drained(opencl__device *d, uint64_t queued)
{
    uint64_t was = atomic_load_explicit(&d->default_drained, memory_order_relaxed);

    /* Only forward: a slower synchronize may report an older count. */
    while (was < queued && !atomic_compare_exchange_weak_explicit(&d->default_drained, &was, queued,
                                                                  memory_order_release, memory_order_relaxed))
        ;
}
