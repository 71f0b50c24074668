/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_libcuda.h - what the two files of the fake driver share (see
 * fake_libcuda.c for what the fake is and how it is steered).
 */
#ifndef FAKE_LIBCUDA_H_
#define FAKE_LIBCUDA_H_

#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>

#define FAKE_MAX_DEV 8

struct CUstream_st;

/* A primary context.  `legacy` is its legacy default stream (what stream 0
 * and CU_STREAM_LEGACY name), alive while the context is retained. */
typedef struct {
    int dev;
    int refcount;
    struct CUstream_st *legacy;
    /* Strict mode: a sticky error (CUDA_SUCCESS: none) every later call in
     * this context returns, until its last release resets it. */
    _Atomic int sticky;
} fake_ctx;

/* One lock for the whole fake; `fake_progress` is broadcast whenever a
 * queued operation completes. */
extern pthread_mutex_t fake_lock;
extern pthread_cond_t fake_progress;
extern int fake_initialized;
extern _Thread_local fake_ctx *fake_current;

/* Strict mode (FAKE_CUDA_STRICT=1 at cuInit, see fake_libcuda.c): the real
 * driver's rules where the lenient fake is kinder.  `fake_deinit`: the
 * driver was torn down (process exit, or fake_cuda_unload); every call
 * returns CUDA_ERROR_DEINITIALIZED.  `fake_in_host_fn`: the calling thread
 * runs a host function (strict: every driver call is NOT_PERMITTED). */
extern int fake_strict;
extern _Atomic int fake_deinit;
extern _Thread_local int fake_in_host_fn;
/* What a driver entry returns before doing anything: not initialised, torn
 * down, called from a host function (strict); CUDA_SUCCESS otherwise. */
CUresult fake_gate(void);
/* Whether p is host memory the driver does not know (malloc'd, pageable):
 * in strict mode an async copy touching it returns after it completes. */
int fake_pageable_locked(const void *p);

/* A queued (or captured) operation.  OP_KERNEL stands for a kernel: the
 * fake has no device code, so a "kernel" is a function run on the stream's
 * worker, launched with fake_cuda_launch_kernel. */
typedef enum { OP_COPY, OP_SET, OP_HOST, OP_KERNEL, OP_RECORD, OP_WAIT } fake_op_kind;

/* One record's completion, set when its OP_RECORD runs.  A wait (an
 * OP_WAIT, cuEventSynchronize) holds the mark of the record that was the
 * event's latest at the call, as CUDA binds them: a later record of the
 * event neither ends nor extends it.  Counted references, under the lock. */
typedef struct fake_mark {
    int refs;
    int done;
} fake_mark;

static inline void mark_unref_locked(fake_mark *m)
{
    if (m != NULL && --m->refs == 0)
        free(m);
}

typedef struct fake_op {
    struct fake_op *next;
    fake_op_kind kind;
    void *dst;
    const void *src;
    size_t n;
    unsigned char value;
    CUhostFn fn;
    void *data;
    struct CUevent_st *ev;
    unsigned long gen; /* OP_RECORD: the event's record number */
    fake_mark *mark;   /* OP_RECORD: its completion; OP_WAIT: the one waited for */
    unsigned long seq; /* the stream's operation number */
    void *staging;     /* OP_COPY from pageable memory: the copy of the source, freed once run */
} fake_op;

struct fake_capture;

struct CUstream_st {
    fake_ctx *ctx;
    unsigned flags;
    int legacy;
    fake_op *head, *tail;
    unsigned long queued, done; /* operations queued / completed so far */
    int stop;
    pthread_cond_t work;
    pthread_t thread;
    struct CUstream_st *next_live;
    /* Stream capture (fake_libcuda_graph.c): the capture this stream is in
     * (NULL: none), how many operations it added to it, and whether it is
     * a forked stream not joined back to the origin since its last one. */
    struct fake_capture *cap;
    unsigned long cap_ops;
    int cap_unjoined;
    /* Strict mode: destroyed (the handle is invalid) while its queued work
     * still runs; the worker frees the stream when the queue is empty. */
    int dead;
};

/* An event counts its records: `recorded` when queued, `completed` when the
 * newest one that has run.  `refs`: the handle plus each queued operation
 * that names it, so destroying it while records are queued is safe.  A
 * hidden event (legacy-stream ordering) has no handle and is in no list.
 * An event last recorded in a capture that is still going on names it in
 * `cap`, with the stream and that stream's cap_ops at the record. */
struct CUevent_st {
    fake_ctx *ctx;
    unsigned flags;
    /* Records made, and the latest one's number once it has completed
     * (an earlier one completing late changes nothing). */
    unsigned long recorded, completed;
    fake_mark *mark; /* the latest record's completion; NULL: none queued yet */
    int refs;
    double t_ms;
    struct CUevent_st *next_live;
    struct fake_capture *cap;
    struct CUstream_st *cap_stream;
    unsigned long cap_seq;
    int cap_stale; /* last recorded in a capture (which may have ended) */
};

