/*
 * cpu_event.c - events as generation counters: a record takes the next
 * generation, and completing it (on a worker, on the caller's thread when
 * its stream is idle, or at once in inline mode) raises `completed` and
 * stamps the time.  Writers hold the event's mutex; readers that only ask
 * "is it complete" load the two counters and take no lock.  The event
 * entries are at the bottom; the queue side of records and waits is in
 * cpu_queue.c.
 *
 * Template: a vendor's <p>_event.c holds the same entries over the
 * driver's events (a CUevent, an OpenCL marker); the generation counters
 * are how a backend without native events gets them.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <stdlib.h>
#include <time.h>

double cpu__now_ms(void)
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
    /* The condition variable is made by the first host thread that waits
     * (most events are never waited on, and destroying one costs a locked
     * instruction in glibc). */
    e->cv_ready = false;
    e->flags = flags;
    atomic_init(&e->refs, 1);
    atomic_init(&e->recorded, 0);
    atomic_init(&e->completed, 0);
    e->completed_at_ms = 0;
    e->waiters = 0;
    e->parked = NULL;
    e->device = dev;
    return e;
}

/* Events are freed by whoever drops the last reference: the handle
 * (event_destroy), a queued record or a queued wait.  The count is a C11
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
        pthread_mutex_destroy(&e->mu);
        if (e->cv_ready)
            pthread_cond_destroy(&e->cv);
        free(e);
    }
}

uint64_t cpu__event_next_gen(cpu_event *e)
{
    pthread_mutex_lock(&e->mu);
    uint64_t gen = atomic_load_explicit(&e->recorded, memory_order_relaxed) + 1;
    atomic_store_explicit(&e->recorded, gen, memory_order_release);
    pthread_mutex_unlock(&e->mu);
    return gen;
}

/* Under e->mu: `completed` reaches gen, stamped `now`; the streams parked on
 * it are returned, to be woken once the mutex is let go. */
static cpu_parked *complete_locked(cpu_event *e, uint64_t gen, double now)
{
    if (gen > atomic_load_explicit(&e->completed, memory_order_relaxed)) {
        e->completed_at_ms = now;
        atomic_store_explicit(&e->completed, gen, memory_order_release);
    }
    if (e->waiters > 0)
        pthread_cond_broadcast(&e->cv);
    return e->parked != NULL ? cpu__parked_take(&e->parked, atomic_load_explicit(&e->completed, memory_order_relaxed))
                             : NULL;
}

/* The time a completion is stamped with: not read for an event that keeps
 * no time. */
static double stamp(const cpu_event *e)
{
    return (e->flags & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING) ? 0 : cpu__now_ms();
}

void cpu__event_complete(cpu_event *e, uint64_t gen)
{
    double now = stamp(e);
    pthread_mutex_lock(&e->mu);
    cpu_parked *wake = complete_locked(e, gen, now);
    pthread_mutex_unlock(&e->mu);
    cpu__parked_wake(wake);
}

void cpu__event_record_now(cpu_event *e)
{
    double now = stamp(e);
    pthread_mutex_lock(&e->mu);
    uint64_t gen = atomic_load_explicit(&e->recorded, memory_order_relaxed) + 1;
    atomic_store_explicit(&e->recorded, gen, memory_order_release);
    cpu_parked *wake = complete_locked(e, gen, now);
    pthread_mutex_unlock(&e->mu);
    cpu__parked_wake(wake);
}

uint64_t cpu__event_pending_gen(cpu_event *e)
{
    uint64_t rec = atomic_load_explicit(&e->recorded, memory_order_acquire);
    return atomic_load_explicit(&e->completed, memory_order_acquire) >= rec ? 0 : rec;
}

void cpu__event_wait_gen(cpu_event *e, uint64_t gen)
{
    if (atomic_load_explicit(&e->completed, memory_order_acquire) >= gen)
        return;
    pthread_mutex_lock(&e->mu);
    if (!e->cv_ready) {
        pthread_cond_init(&e->cv, NULL);
        e->cv_ready = true;
    }
    e->waiters++;
    while (atomic_load_explicit(&e->completed, memory_order_relaxed) < gen)
        pthread_cond_wait(&e->cv, &e->mu);
    e->waiters--;
    pthread_mutex_unlock(&e->mu);
}

bool cpu__event_park(cpu_event *e, uint64_t gen, cpu_parked *p)
{
    if (atomic_load_explicit(&e->completed, memory_order_acquire) >= gen)
        return true;
    pthread_mutex_lock(&e->mu);
    bool done = atomic_load_explicit(&e->completed, memory_order_relaxed) >= gen;
    if (!done) {
        p->until = gen;
        p->next = e->parked;
        e->parked = p;
    }
    pthread_mutex_unlock(&e->mu);
    return done;
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
    return cpu__record(dev, stream, event);
}

infiniStatus_t cpu__event_query(int dev, void *event, int *complete)
{
    *complete = cpu__event_pending_gen(event) == 0;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__event_synchronize(int dev, void *event)
{
    CPU__REFUSE_IN_HOST_FN("event_synchronize");
    uint64_t gen = cpu__event_pending_gen(event);
    if (gen != 0)
        cpu__event_wait_gen(event, gen);
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
