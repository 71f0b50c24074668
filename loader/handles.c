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
 * The value the application holds is the backend's native object (a
 * CUstream, a cl_command_queue; the plugin object where the plugin has no
 * native one), so kernels of any library can use it.  Two structures turn
 * that value back into the loader's object:
 *
 *  - slots: each object has a slot holding one 64-bit word
 *    (generation:31 | live:1 | refs:32) next to the object pointer and the
 *    handle value.  Taking a reference is one compare-and-swap on that word,
 *    so threads that work on different streams never share a cache line.
 *    Slots live in chunks that are never freed; a slot reused for another
 *    object has a new generation.
 *  - a map per kind from handle value to (slot, generation): open
 *    addressing with linear probing, written under a lock, read with no
 *    lock.  A reader that finds the value checks, after taking the slot's
 *    reference, that the slot is live, of that generation and still holds
 *    that value; anything else (a reader racing with a writer that moved
 *    entries, a destroyed handle) sends it to the slow path, which looks
 *    again under the lock, where a miss is final.  Made-up, destroyed and
 *    wrong-kind values (each kind has its own map) therefore give NULL.
 *
 * The arrays the map outgrows are kept, not freed (a lock-free reader may
 * still be reading one): they add up to less than the final array.
 */
#define KIND_STREAM INFINIRT__KIND_STREAM
#define KIND_EVENT INFINIRT__KIND_EVENT
#define CHUNK_SLOTS 1024u
#define MAX_CHUNKS 4096u /* 4M live handles of each kind */

#define W_LIVE ((uint64_t)1 << 32)
#define W_GEN_SHIFT 33
#define W_REFS(w) ((uint32_t)(w))
#define W_GEN(w) ((uint32_t)((w) >> W_GEN_SHIFT))

typedef struct {
    _Alignas(64) _Atomic uint64_t word;
    void *obj;
    _Atomic uintptr_t key; /* the handle value, set before the slot goes live */
    uint32_t next_free;    /* free list link (index + 1), under the table lock */
} slot;

typedef struct {
    _Atomic uintptr_t key; /* 0 = empty */
    _Atomic uint64_t val;  /* generation << 32 | slot index */
} map_entry;

typedef struct map_array {
    size_t mask;
    struct map_array *retired; /* the array this one replaced, kept */
    map_entry e[];
} map_array;

typedef struct {
    _Atomic(slot *) chunks[MAX_CHUNKS];
    atomic_uint nchunks;
    pthread_mutex_t lock;          /* slot allocation, free list and every map write */
    uint32_t free_head, free_tail; /* index + 1; 0 = empty */
    _Atomic(map_array *) map;
    size_t map_live;
} table;

static table g_tables[INFINIRT__KINDS] = {
    [KIND_STREAM] = {.lock = PTHREAD_MUTEX_INITIALIZER},
    [KIND_EVENT] = {.lock = PTHREAD_MUTEX_INITIALIZER},
    [INFINIRT__KIND_GRAPH] = {.lock = PTHREAD_MUTEX_INITIALIZER},
    [INFINIRT__KIND_EXEC] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};

static slot *slot_at(table *t, uint32_t idx)
{
    uint32_t c = idx / CHUNK_SLOTS;
    if (c >= atomic_load_explicit(&t->nchunks, memory_order_acquire))
        return NULL;
    slot *chunk = atomic_load_explicit(&t->chunks[c], memory_order_acquire);
    return chunk ? &chunk[idx % CHUNK_SLOTS] : NULL;
}

static inline size_t map_hash(uintptr_t key, size_t mask)
{
    /* Fibonacci hashing: handle values are aligned addresses, whose low
     * bits say nothing. */
    uint64_t h = (uint64_t)key * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 20) & mask;
}

