/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_stream.c - streams: the objects, their native table, and the stream
 * entries (create, destroy, synchronize, query).  Inline mode: objects
 * without a queue, whose work is done at once.  Async mode: each stream
 * holds an in-order ring of commands, queued and run by cpu_queue.c on the
 * worker pool (cpu_pool.c); the scheme is in cpu_internal.h.
 *
 * Template: a vendor's <p>_stream.c holds the same entries over the
 * driver's queues (a CUstream, a cl_command_queue); the objects, the native
 * table and host functions as the CPU does them are CPU only.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <stdlib.h>
#include <string.h>

bool cpu__inline = true;
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
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv_done);
        free(s->ring);
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

static const infinirtCpuStreamOps g_inline_ops = {
    .struct_size = sizeof(infinirtCpuStreamOps),
    .flags = INFINIRT_CPU_STREAM_INLINE,
    .enqueue = native_enqueue,
    .query = native_query,
    .synchronize = native_synchronize,
};

static const infinirtCpuStreamOps g_async_ops = {
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
    s->pub.ops = cpu__inline ? &g_inline_ops : &g_async_ops;
    s->dev = d;
    s->is_default = is_default;
    s->blocking = !is_default && !(flags & INFINIRT_PLUGIN_STREAM_NON_BLOCKING);
    atomic_init(&s->refs, 1);
    atomic_init(&s->queued, 0);
    atomic_init(&s->done, 0);
    if (!cpu__inline) {
        /* Adaptive: a caller queueing while the worker takes a command
         * spins briefly on the lock instead of sleeping in the kernel. */
        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
        pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
        pthread_mutex_init(&s->mu, &ma);
        pthread_mutexattr_destroy(&ma);
        pthread_cond_init(&s->cv_done, NULL);
        s->listed = true;
        pthread_mutex_lock(&d->lock);
        s->next = d->streams;
        d->streams = s;
        pthread_mutex_unlock(&d->lock);
    } else {
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv_done, NULL);
    }
    *out = s;
    return INFINI_STATUS_SUCCESS;
}

static void stream_free(cpu_stream *s)
{
    if (s->listed) {
        cpu_device *d = s->dev;
        pthread_mutex_lock(&d->lock);
        for (cpu_stream **pp = &d->streams; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == s) {
                *pp = s->next;
                break;
            }
        }
        pthread_mutex_unlock(&d->lock);
        /* Its work first, and until no worker holds it. */
        cpu__stream_wait(s, atomic_load_explicit(&s->queued, memory_order_acquire), true);
    }
    cpu__stream_put(s);
}

void cpu__shutdown_streams(void)
{
    for (int i = 0; i < cpu__device_count(); i++) {
        cpu_device *d = cpu__device(i);
        pthread_mutex_lock(&d->lock);
        cpu_stream *s = d->streams;
        d->streams = NULL;
        atomic_store(&d->default_stream, NULL);
        pthread_mutex_unlock(&d->lock);
        while (s != NULL) {
            cpu_stream *next = s->next;
            cpu__stream_wait(s, atomic_load(&s->queued), true);
            cpu__stream_put(s);
            s = next;
        }
    }
    if (!cpu__inline)
        cpu__pool_shutdown();
}

/* The device's default stream (async mode), created on first use. */
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

infiniStatus_t cpu__stream_synchronize(int dev, void *stream)
{
    CPU__REFUSE_IN_HOST_FN("stream_synchronize");
    if (cpu__inline)
        return INFINI_STATUS_SUCCESS;
    cpu_stream *s = stream;
    if (s == NULL && cpu__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (s == NULL && (s = atomic_load_explicit(&cpu__device(dev)->default_stream, memory_order_acquire)) == NULL)
        return INFINI_STATUS_SUCCESS; /* no default stream yet: nothing was queued */
    cpu__stream_wait(s, atomic_load_explicit(&s->queued, memory_order_acquire), false);
    return INFINI_STATUS_SUCCESS;
}

/* Also counts what was queued natively (infinirt_cpu.h), which the loader
 * does not see. */
infiniStatus_t cpu__stream_query(int dev, void *stream, int *idle)
{
    *idle = 1;
    cpu_stream *s = stream;
    if (s == NULL && cpu__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (cpu__inline)
        return INFINI_STATUS_SUCCESS;
    if (s == NULL && (s = atomic_load_explicit(&cpu__device(dev)->default_stream, memory_order_acquire)) == NULL)
        return INFINI_STATUS_SUCCESS;
    uint64_t q = atomic_load_explicit(&s->queued, memory_order_acquire);
    *idle = atomic_load_explicit(&s->done, memory_order_acquire) >= q;
    return INFINI_STATUS_SUCCESS;
}
