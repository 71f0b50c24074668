/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capture.c - stream capture (docs/graphs.md): the loader's own, or the
 * plugin's native one, and infinirtStreamBeginCapture / EndCapture.
 *
 * Two kinds of capture share one front end:
 *  - a loader capture (plugins without native graphs): the operations
 *    issued on a capturing stream are recorded here instead of reaching the
 *    plugin, and a launch (graph.c) issues them again on the launch stream -
 *    on the CPU backend as one host function that runs them all;
 *  - a native capture (plugins with the ABI 1.2 graph entries): the plugin
 *    captures; the loader keeps handles, refuses what may not be captured
 *    and applies the allocator's rules.
 *
 * Memory: every capture has a gmem (graph_mem.c) that its graph inherits.
 *
 * Locking: infinirt__capture_mu guards every capture (its ops, members,
 * flags), the stream/event capture fields, the devices' capture lists and
 * the gmems' lists; the hash of held blocks has its own locks, taken inside
 * it where both are needed.
 */
#define _GNU_SOURCE
#include "graph_int.h"
#include "alloc_faults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- capture */

typedef struct {
    infinirt__stream *s;
    uint64_t last;  /* seq of its fork or last operation */
    int64_t joined; /* latest seq of its records the capture waited on; -1 none */
} member;

struct infinirt__capture {
    infinirt__device *dev;
    infinirt__stream *origin; /* NULL: begun natively by the application */
    int mode;
    bool native;
    uint64_t native_id;
    bool invalid;
    char why[256];
    uint64_t seq; /* operations, records and waits so far */
    infinirt__gop *ops;
    size_t nops, capops;
    member *members;
    size_t nmembers, capmembers;
    infinirt__event **events; /* recorded in it, a reference each */
    size_t nevents, capevents;
    gmem *mem;
    infinirt__capture *next; /* dev->capture_list */
};
static void invalidate_locked(infinirt__capture *c, const char *why)
{
    if (!c->invalid) {
        c->invalid = true;
        snprintf(c->why, sizeof c->why, "%s", why);
    }
}

static member *member_of(infinirt__capture *c, const infinirt__stream *s)
{
    for (size_t i = 0; i < c->nmembers; i++)
        if (c->members[i].s == s)
            return &c->members[i];
    return NULL;
}

static int grow(void **a, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *n = realloc(*a, nc * elem);
    if (n == NULL)
        return -1;
    *a = n;
    *cap = nc;
    return 0;
}

bool infinirt__native_capturing(infinirt__stream *s)
{
    /* For the default stream (ps NULL) the plugin answers whether using it
     * would touch a capture (a blocking stream captures). */
    int c = 0;
    uint64_t id = 0;
    infinirt__device *dev = s->dev;
    return dev->plugin->ops->stream_is_capturing(dev->index, s->ps, &c, &id) == INFINI_STATUS_SUCCESS && c;
}

/* The capture s takes part in (caller holds infinirt__capture_mu): its own, or on a plugin
 * with native graphs the one its backend says it is in (a stream that
 * joined a capture natively, or a capture the application began
 * natively: then one is made here, `create`). */
static infinirt__capture *capture_of_locked(infinirt__stream *s, bool create)
{
    infinirt__capture *c = infinirt__stream_capture(s);
    infinirt__device *dev = s->dev;
    if (c != NULL || s->is_default || !INFINIRT__NATIVE_GRAPHS(dev->plugin))
        return c;
    int capturing = 0;
    uint64_t id = 0;
    if (dev->plugin->ops->stream_is_capturing(dev->index, s->ps, &capturing, &id) != INFINI_STATUS_SUCCESS ||
        !capturing)
        return NULL;
    for (c = dev->capture_list; c != NULL; c = c->next)
        if (c->native && c->native_id == id)
            return c;
    if (!create || (c = calloc(1, sizeof *c)) == NULL)
        return NULL;
    if ((c->mem = infinirt__gmem_new(dev)) == NULL) {
        free(c);
        return NULL;
    }
    c->dev = dev;
    c->native = true;
    c->native_id = id;
    c->next = dev->capture_list;
    dev->capture_list = c;
    atomic_fetch_add(&dev->captures, 1);
    return c;
}