/* The entry for key, or NULL; caller holds t->lock. */
static map_entry *map_find_locked(table *t, uintptr_t key)
{
    map_array *a = atomic_load_explicit(&t->map, memory_order_relaxed);
    if (a == NULL)
        return NULL;
    for (size_t i = map_hash(key, a->mask), n = 0; n <= a->mask; i = (i + 1) & a->mask, n++) {
        uintptr_t k = atomic_load_explicit(&a->e[i].key, memory_order_relaxed);
        if (k == key)
            return &a->e[i];
        if (k == 0)
            return NULL;
    }
    return NULL;
}

static void map_place(map_array *a, uintptr_t key, uint64_t val)
{
    size_t i = map_hash(key, a->mask);
    while (atomic_load_explicit(&a->e[i].key, memory_order_relaxed) != 0)
        i = (i + 1) & a->mask;
    atomic_store_explicit(&a->e[i].val, val, memory_order_relaxed);
    atomic_store_explicit(&a->e[i].key, key, memory_order_release);
}

/* Add key -> val; caller holds t->lock.  Returns 0, -1 without memory, -2
 * when key is already there (a live handle has that value). */
static int map_insert_locked(table *t, uintptr_t key, uint64_t val)
{
    if (map_find_locked(t, key) != NULL)
        return -2;
    map_array *a = atomic_load_explicit(&t->map, memory_order_relaxed);
    if (a == NULL || (t->map_live + 1) * 2 > a->mask + 1) {
        size_t cap = a ? (a->mask + 1) * 2 : 64;
        map_array *b = calloc(1, sizeof *b + cap * sizeof b->e[0]);
        if (b == NULL)
            return -1;
        b->mask = cap - 1;
        b->retired = a;
        for (size_t i = 0; a != NULL && i <= a->mask; i++) {
            uintptr_t k = atomic_load_explicit(&a->e[i].key, memory_order_relaxed);
            if (k != 0)
                map_place(b, k, atomic_load_explicit(&a->e[i].val, memory_order_relaxed));
        }
        atomic_store_explicit(&t->map, b, memory_order_release);
        a = b;
    }
    map_place(a, key, val);
    t->map_live++;
    return 0;
}

/* Remove key if it maps to val; caller holds t->lock.  Later entries of the
 * probe run shift back into the hole, so no tombstones pile up. */
static void map_remove_locked(table *t, uintptr_t key, uint64_t val)
{
    map_entry *e = map_find_locked(t, key);
    if (e == NULL || atomic_load_explicit(&e->val, memory_order_relaxed) != val)
        return;
    map_array *a = atomic_load_explicit(&t->map, memory_order_relaxed);
    size_t i = (size_t)(e - a->e);
    for (size_t j = (i + 1) & a->mask;; j = (j + 1) & a->mask) {
        uintptr_t k = atomic_load_explicit(&a->e[j].key, memory_order_relaxed);
        if (k == 0)
            break;
        size_t h = map_hash(k, a->mask);
        /* The entry at j may fill the hole at i unless its home lies
         * cyclically in (i, j]. */
        bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (stays)
            continue;
        atomic_store_explicit(&a->e[i].val, atomic_load_explicit(&a->e[j].val, memory_order_relaxed),
                              memory_order_relaxed);
        atomic_store_explicit(&a->e[i].key, k, memory_order_release);
        i = j;
    }
    atomic_store_explicit(&a->e[i].key, 0, memory_order_release);
    t->map_live--;
}

/* Register obj under the handle value key (refs = 1, live).  Returns 0, -1
 * without memory, -2 when a live handle already has that value.  *slot_out
 * (the object's own slot field) is written before the handle becomes
 * live: a thread that guesses the value and destroys it at once must find
 * a complete object, or it would drop another slot's reference. */
