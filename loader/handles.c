/*
 * handles.c - loader handles for streams and events, and the stream and
 * event API.
 *
 * The application only ever holds loader handles.  Each knows its owning
 * device, so a call reaches that device's plugin whatever the current device
 * is.  Live handles are kept in a registry: a destroyed or made-up handle is
 * rejected with BAD_PARAM instead of being dereferenced.  A reference count
 * keeps a handle's memory (and plugin object) alive while another thread is
 * still inside a call that uses it.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- the registry */

/* Open addressing with linear probing over pointer keys; TOMB marks deleted
 * slots so probe chains stay intact. */
#define TOMB ((void *)(uintptr_t)1)

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static void **g_reg;
static size_t g_reg_cap, g_reg_used; /* used counts live + tombstones */

static size_t slot_of(const void *h, size_t cap)
{
    uintptr_t x = (uintptr_t)h;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 7) & (cap - 1);
}

static int reg_find(const void *h)
{
    if (g_reg_cap == 0)
        return -1;
    for (size_t i = slot_of(h, g_reg_cap), n = 0; n < g_reg_cap; i = (i + 1) & (g_reg_cap - 1), n++) {
        if (g_reg[i] == h)
            return (int)i;
        if (g_reg[i] == NULL)
            return -1;
    }
    return -1;
}

static int reg_grow(void)
{
    size_t ncap = g_reg_cap ? g_reg_cap * 2 : 256;
    void **n = calloc(ncap, sizeof *n);
    if (n == NULL)
        return -1;
    size_t used = 0;
    for (size_t i = 0; i < g_reg_cap; i++) {
        void *h = g_reg[i];
        if (h != NULL && h != TOMB) {
            size_t j = slot_of(h, ncap);
            while (n[j] != NULL)
                j = (j + 1) & (ncap - 1);
            n[j] = h;
            used++;
        }
    }
    free(g_reg);
    g_reg = n;
    g_reg_cap = ncap;
    g_reg_used = used;
    return 0;
}

int infinirt__handle_register(void *h)
{
    pthread_mutex_lock(&g_reg_lock);
    int rc = 0;
    if ((g_reg_used + 1) * 2 > g_reg_cap)
        rc = reg_grow();
    if (rc == 0) {
        size_t i = slot_of(h, g_reg_cap);
        while (g_reg[i] != NULL && g_reg[i] != TOMB)
            i = (i + 1) & (g_reg_cap - 1);
        if (g_reg[i] == NULL)
            g_reg_used++;
        g_reg[i] = h;
    }
    pthread_mutex_unlock(&g_reg_lock);
    return rc;
}

int infinirt__handle_unregister(void *h)
{
    pthread_mutex_lock(&g_reg_lock);
    int i = reg_find(h);
    if (i >= 0)
        g_reg[i] = TOMB;
    pthread_mutex_unlock(&g_reg_lock);
    return i >= 0 ? 0 : -1;
}

/* Look a handle up and take a reference, atomically with respect to
 * unregister: a handle found here cannot be freed until the reference is
 * dropped. */
static void *handle_get(const void *h, uint32_t magic)
{
    if (h == NULL)
        return NULL;
    pthread_mutex_lock(&g_reg_lock);
    void *found = NULL;
    if (reg_find(h) >= 0 && *(const uint32_t *)h == magic) {
        found = (void *)h;
        atomic_int *refs = magic == INFINIRT__STREAM_MAGIC ? &((infinirt__stream *)found)->refs
                                                           : &((infinirt__event *)found)->refs;
        atomic_fetch_add(refs, 1);
    }
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

infinirt__stream *infinirt__stream_get(infinirtStream_t h)
{
    return handle_get(h, INFINIRT__STREAM_MAGIC);
}

infinirt__event *infinirt__event_get(infinirtEvent_t h)
{
    return handle_get(h, INFINIRT__EVENT_MAGIC);
}

static void stream_free(infinirt__stream *s)
{
    infinirt__device *dev = s->dev;
    pthread_mutex_lock(&dev->lock);
    if (s->prev)
        s->prev->next = s->next;
    else
        dev->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pthread_mutex_unlock(&dev->lock);
    infinirt__pool_stream_retired(dev->pool, s);
    infinirt__pool_stream_retired(dev->plugin->host_pool, s);
    if (dev->plugin->ops->stream_destroy != NULL) {
        infiniStatus_t st = dev->plugin->ops->stream_destroy(dev->index, s->ps);
        if (st != INFINI_STATUS_SUCCESS)
            infinirt__plugin_failed(st, dev, "stream_destroy");
    }
    s->magic = 0;
    free(s);
}

void infinirt__stream_put(infinirt__stream *s)
{
    if (s != NULL && !s->is_default && atomic_fetch_sub(&s->refs, 1) == 1)
        stream_free(s);
}

void infinirt__event_put(infinirt__event *e)
{
    if (e != NULL && atomic_fetch_sub(&e->refs, 1) == 1) {
        infinirt__device *dev = e->dev;
        if (dev->plugin->ops->event_destroy != NULL) {
            infiniStatus_t st = dev->plugin->ops->event_destroy(dev->index, e->pe);
            if (st != INFINI_STATUS_SUCCESS)
                infinirt__plugin_failed(st, dev, "event_destroy");
        }
        e->magic = 0;
        free(e);
    }
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
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "stream %p is not a live stream", h);
    *out = s;
    return INFINI_STATUS_SUCCESS;
}

