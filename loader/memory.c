/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memory.c - the memory API: allocation through the caching allocator, and
 * copies and fills routed by pointer.
 *
 * A device pointer is owned through the allocator's block map, never through
 * the current device: Free, Memcpy and Memset look the pointer up (interior
 * pointers too) and go to the plugin and device that own it.  Copies and
 * fills also take device memory the loader did not allocate (a tensor from
 * another library); only for such a pointer does the current device, or the
 * stream's, choose the plugin.  Free never does.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "alloc_quick.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ allocation */

static __attribute__((noinline, cold)) void malloc_failed(infiniStatus_t st, size_t size, const infinirt__device *dev,
                                                          const char *fn)
{
    infinirt__fail(st, fn, "%zu bytes on %s:%d", size, infinirtGetDeviceTypeName(dev->plugin->type), dev->id);
}

/* Whether an allocation of size bytes on s (NULL: none) goes to the
 * capture first: a capture's allocations come from memory private to it. */
static inline __attribute__((always_inline)) bool malloc_capturing(size_t size, infinirt__stream *s,
                                                                   infinirt__device *dev, bool host)
{
    return size != 0 && s != NULL && !host &&
           __builtin_expect(infinirt__stream_capture(s) != NULL || INFINIRT__NATIVE_GRAPHS(dev->plugin), 0);
}

/* do_malloc's part for a capture (malloc_capturing): true when the capture
 * decided the call, with the status in *st and s given back. */
static inline __attribute__((always_inline)) bool malloc_captured(void **p_ptr, size_t size, infinirt__stream *s,
                                                                  int use, const char *fn, infiniStatus_t *st)
{
    /* (A flag of this branch's own: the common path keeps none in memory.) */
    bool handled = false;
    void *p = NULL;
    *st = infinirt__capture_malloc(s, size, &p, fn, &handled);
    if (handled && *st == INFINI_STATUS_SUCCESS)
        *p_ptr = p;
    if (handled || *st != INFINI_STATUS_SUCCESS) {
        infinirt__stream_return(s, use);
        return true;
    }
    return false;
}

/* do_malloc past the stream and the capture: from the pool of dev (or of
 * its plugin's host memory); s (NULL: none) given back. */
static inline __attribute__((always_inline)) infiniStatus_t malloc_pool(void **p_ptr, size_t size,
                                                                        infinirt__stream *s, infinirt__device *dev,
                                                                        int use, bool host, bool async,
                                                                        const char *fn)
{
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    if (size == 0) {
        *p_ptr = NULL;
    } else {
        infinirt__pool *pool = host ? dev->plugin->host_pool : infinirt__device_pool(dev);
        /* Malloc and MallocHost: memory any stream may use at once, never a
         * block a FreeAsync left behind work still queued, even on the NULL
         * stream (a non-blocking stream does not wait for that work).
         * MallocAsync(NULL): the NULL stream's own key, whose blocks it may
         * reuse at once. */
        void *key = async ? (void *)s : INFINIRT__POOL_SYNC;
        /* The pool writes *p_ptr only when it succeeds. */
        st = pool != NULL ? infinirt__pool_alloc(pool, size, key, p_ptr) : INFINI_STATUS_OUT_OF_MEMORY;
        if (__builtin_expect(st != INFINI_STATUS_SUCCESS, 0))
            malloc_failed(st, size, dev, fn);
    }
    if (s != NULL)
        infinirt__stream_return(s, use);
    return st;
}

/* do_malloc past the stream's resolution: s (NULL: none, dev the current
 * device) borrowed as `use` says. */
static inline __attribute__((always_inline)) infiniStatus_t malloc_on(void **p_ptr, size_t size, infinirt__stream *s,
                                                                      infinirt__device *dev, int use, bool host,
                                                                      bool async, const char *fn)
{
    infiniStatus_t st;
    if (malloc_capturing(size, s, dev, host) && malloc_captured(p_ptr, size, s, use, fn, &st))
        return st;
    return malloc_pool(p_ptr, size, s, dev, use, host, async, fn);
}

static inline __attribute__((always_inline)) infiniStatus_t
do_malloc(void **p_ptr, size_t size, infinirtStream_t stream, bool host, bool async, const char *fn)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (__builtin_expect(st != INFINI_STATUS_SUCCESS, 0))
        return st;
    if (p_ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, fn, "p_ptr is NULL");
    infinirt__device *dev = NULL;
    infinirt__stream *s = NULL;
    int use = -1;
    if (stream == NULL) {
        if ((st = infinirt__current_device(fn, &dev)) != INFINI_STATUS_SUCCESS)
            return st;
    } else {
        if ((st = infinirt__stream_resolve_borrow(stream, NULL, fn, &s, &use)) != INFINI_STATUS_SUCCESS)
            return st;
        dev = s->dev;
    }
    return malloc_on(p_ptr, size, s, dev, use, host, async, fn);
}

INFINIRT_API infiniStatus_t infinirtMalloc(void **p_ptr, size_t size)
{
    INFINIRT__TRACE_ENTRY(infinirtMalloc, (p_ptr, size));
    return do_malloc(p_ptr, size, NULL, false, false, __func__);
}

INFINIRT_API infiniStatus_t infinirtMallocHost(void **p_ptr, size_t size)
{
    INFINIRT__TRACE_ENTRY(infinirtMallocHost, (p_ptr, size));
    return do_malloc(p_ptr, size, NULL, true, false, __func__);
}

/* The end of a one-pass MallocAsync or FreeAsync that succeeded: the
 * stream's borrow `use` given back, the rare reclaim by a tail call
 * (quick_reclaim). */
static __attribute__((noinline)) infiniStatus_t quick_reclaim(const void *sl)
{
    infinirt__handle_reclaim(sl);
    return INFINI_STATUS_SUCCESS;
}
static inline __attribute__((always_inline)) infiniStatus_t quick_done(int use)
{
    const void *sl;
    if (infinirt__handle_return_but_reclaim(use, &sl))
        return quick_reclaim(sl);
    return INFINI_STATUS_SUCCESS;
}

static const char malloc_async_fn[] = "infinirtMallocAsync";

/* Every MallocAsync the one pass below leaves before it borrows the
 * stream: the full checks. */
static __attribute__((noinline)) infiniStatus_t malloc_async_full(void **p_ptr, size_t size, infinirtStream_t stream)
{
    return do_malloc(p_ptr, size, stream, false, true, malloc_async_fn);
}

/* MallocAsync on the NULL stream: do_malloc with the stream's branch
 * folded away (inline in MallocAsync it would cost the one pass saved
 * registers). */
static __attribute__((noinline)) infiniStatus_t malloc_async_null(void **p_ptr, size_t size)
{
    return do_malloc(p_ptr, size, NULL, false, true, malloc_async_fn);
}

