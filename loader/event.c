/* SPDX-License-Identifier: Apache-2.0 */
/*
 * event.c - events: the loader's event objects, the event API and
 * infinirtStreamWaitEvent.  Handles are the registry's (handles.c).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdlib.h>

static void put_event(uint32_t kind, void *obj)
{
    (void)kind;
    infinirt__event_put(obj);
}

infinirt__event *infinirt__event_get(infinirtEvent_t h)
{
    return infinirt__handle_get(INFINIRT__KIND_EVENT, h, put_event);
}

/* The last reference is gone: the plugin event and the loader's object. */
static void event_free(infinirt__event *e)
{
    infinirt__device *dev = e->dev;
    infiniStatus_t st = dev->plugin->ops->event_destroy(dev->index, e->pe);
    if (st != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, dev, "event_destroy");
    free(e);
}

infinirt__event *infinirt__event_borrow_slow(infinirtEvent_t h, int *use)
{
    return infinirt__handle_borrow_slow(INFINIRT__KIND_EVENT, h, put_event, use);
}

/* event_free for the registry, which frees a borrowed event later. */
static void event_release(void *obj)
{
    event_free(obj);
}

void infinirt__event_put(infinirt__event *e)
{
    if (e != NULL && infinirt__handle_drop(INFINIRT__KIND_EVENT, e->slot, event_release) != NULL)
        event_free(e);
}

/* ------------------------------------------------------------- event API */

/* Both creates: a public function calling the other would trace a second
 * span inside the first (INFINIRT__TRACE_ENTRY). */
