/* SPDX-License-Identifier: Apache-2.0 */
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
#include "alloc_faults.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/*
 * A fence is a list of items, one per stream it covers.  Each item holds
 * `seen`, the device's submission count when it was taken: once the device
 * has been seen idle past that count (synced_all >= seen) the item is
 * complete whatever its event says.  An item without an event (ev == NULL)
 * stands for a fence the plugin could not give - it has no events, or
 * creating or recording one failed - and completes only that way: it is
 * queried by checking whether every stream of the device is idle, and
 * waited for by synchronising the device.  So a plugin whose events fail
 * degrades to synchronising, and memory stays held until then, never
 * reused early.
 */
struct infinirt__fence {
    int n;
    struct {
        infinirt__device *dev;
        void *ev;
        uint_fast64_t seen;
    } item[];
};

/* ---------------------------------------------------------- event pool */

/*
 * Each device keeps its idle fence events in dev->event_pool.  The array
 * always has room for every event the device owns (idle or in a fence:
 * dev->events_owned, changed under dev->lock only), so giving one back
 * never allocates and never destroys: fence_release, which the allocator
 * calls under its arena locks, takes only dev->event_lock, a leaf held for
 * a push and never across a plugin call.
 */
static infiniStatus_t pooled_event(infinirt__device *dev, void **ev)
{
    /* caller holds dev->lock */
    pthread_mutex_lock(&dev->event_lock);
    if (dev->event_pool_n > 0) {
        *ev = dev->event_pool[--dev->event_pool_n];
        pthread_mutex_unlock(&dev->event_lock);
        return INFINI_STATUS_SUCCESS;
    }
    /* Room for the new event to come back to, before it exists. */
    if (dev->event_pool_cap == dev->events_owned) {
        size_t nc = dev->event_pool_cap ? dev->event_pool_cap * 2 : 16;
        void **n = realloc(dev->event_pool, nc * sizeof *n);
        if (n == NULL) {
            pthread_mutex_unlock(&dev->event_lock);
            return INFINI_STATUS_OUT_OF_MEMORY;
        }
        dev->event_pool = n;
        dev->event_pool_cap = nc;
    }
    pthread_mutex_unlock(&dev->event_lock);
    infiniStatus_t st = dev->plugin->ops->event_create(dev->index, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, ev);
    if (st == INFINI_STATUS_SUCCESS && *ev == NULL)
        return INFINI_STATUS_INTERNAL_ERROR; /* no event: the fence goes by the counts (the caller warns) */
    if (st == INFINI_STATUS_SUCCESS)
        dev->events_owned++;
    return st;
}

/* An event of the pool that will not come back (caller holds dev->lock). */
static void drop_event(infinirt__device *dev, void *ev)
{
    dev->plugin->ops->event_destroy(dev->index, ev);
    dev->events_owned--;
}

/* One warning per device and cause, so a failing plugin does not flood the
 * log at every free. */
static void warn_once(infinirt__device *dev, atomic_bool *flag, const char *what, infiniStatus_t st)
{
    if (!atomic_exchange(flag, true))
        INFINIRT__WARN("%s:%d (plugin %s): %s failed (%s); memory freed behind queued work is held until the "
                       "device is next synchronized",
                       infinirtGetDeviceTypeName(dev->plugin->type), dev->id, dev->plugin->name, what,
                       infinirtGetErrorName(st));
}

static void return_event(infinirt__device *dev, void *ev)
{
    pthread_mutex_lock(&dev->event_lock);
    /* Always room (see pooled_event). */
    dev->event_pool[dev->event_pool_n++] = ev;
    pthread_mutex_unlock(&dev->event_lock);
}

static bool pending(infinirt__stream *s)
{
    return atomic_load_explicit(&s->submitted, memory_order_acquire) != atomic_load(&s->synced);
}

/* Whether s may have work queued that has not completed.  Where the
 * plugin's streams may carry work the application queued natively (it has
 * stream_query), the loader's counts cannot tell: the plugin is asked, and
 * an error counts as busy.  Never blocks. */
