/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_libcuda_graph.c - stream capture and graphs of the fake driver.
 *
 * The model, after CUDA's rules (cuda.h's documentation of the capture
 * calls and errors 900..908):
 *  - cuStreamBeginCapture_v2 puts a stream (never the legacy one) in a new
 *    capture with a process-unique id.  What is queued on it afterwards
 *    (copies, fills, host functions, fake "kernels", graph launches) is
 *    appended to the capture's list instead of running.  An event recorded
 *    on it is a marker of the capture; another stream that waits for it
 *    joins the capture (a fork) and must be joined back: the origin (or a
 *    stream that is later joined back) waits for an event the forked
 *    stream recorded after its last operation.  The captured list is one
 *    sequence in issue order, which is a valid order of the forked work.
 *  - cuStreamEndCapture on the origin, on the thread that began it (unless
 *    relaxed), ends the capture: a CUgraph with the list, or no graph and
 *    INVALIDATED (901) / UNJOINED (904).  Every stream leaves the capture.
 *  - A graph instantiated (the exec holds its own copy) and launched queues
 *    the list in order on the launch stream, so memory is read at launch
 *    time; launches queued before cuGraphExecDestroy still run.  A launch
 *    runs after the exec's previous launch, on whatever stream that was
 *    (cuGraphLaunch's documentation: ordered behind earlier work on the
 *    stream and earlier launches of the exec): the exec records a hidden
 *    event after each launch and the next launch waits for it.  Launches
 *    of different execs do not wait for each other.
 *  - Refused, with the capture invalidated: synchronizing, querying or
 *    destroying a capturing stream (900), cuCtxSynchronize while a stream
 *    of the context captures (900), work or a synchronous copy on the
 *    legacy stream while a blocking stream captures (906), waiting in a
 *    capture for an event recorded outside it (905) or in another capture
 *    (902), and the "potentially unsafe" calls (cuMemAlloc, cuMemFree,
 *    cuMemHostAlloc, cuMemFreeHost, cuEventQuery, cuEventSynchronize:
 *    900) as cuThreadExchangeStreamCaptureMode's documentation says: in
 *    global mode while this thread has a non-relaxed capture or any thread
 *    has a global one, in thread-local mode while this thread has a
 *    non-relaxed one, never in relaxed mode.  Querying or synchronizing an
 *    event recorded in a capture that goes on (907), and the capture is
 *    invalidated; after that, or once the capture ended, the event answers
 *    queries, synchronizes, waits and elapsed times with
 *    CUDA_ERROR_INVALID_VALUE until recorded outside a capture (all as an
 *    H100 with driver 580.159.04 did).  Refused without invalidation:
 *    ending a capture from the wrong thread (908) or stream (903).
 *  - An invalidated capture refuses further work (901) until ended.
 *
 * Built with FAKE_CUDA_OMIT_GRAPHS the driver exports none of the cu*
 * functions of this file; the hooks the stream code calls stay (no capture
 * ever begins then).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "fake_libcuda.h"

struct fake_capture {
    struct fake_capture *next;
    unsigned long long id;
    CUstreamCaptureMode mode;
    pthread_t thread; /* the thread that began it */
    int invalid;
    struct CUstream_st *origin;
    fake_op *head, *tail;
};

struct CUgraph_st {
    struct CUgraph_st *next_live;
    fake_op *ops;
};

struct CUgraphExec_st {
    struct CUgraphExec_st *next_live;
    fake_ctx *ctx;
    fake_op *ops;
    struct CUevent_st *done; /* hidden: recorded after each launch */
};

static struct fake_capture *captures; /* going on (invalidated ones too) */
static struct CUgraph_st *live_graphs;
static struct CUgraphExec_st *live_execs;
static unsigned long long next_capture_id;
static int invalidations;
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

int fake_cuda_live_graphs(void)
{
    int n = 0;
    pthread_mutex_lock(&fake_lock);
    for (struct CUgraph_st *g = live_graphs; g != NULL; g = g->next_live)
        n++;
    pthread_mutex_unlock(&fake_lock);
    return n;
}

int fake_cuda_live_execs(void)
{
    int n = 0;
    pthread_mutex_lock(&fake_lock);
    for (struct CUgraphExec_st *x = live_execs; x != NULL; x = x->next_live)
        n++;
    pthread_mutex_unlock(&fake_lock);
    return n;
}

