/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_trace.c - when the loader writes a trace (ABI 1.7), the work each
 * entry leaves queued is reported with the times the queue ran it.
 *
 * The entry is bracketed by two markers on its in-order queue (made with
 * profiling on: opencl__queue_create): the first completes when everything
 * queued before has, so its CL_PROFILING_COMMAND_END is when the work could
 * start; the second completes when the work has, and its callback reports
 * [first's END, second's END].  Device timestamps become CLOCK_MONOTONIC
 * through an offset per device: each marker's host clock reading just
 * after it was queued, less its CL_PROFILING_COMMAND_QUEUED, is never below
 * the true offset and above it by however long the enqueue took (a
 * preempted thread: milliseconds), so the offset used is the least
 * sample of the previous 2 s window (following a drift between the
 * clocks), fixed within a window, and the least of a few empty markers'
 * when the device's queue is made.
 * Converting each mark with its own sample put work out of order on an
 * in-order queue by up to the enqueue's delay.  A queue without profiling (one
 * the application made, stream_create_from_native) reports the host's view:
 * from the entry to the callback.  Nothing of it runs when no trace is
 * written: each entry tests one pointer.
 */
#include "opencl_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

const infinirtPluginTrace *opencl__trace;

typedef struct {
    uint64_t id;
    uint64_t host_ns; /* CLOCK_MONOTONIC just after `before` was queued */
    cl_event before, after;
    opencl__stream *s;
} mark;

static uint64_t host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define CLOCK_WINDOW_NS 2000000000u

static pthread_mutex_t clock_mu = PTHREAD_MUTEX_INITIALIZER;

/* Take d's clock offset sample, taken at `now`; the offset to use.  It
 * changes only from one window to the next (to the least sample of the
 * window before), never within one: spans converted with it keep the
 * order the queue ran them in. */
static int64_t clock_offset(opencl__device *d, int64_t sample, uint64_t now)
{
    pthread_mutex_lock(&clock_mu);
    if (!d->trace_off_valid) { /* no calibration: the first sample */
        d->trace_off = sample;
        d->trace_off_valid = 1;
        d->trace_off_window = now;
    }
    if (!d->trace_off_next_valid || sample < d->trace_off_next) {
        d->trace_off_next = sample;
        d->trace_off_next_valid = 1;
    }
    if (now - d->trace_off_window > CLOCK_WINDOW_NS) {
        d->trace_off = d->trace_off_next;
        d->trace_off_next_valid = 0;
        d->trace_off_window = now;
    }
    int64_t off = d->trace_off;
    pthread_mutex_unlock(&clock_mu);
    return off;
}

void opencl__trace_calibrate(opencl__device *d)
{
    int64_t best = 0;
    int have = 0;
    for (int i = 0; i < 4; i++) {
        cl_event ev = NULL;
        if (clEnqueueMarkerWithWaitList(d->default_stream.queue, 0, NULL, &ev) != CL_SUCCESS)
            break;
        uint64_t h = host_ns();
        cl_ulong q = 0;
        if (clWaitForEvents(1, &ev) == CL_SUCCESS &&
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL) == CL_SUCCESS &&
            (!have || (int64_t)h - (int64_t)q < best)) {
            best = (int64_t)h - (int64_t)q;
            have = 1;
        }
        clReleaseEvent(ev);
    }
    if (!have)
        return;
    pthread_mutex_lock(&clock_mu);
    d->trace_off = best;
    d->trace_off_valid = 1;
    d->trace_off_next_valid = 0;
    d->trace_off_window = host_ns();
    pthread_mutex_unlock(&clock_mu);
}

static void mark_free(mark *m)
{
    if (m->before != NULL)
        clReleaseEvent(m->before);
    if (m->after != NULL)
        clReleaseEvent(m->after);
    free(m);
}

static void CL_CALLBACK mark_done(cl_event ev, cl_int status, void *arg)
{
    (void)ev;
    mark *m = arg;
    uint64_t now = host_ns(), begin = m->host_ns, end = now;
    cl_ulong q = 0, b = 0, e = 0;
    if (status == CL_COMPLETE &&
        clGetEventProfilingInfo(m->before, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL) == CL_SUCCESS &&
        clGetEventProfilingInfo(m->before, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL) == CL_SUCCESS &&
        clGetEventProfilingInfo(m->after, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL) == CL_SUCCESS && q <= b &&
        b <= e) {
        int64_t off = clock_offset(m->s->dev, (int64_t)m->host_ns - (int64_t)q, now);
        begin = (uint64_t)((int64_t)b + off);
        end = (uint64_t)((int64_t)e + off);
    }
    opencl__trace->work_ran(m->id, begin, end);
    opencl__stream *s = m->s;
    mark_free(m);
    atomic_fetch_sub_explicit(&s->trace_marks, 1, memory_order_release); /* s may go from here on */
}

/* Until the reports of s's completed work have run (bounded: a callback
 * that never comes costs a second, once). */
static void marks_wait(opencl__stream *s)
{
    uint64_t until = host_ns() + 1000000000u;
    while (atomic_load_explicit(&s->trace_marks, memory_order_acquire) > 0 && host_ns() < until)
        sched_yield();
}