/* The one pass on a stream the inline borrow did not take (reclaim: what
 * it left to reclaim, or NULL): the full borrow. */
static __attribute__((noinline)) infiniStatus_t malloc_async_borrow_slow(void **p_ptr, size_t size,
                                                                         infinirtStream_t stream, const void *reclaim)
{
    if (reclaim != NULL)
        infinirt__handle_reclaim(reclaim);
    int use;
    infinirt__stream *s = infinirt__stream_borrow_slow(stream, &use);
    if (s == NULL)
        return infinirt__stream_not_live(stream, malloc_async_fn);
    return malloc_on(p_ptr, size, s, s->dev, use, false, true, malloc_async_fn);
}

/* The one pass on stream s (borrowed, cell use) that is capturing. */
static __attribute__((noinline)) infiniStatus_t malloc_async_captured(void **p_ptr, size_t size, infinirt__stream *s,
                                                                      int use)
{
    infiniStatus_t st;
    if (malloc_captured(p_ptr, size, s, use, malloc_async_fn, &st))
        return st;
    return malloc_pool(p_ptr, size, s, s->dev, use, false, true, malloc_async_fn);
}

/* The one pass on stream s (borrowed, cell use) whose device has no pool
 * yet: made here. */
static __attribute__((noinline)) infiniStatus_t malloc_async_pool(void **p_ptr, size_t size, infinirt__stream *s,
                                                                  int use)
{
    return malloc_pool(p_ptr, size, s, s->dev, use, false, true, malloc_async_fn);
}

/* The end of the one pass where the pool's quick path left the
 * allocation (st) to an out-of-line call: its failure logged, the stream's
 * cell given back. */
static inline __attribute__((always_inline)) infiniStatus_t malloc_async_left(infiniStatus_t st, size_t size,
                                                                              infinirt__stream *s, int use)
{
    if (__builtin_expect(st != INFINI_STATUS_SUCCESS, 0))
        malloc_failed(st, size, s->dev, malloc_async_fn);
    infinirt__handle_return(use);
    return st;
}

static __attribute__((noinline)) infiniStatus_t malloc_async_any(void **p_ptr, size_t size, infinirt__stream *s,
                                                                 int use, infinirt__pool *pool)
{
    return malloc_async_left(infinirt__pool_alloc_any(pool, size, s, p_ptr), size, s, use);
}

static __attribute__((noinline)) infiniStatus_t malloc_async_locked(void **p_ptr, size_t size, infinirt__stream *s,
                                                                    int use, infinirt__arena *a, uint_fast64_t gen)
{
    return malloc_async_left(infinirt__pool_alloc_locked(a, size, s, gen, p_ptr), size, s, use);
}

static __attribute__((noinline)) infiniStatus_t malloc_async_peak(infinirt__pool *pool, int use)
{
    infinirt__alloc_peak_due(pool, true);
    infinirt__handle_return(use);
    return INFINI_STATUS_SUCCESS;
}

/* infinirtMallocAsync after its entry: the usual allocation - a created
 * stream of this thread's, not capturing, a block of the quick list
 * (infinirt__pool_alloc_quick) - in one pass, with no call; anything else
 * through do_malloc's parts, the same checks in the same order.  Whatever
 * leaves the one pass once the stream is borrowed does so by a tail call
 * that gives the stream back, so no register need be saved. */
static inline __attribute__((always_inline)) infiniStatus_t malloc_async_code(void **p_ptr, size_t size,
                                                                              infinirtStream_t stream)
{
    if (stream == NULL)
        return malloc_async_null(p_ptr, size);
    if (!__builtin_expect(atomic_load_explicit(&infinirt__ready, memory_order_acquire), 1) || p_ptr == NULL ||
        size == 0)
        return malloc_async_full(p_ptr, size, stream);
    int use;
    const void *reclaim = NULL;
    infinirt__stream *s = infinirt__handle_borrow_mine_but_reclaim(INFINIRT__KIND_STREAM, stream, &use, &reclaim);
    if (__builtin_expect(s == NULL, 0))
        return malloc_async_borrow_slow(p_ptr, size, stream, reclaim);
    infinirt__device *dev = s->dev;
    if (malloc_capturing(size, s, dev, false))
        return malloc_async_captured(p_ptr, size, s, use);
    infinirt__pool *pool = infinirt__device_pool_peek(dev);
    if (__builtin_expect(pool == NULL, 0))
        return malloc_async_pool(p_ptr, size, s, use);
    infinirt__arena *a;
    uint_fast64_t gen;
    switch (infinirt__pool_alloc_quick(pool, size, s, p_ptr, &a, &gen)) {
    case INFINIRT__QUICK_DONE:
        return quick_done(use);
    case INFINIRT__QUICK_PEAK:
        return malloc_async_peak(pool, use);
    case INFINIRT__QUICK_LOCKED:
        return malloc_async_locked(p_ptr, size, s, use, a, gen);
    default:
        return malloc_async_any(p_ptr, size, s, use, pool);
    }
}

INFINIRT_API infiniStatus_t infinirtMallocAsync(void **p_ptr, size_t size, infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY(infinirtMallocAsync, (p_ptr, size, stream));
    return malloc_async_code(p_ptr, size, stream);
}

/* Why a free the pool refused failed, logged (out of line: no free that
 * succeeds pays for its registers). */
static __attribute__((noinline, cold)) void free_failed(infiniStatus_t st, void *ptr, infinirt__stream *s, bool host,
                                                        const char *fn)
{
    infinirt__ptr_info info;
    bool found = infinirt__pool_lookup(ptr, &info);
    if (found && (info.device_id < 0) != host)
        infinirt__fail(st, fn, "%p is %s memory; free it with %s", ptr,
                       info.device_id < 0 ? "host (MallocHost)" : "device",
                       info.device_id < 0 ? "infinirtFreeHost" : "infinirtFree");
    else if (found && info.offset != 0)
        infinirt__fail(st, fn, "%p is %zu bytes inside a %zu-byte block at %p on %s%s%d, not its start", ptr,
                       info.offset, info.block_size, info.block_base,
                       infinirtGetDeviceTypeName((infiniDevice_t)info.device_type),
                       info.device_id < 0 ? " host" : ":", info.device_id < 0 ? 0 : info.device_id);
    else if (s != NULL)
        infinirt__fail(st, fn, "%p is not a live allocation of the stream's device %s:%d", ptr,
                       infinirtGetDeviceTypeName(s->dev->plugin->type), s->dev->id);
    else
        infinirt__fail(st, fn, "%p is not a live allocation (never allocated, or freed already)", ptr);
}

/* Whether a free of device memory on s (NULL: none) goes to the graphs
 * first: a block a graph holds, or a free inside a capture. */