static int handle_new(uint32_t kind, void *obj, uintptr_t key, uint32_t *slot_out)
{
    table *t = &g_tables[kind];
    pthread_mutex_lock(&t->lock);
    if (map_find_locked(t, key) != NULL) {
        pthread_mutex_unlock(&t->lock);
        return -2;
    }
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
            return -1;
        }
        slot *chunk = aligned_alloc(64, CHUNK_SLOTS * sizeof(slot));
        if (chunk == NULL) {
            pthread_mutex_unlock(&t->lock);
            return -1;
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
    uint64_t w = atomic_load(&sl->word);
    uint32_t gen = (W_GEN(w) + 1) & 0x7fffffffu;
    if (map_insert_locked(t, key, ((uint64_t)gen << 32) | idx) != 0) {
        /* No memory for the map: the slot goes back to the front. */
        sl->next_free = t->free_head;
        t->free_head = idx + 1;
        if (t->free_tail == 0)
            t->free_tail = idx + 1;
        pthread_mutex_unlock(&t->lock);
        return -1;
    }
    sl->obj = obj;
    atomic_store_explicit(&sl->key, key, memory_order_relaxed);
    *slot_out = idx;
    atomic_store_explicit(&sl->word, ((uint64_t)gen << W_GEN_SHIFT) | W_LIVE | 1u, memory_order_release);
    pthread_mutex_unlock(&t->lock);
    return 0;
}

/* Take a reference on the slot named by val if it is live and of that
 * generation.  Returns the slot, or NULL. */
static slot *slot_ref(table *t, uint64_t val)
{
    slot *sl = slot_at(t, (uint32_t)val);
    if (sl == NULL)
        return NULL;
    uint32_t gen = (uint32_t)(val >> 32);
    uint64_t w = atomic_load_explicit(&sl->word, memory_order_acquire);
    do {
        if (W_GEN(w) != gen || !(w & W_LIVE) || W_REFS(w) == 0)
            return NULL;
    } while (
        !atomic_compare_exchange_weak_explicit(&sl->word, &w, w + 1, memory_order_acquire, memory_order_acquire));
    return sl;
}

static void put_obj(uint32_t kind, void *obj);

/* The look-up under the lock, where entries do not move: final.  (An entry
 * and its slot agree on the key there: both are written under the lock.) */
static slot *handle_find_slow(table *t, uint32_t kind, uintptr_t key)
{
    pthread_mutex_lock(&t->lock);
    map_entry *e = map_find_locked(t, key);
    slot *sl = e ? slot_ref(t, atomic_load_explicit(&e->val, memory_order_relaxed)) : NULL;
    pthread_mutex_unlock(&t->lock);
    if (sl != NULL && atomic_load_explicit(&sl->key, memory_order_relaxed) != key) {
        put_obj(kind, sl->obj);
        return NULL;
    }
    return sl;
}

static slot *handle_find(uint32_t kind, const void *h)
{
    uintptr_t key = (uintptr_t)h;
    if (key == 0)
        return NULL;
    table *t = &g_tables[kind];
    map_array *a = atomic_load_explicit(&t->map, memory_order_acquire);
    if (a == NULL)
        return NULL;
    for (size_t i = map_hash(key, a->mask), n = 0; n <= a->mask; i = (i + 1) & a->mask, n++) {
        uintptr_t k = atomic_load_explicit(&a->e[i].key, memory_order_acquire);
        if (k == key) {
            slot *sl = slot_ref(t, atomic_load_explicit(&a->e[i].val, memory_order_acquire));
            if (sl != NULL && atomic_load_explicit(&sl->key, memory_order_relaxed) == key)
                return sl;
            /* A writer moved entries under us, or h was destroyed: our
             * reference (maybe on another handle's slot) goes the normal
             * way, which frees that object if it was its last. */
            if (sl != NULL)
                put_obj(kind, sl->obj);
            break;
        }
        if (k == 0)
            break;
    }
    return handle_find_slow(t, kind, key);
}

/* Take a reference if h names a live object of this kind. */
static void *handle_get(const void *h, uint32_t kind)
{
    slot *sl = handle_find(kind, h);
    return sl ? sl->obj : NULL;
}

