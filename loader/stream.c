/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stream.c - streams: the loader's stream objects (resolving a stream
 * argument, draining and freeing a stream when its last reference goes)
 * and the stream API.  Handles are the registry's (handles.c).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <sched.h>
#include <stdlib.h>

static void put_stream(uint32_t kind, void *obj)
{
    (void)kind;
    infinirt__stream_put(obj);
}

infinirt__stream *infinirt__stream_get(infinirtStream_t h)
{
    return infinirt__handle_get(INFINIRT__KIND_STREAM, h, put_stream);
}

infinirt__stream *infinirt__stream_borrow_slow(infinirtStream_t h, int *use)
{
    return infinirt__handle_borrow_slow(INFINIRT__KIND_STREAM, h, put_stream, use);
}

static void stream_unlink(infinirt__stream *s)
{
    infinirt__device *dev = s->dev;
    pthread_mutex_lock(&dev->lock);
    if (s->prev)
        s->prev->next = s->next;
    else
        dev->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    pthread_mutex_unlock(&dev->lock);
}

/* Wait until everything queued on s has completed.  Falls back to the whole
 * device when the stream cannot be synchronised. */
static infiniStatus_t stream_drain(infinirt__stream *s)
{
    infinirt__device *dev = s->dev;
    uint_fast64_t seen = atomic_load_explicit(&s->submitted, memory_order_acquire);
    infiniStatus_t st = dev->plugin->ops->stream_synchronize(dev->index, s->ps);
    if (st == INFINI_STATUS_SUCCESS) {
        infinirt__stream_note_synced(s, seen);
        return st;
    }
    infinirt__plugin_failed(st, dev, "stream_synchronize");
    return infinirt__device_sync(dev);
}

/* The last reference is gone.  The stream's cached blocks may move to the
 * device's other streams only once its queued work has completed, so the
 * stream is drained first; if it cannot be (the device is failing), its
 * object is kept - never freed, so its address is never another stream's
 * allocator key - and its cached blocks stay where they are. */
static void stream_free(infinirt__stream *s)
{
    infinirt__device *dev = s->dev;
    /* Usually the destroy's own drain was the last thing done on the
     * stream: nothing queued since (on a device that counts_work every
     * loader submission raises `submitted` past `synced`; elsewhere the
     * plugin is asked, as the allocator's fences ask it), so a second
     * plugin sync would only cost.  No one can begin a capture on it now:
     * its handle is dead and this was the last reference. */
    bool idle = atomic_load_explicit(&s->destroy_drained, memory_order_acquire) && !infinirt__stream_busy(s);
    if (!idle && stream_drain(s) != INFINI_STATUS_SUCCESS) {
        INFINIRT__ERROR("%s:%d (plugin %s): a destroyed stream could not be drained; its cached memory is "
                        "kept out of use",
                        infinirtGetDeviceTypeName(dev->plugin->type), dev->id, dev->plugin->name);
        return;
    }
    infinirt__pool_stream_retired(infinirt__device_pool_peek(dev), s);
    infinirt__pool_stream_retired(dev->plugin->host_pool, s);
    stream_unlink(s);
    /* A device synchronize may still be using the plugin stream. */
    while (atomic_load(&s->pins) != 0)
        sched_yield();
    infiniStatus_t st = dev->plugin->ops->stream_destroy(dev->index, s->ps);
    if (st != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, dev, "stream_destroy");
    free(s);
}

/* stream_free for the registry, which frees a borrowed stream later. */
static void stream_release(void *obj)
{
    stream_free(obj);
}

void infinirt__stream_put(infinirt__stream *s)
{
    if (s != NULL && !s->is_default && infinirt__handle_drop(INFINIRT__KIND_STREAM, s->slot, stream_release) != NULL)
        stream_free(s);
}

