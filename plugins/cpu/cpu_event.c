/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_event.c - an event is its latest record (cpu_internal.h): a
 * generation, and while the record is queued, the stream it is on and the
 * count that stream reaches with it.  Completing the latest record (on a
 * worker, on the caller's thread when its stream is idle, or at once in
 * inline mode) raises `completed` and stamps the time.  Waits take the
 * (stream, count) pair at the call and wait for the stream, so a later
 * record never answers for an earlier one.  Writers hold the event's mutex;
 * readers that only ask "is it complete" load the two counters and take no
 * lock.  The event entries are at the bottom; the queue side of records
 * and waits is the queue's (cpu__queue: cpu_inline.c, cpu_queue.c).
 *
 * Template: a vendor's <p>_event.c holds the same entries over the
 * driver's events (a CUevent, an OpenCL marker); the generation counters
 * are how a backend without native events gets them.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static cpu_event *event_new(int dev, uint32_t flags)
{
    /* Not calloc, and every field set (a memset would be turned back into
     * calloc): malloc is served from glibc's thread cache, calloc is not. */
    cpu_event *e = malloc(sizeof *e);
    if (e == NULL)
        return NULL;
    pthread_mutex_init(&e->mu, NULL);
    e->flags = flags;
    atomic_init(&e->refs, 1);
    atomic_init(&e->recorded, 0);
    atomic_init(&e->completed, 0);
    e->completed_at_ms = 0;
    e->on = NULL;
    e->at = 0;
    e->device = dev;
    return e;
}

/* Events are freed by whoever drops the last reference: the handle
 * (event_destroy) or a queued record.  The count is a C11
 * atomic and every write to the event's state is under its mutex, which
 * the last holder no longer shares with anyone when it destroys it; the
 * loader keeps its own reference while a thread is inside a call on the
 * event.  threads.event_teardown destroys events in each of those ways
 * under ThreadSanitizer (and fails on a non-atomic count or a record that
 * drops its reference before completing the event). */
void cpu__event_put(cpu_event *e)
{
    /* A count of 1 is the caller's own reference, and only a holder of a
     * reference takes another (a record or wait queued through the handle
     * the loader keeps alive): nobody can raise it any more, so the last
     * reference goes without a locked instruction. */
    if (atomic_load_explicit(&e->refs, memory_order_acquire) == 1 || atomic_fetch_sub(&e->refs, 1) == 1) {
        /* Every queued record has run by now, and the latest one let its
         * stream go when it completed: `on` is NULL (kept general). */
        if (e->on != NULL)
            cpu__stream_put(e->on);
        pthread_mutex_destroy(&e->mu);
        free(e);
    }
}

/* Under e->mu: the next record's generation, which replaces the latest as
 * the one the event stands for; the stream the replaced record was pending
 * on is returned, to be let go once the mutex is. */
static cpu_stream *next_locked(cpu_event *e, uint64_t *gen)
{
    *gen = atomic_load_explicit(&e->recorded, memory_order_relaxed) + 1;
    atomic_store_explicit(&e->recorded, *gen, memory_order_release);
    cpu_stream *was = e->on;
    e->on = NULL;
    return was;
}

uint64_t cpu__event_queued(cpu_event *e, cpu_stream *s, uint64_t at)
{
    uint64_t gen;
    cpu__stream_hold(s);
    pthread_mutex_lock(&e->mu);
    cpu_stream *was = next_locked(e, &gen);
    e->on = s;
    e->at = at;
    pthread_mutex_unlock(&e->mu);
    /* Never the last reference to a stream a worker runs: whoever destroys
     * a stream keeps its own until the stream is idle (stream_free). */
    if (was != NULL)
        cpu__stream_put(was);
    return gen;
}

/* Under e->mu: record gen completed at `now`.  Only the latest record
 * changes what the event says (an earlier one completing late stands for
 * nothing any more); its stream is returned, to be let go. */
