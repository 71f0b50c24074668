/*
 * fake_libcuda_stream.c - streams, events and the queued operations of the
 * fake driver.
 *
 * Each stream has a worker thread that runs its queue in order, so work is
 * really asynchronous: a host function can hold a stream (a "gate") while
 * the caller sees events not ready and other streams go on.  Host memory is
 * touched when the operation runs, not when it is queued, which is what the
 * API allows.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_libcuda.h"

typedef enum { OP_COPY, OP_SET, OP_HOST, OP_RECORD, OP_WAIT } op_kind;

typedef struct op {
    struct op *next;
    op_kind kind;
    void *dst;
    const void *src;
    size_t n;
    unsigned char value;
    CUhostFn fn;
    void *data;
    struct CUevent_st *ev;
    unsigned long gen;
} op;

struct CUstream_st {
    fake_ctx *ctx;
    unsigned flags;
    op *head, *tail;
    int stop;
    pthread_cond_t work;
    pthread_t thread;
    struct CUstream_st *next_live;
};

/* An event counts its records: `recorded` when queued, `completed` when the
 * newest one that has run.  `refs`: the handle plus each queued operation
 * that names it, so destroying it while records are queued is safe. */
struct CUevent_st {
    fake_ctx *ctx;
    unsigned flags;
    unsigned long recorded, completed;
    int refs;
    double t_ms;
};

static struct CUstream_st *live;
static int live_streams, live_events, wait_event_calls;
static unsigned last_event_flags;

int fake_cuda_live_streams(void) { return live_streams; }
int fake_cuda_live_events(void) { return live_events; }
unsigned fake_cuda_stream_flags(const void *stream) { return ((const struct CUstream_st *)stream)->flags; }
unsigned fake_cuda_last_event_flags(void) { return last_event_flags; }
int fake_cuda_wait_event_calls(void) { return wait_event_calls; }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void event_unref_locked(struct CUevent_st *e)
{
    if (--e->refs == 0)
        free(e);
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;

    pthread_mutex_lock(&fake_lock);
    for (;;) {
        while (s->head == NULL && !s->stop)
            pthread_cond_wait(&s->work, &fake_lock);
        if (s->head == NULL)
            break;
        op *o = s->head;
        switch (o->kind) {
        case OP_WAIT:
            while (o->ev->completed < o->gen)
                pthread_cond_wait(&fake_progress, &fake_lock);
            break;
        case OP_RECORD:
            if (o->gen >= o->ev->completed) {
                o->ev->completed = o->gen;
                o->ev->t_ms = now_ms();
            }
            break;
        default:
            /* Run without the lock: a host function may take its time
             * (or call into the fake, which a real driver forbids). */
            pthread_mutex_unlock(&fake_lock);
            if (o->kind == OP_COPY)
                memmove(o->dst, o->src, o->n);
            else if (o->kind == OP_SET)
                memset(o->dst, o->value, o->n);
            else
                o->fn(o->data);
            pthread_mutex_lock(&fake_lock);
            break;
        }
        s->head = o->next;
        if (s->head == NULL)
            s->tail = NULL;
        if (o->ev != NULL)
            event_unref_locked(o->ev);
        free(o);
        pthread_cond_broadcast(&fake_progress);
    }
    pthread_mutex_unlock(&fake_lock);
    return NULL;
}

static CUresult enqueue(struct CUstream_st *s, op o)
{
    op *q = malloc(sizeof *q);
    if (q == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *q = o;
    q->next = NULL;
    pthread_mutex_lock(&fake_lock);
    if (q->ev != NULL)
        q->ev->refs++;
    if (q->kind == OP_RECORD)
        q->gen = ++q->ev->recorded;
    if (s->tail != NULL)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&fake_lock);
    return CUDA_SUCCESS;
}

void fake_wait_idle_locked(const fake_ctx *ctx)
{
    for (;;) {
        int busy = 0;
        for (struct CUstream_st *s = live; s != NULL; s = s->next_live)
            busy |= (ctx == NULL || s->ctx == ctx) && s->head != NULL;
        if (!busy)
            return;
        pthread_cond_wait(&fake_progress, &fake_lock);
    }
}

