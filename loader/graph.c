/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph.c - graphs and executable graphs (docs/graphs.md): the objects a
 * capture ends into (capture.c), instantiate, destroy and launch.  A
 * loader capture's graph holds the recorded operations, issued again at
 * each launch; a native one holds the plugin's graph.
 */
#define _GNU_SOURCE
#include "graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- graphs and execs */

static void infinirt__ops_put(opsblock *b)
{
    if (b != NULL && atomic_fetch_sub(&b->refs, 1) == 1)
        free(b);
}

static void gobj_free(gobj *g)
{
    infinirt__device *dev = g->dev;
    if (g->native != NULL) {
        infiniStatus_t st = g->kind == INFINIRT__KIND_GRAPH
                                ? dev->plugin->ops->graph_destroy(dev->index, g->native)
                                : dev->plugin->ops->graph_exec_destroy(dev->index, g->native);
        if (st != INFINI_STATUS_SUCCESS)
            infinirt__plugin_failed(st, dev,
                                    g->kind == INFINIRT__KIND_GRAPH ? "graph_destroy" : "graph_exec_destroy");
    }
    launch_order *o = g->order;
    if (o != NULL) {
        /* Launches still queued keep what they use: a plugin event may be
         * destroyed with its record or a wait on it still queued, as an
         * application's may (infinirtEventDestroy). */
        if (o->done != NULL) {
            infiniStatus_t st = dev->plugin->ops->event_destroy(dev->index, o->done);
            if (st != INFINI_STATUS_SUCCESS)
                infinirt__plugin_failed(st, dev, "event_destroy (an executable graph's launch event)");
        }
        infinirt__stream_put(o->last_s);
        pthread_mutex_destroy(&o->mu);
        free(o);
    }
    infinirt__ops_put(g->ops);
    infinirt__gmem_put(g->mem);
    free(g);
}

/* Drop a reference to a graph or executable graph. */
static void infinirt__gobj_put(uint32_t kind, void *obj)
{
    gobj *g = obj;
    if (g != NULL && infinirt__handle_drop(kind, g->slot, NULL) != NULL) /* never borrowed */
        gobj_free(g);
}

infiniStatus_t infinirt__gobj_register(gobj *g, const char *fn, void **out)
{
    g->handle = g->native != NULL ? g->native : (void *)g;
    void *handle = g->handle;
    int rc = infinirt__handle_register(g->kind, g, (uintptr_t)handle, &g->slot);
    if (rc != 0) {
        gobj_free(g);
        return infinirt__fail(rc == -2 ? INFINI_STATUS_INTERNAL_ERROR : INFINI_STATUS_OUT_OF_MEMORY, fn, "%s",
                              infinirt__handle_register_error(rc));
    }
    *out = handle;
    return INFINI_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------- API */

static void write_log(char *log, size_t n, const char *fmt, const char *arg)
{
    if (log != NULL && n > 0)
        snprintf(log, n, fmt, arg);
}

INFINIRT_API infiniStatus_t infinirtGraphInstantiate(infinirtGraphExec_t *graph_exec_ptr, infinirtGraph_t graph,
                                                     infinirtGraphNode_t *node_ptr, char *log_buffer,
                                                     size_t buffer_size)
{
    INFINIRT__TRACE_ENTRY(infinirtGraphInstantiate, (graph_exec_ptr, graph, node_ptr, log_buffer, buffer_size));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    write_log(log_buffer, buffer_size, "%s", "");
    if (graph_exec_ptr == NULL) {
        write_log(log_buffer, buffer_size, "%s", "graph_exec_ptr is NULL");
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "graph_exec_ptr is NULL");
    }
    gobj *g = infinirt__handle_get(INFINIRT__KIND_GRAPH, graph, infinirt__gobj_put);
    if (g == NULL) {
        write_log(log_buffer, buffer_size, "%s", "the graph is not a live graph (never made, or destroyed)");
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "graph %p is not a live graph", graph);
    }
    infinirt__device *dev = g->dev;
    gobj *x = calloc(1, sizeof *x);
    if (x == NULL) {
        infinirt__gobj_put(INFINIRT__KIND_GRAPH, g);
        write_log(log_buffer, buffer_size, "%s", "out of host memory");
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory for an executable graph");
    }
    x->kind = INFINIRT__KIND_EXEC;
    x->dev = dev;
    if (g->native != NULL) {
        st = dev->plugin->ops->graph_instantiate(dev->index, g->native, &x->native, log_buffer, buffer_size);
        if (st != INFINI_STATUS_SUCCESS || x->native == NULL) {
            free(x);
            infinirt__gobj_put(INFINIRT__KIND_GRAPH, g);
            /* A NULL executable graph: nothing to destroy or register. */
            st = st != INFINI_STATUS_SUCCESS
                     ? infinirt__plugin_failed(st, dev, "graph_instantiate")
                     : infinirt__plugin_gave_null(dev, "graph_instantiate", "executable graph");
            if (log_buffer != NULL && buffer_size > 0 && log_buffer[0] == '\0')
                write_log(log_buffer, buffer_size, "the backend could not instantiate the graph: %s",
                          infinirtGetErrorName(st));
            return st;
        }
    } else {
        if ((x->order = calloc(1, sizeof *x->order)) == NULL) {
            free(x);
            infinirt__gobj_put(INFINIRT__KIND_GRAPH, g);
            write_log(log_buffer, buffer_size, "%s", "out of host memory");
            return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory for an executable graph");
        }
        pthread_mutex_init(&x->order->mu, NULL);
        atomic_fetch_add(&g->ops->refs, 1);
        x->ops = g->ops;
    }
    infinirt__gmem_ref(g->mem);
    x->mem = g->mem;
    infinirt__gobj_put(INFINIRT__KIND_GRAPH, g);
    st = infinirt__gobj_register(x, __func__, graph_exec_ptr);
    if (st != INFINI_STATUS_SUCCESS)
        write_log(log_buffer, buffer_size, "%s", "the executable graph could not be registered (out of memory)");
    else if (node_ptr != NULL)
        *node_ptr = NULL; /* no node failed */
    return st;
}

