/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handles.c - the handle registry: what turns a handle value the
 * application holds (a stream, an event, a graph, an executable graph) back
 * into the loader's object, and keeps that object alive while a call uses
 * it.  The stream and event API are stream.c and event.c.
 *
 * The application holds the backend's native value (see "the registry"
 * below); the registry maps it back to the loader's object, which knows its
 * owning device, so a call reaches that device's plugin whatever the
 * current device is.  A destroyed or made-up handle is rejected with BAD_PARAM instead of
 * being dereferenced, and a reference count keeps a handle's object (and its
 * plugin object) alive while another thread is still inside a call on it.
 */
#define _GNU_SOURCE
#include "internal.h"

#include "alloc_solo.h"

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
 * The map's array doubles when it is half full and shrinks to a quarter
 * when an eighth full, so a look-up touches memory in proportion to the
 * handles live now, not to the most there ever were (after 20000 streams,
 * 1000 took turns over a 1 MB array).  An array the map leaves is kept, not
 * freed (a lock-free reader may still be reading one), and used again the
 * next time the map needs that size: emptied and filled again under a
 * reader that may still be in it, who checks what it finds there as
 * always.  So the map keeps at most one array of each size: less than twice
 * the largest together.
 */
#define KIND_STREAM INFINIRT__KIND_STREAM
#define KIND_EVENT INFINIRT__KIND_EVENT
#define MAP_MIN 64u /* the map's smallest array, in entries */
#define CHUNK_SLOTS INFINIRT__HCHUNK_SLOTS
#define MAX_CHUNKS INFINIRT__HMAX_CHUNKS

#define W_LIVE ((uint64_t)1 << 32)
#define W_GEN_SHIFT 33
#define W_REFS(w) ((uint32_t)(w))
#define W_GEN(w) ((uint32_t)((w) >> W_GEN_SHIFT))

typedef infinirt__hslot slot;           /* handles.h */
typedef infinirt__hmap_entry map_entry; /* handles.h */
typedef infinirt__hmap map_array;       /* handles.h */

/* A kind's registry: what a look-up with no lock reads (its map and
 * chunks, handles.h) and the rest. */
typedef struct {
    infinirt__hindex *ix; /* infinirt__handle_index[kind] */
    atomic_uint nchunks;
    infinirt__solo_lock lock;      /* slot allocation, free list and every map write */
    uint32_t free_head, free_tail; /* index + 1; 0 = empty */
    size_t map_live;
    map_array *spare;                  /* arrays the map left, linked by `retired`: one of each size at most */
    uint32_t retired;                  /* slots of retired objects (index + 1, linked by next_free); 0 = none */
    infinirt__handle_free_fn *release; /* the kind's, set at the first retire */
} table;

/* This thread's recent look-ups (handles.h).  Only a hint: a
 * look-up that starts from it validates the slot exactly as one that
 * starts from the map does (slot_ref: live, that generation, a reference
 * taken; then the slot's key), so a hint left over from a destroyed
 * handle, or from a slot since reused, fails that check and the map
 * decides.  A slot that passes is live under that very value, and a value
 * has at most one live handle: the answer is the map's. */
_Thread_local __attribute__((tls_model("initial-exec"))) infinirt__handle_hint infinirt__tl_hint[INFINIRT__HINTS];
_Thread_local __attribute__((tls_model("initial-exec"))) unsigned infinirt__tl_hint_next;

#define hint_put infinirt__hint_put /* handles.h */

static inline void hint_set(uint32_t kind, uintptr_t key, uint64_t val, slot *sl)
{
    hint_put(kind, key, val, sl, false);
}

infinirt__hindex infinirt__handle_index[INFINIRT__KINDS];
/* Zero but for their index: every lock free, every table empty. */
static table g_tables[INFINIRT__KINDS] = {
    [0].ix = &infinirt__handle_index[0], [1].ix = &infinirt__handle_index[1], [2].ix = &infinirt__handle_index[2],
    [3].ix = &infinirt__handle_index[3], [4].ix = &infinirt__handle_index[4],
};
_Static_assert(INFINIRT__KINDS == 5, "g_tables names each kind's index");

