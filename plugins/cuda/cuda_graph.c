/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_graph.c - native stream capture and graphs (ABI 1.2), and the
 * capture-mode exchange the allocator's entries use.
 *
 * Capture is CUDA's own: cuStreamBeginCapture on the native stream, so a
 * kernel the application launches on it (cudaStream_t)stream is captured
 * with the infinirt work, and a capture the application began natively is
 * seen by stream_is_capturing.  The driver enforces CUDA's rules (what may
 * not be called while a stream captures, fork and join through events);
 * its capture errors (900..908) and CUDA_ERROR_ILLEGAL_STATE map to
 * INVALID_STATE (cuda_driver.c).
 *
 * Every driver function used here is optional (cuda_internal.h): a driver
 * that lacks one still serves everything else, and the entry that needs it
 * answers NOT_IMPLEMENTED with a log line naming the symbol.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* NOT_IMPLEMENTED, logged, when the driver lacks `fn`. */
#define NEED_(dev, fn)                                                                                               \
    do {                                                                                                             \
        if (cuda__drv.fn == NULL) {                                                                                  \
            cuda__log(INFINIRT_PLUGIN_LOG_ERROR, "device %d: %s: the driver (CUDA %d.%d) does not export %s", (dev), \
                      __func__ + sizeof "cuda__" - 1, cuda__state.driver_version / 1000,                             \
                      cuda__state.driver_version % 1000 / 10, cuda__drv_names.fn);                                   \
            return INFINI_STATUS_NOT_IMPLEMENTED;                                                                    \
        }                                                                                                            \
    } while (0)

int cuda__relax(void)
{
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;

    if (cuda__drv.ThreadExchangeStreamCaptureMode == NULL ||
        cuda__drv.ThreadExchangeStreamCaptureMode(&m) != CUDA_SUCCESS)
        return -1;
    return (int)m;
}

void cuda__unrelax(int previous)
{
    CUstreamCaptureMode m = (CUstreamCaptureMode)previous;

    if (previous >= 0)
        (void)cuda__drv.ThreadExchangeStreamCaptureMode(&m);
}

CUresult cuda__capture_status(CUstream s, CUstreamCaptureStatus *status, uint64_t *id)
{
    cuuint64_t cid = 0;
    CUresult r;

    *id = 0;
    if (cuda__drv.StreamGetCaptureInfo != NULL) {
        r = cuda__drv.StreamGetCaptureInfo(s, status, &cid);
        if (r == CUDA_SUCCESS)
            *id = cid;
        return r;
    }
    if (cuda__drv.StreamIsCapturing != NULL)
        return cuda__drv.StreamIsCapturing(s, status);
    return CUDA_ERROR_NOT_FOUND;
}

infiniStatus_t cuda__stream_begin_capture(int dev, void *stream, int mode)
{
    CUstreamCaptureMode cu_mode;
    cuda__scope_t sc;
    infiniStatus_t st;

    switch (mode) {
    case INFINIRT_PLUGIN_CAPTURE_GLOBAL:
        cu_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
        break;
    case INFINIRT_PLUGIN_CAPTURE_THREAD_LOCAL:
        cu_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        break;
    case INFINIRT_PLUGIN_CAPTURE_RELAXED:
        cu_mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        break;
    default:
        cuda__log(INFINIRT_PLUGIN_LOG_ERROR, "device %d: unknown capture mode %d", dev, mode);
        return INFINI_STATUS_BAD_PARAM;
    }
    /* The legacy stream cannot capture (CUDA refuses it too). */
    if (stream == NULL)
        return INFINI_STATUS_BAD_PARAM;
    NEED_(dev, StreamBeginCapture);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, StreamBeginCapture, (CUstream)stream, cu_mode);
    cuda__leave(&sc);
    return st;
}

/* The capture ends whatever the answer; a graph only on success (the
 * driver gives none for an invalidated or unjoined capture). */