/* Before an entry that queues work on `stream` of dev: its id and the
 * first marker; NULL when the loader traces no work here (or a marker
 * cannot be made: the loader then shows the entry's own time). */
static mark *mark_begin(int dev, void *stream)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    if (d == NULL || opencl__stream_resolve(d, stream, &s) != INFINI_STATUS_SUCCESS)
        return NULL;
    uint64_t id = opencl__trace->work_id();
    if (id == 0)
        return NULL;
    mark *m = calloc(1, sizeof *m);
    if (m == NULL) {
        opencl__trace->work_ran(id, host_ns(), host_ns()); /* no times to give */
        return NULL;
    }
    m->id = id;
    m->s = s;
    if (clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &m->before) != CL_SUCCESS) {
        opencl__trace->work_ran(id, host_ns(), host_ns());
        mark_free(m);
        return NULL;
    }
    m->host_ns = host_ns();
    return m;
}

/* After the entry: the second marker and its callback. */
static void mark_end(mark *m, infiniStatus_t st)
{
    if (m == NULL)
        return;
    if (st != INFINI_STATUS_SUCCESS) { /* nothing queued: the loader forgets the id */
        mark_free(m);
        return;
    }
    /* The callback may run (and free m) inside clSetEventCallback when the
     * marker has completed already: nothing of m is used after it. */
    opencl__stream *s = m->s;
    if (clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &m->after) == CL_SUCCESS) {
        atomic_fetch_add_explicit(&s->trace_marks, 1, memory_order_relaxed);
        if (clSetEventCallback(m->after, CL_COMPLETE, mark_done, m) == CL_SUCCESS) {
            clFlush(s->queue);
            return;
        }
        atomic_fetch_sub_explicit(&s->trace_marks, 1, memory_order_relaxed);
    }
    opencl__trace->work_ran(m->id, m->host_ns, host_ns());
    mark_free(m);
}

infiniStatus_t opencl__traced_memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream)
{
    if (opencl__trace == NULL)
        return opencl__memcpy_async(dev, dst, src, size, kind, stream);
    mark *m = mark_begin(dev, stream);
    infiniStatus_t st = opencl__memcpy_async(dev, dst, src, size, kind, stream);
    mark_end(m, st);
    return st;
}

infiniStatus_t opencl__traced_memset_async(int dev, void *ptr, int value, size_t size, void *stream)
{
    if (opencl__trace == NULL)
        return opencl__memset_async(dev, ptr, value, size, stream);
    mark *m = mark_begin(dev, stream);
    infiniStatus_t st = opencl__memset_async(dev, ptr, value, size, stream);
    mark_end(m, st);
    return st;
}

infiniStatus_t opencl__traced_launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data)
{
    if (opencl__trace == NULL)
        return opencl__launch_host_func(dev, stream, fn, user_data);
    mark *m = mark_begin(dev, stream);
    infiniStatus_t st = opencl__launch_host_func(dev, stream, fn, user_data);
    mark_end(m, st);
    return st;
}

infiniStatus_t opencl__traced_event_record(int dev, void *event, void *stream)
{
    if (opencl__trace == NULL)
        return opencl__event_record(dev, event, stream);
    mark *m = mark_begin(dev, stream);
    infiniStatus_t st = opencl__event_record(dev, event, stream);
    mark_end(m, st);
    return st;
}

infiniStatus_t opencl__traced_stream_wait_event(int dev, void *stream, void *event)
{
    if (opencl__trace == NULL)
        return opencl__stream_wait_event(dev, stream, event);
    mark *m = mark_begin(dev, stream);
    infiniStatus_t st = opencl__stream_wait_event(dev, stream, event);
    mark_end(m, st);
    return st;
}

infiniStatus_t opencl__traced_stream_synchronize(int dev, void *stream)
{
    infiniStatus_t st = opencl__stream_synchronize(dev, stream);
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    if (opencl__trace != NULL && st == INFINI_STATUS_SUCCESS && d != NULL &&
        opencl__stream_resolve(d, stream, &s) == INFINI_STATUS_SUCCESS)
        marks_wait(s);
    return st;
}

infiniStatus_t opencl__traced_device_synchronize(int dev)
{
    infiniStatus_t st = opencl__device_synchronize(dev);
    opencl__device *d = opencl__dev(dev);
    if (opencl__trace != NULL && st == INFINI_STATUS_SUCCESS && d != NULL &&
        atomic_load_explicit(&d->ready, memory_order_acquire)) {
        /* The list's streams cannot be freed meanwhile: destroy unlinks
         * under the lock. */
        pthread_mutex_lock(&d->lock);
        for (opencl__stream *s = d->queues.next; s != &d->queues; s = s->next)
            marks_wait(s);
        pthread_mutex_unlock(&d->lock);
    }
    return st;
}

infiniStatus_t opencl__traced_stream_destroy(int dev, void *stream)
{
    opencl__stream *s = stream;
    opencl__device *d = opencl__dev(dev);
    if (opencl__trace != NULL && d != NULL && s != NULL && s != &d->default_stream) {
        clFinish(s->queue); /* its work done, its reports run, then it may go */
        marks_wait(s);
    }
    return opencl__stream_destroy(dev, stream);
}
