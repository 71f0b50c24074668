/*
 * handles.c - loader handles for streams and events, and the stream and
 * event API.
 *
 * The application only ever holds loader handles.  Each knows its owning
 * device, so a call reaches that device's plugin whatever the current device
 * is.  A destroyed or made-up handle is rejected with BAD_PARAM instead of
 * being dereferenced, and a reference count keeps a handle's object (and its
 * plugin object) alive while another thread is still inside a call on it.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- the registry */

/*
 * Handles are not pointers: a handle encodes (generation, slot index, kind),
 * and each slot holds one 64-bit word (generation:31 | live:1 | refs:32)
 * next to the object pointer.  Looking a handle up is a bounds check and one
 * compare-and-swap on that slot's word, with no lock, so threads that work
 * on different streams never touch a shared cache line.  A destroyed handle
 * stays invalid even after its slot is reused, because the slot's
 * generation has moved on.  Slots live in chunks that are never freed.
 */
#define KIND_STREAM 1u
#define KIND_EVENT 2u
#define CHUNK_SLOTS 1024u
#define MAX_CHUNKS 4096u /* 4M live handles of each kind */

#define W_LIVE ((uint64_t)1 << 32)
#define W_GEN_SHIFT 33
#define W_REFS(w) ((uint32_t)(w))
#define W_GEN(w) ((uint32_t)((w) >> W_GEN_SHIFT))

typedef struct {
    _Alignas(64) _Atomic uint64_t word;
    void *obj;
    uint32_t next_free; /* free list link (index + 1), under the table lock */
} slot;

typedef struct {
    _Atomic(slot *) chunks[MAX_CHUNKS];
    atomic_uint nchunks;
    pthread_mutex_t lock; /* allocation and free list only */
    uint32_t free_head, free_tail; /* index + 1; 0 = empty */
} table;

static table g_tables[3] = {
    [KIND_STREAM] = {.lock = PTHREAD_MUTEX_INITIALIZER},
    [KIND_EVENT] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};

static slot *slot_at(table *t, uint32_t idx)
{
    uint32_t c = idx / CHUNK_SLOTS;
    if (c >= atomic_load_explicit(&t->nchunks, memory_order_acquire))
        return NULL;
    slot *chunk = atomic_load_explicit(&t->chunks[c], memory_order_acquire);
    return chunk ? &chunk[idx % CHUNK_SLOTS] : NULL;
}

static uintptr_t encode(uint32_t kind, uint32_t idx, uint32_t gen)
{
    /* Bit 0 set keeps handles odd, so no real pointer is ever a handle. */
    return ((uintptr_t)gen << 32) | ((uintptr_t)idx << 3) | ((uintptr_t)kind << 1) | 1u;
}

/* Allocate a slot for obj (refs = 1, live).  Returns the handle, or 0.
 * *slot_out (the object's own slot field) is written before the handle
 * becomes live: a thread that guesses the handle and destroys it at once
 * must find a complete object, or it would drop another slot's reference. */
static uintptr_t handle_new(uint32_t kind, void *obj, uint32_t *slot_out)
{
    table *t = &g_tables[kind];
    pthread_mutex_lock(&t->lock);
    uint32_t idx;
    if (t->free_head != 0) {
        /* FIFO reuse: a slot rests as long as possible before it comes
         * back, which keeps generations from cycling fast. */
        idx = t->free_head - 1;
        slot *sl = slot_at(t, idx);
        t->free_head = sl->next_free;
        if (t->free_head == 0)
            t->free_tail = 0;
    } else {
        uint32_t n = atomic_load(&t->nchunks);
        if (n == MAX_CHUNKS) {
            pthread_mutex_unlock(&t->lock);
            return 0;
        }
        slot *chunk = aligned_alloc(64, CHUNK_SLOTS * sizeof(slot));
        if (chunk == NULL) {
            pthread_mutex_unlock(&t->lock);
            return 0;
        }
        memset(chunk, 0, CHUNK_SLOTS * sizeof(slot));
        atomic_store(&t->chunks[n], chunk);
        atomic_store_explicit(&t->nchunks, n + 1, memory_order_release);
        /* Slot 0 of the chunk is used now, the rest go to the free list. */
        for (uint32_t i = 1; i < CHUNK_SLOTS; i++) {
            uint32_t j = n * CHUNK_SLOTS + i;
            chunk[i].next_free = 0;
            if (t->free_tail != 0)
                slot_at(t, t->free_tail - 1)->next_free = j + 1;
            else
                t->free_head = j + 1;
            t->free_tail = j + 1;
        }
        idx = n * CHUNK_SLOTS;
    }
    slot *sl = slot_at(t, idx);
    sl->obj = obj;
    *slot_out = idx;
    uint64_t w = atomic_load(&sl->word);
    uint32_t gen = (W_GEN(w) + 1) & 0x7fffffffu;
    atomic_store_explicit(&sl->word, ((uint64_t)gen << W_GEN_SHIFT) | W_LIVE | 1u, memory_order_release);
    pthread_mutex_unlock(&t->lock);
    return encode(kind, idx, gen);
}

