/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vendor_plugin.c - a complete infinirt plugin for one vendor device type,
 * built out of tree against the installed <infinirt_plugin.h> only.
 *
 * It serves INFINI_DEVICE_ASCEND with "devices" backed by host memory, so it
 * runs anywhere; a real vendor replaces the bodies with driver calls and
 * keeps the shape.  Everything a vendor must write is here; everything else
 * (handles, argument checks, routing by pointer, the current device, the
 * caching allocator) the loader does.
 *
 * This device is synchronous: work "queued" on a stream has completed when
 * the call returns.  That is a legal backend - stream order holds trivially
 * and events complete at once - and it keeps the example short; it says so
 * to the loader (get_device_flags: DONE_AT_RETURN), which then counts and
 * fences nothing for it.  A backend whose work runs later must not.  Host
 * functions are left NULL: the loader answers NOT_IMPLEMENTED for them, and
 * the conformance tests that need them skip, since the plugin declares
 * host_functions unsupported (README.md; an undeclared skip fails).
 */
#define _POSIX_C_SOURCE 200809L
#include <infinirt_plugin.h> /* the only infinirt header a plugin needs */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEVICES 16

/* The loader's logger: lines come out prefixed and filtered by INFINIRT_LOG. */
static void (*g_log)(int, const char *, const char *, ...);
static int g_devices = 1;

/* ------------------------------------------------------------- lifecycle */

/* init: read our [plugin.NAME] keys, find devices.  Finding none is not a
 * failure: set *device_count = 0 and say why in args->message, and the
 * operator sees the reason in `infinirt-info`. */
static infiniStatus_t vendor_init(const infinirtPluginInitArgs *args, int *device_count)
{
    g_log = args->log;
    for (size_t i = 0; i < args->config_count; i++) {
        const char *k = args->config[i].key, *v = args->config[i].value;
        long n;
        /* A bad value or an unknown key is a warning with the config file
         * and line (the loader's policy): the default stays, init goes on. */
        if (strcmp(k, "devices") != 0)
            infinirtPluginConfigWarn(args, "vendor", i, "unknown key; ignored (known: devices)");
        else if (infinirtPluginParseCount(v, 0, MAX_DEVICES, &n) != 0)
            infinirtPluginConfigWarn(args, "vendor", i, "not a number from 0 to %d; using %d", MAX_DEVICES,
                                     g_devices);
        else
            g_devices = (int)n;
    }
    if (g_devices == 0)
        snprintf(args->message, args->message_size, "devices = 0 in the config");
    *device_count = g_devices;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "Example Vendor Accelerator %d", dev);
    snprintf(info->description, sizeof info->description, "host-memory example device, synchronous");
    info->total_memory = (size_t)1 << 30;
    info->max_alloc_size = 0; /* no per-allocation cap */
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    *total_bytes = (size_t)1 << 30;
    *free_bytes = *total_bytes; /* a real device asks its driver */
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_sync(int dev)
{
    return INFINI_STATUS_SUCCESS; /* nothing is ever pending */
}