/* Take c off its device and its streams and events (caller holds infinirt__capture_mu).
 * Returns the events whose references the caller drops after unlocking. */
static void detach_locked(infinirt__capture *c)
{
    infinirt__device *dev = c->dev;
    for (infinirt__capture **pp = &dev->capture_list; *pp != NULL; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            atomic_fetch_sub(&dev->captures, 1);
            break;
        }
    if (c->origin != NULL)
        atomic_store_explicit(&c->origin->capture, NULL, memory_order_release);
    for (size_t i = 0; i < c->nmembers; i++)
        atomic_store_explicit(&c->members[i].s->capture, NULL, memory_order_release);
    for (size_t i = 0; i < c->nevents; i++) {
        infinirt__capture *want = c;
        atomic_compare_exchange_strong(&c->events[i]->captured, &want, NULL);
    }
}

/* Free a detached capture; its gmem reference goes with it unless
 * keep_mem (moved to a graph). */
static void capture_free(infinirt__capture *c, bool keep_mem)
{
    for (size_t i = 0; i < c->nevents; i++)
        infinirt__event_put(c->events[i]);
    if (!keep_mem)
        infinirt__gmem_put(c->mem);
    free(c->events);
    free(c->members);
    free(c->ops);
    free(c);
}

infiniStatus_t infinirt__capture_op(infinirt__stream *s, const infinirt__gop *op, const char *fn, bool *recorded)
{
    *recorded = false;
    pthread_mutex_lock(&infinirt__capture_mu);
    infinirt__capture *c = infinirt__stream_capture(s);
    if (c == NULL || c->native) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return INFINI_STATUS_SUCCESS;
    }
    if (c->invalid) {
        char why[256];
        snprintf(why, sizeof why, "%s", c->why);
        pthread_mutex_unlock(&infinirt__capture_mu);
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn,
                              "stream %p is in a capture that was invalidated (%s); end it with "
                              "infinirtStreamEndCapture",
                              s->native, why);
    }
    if (grow((void **)&c->ops, &c->capops, c->nops + 1, sizeof *c->ops) != 0) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, fn, "no memory to record an operation in a capture");
    }
    c->ops[c->nops++] = *op;
    member *m = member_of(c, s);
    if (m != NULL)
        m->last = c->seq;
    c->seq++;
    *recorded = true;
    pthread_mutex_unlock(&infinirt__capture_mu);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt__capture_sync_slow(infinirt__device *dev, bool blocking_only, const char *fn)
{
    bool hit = false;
    pthread_mutex_lock(&infinirt__capture_mu);
    for (infinirt__capture *c = dev->capture_list; c != NULL; c = c->next) {
        if (c->native)
            continue;
        bool blocking = c->origin != NULL && !c->origin->non_blocking;
        for (size_t i = 0; i < c->nmembers && !blocking; i++)
            blocking = !c->members[i].s->non_blocking;
        if (blocking_only && !blocking)
            continue;
        char why[200];
        snprintf(why, sizeof why, "%s while the capture was under way", fn);
        invalidate_locked(c, why);
        hit = true;
    }
    pthread_mutex_unlock(&infinirt__capture_mu);
    if (!hit)
        return INFINI_STATUS_SUCCESS;
    char name[64];
    return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn,
                          "a stream capture is under way on %s; %s cannot wait for a capturing %sstream (the "
                          "capture is invalidated)",
                          infinirt__dev_name(dev, name, sizeof name), fn, blocking_only ? "blocking " : "");
}