/* ---- streams ---- */
CUresult CUDAAPI cuStreamCreate(CUstream *ps, unsigned int flags)
{
    NEED_CTX();
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = fake_current;
    s->flags = flags;
    pthread_cond_init(&s->work, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        pthread_cond_destroy(&s->work);
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&fake_lock);
    s->next_live = live;
    live = s;
    live_streams++;
    pthread_mutex_unlock(&fake_lock);
    *ps = s;
    return CUDA_SUCCESS;
}

/* The real driver returns at once and releases the stream when its work is
 * done; here the queue is drained first. */
CUresult CUDAAPI cuStreamDestroy_v2(CUstream s)
{
    NEED_OWNER(s);
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fake_lock);
    s->stop = 1;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&fake_lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_lock(&fake_lock);
    for (struct CUstream_st **pp = &live; *pp; pp = &(*pp)->next_live)
        if (*pp == s) {
            *pp = s->next_live;
            break;
        }
    live_streams--;
    pthread_mutex_unlock(&fake_lock);
    pthread_cond_destroy(&s->work);
    free(s);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
    NEED_OWNER(s);
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE; /* the plugin never uses stream 0 */
    pthread_mutex_lock(&fake_lock);
    while (s->head != NULL)
        pthread_cond_wait(&fake_progress, &fake_lock);
    pthread_mutex_unlock(&fake_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    NEED_CTX();
    pthread_mutex_lock(&fake_lock);
    fake_wait_idle_locked(fake_current);
    pthread_mutex_unlock(&fake_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    NEED_OWNER(s); /* the event may be another device's */
    (void)flags;
    if (s == NULL || e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fake_lock);
    unsigned long gen = e->recorded;
    int pending = e->completed < gen;
    wait_event_calls++;
    pthread_mutex_unlock(&fake_lock);
    return pending ? enqueue(s, (op){.kind = OP_WAIT, .ev = e, .gen = gen}) : CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
    NEED_OWNER(s);
    if (s == NULL || fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return enqueue(s, (op){.kind = OP_HOST, .fn = fn, .data = data});
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    NEED_OWNER(s);
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return enqueue(s, (op){.kind = OP_COPY, .dst = (void *)(uintptr_t)dst, .src = (const void *)(uintptr_t)src,
                           .n = n});
}

#ifndef FAKE_CUDA_OMIT_MEMSET
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    NEED_OWNER(s);
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return enqueue(s, (op){.kind = OP_SET, .dst = (void *)(uintptr_t)dst, .value = v, .n = n});
}
#endif

/* ---- events ---- */
CUresult CUDAAPI cuEventCreate(CUevent *pe, unsigned int flags)
{
    NEED_CTX();
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (e == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = fake_current;
    e->flags = flags;
    e->refs = 1;
    pthread_mutex_lock(&fake_lock);
    live_events++;
    last_event_flags = flags;
    pthread_mutex_unlock(&fake_lock);
    *pe = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent e)
{
    NEED_OWNER(e);
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fake_lock);
    live_events--;
    event_unref_locked(e);
    pthread_mutex_unlock(&fake_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s)
{
    NEED_OWNER(e);
    NEED_OWNER(s);
    if (e == NULL || s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return enqueue(s, (op){.kind = OP_RECORD, .ev = e});
}

CUresult CUDAAPI cuEventQuery(CUevent e)
{
    NEED_OWNER(e);
    pthread_mutex_lock(&fake_lock);
    int done = e->completed >= e->recorded;
    pthread_mutex_unlock(&fake_lock);
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuEventSynchronize(CUevent e)
{
    NEED_OWNER(e);
    pthread_mutex_lock(&fake_lock);
    unsigned long gen = e->recorded;
    while (e->completed < gen)
        pthread_cond_wait(&fake_progress, &fake_lock);
    pthread_mutex_unlock(&fake_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    NEED_OWNER(a);
    NEED_OWNER(b);
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fake_lock);
    if (a->recorded == 0 || b->recorded == 0 || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (a->completed < a->recorded || b->completed < b->recorded)
        r = CUDA_ERROR_NOT_READY;
    else
        *ms = (float)(b->t_ms - a->t_ms);
    pthread_mutex_unlock(&fake_lock);
    return r;
}
