/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_libcuda_event.c - the fake driver's events: create, record (queued on
 * a stream like any operation, a marker while it captures), query,
 * synchronize and elapsed time.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_libcuda.h"

int fake_live_events;
static unsigned last_event_flags;

int fake_cuda_live_events(void)
{
    return fake_live_events;
}
unsigned fake_cuda_last_event_flags(void)
{
    return last_event_flags;
}

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
    e->next_live = fake_live_ev;
    fake_live_ev = e;
    fake_live_events++;
    last_event_flags = flags;
    pthread_mutex_unlock(&fake_lock);
    *pe = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent e)
{
    EVENT_OK(e, 0);
    pthread_mutex_lock(&fake_lock);
    for (struct CUevent_st **pp = &fake_live_ev; *pp; pp = &(*pp)->next_live)
        if (*pp == e) {
            *pp = e->next_live;
            break;
        }
    fake_live_events--;
    event_unref_locked(e);
    pthread_mutex_unlock(&fake_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent e, CUstream h)
{
    struct CUstream_st *s;
    EVENT_OK(e, 0);
    STREAM_OF(h, 0, &s);
    pthread_mutex_lock(&fake_lock);
    CUresult r;
    if (s->cap != NULL) {
        r = fake_capture_record_locked(s, e); /* a marker in the capture */
    } else {
        e->cap = NULL; /* last recorded outside any capture now */
        e->cap_stale = 0;
        r = fake_enqueue_locked(s, (fake_op){.kind = OP_RECORD, .ev = e}, NULL);
    }
    pthread_mutex_unlock(&fake_lock);
    return r;
}

/* Querying or waiting for an event last recorded in a capture that goes
 * on is refused in any mode; otherwise it is a "potentially unsafe" call
 * (PyTorch's NCCL watchdog met that one), refused during a global capture
 * unless this thread's mode is relaxed. */
static CUresult event_wait_allowed_locked(struct CUevent_st *e)
{
    CUresult r = fake_capture_event_use_locked(e);
    return r != CUDA_SUCCESS ? r : fake_capture_unsafe_call_locked();
}

CUresult CUDAAPI cuEventQuery(CUevent e)
{
    EVENT_OK(e, 0);
    pthread_mutex_lock(&fake_lock);
    CUresult r = event_wait_allowed_locked(e);
    int done = e->completed >= e->recorded;
    pthread_mutex_unlock(&fake_lock);
    if (r != CUDA_SUCCESS)
        return r;
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuEventSynchronize(CUevent e)
{
    EVENT_OK(e, 0);
    pthread_mutex_lock(&fake_lock);
    CUresult r = event_wait_allowed_locked(e);
    fake_mark *m = r == CUDA_SUCCESS ? e->mark : NULL; /* the record current now */
    if (m != NULL) {
        m->refs++;
        while (!m->done)
            pthread_cond_wait(&fake_progress, &fake_lock);
        mark_unref_locked(m);
    }
    pthread_mutex_unlock(&fake_lock);
    return r;
}

/* Drivers before CUDA 12.8 export only cuEventElapsedTime; newer ones both
 * names (cuda.h maps the old name to _v2, hence the #undef).  The
 * fake_cuda_oldsym build exports the old name alone, so the plugin's
 * fallback is exercised; each name counts its calls. */
#undef cuEventElapsedTime
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b);
static _Atomic int elapsed_calls[2]; /* [0]: old name, [1]: _v2 */
int fake_cuda_elapsed_calls(int v2)
{
    return elapsed_calls[v2 != 0];
}

static CUresult elapsed_time(float *ms, CUevent a, CUevent b)
{
    EVENT_OK(a, 0);
    EVENT_OK(b, 0);
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fake_lock);
    if (a->cap != NULL || b->cap != NULL)
        r = CUDA_ERROR_CAPTURED_EVENT;
    else if (a->cap_stale || b->cap_stale)
        r = CUDA_ERROR_INVALID_VALUE; /* last recorded in a capture that ended */
    else if (a->recorded == 0 || b->recorded == 0 || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (a->completed < a->recorded || b->completed < b->recorded)
        r = CUDA_ERROR_NOT_READY;
    else
        *ms = (float)(b->t_ms - a->t_ms);
    pthread_mutex_unlock(&fake_lock);
    return r;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    elapsed_calls[0]++;
    return elapsed_time(ms, a, b);
}

#ifndef FAKE_CUDA_OLD_ELAPSED_TIME
CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    elapsed_calls[1]++;
    return elapsed_time(ms, a, b);
}
#endif
