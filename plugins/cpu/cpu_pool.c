/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_pool.c - the worker threads of async mode, and how a worker runs a
 * stream's ring: in order, parking the stream on what its first command
 * waits for (an event's stream, the default stream) instead of holding
 * the thread.
 *
 * A run queue of streams that have work, and up to `workers` threads
 * taking streams from it (started one by one, when work finds no idle
 * worker: creating a stream starts nothing).  A stream is on the queue at
 * most once and run by at most one worker at a time (its state, `sched`,
 * is described in cpu_queue.c), so its order holds.
 *
 * A worker with nothing to do spins for a short while before it sleeps, so
 * a caller that queues work right after the last command completed finds
 * it awake, and queueing costs no system call.  Pushing wakes a sleeper
 * only when no spinning worker will take the stream.
 *
 * Host functions may block (waiting for a gate, for I/O, for another
 * stream): when every worker is inside one and a stream is waiting, the
 * pool starts another thread, up to `max_workers`.  Threads past `workers`
 * leave after a while with nothing to do.
 *
 * Template: CPU only (an extra of this backend, with cpu_queue.c and
 * cpu_busy.c).  A device with its own queues needs no threads of its own.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* How long an idle worker spins before it sleeps, and how long a thread
 * past `workers` sleeps before it leaves. */
#define SPIN_NS 20000
#define SURPLUS_IDLE_MS 50

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* work was queued, or stop */
    pthread_cond_t cv_exit;  /* the last thread left (stop) */
    cpu_stream *head, *tail; /* run queue (mu) */
    atomic_int queued;       /* its length: spinners read it without mu */
    atomic_int threads;      /* started and not yet left (written under mu) */
    atomic_int in_fn;        /* threads inside a host function */
    int sleeping;            /* in cv (mu) */
    int starting;            /* started, not yet in their loop (mu) */
    int spinning;            /* looking at `queued` without mu (mu) */
    bool stop;
    bool warned_limit, warned_start;
} g_pool = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
    .cv_exit = PTHREAD_COND_INITIALIZER,
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg);

/* Under mu.  False when the thread could not be started. */
static bool start_thread(void)
{
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, worker, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        if (!g_pool.warned_start) {
            g_pool.warned_start = true;
            cpu__log(INFINIRT_PLUGIN_LOG_WARN, "cpu", "could not start a stream worker thread (error %d); %d run", rc,
                     atomic_load(&g_pool.threads));
        }
        return false;
    }
    atomic_fetch_add(&g_pool.threads, 1);
    g_pool.starting++;
    return true;
}

/* Under mu: start a thread if the queue holds more streams than there are
 * idle workers to take them, and the pool may grow: below `workers`, or
 * every thread sits in a host function (which may never return). */
static void maybe_grow(void)
{
    int threads = atomic_load(&g_pool.threads);
    int waiting = atomic_load(&g_pool.queued);
    /* A thread still starting takes queued work once it is in its loop:
     * counting it keeps one push from starting a second thread (on this
     * stream's first push, cpu__pool_ready has just started one). */
    if (waiting <= g_pool.sleeping + g_pool.spinning + g_pool.starting)
        return;
    if (threads < cpu__settings.workers) {
        start_thread();
    } else if (atomic_load(&g_pool.in_fn) >= threads) {
        if (threads < cpu__settings.max_workers) {
            start_thread();
        } else if (!g_pool.warned_limit) {
            g_pool.warned_limit = true;
            cpu__log(INFINIRT_PLUGIN_LOG_WARN, "cpu",
                     "all %d stream workers (max_workers) are inside host functions: other streams wait until "
                     "one returns",
                     threads);
        }
    }
}

void cpu__pool_push(cpu_stream *s)
{
    pthread_mutex_lock(&g_pool.mu);
    s->run_next = NULL;
    if (g_pool.tail != NULL)
        g_pool.tail->run_next = s;
    else
        g_pool.head = s;
    g_pool.tail = s;
    int waiting = atomic_fetch_add(&g_pool.queued, 1) + 1;
    if (waiting > g_pool.spinning && g_pool.sleeping > 0)
        pthread_cond_signal(&g_pool.cv);
    else
        maybe_grow();
    pthread_mutex_unlock(&g_pool.mu);
}

infiniStatus_t cpu__pool_ready(void)
{
    if (atomic_load_explicit(&g_pool.threads, memory_order_relaxed) > 0)
        return INFINI_STATUS_SUCCESS;
    pthread_mutex_lock(&g_pool.mu);
    bool ok = atomic_load(&g_pool.threads) > 0 || start_thread();
    pthread_mutex_unlock(&g_pool.mu);
    return ok ? INFINI_STATUS_SUCCESS : INFINI_STATUS_OUT_OF_MEMORY;
}

/* The counter and the queue length are both sequentially consistent: a
 * push that saw this thread outside host functions (and so did not grow)
 * is seen here, and this thread grows the pool. */
static void fn_enter(void)
{
    int in = atomic_fetch_add(&g_pool.in_fn, 1) + 1;
    if (atomic_load(&g_pool.queued) > 0 && in >= atomic_load(&g_pool.threads)) {
        pthread_mutex_lock(&g_pool.mu);
        maybe_grow();
        pthread_mutex_unlock(&g_pool.mu);
    }
}

static void fn_leave(void)
{
    atomic_fetch_sub(&g_pool.in_fn, 1);
}

/* Commands a worker runs from one stream before it lets others have a turn
 * (when others wait). */
#define TURN 64

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
        bool push = atomic_load_explicit(&s->sched, memory_order_relaxed) == CPU__ST_PARKED;
        if (push)
            atomic_store_explicit(&s->sched, CPU__ST_QUEUED, memory_order_relaxed);
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
static bool wait_ready(cpu_stream *s, const cpu_cmd *c)
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