static slot *decode(const void *h, uint32_t kind, uint32_t *gen)
{
    uintptr_t v = (uintptr_t)h;
    if ((v & 1u) == 0 || ((v >> 1) & 3u) != kind)
        return NULL;
    *gen = (uint32_t)(v >> 32);
    return slot_at(&g_tables[kind], (uint32_t)(v & 0xffffffffu) >> 3);
}

/* Take a reference if h names a live object of this kind. */
static void *handle_get(const void *h, uint32_t kind)
{
    uint32_t gen;
    slot *sl = decode(h, kind, &gen);
    if (sl == NULL)
        return NULL;
    uint64_t w = atomic_load_explicit(&sl->word, memory_order_acquire);
    do {
        if (W_GEN(w) != gen || !(w & W_LIVE) || W_REFS(w) == 0)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&sl->word, &w, w + 1, memory_order_acquire,
                                                    memory_order_acquire));
    return sl->obj;
}

/* Clear the live bit: later lookups fail.  Returns 0, or -1 if h was not
 * live (already destroyed, or never a handle). */
static int handle_kill(const void *h, uint32_t kind)
{
    uint32_t gen;
    slot *sl = decode(h, kind, &gen);
    if (sl == NULL)
        return -1;
    uint64_t w = atomic_load(&sl->word);
    do {
        if (W_GEN(w) != gen || !(w & W_LIVE))
            return -1;
    } while (!atomic_compare_exchange_weak(&sl->word, &w, w & ~W_LIVE));
    return 0;
}

/* Drop a reference; returns the object when it was the last one (the slot
 * is then free for reuse), else NULL. */
static void *handle_drop(uint32_t kind, uint32_t idx)
{
    table *t = &g_tables[kind];
    slot *sl = slot_at(t, idx);
    uint64_t w = atomic_fetch_sub_explicit(&sl->word, 1, memory_order_acq_rel) - 1;
    if (W_REFS(w) != 0 || (w & W_LIVE))
        return NULL;
    void *obj = sl->obj;
    pthread_mutex_lock(&t->lock);
    sl->obj = NULL;
    sl->next_free = 0;
    if (t->free_tail != 0)
        slot_at(t, t->free_tail - 1)->next_free = idx + 1;
    else
        t->free_head = idx + 1;
    t->free_tail = idx + 1;
    pthread_mutex_unlock(&t->lock);
    return obj;
}

infinirt__stream *infinirt__stream_get(infinirtStream_t h)
{
    return handle_get(h, KIND_STREAM);
}

