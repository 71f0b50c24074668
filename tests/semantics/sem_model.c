/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sem_model.c - the model of the ordering rules (docs/semantics.md).
 *
 * Every operation that queues work adds nodes; each node gets the set of
 * nodes it is ordered after (anc), closed under the relation, from the
 * rules of docs/semantics.md:
 *   R1 program order on a stream;
 *   R2 the NULL stream waits for the work queued so far on the device's
 *      blocking streams, and a blocking stream waits for the work queued so
 *      far on the NULL stream, whenever the blocking stream was created;
 *      non-blocking streams do neither; a wait for an event never recorded
 *      adds nothing; a StreamWaitEvent on a blocking stream is not itself
 *      ordered after the NULL stream (the driver's behaviour), though later
 *      NULL-stream work is ordered after it;
 *   R3 StreamWaitEvent orders the stream's later work after the record the
 *      event holds at the call; a later record changes nothing for it;
 *   R4 work queued after a host wait (StreamSynchronize, EventSynchronize,
 *      DeviceSynchronize, StreamDestroy, synchronous Memcpy/Memset, an
 *      EventQuery that answered COMPLETE) is ordered after what the wait
 *      covered;
 *   R5 a host function is work like any other;
 *   R6 each launch of an executable graph runs after its previous launch,
 *      on whatever streams; a launch is ordered on its stream like any
 *      other work;
 *   R7 memory from MallocAsync is usable by work ordered after the
 *      allocation, and FreeAsync is legal once every use is ordered before
 *      it; the two take their place in their stream's order but are no
 *      actions of R2 (they order nothing between streams).
 * A read then sees the last write ordered before it, where every write of
 * the buffer is ordered one way or the other with the read and the writes
 * before it are ordered among themselves; elsewhere the result is open.
 */
#include "sem.h"

#include <string.h>

void sem_model_init(sem_model *m, const sem_caps *caps)
{
    memset(m, 0, sizeof *m);
    m->caps = *caps;
    for (int d = 0; d < SEM_MAX_STREAMS; d++)
        m->streams[d].last = m->streams[d].action = -1;
    for (int d = 0; d < caps->ndevices; d++) {
        m->streams[d].live = true;
        m->streams[d].blocking = true;
        m->streams[d].is_null = true;
        m->streams[d].dev = d;
    }
    for (int e = 0; e < SEM_MAX_EVENTS; e++)
        m->events[e].rec = -1;
    for (int b = 0; b < SEM_MAX_BUFS; b++) {
        m->bufs[b].alloc_node = -1;
        m->bufs[b].graph = -1;
    }
    for (int g = 0; g < SEM_MAX_GRAPHS; g++)
        m->graphs[g].last_launch_node = -1;
    m->error_op = -1;
}

static void add_with_anc(const sem_model *m, sem_set *set, int n)
{
    if (n < 0)
        return;
    sem_set_add(set, n);
    sem_set_or(set, &m->anc[n]);
}

/* How a node takes part in R2: ordered after the other side's work queued
 * before it (the NULL stream's for a blocking stream, the blocking streams'
 * for the NULL stream), and work the other side queues later ordered after
 * it.  MallocAsync and FreeAsync do neither (R7); a StreamWaitEvent on a
 * blocking stream only the second. */
enum { R2_NONE = 0, R2_AFTER = 1, R2_BEFORE = 2, R2_BOTH = R2_AFTER | R2_BEFORE };

/* What a new node on stream s is ordered after (R1, R4; R2 when r2 has
 * R2_AFTER). */
static void preds_for_kind(const sem_model *m, int s, int r2, sem_set *out)
{
    const sem_stream_state *st = &m->streams[s];
    *out = m->host;
    add_with_anc(m, out, st->last);
    if (!(r2 & R2_AFTER))
        return;
    if (st->is_null) {
        for (int t = 0; t < SEM_MAX_STREAMS; t++) {
            const sem_stream_state *o = &m->streams[t];
            if (t != s && o->live && o->blocking && !o->is_null && o->dev == st->dev)
                add_with_anc(m, out, o->action);
        }
    } else if (st->blocking) {
        add_with_anc(m, out, m->streams[st->dev].action);
    }
}

static void preds_for(const sem_model *m, int s, sem_set *out)
{
    preds_for_kind(m, s, R2_BOTH, out);
}

static int add_node_kind(sem_model *m, int s, const sem_set *extra, int op, int r2)
{
    if (m->nnodes >= SEM_MAX_NODES)
        return -1;
    int n = m->nnodes++;
    preds_for_kind(m, s, r2, &m->anc[n]);
    if (extra != NULL)
        sem_set_or(&m->anc[n], extra);
    sem_node *node = &m->nodes[n];
    memset(node, 0, sizeof *node);
    node->op = op;
    node->stream = s;
    node->wbuf = node->rbuf = -1;
    node->read_id = -1;
    m->streams[s].last = n;
    if (r2 & R2_BEFORE)
        m->streams[s].action = n;
    if (op >= 0 && op < SEM_MAX_OPS) {
        if (m->op_count[op] == 0)
            m->op_first[op] = n;
        m->op_count[op]++;
    }
    return n;
}

static int add_node(sem_model *m, int s, const sem_set *extra, int op)
{
    return add_node_kind(m, s, extra, op, R2_BOTH);
}

static void host_learn(sem_model *m, int n)
{
    add_with_anc(m, &m->host, n);
}

static int capturing_graph(const sem_model *m)
{
    for (int g = 0; g < SEM_MAX_GRAPHS; g++)
        if (m->graphs[g].capturing)
            return g;
    return -1;
}

static bool stream_ok(const sem_model *m, int s)
{
    return s >= 0 && s < SEM_MAX_STREAMS && m->streams[s].live && !m->streams[s].capturing;
}

static bool event_ok(const sem_model *m, int e)
{
    return e >= 0 && e < SEM_MAX_EVENTS && m->events[e].live;
}

static bool buf_slot_free(const sem_model *m, int b)
{
    return b >= 0 && b < SEM_MAX_BUFS && !m->bufs[b].live && !m->bufs[b].held && m->bufs[b].dev == 0 &&
           m->bufs[b].size == 0;
}

/* Buffer b may be touched by new work on stream s outside a capture. */
static bool buf_usable(const sem_model *m, int b, int s)
{
    if (b < 0 || b >= SEM_MAX_BUFS)
        return false;
    const sem_buf_state *bs = &m->bufs[b];
    if (!bs->live || bs->graph >= 0)
        return false;
    /* Another device's memory: only with peer access, and never on a NULL
     * stream (a NULL stream there means the memory's own device's). */
    if (bs->dev != m->streams[s].dev && (!m->caps.peer || m->streams[s].is_null))
        return false;
    if (bs->alloc_node >= 0) {
        sem_set p;
        preds_for(m, s, &p);
        if (!sem_set_has(&p, bs->alloc_node))
            return false;
    }
    return true;
}

/* Buffer b may be used by an operation captured into graph g. */
static bool buf_capturable(const sem_model *m, int b, int g, int s)
{
    if (b < 0 || b >= SEM_MAX_BUFS)
        return false;
    const sem_buf_state *bs = &m->bufs[b];
    if (!bs->live || bs->dev != m->streams[s].dev)
        return false;
    return bs->graph == g || (bs->graph < 0 && bs->alloc_node < 0);
}

/* Every node that touched b is ordered before a FreeAsync on s. */
static bool uses_ordered_before(const sem_model *m, int b, int s)
{
    sem_set p;
    preds_for_kind(m, s, R2_NONE, &p);
    for (int n = 0; n < m->nnodes; n++)
        if ((m->nodes[n].wbuf == b || m->nodes[n].rbuf == b) && !sem_set_has(&p, n))
            return false;
    return true;
}

static bool template_kind(sem_kind k)
{
    return k == SEM_MEMSET_ASYNC || k == SEM_H2D_ASYNC || k == SEM_D2D_ASYNC || k == SEM_HOST_FN ||
           k == SEM_MALLOC_ASYNC || k == SEM_FREE_ASYNC;
}

static bool legal_in_capture(const sem_model *m, const sem_op *op, int g)
{
    const sem_graph_state *gs = &m->graphs[g];
    if (op->kind == SEM_CAPTURE_END) {
        if (op->s != gs->stream || op->g != g || gs->ntmpl == 0)
            return false;
        for (int b = 0; b < SEM_MAX_BUFS; b++)
            if (m->bufs[b].graph == g && m->bufs[b].live)
                return false; /* private memory not freed in the capture */
        return true;
    }
    if (!template_kind(op->kind) || op->s != gs->stream || gs->ntmpl >= SEM_MAX_TEMPLATE)
        return false;
    switch (op->kind) {
    case SEM_MALLOC_ASYNC:
        return buf_slot_free(m, op->b) && op->size > 0;
    case SEM_FREE_ASYNC:
        return op->b >= 0 && op->b < SEM_MAX_BUFS && m->bufs[op->b].live && m->bufs[op->b].graph == g;
    case SEM_MEMSET_ASYNC:
    case SEM_H2D_ASYNC:
        return buf_capturable(m, op->b, g, op->s);
    case SEM_D2D_ASYNC:
        return op->b != op->b2 && buf_capturable(m, op->b, g, op->s) && buf_capturable(m, op->b2, g, op->s) &&
               m->bufs[op->b].size == m->bufs[op->b2].size;
    case SEM_HOST_FN:
        return m->caps.host_fn;
    default:
        return false;
    }
}

/* Every earlier access of b that conflicts with a new access (one of the
 * two writes) is ordered before it: the new node's predecessors p. */
static bool no_race(const sem_model *m, int b, bool write, const sem_set *p)
{
    for (int n = 0; n < m->nnodes; n++) {
        const sem_node *o = &m->nodes[n];
        bool touches = o->wbuf == b || o->rbuf == b;
        if (touches && (write || o->wbuf == b) && !sem_set_has(p, n))
            return false;
    }
    return true;
}

/* For race_free programs: the accesses op makes race with none before. */
static bool race_free_ok(const sem_model *m, const sem_op *op)
{
    sem_set p;
    switch (op->kind) {
    case SEM_MEMSET_ASYNC:
    case SEM_H2D_ASYNC:
    case SEM_D2H_ASYNC:
    case SEM_D2D_ASYNC:
        preds_for(m, op->s, &p);
        break;
    case SEM_MEMSET:
    case SEM_H2D:
    case SEM_D2H:
    case SEM_D2D:
        preds_for(m, m->bufs[op->b].dev, &p);
        break;
    case SEM_GRAPH_LAUNCH: {
        const sem_graph_state *gs = &m->graphs[op->g];
        preds_for(m, op->s, &p);
        add_with_anc(m, &p, gs->last_launch_node);
        for (int b = 0; b < SEM_MAX_BUFS; b++)
            if (gs->uses[b] && !no_race(m, b, true, &p))
                return false;
        return true;
    }
    default:
        return true;
    }
    if (op->kind == SEM_D2D_ASYNC || op->kind == SEM_D2D)
        return no_race(m, op->b, true, &p) && no_race(m, op->b2, false, &p);
    return no_race(m, op->b, op->kind != SEM_D2H_ASYNC && op->kind != SEM_D2H, &p);
}

static bool legal_form(const sem_model *m, const sem_op *op);

bool sem_model_legal(const sem_model *m, const sem_op *op)
{
    if (!legal_form(m, op))
        return false;
    return !m->caps.race_free || capturing_graph(m) >= 0 || race_free_ok(m, op);
}

static bool legal_form(const sem_model *m, const sem_op *op)
{
    if (m->nnodes + 2 * SEM_MAX_TEMPLATE + SEM_MAX_BUFS >= SEM_MAX_NODES)
        return false;
    int cg = capturing_graph(m);
    if (cg >= 0)
        return legal_in_capture(m, op, cg);
    const sem_caps *c = &m->caps;
    switch (op->kind) {
    case SEM_STREAM_CREATE:
        return op->s >= c->ndevices && op->s < SEM_MAX_STREAMS && !m->streams[op->s].live &&
               m->streams[op->s].last < 0 && op->dev >= 0 && op->dev < c->ndevices &&
               (op->value == 0 || (op->value == 1 && c->nonblocking));
    case SEM_STREAM_DESTROY:
        return stream_ok(m, op->s) && !m->streams[op->s].is_null;
    case SEM_EVENT_CREATE:
        return c->events && op->e >= 0 && op->e < SEM_MAX_EVENTS && !m->events[op->e].live &&
               m->events[op->e].dev == 0 && m->events[op->e].rec < 0 && !m->events[op->e].recorded && op->dev >= 0 &&
               op->dev < c->ndevices;
    case SEM_EVENT_DESTROY:
        return event_ok(m, op->e);
    case SEM_MALLOC:
        return buf_slot_free(m, op->b) && op->size > 0 && op->dev >= 0 && op->dev < c->ndevices;
    case SEM_FREE:
        return op->b >= 0 && op->b < SEM_MAX_BUFS && m->bufs[op->b].live && m->bufs[op->b].graph < 0 &&
               m->bufs[op->b].pinned_by == 0;
    case SEM_MALLOC_ASYNC:
        return c->async_alloc && stream_ok(m, op->s) && buf_slot_free(m, op->b) && op->size > 0;
    case SEM_FREE_ASYNC:
        return c->async_alloc && stream_ok(m, op->s) && op->b >= 0 && op->b < SEM_MAX_BUFS && m->bufs[op->b].live &&
               m->bufs[op->b].graph < 0 && m->bufs[op->b].pinned_by == 0 &&
               m->bufs[op->b].dev == m->streams[op->s].dev && buf_usable(m, op->b, op->s) &&
               uses_ordered_before(m, op->b, op->s);
    case SEM_MEMSET_ASYNC:
    case SEM_H2D_ASYNC:
    case SEM_D2H_ASYNC:
        return stream_ok(m, op->s) && buf_usable(m, op->b, op->s);
    case SEM_D2D_ASYNC:
        return stream_ok(m, op->s) && op->b != op->b2 && buf_usable(m, op->b, op->s) &&
               buf_usable(m, op->b2, op->s) && m->bufs[op->b].size == m->bufs[op->b2].size;
    case SEM_MEMSET:
    case SEM_H2D:
    case SEM_D2H:
        return op->b >= 0 && op->b < SEM_MAX_BUFS && m->bufs[op->b].live && buf_usable(m, op->b, m->bufs[op->b].dev);
    case SEM_D2D:
        return op->b >= 0 && op->b < SEM_MAX_BUFS && op->b2 >= 0 && op->b2 < SEM_MAX_BUFS && op->b != op->b2 &&
               m->bufs[op->b].live && m->bufs[op->b2].live && m->bufs[op->b].dev == m->bufs[op->b2].dev &&
               m->bufs[op->b].size == m->bufs[op->b2].size && buf_usable(m, op->b, m->bufs[op->b].dev) &&
               buf_usable(m, op->b2, m->bufs[op->b].dev);
    case SEM_HOST_FN:
        return c->host_fn && stream_ok(m, op->s);
    case SEM_EVENT_RECORD:
        return stream_ok(m, op->s) && event_ok(m, op->e) && m->events[op->e].dev == m->streams[op->s].dev;
    case SEM_STREAM_WAIT:
        return stream_ok(m, op->s) && event_ok(m, op->e) &&
               (m->events[op->e].dev == m->streams[op->s].dev || c->peer);
    case SEM_EVENT_SYNC:
    case SEM_EVENT_QUERY:
        return event_ok(m, op->e);
    case SEM_STREAM_SYNC:
        return stream_ok(m, op->s);
    case SEM_DEVICE_SYNC:
        return op->dev >= 0 && op->dev < c->ndevices;
    case SEM_CAPTURE_BEGIN:
        return c->graphs && stream_ok(m, op->s) && !m->streams[op->s].is_null && op->g >= 0 &&
               op->g < SEM_MAX_GRAPHS && !m->graphs[op->g].live && m->graphs[op->g].ntmpl == 0 &&
               m->graphs[op->g].last_launch_node < 0;
    case SEM_CAPTURE_END:
        return false; /* only while capturing */
    case SEM_GRAPH_LAUNCH:
        return op->g >= 0 && op->g < SEM_MAX_GRAPHS && m->graphs[op->g].live && stream_ok(m, op->s) &&
               m->streams[op->s].dev == m->streams[m->graphs[op->g].stream].dev;
    case SEM_GRAPH_EXEC_DESTROY:
        return op->g >= 0 && op->g < SEM_MAX_GRAPHS && m->graphs[op->g].live;
    }
    return false;
}

static int add_read(sem_model *m, int n, int op, int buf)
{
    int r = m->nreads++;
    m->reads[r] = (sem_read){.node = n, .op = op, .buf = buf, .size = m->bufs[buf].size, .checked_at = -1};
    m->nodes[n].read_id = r;
    return r;
}

/* The node a memory operation adds on stream s. */
static int mem_node(sem_model *m, const sem_op *op, int s, int index)
{
    int n = add_node(m, s, NULL, index);
    if (n < 0)
        return n;
    sem_node *node = &m->nodes[n];
    switch (op->kind) {
    case SEM_MEMSET_ASYNC:
    case SEM_MEMSET:
        node->wbuf = op->b;
        node->kind = 1;
        node->value = op->value;
        break;
    case SEM_H2D_ASYNC:
    case SEM_H2D:
        node->wbuf = op->b;
        node->kind = 2;
        node->value = op->value;
        break;
    case SEM_D2D_ASYNC:
    case SEM_D2D:
        node->wbuf = op->b;
        node->rbuf = op->b2;
        node->kind = 3;
        break;
    case SEM_D2H_ASYNC:
    case SEM_D2H:
        node->rbuf = op->b;
        add_read(m, n, index, op->b);
        break;
    default:
        break;
    }
    return n;
}

static void capture_apply(sem_model *m, const sem_op *op, int g)
{
    sem_graph_state *gs = &m->graphs[g];
    if (op->kind == SEM_CAPTURE_END) {
        gs->capturing = false;
        gs->live = true;
        m->streams[op->s].capturing = false;
        for (int b = 0; b < SEM_MAX_BUFS; b++)
            if (gs->uses[b] && m->bufs[b].graph < 0)
                m->bufs[b].pinned_by++;
        return;
    }
    gs->tmpl[gs->ntmpl++] = *op;
    if (op->kind == SEM_MALLOC_ASYNC) {
        sem_buf_state *bs = &m->bufs[op->b];
        *bs = (sem_buf_state){.live = true,
                              .held = true,
                              .async = true,
                              .dev = m->streams[op->s].dev,
                              .size = op->size,
                              .alloc_node = -1,
                              .graph = g};
    } else if (op->kind == SEM_FREE_ASYNC) {
        m->bufs[op->b].live = false; /* held until the graph goes */
    }
    if (op->b >= 0 && op->b < SEM_MAX_BUFS && op->kind != SEM_HOST_FN)
        gs->uses[op->b] = true;
    if (op->kind == SEM_D2D_ASYNC)
        gs->uses[op->b2] = true;
}

static void launch_apply(sem_model *m, const sem_op *op, int index)
{
    sem_graph_state *gs = &m->graphs[op->g];
    sem_set extra = {{0}};
    add_with_anc(m, &extra, gs->last_launch_node); /* R5 */
    int last = add_node(m, op->s, &extra, index);  /* the launch's start */
    for (int i = 0; i < gs->ntmpl; i++) {
        const sem_op *t = &gs->tmpl[i];
        if (t->kind == SEM_MALLOC_ASYNC || t->kind == SEM_FREE_ASYNC)
            continue;
        int n = t->kind == SEM_HOST_FN ? add_node(m, op->s, NULL, index) : mem_node(m, t, op->s, index);
        if (n >= 0)
            last = n;
    }
    gs->last_launch_node = last;
}

void sem_model_apply(sem_model *m, const sem_op *op, int index)
{
    sem_model_apply_answer(m, op, index, false);
}

void sem_model_apply_answer(sem_model *m, const sem_op *op, int index, bool complete)
{
    int cg = capturing_graph(m);
    if (cg >= 0) {
        capture_apply(m, op, cg);
        return;
    }
    switch (op->kind) {
    case SEM_STREAM_CREATE:
        m->streams[op->s] = (sem_stream_state){
            .live = true, .blocking = op->value == 0, .is_null = false, .dev = op->dev, .last = -1, .action = -1};
        break;
    case SEM_STREAM_DESTROY:
        host_learn(m, m->streams[op->s].last); /* the destroy waits for its work */
        m->streams[op->s].live = false;
        break;
    case SEM_EVENT_CREATE:
        m->events[op->e] = (sem_event_state){.live = true, .dev = op->dev, .rec = -1};
        break;
    case SEM_EVENT_DESTROY:
        m->events[op->e].live = false;
        break;
    case SEM_MALLOC:
        m->bufs[op->b] = (sem_buf_state){
            .live = true, .held = true, .dev = op->dev, .size = op->size, .alloc_node = -1, .graph = -1};
        break;
    case SEM_FREE:
        m->bufs[op->b].live = false;
        m->bufs[op->b].held = false;
        break;
    case SEM_MALLOC_ASYNC: {
        int n = add_node_kind(m, op->s, NULL, index, R2_NONE);
        m->bufs[op->b] = (sem_buf_state){.live = true,
                                         .held = true,
                                         .async = true,
                                         .dev = m->streams[op->s].dev,
                                         .size = op->size,
                                         .alloc_node = n,
                                         .graph = -1};
        break;
    }
    case SEM_FREE_ASYNC:
        add_node_kind(m, op->s, NULL, index, R2_NONE);
        m->bufs[op->b].live = false;
        m->bufs[op->b].held = false;
        break;
    case SEM_MEMSET_ASYNC:
    case SEM_H2D_ASYNC:
    case SEM_D2D_ASYNC:
    case SEM_D2H_ASYNC:
        mem_node(m, op, op->s, index);
        break;
    case SEM_MEMSET:
    case SEM_H2D:
    case SEM_D2D:
    case SEM_D2H: {
        /* On the NULL stream of the memory's device, then waited for. */
        int n = mem_node(m, op, m->bufs[op->b].dev, index);
        host_learn(m, n);
        break;
    }
    case SEM_HOST_FN:
        add_node(m, op->s, NULL, index);
        break;
    case SEM_EVENT_RECORD: {
        int n = add_node(m, op->s, NULL, index);
        m->events[op->e].rec = n;
        m->events[op->e].recorded = true;
        break;
    }
    case SEM_STREAM_WAIT: {
        /* R3: the record current now.  A wait for an event never recorded
         * orders nothing: it queues no work, so it is no action of the
         * NULL stream either (R2).  On a blocking stream the wait is not
         * ordered after the NULL stream's earlier work: on an H200 (driver
         * 580.159.04) a StreamSynchronize of a blocking stream whose last
         * work is a wait returned while the NULL stream was held, whether
         * the record was complete or pending at the wait
         * (tests/gpu/probe_blocking_wait.c). */
        if (m->events[op->e].rec < 0)
            break;
        sem_set extra = {{0}};
        add_with_anc(m, &extra, m->events[op->e].rec);
        add_node_kind(m, op->s, &extra, index, m->streams[op->s].is_null ? R2_BOTH : R2_BEFORE);
        break;
    }
    case SEM_EVENT_SYNC:
        host_learn(m, m->events[op->e].rec);
        break;
    case SEM_EVENT_QUERY:
        if (complete)
            host_learn(m, m->events[op->e].rec);
        break;
    case SEM_STREAM_SYNC:
        host_learn(m, m->streams[op->s].last);
        break;
    case SEM_DEVICE_SYNC:
        for (int s = 0; s < SEM_MAX_STREAMS; s++)
            if (m->streams[s].live && m->streams[s].dev == op->dev)
                host_learn(m, m->streams[s].last);
        break;
    case SEM_CAPTURE_BEGIN:
        memset(&m->graphs[op->g], 0, sizeof m->graphs[op->g]);
        m->graphs[op->g].capturing = true;
        m->graphs[op->g].stream = op->s;
        m->graphs[op->g].last_launch_node = -1;
        m->streams[op->s].capturing = true;
        break;
    case SEM_CAPTURE_END:
        break;
    case SEM_GRAPH_LAUNCH:
        launch_apply(m, op, index);
        break;
    case SEM_GRAPH_EXEC_DESTROY: {
        sem_graph_state *gs = &m->graphs[op->g];
        gs->live = false;
        for (int b = 0; b < SEM_MAX_BUFS; b++) {
            if (!gs->uses[b])
                continue;
            if (m->bufs[b].graph == op->g)
                m->bufs[b].held = false;
            else if (m->bufs[b].pinned_by > 0)
                m->bufs[b].pinned_by--;
        }
        break;
    }
    }
}

void sem_model_finish(sem_model *m, int op_index)
{
    /* The runner synchronizes every device, then reads every buffer back:
     * one node per buffer, ordered after everything. */
    sem_set all = {{0}};
    for (int n = 0; n < m->nnodes; n++)
        sem_set_add(&all, n);
    m->host = all;
    for (int b = 0; b < SEM_MAX_BUFS; b++) {
        if (!m->bufs[b].live || m->bufs[b].graph >= 0 || m->nnodes >= SEM_MAX_NODES)
            continue;
        int n = m->nnodes++;
        m->anc[n] = all;
        m->nodes[n] = (sem_node){.op = op_index, .stream = m->bufs[b].dev, .wbuf = -1, .rbuf = b, .read_id = -1};
        add_read(m, n, op_index, b);
        sem_set_add(&m->host, n);
    }
}

static sem_value value_at(const sem_model *m, int buf, int reader, int depth);

static sem_value node_value(const sem_model *m, int w, int depth)
{
    const sem_node *n = &m->nodes[w];
    if (n->kind == 1)
        return (sem_value){SEM_VAL_MEMSET, n->value};
    if (n->kind == 2)
        return (sem_value){SEM_VAL_PATTERN, n->value};
    if (n->kind == 3 && depth < 64)
        return value_at(m, n->rbuf, w, depth + 1);
    return (sem_value){SEM_VAL_UNDET, 0};
}

/* What buffer `buf` holds for the node `reader` that reads it. */
static sem_value value_at(const sem_model *m, int buf, int reader, int depth)
{
    const sem_set *before = &m->anc[reader];
    int best = -1;
    for (int w = 0; w < m->nnodes; w++) {
        if (w == reader || m->nodes[w].wbuf != buf)
            continue;
        if (sem_set_has(before, w)) {
            if (w > best)
                best = w; /* a node is created after all it is ordered after */
        } else if (!sem_set_has(&m->anc[w], reader)) {
            return (sem_value){SEM_VAL_UNDET, 0}; /* a write racing with the read */
        }
    }
    if (best < 0)
        return (sem_value){SEM_VAL_UNDET, 0}; /* never written */
    for (int w = 0; w < best; w++)
        if (m->nodes[w].wbuf == buf && sem_set_has(before, w) && !sem_set_has(&m->anc[best], w))
            return (sem_value){SEM_VAL_UNDET, 0}; /* two unordered writes before the read */
    return node_value(m, best, depth);
}

sem_value sem_model_expect(const sem_model *m, int r)
{
    return value_at(m, m->reads[r].buf, m->reads[r].node, 0);
}

unsigned char sem_value_byte(sem_value v, size_t i)
{
    if (v.kind == SEM_VAL_MEMSET)
        return (unsigned char)v.value;
    uint32_t x = v.value * 2654435761u + (uint32_t)(i / 4) * 40503u;
    x ^= x >> 15;
    return (unsigned char)(x >> ((i % 4) * 8));
}

bool sem_model_event_known(const sem_model *m, int e)
{
    int rec = m->events[e].rec;
    return rec < 0 || sem_set_has(&m->host, rec);
}

int sem_program_legalize(sem_program *prog, const sem_caps *caps)
{
    static sem_model m; /* large: not on the stack */
    sem_model_init(&m, caps);
    int kept = 0;
    for (int i = 0; i < prog->nops; i++) {
        if (!sem_model_legal(&m, &prog->ops[i]))
            continue;
        prog->ops[kept] = prog->ops[i];
        sem_model_apply(&m, &prog->ops[kept], kept);
        kept++;
    }
    /* A capture left open by the removals: drop it from its begin on. */
    for (int g = 0; g < SEM_MAX_GRAPHS; g++) {
        if (!m.graphs[g].capturing)
            continue;
        for (int i = 0; i < kept; i++)
            if (prog->ops[i].kind == SEM_CAPTURE_BEGIN && prog->ops[i].g == g) {
                kept = i;
                break;
            }
    }
    prog->nops = kept;
    return kept;
}

const char *sem_kind_name(sem_kind k)
{
    static const char *const names[] = {"StreamCreate",
                                        "StreamDestroy",
                                        "EventCreate",
                                        "EventDestroy",
                                        "Malloc",
                                        "Free",
                                        "MallocAsync",
                                        "FreeAsync",
                                        "MemsetAsync",
                                        "MemcpyAsync H2D",
                                        "MemcpyAsync D2D",
                                        "MemcpyAsync D2H",
                                        "Memset",
                                        "Memcpy H2D",
                                        "Memcpy D2D",
                                        "Memcpy D2H",
                                        "LaunchHostFunc",
                                        "EventRecord",
                                        "StreamWaitEvent",
                                        "EventSynchronize",
                                        "EventQuery",
                                        "StreamSynchronize",
                                        "DeviceSynchronize",
                                        "StreamBeginCapture",
                                        "StreamEndCapture",
                                        "GraphLaunch",
                                        "GraphExecDestroy"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}
