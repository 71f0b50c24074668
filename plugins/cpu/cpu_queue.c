/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_queue.c - the async queue (streams = async; cpu__queue_async): the
 * ring of each stream, the order of blocking streams with the default one,
 * the queue operations that queue work (copies, fills, host functions,
 * event records and waits: a wait is a CPU__CMD_AFTER on the stream of the
 * record it binds to) and those that wait for it (a stream, an event, the
 * drain of device_synchronize and of synchronous copies), and the stream
 * objects' part of it.  The workers that run the rings are cpu_pool.c's;
 * the streams with work are found through cpu_busy.c's busy list.
 *
 * A stream's scheduling state (`sched`):
 *   IDLE    no command in the ring (IDLE implies an empty ring);
 *   CALLER  a caller runs small work on its own thread (below);
 *   QUEUED  on the pool's run queue;
 *   RUNNING a worker drains it (one at a time);
 *   PARKED  its first command waits (an event, another stream's count); it
 *           is linked on what it waits for, which queues it again.
 * Every change is made under the stream's mutex but IDLE -> CALLER -> IDLE:
 * a copy or fill of at most CPU__CALLER_RUN_MAX bytes on an idle stream,
 * with nothing to wait for, claims the stream with one compare-and-swap,
 * runs on the caller's thread and gives it back with a store - no mutex,
 * no worker, no count (the work is done when the call returns).  Whoever
 * queues under the mutex first moves IDLE to QUEUED (after any CALLER has
 * ended), so nothing runs outside the ring while the ring holds work.
 * Queueing on a QUEUED or RUNNING stream only appends to the ring: no
 * system call.  The worker sets IDLE in the same critical section that
 * counts the last command done, and touches the stream no more after it.
 *
 * Template: CPU only, with cpu_busy.c and cpu_pool.c.  A device with its
 * own queues needs none of it: delete the three, and init's choice of
 * cpu__queue_async.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The ring's first size, allocated with the first command; it doubles when
 * full and never shrinks, so a stream in steady use allocates nothing. */
#define RING_FIRST 16
/* How long a host thread spins on a stream's count before it sleeps. */
#define WAIT_SPIN_NS 20000

/* ---------------------------------------------------------------- waiting */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait until s has completed `count` commands; with `idle`, also until no
 * worker holds s (so it may be freed).  Spins a short while first: a small
 * command completes sooner than a sleep and a wake-up take. */
static void stream_wait(cpu_stream *s, uint64_t count, bool idle)
{
    if (!idle) {
        if (atomic_load_explicit(&s->done, memory_order_acquire) >= count)
            return;
        uint64_t until = now_ns() + WAIT_SPIN_NS;
        for (unsigned i = 1; atomic_load_explicit(&s->done, memory_order_acquire) < count; i++) {
            CPU__RELAX();
            if ((i & 63) == 0 && now_ns() >= until)
                break;
        }
        if (atomic_load_explicit(&s->done, memory_order_acquire) >= count)
            return;
    }
    pthread_mutex_lock(&s->mu);
    s->waiters++;
    while (atomic_load_explicit(&s->done, memory_order_relaxed) < count ||
           (idle && atomic_load_explicit(&s->sched, memory_order_relaxed) != CPU__ST_IDLE))
        pthread_cond_wait(&s->cv_done, &s->mu);
    s->waiters--;
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------- queueing */

/* The streams of d in `set` that have work not yet completed, with the
 * count to reach (each holding its stream); -1 out of memory.  Nothing
 * queued on any stream of d (the usual case) takes no lock. */
static int pending_streams(cpu_device *d, enum cpu__busy_set set, cpu_after **out)
{
    *out = NULL;
    if (atomic_load_explicit(&d->pending, memory_order_acquire) == 0)
        return 0;
    return cpu__busy_walk(d, set, out);
}

/* Under s->mu: room for `more` commands (the ring doubles when full). */
static bool ring_reserve(cpu_stream *s, uint32_t more)
{
    if (s->count + more <= s->cap)
        return true;
    uint32_t cap = s->cap != 0 ? s->cap : RING_FIRST;
    while (cap < s->count + more) {
        if (cap > UINT32_MAX / 2)
            return false;
        cap *= 2;
    }
    cpu_cmd *r = malloc((size_t)cap * sizeof *r);
    if (r == NULL)
        return false;
    for (uint32_t i = 0; i < s->count; i++)
        r[i] = s->ring[(s->first + i) & (s->cap - 1)];
    free(s->ring);
    s->ring = r;
    s->cap = cap;
    s->first = 0;
    return true;
}

/* Under s->mu, with room reserved. */
static void ring_push(cpu_stream *s, const cpu_cmd *c)
{
    s->ring[(s->first + s->count) & (s->cap - 1)] = *c;
    s->count++;
    atomic_fetch_add_explicit(&s->dev->pending, 1, memory_order_relaxed);
    uint64_t q = atomic_load_explicit(&s->queued, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->queued, q, memory_order_release);
}

/* A copy or fill small enough to run on the caller's thread: handing it to
 * a worker would cost the caller more than the work (a wake-up, and a
 * handoff back at the synchronize). */
static bool small_work(const cpu_cmd *t)
{
    return (t->kind == CPU__CMD_COPY && t->u.copy.n <= CPU__CALLER_RUN_MAX) ||
           (t->kind == CPU__CMD_FILL && t->u.fill.n <= CPU__CALLER_RUN_MAX);
}

/* Small work, on the caller's thread. */
static void run_small(const cpu_cmd *t)
{
    if (t->kind == CPU__CMD_COPY)
        memmove(t->u.copy.dst, t->u.copy.src, t->u.copy.n);
    else
        memset(t->u.fill.dst, t->u.fill.value, t->u.fill.n);
}

/* Run *t on the caller's thread if s is IDLE: claimed with one
 * compare-and-swap (acquire: after the effects of what ran before), given
 * back with a store (release: its effects before whatever runs next). */
static bool caller_run(cpu_stream *s, const cpu_cmd *t)
{
    int idle = CPU__ST_IDLE;
    if (!atomic_compare_exchange_strong_explicit(&s->sched, &idle, CPU__ST_CALLER, memory_order_acquire,
                                                 memory_order_relaxed))
        return false;
    run_small(t);
    atomic_store_explicit(&s->sched, CPU__ST_IDLE, memory_order_release);
    return true;
}

/* Under s->mu: the state once no caller runs work on s (one that does
 * ends within a copy of CPU__CALLER_RUN_MAX bytes, unless its thread lost
 * its core: then the spin gives its own up now and then). */
static int settled(cpu_stream *s)
{
    int st;
    for (unsigned i = 1; (st = atomic_load_explicit(&s->sched, memory_order_acquire)) == CPU__ST_CALLER; i++) {
        CPU__RELAX();
        if ((i & 1023) == 0)
            sched_yield();
    }
    return st;
}

/* Queue *t on s under s->mu, behind `waits` (the default stream's: each
 * blocking stream's work, held) and `one` (a blocking stream's: the default
 * stream's work). */
static infiniStatus_t enqueue_locked(cpu_stream *s, const cpu_cmd *t, cpu_after *waits, cpu_after one)
{
    pthread_mutex_lock(&s->mu);
    /* Decided under s->mu, in one section with appending *t, so a command
     * that skips the wait comes after the one that queued it. */
    bool need_one = one.s != NULL && one.count > s->after_default;
    uint32_t n = (t->kind != CPU__CMD_ORDER ? 1 : 0) + (need_one ? 1 : 0);
    for (cpu_after *w = waits; w != NULL; w = w->next)
        n++;
    if (n == 0) { /* CPU__CMD_ORDER, and the stream already waits for the default one's work */
        pthread_mutex_unlock(&s->mu);
        return INFINI_STATUS_SUCCESS;
    }
    int st = settled(s);
    if (n == 1 && s->count == 0 && t->kind == CPU__CMD_RECORD) {
        /* Nothing pending (IDLE, or a worker between its last command and
         * IDLE): complete now, after s->mu is let go: completing may
         * queue streams parked on the event, and one stream lock is never
         * held while taking another's here (enqueue on the default stream
         * nests them the other way). */
        pthread_mutex_unlock(&s->mu);
        cpu__event_record_now(t->u.ev.e);
        return INFINI_STATUS_SUCCESS;
    }
    if (n == 1 && s->count == 0 && small_work(t)) {
        /* Run here: nothing queued before it can still be running
         * (commands leave the ring only once finished).  A worker between
         * its last command and IDLE needs s->mu to go on, so the work runs
         * under it; an IDLE stream is claimed as caller_run does. */
        if (st == CPU__ST_RUNNING) {
            run_small(t);
            pthread_mutex_unlock(&s->mu);
            return INFINI_STATUS_SUCCESS;
        }
        while (!caller_run(s, t))
            settled(s); /* claimed by another caller meanwhile */
        pthread_mutex_unlock(&s->mu);
        return INFINI_STATUS_SUCCESS;
    }
    /* A worker must exist before anything is queued: a command no thread
     * could run would hang its synchronize. */
    if (cpu__pool_ready() != INFINI_STATUS_SUCCESS || !ring_reserve(s, n)) {
        pthread_mutex_unlock(&s->mu);
        cpu__afters_free(waits, true);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    /* An idle stream is the pool's from here on, before anything is in its
     * ring: no caller may run small work on it any more. */
    bool push = false;
    while (st == CPU__ST_IDLE) {
        int idle = CPU__ST_IDLE;
        push = atomic_compare_exchange_strong_explicit(&s->sched, &idle, CPU__ST_QUEUED, memory_order_acquire,
                                                       memory_order_relaxed);
        st = push ? CPU__ST_QUEUED : settled(s);
    }
    if (need_one) {
        s->after_default = one.count;
        cpu__stream_hold(one.s);
        ring_push(s, &(cpu_cmd){.kind = CPU__CMD_AFTER, .u.after = {one.s, one.count}});
    }
    for (cpu_after *w = waits; w != NULL; w = w->next)
        ring_push(s, &(cpu_cmd){.kind = CPU__CMD_AFTER, .u.after = {w->s, w->count}});
    /* What the queued command holds is taken last, when nothing can fail:
     * a record's generation is never left without a completion.  The
     * record is the event's latest from here on, at the count s reaches
     * once it has run: what a wait or a synchronize made from now on
     * waits for (and nothing can run it before s->mu is let go). */
    if (t->kind != CPU__CMD_ORDER) {
        cpu_cmd c = *t;
        if (cpu__trace != NULL) /* left queued: the worker reports when it ran */
            c.trace_id = cpu__trace->work_id();
        if (c.kind == CPU__CMD_RECORD) {
            atomic_fetch_add(&c.u.ev.e->refs, 1);
            c.u.ev.gen = cpu__event_queued(c.u.ev.e, s, atomic_load_explicit(&s->queued, memory_order_relaxed) + 1);
        }
        ring_push(s, &c);
    }
    bool walk_now = cpu__busy_note(s);
    /* Only now (the waits are queued, and cannot complete while we hold
     * s->mu) may other default-stream commands skip those streams. */
    for (cpu_after *w = waits; w != NULL; w = w->next) {
        pthread_mutex_lock(&w->s->mu);
        if (w->count > w->s->covered)
            w->s->covered = w->count;
        pthread_mutex_unlock(&w->s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    if (push)
        cpu__pool_push(s);
    cpu__afters_free(waits, false); /* their references went to the commands */
    if (walk_now) {
        cpu_after *none;
        cpu__busy_walk(s->dev, CPU__FOR_NONE, &none);
    }
    return INFINI_STATUS_SUCCESS;
}

/* Queue *t on s (async mode), behind the waits blocking-stream order asks
 * for.  With nothing queued on any stream of the device (`pending` 0)
 * there is no order to keep: a record completes here, and a small copy or
 * fill on an idle stream runs here, without s->mu (caller_run). */
static infiniStatus_t enqueue(cpu_stream *s, const cpu_cmd *t)
{
    cpu_device *d = s->dev;
    cpu_after *waits = NULL;         /* the default stream's */
    cpu_after one = {NULL, NULL, 0}; /* a blocking stream's wait for the default one */
    if (atomic_load_explicit(&d->pending, memory_order_acquire) != 0) {
        if (s->is_default) {
            if (pending_streams(d, CPU__FOR_DEFAULT, &waits) != 0)
                return INFINI_STATUS_OUT_OF_MEMORY;
        } else if (s->blocking) {
            cpu_stream *D = atomic_load_explicit(&d->default_stream, memory_order_acquire);
            if (D != NULL) {
                uint64_t q = atomic_load_explicit(&D->queued, memory_order_acquire);
                if (atomic_load_explicit(&D->done, memory_order_acquire) < q)
                    one = (cpu_after){NULL, D, q};
            }
        }
    }
    if (waits == NULL && one.s == NULL) {
        if (t->kind == CPU__CMD_RECORD) {
            /* Nothing queued on s and nothing to wait for: the record is
             * complete now, without s->mu.  `done` is read before
             * `queued` and never passes it, so equal values mean the
             * stream was empty when `queued` was read; whatever another
             * thread queues meanwhile is unordered with this call, as it
             * would be with the lock. */
            uint64_t done = atomic_load_explicit(&s->done, memory_order_acquire);
            if (done == atomic_load_explicit(&s->queued, memory_order_acquire)) {
                cpu__event_record_now(t->u.ev.e);
                return INFINI_STATUS_SUCCESS;
            }
        } else if (t->kind == CPU__CMD_ORDER) {
            return INFINI_STATUS_SUCCESS; /* nothing pending to order against */
        } else if (small_work(t) && caller_run(s, t)) {
            return INFINI_STATUS_SUCCESS;
        }
    }
    return enqueue_locked(s, t, waits, one);
}

static infiniStatus_t submit(int dev, void *stream, const cpu_cmd *t)
{
    if (stream == NULL && cpu__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    cpu_stream *s = stream != NULL ? stream : cpu__default_stream(dev);
    if (s == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    return enqueue(s, t);
}

/* Wait on the host for the streams of a pending_streams list. */
static void wait_afters(cpu_after *list)
{
    for (cpu_after *w = list; w != NULL; w = w->next)
        stream_wait(w->s, w->count, false);
    cpu__afters_free(list, true);
}

/* ------------------------------------------------------------ operations */

/* Whether small work on s may run at once on the caller's thread, as
 * enqueue would decide it in the usual case, and if so s is claimed
 * (caller_run): nothing queued on any stream of the device (so no order
 * to keep), and s idle.  give_back ends the claim. */
static inline bool claim_now(cpu_stream *s, size_t n)
{
    int idle = CPU__ST_IDLE;
    return s != NULL && n <= CPU__CALLER_RUN_MAX &&
           atomic_load_explicit(&s->dev->pending, memory_order_acquire) == 0 &&
           atomic_compare_exchange_strong_explicit(&s->sched, &idle, CPU__ST_CALLER, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline void give_back(cpu_stream *s)
{
    atomic_store_explicit(&s->sched, CPU__ST_IDLE, memory_order_release);
}

static infiniStatus_t copy(int dev, void *stream, void *dst, const void *src, size_t n)
{
    if (claim_now(stream, n)) {
        memmove(dst, src, n);
        give_back(stream);
        return INFINI_STATUS_SUCCESS;
    }
    cpu_cmd t = {.kind = CPU__CMD_COPY, .u.copy = {dst, src, n}};
    return submit(dev, stream, &t);
}

static infiniStatus_t fill(int dev, void *stream, void *dst, int value, size_t n)
{
    if (claim_now(stream, n)) {
        memset(dst, value, n);
        give_back(stream);
        return INFINI_STATUS_SUCCESS;
    }
    cpu_cmd t = {.kind = CPU__CMD_FILL, .u.fill = {dst, value, n}};
    return submit(dev, stream, &t);
}

static infiniStatus_t host_fn(int dev, void *stream, infinirtPluginHostFn fn, void *user)
{
    cpu_cmd t = {.kind = CPU__CMD_HOST_FN, .u.host = {fn, user}};
    return submit(dev, stream, &t);
}

static infiniStatus_t record(int dev, void *stream, cpu_event *e)
{
    cpu_cmd t = {.kind = CPU__CMD_RECORD, .u.ev = {e, 0}};
    return submit(dev, stream, &t);
}

/* The wait is bound here, to the event's latest record as of this call:
 * it waits for the count the record's stream reaches with that record, so
 * a later record of the event (on any stream, completing in any order)
 * changes nothing for it. */
static infiniStatus_t wait_event(int dev, void *stream, cpu_event *e)
{
    cpu_stream *on;
    uint64_t at;
    if (!cpu__event_pending(e, &on, &at)) {
        /* Nothing to wait for.  A record that has completed still makes
         * the wait an action of its stream (docs/semantics.md, R2): on the
         * NULL stream it comes after the blocking streams' queued work,
         * and their later work after it, as CUDA's legacy stream orders a
         * cudaStreamWaitEvent; on a blocking stream it comes after the
         * NULL stream's work (a synchronize of that stream covers it).  A
         * wait for an event never recorded queues nothing. */
        if (atomic_load_explicit(&e->recorded, memory_order_acquire) == 0)
            return INFINI_STATUS_SUCCESS;
        cpu_cmd t = {.kind = CPU__CMD_ORDER};
        return submit(dev, stream, &t);
    }
    if (stream == NULL && cpu__device(dev) == NULL) {
        cpu__stream_put(on);
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    }
    cpu_stream *s = stream != NULL ? stream : cpu__default_stream(dev);
    if (s == NULL) {
        cpu__stream_put(on);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    if (s == on || atomic_load_explicit(&on->done, memory_order_acquire) >= at) {
        /* Queued on this very stream (its order waits), or run since: the
         * wait is still an action of s (R2, as above). */
        cpu__stream_put(on);
        cpu_cmd t = {.kind = CPU__CMD_ORDER};
        return enqueue(s, &t);
    }
    cpu_cmd t = {.kind = CPU__CMD_AFTER, .u.after = {on, at}}; /* the command takes our reference */
    infiniStatus_t st = enqueue(s, &t);
    if (st != INFINI_STATUS_SUCCESS)
        cpu__stream_put(on);
    return st;
}

/* ------------------------------------------------------------ host waits */

static void stream_sync(cpu_stream *s)
{
    uint64_t q = atomic_load_explicit(&s->queued, memory_order_acquire);
    if (atomic_load_explicit(&s->done, memory_order_acquire) < q)
        stream_wait(s, q, false);
}

static bool stream_idle(cpu_stream *s)
{
    uint64_t q = atomic_load_explicit(&s->queued, memory_order_acquire);
    return atomic_load_explicit(&s->done, memory_order_acquire) >= q;
}

/* Waits for the record current at the call: for its stream to reach the
 * record's count, which a later record of the event does not change. */
static void event_wait(cpu_event *e)
{
    cpu_stream *s;
    uint64_t at;
    if (cpu__event_pending(e, &s, &at)) {
        stream_wait(s, at, false);
        cpu__stream_put(s);
    }
}

/* Wait on the host for the streams of d in `what`.  The streams are held by
 * reference while waited for, not under d->lock: a host function running
 * on one of them may itself queue work (which takes d->lock). */
static infiniStatus_t drain(cpu_device *d, enum cpu__drain what)
{
    cpu_after *list;
    if (pending_streams(d, what == CPU__DRAIN_DEVICE ? CPU__FOR_DEVICE : CPU__FOR_SYNC, &list) != 0)
        return INFINI_STATUS_OUT_OF_MEMORY;
    wait_afters(list);
    return INFINI_STATUS_SUCCESS;
}

/* ---------------------------------------------------------- stream objects */

/* Nothing of the device is touched: a stream is listed only once work is
 * queued in its ring (cpu__busy_note). */
static infiniStatus_t stream_open(cpu_stream *s)
{
    /* Adaptive: a caller queueing while the worker takes a command
     * spins briefly on the lock instead of sleeping in the kernel. */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
    pthread_mutex_init(&s->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_cond_init(&s->cv_done, NULL);
    return INFINI_STATUS_SUCCESS;
}

/* Its work first, and until no worker holds it; a busy list holding it
 * lets it go at its next walk.  No device lock, whatever the number of
 * streams. */
static void stream_close(cpu_stream *s)
{
    stream_wait(s, atomic_load_explicit(&s->queued, memory_order_acquire), true);
}

static void stream_free(cpu_stream *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_done);
    free(s->ring);
}

/* Each device's default stream and busy list, once their work is done;
 * then the workers.  Streams never destroyed stay the caller's. */
static void queue_shutdown(void)
{
    for (int i = 0; i < cpu__device_count(); i++) {
        cpu_device *d = cpu__device(i);
        cpu_stream *s = atomic_exchange(&d->default_stream, NULL);
        if (s != NULL) {
            stream_wait(s, atomic_load(&s->queued), true);
            cpu__stream_put(s);
        }
        pthread_mutex_lock(&d->lock);
        s = atomic_exchange(&d->busy, NULL);
        atomic_store(&d->listed, 0);
        pthread_mutex_unlock(&d->lock);
        while (s != NULL) {
            cpu_stream *next = s->busy_next;
            stream_wait(s, atomic_load(&s->queued), true);
            atomic_store(&s->on_busy, false);
            cpu__stream_put(s);
            s = next;
        }
    }
    cpu__pool_shutdown();
}

const cpu__queue_ops cpu__queue_async = {
    .device_flags = 0,
    .native = &cpu__native_async,
    .stream_open = stream_open,
    .stream_close = stream_close,
    .stream_free = stream_free,
    .copy = copy,
    .fill = fill,
    .host_fn = host_fn,
    .record = record,
    .wait_event = wait_event,
    .sync = stream_sync,
    .idle = stream_idle,
    .event_wait = event_wait,
    .drain = drain,
    .shutdown = queue_shutdown,
};