infiniStatus_t infinirt__capture_forbid(infinirt__stream *s, const char *fn)
{
    pthread_mutex_lock(&infinirt__capture_mu);
    infinirt__capture *c = infinirt__stream_capture(s);
    if (c == NULL) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return INFINI_STATUS_SUCCESS;
    }
    if (c->native) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        if (!infinirt__native_capturing(s))
            return INFINI_STATUS_SUCCESS; /* the application ended it natively; EndCapture tidies up */
        /* The backend invalidates its capture as it does for the
         * application's own calls. */
        (void)s->dev->plugin->ops->stream_synchronize(s->dev->index, s->ps);
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn, "stream %p is capturing (the capture is invalidated)",
                              s->native);
    }
    char why[200];
    snprintf(why, sizeof why, "%s on a capturing stream", fn);
    invalidate_locked(c, why);
    pthread_mutex_unlock(&infinirt__capture_mu);
    return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn,
                          "stream %p is capturing: its work does not run until the graph is launched (the "
                          "capture is invalidated; end it with infinirtStreamEndCapture)",
                          s->native);
}

infiniStatus_t infinirt__capture_event_record(infinirt__event *e, infinirt__stream *s, const char *fn, bool *recorded)
{
    *recorded = false;
    pthread_mutex_lock(&infinirt__capture_mu);
    infinirt__capture *c = infinirt__stream_capture(s);
    if (c == NULL || c->native) {
        /* A plain record: the event no longer stands for a captured one. */
        atomic_store_explicit(&e->captured, NULL, memory_order_release);
        pthread_mutex_unlock(&infinirt__capture_mu);
        return INFINI_STATUS_SUCCESS;
    }
    if (c->invalid) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn, "stream %p is in an invalidated capture", s->native);
    }
    bool known = false;
    for (size_t i = 0; i < c->nevents && !known; i++)
        known = c->events[i] == e;
    if (!known) {
        infinirt__event *ref = NULL;
        if (grow((void **)&c->events, &c->capevents, c->nevents + 1, sizeof *c->events) != 0 ||
            (ref = infinirt__event_get(e->native)) == NULL) {
            pthread_mutex_unlock(&infinirt__capture_mu);
            return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, fn, "no memory to record an event in a capture");
        }
        c->events[c->nevents++] = ref;
    }
    e->captured_seq = c->seq++;
    e->captured_on = s;
    atomic_store_explicit(&e->captured, c, memory_order_release);
    *recorded = true;
    pthread_mutex_unlock(&infinirt__capture_mu);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt__capture_wait(infinirt__stream *s, infinirt__event *e, const char *fn, bool *recorded)
{
    *recorded = false;
    pthread_mutex_lock(&infinirt__capture_mu);
    infinirt__capture *cs = infinirt__stream_capture(s);
    infinirt__capture *ce = atomic_load(&e->captured);
    const char *why = NULL;
    if (cs != NULL && cs->native) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return INFINI_STATUS_SUCCESS; /* the backend's rules */
    }
    if (cs != NULL) {
        if (cs->invalid)
            why = "the stream is in an invalidated capture";
        else if (ce == NULL)
            why = "the event was recorded outside the capture (a captured stream may only wait for work "
                  "captured with it)";
        else if (ce != cs)
            why = "the event was recorded in another capture (captures cannot be merged)";
        if (why != NULL) {
            char w[256];
            snprintf(w, sizeof w, "%s: %s", fn, why);
            invalidate_locked(cs, w);
            pthread_mutex_unlock(&infinirt__capture_mu);
            return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn, "%s (the capture is invalidated)", why);
        }
        /* A join: the waiting stream's later work follows the event. */
        member *m = e->captured_on != s ? member_of(cs, e->captured_on) : NULL;
        if (m != NULL && (int64_t)e->captured_seq > m->joined)
            m->joined = (int64_t)e->captured_seq;
        member *self = member_of(cs, s);
        if (self != NULL)
            self->last = cs->seq;
        cs->seq++;
        *recorded = true;
        pthread_mutex_unlock(&infinirt__capture_mu);
        return INFINI_STATUS_SUCCESS;
    }
    /* s is not capturing and e was recorded in a capture: s joins it. */
    if (ce->invalid || ce->dev != s->dev) {
        why = ce->invalid ? "the event was recorded in an invalidated capture"
                          : "the event was recorded in a capture on another device";
    } else if (grow((void **)&ce->members, &ce->capmembers, ce->nmembers + 1, sizeof *ce->members) != 0) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, fn, "no memory to join a stream to a capture");
    }
    if (why != NULL) {
        invalidate_locked(ce, why);
        pthread_mutex_unlock(&infinirt__capture_mu);
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn, "%s", why);
    }
    ce->members[ce->nmembers++] = (member){s, ce->seq, -1};
    ce->seq++;
    atomic_store_explicit(&s->capture, ce, memory_order_release);
    *recorded = true;
    pthread_mutex_unlock(&infinirt__capture_mu);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt__capture_event_forbid(infinirt__event *e, const char *fn)
{
    pthread_mutex_lock(&infinirt__capture_mu);
    infinirt__capture *c = atomic_load(&e->captured);
    if (c == NULL) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return INFINI_STATUS_SUCCESS;
    }
    /* As CUDA (CAPTURED_EVENT): refused, and the capture is invalidated. */
    char why[96];
    snprintf(why, sizeof why, "%s of an event recorded in the capture", fn);
    invalidate_locked(c, why);
    pthread_mutex_unlock(&infinirt__capture_mu);
    return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn,
                          "event %p was recorded in a capture under way: it stands for captured work, which runs "
                          "only when the graph is launched (the capture is invalidated)",
                          e->native);
}