static inline __attribute__((always_inline)) bool free_capturing(infinirt__stream *s, bool host)
{
    return !host && __builtin_expect(atomic_load_explicit(&infinirt__graph_held, memory_order_acquire) != 0 ||
                                         (s != NULL && (infinirt__stream_capture(s) != NULL ||
                                                        INFINIRT__NATIVE_GRAPHS(s->dev->plugin))),
                                     0);
}

/* do_free's part for the graphs (free_capturing): true when they decided
 * the call, with the status in *st and s given back. */
static inline __attribute__((always_inline)) bool free_captured(void *ptr, infinirt__stream *s, int use,
                                                                const char *fn, infiniStatus_t *st)
{
    bool handled = false;
    *st = infinirt__capture_free(ptr, s, fn, &handled);
    if (handled || *st != INFINI_STATUS_SUCCESS) {
        infinirt__stream_return(s, use);
        return true;
    }
    return false;
}

/* do_free past the stream and the graphs: ptr (not NULL) to its pool; s
 * (NULL: none) given back. */
static inline __attribute__((always_inline)) infiniStatus_t
free_pool(void *ptr, infinirt__stream *s, int use, bool sync, infinirt__pool_want want, const char *fn)
{
    bool host = want.kind == INFINIRT__WANT_HOST;
    /* Ordered on the stream, or (no stream) on every stream or the
     * default stream of the pointer's device. */
    bool all = s == NULL && sync;
    /* The pool rejects what it does not own; the lookup below only runs to
     * explain a failure, so the fast path pays for one lookup only. */
    infinirt__pool *pool = s != NULL ? infinirt__device_pool_peek(s->dev) : NULL;
    infinirt__pool_want owner = s != NULL ? infinirt__want_pool(pool) : want;
    infiniStatus_t st;
    /* A stream's device whose pool was never made holds no block. */
    if (s != NULL && pool == NULL)
        st = INFINI_STATUS_BAD_PARAM;
    else
        st = all ? infinirt__pool_free_sync(ptr, owner) : infinirt__pool_free(ptr, s, owner);
    if (__builtin_expect(st != INFINI_STATUS_SUCCESS, 0))
        free_failed(st, ptr, s, host, fn);
    if (s != NULL)
        infinirt__stream_return(s, use);
    return st;
}

/* do_free past the stream's resolution: ptr not NULL, s (NULL: none)
 * borrowed as `use` says. */
static inline __attribute__((always_inline)) infiniStatus_t
free_on(void *ptr, infinirt__stream *s, int use, bool sync, infinirt__pool_want want, const char *fn)
{
    infiniStatus_t st;
    if (free_capturing(s, want.kind == INFINIRT__WANT_HOST) && free_captured(ptr, s, use, fn, &st))
        return st;
    return free_pool(ptr, s, use, sync, want, fn);
}

/* Free ptr.  A stream handle makes it stream-ordered on that stream; with
 * none, `sync` chooses a synchronous free (Free, FreeHost) or one ordered on
 * the default stream of the pointer's own device (FreeAsync(p, NULL)), which
 * the allocator's NULL stream key means. */
static inline __attribute__((always_inline)) infiniStatus_t do_free(void *ptr, infinirtStream_t stream, bool sync,
                                                                    infinirt__pool_want want, const char *fn)
{
    infiniStatus_t st = infinirt__ensure_init();
    if (__builtin_expect(st != INFINI_STATUS_SUCCESS, 0))
        return st;
    infinirt__stream *s = NULL;
    int use = -1;
    if (stream != NULL && (st = infinirt__stream_resolve_borrow(stream, NULL, fn, &s, &use)) != INFINI_STATUS_SUCCESS)
        return st; /* a dead stream is an error even with nothing to free */
    if (ptr == NULL) {
        infinirt__stream_return(s, use);
        return INFINI_STATUS_SUCCESS;
    }
    return free_on(ptr, s, use, sync, want, fn);
}

INFINIRT_API infiniStatus_t infinirtFree(void *ptr)
{
    INFINIRT__TRACE_ENTRY(infinirtFree, (ptr));
    return do_free(ptr, NULL, true, infinirt__want_device(), __func__);
}

INFINIRT_API infiniStatus_t infinirtFreeHost(void *ptr)
{
    INFINIRT__TRACE_ENTRY(infinirtFreeHost, (ptr));
    return do_free(ptr, NULL, true, infinirt__want_host(), __func__);
}

static const char free_async_fn[] = "infinirtFreeAsync";

/* Every FreeAsync the one pass below leaves before it borrows the stream:
 * the full checks. */
static __attribute__((noinline)) infiniStatus_t free_async_full(void *ptr, infinirtStream_t stream)
{
    return do_free(ptr, stream, false, infinirt__want_device(), free_async_fn);
}

/* The one pass on a stream the inline borrow did not take (reclaim: what
 * it left to reclaim, or NULL): the full borrow. */
static __attribute__((noinline)) infiniStatus_t free_async_borrow_slow(void *ptr, infinirtStream_t stream,
                                                                       const void *reclaim)
{
    if (reclaim != NULL)
        infinirt__handle_reclaim(reclaim);
    int use;
    infinirt__stream *s = infinirt__stream_borrow_slow(stream, &use);
    if (s == NULL)
        return infinirt__stream_not_live(stream, free_async_fn);
    return free_on(ptr, s, use, false, infinirt__want_device(), free_async_fn);
}

/* The one pass on stream s (borrowed, cell use) where the graphs come
 * first. */
static __attribute__((noinline)) infiniStatus_t free_async_captured(void *ptr, infinirt__stream *s, int use)
{
    infiniStatus_t st;
    if (free_captured(ptr, s, use, free_async_fn, &st))
        return st;
    return free_pool(ptr, s, use, false, infinirt__want_device(), free_async_fn);
}

/* The one pass on stream s (borrowed, cell use) past the graphs: the pool's
 * full free, or its refusal. */
static __attribute__((noinline)) infiniStatus_t free_async_pool(void *ptr, infinirt__stream *s, int use)
{
    return free_pool(ptr, s, use, false, infinirt__want_device(), free_async_fn);
}

/* The end of the one pass where the pool's quick path left the free (st)
 * to an out-of-line call: its failure logged, the stream's cell given
 * back. */
static inline __attribute__((always_inline)) infiniStatus_t free_async_left(infiniStatus_t st, void *ptr,
                                                                            infinirt__stream *s, int use)
{
    if (__builtin_expect(st != INFINI_STATUS_SUCCESS, 0))
        free_failed(st, ptr, s, false, free_async_fn);
    infinirt__handle_return(use);
    return st;
}

static __attribute__((noinline)) infiniStatus_t free_async_arena(void *ptr, infinirt__stream *s, int use,
                                                                 infinirt__arena *a)
{
    return free_async_left(infinirt__pool_free_arena(a, ptr, s, infinirt__want_pool(a->pool)), ptr, s, use);
}

