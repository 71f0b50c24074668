/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_stream.c - streams (in-order profiling queues, or queues the
 * application made and handed in), their query, and cross-queue waits.
 * Host functions are in opencl_hostfn.c, the ordering of blocking streams with
 * the default one in opencl_order.c.
 *
 * A wrapped queue is the application's: we take one reference and give it
 * back at stream_destroy, after clFinish.  It is in-order (streams run
 * their work in order) and of the device's own context, since copies use
 * the device's memory and wait lists cannot cross contexts.
 *
 * Waits across devices.  Each device has its own context and OpenCL forbids
 * waiting on an event of another context, so a callback on the foreign
 * marker completes a user event of the stream's context instead.  Neither
 * path blocks the host.
 */
#include "opencl_internal.h"

#include <stdlib.h>

/* Put s on the device's list of live queues (caller holds d->lock). */
static void link_locked(opencl__device *d, opencl__stream *s)
{
    s->next = d->queues.next;
    s->prev = &d->queues;
    d->queues.next->prev = s;
    d->queues.next = s;
    if (s->blocking)
        atomic_fetch_add(&d->blocking_streams, 1); /* seq_cst: opencl_order.c */
}

/* Take s off the device's list (caller holds d->lock). */
static void unlink_locked(opencl__device *d, opencl__stream *s)
{
    s->prev->next = s->next;
    s->next->prev = s->prev;
    if (s->blocking)
        atomic_fetch_sub_explicit(&d->blocking_streams, 1, memory_order_release);
}

/* Link s, then start it behind the default queue's earlier asynchronous
 * work: a default-stream action the join does not see finds s on the list,
 * and its "after" reaches s (opencl_order.c).  On failure s is off the
 * list again. */
static infiniStatus_t link_and_join_locked(opencl__device *d, opencl__stream *s)
{
    infiniStatus_t st;

    link_locked(d, s);
    st = opencl__order_join_locked(s);
    if (st != INFINI_STATUS_SUCCESS)
        unlink_locked(d, s);
    return st;
}

infiniStatus_t opencl__stream_create_with_flags(int dev, uint32_t flags, void **stream)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (flags & ~INFINIRT_PLUGIN_STREAM_NON_BLOCKING) {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "stream_create_with_flags: unknown flags 0x%x",
                    (unsigned)(flags & ~INFINIRT_PLUGIN_STREAM_NON_BLOCKING));
        return INFINI_STATUS_BAD_PARAM;
    }
    st = opencl__device_ready(d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    st = opencl__queue_create(d, &s->queue);
    if (st != INFINI_STATUS_SUCCESS) {
        free(s);
        return st;
    }
    s->dev = d;
    s->blocking = !(flags & INFINIRT_PLUGIN_STREAM_NON_BLOCKING);
    pthread_mutex_lock(&d->lock);
    st = link_and_join_locked(d, s);
    pthread_mutex_unlock(&d->lock);
    if (st != INFINI_STATUS_SUCCESS) {
        clReleaseCommandQueue(s->queue);
        free(s);
        return st;
    }
    *stream = s;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__stream_create(int dev, void **stream)
{
    return opencl__stream_create_with_flags(dev, 0, stream);
}

/* Why `native` cannot be wrapped on d, or NULL when it can.  Only queries:
 * nothing is changed before the answer is known. */
static const char *foreign_queue_problem(opencl__device *d, cl_command_queue q, cl_int *err)
{
    cl_context ctx = NULL;
    cl_device_id id = NULL;
    cl_command_queue_properties props = 0;

    *err = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
    if (*err != CL_SUCCESS)
        return "clGetCommandQueueInfo(CL_QUEUE_CONTEXT) failed: not a command queue";
    if (ctx != d->context)
        return "the queue belongs to another context (use the device's, from device_get_native)";
    *err = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof id, &id, NULL);
    if (*err != CL_SUCCESS)
        return "clGetCommandQueueInfo(CL_QUEUE_DEVICE) failed";
    if (id != d->id)
        return "the queue is for another OpenCL device";
    *err = clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    if (*err != CL_SUCCESS)
        return "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES) failed";
    /* Streams run their work in order; a device-side queue takes no host
     * commands at all. */
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return "the queue is out-of-order (a stream must be in-order)";
    if (props & CL_QUEUE_ON_DEVICE)
        return "the queue is a device-side queue";
    for (opencl__stream *s = d->queues.next; s != &d->queues; s = s->next)
        if (s->queue == q)
            return "the queue is already a stream of this plugin";
    return NULL;
}