static infiniStatus_t create_event(infinirtEvent_t *event_ptr, uint32_t flags, const char *fn)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (event_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, fn, "event_ptr is NULL");
    if (flags & ~(uint32_t)(INFINIRT_EVENT_DISABLE_TIMING | INFINIRT_EVENT_BLOCKING_SYNC))
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "unknown flag bits 0x%x", flags);
    infinirt__device *dev = NULL;
    if ((st = infinirt__current_device(fn, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    /* malloc and each field set, not calloc: glibc serves malloc from the
     * thread's cache (calloc bypasses it), and an event often lives one
     * loop iteration.  (A memset after malloc would be turned back into
     * calloc by the compiler.) */
    infinirt__event *e = malloc(sizeof *e);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, fn, "no memory for an event handle");
    e->slot = 0;
    e->pe = NULL;
    atomic_init(&e->captured, NULL);
    e->captured_seq = 0;
    e->captured_on = NULL;
    st = dev->plugin->ops->event_create(dev->index, flags, &e->pe);
    if (st != INFINI_STATUS_SUCCESS) {
        free(e);
        return infinirt__plugin_failed(st, dev, "event_create");
    }
    if (e->pe == NULL) {
        /* No event to destroy (the loader never passes a NULL event) and
         * none to register: a NULL handle could never be destroyed. */
        free(e);
        return infinirt__plugin_gave_null(dev, "event_create", "event");
    }
    e->native = e->pe;
    if (INFINIRT__HAS(dev->plugin, event_get_native)) {
        void *n = NULL;
        st = dev->plugin->ops->event_get_native(dev->index, e->pe, &n);
        if (st != INFINI_STATUS_SUCCESS || n == NULL) {
            dev->plugin->ops->event_destroy(dev->index, e->pe);
            free(e);
            return infinirt__plugin_failed(st != INFINI_STATUS_SUCCESS ? st : INFINI_STATUS_INTERNAL_ERROR, dev,
                                           "event_get_native");
        }
        e->native = n;
    }
    e->dev = dev;
    e->flags = flags;
    void *native = e->native; /* e may be gone once the handle is live */
    int rc = infinirt__handle_register(INFINIRT__KIND_EVENT, e, (uintptr_t)native, &e->slot);
    if (rc != 0) {
        dev->plugin->ops->event_destroy(dev->index, e->pe);
        free(e);
        return infinirt__fail(rc == -2 ? INFINI_STATUS_INTERNAL_ERROR : INFINI_STATUS_OUT_OF_MEMORY, fn, "%s",
                              infinirt__handle_register_error(rc));
    }
    *event_ptr = (infinirtEvent_t)native;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtEventCreateWithFlags(infinirtEvent_t *event_ptr, uint32_t flags)
{
    INFINIRT__TRACE_ENTRY(infinirtEventCreateWithFlags, (event_ptr, flags));
    return create_event(event_ptr, flags, __func__);
}

INFINIRT_API infiniStatus_t infinirtEventCreate(infinirtEvent_t *event_ptr)
{
    INFINIRT__TRACE_ENTRY(infinirtEventCreate, (event_ptr));
    return create_event(event_ptr, INFINIRT_EVENT_DEFAULT, __func__);
}

INFINIRT_API infiniStatus_t infinirtEventDestroy(infinirtEvent_t event)
{
    INFINIRT__TRACE_ENTRY(infinirtEventDestroy, (event));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* No reference is needed meanwhile: the handle dies and drops its own
     * reference in one step; a thread still inside a call on the event
     * frees it when it lets go. */
    void *last = NULL;
    if (infinirt__handle_destroy(INFINIRT__KIND_EVENT, event, &last, event_release) != 0)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    if (last != NULL)
        event_free(last);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtEventGetNativeHandle(infinirtEvent_t event, void **native)
{
    INFINIRT__TRACE_ENTRY(infinirtEventGetNativeHandle, (event, native));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (native == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "native is NULL");
    infinirt__event *e = infinirt__event_get(event);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    *native = e->native;
    infinirt__event_put(e);
    return INFINI_STATUS_SUCCESS;
}

/* infinirtEventRecord after its entry; traced a constant (INFINIRT__TRACE_ENTRY_WORK). */
static inline __attribute__((always_inline)) infiniStatus_t event_record_code(infinirtEvent_t event,
                                                                              infinirtStream_t stream, bool traced)
{
    static const char fn[] = "infinirtEventRecord";
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    int use_e, use_s;
    infinirt__event *e = infinirt__event_borrow(event, &use_e);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "event %p is not a live event", event);
    infinirt__stream *s = NULL;
    if ((st = infinirt__stream_resolve_borrow(stream, e->dev, fn, &s, &use_s)) == INFINI_STATUS_SUCCESS) {
        if (s->dev != e->dev) {
            st = infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "event of %s:%d recorded on a stream of %s:%d",
                                infinirtGetDeviceTypeName(e->dev->plugin->type), e->dev->id,
                                infinirtGetDeviceTypeName(s->dev->plugin->type), s->dev->id);
        } else {
            bool recorded = false;
            if (__builtin_expect(infinirt__stream_capture(s) != NULL ||
                                     atomic_load_explicit(&e->captured, memory_order_acquire) != NULL,
                                 0))
                st = infinirt__capture_event_record(e, s, fn, &recorded);
            if (st == INFINI_STATUS_SUCCESS && !recorded) {
                st = INFINIRT__TRACED(traced, infinirt__traced_event_record(s, e->pe),
                                      e->dev->plugin->ops->event_record(e->dev->index, e->pe, s->ps));
                if (st != INFINI_STATUS_SUCCESS)
                    infinirt__plugin_failed(st, e->dev, "event_record");
            }
        }
        infinirt__stream_return(s, use_s);
    }
    infinirt__event_return(e, use_e);
    return st;
}

static __attribute__((noinline, cold)) infiniStatus_t event_record_traced(infinirtEvent_t event,
                                                                          infinirtStream_t stream)
{
    return event_record_code(event, stream, true);
}

INFINIRT_API infiniStatus_t infinirtEventRecord(infinirtEvent_t event, infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtEventRecord, (event, stream), event_record_traced(event, stream));
    return event_record_code(event, stream, false);
}

INFINIRT_API infiniStatus_t infinirtEventQuery(infinirtEvent_t event, infinirtEventStatus_t *status_ptr)
{
    INFINIRT__TRACE_ENTRY(infinirtEventQuery, (event, status_ptr));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (status_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "status_ptr is NULL");
    int use;
    infinirt__event *e = infinirt__event_borrow(event, &use);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    int done = 0;
    if (__builtin_expect(atomic_load_explicit(&e->captured, memory_order_acquire) != NULL, 0) &&
        (st = infinirt__capture_event_forbid(e, __func__)) != INFINI_STATUS_SUCCESS) {
        infinirt__event_return(e, use);
        return st;
    }
    if ((st = e->dev->plugin->ops->event_query(e->dev->index, e->pe, &done)) != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, e->dev, "event_query");
    else
        *status_ptr = done ? INFINIRT_EVENT_COMPLETE : INFINIRT_EVENT_NOT_READY;
    infinirt__event_return(e, use);
    return st;
}

INFINIRT_API infiniStatus_t infinirtEventSynchronize(infinirtEvent_t event)
{
    INFINIRT__TRACE_ENTRY(infinirtEventSynchronize, (event));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    int use;
    infinirt__event *e = infinirt__event_borrow(event, &use);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    if (__builtin_expect(atomic_load_explicit(&e->captured, memory_order_acquire) != NULL, 0) &&
        (st = infinirt__capture_event_forbid(e, __func__)) != INFINI_STATUS_SUCCESS) {
        infinirt__event_return(e, use);
        return st;
    }
    if ((st = e->dev->plugin->ops->event_synchronize(e->dev->index, e->pe)) != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, e->dev, "event_synchronize");
    infinirt__event_return(e, use);
    return st;
}

