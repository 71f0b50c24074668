/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.c - operations on a whole device: synchronizing every stream of
 * it, and marking what that proved complete for the allocator's fences.
 */
#include "internal.h"

#include <stdlib.h>

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
    a[0] = (sync_snap){dev->default_stream, 0,
                       atomic_load_explicit(&dev->default_stream->submitted, memory_order_acquire)};
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
                                  infinirtGetDeviceTypeName(dev->plugin->type), dev->id);
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