static infiniStatus_t destroy(uint32_t kind, void *h, const char *fn)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    gobj *g = infinirt__handle_get(kind, h, infinirt__gobj_put);
    if (g == NULL || infinirt__handle_kill(kind, h, g->slot) != 0) {
        infinirt__gobj_put(kind, g);
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "%p is not a live %s", h,
                              kind == INFINIRT__KIND_GRAPH ? "graph" : "executable graph");
    }
    infinirt__gobj_put(kind, g);
    infinirt__gobj_put(kind, g);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGraphDestroy(infinirtGraph_t graph)
{
    INFINIRT__TRACE_ENTRY(infinirtGraphDestroy, (graph));
    return destroy(INFINIRT__KIND_GRAPH, graph, __func__);
}

INFINIRT_API infiniStatus_t infinirtGraphExecDestroy(infinirtGraphExec_t graph_exec)
{
    INFINIRT__TRACE_ENTRY(infinirtGraphExecDestroy, (graph_exec));
    return destroy(INFINIRT__KIND_EXEC, graph_exec, __func__);
}

/* A launch on the CPU backend: device memory is host memory, so the whole
 * graph runs as one host function on the launch stream. */
static void run_on_host(void *arg)
{
    opsblock *b = arg;
    for (size_t i = 0; i < b->n; i++) {
        const infinirt__gop *op = &b->op[i];
        switch (op->kind) {
        case INFINIRT__GOP_COPY:
            memmove(op->dst, op->src, op->size);
            break;
        case INFINIRT__GOP_SET:
            memset(op->dst, op->arg, op->size);
            break;
        case INFINIRT__GOP_HOSTFN:
            op->fn(op->ud);
            break;
        }
    }
    infinirt__ops_put(b);
}

/* ----------------------------------------------------------- launch order */

/*
 * Launch order.  CUDA runs each launch of a graphExec after the previous
 * launch of it has completed, whatever streams the two are on, and
 * launches of different execs independently.  A replayed launch uses the
 * same addresses every time (the capture's private memory included), so
 * two launches of one exec that overlapped would race on them.  The loader
 * keeps CUDA's order: under the exec's lock a launch on another stream
 * than the previous launch first makes its stream wait for the exec's
 * event (stream_wait_event: in stream order, the host does not wait), then
 * queues the operations and records the event on its stream.  A launch on
 * the previous launch's stream needs no wait (stream order).
 *
 * Without events to do it with (a plugin without event_record or
 * stream_wait_event), or when the record failed, the launch keeps a
 * reference to its stream instead, and the next launch on another stream
 * synchronizes that stream on the host before it queues anything: the
 * order holds, at the price of that launch waiting for the previous one.
 * A device whose work is done when it is queued (DONE_AT_RETURN) needs
 * neither; the lock alone orders two threads' launches there.
 */

static bool events_usable(const infinirt__plugin *p)
{
    return INFINIRT__HAS(p, event_record) && INFINIRT__HAS(p, stream_wait_event);
}

static const char k_wait_why[] = "the previous launch of its executable graph";