static __attribute__((noinline)) infiniStatus_t free_async_locked(void *ptr, infinirt__stream *s, int use,
                                                                  infinirt__arena *a)
{
    return free_async_left(infinirt__pool_free_locked(a, ptr, s, infinirt__want_pool(a->pool)), ptr, s, use);
}

/* infinirtFreeAsync after its entry: the usual free - on a created stream
 * of this thread's, no graph involved, a block of the arena of the
 * thread's last call going to its quick list (infinirt__pool_free_quick) -
 * in one pass, with no call; anything else through do_free's parts, the
 * same checks in the same order.  Whatever leaves the one pass once the
 * stream is borrowed does so by a tail call that gives the stream back, so
 * no register need be saved. */
static inline __attribute__((always_inline)) infiniStatus_t free_async_code(void *ptr, infinirtStream_t stream)
{
    /* The NULL stream: do_free inline, its stream branch folded away (the
     * one pass saves registers anyway). */
    if (stream == NULL)
        return do_free(ptr, NULL, false, infinirt__want_device(), free_async_fn);
    if (!__builtin_expect(atomic_load_explicit(&infinirt__ready, memory_order_acquire), 1) || ptr == NULL)
        return free_async_full(ptr, stream);
    int use;
    const void *reclaim = NULL;
    infinirt__stream *s = infinirt__handle_borrow_mine_but_reclaim(INFINIRT__KIND_STREAM, stream, &use, &reclaim);
    if (__builtin_expect(s == NULL, 0))
        return free_async_borrow_slow(ptr, stream, reclaim);
    if (free_capturing(s, false))
        return free_async_captured(ptr, s, use);
    /* The pool of the stream's device, the only one the free accepts. */
    infinirt__pool *pool = infinirt__device_pool_peek(s->dev);
    if (__builtin_expect(pool == NULL, 0))
        return free_async_pool(ptr, s, use);
    infinirt__arena *a;
    switch (infinirt__pool_free_quick(ptr, infinirt__want_pool(pool), &a)) {
    case INFINIRT__QUICK_DONE:
        return quick_done(use);
    case INFINIRT__QUICK_ARENA:
        return free_async_arena(ptr, s, use, a);
    case INFINIRT__QUICK_LOCKED:
        return free_async_locked(ptr, s, use, a);
    default:
        return free_async_pool(ptr, s, use);
    }
}

INFINIRT_API infiniStatus_t infinirtFreeAsync(void *ptr, infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY(infinirtFreeAsync, (ptr, stream));
    return free_async_code(ptr, stream);
}

/* ------------------------------------------------------------ copies */

/* Every range the loader can see is checked before anything is touched:
 *  - a range [p, p+size) must not wrap around the address space, and size
 *    must fit a ptrdiff_t (no object is larger; SIZE_MAX is a caller's bug);
 *  - a side inside a live allocation (device, or MallocHost host memory)
 *    must fit in that allocation;
 *  - a device side inside memory the allocator holds but no live block
 *    covers (freed, cached, or past the end of its block) is refused;
 *  - a host side may be any host memory, but not device memory that the
 *    host cannot address.  Only the CPU backend's device memory is plain
 *    host memory (InfiniCore programs on CPU copy between such pointers
 *    with any kind); an OpenCL buffer handle or a CUDA device address
 *    would crash the memmove or the plugin's host access.
 * Memory the loader did not allocate is taken on trust, as every runtime
 * does: foreign host memory (malloc, the stack) as a host side, and
 * foreign device memory (InfiniCore's from_blob, a tensor from torch) as a
 * device side, which goes to a device chosen by resolve_foreign.  One
 * lookup per side; a second, of the allocator's directory, only for a
 * device side no live block contains. */

/* One side of a copy or fill, once checked: the device whose memory it is
 * (NULL for a host side), and whether the loader did not allocate it (a
 * foreign device side has no device until resolve_foreign gives it one). */
typedef struct {
    infinirt__device *dev;
    bool foreign;
} mem_side;

static infiniStatus_t check_size(size_t size, const char *fn)
{
    if (__builtin_expect(size > (size_t)PTRDIFF_MAX, 0))
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "size %zu is larger than any object can be", size);
    return INFINI_STATUS_SUCCESS;
}

static const char *place_name(const infinirt__ptr_info *info)
{
    return info->device_id < 0 ? "host (MallocHost)" : "device";
}

/* One side [ptr, ptr+size) of a copy or fill (size <= PTRDIFF_MAX). */
static inline __attribute__((always_inline)) infiniStatus_t
check_side(const void *ptr, size_t size, bool device_side, const char *what, const char *fn, mem_side *out)
{
    out->dev = NULL;
    out->foreign = false;
    if (__builtin_expect((uintptr_t)ptr > UINTPTR_MAX - size, 0))
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn,
                              "%s range of %zu bytes at %p wraps around the address space", what, size, ptr);
    infinirt__ptr_info info;
    if (!device_side && infinirt__dir_outside((uintptr_t)ptr))
        return INFINI_STATUS_SUCCESS; /* host memory no pool holds */
    if (!infinirt__pool_lookup_inline(ptr, &info)) {
        if (!device_side)
            return INFINI_STATUS_SUCCESS; /* foreign host memory */
        /* The allocator's own memory outside every live block is no one's
         * to use: a use after free, or an overrun of a block's rounding. */
        if (infinirt__pool_holds(ptr))
            return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn,
                                  "%s %p is not inside any live allocation (freed already, or past the end of its "
                                  "block)",
                                  what, ptr);
        out->foreign = true;
        return INFINI_STATUS_SUCCESS;
    }
    if (device_side && info.device_id < 0)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "%s %p is host (MallocHost) memory, not device memory",
                              what, ptr);
    if (!device_side && info.device_id >= 0 && info.device_type != INFINI_DEVICE_CPU)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn,
                              "%s %p is device memory of %s:%d, not host memory; use a kind that names it as "
                              "device memory",
                              what, ptr, infinirtGetDeviceTypeName((infiniDevice_t)info.device_type), info.device_id);
    if (size > info.block_size - info.offset)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn,
                              "%s range of %zu bytes at offset %zu runs past the end of its %zu-byte %s allocation",
                              what, size, info.offset, info.block_size, place_name(&info));
    if (!device_side)
        return INFINI_STATUS_SUCCESS;
    out->dev = info.owner; /* a device pool's backend is its device (fence.c) */
    return INFINI_STATUS_SUCCESS;
}

/* Give a foreign device side its device: the one base's plugin says owns
 * the pointer (pointer_get_device, where it has the entry), else base.
 * base is the device the call is made through: the current device, the
 * stream's, or the other side's for a copy with one side the loader knows. */
