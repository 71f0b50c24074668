/*
 * opencl_plugin.c - libinfinirt_opencl.so: INFINI_DEVICE_OPENCL through the
 * system's OpenCL ICD loader, so any vendor's OpenCL driver becomes an
 * infinirt device.  Init, shutdown, device info and the ops table.
 *
 * Init enumerates only: the ICD loader and the drivers it loads are most of
 * the cost (PoCL: 25-40 ms here), and the loader needs the device count at
 * the first infinirt call.  Contexts and queues are made on first use of
 * each device (clp_device.c).
 */
#include "clp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

clp__state clp__g;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void set_message(const infinirtPluginInitArgs *args, const char *msg)
{
    if (args->struct_size < offsetof(infinirtPluginInitArgs, message_size) + sizeof args->message_size ||
        args->message == NULL || args->message_size == 0)
        return;
    snprintf(args->message, args->message_size, "%s", msg);
}

static void release_all(void)
{
    clp__alloc a;

    for (int i = 0; i < clp__g.count; i++)
        clp__device_finish(&clp__g.devices[i]);
    /* Allocations first: pinned host memory is unmapped on its device's
     * default queue, which teardown releases. */
    while (clp__map_pop(&clp__device_map, &a) == 0)
        clp__alloc_release(&a);
    while (clp__map_pop(&clp__host_map, &a) == 0)
        clp__alloc_release(&a);
    for (int i = 0; i < clp__g.count; i++)
        clp__device_teardown(&clp__g.devices[i]);
    free(clp__g.devices);
    clp__g.devices = NULL;
    clp__g.count = 0;
    clp__map_destroy(&clp__device_map);
    clp__map_destroy(&clp__host_map);
}

static infiniStatus_t clp_init(const infinirtPluginInitArgs *args, int *device_count)
{
    char msg[512] = "";
    clp__config cfg;
    double t0 = now_ms();
    infiniStatus_t st;
    int count = 0;

    if (args == NULL || device_count == NULL)
        return INFINI_STATUS_NULL_POINTER;
    *device_count = 0;
    if (clp__g.devices != NULL)
        return INFINI_STATUS_INVALID_STATE; /* init twice without shutdown */
    clp__g.log = args->log;

    st = clp__config_parse(args, &cfg, msg, sizeof msg);
    if (st != INFINI_STATUS_SUCCESS) {
        set_message(args, msg[0] ? msg : "out of host memory reading [plugin.opencl]");
        return st;
    }
    clp__map_init(&clp__device_map);
    clp__map_init(&clp__host_map);
    st = clp__discover(&cfg, &count, msg, sizeof msg);
    clp__config_free(&cfg);
    if (st != INFINI_STATUS_SUCCESS) {
        release_all();
        set_message(args, msg[0] ? msg : "OpenCL device discovery failed (see the log)");
        return st;
    }
    set_message(args, count == 0 ? msg : "");
    clp__log(INFINIRT_PLUGIN_LOG_INFO, "init: %d device%s in %.1f ms%s%s", count, count == 1 ? "" : "s",
             now_ms() - t0, count == 0 ? ": " : "", count == 0 ? msg : "");
    for (int i = 0; i < count; i++)
        clp__log(INFINIRT_PLUGIN_LOG_DEBUG, "device %d: %s (%s)", i, clp__g.devices[i].name,
                 clp__g.devices[i].description);
    *device_count = count;
    return INFINI_STATUS_SUCCESS;
}

/* Called once at exit; also safe when init found nothing. */
static void clp_shutdown(void)
{
    if (clp__g.devices == NULL)
        return;
    release_all();
}

static infiniStatus_t clp_get_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    const clp__device *d = clp__dev(dev);

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", d->name);
    snprintf(info->description, sizeof info->description, "%s", d->description);
    info->total_memory = d->global_mem;
    info->max_alloc_size = d->max_alloc;
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps clp_ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = CLP_NAME,
    .device_type = INFINI_DEVICE_OPENCL,

    .init = clp_init,
    .shutdown = clp_shutdown,
    .get_device_info = clp_get_device_info,
    .get_mem_info = clp__get_mem_info,
    .device_synchronize = clp__device_synchronize,

    .stream_create = clp__stream_create,
    .stream_destroy = clp__stream_destroy,
    .stream_synchronize = clp__stream_synchronize,
    .stream_wait_event = clp__stream_wait_event,
    .launch_host_func = clp__launch_host_func,

    .event_create = clp__event_create,
    .event_destroy = clp__event_destroy,
    .event_record = clp__event_record,
    .event_query = clp__event_query,
    .event_synchronize = clp__event_synchronize,
    .event_elapsed_time = clp__event_elapsed_time,

    .malloc_device = clp__malloc_device,
    .free_device = clp__free_device,
    .malloc_host = clp__malloc_host,
    .free_host = clp__free_host,

    .memcpy = clp__memcpy,
    .memcpy_async = clp__memcpy_async,
    .memset = clp__memset,
    .memset_async = clp__memset_async,

    /* ABI 1.1.  No event_get_native: OpenCL events are one-shot (each
     * record is a new marker), so an event handle stays the plugin's
     * object.  No set_device: OpenCL has no current device.  No
     * pointer_get_device: the loader knows every pointer of ours. */
    .stream_get_native = clp__stream_get_native,
    .stream_create_with_flags = clp__stream_create_with_flags,
    .stream_create_from_native = clp__stream_create_from_native,
    .stream_query = clp__stream_query,
    .device_get_native = clp__device_get_native,
    .mem_get_native = clp__mem_get_native,
};

INFINIRT_PLUGIN_DEFINE_ENTRY(clp_ops)