/* ------------------------------------------------------ running a stream */

static void run(const cpu_cmd *c)
{
    switch (c->kind) {
    case CPU__CMD_COPY:
        memmove(c->u.copy.dst, c->u.copy.src, c->u.copy.n);
        break;
    case CPU__CMD_FILL:
        memset(c->u.fill.dst, c->u.fill.value, c->u.fill.n);
        break;
    case CPU__CMD_HOST_FN:
        fn_enter();
        cpu__call_host_fn(c->u.host.fn, c->u.host.user);
        fn_leave();
        break;
    case CPU__CMD_RECORD:
        cpu__event_complete(c->u.ev.e, c->u.ev.gen);
        break;
    case CPU__CMD_AFTER:
        break; /* wait_ready said it is over */
    case CPU__CMD_ORDER:
        break; /* never queued */
    }
}

/* What a completed command held. */
static void finish(const cpu_cmd *c)
{
    if (c->kind == CPU__CMD_RECORD)
        cpu__event_put(c->u.ev.e);
    else if (c->kind == CPU__CMD_AFTER)
        cpu__stream_put(c->u.after.s);
}

/* Run s (popped from the run queue) until it is idle, parked, or has had
 * its turn (then it is queued again). */
static void stream_run(cpu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    atomic_store_explicit(&s->sched, CPU__ST_RUNNING, memory_order_relaxed);
    for (int turn = 0;; turn++) {
        if (s->count == 0) {
            /* Release: a caller that claims the stream without the mutex
             * sees every command's effects. */
            atomic_store_explicit(&s->sched, CPU__ST_IDLE, memory_order_release);
            if (s->waiters > 0)
                pthread_cond_broadcast(&s->cv_done); /* stream_free waits for IDLE */
            pthread_mutex_unlock(&s->mu);
            return;
        }
        if (turn >= TURN) {
            /* Others may be waiting for a worker: to the back of the queue. */
            atomic_store_explicit(&s->sched, CPU__ST_QUEUED, memory_order_relaxed);
            pthread_mutex_unlock(&s->mu);
            cpu__pool_push(s);
            return;
        }
        cpu_cmd c = s->ring[s->first];
        pthread_mutex_unlock(&s->mu);
        if (c.kind == CPU__CMD_AFTER && !wait_ready(s, &c)) {
            pthread_mutex_lock(&s->mu);
            if (s->rewake) { /* it ended while we were linking */
                s->rewake = false;
                turn--;
                continue;
            }
            atomic_store_explicit(&s->sched, CPU__ST_PARKED, memory_order_relaxed);
            pthread_mutex_unlock(&s->mu);
            return;
        }
        uint64_t began = c.trace_id != 0 ? now_ns() : 0;
        run(&c);
        if (c.trace_id != 0)
            cpu__trace->work_ran(c.trace_id, began, now_ns());
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

static void *worker(void *arg)
{
    (void)arg;
#ifdef __linux__
    /* Seen in top, gdb and /proc/self/task/N/comm (the tests count them). */
    pthread_setname_np(pthread_self(), "infinirt-cpu");
#endif
    pthread_mutex_lock(&g_pool.mu);
    g_pool.starting--;
    for (;;) {
        cpu_stream *s = g_pool.head;
        if (s != NULL) {
            g_pool.head = s->run_next;
            if (g_pool.head == NULL)
                g_pool.tail = NULL;
            atomic_fetch_sub(&g_pool.queued, 1);
            pthread_mutex_unlock(&g_pool.mu);
            stream_run(s);
            pthread_mutex_lock(&g_pool.mu);
            continue;
        }
        if (g_pool.stop)
            break;
        /* Spin a while without the lock: the next command often comes
         * within microseconds of the last one completing. */
        g_pool.spinning++;
        pthread_mutex_unlock(&g_pool.mu);
        uint64_t until = now_ns() + SPIN_NS;
        for (unsigned i = 1; atomic_load_explicit(&g_pool.queued, memory_order_relaxed) == 0; i++) {
            CPU__RELAX();
            if ((i & 63) == 0 && now_ns() >= until)
                break;
        }
        pthread_mutex_lock(&g_pool.mu);
        g_pool.spinning--;
        if (g_pool.head != NULL || g_pool.stop)
            continue;
        g_pool.sleeping++;
        if (atomic_load(&g_pool.threads) > cpu__settings.workers) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += SURPLUS_IDLE_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            int rc = pthread_cond_timedwait(&g_pool.cv, &g_pool.mu, &ts);
            g_pool.sleeping--;
            if (rc == ETIMEDOUT && g_pool.head == NULL && atomic_load(&g_pool.threads) > cpu__settings.workers)
                break; /* a surplus thread with nothing to do */
        } else {
            pthread_cond_wait(&g_pool.cv, &g_pool.mu);
            g_pool.sleeping--;
        }
    }
    if (atomic_fetch_sub(&g_pool.threads, 1) == 1)
        pthread_cond_broadcast(&g_pool.cv_exit);
    pthread_mutex_unlock(&g_pool.mu);
    return NULL;
}

void cpu__pool_shutdown(void)
{
    pthread_mutex_lock(&g_pool.mu);
    g_pool.stop = true;
    pthread_cond_broadcast(&g_pool.cv);
    while (atomic_load(&g_pool.threads) > 0)
        pthread_cond_wait(&g_pool.cv_exit, &g_pool.mu);
    g_pool.stop = false; /* a later init may start again */
    pthread_mutex_unlock(&g_pool.mu);
}
