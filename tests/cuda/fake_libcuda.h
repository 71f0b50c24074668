/*
 * fake_libcuda.h - what the two files of the fake driver share (see
 * fake_libcuda.c for what the fake is and how it is steered).
 */
#ifndef FAKE_LIBCUDA_H_
#define FAKE_LIBCUDA_H_

#include <cuda.h>
#include <pthread.h>

#define FAKE_MAX_DEV 8

struct CUstream_st;

/* A primary context.  `legacy` is its legacy default stream (what stream 0
 * and CU_STREAM_LEGACY name), alive while the context is retained. */
typedef struct {
    int dev;
    int refcount;
    struct CUstream_st *legacy;
} fake_ctx;

/* One lock for the whole fake; `fake_progress` is broadcast whenever a
 * queued operation completes. */
extern pthread_mutex_t fake_lock;
extern pthread_cond_t fake_progress;
extern int fake_initialized;
extern _Thread_local fake_ctx *fake_current;

/* Block until every stream of ctx (NULL: of every context) is idle.
 * Called with fake_lock held. */
void fake_wait_idle_locked(const fake_ctx *ctx);
/* Create / drain and destroy ctx's legacy stream (primary context retained
 * for the first time / released for the last).  Called without the lock. */
CUresult fake_legacy_create(fake_ctx *ctx);
void fake_legacy_destroy(fake_ctx *ctx);

#define NEED_INIT()                            \
    do {                                       \
        if (!fake_initialized)                 \
            return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)
#define NEED_CTX()                                             \
    do {                                                       \
        NEED_INIT();                                           \
        if (fake_current == NULL || fake_current->refcount == 0) \
            return CUDA_ERROR_INVALID_CONTEXT;                 \
    } while (0)

/* Inspection API for the tests (exported). */
int fake_cuda_refcount(int dev);
int fake_cuda_live_streams(void);
int fake_cuda_live_events(void);
int fake_cuda_live_allocs(void);
int fake_cuda_alloc_device(const void *p);
unsigned fake_cuda_host_flags(const void *p);
unsigned fake_cuda_stream_flags(const void *stream);
unsigned fake_cuda_last_event_flags(void);
int fake_cuda_wait_event_calls(void);
void fake_cuda_set_current(int dev);
/* The calling thread's current context, as a device (-1: none). */
int fake_cuda_current_device(void);
/* The CUcontext of dev's primary context. */
void *fake_cuda_ctx(int dev);
/* How many cuCtxSetCurrent calls were made, by any thread. */
int fake_cuda_set_current_calls(void);
/* The CUstream cuStreamCreate made last (NULL: none yet). */
void *fake_cuda_last_stream(void);

#endif /* FAKE_LIBCUDA_H_ */
