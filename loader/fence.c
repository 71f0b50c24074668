/*
 * fence.c - the allocator's backend: raw memory from the plugin, and fences
 * made of pooled plugin events.
 *
 * A fence answers "has the work queued so far on this stream (or on every
 * stream that may touch this pool) completed?".  The loader counts the
 * asynchronous operations it queues on each stream and remembers how many
 * had completed at the last synchronisation, so the common case - nothing
 * in flight - costs two atomic loads and creates no event at all.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

struct infinirt__fence {
    int n;
    struct {
        infinirt__device *dev;
        void *ev;
    } item[];
};

/* ---------------------------------------------------------- event pool */

static infiniStatus_t pooled_event(infinirt__device *dev, void **ev)
{
    /* caller holds dev->lock */
    if (dev->event_pool_n > 0) {
        *ev = dev->event_pool[--dev->event_pool_n];
        return INFINI_STATUS_SUCCESS;
    }
    if (dev->plugin->ops->event_create == NULL || dev->plugin->ops->event_record == NULL)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    return dev->plugin->ops->event_create(dev->index, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, ev);
}

static void return_event(infinirt__device *dev, void *ev)
{
    pthread_mutex_lock(&dev->lock);
    if (dev->event_pool_n == dev->event_pool_cap) {
        size_t nc = dev->event_pool_cap ? dev->event_pool_cap * 2 : 16;
        void **n = realloc(dev->event_pool, nc * sizeof *n);
        if (n == NULL) {
            pthread_mutex_unlock(&dev->lock);
            dev->plugin->ops->event_destroy(dev->index, ev);
            return;
        }
        dev->event_pool = n;
        dev->event_pool_cap = nc;
    }
    dev->event_pool[dev->event_pool_n++] = ev;
    pthread_mutex_unlock(&dev->lock);
}

static bool pending(infinirt__stream *s)
{
    return atomic_load_explicit(&s->submitted, memory_order_acquire) != atomic_load(&s->synced);
}

/* Append a record on s to the fence being built; caller holds s->dev->lock. */
static infiniStatus_t add_record(infinirt__fence **f, int *cap, infinirt__stream *s)
{
    if (*f == NULL || (*f)->n == *cap) {
        int nc = *cap ? *cap * 2 : 4;
        infinirt__fence *nf = realloc(*f, sizeof **f + (size_t)nc * sizeof nf->item[0]);
        if (nf == NULL)
            return INFINI_STATUS_OUT_OF_MEMORY;
        if (*f == NULL)
            nf->n = 0;
        *f = nf;
        *cap = nc;
    }
    infinirt__device *dev = s->dev;
    void *ev;
    infiniStatus_t st = pooled_event(dev, &ev);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = dev->plugin->ops->event_record(dev->index, ev, s->ps);
    if (st != INFINI_STATUS_SUCCESS) {
        dev->plugin->ops->event_destroy(dev->index, ev);
        return st;
    }
    (*f)->item[(*f)->n].dev = dev;
    (*f)->item[(*f)->n].ev = ev;
    (*f)->n++;
    return INFINI_STATUS_SUCCESS;
}

static void fence_release(void *ctx, infinirt__fence *f)
{
    (void)ctx;
    if (f == NULL)
        return;
    for (int i = 0; i < f->n; i++)
        return_event(f->item[i].dev, f->item[i].ev);
    free(f);
}

/* Whether nothing was submitted on dev since all its streams were last
 * seen idle; *seen: the submission count it read. */
static inline bool device_idle(infinirt__device *dev, uint_fast64_t *seen)
{
    *seen = atomic_load_explicit(&dev->submitted, memory_order_acquire);
    return *seen == atomic_load_explicit(&dev->synced_all, memory_order_acquire);
}

/* Fence over every stream of dev that has work pending; *f grows. */
static infiniStatus_t fence_device(infinirt__device *dev, infinirt__fence **f, int *cap)
{
    uint_fast64_t seen;
    if (device_idle(dev, &seen))
        return INFINI_STATUS_SUCCESS;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    int before = *f ? (*f)->n : 0;
    pthread_mutex_lock(&dev->lock);
    if (pending(dev->default_stream))
        st = add_record(f, cap, dev->default_stream);
    for (infinirt__stream *s = dev->streams; s != NULL && st == INFINI_STATUS_SUCCESS; s = s->next)
        if (pending(s))
            st = add_record(f, cap, s);
    pthread_mutex_unlock(&dev->lock);
    if (st == INFINI_STATUS_SUCCESS && (*f ? (*f)->n : 0) == before) {
        /* Every stream was idle as of `seen`: remember it, so the next
         * free takes the fast path. */
        uint_fast64_t cur = atomic_load(&dev->synced_all);
        while (cur < seen && !atomic_compare_exchange_weak(&dev->synced_all, &cur, seen))
            ;
    }
    return st;
}

