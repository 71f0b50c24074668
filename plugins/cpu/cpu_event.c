/*
 * cpu_event.c - events as generation counters: a record takes the next
 * generation, and completing it (on a stream's worker, or at once in inline
 * mode) raises `completed` and stamps the time.
 */
#define _GNU_SOURCE
#include "cpu.h"

#include <stdlib.h>
#include <time.h>

double cpu__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

cpu_event *cpu__event_new(int dev, uint32_t flags)
{
    cpu_event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->flags = flags;
    e->device = dev;
    atomic_init(&e->refs, 1);
    return e;
}

/* Events are freed by whoever drops the last reference: the handle
 * (event_destroy), a queued record or a queued wait.  The count is a C11
 * atomic and every access to the event's state is under its mutex, which
 * the last holder no longer shares with anyone when it destroys it; the
 * loader keeps its own reference while a thread is inside a call on the
 * event.  threads.event_teardown destroys events in each of those ways
 * under ThreadSanitizer (and fails on a non-atomic count or a record that
 * drops its reference before completing the event). */
void cpu__event_put(cpu_event *e)
{
    if (atomic_fetch_sub(&e->refs, 1) == 1) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        free(e);
    }
}

uint64_t cpu__event_next_gen(cpu_event *e)
{
    pthread_mutex_lock(&e->mu);
    uint64_t gen = ++e->recorded;
    pthread_mutex_unlock(&e->mu);
    return gen;
}

void cpu__event_complete(cpu_event *e, uint64_t gen)
{
    double now = cpu__now_ms();
    pthread_mutex_lock(&e->mu);
    if (gen > e->completed) {
        e->completed = gen;
        e->completed_at_ms = now;
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void cpu__event_record_now(cpu_event *e)
{
    double now = cpu__now_ms();
    pthread_mutex_lock(&e->mu);
    e->completed = ++e->recorded;
    e->completed_at_ms = now;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

uint64_t cpu__event_pending_gen(cpu_event *e)
{
    pthread_mutex_lock(&e->mu);
    uint64_t gen = e->completed >= e->recorded ? 0 : e->recorded;
    pthread_mutex_unlock(&e->mu);
    return gen;
}

void cpu__event_wait_gen(cpu_event *e, uint64_t gen)
{
    pthread_mutex_lock(&e->mu);
    while (e->completed < gen)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}