INFINIRT_API infiniStatus_t infinirtEventElapsedTime(float *ms_ptr, infinirtEvent_t start, infinirtEvent_t end)
{
    INFINIRT__TRACE_ENTRY(infinirtEventElapsedTime, (ms_ptr, start, end));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (ms_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "ms_ptr is NULL");
    infinirt__event *a = infinirt__event_get(start), *b = infinirt__event_get(end);
    if (a == NULL || b == NULL) {
        st = infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "%s event %p is not a live event",
                            a == NULL ? "start" : "end", a == NULL ? start : end);
    } else if (a->dev != b->dev) {
        st = infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "start and end events belong to different devices");
    } else if ((a->flags | b->flags) & INFINIRT_EVENT_DISABLE_TIMING) {
        st = infinirt__fail(INFINI_STATUS_INVALID_STATE, __func__, "an event was created with DISABLE_TIMING");
    } else {
        float ms = 0;
        st = a->dev->plugin->ops->event_elapsed_time(a->dev->index, &ms, a->pe, b->pe);
        if (st == INFINI_STATUS_SUCCESS)
            *ms_ptr = ms;
        else if (st == INFINI_STATUS_NOT_READY || st == INFINI_STATUS_INVALID_STATE)
            infinirt__fail(st, __func__, "%s",
                           st == INFINI_STATUS_NOT_READY ? "an event has not completed"
                                                         : "an event was never recorded");
        else
            infinirt__plugin_failed(st, a->dev, "event_elapsed_time");
    }
    infinirt__event_put(a);
    infinirt__event_put(b);
    return st;
}

/* A stream waiting for an event: here, so that the event code depends on
 * the stream code and not the reverse.  infinirtStreamWaitEvent after its
 * entry; traced a constant (INFINIRT__TRACE_ENTRY_WORK). */
static inline __attribute__((always_inline)) infiniStatus_t stream_wait_event_code(infinirtStream_t stream,
                                                                                   infinirtEvent_t event, bool traced)
{
    static const char fn[] = "infinirtStreamWaitEvent";
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    int use_e, use_s = -1;
    infinirt__event *e = infinirt__event_borrow(event, &use_e);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "event %p is not a live event", event);
    infinirt__device *dev = NULL;
    infinirt__stream *s = NULL;
    if (stream == NULL)
        st = infinirt__current_device(fn, &dev);
    if (st == INFINI_STATUS_SUCCESS)
        st = infinirt__stream_resolve_borrow(stream, dev, fn, &s, &use_s);
    if (st == INFINI_STATUS_SUCCESS) {
        dev = s->dev;
        if (dev->plugin != e->dev->plugin)
            st = infinirt__fail(INFINI_STATUS_BAD_PARAM, fn,
                                "stream on %s:%d and event on %s:%d belong to different backends",
                                infinirtGetDeviceTypeName(dev->plugin->type), dev->id,
                                infinirtGetDeviceTypeName(e->dev->plugin->type), e->dev->id);
        else {
            bool recorded = false;
            if (__builtin_expect(infinirt__stream_capture(s) != NULL ||
                                     atomic_load_explicit(&e->captured, memory_order_acquire) != NULL,
                                 0))
                st = infinirt__capture_wait(s, e, fn, &recorded);
            if (st == INFINI_STATUS_SUCCESS && !recorded) {
                st = INFINIRT__TRACED(traced, infinirt__traced_wait_event(s, e->pe),
                                      dev->plugin->ops->stream_wait_event(dev->index, s->ps, e->pe));
                infinirt__stream_note_submit(s);
                if (st != INFINI_STATUS_SUCCESS)
                    infinirt__plugin_failed(st, dev, "stream_wait_event");
            }
        }
        infinirt__stream_return(s, use_s);
    }
    infinirt__event_return(e, use_e);
    return st;
}

static __attribute__((noinline, cold)) infiniStatus_t stream_wait_event_traced(infinirtStream_t stream,
                                                                               infinirtEvent_t event)
{
    return stream_wait_event_code(stream, event, true);
}

INFINIRT_API infiniStatus_t infinirtStreamWaitEvent(infinirtStream_t stream, infinirtEvent_t event)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtStreamWaitEvent, (stream, event), stream_wait_event_traced(stream, event));
    return stream_wait_event_code(stream, event, false);
}
