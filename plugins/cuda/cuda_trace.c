/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_trace.c - when the loader writes a trace (ABI 1.7), the work each
 * entry leaves queued is reported with the times the GPU ran it.
 *
 * The entry is bracketed by two timing events recorded on its stream: the
 * first completes when the work can start, the second when it is done.
 * They are never waited for one by one: each device keeps a list of
 * pending brackets, and whoever next passes through a traced entry or a
 * synchronize of the device polls it (cuEventQuery, which never blocks)
 * and reports the brackets that have completed.  The GPU's times become
 * CLOCK_MONOTONIC through an anchor: an event recorded on a stream of our
 * own and synchronized once (the one wait of the scheme), at a host time
 * read around it; cuEventElapsedTime from the anchor gives each event's
 * time.  Its float milliseconds keep microseconds for some seconds, so the
 * anchor is renewed every ANCHOR_NS.  Events come from a per-device list
 * and go back to it.  Work queued on a capturing stream is not run: it
 * takes an id and reports nothing.  Every driver call here runs in relaxed
 * capture mode, so no other thread's capture is touched.  Nothing of it
 * runs when no trace is written: each entry tests one pointer.
 */
#define _GNU_SOURCE
#include "cuda_internal.h"

#include <stdlib.h>
#include <time.h>

const infinirtPluginTrace *cuda__trace;

#define ANCHOR_NS 4000000000ull
#define POLL_MAX 256 /* brackets looked at per poll */

typedef struct bracket {
    struct bracket *next;
    uint64_t id;
    CUevent before, after;
} bracket;

typedef struct {
    pthread_mutex_t mu;
    bracket *head, *tail; /* pending, oldest first */
    CUevent *spare;       /* idle timing events */
    size_t nspare, capspare;
    CUstream own; /* the anchor's stream */
    CUevent anchor;
    uint64_t anchor_ns; /* CLOCK_MONOTONIC of `anchor`; 0: none yet */
} dev_trace;

static dev_trace *g_dev;
static int g_count;

static uint64_t host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cuda__trace_init(const infinirtPluginTrace *trace, int count)
{
    if (trace == NULL || count <= 0 || (g_dev = calloc((size_t)count, sizeof *g_dev)) == NULL)
        return;
    for (int i = 0; i < count; i++)
        pthread_mutex_init(&g_dev[i].mu, NULL);
    g_count = count;
    cuda__trace = trace;
}