/* Before a launch on s (o->mu held): s waits for the exec's previous
 * launch.  On failure (logged) nothing was queued and o is unchanged. */
static infiniStatus_t order_before(launch_order *o, infinirt__device *dev, infinirt__stream *s)
{
    const infinirtPluginOps *ops = dev->plugin->ops;
    infiniStatus_t st;
    char what[160];
    if (dev->done_at_return)
        return INFINI_STATUS_SUCCESS;
    if (o->done == NULL && events_usable(dev->plugin)) {
        st = ops->event_create(dev->index, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &o->done);
        if (st != INFINI_STATUS_SUCCESS) {
            o->done = NULL;
            return infinirt__plugin_failed(st, dev, "event_create (an executable graph's launch event)");
        }
    }
    if (!o->launched || o->last_id == s->id)
        return INFINI_STATUS_SUCCESS;
    if (o->done_valid) {
        st = ops->stream_wait_event(dev->index, s->ps, o->done);
        if (st != INFINI_STATUS_SUCCESS) {
            snprintf(what, sizeof what, "stream_wait_event (a graph launch waiting for %s)", k_wait_why);
            return infinirt__plugin_failed(st, dev, what);
        }
        infinirt__stream_note_submit(s);
        return INFINI_STATUS_SUCCESS;
    }
    infinirt__stream *p = o->last_s;
    if (!INFINIRT__HAS(dev->plugin, stream_synchronize))
        return infinirt__device_sync(dev); /* logs its failure */
    uint_fast64_t seen = atomic_load_explicit(&p->submitted, memory_order_acquire);
    st = ops->stream_synchronize(dev->index, p->ps);
    if (st != INFINI_STATUS_SUCCESS) {
        snprintf(what, sizeof what, "stream_synchronize (a graph launch waiting for %s)", k_wait_why);
        return infinirt__plugin_failed(st, dev, what);
    }
    infinirt__stream_note_synced(p, seen);
    return INFINI_STATUS_SUCCESS;
}

/* After work of a launch was queued on s (o->mu held): record its end.
 * put[1] holds the launch's own reference to s and put[0] is NULL; what
 * is left in them, the caller drops once the lock is let go. */
static void order_after(launch_order *o, infinirt__device *dev, infinirt__stream *s, infinirt__stream *put[2])
{
    o->launched = true;
    o->last_id = s->id;
    o->done_valid = false;
    if (dev->done_at_return)
        return;
    if (o->done != NULL) {
        infiniStatus_t st = dev->plugin->ops->event_record(dev->index, o->done, s->ps);
        if (st == INFINI_STATUS_SUCCESS) {
            o->done_valid = true;
            put[0] = o->last_s; /* no longer needed */
            o->last_s = NULL;
            return;
        }
        /* The launch is queued: it succeeded.  Its order with the next
         * one is kept the slow way. */
        char name[64];
        INFINIRT__WARN("%s (plugin %s): event_record failed (%s) at the end of a graph launch; the next launch "
                       "of that executable graph on another stream will wait on the host for this one",
                       infinirt__dev_name(dev, name, sizeof name), dev->plugin->name, infinirtGetErrorName(st));
    }
    if (o->last_s != s) {
        put[0] = o->last_s;
        o->last_s = s; /* the launch's reference moves here */
        put[1] = NULL;
    }
}

/* Queue the operations of one launch on s; *queued: whether any was.
 * traced: a constant (INFINIRT__TRACE_ENTRY_WORK), as in launch_code. */