static cpu_stream *complete_locked(cpu_event *e, uint64_t gen, double now)
{
    if (gen != atomic_load_explicit(&e->recorded, memory_order_relaxed))
        return NULL;
    e->completed_at_ms = now;
    atomic_store_explicit(&e->completed, gen, memory_order_release);
    cpu_stream *was = e->on;
    e->on = NULL;
    return was;
}

/* The time a completion is stamped with: not read for an event that keeps
 * no time. */
static double stamp(const cpu_event *e)
{
    return (e->flags & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING) ? 0 : now_ms();
}

void cpu__event_complete(cpu_event *e, uint64_t gen)
{
    double now = stamp(e);
    pthread_mutex_lock(&e->mu);
    cpu_stream *was = complete_locked(e, gen, now);
    pthread_mutex_unlock(&e->mu);
    /* Called by the worker running `was` (the record's own stream), which
     * is not its last reference (see cpu__event_queued). */
    if (was != NULL)
        cpu__stream_put(was);
}

void cpu__event_record_now(cpu_event *e)
{
    double now = stamp(e);
    uint64_t gen;
    pthread_mutex_lock(&e->mu);
    cpu_stream *was = next_locked(e, &gen);
    complete_locked(e, gen, now); /* `on` is NULL already */
    pthread_mutex_unlock(&e->mu);
    if (was != NULL)
        cpu__stream_put(was);
}

/* Whether the latest record is complete (or there is none), without a
 * lock.  `recorded` is read first: `completed` never passes it, so a value
 * at least as high says the record current at that read (or a later one,
 * made meanwhile by another thread) has completed, and its work is seen. */
static bool latest_complete(cpu_event *e)
{
    uint64_t rec = atomic_load_explicit(&e->recorded, memory_order_acquire);
    return atomic_load_explicit(&e->completed, memory_order_acquire) >= rec;
}

bool cpu__event_pending(cpu_event *e, cpu_stream **s, uint64_t *at)
{
    if (latest_complete(e))
        return false;
    pthread_mutex_lock(&e->mu);
    cpu_stream *on = e->on;
    if (on != NULL) {
        cpu__stream_hold(on);
        *s = on;
        *at = e->at;
    }
    pthread_mutex_unlock(&e->mu);
    return on != NULL;
}

/* ---------------------------------------------------------------- entries */

infiniStatus_t cpu__event_create(int dev, uint32_t flags, void **event)
{
    cpu_event *e = event_new(dev, flags);
    if (e == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    *event = e;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__event_destroy(int dev, void *event)
{
    cpu__event_put(event); /* queued records keep their own reference */
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__event_record(int dev, void *event, void *stream)
{
    return cpu__queue->record(dev, stream, event);
}

infiniStatus_t cpu__event_query(int dev, void *event, int *complete)
{
    *complete = latest_complete(event);
    return INFINI_STATUS_SUCCESS;
}

/* Waits for the record current at the call (R3), which a later record of
 * the event does not change. */
infiniStatus_t cpu__event_synchronize(int dev, void *event)
{
    CPU__REFUSE_IN_HOST_FN("event_synchronize");
    cpu__queue->event_wait(event);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__event_elapsed_time(int dev, float *ms, void *start, void *end)
{
    cpu_event *a = start, *b = end;
    double ta = 0, tb = 0;
    int rec = 1, done = 1;
    pthread_mutex_lock(&a->mu);
    rec &= a->recorded > 0;
    done &= a->completed >= a->recorded;
    ta = a->completed_at_ms;
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_lock(&b->mu);
    rec &= b->recorded > 0;
    done &= b->completed >= b->recorded;
    tb = b->completed_at_ms;
    pthread_mutex_unlock(&b->mu);
    if (!rec || ((a->flags | b->flags) & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING))
        return INFINI_STATUS_INVALID_STATE;
    if (!done)
        return INFINI_STATUS_NOT_READY;
    *ms = (float)(tb - ta);
    return INFINI_STATUS_SUCCESS;
}