static infiniStatus_t resolve_foreign(mem_side *sd, const void *ptr, infinirt__device *base, const char *fn)
{
    if (!sd->foreign)
        return INFINI_STATUS_SUCCESS;
    sd->dev = base;
    infinirt__plugin *p = base->plugin;
    if (!INFINIRT__HAS(p, pointer_get_device))
        return INFINI_STATUS_SUCCESS;
    int id = -1;
    infiniStatus_t st = p->ops->pointer_get_device(ptr, &id);
    if (st == INFINI_STATUS_NOT_IMPLEMENTED || st == INFINI_STATUS_BAD_PARAM)
        return INFINI_STATUS_SUCCESS; /* the plugin cannot tell: base it is */
    if (st != INFINI_STATUS_SUCCESS)
        return infinirt__plugin_failed(st, base, "pointer_get_device");
    /* id is the plugin's index; INFINIRT_VISIBLE_DEVICES may have given
     * the device another id, or hidden it (then base it is, as for memory
     * the plugin cannot place). */
    if (id >= 0 && id < p->device_count && p->devices[id].index == id) {
        sd->dev = &p->devices[id];
        return INFINI_STATUS_SUCCESS;
    }
    for (int i = 0; i < p->device_count; i++) {
        if (p->devices[i].index == id) {
            sd->dev = &p->devices[i];
            return INFINI_STATUS_SUCCESS;
        }
    }
    if (id < 0 || id >= p->declared_count)
        return infinirt__fail(INFINI_STATUS_INTERNAL_ERROR, fn,
                              "plugin %s says %p is memory of its device %d, which it does not have (%d devices)",
                              p->name, ptr, id, p->declared_count);
    return INFINI_STATUS_SUCCESS;
}

/* A call with nothing to do still rejects a dead stream handle, as every
 * other call on one does. */
static infiniStatus_t check_stream_alive(infinirtStream_t stream, const char *fn)
{
    if (stream == NULL)
        return INFINI_STATUS_SUCCESS;
    infinirt__stream *s = infinirt__stream_get(stream);
    if (s == NULL)
        return infinirt__stream_not_live(stream, fn);
    infinirt__stream_put(s);
    return INFINI_STATUS_SUCCESS;
}

/* Check both sides of a copy (see above).  Device sides the loader knows
 * get their device; foreign ones are marked, for resolve_foreign. */
static inline __attribute__((always_inline)) infiniStatus_t
copy_check(void *dst, const void *src, size_t size, int kind, const char *fn, mem_side *d, mem_side *s)
{
    infiniStatus_t st;
    bool dst_dev = kind == INFINIRT_MEMCPY_H2D || kind == INFINIRT_MEMCPY_D2D;
    bool src_dev = kind == INFINIRT_MEMCPY_D2H || kind == INFINIRT_MEMCPY_D2D;
    if ((st = check_size(size, fn)) != INFINI_STATUS_SUCCESS)
        return st;
    /* The device side first, as its failure is the likelier one to explain. */
    if (src_dev && !dst_dev) {
        if ((st = check_side(src, size, true, "src", fn, s)) != INFINI_STATUS_SUCCESS)
            return st;
        return check_side(dst, size, false, "dst", fn, d);
    }
    if ((st = check_side(dst, size, dst_dev, "dst", fn, d)) != INFINI_STATUS_SUCCESS)
        return st;
    return check_side(src, size, src_dev, "src", fn, s);
}

/* The device a copy with foreign sides is made through when no stream
 * says: the side the loader knows (route by it), else the current device. */
static infiniStatus_t copy_base(const mem_side *d, const mem_side *s, const char *fn, infinirt__device **base)
{
    *base = d->dev != NULL ? d->dev : s->dev;
    if (*base != NULL)
        return INFINI_STATUS_SUCCESS;
    return infinirt__current_device(fn, base);
}

/* The device whose plugin performs a copy: dst's for H2D/D2D, src's for
 * D2H, NULL for H2H. */
static infinirt__device *copy_owner(int kind, const mem_side *d, const mem_side *s)
{
    return kind == INFINIRT_MEMCPY_D2H ? s->dev : d->dev;
}

/* A known device side's device, for infinirt__note_peer: foreign memory is
 * never freed through the loader, so nothing waits for work touching it. */
static infinirt__device *known(const mem_side *sd)
{
    return sd->foreign ? NULL : sd->dev;
}

/* D2D between two backends: bounce through host memory, in chunks so a huge
 * copy does not need a huge buffer. */