/* Every stream (legacy ones included) and every event with a handle. */
extern struct CUstream_st *fake_live;
extern struct CUevent_st *fake_live_ev;

/* The stream a handle names / a live event (see fake_libcuda_stream.c). */
CUresult fake_stream_of(CUstream h, int any_ctx, struct CUstream_st **out);
CUresult fake_event_ok(CUevent e, int any_ctx);
/* Queue copies of the operations of `list` on s, in order, after what the
 * legacy-stream rules make them wait for (a graph launch; captured when s
 * captures).  Called with the lock. */
CUresult fake_enqueue_list_locked(struct CUstream_st *s, const fake_op *list);
/* The queues (fake_libcuda_queue.c).  A stream's worker thread (its
 * argument the stream); queue o on s (*seq, may be NULL: its number on s,
 * 0 when captured), with the lock / taking it; wait until operation seq of
 * s has completed, with the lock. */
void *fake_stream_worker(void *arg);
CUresult fake_enqueue_locked(struct CUstream_st *s, fake_op o, unsigned long *seq);
/* The same for cuStreamWaitEvent's wait, with the lock: on a blocking
 * stream not itself ordered after the legacy stream's work (the driver's
 * behaviour; the legacy stream's later work is ordered after it). */
CUresult fake_enqueue_event_wait_locked(struct CUstream_st *s, fake_op o);
CUresult fake_enqueue(struct CUstream_st *s, fake_op o, unsigned long *seq);
void fake_wait_done_locked(const struct CUstream_st *s, unsigned long seq);
/* Events with a handle (fake_libcuda_event.c); drop a reference to e, with
 * the lock (each queued operation on e holds one). */
extern int fake_live_events;
static inline void event_unref_locked(struct CUevent_st *e)
{
    if (--e->refs == 0) {
        mark_unref_locked(e->mark);
        free(e);
    }
}

/* Return from the calling driver entry unless h names a stream / e is a
 * live event (fake_stream_of, fake_event_ok). */
#define STREAM_OF(h, any_ctx, out)                           \
    do {                                                     \
        CUresult r_ = fake_stream_of((h), (any_ctx), (out)); \
        if (r_ != CUDA_SUCCESS)                              \
            return r_;                                       \
    } while (0)
#define EVENT_OK(e, any_ctx)                         \
    do {                                             \
        CUresult r_ = fake_event_ok((e), (any_ctx)); \
        if (r_ != CUDA_SUCCESS)                      \
            return r_;                               \
    } while (0)

/* ---- stream capture (fake_libcuda_graph.c); all called with the lock ---- */
/* Record a copy of o (no events) into the capture of s, which is capturing:
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED once the capture is invalidated. */
CUresult fake_capture_append_locked(struct CUstream_st *s, const fake_op *o);
/* An event recorded on s, which is capturing: a marker of the capture,
 * for fork and join (no operation). */
CUresult fake_capture_record_locked(struct CUstream_st *s, struct CUevent_st *e);
/* s waits for e, where s captures or e was recorded in a capture: s forks
 * into e's capture, joins back, or is refused (waits across a capture's
 * boundary, CUDA_ERROR_STREAM_CAPTURE_ISOLATION / _MERGE). */
CUresult fake_capture_wait_locked(struct CUstream_st *s, struct CUevent_st *e);
/* Invalidate the capture (it refuses work until ended). */
void fake_capture_invalidate_locked(struct fake_capture *c);
/* A "potentially unsafe" call (CUDA's term: raw allocations, event queries)
 * by the calling thread: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, after
 * invalidating them, when captures forbid it in this thread's capture mode
 * (cuThreadExchangeStreamCaptureMode); CUDA_SUCCESS otherwise. */
CUresult fake_capture_unsafe_call_locked(void);
/* A query or synchronize of e, last recorded in a capture: the first one
 * while that capture goes on is CUDA_ERROR_CAPTURED_EVENT and invalidates
 * it; later ones, and any after the capture ended, CUDA_ERROR_INVALID_VALUE
 * (until e is recorded outside a capture).  CUDA_SUCCESS otherwise. */
CUresult fake_capture_event_use_locked(struct CUevent_st *e);
/* The capture-related refusal of an operation that would make the legacy
 * stream of ctx depend on a capturing blocking stream:
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT after invalidating those captures. */
CUresult fake_capture_implicit_locked(const fake_ctx *ctx);
/* Whether any capture involves a stream of ctx; invalidate them if so. */
int fake_capture_any_in_ctx_invalidate_locked(const fake_ctx *ctx);

/* Peer access (fake_libcuda.c), called with the lock: count a copy made in
 * ctx that touches another device's memory as direct or staged; a fill of
 * dst in ctx: CUDA_ERROR_ILLEGAL_ADDRESS (counted) when dst is another
 * device's memory that ctx has not mapped. */
void fake_peer_copy_locked(const fake_ctx *ctx, const void *dst, const void *src);
CUresult fake_peer_fill_locked(const fake_ctx *ctx, const void *dst);