static infiniStatus_t finish_take(infiniStatus_t st, infinirt__fence *f, infinirt__fence **out)
{
    if (st != INFINI_STATUS_SUCCESS) {
        fence_release(NULL, f);
        *out = NULL;
        return st;
    }
    if (f != NULL && f->n == 0) {
        free(f);
        f = NULL;
    }
    *out = f;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t device_fence_take(void *ctx, void *stream, infinirt__fence **out)
{
    infinirt__device *dev = ctx;
    /* A synchronous free on an idle device (the common case): no fence,
     * two loads, no call. */
    uint_fast64_t seen;
    if (stream == INFINIRT__POOL_SYNC && device_idle(dev, &seen)) {
        *out = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    infinirt__fence *f = NULL;
    int cap = 0;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    if (stream == INFINIRT__POOL_SYNC) {
        st = fence_device(dev, &f, &cap);
    } else {
        infinirt__stream *s = stream ? stream : dev->default_stream;
        if (pending(s)) {
            pthread_mutex_lock(&dev->lock);
            st = add_record(&f, &cap, s);
            pthread_mutex_unlock(&dev->lock);
        }
    }
    return finish_take(st, f, out);
}

static infiniStatus_t host_fence_take(void *ctx, void *stream, infinirt__fence **out)
{
    /* Pinned host memory may be touched by copies on any stream of any of
     * the plugin's devices. */
    infinirt__plugin *p = ctx;
    infinirt__fence *f = NULL;
    int cap = 0;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    for (int i = 0; i < p->device_count && st == INFINI_STATUS_SUCCESS; i++)
        st = fence_device(&p->devices[i], &f, &cap);
    return finish_take(st, f, out);
}

static infiniStatus_t fence_query(void *ctx, infinirt__fence *f, int *done)
{
    (void)ctx;
    *done = 1;
    for (int i = 0; i < f->n; i++) {
        int d = 0;
        infinirt__device *dev = f->item[i].dev;
        infiniStatus_t st = dev->plugin->ops->event_query(dev->index, f->item[i].ev, &d);
        if (st != INFINI_STATUS_SUCCESS)
            return st;
        if (!d) {
            *done = 0;
            return INFINI_STATUS_SUCCESS;
        }
    }
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fence_wait(void *ctx, infinirt__fence *f)
{
    (void)ctx;
    for (int i = 0; i < f->n; i++) {
        infinirt__device *dev = f->item[i].dev;
        infiniStatus_t st = dev->plugin->ops->event_synchronize(dev->index, f->item[i].ev);
        if (st != INFINI_STATUS_SUCCESS)
            return st;
    }
    return INFINI_STATUS_SUCCESS;
}

/* ---------------------------------------------------------- raw memory */

static infiniStatus_t device_raw_alloc(void *ctx, size_t size, void **ptr)
{
    infinirt__device *dev = ctx;
    return dev->plugin->ops->malloc_device(dev->index, ptr, size);
}

static infiniStatus_t device_raw_free(void *ctx, void *ptr)
{
    infinirt__device *dev = ctx;
    return dev->plugin->ops->free_device(dev->index, ptr);
}

static infiniStatus_t host_raw_alloc(void *ctx, size_t size, void **ptr)
{
    infinirt__plugin *p = ctx;
    if (p->ops->malloc_host == NULL)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    return p->ops->malloc_host(0, ptr, size);
}

static infiniStatus_t host_raw_free(void *ctx, void *ptr)
{
    infinirt__plugin *p = ctx;
    if (p->ops->free_host == NULL)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    return p->ops->free_host(0, ptr);
}

void infinirt__fence_backend(infinirt__pool_backend *be, infinirt__device *dev, infinirt__plugin *host_plugin)
{
    *be = (infinirt__pool_backend){
        .fence_query = fence_query,
        .fence_wait = fence_wait,
        .fence_release = fence_release,
    };
    if (dev != NULL) {
        be->ctx = dev;
        be->raw_alloc = device_raw_alloc;
        be->raw_free = device_raw_free;
        be->fence_take = device_fence_take;
        be->max_alloc_size = dev->info.max_alloc_size;
        be->total_memory = dev->info.total_memory;
        be->device_type = (int)dev->plugin->type;
        be->device_id = dev->index;
        snprintf(be->label, sizeof be->label, "%s:%d", infinirtGetDeviceTypeName(dev->plugin->type), dev->index);
    } else {
        be->ctx = host_plugin;
        be->raw_alloc = host_raw_alloc;
        be->raw_free = host_raw_free;
        be->fence_take = host_fence_take;
        be->device_type = (int)host_plugin->type;
        be->device_id = -1;
        snprintf(be->label, sizeof be->label, "%s host", infinirtGetDeviceTypeName(host_plugin->type));
    }
}