static bool busy(infinirt__stream *s)
{
    infinirt__device *dev = s->dev;
    /* A stream capturing in its backend is never queried (CUDA would
     * invalidate the capture): busy until the device is seen idle later. */
    if (INFINIRT__NATIVE_GRAPHS(dev->plugin) && infinirt__native_capturing(s))
        return true;
    if (!INFINIRT__NATIVE_WORK(dev->plugin))
        return pending(s);
    int idle = 0;
    return dev->plugin->ops->stream_query(dev->index, s->ps, &idle) != INFINI_STATUS_SUCCESS || !idle;
}

bool infinirt__stream_busy(infinirt__stream *s)
{
    return !s->dev->done_at_return && busy(s); /* done_at_return: never any work in flight */
}

/* The submission count a fence item on dev is taken at.  Native work is not
 * counted, so on such a device the count is raised first: only a device
 * synchronize that begins after this (and so waits for the native work
 * queued before the free) proves the item complete. */
static uint_fast64_t take_seen(infinirt__device *dev)
{
    if (INFINIRT__NATIVE_WORK(dev->plugin))
        return atomic_fetch_add_explicit(&dev->submitted, 1, memory_order_acq_rel) + 1;
    return atomic_load_explicit(&dev->submitted, memory_order_acquire);
}

/* Append a record on s to the fence being built; caller holds s->dev->lock.
 * Fails only for lack of memory: a plugin that cannot give an event gets an
 * item without one (see struct infinirt__fence). */
static infiniStatus_t add_record(infinirt__fence **f, int *cap, infinirt__stream *s)
{
    if (*f == NULL || (*f)->n == *cap) {
        int nc = *cap ? *cap * 2 : 4;
        infinirt__fence *nf = INFINIRT__HOST_REALLOC(*f, sizeof **f + (size_t)nc * sizeof nf->item[0]);
        if (nf == NULL)
            return INFINI_STATUS_OUT_OF_MEMORY;
        if (*f == NULL)
            nf->n = 0;
        *f = nf;
        *cap = nc;
    }
    infinirt__device *dev = s->dev;
    /* Read before the record: work counted by then is behind the event. */
    uint_fast64_t seen = take_seen(dev);
    void *ev = NULL;
    /* Never a record on a stream capturing in its backend (it would become
     * part of the graph): the item completes by the counters only. */
    if (INFINIRT__HAS(dev->plugin, event_record) &&
        !(INFINIRT__NATIVE_GRAPHS(dev->plugin) && infinirt__native_capturing(s))) {
        infiniStatus_t st = pooled_event(dev, &ev);
        if (st != INFINI_STATUS_SUCCESS) {
            warn_once(dev, &dev->fence_warned, "event_create for a fence", st);
            ev = NULL;
        } else if ((st = dev->plugin->ops->event_record(dev->index, ev, s->ps)) != INFINI_STATUS_SUCCESS) {
            warn_once(dev, &dev->fence_warned, "event_record for a fence", st);
            drop_event(dev, ev);
            ev = NULL;
        }
    }
    (*f)->item[(*f)->n].dev = dev;
    (*f)->item[(*f)->n].ev = ev;
    (*f)->item[(*f)->n].seen = seen;
    (*f)->n++;
    return INFINI_STATUS_SUCCESS;
}