static infiniStatus_t copy_across_backends(infinirt__device *ddev, void *dst, infinirt__device *sdev, const void *src,
                                           size_t size)
{
    size_t chunk = size < (64u << 20) ? size : (64u << 20);
    unsigned char *tmp = malloc(chunk);
    if (tmp == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    for (size_t off = 0; off < size && st == INFINI_STATUS_SUCCESS; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        st = sdev->plugin->ops->memcpy(sdev->index, tmp, (const char *)src + off, n, INFINIRT_MEMCPY_D2H);
        if (st == INFINI_STATUS_SUCCESS)
            st = ddev->plugin->ops->memcpy(ddev->index, (char *)dst + off, tmp, n, INFINIRT_MEMCPY_H2D);
    }
    free(tmp);
    return st;
}

/* The plugin's synchronous copy on owner, and its failure logged: the
 * last step of both paths of infinirtMemcpy.  traced: a constant
 * (INFINIRT__TRACE_ENTRY_WORK), here and in the helpers below. */
static inline __attribute__((always_inline)) infiniStatus_t
plugin_copy(infinirt__device *owner, void *dst, const void *src, size_t size, int kind, bool traced)
{
    infiniStatus_t st = INFINIRT__TRACED(traced, infinirt__traced_memcpy(owner, dst, src, size, kind),
                                         owner->plugin->ops->memcpy(owner->index, dst, src, size, kind));
    return __builtin_expect(st != INFINI_STATUS_SUCCESS, 0) ? infinirt__plugin_failed(st, owner, "memcpy") : st;
}

/* The copy queued on stream str of device dev and counted as submitted
 * (even when the plugin fails: it may have queued part of it), its failure
 * logged: the last step of both paths of infinirtMemcpyAsync.  dev is
 * str->dev, which the one-pass path has in a register already. */
static inline __attribute__((always_inline)) infiniStatus_t queue_copy_on(infinirt__stream *str,
                                                                          infinirt__device *dev, void *dst,
                                                                          const void *src, size_t size, int kind,
                                                                          bool traced)
{
    infiniStatus_t st = INFINIRT__TRACED(traced, infinirt__traced_memcpy_async(str, dst, src, size, kind),
                                         dev->plugin->ops->memcpy_async(dev->index, dst, src, size, kind, str->ps));
    infinirt__stream_note_submit_on(str, dev);
    if (__builtin_expect(st != INFINI_STATUS_SUCCESS, 0))
        infinirt__plugin_failed(st, dev, "memcpy_async");
    return st;
}

static inline __attribute__((always_inline)) infiniStatus_t
queue_copy(infinirt__stream *str, void *dst, const void *src, size_t size, int kind, bool traced)
{
    return queue_copy_on(str, str->dev, dst, src, size, kind, traced);
}

/* The device of a device side that is one of this thread's two remembered
 * blocks (alloc.h) of a device pool, with room for size bytes from ptr;
 * else NULL, and the full checks decide.  A NULL ptr is never in one (no
 * block starts at 0 or wraps around the address space). */
static inline __attribute__((always_inline)) infinirt__device *quick_device_side(const void *ptr, size_t size)
{
    const infinirt__lookup_hit *h = infinirt__lookup_hit_device((uintptr_t)ptr, size);
    return h != NULL ? h->owner : NULL;
}

/* A host side the loader knows nothing of: not NULL, not wrapping around
 * the address space (size is at least 1), outside every pool. */
static inline bool quick_host_side(const void *ptr, size_t size)
{
    return (uintptr_t)ptr - 1 < UINTPTR_MAX - size && infinirt__dir_outside((uintptr_t)ptr);
}

/* Both sides of a copy in one pass: each device side in one of the
 * thread's remembered blocks, each host side outside every pool, a D2D on
 * one backend.  *owner is the device whose plugin makes the copy (dst's,
 * or src's for D2H), *other src's for D2D (else NULL).  False: the full
 * checks decide. */
static inline __attribute__((always_inline)) bool quick_sides(void *dst, const void *src, size_t size, int kind,
                                                              infinirt__device **owner, infinirt__device **other)
{
    *other = NULL;
    if (kind == INFINIRT_MEMCPY_H2D)
        return (*owner = quick_device_side(dst, size)) != NULL && quick_host_side(src, size);
    if (kind == INFINIRT_MEMCPY_D2H)
        return (*owner = quick_device_side(src, size)) != NULL && quick_host_side(dst, size);
    if (kind == INFINIRT_MEMCPY_D2D) {
        const infinirt__lookup_hit *hd, *hs;
        uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
        if (!infinirt__lookup_hit_pair(d, s, &hd, &hs) ||
            !infinirt__lookup_hit_fits_device(hd, d - hd->start, size) ||
            !infinirt__lookup_hit_fits_device(hs, s - hs->start, size))
            return false;
        infinirt__device *o = hd->owner, *so = hs->owner;
        if (so->plugin != o->plugin)
            return false;
        *owner = o;
        *other = so;
        return true;
    }
    return false;
}

/* Whether a copy of these arguments may try the one-pass path at all.
 * NULL sides are left to the sides' checks: a host side is never NULL
 * (quick_host_side), nor is a device side (quick_device_side). */
static inline bool quick_args(size_t size)
{
    return __builtin_expect(atomic_load_explicit(&infinirt__ready, memory_order_acquire), 1) &&
           size - 1 < (size_t)PTRDIFF_MAX;
}

/* The usual synchronous copy in one pass: quick_sides, and no capture on
 * the device.  Returns true when it made the copy (status in *st);
 * anything else goes through the full checks, which also give the errors. */
static inline __attribute__((always_inline)) bool quick_copy(void *dst, const void *src, size_t size, int kind,
                                                             infiniStatus_t *st, bool traced)
{
    infinirt__device *owner, *other;
    if (!quick_sides(dst, src, size, kind, &owner, &other))
        return false;
    if (atomic_load_explicit(&owner->captures, memory_order_acquire) != 0)
        return false;
    *st = plugin_copy(owner, dst, src, size, kind, traced);
    return true;
}

/* The device of both sides of an asynchronous copy in one pass, as
 * quick_sides finds them, when it is one device: with the copy on that
 * device's stream, there is no peer to note.  NULL: the full checks
 * decide. */
static inline __attribute__((always_inline)) infinirt__device *quick_async_device(void *dst, const void *src,
                                                                                  size_t size, int kind)
{
    infinirt__device *owner, *other;
    if (!quick_sides(dst, src, size, kind, &owner, &other))
        return NULL;
    return other == NULL || other == owner ? owner : NULL;
}

/* Whether the one-pass path may queue the copy on str, a created stream
 * it borrowed: a stream of dev, the device of both sides (no peer to
 * note), and not capturing. */
static inline bool quick_stream_takes(infinirt__stream *str, infinirt__device *dev)
{
    return dev == str->dev && infinirt__stream_capture(str) == NULL;
}

/* infinirtMemcpy's full checks: every copy the one-pass path leaves, and
 * every error.  Out of line (memcpy_full, memcpy_full_traced), so the
 * one-pass path saves no registers for it. */
static inline __attribute__((always_inline)) infiniStatus_t memcpy_full_code(void *dst, const void *src, size_t size,
                                                                             infinirtMemcpyKind_t kind, bool traced)
{
    const char *fn = "infinirtMemcpy";
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if ((unsigned)kind > INFINIRT_MEMCPY_D2D)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "memcpy kind %d is not an infinirtMemcpyKind_t",
                              (int)kind);
    if (size == 0)
        return INFINI_STATUS_SUCCESS;
    if (dst == NULL || src == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, fn, "%s is NULL", dst == NULL ? "dst" : "src");
    mem_side d, s;
    if ((st = copy_check(dst, src, size, (int)kind, fn, &d, &s)) != INFINI_STATUS_SUCCESS)
        return st;
    if (d.foreign || s.foreign) {
        infinirt__device *base;
        if ((st = copy_base(&d, &s, fn, &base)) != INFINI_STATUS_SUCCESS ||
            (st = resolve_foreign(&d, dst, base, fn)) != INFINI_STATUS_SUCCESS ||
            (st = resolve_foreign(&s, src, base, fn)) != INFINI_STATUS_SUCCESS)
            return st;
    }
    infinirt__device *owner = copy_owner((int)kind, &d, &s);
    infinirt__device *other = kind == INFINIRT_MEMCPY_D2D ? s.dev : NULL;
    if (owner == NULL) {
        memmove(dst, src, size); /* H2H: both sides are plain host memory */
        return INFINI_STATUS_SUCCESS;
    }
    if ((st = infinirt__capture_sync_check(owner, true, fn)) != INFINI_STATUS_SUCCESS)
        return st;
    if (other != NULL && other->plugin != owner->plugin) {
        st = copy_across_backends(owner, dst, other, src, size);
        if (st != INFINI_STATUS_SUCCESS)
            return infinirt__fail(st, fn, "D2D copy from %s:%d to %s:%d through host memory failed",
                                  infinirtGetDeviceTypeName(other->plugin->type), other->id,
                                  infinirtGetDeviceTypeName(owner->plugin->type), owner->id);
        return st;
    }
    return plugin_copy(owner, dst, src, size, (int)kind, traced);
}

static __attribute__((noinline)) infiniStatus_t memcpy_full(void *dst, const void *src, size_t size,
                                                            infinirtMemcpyKind_t kind)
{
    return memcpy_full_code(dst, src, size, kind, false);
}

