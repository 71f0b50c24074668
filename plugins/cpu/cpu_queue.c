/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_queue.c - the async queue (streams = async; cpu__queue_async): the
 * ring of each stream, the order of blocking streams with the default one,
 * the worker side that runs a stream's commands (taken from the pool by
 * cpu_pool.c), the queue operations that queue work (copies, fills, host
 * functions, event records and waits: a wait is a CMD_AFTER on the stream
 * of the record it binds to) and those that wait for it (a stream, an
 * event, the drain of device_synchronize and of synchronous copies).
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
 * Template: CPU only, with cpu_pool.c.  A device with its own queues needs
 * none of it: delete both, and init's choice of cpu__queue_async.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CMD_ORDER is never in a ring: it asks enqueue for the blocking-stream
 * order alone, for an action with no work of its own (a wait for a record
 * that has already completed). */
enum cmd_kind { CMD_COPY, CMD_FILL, CMD_HOST_FN, CMD_RECORD, CMD_AFTER, CMD_ORDER };

typedef struct cpu_cmd {
    enum cmd_kind kind;
    union {
        struct {
            void *dst;
            const void *src;
            size_t n;
        } copy;
        struct {
            void *dst;
            int value;
            size_t n;
        } fill;
        struct {
            infinirtPluginHostFn fn;
            void *user;
        } host;
        struct {
            cpu_event *e;
            uint64_t gen;
        } ev;
        /* Wait until stream s has completed `count` commands: a
         * blocking-stream order, or an event wait (the count s reaches
         * with the record the wait was bound to). */
        struct {
            cpu_stream *s;
            uint64_t count;
        } after;
    } u;
} cmd;

enum run_state { ST_IDLE, ST_CALLER, ST_QUEUED, ST_RUNNING, ST_PARKED };

/* The ring's first size, allocated with the first command; it doubles when
 * full and never shrinks, so a stream in steady use allocates nothing. */
#define RING_FIRST 16
/* Commands a worker runs from one stream before it lets others have a turn
 * (when others wait). */
#define TURN 64
/* How long a host thread spins on a stream's count before it sleeps. */
#define WAIT_SPIN_NS 20000

cpu_stream **cpu__stream_run_next(cpu_stream *s)
{
    return &s->run_next;
}

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
           (idle && atomic_load_explicit(&s->sched, memory_order_relaxed) != ST_IDLE))
        pthread_cond_wait(&s->cv_done, &s->mu);
    s->waiters--;
    pthread_mutex_unlock(&s->mu);
}

/* --------------------------------------------------------------- parking */

#define PARKED_STREAM(p) ((cpu_stream *)((char *)(p)-offsetof(cpu_stream, park)))

/* Take from *list, under the lock that guards it, the streams whose
 * `until` is <= reached; wake them after unlocking. */
static cpu_parked *parked_take(cpu_parked **list, uint64_t reached)
{
    cpu_parked *taken = NULL;
    for (cpu_parked **pp = list; *pp != NULL;) {
        cpu_parked *p = *pp;
        if (p->until <= reached) {
            *pp = p->next;
            p->next = taken;
            taken = p;
        } else {
            pp = &p->next;
        }
    }
    return taken;
}

/* Queue a stream whose wait is over; one still RUNNING (it linked itself
 * and has not parked yet) is told to look again. */
static void parked_wake(cpu_parked *taken)
{
    while (taken != NULL) {
        cpu_parked *next = taken->next;
        cpu_stream *s = PARKED_STREAM(taken);
        pthread_mutex_lock(&s->mu);
        bool push = atomic_load_explicit(&s->sched, memory_order_relaxed) == ST_PARKED;
        if (push)
            atomic_store_explicit(&s->sched, ST_QUEUED, memory_order_relaxed);
        else
            s->rewake = true;
        pthread_mutex_unlock(&s->mu);
        if (push)
            cpu__pool_push(s);
        taken = next;
    }
}

/* c heads s and waits: true when what it waits for is done; otherwise s is
 * linked on it, to be woken.  Called without s->mu (the target's lock is
 * taken instead, never both). */