/* An idle timing event of device t (its context current, t->mu held). */
static CUevent event_take(dev_trace *t)
{
    CUevent e = NULL;
    if (t->nspare > 0)
        return t->spare[--t->nspare];
    if (cuda__drv.EventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return NULL;
    return e;
}

static void event_give(dev_trace *t, CUevent e)
{
    if (e == NULL)
        return;
    if (t->nspare == t->capspare) {
        size_t cap = t->capspare ? t->capspare * 2 : 64;
        CUevent *n = realloc(t->spare, cap * sizeof *n);
        if (n == NULL) {
            cuda__drv.EventDestroy(e);
            return;
        }
        t->spare = n;
        t->capspare = cap;
    }
    t->spare[t->nspare++] = e;
}

/* The anchor, renewed when old (t->mu held, context current): 0 on success. */
static int anchor_fresh(dev_trace *t)
{
    uint64_t now = host_ns();
    if (t->anchor_ns != 0 && now - t->anchor_ns < ANCHOR_NS)
        return 0;
    if (t->own == NULL && cuda__drv.StreamCreate(&t->own, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        t->own = NULL;
        return -1;
    }
    if (t->anchor == NULL && (t->anchor = event_take(t)) == NULL)
        return -1;
    /* Recorded on an empty stream of our own, it completes at once: its
     * time lies between the two host readings. */
    uint64_t a = host_ns();
    if (cuda__drv.EventRecord(t->anchor, t->own) != CUDA_SUCCESS ||
        cuda__drv.EventSynchronize(t->anchor) != CUDA_SUCCESS)
        return -1;
    uint64_t b = host_ns();
    t->anchor_ns = a + (b - a) / 2;
    return 0;
}

/* The host time of a completed event (t->mu held, context current). */
static int event_ns(dev_trace *t, CUevent e, uint64_t *ns)
{
    float ms = 0;
    if (cuda__drv.EventElapsedTime(&ms, t->anchor, e) != CUDA_SUCCESS)
        return -1;
    double d = (double)ms * 1e6;
    *ns = d >= 0 ? t->anchor_ns + (uint64_t)d : t->anchor_ns - (uint64_t)-d;
    return 0;
}

/* Report the completed brackets of device t (t->mu held, context current).
 * Brackets on different streams complete in any order: up to POLL_MAX are
 * looked at, and only the complete ones leave the list. */
static void poll_locked(dev_trace *t)
{
    int looked = 0;
    for (bracket **pp = &t->head, *prev = NULL; *pp != NULL && looked < POLL_MAX; looked++) {
        bracket *b = *pp;
        CUresult r = cuda__drv.EventQuery(b->after);
        if (r == CUDA_ERROR_NOT_READY) {
            prev = b;
            pp = &b->next;
            continue;
        }
        uint64_t b0 = 0, b1 = 0;
        if (r != CUDA_SUCCESS || anchor_fresh(t) != 0 || event_ns(t, b->before, &b0) != 0 ||
            event_ns(t, b->after, &b1) != 0)
            b0 = b1 = host_ns(); /* no times: the host's view of it */
        cuda__trace->work_ran(b->id, b0, b1 > b0 ? b1 : b0);
        *pp = b->next;
        if (t->tail == b)
            t->tail = prev;
        event_give(t, b->before);
        event_give(t, b->after);
        free(b);
    }
}

/* Report device dev's traced work that has completed, without waiting
 * (any thread): after a synchronize, and on every traced entry. */
static void trace_poll(int dev)
{
    if (cuda__trace == NULL || dev < 0 || dev >= g_count)
        return;
    dev_trace *t = &g_dev[dev];
    pthread_mutex_lock(&t->mu);
    int pending = t->head != NULL;
    pthread_mutex_unlock(&t->mu);
    if (!pending)
        return;
    cuda__scope_t sc;
    if (cuda__enter(dev, &sc) != INFINI_STATUS_SUCCESS)
        return;
    int relaxed = cuda__relax();
    pthread_mutex_lock(&t->mu);
    poll_locked(t);
    pthread_mutex_unlock(&t->mu);
    cuda__unrelax(relaxed);
    cuda__leave(&sc);
}

/* Before an entry queuing work on stream: the bracket's first event, or
 * NULL (nothing to report: no id, a capturing stream, or no event). */
static bracket *bracket_begin(int dev, void *stream, cuda__scope_t *sc, int *relaxed)
{
    uint64_t id = cuda__trace->work_id();
    if (id == 0 || dev < 0 || dev >= g_count)
        return NULL;
    int capturing = 0;
    uint64_t cid = 0;
    infiniStatus_t cs = cuda__stream_is_capturing(dev, stream, &capturing, &cid);
    if ((cs != INFINI_STATUS_SUCCESS && cs != INFINI_STATUS_NOT_IMPLEMENTED) || capturing)
        return NULL; /* captured work does not run now: the id is never reported */
    bracket *b = calloc(1, sizeof *b);
    if (b == NULL || cuda__enter(dev, sc) != INFINI_STATUS_SUCCESS) {
        free(b);
        cuda__trace->work_ran(id, host_ns(), host_ns());
        return NULL;
    }
    *relaxed = cuda__relax();
    dev_trace *t = &g_dev[dev];
    pthread_mutex_lock(&t->mu);
    b->before = event_take(t);
    b->after = event_take(t);
    pthread_mutex_unlock(&t->mu);
    b->id = id;
    if (b->before == NULL || b->after == NULL ||
        cuda__drv.EventRecord(b->before, cuda__stream_of(stream)) != CUDA_SUCCESS) {
        pthread_mutex_lock(&t->mu);
        event_give(t, b->before);
        event_give(t, b->after);
        pthread_mutex_unlock(&t->mu);
        cuda__unrelax(*relaxed);
        cuda__leave(sc);
        free(b);
        cuda__trace->work_ran(id, host_ns(), host_ns());
        return NULL;
    }
    return b;
}

/* After the entry: the second event, the bracket on the list, a poll. */
static void bracket_end(int dev, void *stream, bracket *b, cuda__scope_t *sc, int relaxed, infiniStatus_t st)
{
    if (b == NULL) {
        trace_poll(dev);
        return;
    }
    dev_trace *t = &g_dev[dev];
    int queued =
        st == INFINI_STATUS_SUCCESS && cuda__drv.EventRecord(b->after, cuda__stream_of(stream)) == CUDA_SUCCESS;
    pthread_mutex_lock(&t->mu);
    if (queued) {
        if (t->tail != NULL)
            t->tail->next = b;
        else
            t->head = b;
        t->tail = b;
    } else {
        event_give(t, b->before);
        event_give(t, b->after);
    }
    poll_locked(t);
    pthread_mutex_unlock(&t->mu);
    cuda__unrelax(relaxed);
    cuda__leave(sc);
    if (!queued) {
        if (st == INFINI_STATUS_SUCCESS) /* queued, but without its end event */
            cuda__trace->work_ran(b->id, host_ns(), host_ns());
        free(b);
    }
}

#define TRACED(dev, stream, call)                                   \
    do {                                                            \
        if (cuda__trace == NULL)                                    \
            return (call);                                          \
        cuda__scope_t sc;                                           \
        int relaxed = -1;                                           \
        bracket *b = bracket_begin((dev), (stream), &sc, &relaxed); \
        infiniStatus_t st = (call);                                 \
        bracket_end((dev), (stream), b, &sc, relaxed, st);          \
        return st;                                                  \
    } while (0)

infiniStatus_t cuda__traced_memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream)
{
    TRACED(dev, stream, cuda__memcpy_async(dev, dst, src, size, kind, stream));
}

infiniStatus_t cuda__traced_memset_async(int dev, void *ptr, int value, size_t size, void *stream)
{
    TRACED(dev, stream, cuda__memset_async(dev, ptr, value, size, stream));
}

infiniStatus_t cuda__traced_launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data)
{
    TRACED(dev, stream, cuda__launch_host_func(dev, stream, fn, user_data));
}

infiniStatus_t cuda__traced_event_record(int dev, void *event, void *stream)
{
    TRACED(dev, stream, cuda__event_record(dev, event, stream));
}

infiniStatus_t cuda__traced_stream_wait_event(int dev, void *stream, void *event)
{
    TRACED(dev, stream, cuda__stream_wait_event(dev, stream, event));
}

infiniStatus_t cuda__traced_graph_launch(int dev, void *exec, void *stream)
{
    TRACED(dev, stream, cuda__graph_launch(dev, exec, stream));
}

/* The synchronizes: what they waited for has completed, so its brackets
 * are reported now rather than at some later entry. */
infiniStatus_t cuda__traced_stream_synchronize(int dev, void *stream)
{
    infiniStatus_t st = cuda__stream_synchronize(dev, stream);
    trace_poll(dev);
    return st;
}

infiniStatus_t cuda__traced_device_synchronize(int dev)
{
    infiniStatus_t st = cuda__device_synchronize(dev);
    trace_poll(dev);
    return st;
}

infiniStatus_t cuda__traced_event_synchronize(int dev, void *event)
{
    infiniStatus_t st = cuda__event_synchronize(dev, event);
    trace_poll(dev);
    return st;
}