static slot *slot_at(table *t, uint32_t idx)
{
    uint32_t c = idx / CHUNK_SLOTS;
    if (c >= atomic_load_explicit(&t->nchunks, memory_order_acquire))
        return NULL;
    slot *chunk = atomic_load_explicit(&t->ix->chunks[c], memory_order_acquire);
    return chunk ? &chunk[idx % CHUNK_SLOTS] : NULL;
}

/* The slot at an index this registry handed out (an object's own slot):
 * its chunk exists and stays, so no bounds check. */
static inline slot *slot_known(table *t, uint32_t idx)
{
    return &atomic_load_explicit(&t->ix->chunks[idx / CHUNK_SLOTS], memory_order_acquire)[idx % CHUNK_SLOTS];
}

#define map_hash infinirt__hmap_hash /* handles.h */

/* The entry for key, or NULL; caller holds t->lock. */
static map_entry *map_find_locked(table *t, uintptr_t key)
{
    map_array *a = atomic_load_explicit(&t->ix->map, memory_order_relaxed);
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

/* An empty array of cap entries: the spare of that size, emptied, or a
 * new one.  Caller holds t->lock. */
static map_array *map_array_get(table *t, size_t cap)
{
    for (map_array **pp = &t->spare; *pp != NULL; pp = &(*pp)->retired) {
        map_array *b = *pp;
        if (b->mask + 1 != cap)
            continue;
        *pp = b->retired;
        b->retired = NULL;
        for (size_t i = 0; i < cap; i++)
            atomic_store_explicit(&b->e[i].key, 0, memory_order_relaxed);
        return b;
    }
    map_array *b = calloc(1, sizeof *b + cap * sizeof b->e[0]);
    if (b != NULL)
        b->mask = cap - 1;
    return b;
}

/* Move the map into an array of cap entries; the one it leaves becomes a
 * spare.  Returns 0, or -1 without memory (the map as it was).  Caller
 * holds t->lock. */
static int map_resize_locked(table *t, size_t cap)
{
    map_array *a = atomic_load_explicit(&t->ix->map, memory_order_relaxed);
    map_array *b = map_array_get(t, cap);
    if (b == NULL)
        return -1;
    for (size_t i = 0; a != NULL && i <= a->mask; i++) {
        uintptr_t k = atomic_load_explicit(&a->e[i].key, memory_order_relaxed);
        if (k != 0)
            map_place(b, k, atomic_load_explicit(&a->e[i].val, memory_order_relaxed));
    }
    atomic_store_explicit(&t->ix->map, b, memory_order_release);
    if (a != NULL) {
        a->retired = t->spare;
        t->spare = a;
    }
    return 0;
}

/* Add key -> val; caller holds t->lock and has found no entry for key.
 * Returns 0, or -1 without memory. */
static int map_insert_locked(table *t, uintptr_t key, uint64_t val)
{
    map_array *a = atomic_load_explicit(&t->ix->map, memory_order_relaxed);
    if (a == NULL || (t->map_live + 1) * 2 > a->mask + 1) {
        if (map_resize_locked(t, a ? (a->mask + 1) * 2 : MAP_MIN) != 0)
            return -1;
        a = atomic_load_explicit(&t->ix->map, memory_order_relaxed);
    }
    map_place(a, key, val);
    t->map_live++;
    return 0;
}

/* Remove entry e (of t's current map); caller holds t->lock.  Later
 * entries of the probe run shift back into the hole, so no tombstones pile
 * up. */
static void map_remove_entry_locked(table *t, map_entry *e)
{
    map_array *a = atomic_load_explicit(&t->ix->map, memory_order_relaxed);
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
    /* An eighth full: a quarter of the size, a little under half full then
     * (without memory for it, the map stays as large). */
    size_t cap = a->mask + 1;
    if (cap > MAP_MIN && t->map_live * 8 < cap)
        (void)map_resize_locked(t, cap / 4 > MAP_MIN ? cap / 4 : MAP_MIN);
}

/* Remove key if it maps to val; caller holds t->lock. */
static void map_remove_locked(table *t, uintptr_t key, uint64_t val)
{
    map_entry *e = map_find_locked(t, key);
    if (e != NULL && atomic_load_explicit(&e->val, memory_order_relaxed) == val)
        map_remove_entry_locked(t, e);
}

/* Register obj under the handle value key (refs = 1, live).  Returns 0, -1
 * without memory, -2 when a live handle already has that value.  *slot_out
 * (the object's own slot field) is written before the handle becomes
 * live: a thread that guesses the value and destroys it at once must find
 * a complete object, or it would drop another slot's reference. */
static int handle_new(uint32_t kind, void *obj, uintptr_t key, uint32_t *slot_out)
{
    table *t = &g_tables[kind];
    uint64_t owner = infinirt__solo_id();
    infinirt__solo_lock_take(&t->lock);
    if (map_find_locked(t, key) != NULL) {
        infinirt__solo_lock_give(&t->lock);
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
            infinirt__solo_lock_give(&t->lock);
            return -1;
        }
        slot *chunk = aligned_alloc(64, CHUNK_SLOTS * sizeof(slot));
        if (chunk == NULL) {
            infinirt__solo_lock_give(&t->lock);
            return -1;
        }
        memset(chunk, 0, CHUNK_SLOTS * sizeof(slot));
        atomic_store(&t->ix->chunks[n], chunk);
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
        infinirt__solo_lock_give(&t->lock);
        return -1;
    }
    sl->obj = obj;
    atomic_store_explicit(&sl->key, key, memory_order_relaxed);
    atomic_store_explicit(&sl->owner, owner, memory_order_relaxed);
    *slot_out = idx;
    atomic_store_explicit(&sl->word, ((uint64_t)gen << W_GEN_SHIFT) | W_LIVE | 1u, memory_order_release);
    infinirt__solo_lock_give(&t->lock);
    /* The thread that makes a handle is the one likely to use it next. */
    hint_set(kind, key, ((uint64_t)gen << 32) | idx, sl);
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

/* ------------------------------------------------------------ borrows */

/*
 * A reference costs two read-modify-writes (slot_ref's CAS, handle_drop's
 * decrement), each a locked instruction: on the calls that do little else
 * (an inline stream's copy and synchronize, an event's record and query)
 * they are most of the time.  A call may instead *borrow* a handle: it
 * writes the slot into one of its thread's borrow cells, then checks the
 * slot is live.  No reference is taken; instead, whoever drops an
 * object's last reference looks at every thread's cells first, and a
 * borrowed object is *retired* (kept, with its slot) until no cell names
 * its slot any more.
 *
 * A borrower's write and its check form a store-then-load pair, which the
 * CPU may reorder; a releaser's last drop and its look at the cells form
 * the other.  Rather than a fence on the borrower's side (which costs as
 * much as the references), the releaser pays, with membarrier(2), and only
 * when it cannot know the answer itself.  A borrow is kept by
 *  - the handle's *owner*, the thread that made it (its id is in the
 *    slot): a release by the owner looks at its own cells only; any other
 *    thread's release first issues the barrier (alloc_solo.h), which makes
 *    the owner's cell visible or makes the owner's check see the handle
 *    dead, then looks at every cell;
 *  - any thread while it is the process's only participant (alloc_solo.h:
 *    the participants' word read before the cell is written and again
 *    after the check, unchanged); a thread that joins issues the barrier.
 * Other calls take a reference as before.  So a thread using the handles
 * it made pays no read-modify-write for them; destroying another thread's
 * handle (its last reference) costs a barrier: 1 us on the development VM
 * with the other threads idle, 15 us with one of them running.
 *
 * A stream's owner borrows through its thread's park (alloc_solo.h), a
 * cell that keeps the slot between calls, marked in use during one: the
 * same store-then-check, and a release treats a park in use as a cell
 * that names the slot.  An idle park holds nothing: the release empties
 * it (infinirt__solo_cell_held), and the owner's next borrow writes it
 * again before its check, as a cell.
 */
#define NO_BORROW (-1) /* a reference was taken instead */

/* How many objects are retired (see retire_locked), counted until they
 * are freed: a borrower that gives its cell back and then reads 0 knows
 * nothing waits for it. */
atomic_size_t infinirt__handle_nretired;
#define g_nretired infinirt__handle_nretired

/* Whether a thread borrows slot sl.  The caller is about to release sl's
 * object: it has dropped the last reference of a dead handle. */
static bool borrowed(const slot *sl)
{
    return infinirt__solo_cell_held(sl, atomic_load_explicit(&sl->owner, memory_order_relaxed));
}

static void slot_release_locked(table *t, slot *sl, uint32_t idx);

/* Slot idx's object is dead, without references, and borrowed: keep it,
 * and the slot, until no cell names the slot (reclaim).  Caller holds
 * t->lock. */
static void retire_locked(table *t, slot *sl, uint32_t idx, infinirt__handle_free_fn *release)
{
    t->release = release;
    sl->next_free = t->retired;
    t->retired = idx + 1;
    atomic_fetch_add(&g_nretired, 1);
}

/* Free the object retired with slot sl, if it is and no cell names sl
 * any more: only the object of that slot, so an object is freed by the
 * thread that let go of it last (the releaser, or the borrower when it
 * gives its cell back), as with references. */
__attribute__((noinline)) void infinirt__handle_reclaim(const void *sl)
{
    static const uint32_t kinds[] = {KIND_STREAM, KIND_EVENT};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        table *t = &g_tables[kinds[k]];
        void *obj = NULL;
        infinirt__handle_free_fn *release = NULL;
        infinirt__solo_lock_take(&t->lock);
        for (uint32_t *pp = &t->retired; *pp != 0;) {
            uint32_t idx = *pp - 1;
            slot *r = slot_known(t, idx);
            if (r == sl) {
                if (!borrowed(r)) {
                    *pp = r->next_free;
                    obj = r->obj;
                    release = t->release; /* set by the first retire, never changed */
                    slot_release_locked(t, r, idx);
                }
                break;
            }
            pp = &r->next_free;
        }
        infinirt__solo_lock_give(&t->lock);
        if (obj != NULL) {
            release(obj);
            atomic_fetch_sub(&g_nretired, 1);
            return;
        }
    }
}

