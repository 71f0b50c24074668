/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_device.c - per-device lazy state: context, default queue, live
 * queues; and device_synchronize, which finishes them all.
 *
 * Creating a context costs about a millisecond on PoCL and more on GPU
 * drivers (they may load firmware or start threads), so it is deferred to
 * the first call that needs the device; init only enumerates.  The ready
 * flag is read without the lock on the fast path (acquire) and published
 * after the context and default queue exist (release).
 */
#include "opencl_internal.h"

#include <stdlib.h>

/* Drivers report asynchronous errors here (e.g. a lost device). */
static void CL_CALLBACK context_notify(const char *errinfo, const void *private_info, size_t cb, void *user_data)
{
    const opencl__device *d = user_data;

    (void)private_info;
    (void)cb;
    opencl__log(INFINIRT_PLUGIN_LOG_WARN, "device %d (%s): driver reports: %s", d->index, d->name, errinfo);
}

infiniStatus_t opencl__queue_create(opencl__device *d, cl_command_queue *q)
{
    cl_int err = CL_SUCCESS;

    /* clCreateCommandQueueWithProperties is 2.0 API: a 1.2 platform's ICD
     * dispatch table may not carry it. */
    if (d->platform_major >= 2) {
        const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
        *q = clCreateCommandQueueWithProperties(d->context, d->id, props, &err);
        if (*q == NULL)
            return opencl__cl_fail_alloc("clCreateCommandQueueWithProperties", err);
    } else {
        *q = clCreateCommandQueue(d->context, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
        if (*q == NULL)
            return opencl__cl_fail_alloc("clCreateCommandQueue", err);
    }
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__device_ready(opencl__device *d)
{
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
    cl_int err = CL_SUCCESS;

    if (atomic_load_explicit(&d->ready, memory_order_acquire))
        return INFINI_STATUS_SUCCESS;

    pthread_mutex_lock(&d->lock);
    if (atomic_load_explicit(&d->ready, memory_order_relaxed))
        goto out;
    d->context = clCreateContext(props, 1, &d->id, context_notify, d, &err);
    if (d->context == NULL) {
        st = opencl__cl_fail_alloc("clCreateContext", err);
        goto out;
    }
    st = opencl__queue_create(d, &d->default_stream.queue);
    if (st != INFINI_STATUS_SUCCESS) {
        clReleaseContext(d->context);
        d->context = NULL;
        goto out;
    }
    d->default_stream.dev = d;
    if (opencl__trace != NULL)
        opencl__trace_calibrate(d);
    d->default_stream.next = d->queues.next;
    d->default_stream.prev = &d->queues;
    d->queues.next->prev = &d->default_stream;
    d->queues.next = &d->default_stream;
    atomic_store_explicit(&d->ready, 1, memory_order_release);
    opencl__log(INFINIRT_PLUGIN_LOG_DEBUG, "device %d (%s): context and default queue created", d->index, d->name);
out:
    pthread_mutex_unlock(&d->lock);
    return st;
}

infiniStatus_t opencl__stream_resolve(opencl__device *d, void *stream, opencl__stream **out)
{
    if (stream != NULL) {
        *out = stream;
        return INFINI_STATUS_SUCCESS;
    }
    *out = &d->default_stream;
    return opencl__device_ready(d);
}

infiniStatus_t opencl__device_finish(opencl__device *d)
{
    cl_command_queue *qs = NULL;
    size_t n = 0, cap = 0;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    uint64_t queued;

    if (!atomic_load_explicit(&d->ready, memory_order_acquire))
        return INFINI_STATUS_SUCCESS; /* never used: nothing queued */
    queued = opencl__order_drain_start(d);

    /* Snapshot the queues (retained) so clFinish runs without the lock:
     * stream_create/destroy on other threads must not wait behind it. */
    pthread_mutex_lock(&d->lock);
    for (opencl__stream *s = d->queues.next; s != &d->queues; s = s->next) {
        if (n == cap) {
            size_t c = cap ? cap * 2 : 8;
            cl_command_queue *grown = realloc(qs, c * sizeof *qs);
            if (grown == NULL) {
                st = INFINI_STATUS_OUT_OF_MEMORY;
                break;
            }
            qs = grown;
            cap = c;
        }
        clRetainCommandQueue(s->queue);
        qs[n++] = s->queue;
    }
    pthread_mutex_unlock(&d->lock);

    for (size_t i = 0; i < n; i++) {
        cl_int err = clFinish(qs[i]);
        if (err != CL_SUCCESS && st == INFINI_STATUS_SUCCESS)
            st = opencl__cl_fail("clFinish", err);
        clReleaseCommandQueue(qs[i]);
    }
    free(qs);
    if (st == INFINI_STATUS_SUCCESS) /* the default queue was among them */
        opencl__order_drained(d, queued);
    return st;
}

void opencl__device_teardown(opencl__device *d)
{
    if (atomic_load_explicit(&d->ready, memory_order_acquire)) {
        /* Streams the loader did not destroy are released too. */
        while (d->queues.next != &d->queues) {
            opencl__stream *s = d->queues.next;
            d->queues.next = s->next;
            clFinish(s->queue);
            opencl__hostq_stop(s);
            opencl__order_forget(s);
            clReleaseCommandQueue(s->queue);
            if (s != &d->default_stream)
                free(s);
        }
        d->queues.prev = &d->queues;
        clReleaseContext(d->context);
        d->context = NULL;
        atomic_store(&d->ready, 0);
    }
    pthread_mutex_destroy(&d->lock);
}

infiniStatus_t opencl__device_synchronize(int dev)
{
    opencl__device *d = opencl__dev(dev);

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    return opencl__device_finish(d);
}