infiniStatus_t infinirt__stream_resolve(infinirtStream_t h, infinirt__device *dev, const char *fn,
                                        infinirt__stream **out)
{
    if (h == NULL) {
        *out = dev->default_stream;
        return INFINI_STATUS_SUCCESS;
    }
    infinirt__stream *s = infinirt__stream_get(h);
    if (s == NULL)
        return infinirt__stream_not_live(h, fn);
    *out = s;
    return INFINI_STATUS_SUCCESS;
}

__attribute__((noinline, cold)) infiniStatus_t infinirt__stream_not_live(infinirtStream_t h, const char *fn)
{
    return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "stream %p is not a live stream", h);
}

static uint64_t next_stream_id(void)
{
    static atomic_uint_fast64_t ids;
    return (uint64_t)atomic_fetch_add(&ids, 1) + 1;
}

/* ------------------------------------------------------------ stream API */

/* How a stream is made: by the plugin with flags, or around a native one. */
typedef struct {
    uint32_t flags;
    void *native; /* non-NULL: wrap it */
} stream_how;

/* Create a plugin stream on dev as `how` says and give it a handle: its
 * native value. */
static infiniStatus_t stream_new(infinirt__device *dev, stream_how how, const char *fn, infinirtStream_t *out)
{
    const infinirtPluginOps *ops = dev->plugin->ops;
    infinirt__stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, fn, "no memory for a stream handle");
    infiniStatus_t st;
    const char *entry;
    if (how.native != NULL) {
        entry = "stream_create_from_native";
        st = ops->stream_create_from_native(dev->index, how.native, &s->ps);
        s->wrapped = true;
    } else if (how.flags != 0 || INFINIRT__HAS(dev->plugin, stream_create_with_flags)) {
        entry = "stream_create_with_flags";
        st = ops->stream_create_with_flags(dev->index, how.flags, &s->ps);
    } else {
        entry = "stream_create";
        st = ops->stream_create(dev->index, &s->ps);
    }
    if (st != INFINI_STATUS_SUCCESS) {
        free(s);
        if (st == INFINI_STATUS_NOT_IMPLEMENTED)
            return infinirt__fail(st, fn, "the %s backend (plugin %s) has no %s",
                                  infinirtGetDeviceTypeName(dev->plugin->type), dev->plugin->name, entry);
        return infinirt__plugin_failed(st, dev, entry);
    }
    if (s->ps == NULL) {
        /* NULL is the default stream to every entry: nothing was made that
         * the loader could pass to stream_destroy, and nothing is kept. */
        free(s);
        return infinirt__plugin_gave_null(dev, entry, "stream");
    }
    s->native = s->ps;
    if (INFINIRT__HAS(dev->plugin, stream_get_native)) {
        void *n = NULL;
        st = ops->stream_get_native(dev->index, s->ps, &n);
        if (st != INFINI_STATUS_SUCCESS || n == NULL) {
            ops->stream_destroy(dev->index, s->ps);
            free(s);
            return infinirt__plugin_failed(st != INFINI_STATUS_SUCCESS ? st : INFINI_STATUS_INTERNAL_ERROR, dev,
                                           "stream_get_native");
        }
        s->native = n;
    }
    s->dev = dev;
    s->non_blocking = (how.flags & INFINIRT_STREAM_NON_BLOCKING) != 0;
    s->id = next_stream_id();
    /* On the device's list before the handle is live: a guessed handle
     * destroyed at once unlinks a linked stream. */
    pthread_mutex_lock(&dev->lock);
    s->next = dev->streams;
    if (dev->streams)
        dev->streams->prev = s;
    dev->streams = s;
    pthread_mutex_unlock(&dev->lock);
    /* Once the handle is live another thread may destroy it (a guessed
     * value) and free s: nothing of s is read after it is registered. */
    void *native = s->native;
    int rc = infinirt__handle_register(INFINIRT__KIND_STREAM, s, (uintptr_t)native, &s->slot);
    if (rc != 0) {
        stream_unlink(s);
        ops->stream_destroy(dev->index, s->ps);
        free(s);
        if (rc == -2 && how.native != NULL)
            return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "native stream %p is already an infinirt stream",
                                  how.native);
        return infinirt__fail(rc == -2 ? INFINI_STATUS_INTERNAL_ERROR : INFINI_STATUS_OUT_OF_MEMORY, fn, "%s",
                              infinirt__handle_register_error(rc));
    }
    *out = (infinirtStream_t)native;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtStreamCreateWithFlags(infinirtStream_t *stream_ptr, uint32_t flags)
{
    INFINIRT__TRACE_ENTRY(infinirtStreamCreateWithFlags, (stream_ptr, flags));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stream_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "stream_ptr is NULL");
    if (flags & ~(uint32_t)INFINIRT_STREAM_NON_BLOCKING)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "unknown flag bits 0x%x", flags);
    infinirt__device *dev = NULL;
    if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    return stream_new(dev, (stream_how){.flags = flags}, __func__, stream_ptr);
}

