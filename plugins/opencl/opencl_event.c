/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_event.c - events as markers.
 *
 * A record enqueues clEnqueueMarkerWithWaitList on the stream's in-order
 * queue: the marker completes when everything queued before it has, and its
 * CL_PROFILING_COMMAND_END is the time the elapsed-time query subtracts.  A
 * later record replaces (and releases) the earlier marker.  The marker is
 * swapped under the event's mutex and handed out retained, so a record on
 * one thread never frees a marker another thread is waiting on.
 */
#include "opencl_internal.h"

#include <stdlib.h>

typedef struct {
    opencl__device *dev;
    uint32_t flags;
    pthread_mutex_t lock;
    cl_event marker; /* last record; NULL until recorded */
} opencl__event;

infiniStatus_t opencl__event_create(int dev, uint32_t flags, void **event)
{
    opencl__device *d = opencl__dev(dev);
    opencl__event *e;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    e->dev = d;
    e->flags = flags;
    pthread_mutex_init(&e->lock, NULL);
    *event = e;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__event_destroy(int dev, void *event)
{
    opencl__event *e = event;

    (void)dev;
    if (e == NULL)
        return INFINI_STATUS_BAD_PARAM;
    /* Work still queued holds its own reference to the marker. */
    if (e->marker != NULL)
        clReleaseEvent(e->marker);
    pthread_mutex_destroy(&e->lock);
    free(e);
    return INFINI_STATUS_SUCCESS;
}

cl_event opencl__event_marker(void *event)
{
    opencl__event *e = event;
    cl_event m;

    pthread_mutex_lock(&e->lock);
    m = e->marker;
    if (m != NULL)
        clRetainEvent(m);
    pthread_mutex_unlock(&e->lock);
    return m;
}

infiniStatus_t opencl__event_record(int dev, void *event, void *stream)
{
    opencl__device *d = opencl__dev(dev);
    opencl__event *e = event;
    opencl__stream *s;
    cl_event m = NULL, old;
    infiniStatus_t st;
    cl_int err;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    st = opencl__stream_resolve(d, stream, &s);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* On the default stream the record covers the blocking streams' earlier
     * work too (the loader's fences for synchronous frees rely on it). */
    if ((st = opencl__order_before(s)) != INFINI_STATUS_SUCCESS)
        return st;
    err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &m);
    if (err != CL_SUCCESS)
        return opencl__cl_fail("clEnqueueMarkerWithWaitList", err);
    /* Submit now: a query loop or a wait from another queue must see the
     * marker make progress without anyone calling clFinish here. */
    clFlush(s->queue);
    /* A record on the default stream is work of it (docs/semantics.md, R2):
     * the blocking streams' later work, and a blocking stream made later,
     * wait for it and so for what "before" put ahead of it. */
    if ((st = opencl__order_after_marker(s, m)) != INFINI_STATUS_SUCCESS) {
        clReleaseEvent(m); /* the event keeps its old record */
        return st;
    }
    pthread_mutex_lock(&e->lock);
    old = e->marker;
    e->marker = m;
    pthread_mutex_unlock(&e->lock);
    if (old != NULL)
        clReleaseEvent(old);
    return INFINI_STATUS_SUCCESS;
}

/* *complete = 1 when done.  Never blocks. */
static infiniStatus_t marker_done(cl_event m, int *complete)
{
    cl_int status = CL_QUEUED;
    cl_int err = clGetEventInfo(m, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);

    if (err != CL_SUCCESS)
        return opencl__cl_fail("clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)", err);
    if (status < 0)
        return opencl__cl_fail("event (the work it captured)", status);
    *complete = status == CL_COMPLETE;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__event_query(int dev, void *event, int *complete)
{
    cl_event m = opencl__event_marker(event);
    infiniStatus_t st;

    (void)dev;
    if (m == NULL) {
        *complete = 1;
        return INFINI_STATUS_SUCCESS;
    }
    st = marker_done(m, complete);
    clReleaseEvent(m);
    return st;
}

infiniStatus_t opencl__event_synchronize(int dev, void *event)
{
    cl_event m = opencl__event_marker(event);
    cl_int err;

    (void)dev;
    if (m == NULL)
        return INFINI_STATUS_SUCCESS;
    err = clWaitForEvents(1, &m);
    clReleaseEvent(m);
    return err == CL_SUCCESS ? INFINI_STATUS_SUCCESS : opencl__cl_fail("clWaitForEvents", err);
}

/* Whether the marker's queue was made with CL_QUEUE_PROFILING_ENABLE (a
 * queue the application wrapped may not be). */
static int profiled(cl_event m)
{
    cl_command_queue q = NULL;
    cl_command_queue_properties props = 0;

    if (clGetEventInfo(m, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL) != CL_SUCCESS ||
        clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL) != CL_SUCCESS)
        return 1;
    return (props & CL_QUEUE_PROFILING_ENABLE) != 0;
}

static infiniStatus_t marker_end(cl_event m, cl_ulong *ns)
{
    cl_int err = clGetEventProfilingInfo(m, CL_PROFILING_COMMAND_END, sizeof *ns, ns, NULL);

    if (err == CL_PROFILING_INFO_NOT_AVAILABLE) {
        /* Completion was checked first: either the driver has not written
         * the time yet, or the queue never records times. */
        if (profiled(m))
            return INFINI_STATUS_NOT_READY;
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "event_elapsed_time: an event was recorded on a stream whose queue "
                                               "was made without CL_QUEUE_PROFILING_ENABLE");
        return INFINI_STATUS_INVALID_STATE;
    }
    if (err != CL_SUCCESS)
        return opencl__cl_fail("clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", err);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__event_elapsed_time(int dev, float *ms, void *start, void *end)
{
    opencl__event *a = start, *b = end;
    cl_event ma = NULL, mb = NULL;
    cl_ulong ta = 0, tb = 0;
    int done_a = 0, done_b = 0;
    infiniStatus_t st = INFINI_STATUS_INVALID_STATE;

    (void)dev;
    if ((a->flags | b->flags) & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING)
        return INFINI_STATUS_INVALID_STATE;
    ma = opencl__event_marker(a);
    mb = opencl__event_marker(b);
    if (ma == NULL || mb == NULL)
        goto out;
    if ((st = marker_done(ma, &done_a)) != INFINI_STATUS_SUCCESS ||
        (st = marker_done(mb, &done_b)) != INFINI_STATUS_SUCCESS)
        goto out;
    if (!done_a || !done_b) {
        st = INFINI_STATUS_NOT_READY;
        goto out;
    }
    if ((st = marker_end(ma, &ta)) != INFINI_STATUS_SUCCESS || (st = marker_end(mb, &tb)) != INFINI_STATUS_SUCCESS)
        goto out;
    *ms = (float)((double)((int64_t)(tb - ta)) / 1e6);
out:
    if (ma != NULL)
        clReleaseEvent(ma);
    if (mb != NULL)
        clReleaseEvent(mb);
    return st;
}
