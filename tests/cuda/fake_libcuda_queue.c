/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_libcuda_queue.c - the fake driver's queues: the worker thread that
 * runs each stream's queue in order, and queueing an operation after what
 * the legacy default stream's rules make it wait for (fake_libcuda_stream.c
 * tells those rules).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_libcuda.h"

/* Strict mode: one host function at a time, process-wide. */
static pthread_mutex_t host_fn_serial = PTHREAD_MUTEX_INITIALIZER;
static int host_fn_running, host_fn_max;

int fake_cuda_host_fn_max_concurrent(void)
{
    return host_fn_max;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void *fake_stream_worker(void *arg)
{
    struct CUstream_st *s = arg;

    pthread_mutex_lock(&fake_lock);
    for (;;) {
        while (s->head == NULL && !s->stop)
            pthread_cond_wait(&s->work, &fake_lock);
        if (s->head == NULL)
            break;
        fake_op *o = s->head;
        switch (o->kind) {
        case OP_WAIT:
            while (!o->mark->done)
                pthread_cond_wait(&fake_progress, &fake_lock);
            break;
        case OP_RECORD:
            o->mark->done = 1;
            if (o->gen == o->ev->recorded) {
                o->ev->completed = o->gen;
                o->ev->t_ms = now_ms();
            }
            break;
        default:
            /* A context broken by a sticky error runs nothing more. */
            if (s->ctx->sticky != CUDA_SUCCESS)
                break;
            /* Run without the lock: a host function may take its time
             * (or call into the fake, which a real driver forbids: strict
             * mode refuses those calls, and runs one host function at a
             * time, as the driver may). */
            pthread_mutex_unlock(&fake_lock);
            if (o->kind == OP_COPY) {
                memmove(o->dst, o->src, o->n);
            } else if (o->kind == OP_SET) {
                memset(o->dst, o->value, o->n);
            } else if (o->kind == OP_HOST && fake_strict) {
                pthread_mutex_lock(&host_fn_serial);
                host_fn_running++;
                host_fn_max = host_fn_running > host_fn_max ? host_fn_running : host_fn_max;
                fake_in_host_fn = 1;
                o->fn(o->data);
                fake_in_host_fn = 0;
                host_fn_running--;
                pthread_mutex_unlock(&host_fn_serial);
            } else {
                o->fn(o->data);
            }
            pthread_mutex_lock(&fake_lock);
            break;
        }
        s->head = o->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->done = o->seq;
        if (o->ev != NULL)
            event_unref_locked(o->ev);
        mark_unref_locked(o->mark);
        free(o->staging);
        free(o);
        pthread_cond_broadcast(&fake_progress);
    }
    /* A stream destroyed in strict mode is ours to free, its queue done. */
    if (s->dead) {
        for (struct CUstream_st **pp = &fake_live; *pp; pp = &(*pp)->next_live)
            if (*pp == s) {
                *pp = s->next_live;
                break;
            }
        pthread_cond_destroy(&s->work);
        free(s);
        pthread_cond_broadcast(&fake_progress);
    }
    pthread_mutex_unlock(&fake_lock);
    return NULL;
}

/* Append o to s; its sequence number, or 0 when out of memory. */
static unsigned long append_locked(struct CUstream_st *s, fake_op o)
{
    fake_mark *m = NULL;
    if (o.kind == OP_RECORD && (m = calloc(1, sizeof *m)) == NULL)
        return 0;
    fake_op *q = malloc(sizeof *q);
    if (q == NULL) {
        free(m);
        return 0;
    }
    *q = o;
    q->next = NULL;
    if (q->ev != NULL)
        q->ev->refs++;
    if (q->kind == OP_RECORD) {
        m->refs = 2; /* the operation's and the event's */
        mark_unref_locked(q->ev->mark);
        q->ev->mark = q->mark = m;
        q->gen = ++q->ev->recorded;
    } else if (q->mark != NULL) {
        q->mark->refs++;
    }
    q->seq = ++s->queued;
    if (s->tail != NULL)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    pthread_cond_signal(&s->work);
    return q->seq;
}

/* `to` waits for the work queued on `from` so far. */
static CUresult depend_locked(struct CUstream_st *from, struct CUstream_st *to)
{
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (e == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = from->ctx;
    e->refs = 1; /* ours until both operations hold it */
    if (append_locked(from, (fake_op){.kind = OP_RECORD, .ev = e}) == 0) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = append_locked(to, (fake_op){.kind = OP_WAIT, .ev = e, .mark = e->mark}) ? CUDA_SUCCESS
                                                                                         : CUDA_ERROR_OUT_OF_MEMORY;
    event_unref_locked(e);
    return r;
}

static int blocking(const struct CUstream_st *s)
{
    return !s->legacy && !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* Queue o on s, after what the legacy-stream rules make it wait for
 * (after_legacy: also the legacy stream's work, when s is blocking); into
 * the capture instead while s captures.  *seq (may be NULL) receives the
 * operation's number on s (0: captured). */
static CUresult enqueue_locked(struct CUstream_st *s, fake_op o, unsigned long *seq, int after_legacy)
{
    CUresult r = CUDA_SUCCESS;

    if (seq != NULL)
        *seq = 0;
    if (s->cap != NULL)
        return fake_capture_append_locked(s, &o);
    if (s->legacy) {
        /* The legacy stream would wait for a capturing blocking stream,
         * whose captured work never runs: CUDA refuses that. */
        r = fake_capture_implicit_locked(s->ctx);
        for (struct CUstream_st *b = fake_live; b != NULL && r == CUDA_SUCCESS; b = b->next_live)
            if (b->ctx == s->ctx && blocking(b) && b->head != NULL)
                r = depend_locked(b, s);
    } else if (after_legacy && blocking(s) && s->ctx->legacy != NULL && s->ctx->legacy->head != NULL) {
        r = depend_locked(s->ctx->legacy, s);
    }
    if (r != CUDA_SUCCESS)
        return r;
    unsigned long n = append_locked(s, o);
    if (n == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (seq != NULL)
        *seq = n;
    return CUDA_SUCCESS;
}

CUresult fake_enqueue_locked(struct CUstream_st *s, fake_op o, unsigned long *seq)
{
    return enqueue_locked(s, o, seq, 1);
}

CUresult fake_enqueue_event_wait_locked(struct CUstream_st *s, fake_op o)
{
    return enqueue_locked(s, o, NULL, 0);
}

CUresult fake_enqueue(struct CUstream_st *s, fake_op o, unsigned long *seq)
{
    pthread_mutex_lock(&fake_lock);
    CUresult r = fake_enqueue_locked(s, o, seq);
    pthread_mutex_unlock(&fake_lock);
    return r;
}

CUresult fake_enqueue_list_locked(struct CUstream_st *s, const fake_op *list)
{
    CUresult r = CUDA_SUCCESS;

    for (const fake_op *o = list; o != NULL && r == CUDA_SUCCESS; o = o->next)
        r = fake_enqueue_locked(s, *o, NULL);
    return r;
}

/* Wait until operation `seq` of s has completed.  Called with the lock. */
void fake_wait_done_locked(const struct CUstream_st *s, unsigned long seq)
{
    while (s->done < seq)
        pthread_cond_wait(&fake_progress, &fake_lock);
}

void fake_wait_idle_locked(const fake_ctx *ctx)
{
    for (;;) {
        int busy = 0;
        for (struct CUstream_st *s = fake_live; s != NULL; s = s->next_live)
            busy |= (ctx == NULL || s->ctx == ctx) && s->head != NULL;
        if (!busy)
            return;
        pthread_cond_wait(&fake_progress, &fake_lock);
    }
}