INFINIRT_API infiniStatus_t infinirtStreamCreate(infinirtStream_t *stream_ptr)
{
    INFINIRT__TRACE_ENTRY(infinirtStreamCreate, (stream_ptr));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stream_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "stream_ptr is NULL");
    infinirt__device *dev = NULL;
    if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    return stream_new(dev, (stream_how){0}, __func__, stream_ptr);
}

INFINIRT_API infiniStatus_t infinirtStreamCreateFromNative(infinirtStream_t *stream_ptr, void *native)
{
    INFINIRT__TRACE_ENTRY(infinirtStreamCreateFromNative, (stream_ptr, native));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stream_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "stream_ptr is NULL");
    if (native == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__,
                              "native is NULL (the default stream is already infinirt's NULL stream)");
    infinirt__stream *known = infinirt__stream_get(native);
    if (known != NULL) {
        infinirt__stream_put(known);
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "native stream %p is already an infinirt stream",
                              native);
    }
    infinirt__device *dev = NULL;
    if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    return stream_new(dev, (stream_how){.native = native}, __func__, stream_ptr);
}

INFINIRT_API infiniStatus_t infinirtStreamGetNativeHandle(infinirtStream_t stream, void **native)
{
    INFINIRT__TRACE_ENTRY(infinirtStreamGetNativeHandle, (stream, native));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (native == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "native is NULL");
    if (stream == NULL) {
        infinirt__device *dev = NULL;
        if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
            return st;
        void *n = NULL;
        if (INFINIRT__HAS(dev->plugin, stream_get_native) &&
            (st = dev->plugin->ops->stream_get_native(dev->index, NULL, &n)) != INFINI_STATUS_SUCCESS)
            return infinirt__plugin_failed(st, dev, "stream_get_native");
        *native = n;
        return INFINI_STATUS_SUCCESS;
    }
    infinirt__stream *s = infinirt__stream_get(stream);
    if (s == NULL)
        return infinirt__stream_not_live(stream, __func__);
    *native = s->native;
    infinirt__stream_put(s);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtStreamDestroy(infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY(infinirtStreamDestroy, (stream));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stream == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "the default (NULL) stream cannot be destroyed");
    infinirt__stream *s = infinirt__stream_get(stream);
    if (s != NULL && infinirt__stream_capture(s) != NULL &&
        (st = infinirt__capture_forbid(s, __func__)) != INFINI_STATUS_SUCCESS) {
        infinirt__stream_put(s); /* a capturing stream is not destroyed */
        return st;
    }
    if (s == NULL || infinirt__handle_kill(INFINIRT__KIND_STREAM, stream, s->slot) != 0) {
        infinirt__stream_put(s);
        return infinirt__stream_not_live(stream, __func__);
    }
    /* The call waits for the stream's work (as documented) even when
     * another thread is still inside a call on it and so holds the last
     * reference; the plugin stream is destroyed when that user lets go. */
    st = stream_drain(s);
    if (st == INFINI_STATUS_SUCCESS)
        atomic_store_explicit(&s->destroy_drained, true, memory_order_release);
    /* Drop our reference and the handle's own. */
    infinirt__stream_put(s);
    infinirt__stream_put(s);
    return st;
}