static __attribute__((noinline, cold)) infiniStatus_t memcpy_full_traced(void *dst, const void *src, size_t size,
                                                                         infinirtMemcpyKind_t kind)
{
    return memcpy_full_code(dst, src, size, kind, true);
}

/* infinirtMemcpy after its entry: the one-pass path, else the full one. */
static inline __attribute__((always_inline)) infiniStatus_t memcpy_code(void *dst, const void *src, size_t size,
                                                                        infinirtMemcpyKind_t kind, bool traced)
{
    infiniStatus_t qst;
    if (quick_args(size) && quick_copy(dst, src, size, (int)kind, &qst, traced))
        return qst;
    return traced ? memcpy_full_traced(dst, src, size, kind) : memcpy_full(dst, src, size, kind);
}

static __attribute__((noinline, cold)) infiniStatus_t memcpy_traced(void *dst, const void *src, size_t size,
                                                                    infinirtMemcpyKind_t kind)
{
    return memcpy_code(dst, src, size, kind, true);
}

INFINIRT_API infiniStatus_t infinirtMemcpy(void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtMemcpy, (dst, src, size, kind), memcpy_traced(dst, src, size, kind));
    return memcpy_code(dst, src, size, kind, false);
}

/* infinirtMemcpyAsync's full checks, out of line like memcpy_full. */
static inline __attribute__((always_inline)) infiniStatus_t
memcpy_async_full_code(void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind, infinirtStream_t stream,
                       bool traced)
{
    const char *fn = "infinirtMemcpyAsync";
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if ((unsigned)kind > INFINIRT_MEMCPY_D2D)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "memcpy kind %d is not an infinirtMemcpyKind_t",
                              (int)kind);
    if (size == 0)
        return check_stream_alive(stream, fn);
    if (dst == NULL || src == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, fn, "%s is NULL", dst == NULL ? "dst" : "src");
    mem_side d, s;
    if ((st = copy_check(dst, src, size, (int)kind, fn, &d, &s)) != INFINI_STATUS_SUCCESS)
        return st;
    /* The stream's device is what foreign sides go through; with the NULL
     * stream, the device they resolve to gives the default stream. */
    infinirt__stream *str = NULL;
    infinirt__device *base;
    if (stream != NULL) {
        if ((st = infinirt__stream_resolve(stream, NULL, fn, &str)) != INFINI_STATUS_SUCCESS)
            return st;
        base = str->dev;
    } else if ((st = copy_base(&d, &s, fn, &base)) != INFINI_STATUS_SUCCESS) {
        return st;
    }
    if ((st = resolve_foreign(&d, dst, base, fn)) != INFINI_STATUS_SUCCESS ||
        (st = resolve_foreign(&s, src, base, fn)) != INFINI_STATUS_SUCCESS) {
        infinirt__stream_put(str);
        return st;
    }
    infinirt__device *owner = copy_owner((int)kind, &d, &s);
    infinirt__device *other = kind == INFINIRT_MEMCPY_D2D ? s.dev : NULL;
    if (str == NULL)
        str = (owner != NULL ? owner : base)->default_stream;
    infinirt__device *dev = str->dev;
    if ((owner != NULL && owner->plugin != dev->plugin) || (other != NULL && other->plugin != dev->plugin)) {
        st = infinirt__fail(INFINI_STATUS_NOT_IMPLEMENTED, fn,
                            "the copy's device memory belongs to a different backend than stream %s:%d; "
                            "asynchronous copies between backends are not supported",
                            infinirtGetDeviceTypeName(dev->plugin->type), dev->id);
    } else {
        if (__builtin_expect(infinirt__stream_capture(str) != NULL, 0)) {
            bool recorded = false;
            infinirt__gop op = {.kind = INFINIRT__GOP_COPY,
                                .arg = (int)kind,
                                .dst = dst,
                                .src = src,
                                .size = size,
                                .touched = {known(&d), known(&s)}};
            st = infinirt__capture_op(str, &op, fn, &recorded);
            if (st != INFINI_STATUS_SUCCESS || recorded) {
                infinirt__stream_put(str);
                return st;
            }
        }
        /* Memory of another device of this plugin, touched by this stream:
         * its synchronous frees must wait for this device's streams too. */
        infinirt__note_peer(known(&d), dev);
        infinirt__note_peer(known(&s), dev);
        st = queue_copy(str, dst, src, size, (int)kind, traced);
    }
    infinirt__stream_put(str);
    return st;
}

static __attribute__((noinline)) infiniStatus_t memcpy_async_full(void *dst, const void *src, size_t size,
                                                                  infinirtMemcpyKind_t kind, infinirtStream_t stream)
{
    return memcpy_async_full_code(dst, src, size, kind, stream, false);
}

static __attribute__((noinline, cold)) infiniStatus_t
memcpy_async_full_traced(void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind, infinirtStream_t stream)
{
    return memcpy_async_full_code(dst, src, size, kind, stream, true);
}

/* memcpy_async_full, or its traced copy. */
static inline __attribute__((always_inline)) infiniStatus_t
memcpy_async_full_as(void *dst, const void *src, size_t size, int kind, infinirtStream_t stream, bool traced)
{
    return traced ? memcpy_async_full_traced(dst, src, size, (infinirtMemcpyKind_t)kind, stream)
                  : memcpy_async_full(dst, src, size, (infinirtMemcpyKind_t)kind, stream);
}

/* The one-pass path past the inline borrow: the stream borrowed by the
 * full borrow (another thread's, one no hint names), or not borrowed at
 * all; the same checks as memcpy_async_code's. */
static __attribute__((noinline)) infiniStatus_t quick_async_borrow_slow(void *dst, const void *src, size_t size,
                                                                        int kind, infinirtStream_t stream,
                                                                        infinirt__device *dev, bool traced)
{
    int use;
    infinirt__stream *str = infinirt__stream_borrow_slow(stream, &use);
    if (str != NULL) {
        if (quick_stream_takes(str, dev)) {
            infiniStatus_t st = queue_copy_on(str, dev, dst, src, size, kind, traced);
            infinirt__stream_return(str, use);
            return st;
        }
        infinirt__stream_return(str, use);
    }
    return memcpy_async_full_as(dst, src, size, kind, stream, traced);
}

/* The one-pass path on a stream it borrowed inline (cell use) and may not
 * take: given back, and the full checks decide. */
static __attribute__((noinline)) infiniStatus_t quick_async_leave(void *dst, const void *src, size_t size, int kind,
                                                                  infinirtStream_t stream, int use, bool traced)
{
    infinirt__handle_return(use);
    return memcpy_async_full_as(dst, src, size, kind, stream, traced);
}

