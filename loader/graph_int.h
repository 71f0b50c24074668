/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_int.h - what capture.c, graph.c and graph_mem.c share: the capture
 * lock, the memory captures and graphs hold, and graph objects.
 */
#ifndef INFINIRT_LOADER_GRAPH_INT_H_
#define INFINIRT_LOADER_GRAPH_INT_H_

#include "internal.h"

#include <stdio.h>

/* Guards every capture, the streams' and events' capture fields, the
 * devices' capture lists and the gmems' lists (defined in graph_mem.c). */
extern pthread_mutex_t infinirt__capture_mu;

/* "cuda:0", for messages. */
static inline const char *infinirt__dev_name(const infinirt__device *dev, char *buf, size_t n)
{
    snprintf(buf, n, "%s:%d", infinirtGetDeviceTypeName(dev->plugin->type), dev->index);
    return buf;
}

/* ----------------------------------------------- held memory (graph_mem.c) */

/* A block a gmem holds: allocated in the capture (captive; freed by the
 * application meanwhile) or freed in it (deferred). */
enum { HELD_CAPTIVE, HELD_CAPTIVE_FREED, HELD_DEFERRED };

typedef struct infinirt__gmem gmem;
/* A gmem for dev with one reference, or NULL without memory. */
gmem *infinirt__gmem_new(infinirt__device *dev);
void infinirt__gmem_ref(gmem *m);
/* Drop a reference; the last releases the blocks (graph_mem.c says how). */
void infinirt__gmem_put(gmem *m);
/* Add p to m (caller holds infinirt__capture_mu).  -1 without memory. */
int infinirt__held_add(gmem *m, void *p, int state);
/* The state of ptr in the hash of held blocks, or -1 when no graph holds
 * it; a captive block becomes captive-freed. */
int infinirt__held_mark_freed(const void *ptr);

/* ------------------------------------------------- graph objects (graph.c) */

/* The recorded operations, shared by a graph and its executable graphs,
 * and held by CPU launches until they ran. */
typedef struct {
    atomic_int refs;
    size_t n;
    infinirt__gop op[];
} opsblock;

/* How an executable graph the loader replays keeps its launches in order
 * (graph.c, "Launch order"): each launch runs after the previous one has
 * completed, whatever streams they are on, as CUDA runs a graphExec. */
typedef struct {
    pthread_mutex_t mu; /* one launch at a time: wait, queue, record */
    bool launched;      /* a launch was queued; last_id says where */
    uint64_t last_id;   /* the id of its stream (0: the default stream) */
    /* The plugin event recorded at the end of every launch (created at the
     * first launch, DISABLE_TIMING); NULL on a plugin without events. */
    void *done;
    /* done holds the end of the last launch.  When it does not (no events,
     * or that record failed), last_s is a reference to the last launch's
     * stream, which the next launch on another stream synchronizes first. */
    bool done_valid;
    infinirt__stream *last_s;
} launch_order;

typedef struct {
    uint32_t slot;
    uint32_t kind;
    infinirt__device *dev;
    void *handle; /* the value the application holds */
    void *native; /* the plugin's graph or executable graph (native) */
    opsblock *ops;
    gmem *mem;
    launch_order *order; /* an executable graph the loader replays */
} gobj;

/* Register g under its handle value (g->native, else g itself) and write
 * that value to *out; on failure g is freed and the failure logged. */
infiniStatus_t infinirt__gobj_register(gobj *g, const char *fn, void **out);

#endif /* INFINIRT_LOADER_GRAPH_INT_H_ */