/* Memory (fake_libcuda_memory.c): every allocation, device and pinned host,
 * in a list under the lock; each device's size (FAKE_CUDA_MEM, read at
 * cuInit) and bytes allocated on it; the allocation containing p (interior
 * pointers too), or NULL, called with the lock. */
typedef struct alloc {
    struct alloc *next;
    void *p;
    size_t size;
    int dev;        /* -1: host */
    unsigned flags; /* host allocations: cuMemHostAlloc flags */
    int ctx_dev;    /* the device whose context was current at allocation */
} alloc;
extern alloc *fake_allocs;
extern size_t fake_mem_per_dev, fake_used[FAKE_MAX_DEV];
alloc *fake_find_alloc_locked(const void *p);

/* Block until every stream of ctx (NULL: of every context) is idle.
 * Called with fake_lock held. */
void fake_wait_idle_locked(const fake_ctx *ctx);
/* Create / drain and destroy ctx's legacy stream (primary context retained
 * for the first time / released for the last).  Called without the lock. */
CUresult fake_legacy_create(fake_ctx *ctx);
void fake_legacy_destroy(fake_ctx *ctx);
/* Strict reset of ctx (its last release): wait for its queued work, then
 * destroy its streams (not the legacy one) and events.  Without the lock. */
void fake_ctx_streams_reset(fake_ctx *ctx);

#define NEED_INIT()                \
    do {                           \
        CUresult g_ = fake_gate(); \
        if (g_ != CUDA_SUCCESS)    \
            return g_;             \
    } while (0)
#define NEED_CTX()                                               \
    do {                                                         \
        NEED_INIT();                                             \
        if (fake_current == NULL || fake_current->refcount == 0) \
            return CUDA_ERROR_INVALID_CONTEXT;                   \
        if (fake_current->sticky != CUDA_SUCCESS)                \
            return (CUresult)fake_current->sticky;               \
    } while (0)

/* Inspection API for the tests (exported). */
int fake_cuda_refcount(int dev);
int fake_cuda_live_streams(void);
int fake_cuda_live_events(void);
int fake_cuda_live_allocs(void);
int fake_cuda_alloc_device(const void *p);
/* The device whose context was current when p's allocation was made (-1:
 * none; -2: p is no allocation). */
int fake_cuda_alloc_ctx(const void *p);
unsigned fake_cuda_host_flags(const void *p);
unsigned fake_cuda_stream_flags(const void *stream);
unsigned fake_cuda_last_event_flags(void);
int fake_cuda_wait_event_calls(void);
/* Calls of cuEventElapsedTime (v2 = 0) or cuEventElapsedTime_v2 (v2 = 1). */
int fake_cuda_elapsed_calls(int v2);
void fake_cuda_set_current(int dev);
/* The calling thread's current context, as a device (-1: none). */
int fake_cuda_current_device(void);
/* The CUcontext of dev's primary context. */
void *fake_cuda_ctx(int dev);
/* How many cuCtxSetCurrent calls were made, by any thread. */
int fake_cuda_set_current_calls(void);
/* The CUstream cuStreamCreate made last (NULL: none yet). */
void *fake_cuda_last_stream(void);
/* Queue a "kernel" on a stream: fn(data) runs on the stream's worker, in
 * order, like device work (and is captured like a kernel). */
CUresult fake_cuda_launch_kernel(CUstream h, CUhostFn fn, void *data);
/* Live graphs and executable graphs; captures going on; how many captures
 * were invalidated so far. */
int fake_cuda_live_graphs(void);
int fake_cuda_live_execs(void);
int fake_cuda_active_captures(void);
int fake_cuda_invalidations(void);
/* The next cuStreamSynchronize (any thread, any stream) returns r once,
 * after waiting, as a fault of the queued work would surface there. */
void fake_cuda_inject_sync_error(CUresult r);
/* Peer access: whether `from`'s context has `to`'s memory mapped; copies
 * touching another device's memory made direct / staged through the host;
 * fills that faulted for want of a mapping. */
int fake_cuda_peer_enabled(int from, int to);
int fake_cuda_peer_copies(void);
int fake_cuda_staged_copies(void);
int fake_cuda_peer_faults(void);
/* Strict mode (1: on, as FAKE_CUDA_STRICT=1 read at cuInit). */
int fake_cuda_strict(void);
/* A fault of device work in dev's context that breaks it (strict mode):
 * every later call in that context returns r (e.g.
 * CUDA_ERROR_ILLEGAL_ADDRESS) until its last primary-context release. */
void fake_cuda_inject_sticky(int dev, CUresult r);
/* The driver's teardown at process exit, now: every later call returns
 * CUDA_ERROR_DEINITIALIZED (strict mode registers it with atexit). */
void fake_cuda_unload(void);
/* Host functions running now, and the most that ever ran at once. */
int fake_cuda_host_fn_max_concurrent(void);
/* Calls refused with NOT_PERMITTED because they came from a host function. */
int fake_cuda_host_fn_refusals(void);
/* The calling thread's context stack depth (cuCtxPushCurrent). */
int fake_cuda_ctx_stack_depth(void);

#endif /* FAKE_LIBCUDA_H_ */