/* Clear the live bit and drop the value from the map: later lookups fail.
 * The caller holds a reference (from handle_get).  Returns 0, or -1 if h
 * was not live (another thread destroyed it first). */
static int handle_kill(const void *h, uint32_t kind, uint32_t idx)
{
    table *t = &g_tables[kind];
    slot *sl = slot_at(t, idx);
    uint64_t w = atomic_load(&sl->word);
    do {
        if (!(w & W_LIVE))
            return -1;
    } while (!atomic_compare_exchange_weak(&sl->word, &w, w & ~W_LIVE));
    pthread_mutex_lock(&t->lock);
    map_remove_locked(t, (uintptr_t)h, ((uint64_t)W_GEN(w) << 32) | idx);
    pthread_mutex_unlock(&t->lock);
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
    atomic_store_explicit(&sl->key, 0, memory_order_relaxed);
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

static void put_obj(uint32_t kind, void *obj)
{
    if (kind == KIND_STREAM)
        infinirt__stream_put(obj);
    else if (kind == KIND_EVENT)
        infinirt__event_put(obj);
    else
        infinirt__gobj_put(kind, obj);
}

/* The registry for the other kinds (graphs, executable graphs). */
int infinirt__handle_register(uint32_t kind, void *obj, uintptr_t key, uint32_t *slot_out)
{
    return handle_new(kind, obj, key, slot_out);
}

void *infinirt__handle_get(uint32_t kind, const void *h)
{
    return handle_get(h, kind);
}

int infinirt__handle_kill(uint32_t kind, const void *h, uint32_t idx)
{
    return handle_kill(h, kind, idx);
}

void *infinirt__handle_drop(uint32_t kind, uint32_t idx)
{
    return handle_drop(kind, idx);
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

void infinirt__stream_note_synced(infinirt__stream *s, uint_fast64_t seen)
{
    infinirt__raise(&s->synced, seen);
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

static const char *register_error(int rc)
{
    return rc == -2 ? "the backend gave a handle value that a live handle already has"
                    : "no memory to register the handle";
}

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
     * value) and free s: nothing of s is read after handle_new. */
    void *native = s->native;
    int rc = handle_new(KIND_STREAM, s, (uintptr_t)native, &s->slot);
    if (rc != 0) {
        stream_unlink(s);
        ops->stream_destroy(dev->index, s->ps);
        free(s);
        if (rc == -2 && how.native != NULL)
            return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "native stream %p is already an infinirt stream",
                                  how.native);
        return infinirt__fail(rc == -2 ? INFINI_STATUS_INTERNAL_ERROR : INFINI_STATUS_OUT_OF_MEMORY, fn, "%s",
                              register_error(rc));
    }
    *out = (infinirtStream_t)native;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtStreamCreateWithFlags(infinirtStream_t *stream_ptr, uint32_t flags)
{
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
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "stream %p is not a live stream", stream);
    *native = s->native;
    infinirt__stream_put(s);
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
    if (s != NULL && infinirt__stream_capture(s) != NULL &&
        (st = infinirt__capture_forbid(s, __func__)) != INFINI_STATUS_SUCCESS) {
        infinirt__stream_put(s); /* a capturing stream is not destroyed */
        return st;
    }
    if (s == NULL || handle_kill(stream, KIND_STREAM, s->slot) != 0) {
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
    if (__builtin_expect(infinirt__stream_capture(s) != NULL, 0) &&
        (st = infinirt__capture_forbid(s, __func__)) != INFINI_STATUS_SUCCESS) {
        infinirt__stream_put(s);
        return st;
    }
    uint_fast64_t seen = atomic_load_explicit(&s->submitted, memory_order_acquire);
    st = dev->plugin->ops->stream_synchronize(dev->index, s->ps);
    if (st == INFINI_STATUS_SUCCESS)
        infinirt__stream_note_synced(s, seen);
    else
        infinirt__plugin_failed(st, dev, "stream_synchronize");
    infinirt__stream_put(s);
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
            bool recorded = false;
            if (__builtin_expect(infinirt__stream_capture(s) != NULL ||
                                     atomic_load_explicit(&e->captured, memory_order_acquire) != NULL,
                                 0))
                st = infinirt__capture_wait(s, e, __func__, &recorded);
            if (st == INFINI_STATUS_SUCCESS && !recorded) {
                st = dev->plugin->ops->stream_wait_event(dev->index, s->ps, e->pe);
                infinirt__stream_note_submit(s);
                if (st != INFINI_STATUS_SUCCESS)
                    infinirt__plugin_failed(st, dev, "stream_wait_event");
            }
        }
        infinirt__stream_put(s);
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
    if (__builtin_expect(infinirt__stream_capture(s) != NULL, 0)) {
        /* Replayed through the plugin's entry: refused now, as it would be
         * eagerly, rather than at every launch. */
        if (!INFINIRT__HAS(dev->plugin, launch_host_func)) {
            infinirt__stream_put(s);
            return infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, __func__,
                                  "the %s backend (plugin %s) has no host functions, so none can be captured",
                                  infinirtGetDeviceTypeName(dev->plugin->type), dev->plugin->name);
        }
        bool recorded = false;
        infinirt__gop op = {.kind = INFINIRT__GOP_HOSTFN, .fn = fn, .ud = user_data};
        st = infinirt__capture_op(s, &op, __func__, &recorded);
        if (st != INFINI_STATUS_SUCCESS || recorded) {
            infinirt__stream_put(s);
            return st;
        }
    }
    st = dev->plugin->ops->launch_host_func(dev->index, s->ps, fn, user_data);
    infinirt__stream_note_submit(s);
    if (st != INFINI_STATUS_SUCCESS)
        infinirt__plugin_failed(st, dev, "launch_host_func");
    infinirt__stream_put(s);
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
    int rc = handle_new(KIND_EVENT, e, (uintptr_t)native, &e->slot);
    if (rc != 0) {
        dev->plugin->ops->event_destroy(dev->index, e->pe);
        free(e);
        return infinirt__fail(rc == -2 ? INFINI_STATUS_INTERNAL_ERROR : INFINI_STATUS_OUT_OF_MEMORY, __func__, "%s",
                              register_error(rc));
    }
    *event_ptr = (infinirtEvent_t)native;
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
    if (e == NULL || handle_kill(event, KIND_EVENT, e->slot) != 0) {
        infinirt__event_put(e);
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "event %p is not a live event", event);
    }
    infinirt__event_put(e);
    infinirt__event_put(e);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtEventGetNativeHandle(infinirtEvent_t event, void **native)
{
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
            bool recorded = false;
            if (__builtin_expect(infinirt__stream_capture(s) != NULL ||
                                     atomic_load_explicit(&e->captured, memory_order_acquire) != NULL,
                                 0))
                st = infinirt__capture_event_record(e, s, __func__, &recorded);
            if (st == INFINI_STATUS_SUCCESS && !recorded) {
                st = e->dev->plugin->ops->event_record(e->dev->index, e->pe, s->ps);
                if (st != INFINI_STATUS_SUCCESS)
                    infinirt__plugin_failed(st, e->dev, "event_record");
            }
        }
        infinirt__stream_put(s);
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
    if (__builtin_expect(atomic_load_explicit(&e->captured, memory_order_acquire) != NULL, 0) &&
        (st = infinirt__capture_event_forbid(e, __func__)) != INFINI_STATUS_SUCCESS) {
        infinirt__event_put(e);
        return st;
    }
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
    if (__builtin_expect(atomic_load_explicit(&e->captured, memory_order_acquire) != NULL, 0) &&
        (st = infinirt__capture_event_forbid(e, __func__)) != INFINI_STATUS_SUCCESS) {
        infinirt__event_put(e);
        return st;
    }
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
