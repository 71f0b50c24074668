/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sem_run.c - play a program on the library and check it against the model.
 *
 * The model is built as the program runs, because one answer comes from
 * the library: an EventQuery that says COMPLETE tells the host that the
 * record's work has completed, as a synchronization would.  A read's host
 * buffer is copied aside at the moment the host learns the read complete
 * (a synchronization that returned early shows there), and compared at the
 * end, when the whole program is known and so is whether the rules
 * determine the read.  After the last operation every device is
 * synchronized and every buffer read back once more, which catches a write
 * that landed late (memory reused while queued work still wrote it).
 */
#define _GNU_SOURCE
#include "sem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    infiniDevice_t type;
    const sem_program *prog;
    sem_model *m;
    sem_result *res;
    infinirtStream_t streams[SEM_MAX_STREAMS];
    infinirtEvent_t events[SEM_MAX_EVENTS];
    void *bufs[SEM_MAX_BUFS];
    size_t buf_size[SEM_MAX_BUFS];
    infinirtGraph_t graphs[SEM_MAX_GRAPHS];
    infinirtGraphExec_t execs[SEM_MAX_GRAPHS];
    unsigned char *host;
    bool host_pinned;
    size_t host_off[SEM_MAX_OPS];
    unsigned char *snap[SEM_MAX_NODES];
    unsigned char *final_dst[SEM_MAX_BUFS];
} runner;

static void sleep_fn(void *us)
{
    usleep((useconds_t)(uintptr_t)us);
}

static void fail(runner *r, int op, const char *what)
{
    if (r->res->failures++ == 0) {
        snprintf(r->res->first, sizeof r->res->first, "op %d (%s): %s", op,
                 op >= 0 && op < r->prog->nops ? sem_kind_name(r->prog->ops[op].kind) : "end", what);
    }
    if (r->res->bad_op < 0)
        r->res->bad_op = op;
}

static bool ok(runner *r, int op, infiniStatus_t st, const char *call)
{
    if (st == INFINI_STATUS_SUCCESS)
        return true;
    char what[160];
    snprintf(what, sizeof what, "%s returned %s", call, infinirtGetErrorName(st));
    fail(r, op, what);
    return false;
}

/* The stream handle of slot s; a NULL stream makes its device current. */
static infinirtStream_t stream_of(runner *r, int s)
{
    if (r->m->streams[s].is_null) {
        infinirtSetDevice(r->type, r->m->streams[s].dev);
        return NULL;
    }
    return r->streams[s];
}

static void check_overlap(runner *r, int op, int b)
{
    const unsigned char *p = r->bufs[b];
    for (int o = 0; o < SEM_MAX_BUFS; o++) {
        if (o == b || !r->m->bufs[o].held || r->bufs[o] == NULL)
            continue;
        const unsigned char *q = r->bufs[o];
        if (p < q + r->buf_size[o] && q < p + r->buf_size[b]) {
            char what[96];
            snprintf(what, sizeof what, "the block handed out overlaps b%d, which is still in use", o);
            fail(r, op, what);
        }
    }
}