static bool wait_ready(cpu_stream *s, const cmd *c)
{
    cpu_stream *t = c->u.after.s;
    uint64_t count = c->u.after.count;
    if (atomic_load_explicit(&t->done, memory_order_acquire) >= count)
        return true;
    pthread_mutex_lock(&t->mu);
    bool done = atomic_load_explicit(&t->done, memory_order_relaxed) >= count;
    if (!done) {
        s->park.until = count;
        s->park.next = t->parked;
        t->parked = &s->park;
    }
    pthread_mutex_unlock(&t->mu);
    return done;
}

/* --------------------------------------------------------------- workers */

static void run(const cmd *c)
{
    switch (c->kind) {
    case CMD_COPY:
        memmove(c->u.copy.dst, c->u.copy.src, c->u.copy.n);
        break;
    case CMD_FILL:
        memset(c->u.fill.dst, c->u.fill.value, c->u.fill.n);
        break;
    case CMD_HOST_FN:
        cpu__pool_fn_enter();
        cpu__call_host_fn(c->u.host.fn, c->u.host.user);
        cpu__pool_fn_leave();
        break;
    case CMD_RECORD:
        cpu__event_complete(c->u.ev.e, c->u.ev.gen);
        break;
    case CMD_AFTER:
        break; /* wait_ready said it is over */
    case CMD_ORDER:
        break; /* never queued */
    }
}

/* What a completed command held. */
static void finish(const cmd *c)
{
    if (c->kind == CMD_RECORD)
        cpu__event_put(c->u.ev.e);
    else if (c->kind == CMD_AFTER)
        cpu__stream_put(c->u.after.s);
}

void cpu__stream_run(cpu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    atomic_store_explicit(&s->sched, ST_RUNNING, memory_order_relaxed);
    for (int turn = 0;; turn++) {
        if (s->count == 0) {
            /* Release: a caller that claims the stream without the mutex
             * sees every command's effects. */
            atomic_store_explicit(&s->sched, ST_IDLE, memory_order_release);
            if (s->waiters > 0)
                pthread_cond_broadcast(&s->cv_done); /* stream_free waits for IDLE */
            pthread_mutex_unlock(&s->mu);
            return;
        }
        if (turn >= TURN) {
            /* Others may be waiting for a worker: to the back of the queue. */
            atomic_store_explicit(&s->sched, ST_QUEUED, memory_order_relaxed);
            pthread_mutex_unlock(&s->mu);
            cpu__pool_push(s);
            return;
        }
        cmd c = s->ring[s->first];
        pthread_mutex_unlock(&s->mu);
        if (c.kind == CMD_AFTER && !wait_ready(s, &c)) {
            pthread_mutex_lock(&s->mu);
            if (s->rewake) { /* it ended while we were linking */
                s->rewake = false;
                turn--;
                continue;
            }
            atomic_store_explicit(&s->sched, ST_PARKED, memory_order_relaxed);
            pthread_mutex_unlock(&s->mu);
            return;
        }
        run(&c);
        finish(&c);
        pthread_mutex_lock(&s->mu);
        /* Dequeued only after running, so `done` counts finished work. */
        s->first = (s->first + 1) & (s->cap - 1);
        s->count--;
        uint64_t done = atomic_load_explicit(&s->done, memory_order_relaxed) + 1;
        atomic_store_explicit(&s->done, done, memory_order_release);
        /* Lowered after `done`: whoever reads 0 here sees every count
         * reached, and the work's effects. */
        atomic_fetch_sub_explicit(&s->dev->pending, 1, memory_order_release);
        if (s->waiters > 0)
            pthread_cond_broadcast(&s->cv_done);
        if (s->parked != NULL) {
            cpu_parked *wake = parked_take(&s->parked, done);
            if (wake != NULL) {
                pthread_mutex_unlock(&s->mu);
                parked_wake(wake);
                pthread_mutex_lock(&s->mu);
            }
        }
    }
}

/* ------------------------------------------------------------- ordering */

/* A stream to wait for, and the count it must reach. */
typedef struct after {
    struct after *next;
    cpu_stream *s;
    uint64_t count;
} after;

