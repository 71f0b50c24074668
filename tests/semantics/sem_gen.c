/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sem_gen.c - seeded random programs for the semantics tester.
 *
 * A program starts with a few streams (blocking and non-blocking), events
 * and buffers, then draws operations by weight; each draw is kept only if
 * the model finds it legal where it stands (sem_model_legal), so every
 * program is one the header allows.  Host functions sleep for short random
 * times, so a missing order shows up as a read of stale data.  The choice
 * of buffers leans towards what a stream wrote last, and frees towards the
 * stream that used the memory last, so reads are often determined and
 * frees often legal.
 */
#include "sem.h"

#include <string.h>

typedef struct {
    uint64_t x;
} rng;

static uint64_t next(rng *r)
{
    r->x ^= r->x << 13;
    r->x ^= r->x >> 7;
    r->x ^= r->x << 17;
    return r->x;
}

static int below(rng *r, int n)
{
    return n <= 0 ? 0 : (int)(next(r) % (uint64_t)n);
}

typedef struct {
    sem_program *prog;
    sem_model *m;
    rng r;
    int next_stream, next_event, next_buf, next_graph;
    uint32_t writes;
    int last_written[SEM_MAX_STREAMS]; /* buffer last written on each stream */
    int last_user[SEM_MAX_BUFS];       /* stream that last used each buffer */
} gen;

static bool emit(gen *g, sem_op op)
{
    if (g->prog->nops >= SEM_MAX_OPS - 1 || !sem_model_legal(g->m, &op))
        return false;
    int i = g->prog->nops++;
    g->prog->ops[i] = op;
    sem_model_apply(g->m, &op, i);
    if (op.s >= 0 && op.b >= 0 && op.kind != SEM_HOST_FN && op.kind != SEM_EVENT_RECORD) {
        g->last_user[op.b] = op.s;
        if (op.kind == SEM_MEMSET_ASYNC || op.kind == SEM_H2D_ASYNC || op.kind == SEM_D2D_ASYNC)
            g->last_written[op.s] = op.b;
    }
    if (op.b2 >= 0 && op.s >= 0)
        g->last_user[op.b2] = op.s;
    return true;
}

static sem_op blank(sem_kind k)
{
    return (sem_op){.kind = k, .s = -1, .e = -1, .b = -1, .b2 = -1, .g = -1, .dev = 0};
}

static int pick_stream(gen *g)
{
    int live[SEM_MAX_STREAMS], n = 0;
    for (int s = 0; s < SEM_MAX_STREAMS; s++)
        if (g->m->streams[s].live && !g->m->streams[s].capturing)
            live[n++] = s;
    return n ? live[below(&g->r, n)] : 0;
}

static int pick_event(gen *g)
{
    int live[SEM_MAX_EVENTS], n = 0;
    for (int e = 0; e < SEM_MAX_EVENTS; e++)
        if (g->m->events[e].live)
            live[n++] = e;
    return n ? live[below(&g->r, n)] : -1;
}

static int pick_buf(gen *g, int graph)
{
    int live[SEM_MAX_BUFS], n = 0;
    for (int b = 0; b < SEM_MAX_BUFS; b++)
        if (g->m->bufs[b].live && (g->m->bufs[b].graph < 0 || g->m->bufs[b].graph == graph))
            live[n++] = b;
    return n ? live[below(&g->r, n)] : -1;
}

static int pick_buf_size_like(gen *g, int b, int graph)
{
    int live[SEM_MAX_BUFS], n = 0;
    for (int c = 0; c < SEM_MAX_BUFS; c++)
        if (c != b && g->m->bufs[c].live && g->m->bufs[c].size == g->m->bufs[b].size &&
            (g->m->bufs[c].graph < 0 || g->m->bufs[c].graph == graph))
            live[n++] = c;
    return n ? live[below(&g->r, n)] : -1;
}

static size_t pick_size(gen *g)
{
    static const size_t sizes[] = {256, 1024, 4096};
    return sizes[below(&g->r, 3)];
}

static uint32_t memset_value(gen *g)
{
    return 1 + (g->writes++ * 97u) % 255u;
}

static uint32_t sleep_us(gen *g)
{
    int p = below(&g->r, 100);
    if (p < 70)
        return (uint32_t)below(&g->r, 500);
    if (p < 95)
        return 1000 + (uint32_t)below(&g->r, 4000);
    return 10000 + (uint32_t)below(&g->r, 20000);
}

/* A memory operation on stream s (kind given), or any legal one. */
static bool gen_mem(gen *g, sem_kind k, int s, int graph)
{
    sem_op op = blank(k);
    op.s = s;
    bool prefer_last = below(&g->r, 2) == 0 && s >= 0 && g->last_written[s] >= 0;
    op.b = prefer_last && k == SEM_D2H_ASYNC ? g->last_written[s] : pick_buf(g, graph);
    if (op.b < 0)
        return false;
    switch (k) {
    case SEM_MEMSET_ASYNC:
    case SEM_MEMSET:
        op.value = memset_value(g);
        break;
    case SEM_H2D_ASYNC:
    case SEM_H2D:
        op.value = 1000 + g->writes++;
        break;
    case SEM_D2D_ASYNC:
    case SEM_D2D:
        op.b2 = pick_buf_size_like(g, op.b, graph);
        if (op.b2 < 0)
            return false;
        break;
    default:
        break;
    }
    return emit(g, op);
}