infiniStatus_t cuda__stream_end_capture(int dev, void *stream, void **graph)
{
    cuda__scope_t sc;
    CUgraph g = NULL;
    infiniStatus_t st;

    *graph = NULL;
    if (stream == NULL)
        return INFINI_STATUS_BAD_PARAM;
    NEED_(dev, StreamEndCapture);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, StreamEndCapture, (CUstream)stream, &g);
    cuda__leave(&sc);
    if (st == INFINI_STATUS_SUCCESS && g == NULL)
        st = INFINI_STATUS_INTERNAL_ERROR; /* a driver that breaks its word */
    if (st == INFINI_STATUS_SUCCESS)
        *graph = g;
    else if (g != NULL && cuda__drv.GraphDestroy != NULL)
        (void)cuda__drv.GraphDestroy(g);
    return st;
}

/* Capturing also while invalidated and not yet ended: the stream still
 * refuses work until the capture is ended. */
infiniStatus_t cuda__stream_is_capturing(int dev, void *stream, int *capturing, uint64_t *id)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuda__scope_t sc;
    infiniStatus_t st;
    CUresult r;

    *capturing = 0;
    *id = 0;
    NEED_(dev, StreamGetCaptureInfo);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* The legacy stream never captures, but while a blocking stream does,
     * using it is an implicit dependency on the capture (CUDA fails it and
     * invalidates the capture): the ABI counts that as capturing. */
    r = cuda__capture_status(cuda__stream_of(stream), &status, id);
    cuda__leave(&sc);
    if (stream == NULL && r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) {
        *capturing = 1;
        *id = 0;
        return INFINI_STATUS_SUCCESS;
    }
    if (r != CUDA_SUCCESS)
        return cuda__check(r, cuda__drv_names.StreamGetCaptureInfo, dev);
    *capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
    if (!*capturing)
        *id = 0;
    return INFINI_STATUS_SUCCESS;
}

/* The reason of a failed instantiation, in log (when there is room). */
static void log_reason(char *log, size_t log_size, const char *call, CUresult r)
{
    const char *text = NULL;

    if (log == NULL || log_size == 0)
        return;
    if (cuda__drv.GetErrorString(r, &text) != CUDA_SUCCESS || text == NULL)
        text = "no description";
    snprintf(log, log_size, "%s failed: %s (%s)", call, cuda__error_name(r), text);
}

infiniStatus_t cuda__graph_instantiate(int dev, void *graph, void **exec, char *log, size_t log_size)
{
    const cuda__driver_t *drv = &cuda__drv;
    cuda__scope_t sc;
    CUgraphExec e = NULL;
    CUgraphNode bad = NULL;
    const char *call;
    infiniStatus_t st;
    CUresult r;

    if (log != NULL && log_size > 0)
        log[0] = '\0';
    *exec = NULL;
    if (drv->GraphInstantiateWithFlags == NULL)
        NEED_(dev, GraphInstantiate);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (drv->GraphInstantiateWithFlags != NULL) {
        call = cuda__drv_names.GraphInstantiateWithFlags;
        r = drv->GraphInstantiateWithFlags(&e, (CUgraph)graph, 0);
    } else {
        /* The driver writes its own reason into log. */
        call = cuda__drv_names.GraphInstantiate;
        r = drv->GraphInstantiate(&e, (CUgraph)graph, &bad, log, log != NULL ? log_size : 0);
    }
    cuda__leave(&sc);
    if (r != CUDA_SUCCESS) {
        if (log != NULL && log_size > 0 && log[0] == '\0')
            log_reason(log, log_size, call, r);
        return cuda__check(r, call, dev);
    }
    *exec = e;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cuda__graph_launch(int dev, void *exec, void *stream)
{
    cuda__scope_t sc;
    infiniStatus_t st;

    NEED_(dev, GraphLaunch);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, GraphLaunch, (CUgraphExec)exec, cuda__stream_of(stream));
    cuda__leave(&sc);
    return st;
}

/* Launches already queued still run: the driver keeps what they need. */
infiniStatus_t cuda__graph_exec_destroy(int dev, void *exec)
{
    cuda__scope_t sc;
    infiniStatus_t st;

    NEED_(dev, GraphExecDestroy);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, GraphExecDestroy, (CUgraphExec)exec);
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__graph_destroy(int dev, void *graph)
{
    cuda__scope_t sc;
    infiniStatus_t st;

    NEED_(dev, GraphDestroy);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, GraphDestroy, (CUgraph)graph);
    cuda__leave(&sc);
    return st;
}