static void free_afters(after *w, bool release)
{
    while (w != NULL) {
        after *next = w->next;
        if (release)
            cpu__stream_put(w->s);
        free(w);
        w = next;
    }
}

enum pending_set {
    FOR_DEFAULT, /* blocking streams the default stream does not yet wait for */
    FOR_SYNC,    /* a synchronous copy: blocking streams and the default one */
    FOR_DEVICE,  /* a device synchronize: every stream */
};

/* The streams of d in `set` that have work not yet completed, with the
 * count to reach (each holding its stream); -1 out of memory. */
static int pending_streams(cpu_device *d, enum pending_set set, after **out)
{
    after *list = NULL;
    *out = NULL;
    if (atomic_load_explicit(&d->pending, memory_order_acquire) == 0)
        return 0; /* nothing queued on any stream of d (the usual case): no lock */
    pthread_mutex_lock(&d->lock);
    for (cpu_stream *s = d->streams; s != NULL; s = s->next) {
        bool member = set == FOR_DEVICE || s->blocking || (set == FOR_SYNC && s->is_default);
        if (!member)
            continue;
        uint64_t q = atomic_load_explicit(&s->queued, memory_order_acquire);
        if (atomic_load_explicit(&s->done, memory_order_acquire) >= q)
            continue;
        if (set == FOR_DEFAULT) {
            pthread_mutex_lock(&s->mu);
            bool covered = q <= s->covered;
            pthread_mutex_unlock(&s->mu);
            if (covered)
                continue;
        }
        after *w = malloc(sizeof *w);
        if (w == NULL) {
            pthread_mutex_unlock(&d->lock);
            free_afters(list, true);
            return -1;
        }
        cpu__stream_hold(s);
        *w = (after){list, s, q};
        list = w;
    }
    pthread_mutex_unlock(&d->lock);
    *out = list;
    return 0;
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
    cmd *r = malloc((size_t)cap * sizeof *r);
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
static void ring_push(cpu_stream *s, const cmd *c)
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
static bool small_work(const cmd *t)
{
    return (t->kind == CMD_COPY && t->u.copy.n <= CPU__CALLER_RUN_MAX) ||
           (t->kind == CMD_FILL && t->u.fill.n <= CPU__CALLER_RUN_MAX);
}

/* Run *t on the caller's thread if s is IDLE: claimed with one
 * compare-and-swap (acquire: after the effects of what ran before), given
 * back with a store (release: its effects before whatever runs next). */
static bool caller_run(cpu_stream *s, const cmd *t)
{
    int idle = ST_IDLE;
    if (!atomic_compare_exchange_strong_explicit(&s->sched, &idle, ST_CALLER, memory_order_acquire,
                                                 memory_order_relaxed))
        return false;
    run(t);
    atomic_store_explicit(&s->sched, ST_IDLE, memory_order_release);
    return true;
}

/* Under s->mu: the state once no caller runs work on s (one that does
 * ends within a copy of CPU__CALLER_RUN_MAX bytes). */
static int settled(cpu_stream *s)
{
    int st;
    while ((st = atomic_load_explicit(&s->sched, memory_order_acquire)) == ST_CALLER)
        CPU__RELAX();
    return st;
}

/* Queue *t on s under s->mu, behind `waits` (the default stream's: each
 * blocking stream's work, held) and `one` (a blocking stream's: the default
 * stream's work). */
static infiniStatus_t enqueue_locked(cpu_stream *s, const cmd *t, after *waits, after one)
{
    pthread_mutex_lock(&s->mu);
    /* Decided under s->mu, in one section with appending *t, so a command
     * that skips the wait comes after the one that queued it. */
    bool need_one = one.s != NULL && one.count > s->after_default;
    uint32_t n = (t->kind != CMD_ORDER ? 1 : 0) + (need_one ? 1 : 0);
    for (after *w = waits; w != NULL; w = w->next)
        n++;
    if (n == 0) { /* CMD_ORDER, and the stream already waits for the default one's work */
        pthread_mutex_unlock(&s->mu);
        return INFINI_STATUS_SUCCESS;
    }
    int st = settled(s);
    if (n == 1 && s->count == 0 && t->kind == CMD_RECORD) {
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
        if (st == ST_RUNNING) {
            run(t);
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
        free_afters(waits, true);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    /* An idle stream is the pool's from here on, before anything is in its
     * ring: no caller may run small work on it any more. */
    bool push = false;
    while (st == ST_IDLE) {
        int idle = ST_IDLE;
        push = atomic_compare_exchange_strong_explicit(&s->sched, &idle, ST_QUEUED, memory_order_acquire,
                                                       memory_order_relaxed);
        st = push ? ST_QUEUED : settled(s);
    }
    if (need_one) {
        s->after_default = one.count;
        cpu__stream_hold(one.s);
        ring_push(s, &(cmd){.kind = CMD_AFTER, .u.after = {one.s, one.count}});
    }
    for (after *w = waits; w != NULL; w = w->next)
        ring_push(s, &(cmd){.kind = CMD_AFTER, .u.after = {w->s, w->count}});
    /* What the queued command holds is taken last, when nothing can fail:
     * a record's generation is never left without a completion.  The
     * record is the event's latest from here on, at the count s reaches
     * once it has run: what a wait or a synchronize made from now on
     * waits for (and nothing can run it before s->mu is let go). */
    if (t->kind != CMD_ORDER) {
        cmd c = *t;
        if (c.kind == CMD_RECORD) {
            atomic_fetch_add(&c.u.ev.e->refs, 1);
            c.u.ev.gen = cpu__event_queued(c.u.ev.e, s, atomic_load_explicit(&s->queued, memory_order_relaxed) + 1);
        }
        ring_push(s, &c);
    }
    /* Only now (the waits are queued, and cannot complete while we hold
     * s->mu) may other default-stream commands skip those streams. */
    for (after *w = waits; w != NULL; w = w->next) {
        pthread_mutex_lock(&w->s->mu);
        if (w->count > w->s->covered)
            w->s->covered = w->count;
        pthread_mutex_unlock(&w->s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    if (push)
        cpu__pool_push(s);
    free_afters(waits, false); /* their references went to the commands */
    return INFINI_STATUS_SUCCESS;
}

/* Queue *t on s (async mode), behind the waits blocking-stream order asks
 * for.  With nothing queued on any stream of the device (`pending` 0)
 * there is no order to keep: a record completes here, and a small copy or
 * fill on an idle stream runs here, without s->mu (caller_run). */
static infiniStatus_t enqueue(cpu_stream *s, const cmd *t)
{
    cpu_device *d = s->dev;
    after *waits = NULL;         /* the default stream's */
    after one = {NULL, NULL, 0}; /* a blocking stream's wait for the default one */
    if (atomic_load_explicit(&d->pending, memory_order_acquire) != 0) {
        if (s->is_default) {
            if (pending_streams(d, FOR_DEFAULT, &waits) != 0)
                return INFINI_STATUS_OUT_OF_MEMORY;
        } else if (s->blocking) {
            cpu_stream *D = atomic_load_explicit(&d->default_stream, memory_order_acquire);
            if (D != NULL) {
                uint64_t q = atomic_load_explicit(&D->queued, memory_order_acquire);
                if (atomic_load_explicit(&D->done, memory_order_acquire) < q)
                    one = (after){NULL, D, q};
            }
        }
    }
    if (waits == NULL && one.s == NULL) {
        if (t->kind == CMD_RECORD) {
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
        } else if (t->kind == CMD_ORDER) {
            return INFINI_STATUS_SUCCESS; /* nothing pending to order against */
        } else if (small_work(t) && caller_run(s, t)) {
            return INFINI_STATUS_SUCCESS;
        }
    }
    return enqueue_locked(s, t, waits, one);
}

static infiniStatus_t submit(int dev, void *stream, const cmd *t)
{
    if (stream == NULL && cpu__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    cpu_stream *s = stream != NULL ? stream : cpu__default_stream(dev);
    if (s == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    return enqueue(s, t);
}

/* Wait on the host for the streams of a pending_streams list. */
static void wait_afters(after *list)
{
    for (after *w = list; w != NULL; w = w->next)
        stream_wait(w->s, w->count, false);
    free_afters(list, true);
}

/* ------------------------------------------------------------ operations */

/* Whether small work on s may run at once on the caller's thread, as
 * enqueue would decide it in the usual case, and if so s is claimed
 * (caller_run): nothing queued on any stream of the device (so no order
 * to keep), and s idle.  give_back ends the claim. */
static inline bool claim_now(cpu_stream *s, size_t n)
{
    int idle = ST_IDLE;
    return s != NULL && n <= CPU__CALLER_RUN_MAX &&
           atomic_load_explicit(&s->dev->pending, memory_order_acquire) == 0 &&
           atomic_compare_exchange_strong_explicit(&s->sched, &idle, ST_CALLER, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline void give_back(cpu_stream *s)
{
    atomic_store_explicit(&s->sched, ST_IDLE, memory_order_release);
}

static infiniStatus_t copy(int dev, void *stream, void *dst, const void *src, size_t n)
{
    if (claim_now(stream, n)) {
        memmove(dst, src, n);
        give_back(stream);
        return INFINI_STATUS_SUCCESS;
    }
    cmd t = {.kind = CMD_COPY, .u.copy = {dst, src, n}};
    return submit(dev, stream, &t);
}

static infiniStatus_t fill(int dev, void *stream, void *dst, int value, size_t n)
{
    if (claim_now(stream, n)) {
        memset(dst, value, n);
        give_back(stream);
        return INFINI_STATUS_SUCCESS;
    }
    cmd t = {.kind = CMD_FILL, .u.fill = {dst, value, n}};
    return submit(dev, stream, &t);
}

static infiniStatus_t host_fn(int dev, void *stream, infinirtPluginHostFn fn, void *user)
{
    cmd t = {.kind = CMD_HOST_FN, .u.host = {fn, user}};
    return submit(dev, stream, &t);
}

static infiniStatus_t record(int dev, void *stream, cpu_event *e)
{
    cmd t = {.kind = CMD_RECORD, .u.ev = {e, 0}};
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
        cmd t = {.kind = CMD_ORDER};
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
        cmd t = {.kind = CMD_ORDER};
        return enqueue(s, &t);
    }
    cmd t = {.kind = CMD_AFTER, .u.after = {on, at}}; /* the command takes our reference */
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
    after *list;
    if (pending_streams(d, what == CPU__DRAIN_DEVICE ? FOR_DEVICE : FOR_SYNC, &list) != 0)
        return INFINI_STATUS_OUT_OF_MEMORY;
    wait_afters(list);
    return INFINI_STATUS_SUCCESS;
}

/* ---------------------------------------------------------- stream objects */

/* Listed on its device, for the default stream's order and the drains. */
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
    cpu_device *d = s->dev;
    pthread_mutex_lock(&d->lock);
    s->next = d->streams;
    d->streams = s;
    pthread_mutex_unlock(&d->lock);
    return INFINI_STATUS_SUCCESS;
}

static void stream_close(cpu_stream *s)
{
    cpu_device *d = s->dev;
    pthread_mutex_lock(&d->lock);
    for (cpu_stream **pp = &d->streams; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&d->lock);
    /* Its work first, and until no worker holds it. */
    stream_wait(s, atomic_load_explicit(&s->queued, memory_order_acquire), true);
}

static void stream_free(cpu_stream *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_done);
    free(s->ring);
}

static void queue_shutdown(void)
{
    for (int i = 0; i < cpu__device_count(); i++) {
        cpu_device *d = cpu__device(i);
        pthread_mutex_lock(&d->lock);
        cpu_stream *s = d->streams;
        d->streams = NULL;
        atomic_store(&d->default_stream, NULL);
        pthread_mutex_unlock(&d->lock);
        while (s != NULL) {
            cpu_stream *next = s->next;
            stream_wait(s, atomic_load(&s->queued), true);
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