infinirt__event *infinirt__event_get(infinirtEvent_t h)
{
    return handle_get(h, KIND_EVENT);
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
    if (stream_drain(s) != INFINI_STATUS_SUCCESS) {
        INFINIRT__ERROR("%s:%d (plugin %s): a destroyed stream could not be drained; its cached memory is "
                        "kept out of use",
                        infinirtGetDeviceTypeName(dev->plugin->type), dev->index, dev->plugin->name);
        return;
    }
    infinirt__pool_stream_retired(dev->pool, s);
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

void infinirt__stream_put(infinirt__stream *s)
{
    if (s != NULL && !s->is_default && handle_drop(KIND_STREAM, s->slot) != NULL)
        stream_free(s);
}

void infinirt__event_put(infinirt__event *e)
{
    if (e != NULL && handle_drop(KIND_EVENT, e->slot) != NULL) {
        infinirt__device *dev = e->dev;
        infiniStatus_t st = dev->plugin->ops->event_destroy(dev->index, e->pe);
        if (st != INFINI_STATUS_SUCCESS)
            infinirt__plugin_failed(st, dev, "event_destroy");
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
    infinirt__raise(&s->synced, seen);
}

/* What each stream had queued when a device synchronize began: only that
 * much is known complete when it returns (work queued meanwhile, by another
 * thread, may still run).  Streams are told apart by id, not address. */
typedef struct {
    infinirt__stream *s;
    uint64_t id;
    uint_fast64_t seen;
} sync_snap;

/* Snapshot dev's streams (caller holds dev->lock); NULL when out of memory
 * (then no stream is marked: only correctness-neutral speed is lost). */
static sync_snap *snap_streams(infinirt__device *dev, size_t *n)
{
    size_t k = 1;
    for (infinirt__stream *s = dev->streams; s != NULL; s = s->next)
        k++;
    sync_snap *a = malloc(k * sizeof *a);
    if (a == NULL)
        return NULL;
    a[0] = (sync_snap){dev->default_stream, 0, atomic_load_explicit(&dev->default_stream->submitted,
                                                                     memory_order_acquire)};
    size_t i = 1;
    for (infinirt__stream *s = dev->streams; s != NULL; s = s->next, i++)
        a[i] = (sync_snap){s, s->id, atomic_load_explicit(&s->submitted, memory_order_acquire)};
    *n = k;
    return a;
}

/* Mark the snapshot's streams that still exist synced up to their
 * snapshot (caller holds dev->lock).  Streams keep their relative order in
 * the list (new ones go to the front), so one forward scan finds them. */
static void mark_snapshot(infinirt__device *dev, const sync_snap *a, size_t n)
{
    infinirt__stream_note_synced(dev->default_stream, a[0].seen);
    size_t i = 1;
    for (infinirt__stream *s = dev->streams; s != NULL && i < n; s = s->next) {
        for (size_t j = i; j < n; j++) {
            if (a[j].s == s && a[j].id == s->id) {
                infinirt__stream_note_synced(s, a[j].seen);
                i = j + 1;
                break;
            }
        }
    }
}

static uint64_t next_stream_id(void)
{
    static atomic_uint_fast64_t ids;
    return (uint64_t)atomic_fetch_add(&ids, 1) + 1;
}

infiniStatus_t infinirt__device_sync(infinirt__device *dev)
{
    uint_fast64_t seen = atomic_load(&dev->submitted);
    infiniStatus_t st;
    if (INFINIRT__HAS(dev->plugin, device_synchronize)) {
        size_t n = 0;
        pthread_mutex_lock(&dev->lock);
        sync_snap *snap = snap_streams(dev, &n);
        pthread_mutex_unlock(&dev->lock);
        st = dev->plugin->ops->device_synchronize(dev->index);
        if (st != INFINI_STATUS_SUCCESS) {
            free(snap);
            return infinirt__plugin_failed(st, dev, "device_synchronize");
        }
        if (snap != NULL) {
            pthread_mutex_lock(&dev->lock);
            mark_snapshot(dev, snap, n);
            pthread_mutex_unlock(&dev->lock);
            free(snap);
        }
    } else {
        /* Each stream in turn, with no lock held (a synchronize may take
         * long, and the allocator's fence paths need dev->lock): the
         * streams are pinned so none is freed meanwhile. */
        size_t n = 0;
        pthread_mutex_lock(&dev->lock);
        sync_snap *snap = snap_streams(dev, &n);
        for (size_t i = 1; snap != NULL && i < n; i++)
            atomic_fetch_add(&snap[i].s->pins, 1);
        pthread_mutex_unlock(&dev->lock);
        if (snap == NULL)
            return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, "infinirtDeviceSynchronize",
                                  "no memory to list the streams of %s:%d",
                                  infinirtGetDeviceTypeName(dev->plugin->type), dev->index);
        st = INFINI_STATUS_SUCCESS;
        for (size_t i = 0; i < n; i++) {
            if (st == INFINI_STATUS_SUCCESS) {
                st = dev->plugin->ops->stream_synchronize(dev->index, snap[i].s->ps);
                if (st == INFINI_STATUS_SUCCESS)
                    infinirt__stream_note_synced(snap[i].s, snap[i].seen);
            }
            if (i > 0)
                atomic_fetch_sub(&snap[i].s->pins, 1);
        }
        free(snap);
        if (st != INFINI_STATUS_SUCCESS)
            return infinirt__plugin_failed(st, dev, "stream_synchronize (for a device synchronize)");
    }
    /* Everything queued on the device before `seen` was read has completed. */
    infinirt__device_note_idle(dev, seen);
    return INFINI_STATUS_SUCCESS;
}

/* ------------------------------------------------------------ stream API */

INFINIRT_API infiniStatus_t infinirtStreamCreate(infinirtStream_t *stream_ptr)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stream_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "stream_ptr is NULL");
    infinirt__device *dev = NULL;
    if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory for a stream handle");
    st = dev->plugin->ops->stream_create(dev->index, &s->ps);
    if (st != INFINI_STATUS_SUCCESS) {
        free(s);
        return infinirt__plugin_failed(st, dev, "stream_create");
    }
    s->dev = dev;
    s->id = next_stream_id();
    /* On the device's list before the handle is live: a guessed handle
     * destroyed at once unlinks a linked stream. */
    pthread_mutex_lock(&dev->lock);
    s->next = dev->streams;
    if (dev->streams)
        dev->streams->prev = s;
    dev->streams = s;
    pthread_mutex_unlock(&dev->lock);
    uintptr_t h = handle_new(KIND_STREAM, s, &s->slot);
    if (h == 0) {
        stream_unlink(s);
        dev->plugin->ops->stream_destroy(dev->index, s->ps);
        free(s);
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory to register the stream");
    }
    *stream_ptr = (infinirtStream_t)h;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtStreamDestroy(infinirtStream_t stream)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stream == NULL)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "the default (NULL) stream cannot be destroyed");
    infinirt__stream *s = infinirt__stream_get(stream);
    if (s == NULL || handle_kill(stream, KIND_STREAM) != 0) {
        infinirt__stream_put(s);
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "stream %p is not a live stream", stream);
    }
    /* The call waits for the stream's work (as documented) even when
     * another thread is still inside a call on it and so holds the last
     * reference; the plugin stream is destroyed when that user lets go. */
    st = stream_drain(s);
    /* Drop our reference and the handle's own. */
    infinirt__stream_put(s);
    infinirt__stream_put(s);
    return st;
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
    uint_fast64_t seen = atomic_load_explicit(&s->submitted, memory_order_acquire);
    st = dev->plugin->ops->stream_synchronize(dev->index, s->ps);
    if (st == INFINI_STATUS_SUCCESS)
        infinirt__stream_note_synced(s, seen);
    else
        infinirt__plugin_failed(st, dev, "stream_synchronize");
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
        else {
            st = dev->plugin->ops->stream_wait_event(dev->index, s->ps, e->pe);
            infinirt__stream_note_submit(s);
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
    st = dev->plugin->ops->launch_host_func(dev->index, s->ps, fn, user_data);
    infinirt__stream_note_submit(s);
    if (st != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, dev, "launch_host_func");
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
    infinirt__device *dev = NULL;
    if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory for an event handle");
    st = dev->plugin->ops->event_create(dev->index, flags, &e->pe);
    if (st != INFINI_STATUS_SUCCESS) {
        free(e);
        return infinirt__plugin_failed(st, dev, "event_create");
    }
    e->dev = dev;
    e->flags = flags;
    uintptr_t h = handle_new(KIND_EVENT, e, &e->slot);
    if (h == 0) {
        dev->plugin->ops->event_destroy(dev->index, e->pe);
        free(e);
        return infinirt__fail(INFINI_STATUS_OUT_OF_MEMORY, __func__, "no memory to register the event");
    }
    *event_ptr = (infinirtEvent_t)h;
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
    infinirt__event *e = infinirt__event_get(event);
    if (e == NULL || handle_kill(event, KIND_EVENT) != 0) {
        infinirt__event_put(e);
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    }
    infinirt__event_put(e);
    infinirt__event_put(e);
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
    if ((st = e->dev->plugin->ops->event_query(e->dev->index, e->pe, &done)) != INFINI_STATUS_SUCCESS)
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
    if ((st = e->dev->plugin->ops->event_synchronize(e->dev->index, e->pe)) != INFINI_STATUS_SUCCESS)
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