static void gen_capture(gen *g)
{
    int s = pick_stream(g), gr = g->next_graph;
    if (gr >= SEM_MAX_GRAPHS)
        return;
    sem_op begin = blank(SEM_CAPTURE_BEGIN);
    begin.s = s;
    begin.g = gr;
    if (!emit(g, begin))
        return;
    g->next_graph++;
    int priv = -1;
    if (g->m->caps.async_alloc && below(&g->r, 2) == 0 && g->next_buf < SEM_MAX_BUFS) {
        sem_op a = blank(SEM_MALLOC_ASYNC);
        a.s = s;
        a.b = g->next_buf;
        a.size = pick_size(g);
        if (emit(g, a)) {
            priv = a.b;
            g->next_buf++;
            sem_op w = blank(SEM_MEMSET_ASYNC);
            w.s = s;
            w.b = priv;
            w.value = memset_value(g);
            emit(g, w);
        }
    }
    int n = 1 + below(&g->r, 4);
    for (int i = 0; i < n; i++) {
        static const sem_kind kinds[] = {SEM_MEMSET_ASYNC, SEM_H2D_ASYNC, SEM_D2D_ASYNC, SEM_D2D_ASYNC, SEM_HOST_FN};
        sem_kind k = kinds[below(&g->r, 5)];
        if (k == SEM_HOST_FN) {
            sem_op h = blank(SEM_HOST_FN);
            h.s = s;
            h.value = sleep_us(g);
            emit(g, h);
        } else {
            gen_mem(g, k, s, gr);
        }
    }
    if (priv >= 0) {
        /* Out of the private block into a buffer of the same size, then free it. */
        sem_op c = blank(SEM_D2D_ASYNC);
        c.s = s;
        c.b2 = priv;
        c.b = pick_buf_size_like(g, priv, -1);
        if (c.b >= 0 && g->m->bufs[c.b].graph < 0)
            emit(g, c);
        sem_op f = blank(SEM_FREE_ASYNC);
        f.s = s;
        f.b = priv;
        emit(g, f);
    }
    sem_op end = blank(SEM_CAPTURE_END);
    end.s = s;
    end.g = gr;
    if (!emit(g, end)) {
        /* Nothing captured that an end accepts: close it with one write. */
        gen_mem(g, SEM_MEMSET_ASYNC, s, gr);
        if (!emit(g, end)) {
            sem_op h = blank(SEM_HOST_FN);
            h.s = s;
            emit(g, h);
            emit(g, end);
        }
    }
}