/* infinirtMemcpyAsync after its entry: the usual copy in one pass
 * (quick_async_device, on a created stream quick_stream_takes), anything
 * else, a dead stream included, through the full checks.  Whatever leaves
 * the one pass once the stream is borrowed does so by a tail call
 * (quick_async_borrow_slow, quick_async_leave), so the arguments need not
 * outlive a call, and only what the plugin's call must not clobber takes
 * a saved register. */
static inline __attribute__((always_inline)) infiniStatus_t memcpy_async_code(void *dst, const void *src, size_t size,
                                                                              infinirtMemcpyKind_t kind,
                                                                              infinirtStream_t stream, bool traced)
{
    infinirt__device *dev;
    if (!quick_args(size) || stream == NULL || (dev = quick_async_device(dst, src, size, (int)kind)) == NULL)
        return memcpy_async_full_as(dst, src, size, (int)kind, stream, traced);
    int use;
    infinirt__stream *str = infinirt__handle_borrow_mine(INFINIRT__KIND_STREAM, stream, &use);
    if (__builtin_expect(str == NULL, 0))
        return quick_async_borrow_slow(dst, src, size, (int)kind, stream, dev, traced);
    if (__builtin_expect(!quick_stream_takes(str, dev), 0))
        return quick_async_leave(dst, src, size, (int)kind, stream, use, traced);
    infiniStatus_t qst = queue_copy_on(str, dev, dst, src, size, (int)kind, traced);
    infinirt__handle_return(use);
    return qst;
}

static __attribute__((noinline, cold)) infiniStatus_t
memcpy_async_traced(void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind, infinirtStream_t stream)
{
    return memcpy_async_code(dst, src, size, kind, stream, true);
}

INFINIRT_API infiniStatus_t infinirtMemcpyAsync(void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind,
                                                infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtMemcpyAsync, (dst, src, size, kind, stream),
                               memcpy_async_traced(dst, src, size, kind, stream));
    return memcpy_async_code(dst, src, size, kind, stream, false);
}

/* infinirtMemset after its entry; traced a constant. */
static inline __attribute__((always_inline)) infiniStatus_t memset_code(void *ptr, int value, size_t count,
                                                                        bool traced)
{
    static const char fn[] = "infinirtMemset";
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (count == 0)
        return INFINI_STATUS_SUCCESS;
    if (ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, fn, "ptr is NULL");
    mem_side p;
    if ((st = check_size(count, fn)) != INFINI_STATUS_SUCCESS ||
        (st = check_side(ptr, count, true, "ptr", fn, &p)) != INFINI_STATUS_SUCCESS)
        return st;
    if (p.foreign) {
        infinirt__device *base;
        if ((st = infinirt__current_device(fn, &base)) != INFINI_STATUS_SUCCESS ||
            (st = resolve_foreign(&p, ptr, base, fn)) != INFINI_STATUS_SUCCESS)
            return st;
    }
    infinirt__device *dev = p.dev;
    if ((st = infinirt__capture_sync_check(dev, true, fn)) != INFINI_STATUS_SUCCESS)
        return st;
    st = INFINIRT__TRACED(traced, infinirt__traced_memset(dev, ptr, value, count),
                          dev->plugin->ops->memset(dev->index, ptr, value, count));
    if (st != INFINI_STATUS_SUCCESS)
        return infinirt__plugin_failed(st, dev, "memset");
    return st;
}

static __attribute__((noinline, cold)) infiniStatus_t memset_traced(void *ptr, int value, size_t count)
{
    return memset_code(ptr, value, count, true);
}

INFINIRT_API infiniStatus_t infinirtMemset(void *ptr, int value, size_t count)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtMemset, (ptr, value, count), memset_traced(ptr, value, count));
    return memset_code(ptr, value, count, false);
}

/* infinirtMemsetAsync after its entry; traced a constant. */
static inline __attribute__((always_inline)) infiniStatus_t memset_async_code(void *ptr, int value, size_t count,
                                                                              infinirtStream_t stream, bool traced)
{
    static const char fn[] = "infinirtMemsetAsync";
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (count == 0)
        return check_stream_alive(stream, fn);
    if (ptr == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, fn, "ptr is NULL");
    mem_side p;
    if ((st = check_size(count, fn)) != INFINI_STATUS_SUCCESS ||
        (st = check_side(ptr, count, true, "ptr", fn, &p)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__stream *s = NULL;
    infinirt__device *base = p.dev;
    if (stream != NULL) {
        if ((st = infinirt__stream_resolve(stream, NULL, fn, &s)) != INFINI_STATUS_SUCCESS)
            return st;
        base = s->dev;
    } else if (base == NULL && (st = infinirt__current_device(fn, &base)) != INFINI_STATUS_SUCCESS) {
        return st;
    }
    if ((st = resolve_foreign(&p, ptr, base, fn)) != INFINI_STATUS_SUCCESS) {
        infinirt__stream_put(s);
        return st;
    }
    infinirt__device *owner = p.dev;
    if (s == NULL)
        s = owner->default_stream;
    infinirt__device *dev = s->dev;
    if (owner->plugin != dev->plugin) {
        st = infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "%p is memory of %s:%d, the stream is on %s:%d", ptr,
                            infinirtGetDeviceTypeName(owner->plugin->type), owner->id,
                            infinirtGetDeviceTypeName(dev->plugin->type), dev->id);
    } else {
        if (__builtin_expect(infinirt__stream_capture(s) != NULL, 0)) {
            bool recorded = false;
            infinirt__gop op = {
                .kind = INFINIRT__GOP_SET, .arg = value, .dst = ptr, .size = count, .touched = {known(&p), NULL}};
            st = infinirt__capture_op(s, &op, fn, &recorded);
            if (st != INFINI_STATUS_SUCCESS || recorded) {
                infinirt__stream_put(s);
                return st;
            }
        }
        infinirt__note_peer(known(&p), dev);
        st = INFINIRT__TRACED(traced, infinirt__traced_memset_async(s, ptr, value, count),
                              dev->plugin->ops->memset_async(dev->index, ptr, value, count, s->ps));
        infinirt__stream_note_submit(s);
        if (st != INFINI_STATUS_SUCCESS)
            infinirt__plugin_failed(st, dev, "memset_async");
    }
    infinirt__stream_put(s);
    return st;
}

static __attribute__((noinline, cold)) infiniStatus_t memset_async_traced(void *ptr, int value, size_t count,
                                                                          infinirtStream_t stream)
{
    return memset_async_code(ptr, value, count, stream, true);
}

INFINIRT_API infiniStatus_t infinirtMemsetAsync(void *ptr, int value, size_t count, infinirtStream_t stream)
{
    INFINIRT__TRACE_ENTRY_WORK(infinirtMemsetAsync, (ptr, value, count, stream),
                               memset_async_traced(ptr, value, count, stream));
    return memset_async_code(ptr, value, count, stream, false);
}