/* Run op i on the library; false when its call failed. */
static bool play(runner *r, int i, bool *answer)
{
    const sem_op *op = &r->prog->ops[i];
    unsigned char *h = r->host + r->host_off[i];
    void *b = op->b >= 0 ? r->bufs[op->b] : NULL;
    size_t n = op->b >= 0 ? r->buf_size[op->b] : 0;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    switch (op->kind) {
    case SEM_STREAM_CREATE:
        infinirtSetDevice(r->type, op->dev);
        st = op->value ? infinirtStreamCreateWithFlags(&r->streams[op->s], INFINIRT_STREAM_NON_BLOCKING)
                       : infinirtStreamCreate(&r->streams[op->s]);
        break;
    case SEM_STREAM_DESTROY:
        st = infinirtStreamDestroy(r->streams[op->s]);
        r->streams[op->s] = NULL;
        break;
    case SEM_EVENT_CREATE:
        infinirtSetDevice(r->type, op->dev);
        st = infinirtEventCreate(&r->events[op->e]);
        break;
    case SEM_EVENT_DESTROY:
        st = infinirtEventDestroy(r->events[op->e]);
        r->events[op->e] = NULL;
        break;
    case SEM_MALLOC:
        infinirtSetDevice(r->type, op->dev);
        st = infinirtMalloc(&r->bufs[op->b], op->size);
        r->buf_size[op->b] = op->size;
        if (st == INFINI_STATUS_SUCCESS)
            check_overlap(r, i, op->b);
        break;
    case SEM_FREE:
        st = infinirtFree(b);
        break;
    case SEM_MALLOC_ASYNC: {
        infinirtStream_t s = stream_of(r, op->s);
        st = infinirtMallocAsync(&r->bufs[op->b], op->size, s);
        r->buf_size[op->b] = op->size;
        if (st == INFINI_STATUS_SUCCESS)
            check_overlap(r, i, op->b);
        break;
    }
    case SEM_FREE_ASYNC:
        st = infinirtFreeAsync(b, stream_of(r, op->s));
        break;
    case SEM_MEMSET_ASYNC:
        st = infinirtMemsetAsync(b, (int)op->value, n, stream_of(r, op->s));
        break;
    case SEM_H2D_ASYNC:
        st = infinirtMemcpyAsync(b, h, n, INFINIRT_MEMCPY_H2D, stream_of(r, op->s));
        break;
    case SEM_D2D_ASYNC:
        st = infinirtMemcpyAsync(b, r->bufs[op->b2], n, INFINIRT_MEMCPY_D2D, stream_of(r, op->s));
        break;
    case SEM_D2H_ASYNC:
        st = infinirtMemcpyAsync(h, b, n, INFINIRT_MEMCPY_D2H, stream_of(r, op->s));
        break;
    case SEM_MEMSET:
        st = infinirtMemset(b, (int)op->value, n);
        break;
    case SEM_H2D:
        st = infinirtMemcpy(b, h, n, INFINIRT_MEMCPY_H2D);
        break;
    case SEM_D2D:
        st = infinirtMemcpy(b, r->bufs[op->b2], n, INFINIRT_MEMCPY_D2D);
        break;
    case SEM_D2H:
        st = infinirtMemcpy(h, b, n, INFINIRT_MEMCPY_D2H);
        break;
    case SEM_HOST_FN:
        st = infinirtLaunchHostFunc(stream_of(r, op->s), sleep_fn, (void *)(uintptr_t)op->value);
        break;
    case SEM_EVENT_RECORD:
        st = infinirtEventRecord(r->events[op->e], stream_of(r, op->s));
        break;
    case SEM_STREAM_WAIT:
        st = infinirtStreamWaitEvent(stream_of(r, op->s), r->events[op->e]);
        break;
    case SEM_EVENT_SYNC:
        st = infinirtEventSynchronize(r->events[op->e]);
        break;
    case SEM_EVENT_QUERY: {
        infinirtEventStatus_t es = INFINIRT_EVENT_NOT_READY;
        st = infinirtEventQuery(r->events[op->e], &es);
        *answer = es == INFINIRT_EVENT_COMPLETE;
        if (st == INFINI_STATUS_SUCCESS && !*answer && sem_model_event_known(r->m, op->e)) {
            char what[96];
            snprintf(what, sizeof what, "EventQuery(e%d) answered NOT_READY for work the host already waited for",
                     op->e);
            fail(r, i, what);
        }
        break;
    }
    case SEM_STREAM_SYNC:
        st = infinirtStreamSynchronize(stream_of(r, op->s));
        break;
    case SEM_DEVICE_SYNC:
        infinirtSetDevice(r->type, op->dev);
        st = infinirtDeviceSynchronize();
        break;
    case SEM_CAPTURE_BEGIN:
        st = infinirtStreamBeginCapture(r->streams[op->s], INFINIRT_STREAM_CAPTURE_MODE_GLOBAL);
        break;
    case SEM_CAPTURE_END: {
        st = infinirtStreamEndCapture(r->streams[op->s], &r->graphs[op->g]);
        if (st != INFINI_STATUS_SUCCESS)
            break;
        char log[256];
        st = infinirtGraphInstantiate(&r->execs[op->g], r->graphs[op->g], NULL, log, sizeof log);
        if (!ok(r, i, st, "GraphInstantiate"))
            return false;
        break;
    }
    case SEM_GRAPH_LAUNCH:
        st = infinirtGraphLaunch(r->execs[op->g], stream_of(r, op->s));
        break;
    case SEM_GRAPH_EXEC_DESTROY:
        st = infinirtGraphExecDestroy(r->execs[op->g]);
        if (st == INFINI_STATUS_SUCCESS)
            st = infinirtGraphDestroy(r->graphs[op->g]);
        r->execs[op->g] = NULL;
        r->graphs[op->g] = NULL;
        break;
    }
    return ok(r, i, st, sem_kind_name(op->kind));
}

/* Copy aside the host buffers of the reads the host now knows complete. */
static void snapshot_known(runner *r, int i)
{
    for (int k = 0; k < r->m->nreads; k++) {
        sem_read *rd = &r->m->reads[k];
        if (r->snap[k] != NULL || !sem_set_has(&r->m->host, rd->node))
            continue;
        const unsigned char *src = rd->op < r->prog->nops ? r->host + r->host_off[rd->op] : r->final_dst[rd->buf];
        r->snap[k] = malloc(rd->size);
        if (r->snap[k] != NULL)
            memcpy(r->snap[k], src, rd->size);
        rd->checked_at = i;
    }
}