void infinirt__stream_release(infinirt__stream *s)
{
    infinirt__stream_put(s);
}

void infinirt__stream_note_synced(infinirt__stream *s, uint_fast64_t seen)
{
    uint_fast64_t cur = atomic_load(&s->synced);
    while (cur < seen && !atomic_compare_exchange_weak(&s->synced, &cur, seen))
        ;
}

infiniStatus_t infinirt__device_sync(infinirt__device *dev)
{
    uint_fast64_t seen = atomic_load(&dev->submitted);
    if (!INFINIRT__HAS_OP(dev->plugin, device_synchronize))
        return infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, "infinirtDeviceSynchronize",
                              "plugin %s has no device_synchronize", dev->plugin->name);
    infiniStatus_t st = dev->plugin->ops->device_synchronize(dev->index);
    if (st != INFINI_STATUS_SUCCESS)
        return infinirt__plugin_failed(st, dev, "device_synchronize");
    /* Everything queued on the device before `seen` was read has completed. */
    pthread_mutex_lock(&dev->lock);
    infinirt__stream_note_synced(dev->default_stream, atomic_load(&dev->default_stream->submitted));
    for (infinirt__stream *s = dev->streams; s != NULL; s = s->next)
        infinirt__stream_note_synced(s, atomic_load(&s->submitted));
    pthread_mutex_unlock(&dev->lock);
    uint_fast64_t cur = atomic_load(&dev->synced_all);
    while (cur < seen && !atomic_compare_exchange_weak(&dev->synced_all, &cur, seen))
        ;
    return INFINI_STATUS_SUCCESS;
}

/* ------------------------------------------------------------ stream API */

#define REQUIRE_OP(dev, op, fn)                                                                      \
    do {                                                                                             \
        if (!INFINIRT__HAS_OP((dev)->plugin, op))                                                    \
            return infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, fn, "plugin %s does not support %s", \
                                  (dev)->plugin->name, #op);                                         \
    } while (0)

