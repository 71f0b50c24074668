/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_stream.c - streams: the objects, their native tables, host
 * functions, and the stream entries (create, destroy, synchronize, query,
 * wait for an event, launch a host function).  How a stream's work is done
 * is the queue's (cpu__queue, chosen by init): inline (cpu_inline.c) or on
 * worker threads (cpu_queue.c, cpu_busy.c, cpu_pool.c; the scheme is in
 * cpu_internal.h).
 *
 * Template: a vendor's <p>_stream.c holds the same entries over the
 * driver's queues (a CUstream, a cl_command_queue); the objects, the native
 * tables and host functions as the CPU does them are CPU only.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <stdlib.h>
#include <string.h>

/* Initial-exec: in the static TLS block (glibc keeps room there for
 * dlopened libraries), so reading it is one load, and LeakSanitizer's
 * exit-time scan does not crash on a dlopened library's dynamic TLS. */
__attribute__((tls_model("initial-exec"))) _Thread_local int cpu__in_host_fn;

infiniStatus_t cpu__refuse_in_host_fn(const char *call)
{
    cpu__log(INFINIRT_PLUGIN_LOG_ERROR, "cpu",
             "%s called from a host function running on a stream: refused with INVALID_STATE (a host function "
             "must not call infinirt; waiting there could wait for itself)",
             call);
    return INFINI_STATUS_INVALID_STATE;
}

void cpu__call_host_fn(infinirtPluginHostFn fn, void *user)
{
    cpu__in_host_fn++;
    fn(user);
    cpu__in_host_fn--;
}

/* ------------------------------------------------------------ lifetime */

void cpu__stream_hold(cpu_stream *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void cpu__stream_put(cpu_stream *s)
{
    if (atomic_fetch_sub(&s->refs, 1) == 1) {
        cpu__queue->stream_free(s);
        free(s);
    }
}

/* ------------------------------------------------------------ native ops */

static infiniStatus_t native_enqueue(void *stream, infinirtCpuWorkFn fn, void *user_data)
{
    if (stream == NULL || fn == NULL)
        return INFINI_STATUS_NULL_POINTER;
    cpu_stream *s = stream;
    return cpu__launch_host_func(s->dev->index, s, fn, user_data);
}

static infiniStatus_t native_query(void *stream, int *idle)
{
    if (stream == NULL || idle == NULL)
        return INFINI_STATUS_NULL_POINTER;
    cpu_stream *s = stream;
    return cpu__stream_query(s->dev->index, s, idle);
}

static infiniStatus_t native_synchronize(void *stream)
{
    if (stream == NULL)
        return INFINI_STATUS_NULL_POINTER;
    cpu_stream *s = stream;
    return cpu__stream_synchronize(s->dev->index, s);
}

const infinirtCpuStreamOps cpu__native_inline = {
    .struct_size = sizeof(infinirtCpuStreamOps),
    .flags = INFINIRT_CPU_STREAM_INLINE,
    .enqueue = native_enqueue,
    .query = native_query,
    .synchronize = native_synchronize,
};

const infinirtCpuStreamOps cpu__native_async = {
    .struct_size = sizeof(infinirtCpuStreamOps),
    .flags = 0,
    .enqueue = native_enqueue,
    .query = native_query,
    .synchronize = native_synchronize,
};

/* --------------------------------------------------------------- streams */

static infiniStatus_t stream_create(cpu_device *d, uint32_t flags, bool is_default, cpu_stream **out)
{
    cpu_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    s->pub.ops = cpu__queue->native;
    s->dev = d;
    s->is_default = is_default;
    s->blocking = !is_default && !(flags & INFINIRT_PLUGIN_STREAM_NON_BLOCKING);
    atomic_init(&s->refs, 1);
    atomic_init(&s->queued, 0);
    atomic_init(&s->done, 0);
    infiniStatus_t st = cpu__queue->stream_open(s);
    if (st != INFINI_STATUS_SUCCESS) {
        free(s);
        return st;
    }
    *out = s;
    return INFINI_STATUS_SUCCESS;
}

static void stream_free(cpu_stream *s)
{
    cpu__queue->stream_close(s); /* its work first */
    cpu__stream_put(s);
}

/* The device's default stream (async streams), created on first use. */
cpu_stream *cpu__default_stream(int dev)
{
    cpu_device *d = cpu__device(dev);
    cpu_stream *s = atomic_load_explicit(&d->default_stream, memory_order_acquire);
    if (s != NULL)
        return s;
    cpu_stream *n;
    if (stream_create(d, 0, true, &n) != INFINI_STATUS_SUCCESS)
        return NULL;
    if (atomic_compare_exchange_strong(&d->default_stream, &s, n))
        return n;
    stream_free(n); /* another thread won the race; s is its stream */
    return s;
}

/* ---------------------------------------------------------------- entries */

infiniStatus_t cpu__stream_create(int dev, void **stream)
{
    return cpu__stream_create_with_flags(dev, 0, stream);
}

infiniStatus_t cpu__stream_create_with_flags(int dev, uint32_t flags, void **stream)
{
    if (flags & ~INFINIRT_PLUGIN_STREAM_NON_BLOCKING)
        return INFINI_STATUS_BAD_PARAM;
    cpu_device *d = cpu__device(dev);
    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    cpu_stream *s;
    infiniStatus_t st = stream_create(d, flags, false, &s);
    if (st == INFINI_STATUS_SUCCESS)
        *stream = s;
    return st;
}

infiniStatus_t cpu__stream_destroy(int dev, void *stream)
{
    (void)dev;
    stream_free(stream);
    return INFINI_STATUS_SUCCESS;
}

/* The stream, or for NULL the device's default stream when it exists; NULL
 * for no default stream yet (nothing was ever queued on it).  *st says
 * whether dev exists. */
static cpu_stream *stream_or_default(int dev, void *stream, infiniStatus_t *st)
{
    *st = INFINI_STATUS_SUCCESS;
    if (stream != NULL)
        return stream;
    cpu_device *d = cpu__device(dev);
    if (d == NULL) {
        *st = INFINI_STATUS_DEVICE_NOT_FOUND;
        return NULL;
    }
    return atomic_load_explicit(&d->default_stream, memory_order_acquire);
}

infiniStatus_t cpu__stream_synchronize(int dev, void *stream)
{
    CPU__REFUSE_IN_HOST_FN("stream_synchronize");
    infiniStatus_t st;
    cpu_stream *s = stream_or_default(dev, stream, &st);
    if (s != NULL)
        cpu__queue->sync(s);
    return st;
}

/* Also counts what was queued natively (infinirt_cpu.h), which the loader
 * does not see. */
infiniStatus_t cpu__stream_query(int dev, void *stream, int *idle)
{
    infiniStatus_t st;
    cpu_stream *s = stream_or_default(dev, stream, &st);
    *idle = s == NULL || cpu__queue->idle(s);
    return st;
}

/* The wait is bound here, to the event's latest record as of this call
 * (docs/semantics.md, R3): a later record of the event changes nothing for
 * it. */
infiniStatus_t cpu__stream_wait_event(int dev, void *stream, void *event)
{
    return cpu__queue->wait_event(dev, stream, event);
}

infiniStatus_t cpu__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user)
{
    return cpu__queue->host_fn(dev, stream, fn, user);
}