/* Kinds a call may borrow (the others are never looked for in cells);
 * their drops bring their release. */
static inline bool borrowable(uint32_t kind, infinirt__handle_free_fn *release)
{
    return (kind == KIND_STREAM || kind == KIND_EVENT) && release != NULL;
}

static slot *handle_find(uint32_t kind, const void *h, infinirt__handle_put_fn *put);

/* The full borrow (handles.h has the inline one): a hint or the map, a
 * handle of another owner while the thread is alone, or a reference. */
void *infinirt__handle_borrow_slow(uint32_t kind, const void *h, infinirt__handle_put_fn *put, int *use)
{
    infinirt__solo_thread *p = &infinirt__tl_solo;
    uintptr_t key = (uintptr_t)h;
    if (__builtin_expect(key != 0 && p->depth < INFINIRT__SOLO_CELLS && infinirt__solo_joined() && p->id != 0, 1)) {
        uint64_t w0 = infinirt__solo_read();
        table *t = &g_tables[kind];
        const infinirt__handle_hint *hn = infinirt__hint_find(kind, key);
        uint64_t val;
        slot *sl;
        bool found = hn != NULL;
        if (found) {
            val = infinirt__hint_val(hn);
            sl = slot_known(t, (uint32_t)val);
        } else {
            found = infinirt__hmap_peek(kind, key, &val, &sl); /* handles.h */
        }
        /* Neither the owner nor alone: the reference path at once (both are
         * checked again below, after the cell is written). */
        if (found && (atomic_load_explicit(&sl->owner, memory_order_relaxed) == p->id || infinirt__solo_is_one(w0))) {
            int i = p->depth;
            atomic_store_explicit(&p->cell[i], sl, memory_order_relaxed);
            p->depth = i + 1;
            /* No fence: see "borrows" above.  Only the compiler is kept
             * from moving the check before the cell's store. */
            atomic_signal_fence(memory_order_seq_cst);
            uint64_t w = atomic_load_explicit(&sl->word, memory_order_acquire);
            /* Kept by the handle's owner, or by a thread alone since before
             * the cell was written (the participants' word unchanged). */
            if (W_GEN(w) == (uint32_t)(val >> 32) && (w & W_LIVE) && W_REFS(w) != 0 &&
                atomic_load_explicit(&sl->key, memory_order_relaxed) == key &&
                (atomic_load_explicit(&sl->owner, memory_order_relaxed) == p->id ||
                 (infinirt__solo_is_one(w0) && infinirt__solo_read() == w0))) {
                if (hn == NULL)
                    hint_put(kind, key, val, sl, true); /* looked for above */
                *use = i;
                return sl->obj;
            }
            infinirt__handle_return(i);
        }
    }
    *use = NO_BORROW;
    slot *sl = handle_find(kind, h, put);
    return sl ? sl->obj : NULL;
}

