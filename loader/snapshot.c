/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.c - infinirtGetDeviceResourceSnapshot: one device's memory (the
 * plugin's figures and the caching allocator's) and, where the plugin can
 * observe it, its utilisation.
 *
 * The snapshot is built in a local copy and written out only when the call
 * succeeds, so a failing call leaves the caller's struct as it was.
 */
#include "internal.h"

#include <string.h>

/* The utilisation bits a plugin may set: infinirtPluginUtilization's bits
 * are infinirtResourceField_t's, checked here so they never drift. */
#define SNAPSHOT_UTIL_BITS \
    (INFINIRT_PLUGIN_UTIL_COMPUTE | INFINIRT_PLUGIN_UTIL_MEMORY_BANDWIDTH | INFINIRT_PLUGIN_UTIL_KERNEL_TIME)
_Static_assert(INFINIRT_PLUGIN_UTIL_COMPUTE == (uint64_t)INFINIRT_RESOURCE_FIELD_COMPUTE_UTILIZATION,
               "utilisation bit of the plugin ABI differs from the API's");
_Static_assert(INFINIRT_PLUGIN_UTIL_MEMORY_BANDWIDTH ==
                   (uint64_t)INFINIRT_RESOURCE_FIELD_MEMORY_BANDWIDTH_UTILIZATION,
               "utilisation bit of the plugin ABI differs from the API's");
_Static_assert(INFINIRT_PLUGIN_UTIL_KERNEL_TIME == (uint64_t)INFINIRT_RESOURCE_FIELD_KERNEL_TIME_RATIO,
               "utilisation bit of the plugin ABI differs from the API's");

/* A fraction from a plugin, kept in [0, 1]; NaN (a plugin's bug) is 0. */
static float clamp_fraction(float v)
{
    if (!(v > 0.0f))
        return 0.0f;
    return v > 1.0f ? 1.0f : v;
}

/* The plugin's utilisation into *snap.  Anything it cannot observe leaves
 * the bits clear: the snapshot is still a success, with the memory part. */
static void add_utilization(infinirt__device *dev, infinirtDeviceResourceSnapshot_t *snap)
{
    if (!INFINIRT__HAS(dev->plugin, get_utilization))
        return;
    infinirtPluginUtilization u;
    memset(&u, 0, sizeof u);
    infiniStatus_t st = dev->plugin->ops->get_utilization(dev->index, &u);
    if (st != INFINI_STATUS_SUCCESS) {
        /* NOT_IMPLEMENTED is the documented "nothing to observe now"; other
         * statuses are the plugin's trouble, worth a line at debug level
         * only: a monitor polls this, and memory figures are still good. */
        if (st != INFINI_STATUS_NOT_IMPLEMENTED)
            INFINIRT__DEBUG("%s:%d (plugin %s): get_utilization failed: %s; no utilisation in the snapshot",
                            infinirtGetDeviceTypeName(dev->plugin->type), dev->id, dev->plugin->name,
                            infinirtGetErrorName(st));
        return;
    }
    uint64_t valid = u.valid & SNAPSHOT_UTIL_BITS;
    if (valid & INFINIRT_PLUGIN_UTIL_COMPUTE)
        snap->compute_utilization = clamp_fraction(u.compute);
    if (valid & INFINIRT_PLUGIN_UTIL_MEMORY_BANDWIDTH)
        snap->memory_bandwidth_utilization = clamp_fraction(u.memory_bandwidth);
    if (valid & INFINIRT_PLUGIN_UTIL_KERNEL_TIME)
        snap->kernel_time_ratio = clamp_fraction(u.kernel_time);
    snap->valid_fields |= valid;
    snap->estimated_fields |= u.estimated & valid; /* only figures that are there */
}

INFINIRT_API infiniStatus_t infinirtGetDeviceResourceSnapshot(infiniDevice_t device, int device_id,
                                                              infinirtDeviceResourceSnapshot_t *snapshot)
{
    INFINIRT__TRACE_ENTRY(infinirtGetDeviceResourceSnapshot, (device, device_id, snapshot));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (snapshot == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "snapshot is NULL");
    infinirt__device *dev = NULL;
    if ((st = infinirt__device_lookup(device, device_id, __func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;

    infinirtDeviceResourceSnapshot_t snap;
    memset(&snap, 0, sizeof snap);
    snap.device_type = device;
    snap.device_id = device_id;

    /* What the allocator holds is the loader's own figure: known on every
     * backend, so reported even where the plugin gives no memory figures. */
    infinirtAllocatorStats_t stats;
    infinirt__pool *pool = infinirt__device_pool_peek(dev);
    if (pool != NULL)
        infinirt__pool_stats(pool, &stats);
    else
        memset(&stats, 0, sizeof stats);
    snap.reserved_bytes = stats.reserved_bytes;

    /* Memory capacity only from the backend: a plugin without get_mem_info
     * leaves MEMORY_CAPACITY clear rather than pass off a guess (the
     * device's nominal size with nothing free, say) as a measurement. */
    if (INFINIRT__HAS(dev->plugin, get_mem_info)) {
        size_t free_bytes = 0, total_bytes = 0;
        st = dev->plugin->ops->get_mem_info(dev->index, &free_bytes, &total_bytes);
        if (st != INFINI_STATUS_SUCCESS)
            return infinirt__plugin_failed(st, dev, "get_mem_info");
        snap.free_bytes = free_bytes;
        snap.total_bytes = total_bytes;
        /* A backend whose free figure exceeds its total (counted at two
         * moments) gives used 0, never a wrapped-around size. */
        snap.used_bytes = total_bytes > free_bytes ? total_bytes - free_bytes : 0;
        snap.valid_fields |= INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY;
    }

    add_utilization(dev, &snap);
    *snapshot = snap;
    return INFINI_STATUS_SUCCESS;
}
