/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_inline.c - the inline queue (streams = inline, the default): every
 * piece of work, "asynchronous" copies, fills, host functions, event
 * records and waits included, is done on the caller's thread before the
 * entry returns, as in InfiniCore's CPU runtime.  No stream ever has work
 * pending, so the waits have nothing to wait for, and a stream object is
 * only its public table (infinirt_cpu.h).
 *
 * Template: the queue of a backend whose work is done when the call
 * returns.  With cpu_queue.c, cpu_busy.c and cpu_pool.c deleted it is the
 * only one (plugins/README.md); a backend with its own queues replaces the
 * calls through cpu__queue in the entries with its driver's.
 */
#include "cpu_internal.h"

#include <string.h>

static infiniStatus_t stream_open(cpu_stream *s)
{
    (void)s;
    return INFINI_STATUS_SUCCESS;
}

static void stream_nothing(cpu_stream *s)
{
    (void)s;
}

static infiniStatus_t copy(int dev, void *stream, void *dst, const void *src, size_t n)
{
    (void)dev, (void)stream;
    memmove(dst, src, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fill(int dev, void *stream, void *dst, int value, size_t n)
{
    (void)dev, (void)stream;
    memset(dst, value, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t host_fn(int dev, void *stream, infinirtPluginHostFn fn, void *user)
{
    (void)dev, (void)stream;
    cpu__call_host_fn(fn, user);
    return INFINI_STATUS_SUCCESS;
}

/* Complete at once, stamped now: elapsed times still measure the work done
 * between two records. */
static infiniStatus_t record(int dev, void *stream, cpu_event *e)
{
    (void)dev, (void)stream;
    cpu__event_record_now(e);
    return INFINI_STATUS_SUCCESS;
}

/* Every record has completed: there is nothing to wait for, nor anything
 * queued to order the wait with. */
static infiniStatus_t wait_event(int dev, void *stream, cpu_event *e)
{
    (void)dev, (void)stream, (void)e;
    return INFINI_STATUS_SUCCESS;
}

static void stream_sync(cpu_stream *s)
{
    (void)s;
}

static bool stream_idle(cpu_stream *s)
{
    (void)s;
    return true;
}

static void event_wait(cpu_event *e)
{
    (void)e;
}

static infiniStatus_t drain(cpu_device *d, enum cpu__drain what)
{
    (void)d, (void)what;
    return INFINI_STATUS_SUCCESS;
}

static void queue_shutdown(void) {}

/* DONE_AT_RETURN: the loader then counts nothing and fences nothing on the
 * device. */
const cpu__queue_ops cpu__queue_inline = {
    .device_flags = INFINIRT_PLUGIN_DEVICE_DONE_AT_RETURN,
    .native = &cpu__native_inline,
    .stream_open = stream_open,
    .stream_close = stream_nothing,
    .stream_free = stream_nothing,
    .copy = copy,
    .fill = fill,
    .host_fn = host_fn,
    .record = record,
    .wait_event = wait_event,
    .sync = stream_sync,
    .idle = stream_idle,
    .event_wait = event_wait,
    .drain = drain,
    .shutdown = queue_shutdown,
};