INFINIRT_API infiniStatus_t infinirtStreamSynchronize(infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY(infinirtStreamSynchronize, (stream));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__device *dev = NULL;
    if (stream == NULL && (st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__stream *s = NULL;
    int use;
    if ((st = infinirt__stream_resolve_borrow(stream, dev, __func__, &s, &use)) != INFINI_STATUS_SUCCESS)
        return st;
    dev = s->dev;
    if (__builtin_expect(infinirt__stream_capture(s) != NULL, 0) &&
        (st = infinirt__capture_forbid(s, __func__)) != INFINI_STATUS_SUCCESS) {
        infinirt__stream_return(s, use);
        return st;
    }
    uint_fast64_t seen = atomic_load_explicit(&s->submitted, memory_order_acquire);
    st = dev->plugin->ops->stream_synchronize(dev->index, s->ps);
    if (st == INFINI_STATUS_SUCCESS)
        infinirt__stream_note_synced(s, seen);
    else
        infinirt__plugin_failed(st, dev, "stream_synchronize");
    infinirt__stream_return(s, use);
    return st;
}

/* infinirtLaunchHostFunc after its entry; traced a constant (INFINIRT__TRACE_ENTRY_WORK). */
static inline __attribute__((always_inline)) infiniStatus_t
launch_host_func_code(infinirtStream_t stream, infinirtHostFn_t fn, void *user_data, bool traced)
{
    static const char api[] = "infinirtLaunchHostFunc";
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (fn == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, api, "fn is NULL");
    infinirt__device *dev = NULL;
    if (stream == NULL && (st = infinirt__current_device(api, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__stream *s = NULL;
    int use;
    if ((st = infinirt__stream_resolve_borrow(stream, dev, api, &s, &use)) != INFINI_STATUS_SUCCESS)
        return st;
    dev = s->dev;
    if (__builtin_expect(infinirt__stream_capture(s) != NULL, 0)) {
        /* Replayed through the plugin's entry: refused now, as it would be
         * eagerly, rather than at every launch. */
        if (!INFINIRT__HAS(dev->plugin, launch_host_func)) {
            infinirt__stream_return(s, use);
            return infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, api,
                                  "the %s backend (plugin %s) has no host functions, so none can be captured",
                                  infinirtGetDeviceTypeName(dev->plugin->type), dev->plugin->name);
        }
        bool recorded = false;
        infinirt__gop op = {.kind = INFINIRT__GOP_HOSTFN, .fn = fn, .ud = user_data};
        st = infinirt__capture_op(s, &op, api, &recorded);
        if (st != INFINI_STATUS_SUCCESS || recorded) {
            infinirt__stream_return(s, use);
            return st;
        }
    }
    st = INFINIRT__TRACED(traced, infinirt__traced_host_fn(s, fn, user_data),
                          dev->plugin->ops->launch_host_func(dev->index, s->ps, fn, user_data));
    infinirt__stream_note_submit(s);
    if (st != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, dev, "launch_host_func");
    infinirt__stream_return(s, use);
    return st;
}

static __attribute__((noinline, cold)) infiniStatus_t launch_host_func_traced(infinirtStream_t stream,
                                                                              infinirtHostFn_t fn, void *user_data)
{
    return launch_host_func_code(stream, fn, user_data, true);
}

INFINIRT_API infiniStatus_t infinirtLaunchHostFunc(infinirtStream_t stream, infinirtHostFn_t fn, void *user_data)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtLaunchHostFunc, (stream, fn, user_data),
                               launch_host_func_traced(stream, fn, user_data));
    return launch_host_func_code(stream, fn, user_data, false);
}