INFINIRT_API infiniStatus_t infinirtStreamCreate(infinirtStream_t *stream_ptr)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stream_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "stream_ptr is NULL");
    infinirt__device *dev;
    if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    REQUIRE_OP(dev, stream_create, __func__);
    infinirt__stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory for a stream handle");
    st = dev->plugin->ops->stream_create(dev->index, &s->ps);
    if (st != INFINI_STATUS_SUCCESS) {
        free(s);
        return infinirt__plugin_failed(st, dev, "stream_create");
    }
    s->magic = INFINIRT__STREAM_MAGIC;
    s->dev = dev;
    atomic_init(&s->refs, 1);
    pthread_mutex_lock(&dev->lock);
    s->next = dev->streams;
    if (dev->streams)
        dev->streams->prev = s;
    dev->streams = s;
    pthread_mutex_unlock(&dev->lock);
    if (infinirt__handle_register(s) != 0) {
        infinirt__stream_put(s);
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory to register the stream");
    }
    *stream_ptr = s;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtStreamDestroy(infinirtStream_t stream)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stream == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "the default (NULL) stream cannot be destroyed");
    if (infinirt__handle_unregister(stream) != 0)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "stream %p is not a live stream", stream);
    /* The registry's reference is dropped here; the plugin stream is
     * destroyed (after its work completes) when the last user lets go. */
    infinirt__stream_put((infinirt__stream *)stream);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtStreamSynchronize(infinirtStream_t stream)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__device *dev = NULL;
    if (stream == NULL && (st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__stream *s = NULL;
    if ((st = infinirt__stream_resolve(stream, dev, __func__, &s)) != INFINI_STATUS_SUCCESS)
        return st;
    dev = s->dev;
    if (INFINIRT__HAS_OP(dev->plugin, stream_synchronize)) {
        uint_fast64_t seen = atomic_load_explicit(&s->submitted, memory_order_acquire);
        st = dev->plugin->ops->stream_synchronize(dev->index, s->ps);
        if (st == INFINI_STATUS_SUCCESS)
            infinirt__stream_note_synced(s, seen);
        else
            infinirt__plugin_failed(st, dev, "stream_synchronize");
    } else {
        st = infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, __func__, "plugin %s does not support stream_synchronize",
                            dev->plugin->name);
    }
    infinirt__stream_release(s);
    return st;
}

INFINIRT_API infiniStatus_t infinirtStreamWaitEvent(infinirtStream_t stream, infinirtEvent_t event)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__event *e = infinirt__event_get(event);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    infinirt__device *dev = NULL;
    infinirt__stream *s = NULL;
    if (stream == NULL)
        st = infinirt__current_device(__func__, &dev);
    if (st == INFINI_STATUS_SUCCESS)
        st = infinirt__stream_resolve(stream, dev, __func__, &s);
    if (st == INFINI_STATUS_SUCCESS) {
        dev = s->dev;
        if (dev->plugin != e->dev->plugin)
            st = infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__,
                                "stream on %s:%d and event on %s:%d belong to different backends",
                                infinirtGetDeviceTypeName(dev->plugin->type), dev->index,
                                infinirtGetDeviceTypeName(e->dev->plugin->type), e->dev->index);
        else if (!INFINIRT__HAS_OP(dev->plugin, stream_wait_event))
            st = infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, __func__, "plugin %s does not support it",
                                dev->plugin->name);
        else {
            infinirt__stream_note_submit(s);
            st = dev->plugin->ops->stream_wait_event(dev->index, s->ps, e->pe);
            if (st != INFINI_STATUS_SUCCESS)
                infinirt__plugin_failed(st, dev, "stream_wait_event");
        }
        infinirt__stream_release(s);
    }
    infinirt__event_put(e);
    return st;
}

INFINIRT_API infiniStatus_t infinirtLaunchHostFunc(infinirtStream_t stream, infinirtHostFn_t fn, void *user_data)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (fn == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "fn is NULL");
    infinirt__device *dev = NULL;
    if (stream == NULL && (st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__stream *s = NULL;
    if ((st = infinirt__stream_resolve(stream, dev, __func__, &s)) != INFINI_STATUS_SUCCESS)
        return st;
    dev = s->dev;
    if (!INFINIRT__HAS_OP(dev->plugin, launch_host_func)) {
        st = infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, __func__, "plugin %s does not support host functions",
                            dev->plugin->name);
    } else {
        infinirt__stream_note_submit(s);
        st = dev->plugin->ops->launch_host_func(dev->index, s->ps, fn, user_data);
        if (st != INFINI_STATUS_SUCCESS)
            infinirt__plugin_failed(st, dev, "launch_host_func");
    }
    infinirt__stream_release(s);
    return st;
}

/* ------------------------------------------------------------- event API */