static void fence_release(void *ctx, infinirt__fence *f)
{
    (void)ctx;
    if (f == NULL)
        return;
    for (int i = 0; i < f->n; i++)
        if (f->item[i].ev != NULL)
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

/* Whether the plugin of a device with native work says all of it is idle
 * (ABI 1.6 device_query): one call instead of dev->lock and a query per
 * stream.  False when it cannot say - no entry, busy, or an error (warned
 * once; the per-stream queries decide then).  Never blocks. */
static bool plugin_says_idle(infinirt__device *dev)
{
    if (!INFINIRT__NATIVE_WORK(dev->plugin) || !INFINIRT__HAS(dev->plugin, device_query))
        return false;
    int idle = 0;
    infiniStatus_t st = dev->plugin->ops->device_query(dev->index, &idle);
    if (st != INFINI_STATUS_SUCCESS) {
        if (!atomic_exchange(&dev->devq_warned, true))
            INFINIRT__WARN("%s:%d (plugin %s): device_query failed (%s); the allocator queries each stream instead",
                           infinirtGetDeviceTypeName(dev->plugin->type), dev->id, dev->plugin->name,
                           infinirtGetErrorName(st));
        return false;
    }
    return idle != 0; /* as busy() reads stream_query's answer */
}

/* Whether the work counted as of `seen` has completed, as far as the
 * loader's own counters tell: the device was idle past it, or every stream
 * has been synchronised past what it had queued.  Never blocks. */
static bool done_by_counters(infinirt__device *dev, uint_fast64_t seen)
{
    uint_fast64_t now;
    if (atomic_load_explicit(&dev->synced_all, memory_order_acquire) >= seen || device_idle(dev, &now))
        return true;
    if (plugin_says_idle(dev)) {
        infinirt__device_note_idle(dev, now); /* asked after `now` was read */
        return true;
    }
    /* Called under arena locks: never wait for dev->lock (a device
     * synchronize may hold it for long); busy means "not known done". */
    if (pthread_mutex_trylock(&dev->lock) != 0)
        return false;
    bool idle = !busy(dev->default_stream);
    for (infinirt__stream *s = dev->streams; s != NULL && idle; s = s->next)
        idle = !busy(s);
    pthread_mutex_unlock(&dev->lock);
    if (idle)
        infinirt__device_note_idle(dev, now);
    return idle;
}

/* Fence over every stream of dev that has work pending; *f grows. */
static infiniStatus_t fence_device(infinirt__device *dev, infinirt__fence **f, int *cap)
{
    uint_fast64_t seen;
    if (device_idle(dev, &seen) && !INFINIRT__NATIVE_WORK(dev->plugin))
        return INFINI_STATUS_SUCCESS;
    if (plugin_says_idle(dev)) {
        infinirt__device_note_idle(dev, seen); /* asked after `seen` was read */
        return INFINI_STATUS_SUCCESS;
    }
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    int before = *f ? (*f)->n : 0;
    pthread_mutex_lock(&dev->lock);
    if (busy(dev->default_stream))
        st = add_record(f, cap, dev->default_stream);
    for (infinirt__stream *s = dev->streams; s != NULL && st == INFINI_STATUS_SUCCESS; s = s->next)
        if (busy(s))
            st = add_record(f, cap, s);
    pthread_mutex_unlock(&dev->lock);
    if (st == INFINI_STATUS_SUCCESS && (*f ? (*f)->n : 0) == before)
        infinirt__device_note_idle(dev, seen); /* every stream idle as of `seen`: the next free takes the fast path */
    return st;
}

/* wait_idle for one device: everything queued on it has completed. */
static infiniStatus_t device_wait_idle(infinirt__device *dev)
{
    /* A device synchronize would invalidate the captures under way in the
     * backend: the memory stays held until the device is next idle. */
    if (INFINIRT__NATIVE_GRAPHS(dev->plugin) && atomic_load(&dev->captures) > 0)
        return INFINI_STATUS_INVALID_STATE;
    return infinirt__device_sync(dev);
}

/* The devices whose streams may touch memory of dev: dev and its peers
 * (see infinirt__device.peers).  Returns how many were written to out. */
static int covered_devices(infinirt__device *dev, infinirt__device **out, int max)
{
    int n = 0;
    out[n++] = dev;
    uint_fast64_t peers = atomic_load_explicit(&dev->peers, memory_order_acquire);
    infinirt__plugin *p = dev->plugin;
    for (int i = 0; i < p->device_count && peers != 0 && n < max; i++) {
        uint_fast64_t bit = (uint_fast64_t)1 << (i < 63 ? i : 63);
        if ((peers & bit) && &p->devices[i] != dev)
            out[n++] = &p->devices[i];
    }
    return n;
}

/* A fence could not be built (no memory for it): the caller's free is safe
 * only once the work queued so far has completed, so wait for it now; if
 * even that fails, the free fails and nothing changes. */
static infiniStatus_t finish_take(infiniStatus_t st, infinirt__fence *f, infinirt__fence **out,
                                  infinirt__device **devs, int ndevs)
{
    if (st != INFINI_STATUS_SUCCESS) {
        fence_release(NULL, f);
        *out = NULL;
        INFINIRT__WARN("no memory for a fence; synchronizing the device instead");
        for (int i = 0; i < ndevs; i++) {
            infiniStatus_t w = device_wait_idle(devs[i]);
            if (w != INFINI_STATUS_SUCCESS)
                return w;
        }
        return INFINI_STATUS_SUCCESS;
    }
    if (f != NULL && f->n == 0) {
        free(f);
        f = NULL;
    }
    *out = f;
    return INFINI_STATUS_SUCCESS;
}

#define MAX_COVERED 64

/* A stream-ordered free on `stream` (NULL: the device's default stream). */
static infiniStatus_t device_fence_take(void *ctx, void *stream, infinirt__fence **out)
{
    infinirt__device *dev = ctx;
    /* On a device whose work is done when queued (DONE_AT_RETURN), freed by
     * such a device's stream, with memory no other device's stream has
     * touched: nothing can be in flight, no fence.  (The allocator tests
     * `quiet_while_zero`, the same `peers` word, before calling: the
     * streams it is given for this device's pool are this device's.) */
    if (dev->done_at_return && atomic_load_explicit(&dev->peers, memory_order_relaxed) == 0 &&
        (stream == NULL || ((infinirt__stream *)stream)->dev->done_at_return)) {
        *out = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    infinirt__fence *f = NULL;
    int cap = 0;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    infinirt__stream *s = stream ? stream : dev->default_stream;
    if (INFINIRT__NATIVE_GRAPHS(dev->plugin)) {
        /* The check and the record under the lock a BeginCapture takes
         * around the backend's: a capture cannot begin between "not
         * capturing" and a query or record that would join or invalidate
         * it. */
        pthread_mutex_lock(&dev->lock);
        if (busy(s))
            st = add_record(&f, &cap, s);
        pthread_mutex_unlock(&dev->lock);
    } else if (busy(s)) {
        pthread_mutex_lock(&dev->lock);
        st = add_record(&f, &cap, s);
        pthread_mutex_unlock(&dev->lock);
    }
    return finish_take(st, f, out, &dev, 1);
}

/* A synchronous free: every stream of the device and of its peers. */
static infiniStatus_t device_fence_take_all(void *ctx, infinirt__fence **out)
{
    infinirt__device *dev = ctx;
    /* With memory no other device's stream has touched, on a device whose
     * work is done when queued (DONE_AT_RETURN) - or on an idle one (the
     * common case: no fence, three loads, no call): nothing can be in
     * flight, no fence. */
    uint_fast64_t seen;
    if (atomic_load_explicit(&dev->peers, memory_order_relaxed) == 0 &&
        (dev->done_at_return || (device_idle(dev, &seen) && !INFINIRT__NATIVE_WORK(dev->plugin)))) {
        *out = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    infinirt__fence *f = NULL;
    int cap = 0;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    infinirt__device *devs[MAX_COVERED];
    int ndevs = covered_devices(dev, devs, MAX_COVERED);
    for (int i = 0; i < ndevs && st == INFINI_STATUS_SUCCESS; i++)
        st = fence_device(devs[i], &f, &cap);
    return finish_take(st, f, out, devs, ndevs);
}

static infiniStatus_t host_fence_take_all(void *ctx, infinirt__fence **out)
{
    /* Pinned host memory may be touched by copies on any stream of any
     * device - of any plugin: a block from one plugin's host pool may be
     * the host side of a copy on another backend's stream.  Idle devices
     * cost two loads each. */
    (void)ctx;
    infinirt__fence *f = NULL;
    int cap = 0;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    infinirt__device *devs[MAX_COVERED];
    int ndevs = 0;
    for (int k = 0; k < INFINIRT__TYPE_SLOTS && st == INFINI_STATUS_SUCCESS; k++) {
        /* The plugin serving each type: a type not started yet has no
         * device that could use the block (nor does a plugin that serves
         * none), and one starting is not waited for.  One look per type,
         * however many plugins the config names. */
        infinirt__plugin *p = infinirt__plugin_of_slot_if_started(k);
        if (p == NULL)
            continue;
        for (int i = 0; i < p->device_count && st == INFINI_STATUS_SUCCESS; i++) {
            st = fence_device(&p->devices[i], &f, &cap);
            if (ndevs < MAX_COVERED)
                devs[ndevs++] = &p->devices[i];
        }
    }
    return finish_take(st, f, out, devs, ndevs);
}

/* A free on one stream waits for the same: every stream that may use the
 * block. */
static infiniStatus_t host_fence_take(void *ctx, void *stream, infinirt__fence **out)
{
    (void)stream;
    return host_fence_take_all(ctx, out);
}

static infiniStatus_t fence_query(void *ctx, infinirt__fence *f, int *done)
{
    (void)ctx;
    *done = 1;
    for (int i = 0; i < f->n; i++) {
        infinirt__device *dev = f->item[i].dev;
        if (atomic_load_explicit(&dev->synced_all, memory_order_acquire) >= f->item[i].seen)
            continue;
        int d = 0;
        bool answered = false;
        if (f->item[i].ev != NULL) {
            infiniStatus_t st = dev->plugin->ops->event_query(dev->index, f->item[i].ev, &d);
            if (st == INFINI_STATUS_SUCCESS)
                answered = true;
            else /* an error is no answer: the block stays pending unless the counters prove the work done */
                warn_once(dev, &dev->query_warned, "event_query on a fence", st);
        }
        /* The stream scan only where the event could not answer. */
        if (!d && (answered || !done_by_counters(dev, f->item[i].seen))) {
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
        if (atomic_load_explicit(&dev->synced_all, memory_order_acquire) >= f->item[i].seen)
            continue;
        if (f->item[i].ev != NULL) {
            infiniStatus_t st = dev->plugin->ops->event_synchronize(dev->index, f->item[i].ev);
            if (st == INFINI_STATUS_SUCCESS)
                continue;
            warn_once(dev, &dev->wait_warned, "event_synchronize on a fence", st);
        }
        /* No event, or it failed: synchronise the whole device. */
        infiniStatus_t st = device_wait_idle(dev);
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
    return p->ops->malloc_host(0, ptr, size);
}

static infiniStatus_t host_raw_free(void *ctx, void *ptr)
{
    infinirt__plugin *p = ctx;
    return p->ops->free_host(0, ptr);
}

/* A device's pool: raw memory from the plugin's device allocator, fences
 * over the streams of the device (and of its peers). */
void infinirt__fence_backend_device(infinirt__pool_backend *be, infinirt__device *dev)
{
    *be = (infinirt__pool_backend){
        .ctx = dev,
        .raw_alloc = device_raw_alloc,
        .raw_free = device_raw_free,
        .fence_take = device_fence_take,
        .fence_take_all = device_fence_take_all,
        .fence_query = fence_query,
        .fence_wait = fence_wait,
        .fence_release = fence_release,
        .status_name = infinirtGetErrorName,
        /* What device_fence_take_all tests first, without the call: on a
         * DONE_AT_RETURN device with no peers nothing is in flight. */
        .quiet_while_zero = dev->done_at_return ? &dev->peers : NULL,
        .max_alloc_size = dev->info.max_alloc_size,
        .total_memory = dev->info.total_memory,
        .device_type = (int)dev->plugin->type,
        .device_id = dev->id,
        .note = infinirt__trace_enabled() ? infinirt__trace_pool_note : NULL,
    };
    snprintf(be->label, sizeof be->label, "%s:%d", infinirtGetDeviceTypeName(dev->plugin->type), dev->id);
}

/* A plugin's host (MallocHost) pool: pinned memory from the plugin, fences
 * over every stream of every started plugin. */
void infinirt__fence_backend_host(infinirt__pool_backend *be, infinirt__plugin *host_plugin)
{
    /* Pinned memory is host memory: a request beyond the machine's
     * physical memory fails at once instead of emptying the cache. */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *be = (infinirt__pool_backend){
        .ctx = host_plugin,
        .raw_alloc = host_raw_alloc,
        .raw_free = host_raw_free,
        .fence_take = host_fence_take,
        .fence_take_all = host_fence_take_all,
        .fence_query = fence_query,
        .fence_wait = fence_wait,
        .fence_release = fence_release,
        .status_name = infinirtGetErrorName,
        .total_memory = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0,
        .device_type = (int)host_plugin->type,
        .device_id = -1,
        .note = infinirt__trace_enabled() ? infinirt__trace_pool_note : NULL,
    };
    snprintf(be->label, sizeof be->label, "%s host", infinirtGetDeviceTypeName(host_plugin->type));
}