int fake_cuda_active_captures(void)
{
    int n = 0;
    pthread_mutex_lock(&fake_lock);
    for (struct fake_capture *c = captures; c != NULL; c = c->next)
        n++;
    pthread_mutex_unlock(&fake_lock);
    return n;
}

int fake_cuda_invalidations(void)
{
    pthread_mutex_lock(&fake_lock);
    int n = invalidations;
    pthread_mutex_unlock(&fake_lock);
    return n;
}

static void free_list(fake_op *o)
{
    while (o != NULL) {
        fake_op *next = o->next;
        free(o);
        o = next;
    }
}

/* A copy of list into *out. */
static CUresult copy_list(const fake_op *list, fake_op **out)
{
    fake_op *head = NULL, **tail = &head;

    for (const fake_op *o = list; o != NULL; o = o->next) {
        fake_op *q = malloc(sizeof *q);
        if (q == NULL) {
            free_list(head);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        *q = *o;
        q->next = NULL;
        *tail = q;
        tail = &q->next;
    }
    *out = head;
    return CUDA_SUCCESS;
}

/* ---- hooks for the stream code (called with the lock) ---- */

void fake_capture_invalidate_locked(struct fake_capture *c)
{
    if (!c->invalid) {
        c->invalid = 1;
        invalidations++;
    }
}

CUresult fake_capture_append_locked(struct CUstream_st *s, const fake_op *o)
{
    struct fake_capture *c = s->cap;
    fake_op *q;

    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    q = malloc(sizeof *q);
    if (q == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *q = *o;
    q->next = NULL;
    q->ev = NULL;
    q->mark = NULL;
    q->seq = 0;
    if (c->tail != NULL)
        c->tail->next = q;
    else
        c->head = q;
    c->tail = q;
    s->cap_ops++;
    if (s != c->origin)
        s->cap_unjoined = 1;
    return CUDA_SUCCESS;
}

CUresult fake_capture_unsafe_call_locked(void)
{
    int refused = 0;

    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    for (struct fake_capture *c = captures; c != NULL; c = c->next) {
        int mine = pthread_equal(c->thread, pthread_self());
        if (c->mode == CU_STREAM_CAPTURE_MODE_RELAXED)
            continue;
        if (mine || (thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            fake_capture_invalidate_locked(c);
            refused = 1;
        }
    }
    return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

static int capturing_blocking(const struct CUstream_st *b, const fake_ctx *ctx)
{
    return b->ctx == ctx && !b->legacy && !(b->flags & CU_STREAM_NON_BLOCKING) && b->cap != NULL;
}

CUresult fake_capture_implicit_locked(const fake_ctx *ctx)
{
    int refused = 0;

    for (struct CUstream_st *b = fake_live; b != NULL; b = b->next_live)
        if (capturing_blocking(b, ctx)) {
            fake_capture_invalidate_locked(b->cap);
            refused = 1;
        }
    return refused ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}

int fake_capture_any_in_ctx_invalidate_locked(const fake_ctx *ctx)
{
    int any = 0;

    for (struct CUstream_st *s = fake_live; s != NULL; s = s->next_live)
        if (s->ctx == ctx && s->cap != NULL) {
            fake_capture_invalidate_locked(s->cap);
            any = 1;
        }
    return any;
}

CUresult fake_capture_record_locked(struct CUstream_st *s, struct CUevent_st *e)
{
    if (s->cap->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    e->cap = s->cap;
    e->cap_stream = s;
    e->cap_seq = s->cap_ops;
    e->cap_stale = 1;
    return CUDA_SUCCESS;
}

/* As an H100 with driver 580.159.04 answered, in every capture mode. */
CUresult fake_capture_event_use_locked(struct CUevent_st *e)
{
    if (e->cap != NULL && !e->cap->invalid) {
        fake_capture_invalidate_locked(e->cap);
        return CUDA_ERROR_CAPTURED_EVENT;
    }
    return e->cap_stale ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult fake_capture_wait_locked(struct CUstream_st *s, struct CUevent_st *e)
{
    struct fake_capture *c = e->cap;

    if (s->cap != NULL && s->cap->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (c == NULL) {
        /* s captures; e was recorded outside: a dependency across the
         * boundary.  A never-recorded event is nothing to wait for. */
        if (e->recorded == 0)
            return CUDA_SUCCESS;
        fake_capture_invalidate_locked(s->cap);
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (s->cap == NULL) {
        if (s->legacy) { /* the legacy stream cannot capture */
            fake_capture_invalidate_locked(c);
            return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
        s->cap = c; /* fork */
        s->cap_ops = 0;
        s->cap_unjoined = 1;
        return CUDA_SUCCESS;
    }
    if (s->cap != c) {
        fake_capture_invalidate_locked(c);
        fake_capture_invalidate_locked(s->cap);
        return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    /* A join: the recording stream added nothing since the record, so
     * what it owes the origin passes to s (nothing when s is the origin). */
    struct CUstream_st *from = e->cap_stream;
    if (from != s && from->cap == c && from->cap_ops == e->cap_seq && from != c->origin) {
        from->cap_unjoined = 0;
        if (s != c->origin)
            s->cap_unjoined = 1;
    }
    return CUDA_SUCCESS;
}

/* The capture ends: every stream and event leaves it, and it goes. */
static void capture_end_locked(struct fake_capture *c)
{
    for (struct CUstream_st *s = fake_live; s != NULL; s = s->next_live)
        if (s->cap == c) {
            s->cap = NULL;
            s->cap_ops = 0;
            s->cap_unjoined = 0;
        }
    for (struct CUevent_st *e = fake_live_ev; e != NULL; e = e->next_live)
        if (e->cap == c) {
            e->cap = NULL;
            e->cap_stream = NULL;
        }
    for (struct fake_capture **pp = &captures; *pp != NULL; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    free_list(c->head);
    free(c);
}

#ifndef FAKE_CUDA_OMIT_GRAPHS

CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    NEED_INIT();
    if (mode == NULL || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode)
{
    struct CUstream_st *s;
    CUresult r;

    if (h == NULL || h == CU_STREAM_LEGACY) {
        NEED_CTX();
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if ((r = fake_stream_of(h, 0, &s)) != CUDA_SUCCESS)
        return r;
    if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_capture *c = calloc(1, sizeof *c);
    if (c == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&fake_lock);
    if (s->cap != NULL) {
        pthread_mutex_unlock(&fake_lock);
        free(c);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    c->id = ++next_capture_id;
    c->mode = mode;
    c->thread = pthread_self();
    c->origin = s;
    c->next = captures;
    captures = c;
    s->cap = c;
    s->cap_ops = 0;
    s->cap_unjoined = 0;
    pthread_mutex_unlock(&fake_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream h, CUgraph *pg)
{
    struct CUstream_st *s;
    struct CUgraph_st *g = NULL;
    CUresult r;

    if (pg == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pg = NULL;
    if ((r = fake_stream_of(h, 0, &s)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fake_lock);
    struct fake_capture *c = s->cap;
    if (c == NULL) {
        r = CUDA_ERROR_ILLEGAL_STATE;
    } else if (c->origin != s) {
        fake_capture_invalidate_locked(c);
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    } else if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self())) {
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    } else {
        int unjoined = 0;
        for (struct CUstream_st *f = fake_live; f != NULL; f = f->next_live)
            unjoined |= f->cap == c && f->cap_unjoined;
        if (c->invalid)
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else if (unjoined)
            r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
        else if ((g = calloc(1, sizeof *g)) == NULL)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        if (g != NULL) {
            g->ops = c->head;
            c->head = c->tail = NULL;
            g->next_live = live_graphs;
            live_graphs = g;
        }
        capture_end_locked(c);
    }
    pthread_mutex_unlock(&fake_lock);
    *pg = g;
    return r;
}

/* Status (and id) of a stream's capture.  On the legacy stream while a
 * blocking stream captures: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, as CUDA
 * documents (a query: nothing is invalidated). */
static CUresult capture_info(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id)
{
    struct CUstream_st *s;
    CUresult r;

    if (status == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fake_stream_of(h, 0, &s)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fake_lock);
    if (s->legacy) {
        for (struct CUstream_st *b = fake_live; b != NULL; b = b->next_live)
            if (capturing_blocking(b, s->ctx))
                r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    if (r == CUDA_SUCCESS) {
        *status = s->cap == NULL    ? CU_STREAM_CAPTURE_STATUS_NONE
                  : s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                    : CU_STREAM_CAPTURE_STATUS_ACTIVE;
        if (id != NULL && s->cap != NULL)
            *id = s->cap->id;
    }
    pthread_mutex_unlock(&fake_lock);
    return r;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *status)
{
    return capture_info(h, status, NULL);
}

/* The CUDA 10.1 form under its own name; cuda.h maps the name to _v3. */
#undef cuStreamGetCaptureInfo
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id)
{
    return capture_info(h, status, id);
}

static CUresult instantiate(CUgraphExec *pe, CUgraph g)
{
    struct CUgraphExec_st *x;
    CUresult r = CUDA_ERROR_INVALID_VALUE;

    NEED_CTX();
    if (pe == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    x = calloc(1, sizeof *x);
    if (x == NULL || (x->done = calloc(1, sizeof *x->done)) == NULL) {
        free(x);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    x->done->ctx = fake_current;
    x->done->refs = 1; /* the exec's; each queued record or wait holds one */
    pthread_mutex_lock(&fake_lock);
    for (struct CUgraph_st *l = live_graphs; l != NULL; l = l->next_live)
        if (l == g)
            r = copy_list(g->ops, &x->ops);
    if (r == CUDA_SUCCESS) {
        x->ctx = fake_current;
        x->next_live = live_execs;
        live_execs = x;
    }
    pthread_mutex_unlock(&fake_lock);
    if (r != CUDA_SUCCESS) {
        free(x->done);
        free(x);
        return r;
    }
    *pe = x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags)
{
    if (flags != 0) /* the plugin asks for none */
        return CUDA_ERROR_INVALID_VALUE;
    return instantiate(pe, g);
}

/* The CUDA 11.0 form, with the driver's own log. */
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *pe, CUgraph g, CUgraphNode *error_node, char *log,
                                       size_t log_size)
{
    CUresult r = instantiate(pe, g);

    if (error_node != NULL)
        *error_node = NULL;
    if (log != NULL && log_size > 0) {
        const char *text = r == CUDA_SUCCESS ? "" : "fake libcuda: not a live graph";
        size_t i = 0;
        for (; text[i] != '\0' && i + 1 < log_size; i++)
            log[i] = text[i];
        log[i] = '\0';
    }
    return r;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec x, CUstream h)
{
    struct CUstream_st *s;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    int found = 0;

    NEED_CTX();
    {
        CUresult rs = fake_stream_of(h, 0, &s);
        if (rs != CUDA_SUCCESS)
            return rs;
    }
    pthread_mutex_lock(&fake_lock);
    for (struct CUgraphExec_st *l = live_execs; l != NULL && !found; l = l->next_live)
        found = l == x;
    if (found && x->ctx == s->ctx) {
        /* Behind the exec's previous launch (captured: a child graph's
         * work, which orders nothing here). */
        struct CUevent_st *e = x->done;
        r = CUDA_SUCCESS;
        if (s->cap == NULL && e->completed < e->recorded)
            r = fake_enqueue_locked(s, (fake_op){.kind = OP_WAIT, .ev = e, .mark = e->mark}, NULL);
        if (r == CUDA_SUCCESS)
            r = fake_enqueue_list_locked(s, x->ops);
        if (r == CUDA_SUCCESS && s->cap == NULL)
            r = fake_enqueue_locked(s, (fake_op){.kind = OP_RECORD, .ev = e}, NULL);
    }
    pthread_mutex_unlock(&fake_lock);
    return r;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec x)
{
    struct CUgraphExec_st *found = NULL;

    NEED_INIT();
    pthread_mutex_lock(&fake_lock);
    for (struct CUgraphExec_st **pp = &live_execs; *pp != NULL; pp = &(*pp)->next_live)
        if (*pp == x) {
            found = x;
            *pp = x->next_live;
            event_unref_locked(x->done); /* queued records and waits hold theirs */
            break;
        }
    pthread_mutex_unlock(&fake_lock);
    if (found == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    free_list(found->ops); /* queued launches hold copies */
    free(found);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph g)
{
    struct CUgraph_st *found = NULL;

    NEED_INIT();
    pthread_mutex_lock(&fake_lock);
    for (struct CUgraph_st **pp = &live_graphs; *pp != NULL; pp = &(*pp)->next_live)
        if (*pp == g) {
            found = g;
            *pp = g->next_live;
            break;
        }
    pthread_mutex_unlock(&fake_lock);
    if (found == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    free_list(found->ops);
    free(found);
    return CUDA_SUCCESS;
}

#endif /* FAKE_CUDA_OMIT_GRAPHS */