/* ABI 1.5: every operation is done when its call returns (see the top). */
static infiniStatus_t vendor_device_flags(int dev, uint32_t *flags)
{
    *flags = INFINIRT_PLUGIN_DEVICE_DONE_AT_RETURN;
    return INFINI_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- memory */

/* Raw memory only: the loader caches, splits and accounts.  Report
 * OUT_OF_MEMORY when full, so the loader can release its cache and retry. */
static infiniStatus_t vendor_malloc(int dev, void **ptr, size_t size)
{
    /* 256-byte alignment, like CUDA: the loader's allocator keeps it. */
    void *p = aligned_alloc(256, (size + 255) & ~(size_t)255);
    if (p == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    *ptr = p;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_free(int dev, void *ptr)
{
    free(ptr);
    return INFINI_STATUS_SUCCESS;
}

/* The loader passes interior pointers of raw allocations (its cache splits
 * them) and has already checked every range against its allocation. */
static infiniStatus_t vendor_memcpy(int dev, void *dst, const void *src, size_t size, int kind)
{
    memmove(dst, src, size);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream)
{
    memmove(dst, src, size); /* synchronous device: done before we return */
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_memset(int dev, void *ptr, int value, size_t size)
{
    memset(ptr, value, size);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_memset_async(int dev, void *ptr, int value, size_t size, void *stream)
{
    memset(ptr, value, size);
    return INFINI_STATUS_SUCCESS;
}

/* --------------------------------------------------------------- streams */

/* A stream needs an identity only; a real device creates a queue here.
 * NULL is never passed for a stream the application created: NULL means
 * this device's default stream. */
static infiniStatus_t vendor_stream_create(int dev, void **stream)
{
    *stream = malloc(1);
    return *stream ? INFINI_STATUS_SUCCESS : INFINI_STATUS_OUT_OF_MEMORY;
}

static infiniStatus_t vendor_stream_destroy(int dev, void *stream)
{
    free(stream);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_stream_sync(int dev, void *stream)
{
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_stream_wait_event(int dev, void *stream, void *event)
{
    return INFINI_STATUS_SUCCESS; /* the event's work is already done */
}

/* ---------------------------------------------------------------- events */

typedef struct {
    uint32_t flags;
    int recorded;
    double ms; /* when its work completed */
} vendor_event;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static infiniStatus_t vendor_event_create(int dev, uint32_t flags, void **event)
{
    vendor_event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    e->flags = flags;
    *event = e;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_event_destroy(int dev, void *event)
{
    free(event);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_event_record(int dev, void *event, void *stream)
{
    vendor_event *e = event;
    e->recorded = 1;
    e->ms = now_ms(); /* all earlier work has completed by now */
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_event_query(int dev, void *event, int *complete)
{
    *complete = 1;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t vendor_event_sync(int dev, void *event)
{
    return INFINI_STATUS_SUCCESS;
}

/* The contract: INVALID_STATE for a never-recorded or timing-disabled
 * event, NOT_READY for one still pending (never here). */
static infiniStatus_t vendor_elapsed(int dev, float *ms, void *start, void *end)
{
    vendor_event *a = start, *b = end;
    if (!a->recorded || !b->recorded || ((a->flags | b->flags) & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING))
        return INFINI_STATUS_INVALID_STATE;
    *ms = (float)(b->ms - a->ms);
    return INFINI_STATUS_SUCCESS;
}

/* ------------------------------------------------------------ host memory */

static infiniStatus_t vendor_malloc_host(int dev, void **ptr, size_t size)
{
    return vendor_malloc(dev, ptr, size); /* a real device pins it */
}

/* ---------------------------------------------------------- the ops table */

/* The header (ABI version, struct_size, name, device type) is what the
 * loader checks first; designated initializers keep the table right however
 * the struct grows in later minors. */
static const infinirtPluginOps vendor_ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = "vendor",
    .device_type = INFINI_DEVICE_ASCEND,
    .init = vendor_init,
    .get_device_info = vendor_device_info,
    .get_mem_info = vendor_mem_info,
    .device_synchronize = vendor_sync,
    .stream_create = vendor_stream_create,
    .stream_destroy = vendor_stream_destroy,
    .stream_synchronize = vendor_stream_sync,
    .stream_wait_event = vendor_stream_wait_event,
    .launch_host_func = NULL, /* not supported: the loader says NOT_IMPLEMENTED */
    .event_create = vendor_event_create,
    .event_destroy = vendor_event_destroy,
    .event_record = vendor_event_record,
    .event_query = vendor_event_query,
    .event_synchronize = vendor_event_sync,
    .event_elapsed_time = vendor_elapsed,
    .malloc_device = vendor_malloc,
    .free_device = vendor_free,
    .malloc_host = vendor_malloc_host,
    .free_host = vendor_free,
    .memcpy = vendor_memcpy,
    .memcpy_async = vendor_memcpy_async,
    .memset = vendor_memset,
    .memset_async = vendor_memset_async,
    .get_device_flags = vendor_device_flags, /* ABI 1.5 */
};

/* The one exported symbol: answers the loader's handshake with the table. */
INFINIRT_PLUGIN_DEFINE_ENTRY(vendor_ops)
