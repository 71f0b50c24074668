/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime.c - one-time initialisation, the device table, the per-thread
 * current device, and the device API.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

infinirt__runtime infinirt__rt;
atomic_int infinirt__ready;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Why infinirt__ready is 0 once the runtime has been set up: the slow path
 * reports it.  The hot path tests infinirt__ready only, so each state below
 * costs nothing until it is entered. */
enum { RT_STARTING, RT_READY, RT_SHUT_DOWN, RT_FORKED };
static atomic_int g_state = RT_STARTING;

/* At process exit: refuse further calls, tear nothing down.  Calling the
 * plugins' shutdown here would join the CPU plugin's workers (which never
 * returns in a forked child, whose threads were not copied) and free device
 * tables that other threads, later atexit handlers and static destructors
 * may still reach.  The OS reclaims memory, threads and driver state. */
static void mark_shut_down(void)
{
    int ready = RT_READY;
    atomic_compare_exchange_strong(&g_state, &ready, RT_SHUT_DOWN);
    atomic_store_explicit(&infinirt__ready, 0, memory_order_release);
}

/* In the child of a fork taken after initialisation began.  Only the forking
 * thread was copied: the streams' worker threads are gone, locks may be held
 * by threads that no longer exist, and GPU drivers do not survive fork.  So
 * the child refuses every call rather than hang or corrupt its copy. */
static void mark_forked(void)
{
    atomic_store(&g_state, RT_FORKED);
    atomic_store_explicit(&infinirt__ready, 0, memory_order_release);
}

/* The device a thread starts on: the config's default_device where it
 * exists, else cpu:0.  Checked once, by the first thread that needs it
 * (a configured default other than cpu:0 starts its plugin then). */
static pthread_once_t g_default_once = PTHREAD_ONCE_INIT;

static void default_device(void)
{
    infinirt__rt.default_type = INFINI_DEVICE_CPU;
    infinirt__rt.default_id = 0;
    infiniDevice_t t = infinirt__rt.cfg.default_type;
    int id = infinirt__rt.cfg.default_id;
    if (t == INFINI_DEVICE_CPU && id == 0)
        return;
    int slot = infinirt__type_slot(t);
    infinirt__plugin *p = slot >= 0 ? infinirt__plugin_of_slot(slot) : NULL;
    if (p != NULL && id < p->device_count) {
        infinirt__rt.default_type = t;
        infinirt__rt.default_id = id;
    } else {
        INFINIRT__WARN("default_device %s:%d does not exist (%d %s device(s)); using cpu:0",
                       infinirtGetDeviceTypeName(t), id, p ? p->device_count : 0, infinirtGetDeviceTypeName(t));
    }
}

static void do_init(void)
{
    /* First, so that a fork taken during initialisation is caught too; glibc
     * then runs this function again in the child, which stops here. */
    pthread_atfork(NULL, NULL, mark_forked);
    if (atomic_load(&g_state) == RT_FORKED)
        return;
    infinirt__log_init();
    if (infinirt__config_load(&infinirt__rt.cfg) != 0)
        return; /* the file INFINIRT_CONFIG names cannot be used (logged); every call fails */
    infinirt__log_set_default_level(infinirt__rt.cfg.log_level);
    infinirt__trace_start(&infinirt__rt.cfg); /* before any plugin starts: their start-up is traced */
    snprintf(infinirt__rt.config_path, sizeof infinirt__rt.config_path, "%s", infinirt__rt.cfg.path);
    infinirt__rt.nplugins = infinirt__plugins_load(&infinirt__rt.cfg, &infinirt__rt.plugins);
    /* No plugin starts here: the default device is checked when a thread
     * first needs it (default_device), so a slow or hung plugin holds up
     * only the calls that need its type, never infinirtInit. */
    atexit(mark_shut_down);
    int starting = RT_STARTING;
    if (atomic_compare_exchange_strong(&g_state, &starting, RT_READY))
        atomic_store_explicit(&infinirt__ready, 1, memory_order_release);
}