infiniStatus_t infinirt__capture_malloc(infinirt__stream *s, size_t size, void **out, const char *fn, bool *handled)
{
    *handled = false;
    /* Most calls on a plugin with native graphs: not capturing, no lock. */
    if (infinirt__stream_capture(s) == NULL && !infinirt__native_capturing(s))
        return INFINI_STATUS_SUCCESS;
    pthread_mutex_lock(&infinirt__capture_mu);
    infinirt__capture *c = capture_of_locked(s, true);
    if (c == NULL) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return INFINI_STATUS_SUCCESS;
    }
    *handled = true;
    if (c->invalid) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, fn, "stream %p is in an invalidated capture", s->native);
    }
    /* The allocation may call the backend and, out of memory, wait for
     * queued work: not under the capture lock, which every capture
     * operation of every thread takes.  The reference keeps the capture's
     * memory (the pool's key for it) alive meanwhile. */
    gmem *m = c->mem;
    infinirt__gmem_ref(m);
    pthread_mutex_unlock(&infinirt__capture_mu);

    void *p = NULL;
    infinirt__device *dev = s->dev;
    infinirt__pool *pool = infinirt__device_pool(dev);
    infiniStatus_t st = pool != NULL ? infinirt__pool_alloc(pool, size, m, &p) : INFINI_STATUS_OUT_OF_MEMORY;
    const char *why = NULL;
    if (st == INFINI_STATUS_SUCCESS) {
        /* The capture may have ended or been invalidated meanwhile (another
         * thread's EndCapture, or an illegal call): then the block is no
         * graph's, and goes back. */
        pthread_mutex_lock(&infinirt__capture_mu);
        c = capture_of_locked(s, false);
        if (c == NULL || c->mem != m || c->invalid) {
            why = "the capture ended or was invalidated while the block was allocated";
            st = INFINI_STATUS_INVALID_STATE;
        } else if (infinirt__held_add(m, p, HELD_CAPTIVE) != 0) {
            why = "no memory to note the block as the graph's";
            st = INFINI_STATUS_OUT_OF_MEMORY;
        }
        pthread_mutex_unlock(&infinirt__capture_mu);
        if (st != INFINI_STATUS_SUCCESS)
            infinirt__pool_free_sync(p, infinirt__want_pool(pool));
    }
    infinirt__gmem_put(m);
    if (st != INFINI_STATUS_SUCCESS) {
        char name[64];
        return infinirt__fail(st, fn, "%zu bytes for a capture on %s%s%s", size,
                              infinirt__dev_name(dev, name, sizeof name), why ? ": " : "", why ? why : "");
    }
    *out = p;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt__capture_free(void *ptr, infinirt__stream *s, const char *fn, bool *handled)
{
    *handled = false;
    if (atomic_load_explicit(&infinirt__graph_held, memory_order_acquire) != 0) {
        int was = infinirt__held_mark_freed(ptr);
        if (was == HELD_CAPTIVE) {
            *handled = true; /* honoured when the graph goes */
            return INFINI_STATUS_SUCCESS;
        }
        if (was >= 0) {
            *handled = true;
            return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn,
                                  "%p was freed already (a graph still holds it for its launches)", ptr);
        }
    }
    if (s == NULL || (infinirt__stream_capture(s) == NULL && !infinirt__native_capturing(s)))
        return INFINI_STATUS_SUCCESS;
    /* FreeAsync inside a capture of a block allocated before it: the graph
     * may still read it, so it is held until the graph goes. */
    infinirt__ptr_info info;
    if (!infinirt__pool_lookup(ptr, &info) || info.offset != 0 || info.pool != infinirt__device_pool_peek(s->dev))
        return INFINI_STATUS_SUCCESS; /* not a block of this device: the normal path explains */
    pthread_mutex_lock(&infinirt__capture_mu);
    infinirt__capture *c = capture_of_locked(s, true);
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    if (c != NULL) {
        *handled = true;
        if (c->invalid)
            st = infinirt__fail(INFINI_STATUS_INVALID_STATE, fn, "stream %p is in an invalidated capture", s->native);
        else if (infinirt__held_add(c->mem, ptr, HELD_DEFERRED) != 0)
            st = infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, fn, "no memory to defer a free in a capture");
    }
    pthread_mutex_unlock(&infinirt__capture_mu);
    return st;
}