static void compare_reads(runner *r)
{
    for (int k = 0; k < r->m->nreads; k++) {
        const sem_read *rd = &r->m->reads[k];
        if (r->snap[k] == NULL)
            continue;
        r->res->reads++;
        sem_value v = sem_model_expect(r->m, k);
        if (v.kind == SEM_VAL_UNDET)
            continue;
        r->res->determined++;
        for (size_t j = 0; j < rd->size; j++) {
            unsigned char want = sem_value_byte(v, j);
            if (r->snap[k][j] == want)
                continue;
            char what[200];
            snprintf(what, sizeof what, "read of b%d: byte %zu is 0x%02x, the rules say 0x%02x (%s %u)", rd->buf, j,
                     r->snap[k][j], want, v.kind == SEM_VAL_MEMSET ? "memset" : "pattern", v.value);
            fail(r, rd->op < r->prog->nops ? rd->op : -1, what);
            if (r->res->nbad < 8)
                r->res->bad[r->res->nbad++] = (sem_bad_read){
                    .op = rd->op, .buf = rd->buf, .checked_at = rd->checked_at, .size = rd->size, .want = v};
            break;
        }
    }
}

static void teardown(runner *r)
{
    for (int d = 0; d < r->m->caps.ndevices; d++) {
        infinirtSetDevice(r->type, d);
        infinirtDeviceSynchronize();
    }
    for (int g = 0; g < SEM_MAX_GRAPHS; g++) {
        if (r->execs[g] != NULL)
            infinirtGraphExecDestroy(r->execs[g]);
        if (r->graphs[g] != NULL)
            infinirtGraphDestroy(r->graphs[g]);
    }
    for (int b = 0; b < SEM_MAX_BUFS; b++)
        if (r->m->bufs[b].live && r->m->bufs[b].graph < 0 && r->bufs[b] != NULL)
            infinirtFree(r->bufs[b]);
    for (int e = 0; e < SEM_MAX_EVENTS; e++)
        if (r->events[e] != NULL)
            infinirtEventDestroy(r->events[e]);
    for (int s = 0; s < SEM_MAX_STREAMS; s++)
        if (r->streams[s] != NULL)
            infinirtStreamDestroy(r->streams[s]);
    for (int k = 0; k < SEM_MAX_NODES; k++)
        free(r->snap[k]);
    for (int b = 0; b < SEM_MAX_BUFS; b++)
        free(r->final_dst[b]);
    if (r->host_pinned)
        infinirtFreeHost(r->host);
    else
        free(r->host);
}

bool sem_run(const sem_program *prog, const sem_caps *caps, infiniDevice_t type, sem_result *res)
{
    static sem_model m;
    static runner r;
    memset(&r, 0, sizeof r);
    memset(res, 0, sizeof *res);
    res->bad_op = -1;
    r.type = type;
    r.prog = prog;
    r.m = &m;
    r.res = res;
    sem_model_init(&m, caps);

    /* Host memory: a source for each H2D, a destination for each D2H. */
    size_t sizes[SEM_MAX_BUFS] = {0}, total = 64;
    for (int i = 0; i < prog->nops; i++) {
        const sem_op *op = &prog->ops[i];
        if (op->kind == SEM_MALLOC || op->kind == SEM_MALLOC_ASYNC)
            sizes[op->b] = op->size;
        r.host_off[i] = total;
        if (op->kind == SEM_H2D_ASYNC || op->kind == SEM_H2D || op->kind == SEM_D2H_ASYNC || op->kind == SEM_D2H)
            total += (sizes[op->b] + 63) & ~(size_t)63;
    }
    infinirtSetDevice(type, 0);
    if (infinirtMallocHost((void **)&r.host, total) == INFINI_STATUS_SUCCESS) {
        r.host_pinned = true;
    } else if ((r.host = malloc(total)) == NULL) {
        snprintf(res->first, sizeof res->first, "no host memory");
        return false;
    }
    memset(r.host, 0, total);
    for (int i = 0; i < prog->nops; i++) {
        const sem_op *op = &prog->ops[i];
        if (op->kind == SEM_H2D_ASYNC || op->kind == SEM_H2D)
            for (size_t j = 0; j < sizes[op->b]; j++)
                r.host[r.host_off[i] + j] = sem_value_byte((sem_value){SEM_VAL_PATTERN, op->value}, j);
    }

    int i = 0;
    for (; i < prog->nops; i++) {
        bool answer = false;
        if (!play(&r, i, &answer))
            break;
        sem_model_apply_answer(&m, &prog->ops[i], i, answer);
        snapshot_known(&r, i);
    }
    if (i == prog->nops) {
        for (int d = 0; d < caps->ndevices; d++) {
            infinirtSetDevice(type, d);
            ok(&r, prog->nops, infinirtDeviceSynchronize(), "DeviceSynchronize");
        }
        int first_final = m.nreads;
        sem_model_finish(&m, prog->nops);
        for (int k = first_final; k < m.nreads; k++) {
            int b = m.reads[k].buf;
            r.final_dst[b] = malloc(m.reads[k].size);
            if (r.final_dst[b] != NULL)
                ok(&r, prog->nops, infinirtMemcpy(r.final_dst[b], r.bufs[b], m.reads[k].size, INFINIRT_MEMCPY_D2H),
                   "Memcpy D2H (read-back)");
        }
        snapshot_known(&r, prog->nops);
        compare_reads(&r);
    }
    teardown(&r);
    return true;
}