infiniStatus_t opencl__stream_create_from_native(int dev, void *native, void **stream)
{
    opencl__device *d = opencl__dev(dev);
    cl_command_queue q = native;
    const char *why;
    opencl__stream *s;
    infiniStatus_t st;
    cl_int err = CL_SUCCESS;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (q == NULL) {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "stream_create_from_native: NULL queue");
        return INFINI_STATUS_BAD_PARAM;
    }
    st = opencl__device_ready(d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    /* Checked and linked under the lock, so the same queue cannot be
     * wrapped twice by two threads at once. */
    pthread_mutex_lock(&d->lock);
    why = foreign_queue_problem(d, q, &err);
    if (why == NULL) {
        s->queue = q;
        s->dev = d;
        s->blocking = 1; /* as a stream made with cudaStreamCreate */
        st = link_and_join_locked(d, s);
        if (st == INFINI_STATUS_SUCCESS)
            clRetainCommandQueue(q);
    }
    pthread_mutex_unlock(&d->lock);
    if (st != INFINI_STATUS_SUCCESS) {
        free(s);
        return st;
    }
    if (why != NULL) {
        if (err != CL_SUCCESS)
            opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "stream_create_from_native(%p) on device %d: %s: %s (%d)", native,
                        dev, why, opencl__cl_error_name(err), (int)err);
        else
            opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "stream_create_from_native(%p) on device %d: %s", native, dev,
                        why);
        free(s);
        return INFINI_STATUS_BAD_PARAM;
    }
    *stream = s;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__stream_destroy(int dev, void *stream)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s = stream;
    cl_int err;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (s == NULL || s == &d->default_stream)
        return INFINI_STATUS_BAD_PARAM;
    pthread_mutex_lock(&d->lock);
    unlink_locked(d, s);
    pthread_mutex_unlock(&d->lock);
    err = clFinish(s->queue);
    opencl__hostq_stop(s);
    opencl__order_forget(s);
    /* A wrapped queue loses only our reference: it stays the application's. */
    clReleaseCommandQueue(s->queue);
    free(s);
    return err == CL_SUCCESS ? INFINI_STATUS_SUCCESS : opencl__cl_fail("clFinish", err);
}