/* The look-up under the lock, where entries do not move: final.  (An entry
 * and its slot agree on the key there: both are written under the lock.) */
static slot *handle_find_slow(table *t, uint32_t kind, uintptr_t key, infinirt__handle_put_fn *put)
{
    infinirt__solo_lock_take(&t->lock);
    map_entry *e = map_find_locked(t, key);
    uint64_t val = e ? atomic_load_explicit(&e->val, memory_order_relaxed) : 0;
    slot *sl = e ? slot_ref(t, val) : NULL;
    infinirt__solo_lock_give(&t->lock);
    if (sl != NULL && atomic_load_explicit(&sl->key, memory_order_relaxed) != key) {
        put(kind, sl->obj);
        return NULL;
    }
    if (sl != NULL)
        hint_set(kind, key, val, sl);
    return sl;
}

static slot *handle_find(uint32_t kind, const void *h, infinirt__handle_put_fn *put)
{
    uintptr_t key = (uintptr_t)h;
    if (key == 0)
        return NULL;
    table *t = &g_tables[kind];
    const infinirt__handle_hint *hn = infinirt__hint_find(kind, key);
    if (hn != NULL) {
        slot *sl = slot_ref(t, infinirt__hint_val(hn));
        if (__builtin_expect(sl != NULL, 1)) {
            if (__builtin_expect(atomic_load_explicit(&sl->key, memory_order_relaxed) == key, 1))
                return sl;
            put(kind, sl->obj);
        }
        /* A stale hint (h destroyed, maybe made again): the map decides. */
    }
    uint64_t val;
    slot *seen; /* unused: slot_ref checks the index itself */
    if (infinirt__hmap_peek(kind, key, &val, &seen)) {
        slot *sl = slot_ref(t, val);
        if (sl != NULL && atomic_load_explicit(&sl->key, memory_order_relaxed) == key) {
            hint_set(kind, key, val, sl);
            return sl;
        }
        /* A writer moved entries under us, or h was destroyed: our
         * reference (maybe on another handle's slot) goes the normal way,
         * which frees that object if it was its last. */
        if (sl != NULL)
            put(kind, sl->obj);
    }
    /* Not found with no lock (maybe a writer was moving entries), or
     * found stale: the look-up under the lock decides. */
    return handle_find_slow(t, kind, key, put);
}