INFINIRT_API infiniStatus_t infinirtEventCreateWithFlags(infinirtEvent_t *event_ptr, uint32_t flags)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (event_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "event_ptr is NULL");
    if (flags & ~(uint32_t)(INFINIRT_EVENT_DISABLE_TIMING | INFINIRT_EVENT_BLOCKING_SYNC))
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "unknown flag bits 0x%x", flags);
    infinirt__device *dev;
    if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    REQUIRE_OP(dev, event_create, __func__);
    infinirt__event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory for an event handle");
    st = dev->plugin->ops->event_create(dev->index, flags, &e->pe);
    if (st != INFINI_STATUS_SUCCESS) {
        free(e);
        return infinirt__plugin_failed(st, dev, "event_create");
    }
    e->magic = INFINIRT__EVENT_MAGIC;
    e->dev = dev;
    e->flags = flags;
    atomic_init(&e->refs, 1);
    if (infinirt__handle_register(e) != 0) {
        infinirt__event_put(e);
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory to register the event");
    }
    *event_ptr = e;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtEventCreate(infinirtEvent_t *event_ptr)
{
    return infinirtEventCreateWithFlags(event_ptr, INFINIRT_EVENT_DEFAULT);
}

INFINIRT_API infiniStatus_t infinirtEventDestroy(infinirtEvent_t event)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (event == NULL || infinirt__handle_unregister(event) != 0)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    infinirt__event_put((infinirt__event *)event);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtEventRecord(infinirtEvent_t event, infinirtStream_t stream)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__event *e = infinirt__event_get(event);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    infinirt__stream *s = NULL;
    if ((st = infinirt__stream_resolve(stream, e->dev, __func__, &s)) == INFINI_STATUS_SUCCESS) {
        if (s->dev != e->dev) {
            st = infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event of %s:%d recorded on a stream of %s:%d",
                                infinirtGetDeviceTypeName(e->dev->plugin->type), e->dev->index,
                                infinirtGetDeviceTypeName(s->dev->plugin->type), s->dev->index);
        } else if (!INFINIRT__HAS_OP(e->dev->plugin, event_record)) {
            st = infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, __func__, "plugin %s does not support events",
                                e->dev->plugin->name);
        } else {
            st = e->dev->plugin->ops->event_record(e->dev->index, e->pe, s->ps);
            if (st != INFINI_STATUS_SUCCESS)
                infinirt__plugin_failed(st, e->dev, "event_record");
        }
        infinirt__stream_release(s);
    }
    infinirt__event_put(e);
    return st;
}

INFINIRT_API infiniStatus_t infinirtEventQuery(infinirtEvent_t event, infinirtEventStatus_t *status_ptr)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (status_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "status_ptr is NULL");
    infinirt__event *e = infinirt__event_get(event);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    int done = 0;
    if (!INFINIRT__HAS_OP(e->dev->plugin, event_query))
        st = infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, __func__, "plugin %s does not support events",
                            e->dev->plugin->name);
    else if ((st = e->dev->plugin->ops->event_query(e->dev->index, e->pe, &done)) != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, e->dev, "event_query");
    else
        *status_ptr = done ? INFINIRT_EVENT_COMPLETE : INFINIRT_EVENT_NOT_READY;
    infinirt__event_put(e);
    return st;
}

INFINIRT_API infiniStatus_t infinirtEventSynchronize(infinirtEvent_t event)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__event *e = infinirt__event_get(event);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    if (!INFINIRT__HAS_OP(e->dev->plugin, event_synchronize))
        st = infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, __func__, "plugin %s does not support events",
                            e->dev->plugin->name);
    else if ((st = e->dev->plugin->ops->event_synchronize(e->dev->index, e->pe)) != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, e->dev, "event_synchronize");
    infinirt__event_put(e);
    return st;
}

INFINIRT_API infiniStatus_t infinirtEventElapsedTime(float *ms_ptr, infinirtEvent_t start, infinirtEvent_t end)
{
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
    } else if (!INFINIRT__HAS_OP(a->dev->plugin, event_elapsed_time)) {
        st = infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, __func__, "plugin %s does not support event timing",
                            a->dev->plugin->name);
    } else {
        float ms = 0;
        st = a->dev->plugin->ops->event_elapsed_time(a->dev->index, &ms, a->pe, b->pe);
        if (st == INFINI_STATUS_SUCCESS)
            *ms_ptr = ms;
        else if (st == INFINI_STATUS_NOT_READY || st == INFINI_STATUS_INVALID_STATE)
            infinirt__fail(st, __func__, "%s", st == INFINI_STATUS_NOT_READY ? "an event has not completed"
                                                                              : "an event was never recorded");
        else
            infinirt__plugin_failed(st, a->dev, "event_elapsed_time");
    }
    infinirt__event_put(a);
    infinirt__event_put(b);
    return st;
}