infiniStatus_t infinirt__init_slow(void)
{
    pthread_once(&g_once, do_init);
    infinirt__trace_settle();
    if (atomic_load_explicit(&infinirt__ready, memory_order_acquire))
        return INFINI_STATUS_SUCCESS;
    switch (atomic_load(&g_state)) {
    case RT_FORKED:
        INFINIRT__WARN("this process was forked after infinirt initialised; its infinirt state cannot be used in "
                       "the child (the parent's stream threads were not copied, and GPU drivers do not survive "
                       "fork): fork before the first infinirt call, or exec (DEVICE_NOT_INITIALIZED)");
        break;
    case RT_SHUT_DOWN:
        INFINIRT__WARN("called after infinirt shut down at process exit (from an atexit handler or a static "
                       "destructor that runs after infinirt's) (DEVICE_NOT_INITIALIZED)");
        break;
    default:
        INFINIRT__WARN("infinirt could not be initialised (DEVICE_NOT_INITIALIZED)");
        break;
    }
    return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
}

infiniStatus_t infinirt__device_lookup(infiniDevice_t type, int id, const char *fn, infinirt__device **out)
{
    int slot = infinirt__type_slot(type);
    if (slot < 0)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "device type %d is not an infiniDevice_t", (int)type);
    infinirt__plugin *p = infinirt__plugin_of_slot(slot);
    if (p == NULL)
        return infinirt__fail(INFINI_STATUS_DEVICE_TYPE_NOT_SUPPORTED, fn,
                              "no loaded plugin serves %s devices (see infinirt-info for why)",
                              infinirtGetDeviceTypeName(type));
    if (id < 0 || id >= p->device_count)
        return infinirt__fail(INFINI_STATUS_DEVICE_NOT_FOUND, fn, "%s device %d does not exist (%d present)",
                              infinirtGetDeviceTypeName(type), id, p->device_count);
    *out = &p->devices[id];
    return INFINI_STATUS_SUCCESS;
}

/* The current device.  `dev` caches the lookup so the hot path (Malloc) is
 * one thread-local read; `set` says whether this thread has chosen yet.
 * initial-exec, like the allocator's thread caches: a plain read instead of
 * a __tls_get_addr call on every Malloc (a loader dlopened after start-up
 * still gets these few bytes from glibc's static TLS surplus). */
_Thread_local __attribute__((tls_model("initial-exec"))) infinirt__current infinirt__tl_current;

static void current_init(void)
{
    pthread_once(&g_default_once, default_device);
    infinirt__tl_current.set = true;
    infinirt__tl_current.type = infinirt__rt.default_type;
    infinirt__tl_current.id = infinirt__rt.default_id;
    infinirt__plugin *p = infinirt__plugin_of_slot(infinirt__type_slot(infinirt__tl_current.type));
    infinirt__tl_current.dev =
        (p != NULL && infinirt__tl_current.id < p->device_count) ? &p->devices[infinirt__tl_current.id] : NULL;
}

infiniStatus_t infinirt__current_device_slow(const char *fn, infinirt__device **out)
{
    if (!infinirt__tl_current.set)
        current_init();
    if (infinirt__tl_current.dev != NULL) {
        *out = infinirt__tl_current.dev;
        return INFINI_STATUS_SUCCESS;
    }
    return infinirt__device_lookup(infinirt__tl_current.type, infinirt__tl_current.id, fn, out);
}

/* ------------------------------------------------------------ device API */

INFINIRT_API infiniStatus_t infinirtInit(void)
{
    INFINIRT__TRACE_ENTRY(infinirtInit, ());
    return infinirt__ensure_init();
}

