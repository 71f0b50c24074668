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

void infinirt__ops_put(opsblock *b)
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
    infinirt__ops_put(g->ops);
    infinirt__gmem_put(g->mem);
    free(g);
}

void infinirt__gobj_put(uint32_t kind, void *obj)
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
            if (st == INFINI_STATUS_SUCCESS)
                st = INFINI_STATUS_INTERNAL_ERROR;
            if (log_buffer != NULL && buffer_size > 0 && log_buffer[0] == '\0')
                write_log(log_buffer, buffer_size, "the backend could not instantiate the graph: %s",
                          infinirtGetErrorName(st));
            return infinirt__plugin_failed(st, dev, "graph_instantiate");
        }
    } else {
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
    return destroy(INFINIRT__KIND_GRAPH, graph, __func__);
}

INFINIRT_API infiniStatus_t infinirtGraphExecDestroy(infinirtGraphExec_t graph_exec)
{
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

static infiniStatus_t launch(infinirtGraphExec_t graph_exec, infinirtStream_t stream, const char *fn)
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
    char a[64], b[64];
    if (s->dev != dev) {
        st = infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "the graph belongs to %s, stream %p to %s",
                            infinirt__dev_name(dev, a, sizeof a), stream, infinirt__dev_name(s->dev, b, sizeof b));
    } else if (x->native != NULL) {
        st = dev->plugin->ops->graph_launch(dev->index, x->native, s->ps);
        infinirt__stream_note_submit(s);
        if (st != INFINI_STATUS_SUCCESS)
            infinirt__plugin_failed(st, dev, "graph_launch");
    } else if (infinirt__stream_capture(s) != NULL) {
        st = infinirt__fail(INFINI_STATUS_INVALID_STATE, fn,
                            "stream %p is capturing: a graph launch cannot be captured on %s", stream,
                            infinirt__dev_name(dev, a, sizeof a));
    } else if (dev->plugin->type == INFINI_DEVICE_CPU) {
        atomic_fetch_add(&x->ops->refs, 1);
        st = dev->plugin->ops->launch_host_func(dev->index, s->ps, run_on_host, x->ops);
        infinirt__stream_note_submit(s);
        if (st != INFINI_STATUS_SUCCESS) {
            infinirt__ops_put(x->ops);
            infinirt__plugin_failed(st, dev, "launch_host_func (a graph launch)");
        }
    } else {
        const infinirtPluginOps *ops = dev->plugin->ops;
        const opsblock *ob = x->ops;
        for (size_t i = 0; i < ob->n && st == INFINI_STATUS_SUCCESS; i++) {
            const infinirt__gop *op = &ob->op[i];
            infinirt__note_peer(op->touched[0], dev);
            infinirt__note_peer(op->touched[1], dev);
            switch (op->kind) {
            case INFINIRT__GOP_COPY:
                st = ops->memcpy_async(dev->index, op->dst, op->src, op->size, op->arg, s->ps);
                break;
            case INFINIRT__GOP_SET:
                st = ops->memset_async(dev->index, op->dst, op->arg, op->size, s->ps);
                break;
            case INFINIRT__GOP_HOSTFN:
                st = ops->launch_host_func(dev->index, s->ps, op->fn, op->ud);
                break;
            }
            if (st != INFINI_STATUS_SUCCESS) {
                snprintf(a, sizeof a, "operation %zu of %zu of a graph launch", i + 1, ob->n);
                infinirt__plugin_failed(st, dev, a);
            }
        }
        infinirt__stream_note_submit(s);
    }
    infinirt__stream_put(s);
    infinirt__gobj_put(INFINIRT__KIND_EXEC, x);
    return st;
}

INFINIRT_API infiniStatus_t infinirtGraphLuanch(infinirtGraphExec_t graph_exec, infinirtStream_t stream)
{
    return launch(graph_exec, stream, __func__);
}

INFINIRT_API infiniStatus_t infinirtGraphLaunch(infinirtGraphExec_t graph_exec, infinirtStream_t stream)
{
    return launch(graph_exec, stream, __func__);
}