/* ------------------------------------------------------------------- API */

INFINIRT_API infiniStatus_t infinirtStreamBeginCapture(infinirtStream_t stream, infinirtStreamCaptureMode_t mode)
{
    INFINIRT__TRACE_ENTRY(infinirtStreamBeginCapture, (stream, mode));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if ((unsigned)mode > INFINIRT_STREAM_CAPTURE_MODE_RELAXED)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__,
                              "capture mode %d is not an infinirtStreamCaptureMode_t", (int)mode);
    if (stream == NULL)
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, __func__,
                              "the default (NULL) stream cannot be captured; capture a created stream");
    infinirt__stream *s = infinirt__stream_get(stream);
    if (s == NULL)
        return infinirt__stream_not_live(stream, __func__);
    infinirt__device *dev = s->dev;
    infinirt__capture *c = calloc(1, sizeof *c);
    gmem *m = c != NULL ? infinirt__gmem_new(dev) : NULL;
    if (m == NULL) {
        free(c);
        infinirt__stream_put(s);
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory for a capture");
    }
    c->dev = dev;
    c->origin = s;
    c->mode = (int)mode;
    c->mem = m;
    c->native = INFINIRT__NATIVE_GRAPHS(dev->plugin);
    pthread_mutex_lock(&infinirt__capture_mu);
    if (infinirt__stream_capture(s) != NULL || (c->native && infinirt__native_capturing(s))) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        capture_free(c, false);
        infinirt__stream_put(s);
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, __func__, "stream %p is capturing already", stream);
    }
    if (c->native) {
        /* Under dev->lock, which the allocator holds from "is this stream
         * capturing" to its query or fence record (fence.c): neither can
         * land in the capture that begins here. */
        pthread_mutex_lock(&dev->lock);
        st = dev->plugin->ops->stream_begin_capture(dev->index, s->ps, (int)mode);
        int capturing = 0;
        if (st == INFINI_STATUS_SUCCESS)
            st = dev->plugin->ops->stream_is_capturing(dev->index, s->ps, &capturing, &c->native_id);
        pthread_mutex_unlock(&dev->lock);
        if (st != INFINI_STATUS_SUCCESS) {
            pthread_mutex_unlock(&infinirt__capture_mu);
            capture_free(c, false);
            infinirt__stream_put(s);
            return infinirt__plugin_failed(st, dev, "stream_begin_capture");
        }
    }
    c->next = dev->capture_list;
    dev->capture_list = c;
    atomic_fetch_add(&dev->captures, 1);
    atomic_store_explicit(&s->capture, c, memory_order_release);
    pthread_mutex_unlock(&infinirt__capture_mu);
    infinirt__stream_put(s);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtStreamEndCapture(infinirtStream_t stream, infinirtGraph_t *graph_ptr)
{
    INFINIRT__TRACE_ENTRY(infinirtStreamEndCapture, (stream, graph_ptr));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (graph_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "graph_ptr is NULL");
    if (stream == NULL)
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, __func__, "the default (NULL) stream never captures");
    infinirt__stream *s = infinirt__stream_get(stream);
    if (s == NULL)
        return infinirt__stream_not_live(stream, __func__);
    infinirt__device *dev = s->dev;
    pthread_mutex_lock(&infinirt__capture_mu);
    infinirt__capture *c = capture_of_locked(s, true);
    if (c == NULL) {
        pthread_mutex_unlock(&infinirt__capture_mu);
        infinirt__stream_put(s);
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, __func__, "stream %p is not capturing", stream);
    }
    if (c->origin != NULL && c->origin != s) {
        invalidate_locked(c, "infinirtStreamEndCapture on a stream that joined the capture");
        pthread_mutex_unlock(&infinirt__capture_mu);
        infinirt__stream_put(s);
        return infinirt__fail(INFINI_STATUS_INVALID_STATE, __func__,
                              "stream %p joined a capture begun on stream %p: end it there (the capture is "
                              "invalidated)",
                              stream, c->origin->native);
    }
    const char *unjoined = NULL;
    for (size_t i = 0; i < c->nmembers && unjoined == NULL; i++)
        if (c->members[i].joined < (int64_t)c->members[i].last)
            unjoined = "a stream that joined the capture was not joined back (the capturing stream must wait "
                       "on an event recorded on it after its last operation)";
    detach_locked(c);
    pthread_mutex_unlock(&infinirt__capture_mu);

    gobj *g = calloc(1, sizeof *g);
    if (c->native) {
        void *pg = NULL;
        st = dev->plugin->ops->stream_end_capture(dev->index, s->ps, &pg);
        if (st == INFINI_STATUS_SUCCESS && pg == NULL) {
            /* No graph to destroy or keep (a graph object without a native
             * one would be taken for one the loader captured). */
            free(g);
            capture_free(c, false);
            infinirt__stream_put(s);
            *graph_ptr = NULL;
            return infinirt__plugin_gave_null(dev, "stream_end_capture", "graph");
        }
        if (st != INFINI_STATUS_SUCCESS || g == NULL) {
            if (st == INFINI_STATUS_SUCCESS)
                dev->plugin->ops->graph_destroy(dev->index, pg);
            free(g);
            capture_free(c, false);
            infinirt__stream_put(s);
            *graph_ptr = NULL;
            if (st == INFINI_STATUS_SUCCESS)
                return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory for a graph");
            return infinirt__fail(st, __func__, "the backend ended the capture on stream %p without a graph", stream);
        }
        g->native = pg;
    } else {
        opsblock *b = g != NULL ? INFINIRT__HOST_MALLOC(sizeof *b + c->nops * sizeof b->op[0]) : NULL;
        if (c->invalid || unjoined != NULL || b == NULL) {
            /* Decided before c is freed. */
            infiniStatus_t why_st =
                c->invalid || unjoined != NULL ? INFINI_STATUS_INVALID_STATE : INFINI_STATUS_OUT_OF_MEMORY;
            char why[256];
            snprintf(why, sizeof why, "%s", c->invalid ? c->why : unjoined != NULL ? unjoined : "no memory");
            free(b);
            free(g);
            capture_free(c, false);
            infinirt__stream_put(s);
            *graph_ptr = NULL;
            return infinirt__fail(why_st, __func__, "the capture on stream %p produced no graph: %s", stream, why);
        }
        atomic_init(&b->refs, 1);
        b->n = c->nops;
        if (c->nops != 0)
            memcpy(b->op, c->ops, c->nops * sizeof b->op[0]);
        g->ops = b;
    }
    g->kind = INFINIRT__KIND_GRAPH;
    g->dev = dev;
    g->mem = c->mem;
    capture_free(c, true);
    infinirt__stream_put(s);
    return infinirt__gobj_register(g, __func__, graph_ptr);
}
