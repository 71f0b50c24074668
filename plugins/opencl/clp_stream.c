/*
 * clp_stream.c - streams (in-order profiling queues) and cross-queue waits.
 * Host functions are in clp_hostfn.c.
 *
 * Waits across devices.  Each device has its own context and OpenCL forbids
 * waiting on an event of another context, so a callback on the foreign
 * marker completes a user event of the stream's context instead.  Neither
 * path blocks the host.
 */
#include "clp_internal.h"

#include <stdlib.h>

infiniStatus_t clp__stream_create(int dev, void **stream)
{
    clp__device *d = clp__dev(dev);
    clp__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    st = clp__device_ready(d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    st = clp__queue_create(d, &s->queue);
    if (st != INFINI_STATUS_SUCCESS) {
        free(s);
        return st;
    }
    s->dev = d;
    pthread_mutex_lock(&d->lock);
    s->next = d->queues.next;
    s->prev = &d->queues;
    d->queues.next->prev = s;
    d->queues.next = s;
    pthread_mutex_unlock(&d->lock);
    *stream = s;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t clp__stream_destroy(int dev, void *stream)
{
    clp__device *d = clp__dev(dev);
    clp__stream *s = stream;
    cl_int err;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (s == NULL || s == &d->default_stream)
        return INFINI_STATUS_BAD_PARAM;
    pthread_mutex_lock(&d->lock);
    s->prev->next = s->next;
    s->next->prev = s->prev;
    pthread_mutex_unlock(&d->lock);
    err = clFinish(s->queue);
    clp__hostq_stop(s);
    clReleaseCommandQueue(s->queue);
    free(s);
    return err == CL_SUCCESS ? INFINI_STATUS_SUCCESS : clp__cl_fail("clFinish", err);
}

infiniStatus_t clp__stream_synchronize(int dev, void *stream)
{
    clp__device *d = clp__dev(dev);
    clp__stream *s;
    infiniStatus_t st;
    cl_int err;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (stream == NULL && !atomic_load_explicit(&d->ready, memory_order_acquire))
        return INFINI_STATUS_SUCCESS; /* default stream never used */
    st = clp__stream_resolve(d, stream, &s);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    err = clFinish(s->queue);
    return err == CL_SUCCESS ? INFINI_STATUS_SUCCESS : clp__cl_fail("clFinish", err);
}

infiniStatus_t clp__device_synchronize(int dev)
{
    clp__device *d = clp__dev(dev);

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    return clp__device_finish(d);
}

infiniStatus_t clp__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data)
{
    clp__device *d = clp__dev(dev);
    clp__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (fn == NULL)
        return INFINI_STATUS_NULL_POINTER;
    st = clp__stream_resolve(d, stream, &s);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    return clp__enqueue_host_fn(s, fn, NULL, user_data);
}

/* ------------------------------------------------------------------- waits */

static void CL_CALLBACK bridge_complete(cl_event marker, cl_int status, void *p)
{
    cl_event user = p;

    (void)marker;
    clSetUserEventStatus(user, status == CL_COMPLETE ? CL_COMPLETE : status);
    clReleaseEvent(user);
}

/* Make s wait for a marker of another context. */
static infiniStatus_t wait_foreign(clp__stream *s, cl_event marker)
{
    cl_int err = CL_SUCCESS;
    cl_event user = clCreateUserEvent(s->dev->context, &err);
    infiniStatus_t st = INFINI_STATUS_SUCCESS;

    if (user == NULL)
        return clp__cl_fail_alloc("clCreateUserEvent", err);
    clRetainEvent(user); /* the callback's reference */
    err = clSetEventCallback(marker, CL_COMPLETE, bridge_complete, user);
    if (err != CL_SUCCESS) {
        clReleaseEvent(user);
        clReleaseEvent(user);
        return clp__cl_fail("clSetEventCallback", err);
    }
    err = clEnqueueBarrierWithWaitList(s->queue, 1, &user, NULL);
    if (err != CL_SUCCESS)
        st = clp__cl_fail("clEnqueueBarrierWithWaitList", err);
    clReleaseEvent(user);
    return st;
}

infiniStatus_t clp__stream_wait_event(int dev, void *stream, void *event)
{
    clp__device *d = clp__dev(dev);
    clp__stream *s;
    cl_event marker;
    cl_context ctx = NULL;
    infiniStatus_t st;
    cl_int err;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    marker = clp__event_marker(event);
    if (marker == NULL)
        return INFINI_STATUS_SUCCESS; /* never recorded: complete */
    st = clp__stream_resolve(d, stream, &s);
    if (st != INFINI_STATUS_SUCCESS)
        goto out;
    err = clGetEventInfo(marker, CL_EVENT_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err != CL_SUCCESS) {
        st = clp__cl_fail("clGetEventInfo(CL_EVENT_CONTEXT)", err);
        goto out;
    }
    if (ctx == d->context) {
        err = clEnqueueBarrierWithWaitList(s->queue, 1, &marker, NULL);
        if (err != CL_SUCCESS)
            st = clp__cl_fail("clEnqueueBarrierWithWaitList", err);
    } else {
        st = wait_foreign(s, marker);
    }
    clFlush(s->queue);
out:
    clReleaseEvent(marker);
    return st;
}