static void gen_one(gen *g)
{
    static const struct {
        sem_kind k;
        int w;
    } table[] = {
        {SEM_MEMSET_ASYNC, 10},
        {SEM_H2D_ASYNC, 6},
        {SEM_D2D_ASYNC, 8},
        {SEM_D2H_ASYNC, 14},
        {SEM_HOST_FN, 12},
        {SEM_EVENT_RECORD, 9},
        {SEM_STREAM_WAIT, 9},
        {SEM_EVENT_SYNC, 2},
        {SEM_EVENT_QUERY, 3},
        {SEM_STREAM_SYNC, 3},
        {SEM_DEVICE_SYNC, 1},
        {SEM_MEMSET, 2},
        {SEM_H2D, 1},
        {SEM_D2D, 1},
        {SEM_D2H, 4},
        {SEM_MALLOC, 2},
        {SEM_FREE, 2},
        {SEM_MALLOC_ASYNC, 4},
        {SEM_FREE_ASYNC, 5},
        {SEM_STREAM_CREATE, 2},
        {SEM_STREAM_DESTROY, 1},
        {SEM_EVENT_CREATE, 1},
        {SEM_EVENT_DESTROY, 1},
        {SEM_CAPTURE_BEGIN, 2},
        {SEM_GRAPH_LAUNCH, 6},
        {SEM_GRAPH_EXEC_DESTROY, 1},
    };
    int total = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        total += table[i].w;
    int p = below(&g->r, total);
    sem_kind k = table[0].k;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (p < table[i].w) {
            k = table[i].k;
            break;
        }
        p -= table[i].w;
    }
    const sem_caps *c = &g->m->caps;
    sem_op op = blank(k);
    switch (k) {
    case SEM_MEMSET_ASYNC:
    case SEM_H2D_ASYNC:
    case SEM_D2D_ASYNC:
    case SEM_D2H_ASYNC:
        gen_mem(g, k, pick_stream(g), -1);
        return;
    case SEM_MEMSET:
    case SEM_H2D:
    case SEM_D2D:
    case SEM_D2H:
        gen_mem(g, k, -1, -1);
        return;
    case SEM_HOST_FN:
        op.s = pick_stream(g);
        op.value = sleep_us(g);
        break;
    case SEM_EVENT_RECORD:
        op.e = pick_event(g);
        op.s = pick_stream(g);
        break;
    case SEM_STREAM_WAIT:
        op.e = pick_event(g);
        op.s = pick_stream(g);
        break;
    case SEM_EVENT_SYNC:
    case SEM_EVENT_QUERY:
    case SEM_EVENT_DESTROY:
        op.e = pick_event(g);
        break;
    case SEM_STREAM_SYNC:
    case SEM_STREAM_DESTROY:
        op.s = pick_stream(g);
        break;
    case SEM_DEVICE_SYNC:
        op.dev = below(&g->r, c->ndevices);
        break;
    case SEM_MALLOC:
        op.b = g->next_buf;
        op.dev = below(&g->r, c->ndevices);
        op.size = pick_size(g);
        if (emit(g, op)) {
            g->next_buf++;
            sem_op w = blank(SEM_MEMSET_ASYNC);
            w.s = pick_stream(g);
            w.b = op.b;
            w.value = memset_value(g);
            emit(g, w);
        }
        return;
    case SEM_MALLOC_ASYNC:
        op.b = g->next_buf;
        op.s = pick_stream(g);
        op.size = pick_size(g);
        if (emit(g, op)) {
            g->next_buf++;
            sem_op w = blank(SEM_MEMSET_ASYNC);
            w.s = op.s;
            w.b = op.b;
            w.value = memset_value(g);
            emit(g, w);
        }
        return;
    case SEM_FREE:
        op.b = pick_buf(g, -1);
        break;
    case SEM_FREE_ASYNC:
        op.b = pick_buf(g, -1);
        if (op.b < 0)
            return;
        op.s = below(&g->r, 3) ? g->last_user[op.b] : pick_stream(g);
        if (op.s < 0)
            op.s = pick_stream(g);
        break;
    case SEM_STREAM_CREATE:
        op.s = g->next_stream;
        op.dev = below(&g->r, c->ndevices);
        op.value = c->nonblocking && below(&g->r, 3) == 0 ? 1 : 0;
        if (emit(g, op))
            g->next_stream++;
        return;
    case SEM_EVENT_CREATE:
        op.e = g->next_event;
        op.dev = below(&g->r, c->ndevices);
        if (emit(g, op))
            g->next_event++;
        return;
    case SEM_CAPTURE_BEGIN:
        gen_capture(g);
        return;
    case SEM_GRAPH_LAUNCH:
    case SEM_GRAPH_EXEC_DESTROY:
        op.g = below(&g->r, g->next_graph > 0 ? g->next_graph : 1);
        op.s = pick_stream(g);
        break;
    default:
        return;
    }
    emit(g, op);
}

void sem_generate(sem_program *prog, const sem_caps *caps, uint64_t seed, int nops)
{
    static sem_model m;
    gen g;
    memset(&g, 0, sizeof g);
    g.prog = prog;
    g.m = &m;
    g.r.x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (g.r.x == 0)
        g.r.x = 1;
    for (int i = 0; i < 8; i++)
        next(&g.r);
    memset(g.last_written, -1, sizeof g.last_written);
    memset(g.last_user, -1, sizeof g.last_user);
    prog->seed = seed;
    prog->nops = 0;
    sem_model_init(&m, caps);
    g.next_stream = caps->ndevices;
    if (nops > SEM_MAX_OPS - 16)
        nops = SEM_MAX_OPS - 16;

    /* A few streams, events and initialised buffers to start with. */
    int nstreams = 2 + below(&g.r, 3), nevents = caps->events ? 1 + below(&g.r, 3) : 0, nbufs = 2 + below(&g.r, 3);
    for (int i = 0; i < nstreams; i++) {
        sem_op op = blank(SEM_STREAM_CREATE);
        op.s = g.next_stream;
        op.dev = below(&g.r, caps->ndevices);
        op.value = caps->nonblocking && below(&g.r, 3) == 0 ? 1 : 0;
        if (emit(&g, op))
            g.next_stream++;
    }
    for (int i = 0; i < nevents; i++) {
        sem_op op = blank(SEM_EVENT_CREATE);
        op.e = g.next_event;
        op.dev = below(&g.r, caps->ndevices);
        if (emit(&g, op))
            g.next_event++;
    }
    for (int i = 0; i < nbufs; i++) {
        sem_op op = blank(SEM_MALLOC);
        op.b = g.next_buf;
        op.dev = below(&g.r, caps->ndevices);
        op.size = i < 2 ? 1024 : pick_size(&g);
        if (emit(&g, op)) {
            g.next_buf++;
            sem_op w = blank(SEM_MEMSET);
            w.b = op.b;
            w.value = memset_value(&g);
            emit(&g, w);
        }
    }
    int guard = 0;
    while (prog->nops < nops && guard++ < nops * 20)
        gen_one(&g);
    sem_program_legalize(prog, caps); /* drops a capture left open at the end */
}
