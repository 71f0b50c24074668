/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_plugin.c - libinfinirt_cuda.so: the NVIDIA backend of infinirt.
 *
 * Init finds the driver (cuda_driver.c), reads [plugin.cuda]
 * (cuda_config.c) and builds the device table (cuda_device.c).  A machine
 * without the driver or without a GPU is a successful init with no device
 * and a message saying which; the other backends are not affected.
 *
 * This file also holds get_device_info and, at the bottom, the ops table and
 * the one exported symbol; the other device entries are in cuda_device.c.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* The init args this plugin reads end with message_size (ABI 1.0); what
 * came later (config_warnv) is read only by infinirtPluginConfigWarn, which
 * checks struct_size itself.  Smaller args are refused with BAD_PARAM, and
 * as the message buffer is among the missing fields, the log says why
 * (plugins/README.md, "ABI fields"). */
#define INIT_ARGS_SIZE (offsetof(infinirtPluginInitArgs, message_size) + sizeof(size_t))

static infiniStatus_t plugin_init(const infinirtPluginInitArgs *args, int *device_count)
{
    cuda__config_t cfg;
    char scratch[512];
    char *msg = scratch;
    size_t msg_size = sizeof scratch;
    int no_device = 0;
    infiniStatus_t st;

    if (args == NULL || device_count == NULL)
        return INFINI_STATUS_NULL_POINTER;
    *device_count = 0;
    if (args->struct_size < INIT_ARGS_SIZE) {
        if (args->struct_size >= offsetof(infinirtPluginInitArgs, message) && args->log != NULL)
            args->log(INFINIRT_PLUGIN_LOG_ERROR, CUDA__NAME, "init args of %u bytes: ABI 1.0's are %zu",
                      args->struct_size, INIT_ARGS_SIZE);
        return INFINI_STATUS_BAD_PARAM;
    }
    if (args->message != NULL && args->message_size > 0) {
        msg = args->message;
        msg_size = args->message_size;
    }
    msg[0] = '\0';
    cuda__set_logger(args->log);

    st = cuda__config_parse(args, &cfg, msg, msg_size);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (cuda__driver_load(cfg.driver_library, msg, msg_size, &no_device) != 0) {
        cuda__config_free(&cfg);
        return no_device ? INFINI_STATUS_SUCCESS : INFINI_STATUS_DEVICE_NOT_INITIALIZED;
    }
    st = cuda__devices_discover(&cfg, msg, msg_size);
    cuda__nvml_configure(cfg.nvml_library);
    cuda__config_free(&cfg);
    if (st != INFINI_STATUS_SUCCESS) {
        cuda__devices_release();
        /* The library stays loaded: cuInit has run, and unloading a driver
         * that may have started threads is not safe. */
        cuda__driver_forget();
        return st;
    }
    *device_count = cuda__state.count;
    /* Tracing (ABI 1.7): the work each entry queues is reported with the
     * GPU's times (cuda_trace.c). */
    infinirtPluginTrace *trace = infinirtPluginTraceOf(args);
    if (trace != NULL && *device_count > 0) {
        cuda__trace_init(trace, *device_count);
        if (cuda__trace != NULL)
            trace->plugin_flags |= INFINIRT_PLUGIN_TRACE_REPORTS;
    }
    if (*device_count > 0)
        cuda__log(INFINIRT_PLUGIN_LOG_INFO, "%d device(s), driver for CUDA %d.%d, built with CUDA %d.%d",
                  *device_count, cuda__state.driver_version / 1000, cuda__state.driver_version % 1000 / 10,
                  CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    return INFINI_STATUS_SUCCESS;
}

static void plugin_shutdown(void)
{
    cuda__devices_release();
    cuda__driver_forget();
}

static infiniStatus_t get_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    const cuda__device_t *d = cuda__device(dev);
    int major = 0, minor = 0, sms = 0, domain = 0, bus = 0, slot = 0;
    int v = cuda__state.driver_version;
    size_t total = 0;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    memset(info, 0, sizeof *info);
    st = CUDA__CALL(dev, DeviceGetName, info->name, (int)sizeof info->name, d->cudev);
    if (st == INFINI_STATUS_SUCCESS)
        st = CUDA__CALL(dev, DeviceTotalMem, &total, d->cudev);
#define ATTR_(out, attr)             \
    if (st == INFINI_STATUS_SUCCESS) \
        st = CUDA__CALL(dev, DeviceGetAttribute, &(out), attr, d->cudev);
    ATTR_(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    ATTR_(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    ATTR_(sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    ATTR_(domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
    ATTR_(bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
    ATTR_(slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
#undef ATTR_
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    info->name[sizeof info->name - 1] = '\0';
    /* The CUDA ordinal is named because `devices =` may make it differ from
     * the infinirt device id. */
    snprintf(info->description, sizeof info->description,
             "compute capability %d.%d, driver %d.%d, %d SMs, CUDA device %d, PCI %04x:%02x:%02x.0", major, minor,
             v / 1000, v % 1000 / 10, sms, d->ordinal, (unsigned)domain, (unsigned)bus, (unsigned)slot);
    info->total_memory = total;
    info->max_alloc_size = 0; /* cuMemAlloc takes anything that fits */
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = CUDA__NAME,
    .device_type = INFINI_DEVICE_NVIDIA,

    .init = plugin_init,
    .shutdown = plugin_shutdown,
    .get_device_info = get_device_info,
    .get_mem_info = cuda__get_mem_info,
    .device_synchronize = cuda__traced_device_synchronize,

    .stream_create = cuda__stream_create,
    .stream_destroy = cuda__stream_destroy,
    .stream_synchronize = cuda__traced_stream_synchronize,
    .stream_wait_event = cuda__traced_stream_wait_event,
    .launch_host_func = cuda__traced_launch_host_func,

    .event_create = cuda__event_create,
    .event_destroy = cuda__event_destroy,
    .event_record = cuda__traced_event_record,
    .event_query = cuda__event_query,
    .event_synchronize = cuda__traced_event_synchronize,
    .event_elapsed_time = cuda__event_elapsed_time,

    .malloc_device = cuda__malloc_device,
    .free_device = cuda__free_device,
    .malloc_host = cuda__malloc_host,
    .free_host = cuda__free_host,

    .memcpy = cuda__memcpy,
    .memcpy_async = cuda__traced_memcpy_async,
    .memset = cuda__memset,
    .memset_async = cuda__traced_memset_async,

    .stream_get_native = cuda__stream_get_native,
    .event_get_native = cuda__event_get_native,
    .stream_create_with_flags = cuda__stream_create_with_flags,
    .stream_create_from_native = cuda__stream_create_from_native,
    .stream_query = cuda__stream_query,
    .device_get_native = cuda__device_get_native,
    /* mem_get_native: none, memory is addressable (the pointer, offset 0). */
    .set_device = cuda__set_device,
    .pointer_get_device = cuda__pointer_get_device,

    /* ABI 1.2: native capture and graphs (cuda_graph.c) */
    .stream_begin_capture = cuda__stream_begin_capture,
    .stream_end_capture = cuda__stream_end_capture,
    .stream_is_capturing = cuda__stream_is_capturing,
    .graph_instantiate = cuda__graph_instantiate,
    .graph_launch = cuda__traced_graph_launch,
    .graph_exec_destroy = cuda__graph_exec_destroy,
    .graph_destroy = cuda__graph_destroy,

    /* ABI 1.2: utilisation for the resource snapshot (cuda_nvml.c) */
    .get_utilization = cuda__get_utilization,

    /* ABI 1.3: the device's UUID */
    .get_device_uuid = cuda__get_device_uuid,
};

INFINIRT_PLUGIN_DEFINE_ENTRY(ops)