infiniStatus_t opencl__stream_synchronize(int dev, void *stream)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    infiniStatus_t st;
    uint64_t queued, mine;
    cl_int err;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (stream == NULL && !atomic_load_explicit(&d->ready, memory_order_acquire))
        return INFINI_STATUS_SUCCESS; /* default stream never used */
    st = opencl__stream_resolve(d, stream, &s);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    queued = opencl__order_drain_start(d);
    mine = atomic_load_explicit(&s->queued, memory_order_acquire); /* what the wait covers */
    /* The default stream's work includes what the blocking streams held
     * before it (as cudaStreamSynchronize(0) with the legacy stream). */
    if ((st = opencl__order_before_sync(s)) != INFINI_STATUS_SUCCESS)
        return st;
    err = clFinish(s->queue);
    if (err != CL_SUCCESS)
        return opencl__cl_fail("clFinish", err);
    if (s == &d->default_stream)
        opencl__order_drained(d, queued);
    else
        opencl__order_settled(s, mine);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__stream_query(int dev, void *stream, int *idle)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    cl_event m = NULL;
    cl_int err, status = CL_QUEUED;
    infiniStatus_t st;
    uint64_t queued, mine;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (idle == NULL)
        return INFINI_STATUS_NULL_POINTER;
    if (stream == NULL && !atomic_load_explicit(&d->ready, memory_order_acquire)) {
        *idle = 1; /* default stream never used */
        return INFINI_STATUS_SUCCESS;
    }
    st = opencl__stream_resolve(d, stream, &s);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    queued = opencl__order_drain_start(d);
    mine = atomic_load_explicit(&s->queued, memory_order_acquire); /* what the wait covers */
    if ((st = opencl__order_before(s)) != INFINI_STATUS_SUCCESS)
        return st;
    /* A marker sees everything queued before it, by us or natively by the
     * application; the flush makes it progress without anyone waiting. */
    err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &m);
    if (err != CL_SUCCESS)
        return opencl__cl_fail("clEnqueueMarkerWithWaitList", err);
    clFlush(s->queue);
    err = clGetEventInfo(m, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    clReleaseEvent(m);
    if (err != CL_SUCCESS)
        return opencl__cl_fail("clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)", err);
    if (status < 0)
        return opencl__cl_fail("stream_query (earlier work on the stream failed)", status);
    *idle = status == CL_COMPLETE;
    if (*idle && s == &d->default_stream)
        opencl__order_drained(d, queued);
    else if (*idle)
        opencl__order_settled(s, mine);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (fn == NULL)
        return INFINI_STATUS_NULL_POINTER;
    st = opencl__stream_resolve(d, stream, &s);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if ((st = opencl__order_before(s)) != INFINI_STATUS_SUCCESS ||
        (st = opencl__enqueue_host_fn(s, fn, NULL, user_data)) != INFINI_STATUS_SUCCESS)
        return st;
    return opencl__order_after(s);
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
static infiniStatus_t wait_foreign(opencl__stream *s, cl_event marker)
{
    cl_int err = CL_SUCCESS;
    cl_event user = clCreateUserEvent(s->dev->context, &err);
    infiniStatus_t st = INFINI_STATUS_SUCCESS;

    if (user == NULL)
        return opencl__cl_fail_alloc("clCreateUserEvent", err);
    clRetainEvent(user); /* the callback's reference */
    err = clSetEventCallback(marker, CL_COMPLETE, bridge_complete, user);
    if (err != CL_SUCCESS) {
        clReleaseEvent(user);
        clReleaseEvent(user);
        return opencl__cl_fail("clSetEventCallback", err);
    }
    err = clEnqueueBarrierWithWaitList(s->queue, 1, &user, NULL);
    if (err != CL_SUCCESS)
        st = opencl__cl_fail("clEnqueueBarrierWithWaitList", err);
    clReleaseEvent(user);
    return st;
}

infiniStatus_t opencl__stream_wait_event(int dev, void *stream, void *event)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    cl_event marker;
    cl_context ctx = NULL;
    infiniStatus_t st;
    cl_int err;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    marker = opencl__event_marker(event);
    if (marker == NULL)
        return INFINI_STATUS_SUCCESS; /* never recorded: complete */
    st = opencl__stream_resolve(d, stream, &s);
    if (st == INFINI_STATUS_SUCCESS)
        st = opencl__order_before(s);
    if (st != INFINI_STATUS_SUCCESS)
        goto out;
    err = clGetEventInfo(marker, CL_EVENT_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err != CL_SUCCESS) {
        st = opencl__cl_fail("clGetEventInfo(CL_EVENT_CONTEXT)", err);
        goto out;
    }
    if (ctx == d->context) {
        err = clEnqueueBarrierWithWaitList(s->queue, 1, &marker, NULL);
        if (err != CL_SUCCESS)
            st = opencl__cl_fail("clEnqueueBarrierWithWaitList", err);
    } else {
        st = wait_foreign(s, marker);
    }
    clFlush(s->queue);
    if (st == INFINI_STATUS_SUCCESS)
        st = opencl__order_after(s);
out:
    clReleaseEvent(marker);
    return st;
}