INFINIRT_API infiniStatus_t infinirtGetAllDeviceCount(int *count_array)
{
    INFINIRT__TRACE_ENTRY(infinirtGetAllDeviceCount, (count_array));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (count_array == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "count_array is NULL");
    /* Exactly InfiniCore's types: a caller built against its header passes
     * an array of INFINI_DEVICE_TYPE_COUNT ints. */
    for (int t = 0; t < INFINI_DEVICE_TYPE_COUNT; t++) {
        infinirt__plugin *p = infinirt__plugin_of_slot(t);
        count_array[t] = p != NULL ? p->device_count : 0;
    }
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetDeviceTypes(infiniDevice_t *types, int capacity, int *count)
{
    INFINIRT__TRACE_ENTRY(infinirtGetDeviceTypes, (types, capacity, count));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (count == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "count is NULL");
    if (capacity < 0 || (capacity > 0 && types == NULL))
        return infinirt__fail(types == NULL ? INFINI_STATUS_NULL_POINTER : INFINI_STATUS_BAD_PARAM, __func__,
                              "types is NULL or capacity %d is negative", capacity);
    for (int i = 0; i < INFINIRT__TYPE_SLOTS && i < capacity; i++)
        types[i] = infinirt__slot_type(i);
    *count = INFINIRT__TYPE_SLOTS;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetDeviceCount(infiniDevice_t device, int *count)
{
    INFINIRT__TRACE_ENTRY(infinirtGetDeviceCount, (device, count));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (count == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "count is NULL");
    int slot = infinirt__type_slot(device);
    if (slot < 0)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "device type %d is not an infiniDevice_t",
                              (int)device);
    infinirt__plugin *p = infinirt__plugin_of_slot(slot);
    *count = p != NULL ? p->device_count : 0;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtSetDevice(infiniDevice_t device, int device_id)
{
    INFINIRT__TRACE_ENTRY(infinirtSetDevice, (device, device_id));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__device *dev = NULL;
    st = infinirt__device_lookup(device, device_id, __func__, &dev);
    if (st != INFINI_STATUS_SUCCESS)
        return st; /* the current device is unchanged */
    /* As cudaSetDevice: the backend's own current device follows (the
     * CUDA plugin makes the primary context current on this thread). */
    if (INFINIRT__HAS(dev->plugin, set_device) &&
        (st = dev->plugin->ops->set_device(dev->index)) != INFINI_STATUS_SUCCESS)
        return infinirt__plugin_failed(st, dev, "set_device");
    infinirt__tl_current.set = true;
    infinirt__tl_current.type = device;
    infinirt__tl_current.id = device_id;
    infinirt__tl_current.dev = dev;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetDevice(infiniDevice_t *device_ptr, int *device_id_ptr)
{
    INFINIRT__TRACE_ENTRY(infinirtGetDevice, (device_ptr, device_id_ptr));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (device_ptr == NULL && device_id_ptr == NULL) /* as InfiniCore's runtime answers */
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "device_ptr and device_id_ptr are both NULL");
    if (!infinirt__tl_current.set)
        current_init();
    if (device_ptr != NULL)
        *device_ptr = infinirt__tl_current.type;
    if (device_id_ptr != NULL)
        *device_id_ptr = infinirt__tl_current.id;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetMemInfo(infiniDevice_t device, int device_id, size_t *free_bytes,
                                               size_t *total_bytes)
{
    INFINIRT__TRACE_ENTRY(infinirtGetMemInfo, (device, device_id, free_bytes, total_bytes));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (free_bytes == NULL || total_bytes == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "free_bytes or total_bytes is NULL");
    infinirt__device *dev = NULL;
    if ((st = infinirt__device_lookup(device, device_id, __func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    size_t f = 0, t = 0;
    st = dev->plugin->ops->get_mem_info(dev->index, &f, &t);
    if (st != INFINI_STATUS_SUCCESS)
        return infinirt__plugin_failed(st, dev, "get_mem_info");
    *free_bytes = f;
    *total_bytes = t;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtDeviceSynchronize(void)
{
    INFINIRT__TRACE_ENTRY(infinirtDeviceSynchronize, ());
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__device *dev = NULL;
    if ((st = infinirt__current_device(__func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    if ((st = infinirt__capture_sync_check(dev, false, __func__)) != INFINI_STATUS_SUCCESS)
        return st;
    return infinirt__device_sync(dev);
}

INFINIRT_API infiniStatus_t infinirtGetDeviceProperties(infiniDevice_t device, int device_id,
                                                        infinirtDeviceProperties_t *props)
{
    INFINIRT__TRACE_ENTRY(infinirtGetDeviceProperties, (device, device_id, props));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (props == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "props is NULL");
    infinirt__device *dev = NULL;
    if ((st = infinirt__device_lookup(device, device_id, __func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    memset(props, 0, sizeof *props);
    snprintf(props->name, sizeof props->name, "%s", dev->info.name);
    snprintf(props->description, sizeof props->description, "%s", dev->info.description);
    snprintf(props->plugin, sizeof props->plugin, "%s", dev->plugin->name);
    snprintf(props->uuid, sizeof props->uuid, "%s", dev->uuid);
    props->total_memory = dev->info.total_memory;
    props->max_alloc_size = dev->info.max_alloc_size;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetConfigPath(const char **path)
{
    INFINIRT__TRACE_ENTRY(infinirtGetConfigPath, (path));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (path == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "path is NULL");
    *path = infinirt__rt.config_path;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetVersion(int *major, int *minor, int *patch)
{
    INFINIRT__TRACE_ENTRY(infinirtGetVersion, (major, minor, patch));
    if (major != NULL)
        *major = INFINIRT_VERSION_MAJOR;
    if (minor != NULL)
        *minor = INFINIRT_VERSION_MINOR;
    if (patch != NULL)
        *patch = INFINIRT_VERSION_PATCH;
    return INFINI_STATUS_SUCCESS;
}

/* ------------------------------------------------------ allocator API */

INFINIRT_API infiniStatus_t infinirtGetAllocatorStats(infiniDevice_t device, int device_id,
                                                      infinirtAllocatorStats_t *stats)
{
    INFINIRT__TRACE_ENTRY(infinirtGetAllocatorStats, (device, device_id, stats));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stats == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "stats is NULL");
    infinirt__device *dev = NULL;
    if ((st = infinirt__device_lookup(device, device_id, __func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__pool *pool = infinirt__device_pool_peek(dev);
    if (pool != NULL)
        infinirt__pool_stats(pool, stats);
    else
        memset(stats, 0, sizeof *stats); /* never used: nothing allocated */
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetHostAllocatorStats(infiniDevice_t device, infinirtAllocatorStats_t *stats)
{
    INFINIRT__TRACE_ENTRY(infinirtGetHostAllocatorStats, (device, stats));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (stats == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "stats is NULL");
    infinirt__device *dev = NULL;
    if ((st = infinirt__device_lookup(device, 0, __func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__pool_stats(dev->plugin->host_pool, stats);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetAllocatorSettings(infinirtAllocatorSettings_t *settings)
{
    INFINIRT__TRACE_ENTRY(infinirtGetAllocatorSettings, (settings));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (settings == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "settings is NULL");
    const infinirt__alloc_config *a = &infinirt__rt.cfg.alloc;
    *settings = (infinirtAllocatorSettings_t){a->enabled, a->granularity, a->max_cached_bytes, a->max_split_size,
                                              a->release_on_free};
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtResetPeakStats(infiniDevice_t device, int device_id)
{
    INFINIRT__TRACE_ENTRY(infinirtResetPeakStats, (device, device_id));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__device *dev = NULL;
    if ((st = infinirt__device_lookup(device, device_id, __func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__pool *pool = infinirt__device_pool_peek(dev);
    if (pool != NULL)
        infinirt__pool_reset_peak(pool);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtTrimCache(infiniDevice_t device, int device_id)
{
    INFINIRT__TRACE_ENTRY(infinirtTrimCache, (device, device_id));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__device *dev = NULL;
    if ((st = infinirt__device_lookup(device, device_id, __func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__pool *pool = infinirt__device_pool_peek(dev);
    return pool != NULL ? infinirt__pool_trim(pool) : INFINI_STATUS_SUCCESS;
}