/* Take a reference if h names a live object of this kind; `put` drops a
 * reference taken on the way that turned out to be another handle's. */
static void *handle_get(const void *h, uint32_t kind, infinirt__handle_put_fn *put)
{
    slot *sl = handle_find(kind, h, put);
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
    infinirt__solo_lock_take(&t->lock);
    map_remove_locked(t, (uintptr_t)h, ((uint64_t)W_GEN(w) << 32) | idx);
    infinirt__solo_lock_give(&t->lock);
    return 0;
}

/* The slot at idx, dead and without references, goes to the back of the
 * free list; caller holds t->lock. */
static void slot_release_locked(table *t, slot *sl, uint32_t idx)
{
    sl->obj = NULL;
    atomic_store_explicit(&sl->key, 0, memory_order_relaxed);
    sl->next_free = 0;
    if (t->free_tail != 0)
        slot_at(t, t->free_tail - 1)->next_free = idx + 1;
    else
        t->free_head = idx + 1;
    t->free_tail = idx + 1;
}

/* The last reference of a dead handle is gone: its slot goes back. */
static __attribute__((noinline)) void *drop_last(uint32_t kind, table *t, slot *sl, uint32_t idx,
                                                 infinirt__handle_free_fn *release)
{
    void *obj = sl->obj;
    infinirt__solo_lock_take(&t->lock);
    if (borrowable(kind, release) && borrowed(sl)) {
        retire_locked(t, sl, idx, release);
        infinirt__solo_lock_give(&t->lock);
        infinirt__handle_reclaim(sl); /* the borrower may have let go before it could see the retire */
        return NULL;
    }
    slot_release_locked(t, sl, idx);
    infinirt__solo_lock_give(&t->lock);
    return obj;
}