static inline __attribute__((always_inline)) infiniStatus_t replay(gobj *x, infinirt__stream *s, bool *queued,
                                                                   bool traced)
{
    infinirt__device *dev = x->dev;
    const infinirtPluginOps *ops = dev->plugin->ops;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    if (dev->plugin->type == INFINI_DEVICE_CPU) {
        atomic_fetch_add(&x->ops->refs, 1);
        INFINIRT__TRACE_WORK(traced, st, s, "graph launch", 0,
                             ops->launch_host_func(dev->index, s->ps, run_on_host, x->ops));
        infinirt__stream_note_submit(s);
        *queued = st == INFINI_STATUS_SUCCESS;
        if (st != INFINI_STATUS_SUCCESS) {
            infinirt__ops_put(x->ops);
            infinirt__plugin_failed(st, dev, "launch_host_func (a graph launch)");
        }
        return st;
    }
    const opsblock *ob = x->ops;
    size_t i;
    for (i = 0; i < ob->n && st == INFINI_STATUS_SUCCESS; i++) {
        const infinirt__gop *op = &ob->op[i];
        infinirt__note_peer(op->touched[0], dev);
        infinirt__note_peer(op->touched[1], dev);
        switch (op->kind) {
        case INFINIRT__GOP_COPY:
            INFINIRT__TRACE_WORK(traced, st, s, infinirt__trace_copy_name(op->arg), op->size,
                                 ops->memcpy_async(dev->index, op->dst, op->src, op->size, op->arg, s->ps));
            break;
        case INFINIRT__GOP_SET:
            INFINIRT__TRACE_WORK(traced, st, s, "fill", op->size,
                                 ops->memset_async(dev->index, op->dst, op->arg, op->size, s->ps));
            break;
        case INFINIRT__GOP_HOSTFN:
            INFINIRT__TRACE_WORK(traced, st, s, "host function", 0,
                                 ops->launch_host_func(dev->index, s->ps, op->fn, op->ud));
            break;
        }
        if (st != INFINI_STATUS_SUCCESS) {
            char a[64];
            snprintf(a, sizeof a, "operation %zu of %zu of a graph launch", i + 1, ob->n);
            infinirt__plugin_failed(st, dev, a);
        }
    }
    /* i - 1 operations were queued when one failed; an empty graph queues
     * nothing and is still a launch to order the next one after. */
    *queued = st == INFINI_STATUS_SUCCESS || i > 1;
    infinirt__stream_note_submit(s);
    return st;
}

static inline __attribute__((always_inline)) infiniStatus_t
launch_code(infinirtGraphExec_t graph_exec, infinirtStream_t stream, const char *fn, bool traced)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    gobj *x = infinirt__handle_get(INFINIRT__KIND_EXEC, graph_exec, infinirt__gobj_put);
    if (x == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "%p is not a live executable graph", graph_exec);
    infinirt__device *dev = x->dev;
    infinirt__stream *s = NULL;
    if ((st = infinirt__stream_resolve(stream, dev, fn, &s)) != INFINI_STATUS_SUCCESS) {
        infinirt__gobj_put(INFINIRT__KIND_EXEC, x);
        return st;
    }
    /* put[1]: the reference taken on s, unless the exec keeps it. */
    infinirt__stream *put[2] = {NULL, s};
    char a[64], b[64];
    if (s->dev != dev) {
        st = infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "the graph belongs to %s, stream %p to %s",
                            infinirt__dev_name(dev, a, sizeof a), stream, infinirt__dev_name(s->dev, b, sizeof b));
    } else if (x->native != NULL) {
        /* The backend orders launches of one exec itself (CUDA does). */
        INFINIRT__TRACE_WORK(traced, st, s, "graph launch", 0,
                             dev->plugin->ops->graph_launch(dev->index, x->native, s->ps));
        infinirt__stream_note_submit(s);
        if (st != INFINI_STATUS_SUCCESS)
            infinirt__plugin_failed(st, dev, "graph_launch");
    } else if (infinirt__stream_capture(s) != NULL) {
        st = infinirt__fail(INFINI_STATUS_INVALID_STATE, fn,
                            "stream %p is capturing: a graph launch cannot be captured on %s", stream,
                            infinirt__dev_name(dev, a, sizeof a));
    } else {
        launch_order *o = x->order;
        pthread_mutex_lock(&o->mu);
        bool queued = false;
        if ((st = order_before(o, dev, s)) == INFINI_STATUS_SUCCESS)
            st = replay(x, s, &queued, traced);
        if (queued)
            order_after(o, dev, s, put);
        pthread_mutex_unlock(&o->mu);
    }
    infinirt__stream_put(put[0]);
    infinirt__stream_put(put[1]);
    infinirt__gobj_put(INFINIRT__KIND_EXEC, x);
    return st;
}

static __attribute__((noinline)) infiniStatus_t launch(infinirtGraphExec_t graph_exec, infinirtStream_t stream,
                                                       const char *fn)
{
    return launch_code(graph_exec, stream, fn, false);
}

static __attribute__((noinline, cold)) infiniStatus_t launch_traced(infinirtGraphExec_t graph_exec,
                                                                    infinirtStream_t stream, const char *fn)
{
    return launch_code(graph_exec, stream, fn, true);
}

INFINIRT_API infiniStatus_t infinirtGraphLuanch(infinirtGraphExec_t graph_exec, infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtGraphLuanch, (graph_exec, stream),
                               launch_traced(graph_exec, stream, __func__));
    return launch(graph_exec, stream, __func__);
}

INFINIRT_API infiniStatus_t infinirtGraphLaunch(infinirtGraphExec_t graph_exec, infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtGraphLaunch, (graph_exec, stream),
                               launch_traced(graph_exec, stream, __func__));
    return launch(graph_exec, stream, __func__);
}
