/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_plugin.c - libinfinirt_opencl.so: INFINI_DEVICE_OPENCL through the
 * system's OpenCL ICD loader, so any vendor's OpenCL driver becomes an
 * infinirt device.  Init, shutdown, device info and the ops table.
 *
 * Init enumerates only: the ICD loader and the drivers it loads are most of
 * the cost (PoCL: 25-40 ms here), and the loader needs the device count at
 * the first infinirt call.  Contexts and queues are made on first use of
 * each device (opencl_device.c).
 */
#include "opencl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

opencl__state opencl__g;

/* The init args this plugin reads end with message_size (ABI 1.0); what
 * came later (config_warnv) is read only by infinirtPluginConfigWarn, which
 * checks struct_size itself.  Smaller args are refused with BAD_PARAM, and
 * as the message buffer is among the missing fields, the log says why
 * (plugins/README.md, "ABI fields"). */
#define INIT_ARGS_SIZE (offsetof(infinirtPluginInitArgs, message_size) + sizeof(size_t))

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void set_message(const infinirtPluginInitArgs *args, const char *msg)
{
    if (args->message == NULL || args->message_size == 0)
        return;
    snprintf(args->message, args->message_size, "%s", msg);
}

static void release_all(void)
{
    opencl__alloc a;

    for (int i = 0; i < opencl__g.count; i++)
        opencl__device_finish(&opencl__g.devices[i]);
    /* Allocations first: pinned host memory is unmapped on its device's
     * default queue, which teardown releases. */
    while (opencl__map_pop(&opencl__device_map, &a) == 0)
        opencl__alloc_release(&a);
    while (opencl__map_pop(&opencl__host_map, &a) == 0)
        opencl__alloc_release(&a);
    for (int i = 0; i < opencl__g.count; i++)
        opencl__device_teardown(&opencl__g.devices[i]);
    free(opencl__g.devices);
    opencl__g.devices = NULL;
    opencl__g.count = 0;
    opencl__map_destroy(&opencl__device_map);
    opencl__map_destroy(&opencl__host_map);
}

static infiniStatus_t plugin_init(const infinirtPluginInitArgs *args, int *device_count)
{
    char msg[512] = "";
    opencl__config cfg;
    double t0 = now_ms();
    infiniStatus_t st;
    int count = 0;

    if (args == NULL || device_count == NULL)
        return INFINI_STATUS_NULL_POINTER;
    *device_count = 0;
    if (args->struct_size < INIT_ARGS_SIZE) {
        if (args->struct_size >= offsetof(infinirtPluginInitArgs, message) && args->log != NULL)
            args->log(INFINIRT_PLUGIN_LOG_ERROR, OPENCL__NAME, "init args of %u bytes: ABI 1.0's are %zu",
                      args->struct_size, INIT_ARGS_SIZE);
        return INFINI_STATUS_BAD_PARAM;
    }
    if (opencl__g.devices != NULL)
        return INFINI_STATUS_INVALID_STATE; /* init twice without shutdown */
    opencl__g.log = args->log;
    /* Tracing (ABI 1.7): every entry that queues work reports when it ran. */
    infinirtPluginTrace *trace = infinirtPluginTraceOf(args);
    if (trace != NULL) {
        trace->plugin_flags |= INFINIRT_PLUGIN_TRACE_REPORTS;
        opencl__trace = trace;
    }

    st = opencl__config_parse(args, &cfg, msg, sizeof msg);
    if (st != INFINI_STATUS_SUCCESS) {
        set_message(args, msg[0] ? msg : "out of host memory reading [plugin.opencl]");
        return st;
    }
    opencl__map_init(&opencl__device_map);
    opencl__map_init(&opencl__host_map);
    st = opencl__discover(&cfg, &count, msg, sizeof msg);
    opencl__config_free(&cfg);
    if (st != INFINI_STATUS_SUCCESS) {
        release_all();
        set_message(args, msg[0] ? msg : "OpenCL device discovery failed (see the log)");
        return st;
    }
    set_message(args, count == 0 ? msg : "");
    opencl__log(INFINIRT_PLUGIN_LOG_INFO, "init: %d device%s in %.1f ms%s%s", count, count == 1 ? "" : "s",
                now_ms() - t0, count == 0 ? ": " : "", count == 0 ? msg : "");
    for (int i = 0; i < count; i++)
        opencl__log(INFINIRT_PLUGIN_LOG_DEBUG, "device %d: %s (%s)", i, opencl__g.devices[i].name,
                    opencl__g.devices[i].description);
    *device_count = count;
    return INFINI_STATUS_SUCCESS;
}

/* Called once at exit; also safe when init found nothing. */
static void plugin_shutdown(void)
{
    if (opencl__g.devices == NULL)
        return;
    release_all();
}

static infiniStatus_t get_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    const opencl__device *d = opencl__dev(dev);

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", d->name);
    snprintf(info->description, sizeof info->description, "%s", d->description);
    info->total_memory = d->global_mem;
    info->max_alloc_size = d->max_alloc;
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = OPENCL__NAME,
    .device_type = INFINI_DEVICE_OPENCL,

    .init = plugin_init,
    .shutdown = plugin_shutdown,
    .get_device_info = get_device_info,
    .get_mem_info = opencl__get_mem_info,
    .device_synchronize = opencl__traced_device_synchronize,

    .stream_create = opencl__stream_create,
    .stream_destroy = opencl__traced_stream_destroy,
    .stream_synchronize = opencl__traced_stream_synchronize,
    .stream_wait_event = opencl__traced_stream_wait_event,
    .launch_host_func = opencl__traced_launch_host_func,

    .event_create = opencl__event_create,
    .event_destroy = opencl__event_destroy,
    .event_record = opencl__traced_event_record,
    .event_query = opencl__event_query,
    .event_synchronize = opencl__event_synchronize,
    .event_elapsed_time = opencl__event_elapsed_time,

    .malloc_device = opencl__malloc_device,
    .free_device = opencl__free_device,
    .malloc_host = opencl__malloc_host,
    .free_host = opencl__free_host,

    .memcpy = opencl__memcpy,
    .memcpy_async = opencl__traced_memcpy_async,
    .memset = opencl__memset,
    .memset_async = opencl__traced_memset_async,

    /* ABI 1.1.  No event_get_native: OpenCL events are one-shot (each
     * record is a new marker), so an event handle stays the plugin's
     * object.  No set_device: OpenCL has no current device.  No
     * pointer_get_device: the loader knows every pointer of ours. */
    .stream_get_native = opencl__stream_get_native,
    .stream_create_with_flags = opencl__stream_create_with_flags,
    .stream_create_from_native = opencl__stream_create_from_native,
    .stream_query = opencl__stream_query,
    .device_get_native = opencl__device_get_native,
    .mem_get_native = opencl__mem_get_native,
};

INFINIRT_PLUGIN_DEFINE_ENTRY(ops)