/* Drop a reference; returns the object when it was the last one (the slot
 * is then free for reuse), else NULL. */
static inline void *handle_drop(uint32_t kind, uint32_t idx, infinirt__handle_free_fn *release)
{
    table *t = &g_tables[kind];
    slot *sl = slot_known(t, idx);
    uint64_t w = atomic_fetch_sub_explicit(&sl->word, 1, memory_order_acq_rel) - 1;
    if (__builtin_expect(W_REFS(w) != 0 || (w & W_LIVE), 1))
        return NULL;
    return drop_last(kind, t, sl, idx, release);
}

/* handle_kill and the drop of the handle's own reference in one section
 * under the table lock, without taking a reference first: what a destroy
 * that needs no reference meanwhile costs (EventDestroy).  Returns -1 when
 * h is not a live handle of this kind; else 0, with *last = the object
 * when that was its last reference (the slot is free again), or NULL when
 * a thread inside a call on it still holds one (its drop returns it). */
static int handle_destroy(uint32_t kind, const void *h, void **last, infinirt__handle_free_fn *release)
{
    table *t = &g_tables[kind];
    uintptr_t key = (uintptr_t)h;
    *last = NULL;
    if (key == 0)
        return -1;
    infinirt__solo_lock_take(&t->lock);
    map_entry *e = map_find_locked(t, key);
    uint64_t val = e != NULL ? atomic_load_explicit(&e->val, memory_order_relaxed) : 0;
    slot *sl = e != NULL ? slot_at(t, (uint32_t)val) : NULL;
    uint64_t w = sl != NULL ? atomic_load(&sl->word) : 0;
    do {
        /* Not live: another thread's destroy cleared it and has yet to take
         * the lock to remove the entry. */
        if (sl == NULL || W_GEN(w) != (uint32_t)(val >> 32) || !(w & W_LIVE) || W_REFS(w) == 0) {
            infinirt__solo_lock_give(&t->lock);
            return -1;
        }
    } while (!atomic_compare_exchange_weak(&sl->word, &w, (w & ~W_LIVE) - 1));
    map_remove_entry_locked(t, e); /* entries move only under the lock: e is still key's */
    bool kept = false;
    if (W_REFS(w) == 1) {
        if (borrowable(kind, release) && borrowed(sl)) {
            retire_locked(t, sl, (uint32_t)val, release);
            kept = true;
        } else {
            *last = sl->obj;
            slot_release_locked(t, sl, (uint32_t)val);
        }
    }
    infinirt__solo_lock_give(&t->lock);
    if (kept)
        infinirt__handle_reclaim(sl); /* as in drop_last */
    return 0;
}

/* The registry for the files of each kind (stream.c, event.c, graph.c),
 * which hand it their own reference drop: it calls none of them. */
int infinirt__handle_register(uint32_t kind, void *obj, uintptr_t key, uint32_t *slot_out)
{
    return handle_new(kind, obj, key, slot_out);
}

void *infinirt__handle_get(uint32_t kind, const void *h, infinirt__handle_put_fn *put)
{
    return handle_get(h, kind, put);
}

int infinirt__handle_kill(uint32_t kind, const void *h, uint32_t idx)
{
    return handle_kill(h, kind, idx);
}

void *infinirt__handle_drop(uint32_t kind, uint32_t idx, infinirt__handle_free_fn *release)
{
    return handle_drop(kind, idx, release);
}

int infinirt__handle_destroy(uint32_t kind, const void *h, void **last, infinirt__handle_free_fn *release)
{
    return handle_destroy(kind, h, last, release);
}

const char *infinirt__handle_register_error(int rc)
{
    return rc == -2 ? "the backend gave a handle value that a live handle already has"
                    : "no memory to register the handle";
}
