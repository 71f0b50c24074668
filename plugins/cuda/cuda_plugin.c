/*
 * cuda_plugin.c - libinfinirt_cuda.so: the NVIDIA backend of infinirt.
 *
 * Init finds the driver (cuda_driver.c), reads [plugin.cuda]
 * (cuda_config.c) and builds the device table (cuda_context.c).  A machine
 * without the driver or without a GPU is a successful init with no device
 * and a message saying which; the other backends are not affected.
 *
 * This file also holds the device-level entries and, at the bottom, the ops
 * table and the one exported symbol.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static infiniStatus_t cuda_init(const infinirtPluginInitArgs *args, int *device_count)
{
    infinirt_cuda__config_t cfg;
    char scratch[512];
    char *msg = scratch;
    size_t msg_size = sizeof scratch;
    int no_device = 0;
    infiniStatus_t st;

    if (args == NULL || device_count == NULL)
        return INFINI_STATUS_NULL_POINTER;
    *device_count = 0;
    if (args->struct_size < sizeof *args)
        return INFINI_STATUS_BAD_PARAM;
    if (args->message != NULL && args->message_size > 0) {
        msg = args->message;
        msg_size = args->message_size;
    }
    msg[0] = '\0';
    infinirt_cuda__set_logger(args->log);

    st = infinirt_cuda__config_parse(args, &cfg, msg, msg_size);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (infinirt_cuda__driver_load(cfg.driver_library, msg, msg_size, &no_device) != 0) {
        infinirt_cuda__config_free(&cfg);
        return no_device ? INFINI_STATUS_SUCCESS : INFINI_STATUS_DEVICE_NOT_INITIALIZED;
    }
    st = infinirt_cuda__devices_discover(&cfg, msg, msg_size);
    infinirt_cuda__nvml_configure(cfg.nvml_library);
    infinirt_cuda__config_free(&cfg);
    if (st != INFINI_STATUS_SUCCESS) {
        infinirt_cuda__devices_release();
        /* The library stays loaded: cuInit has run, and unloading a driver
         * that may have started threads is not safe. */
        infinirt_cuda__driver_forget();
        return st;
    }
    *device_count = infinirt_cuda__state.count;
    if (*device_count > 0)
        infinirt_cuda__log(INFINIRT_PLUGIN_LOG_INFO, "%d device(s), driver for CUDA %d.%d, built with CUDA %d.%d",
                           *device_count, infinirt_cuda__state.driver_version / 1000,
                           infinirt_cuda__state.driver_version % 1000 / 10, CUDA_VERSION / 1000,
                           CUDA_VERSION % 1000 / 10);
    return INFINI_STATUS_SUCCESS;
}

static void cuda_shutdown(void)
{
    infinirt_cuda__devices_release();
    infinirt_cuda__driver_forget();
}

static infiniStatus_t cuda_get_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    const infinirt_cuda__device_t *d = &infinirt_cuda__state.devices[dev];
    int major = 0, minor = 0, sms = 0, domain = 0, bus = 0, slot = 0;
    int v = infinirt_cuda__state.driver_version;
    size_t total = 0;
    infiniStatus_t st;

    memset(info, 0, sizeof *info);
    st = INFINIRT_CUDA__CALL(dev, DeviceGetName, info->name, (int)sizeof info->name, d->cudev);
    if (st == INFINI_STATUS_SUCCESS)
        st = INFINIRT_CUDA__CALL(dev, DeviceTotalMem, &total, d->cudev);
#define ATTR_(out, attr)             \
    if (st == INFINI_STATUS_SUCCESS) \
        st = INFINIRT_CUDA__CALL(dev, DeviceGetAttribute, &(out), attr, d->cudev);
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

/* "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits (NVML's and nvidia-smi's
 * spelling).  cuDeviceGetUuid_v2 (CUDA 11.4) gives a MIG instance its own
 * UUID, the older name the whole GPU's; neither needs a context.  Quiet:
 * *fn names the driver call for the caller's message; a driver exporting
 * neither gives CUDA_ERROR_NOT_FOUND. */
CUresult infinirt_cuda__device_uuid(int dev, char *uuid, size_t size, const char **fn)
{
    const infinirt_cuda__device_t *d = &infinirt_cuda__state.devices[dev];
    PFN_cuDeviceGetUuid_v11040 get = NULL;
    void *p = dlsym(infinirt_cuda__state.lib, *fn = "cuDeviceGetUuid_v2");
    CUuuid u;

    if (p == NULL)
        p = dlsym(infinirt_cuda__state.lib, *fn = "cuDeviceGetUuid");
    if (p == NULL)
        return CUDA_ERROR_NOT_FOUND;
    memcpy(&get, &p, sizeof p);
    CUresult r = get(&u, d->cudev);
    if (r != CUDA_SUCCESS)
        return r;
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(uuid, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return CUDA_SUCCESS;
}

/* A driver that cannot tell (NOT_SUPPORTED, or no UUID call at all) means
 * no UUID, not a failure. */
static infiniStatus_t cuda_get_device_uuid(int dev, char *uuid, size_t size)
{
    const char *fn;
    CUresult r = infinirt_cuda__device_uuid(dev, uuid, size, &fn);

    if (r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_NOT_SUPPORTED)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    if (r != CUDA_SUCCESS)
        return infinirt_cuda__check(r, fn, dev);
    return INFINI_STATUS_SUCCESS;
}

/*
 * cuMemGetInfo needs the device's context, and retaining a primary context
 * costs hundreds of MiB of the device: a tool that lists every device's
 * memory (infinirt-info) must not create one on each.  So a device whose
 * context we have not retained is asked through NVML (no context), and the
 * driver only when NVML cannot tell.  Once the context exists the driver
 * answers: exact for this process, and no slower.
 */
static infiniStatus_t cuda_get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    infinirt_cuda__scope_t sc;
    infiniStatus_t st;

    if (!atomic_load_explicit(&infinirt_cuda__state.devices[dev].active, memory_order_acquire) &&
        infinirt_cuda__nvml_mem_info(dev, free_bytes, total_bytes) == 0)
        return INFINI_STATUS_SUCCESS;
    st = infinirt_cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = INFINIRT_CUDA__CALL(dev, MemGetInfo, free_bytes, total_bytes);
    infinirt_cuda__leave(&sc);
    return st;
}

static infiniStatus_t cuda_device_synchronize(int dev)
{
    infinirt_cuda__scope_t sc;
    infiniStatus_t st = infinirt_cuda__enter(dev, &sc);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* Every stream of the device lives in its primary context (wrapped
     * ones too: stream_create_from_native checks it). */
    st = infinirt_cuda__check(infinirt_cuda__drv.CtxSynchronize(), infinirt_cuda__drv_names.CtxSynchronize, dev);
    infinirt_cuda__leave(&sc);
    return st;
}

static const infinirtPluginOps cuda_ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = INFINIRT_CUDA__NAME,
    .device_type = INFINI_DEVICE_NVIDIA,

    .init = cuda_init,
    .shutdown = cuda_shutdown,
    .get_device_info = cuda_get_device_info,
    .get_mem_info = cuda_get_mem_info,
    .device_synchronize = cuda_device_synchronize,

    .stream_create = infinirt_cuda__stream_create,
    .stream_destroy = infinirt_cuda__stream_destroy,
    .stream_synchronize = infinirt_cuda__stream_synchronize,
    .stream_wait_event = infinirt_cuda__stream_wait_event,
    .launch_host_func = infinirt_cuda__launch_host_func,

    .event_create = infinirt_cuda__event_create,
    .event_destroy = infinirt_cuda__event_destroy,
    .event_record = infinirt_cuda__event_record,
    .event_query = infinirt_cuda__event_query,
    .event_synchronize = infinirt_cuda__event_synchronize,
    .event_elapsed_time = infinirt_cuda__event_elapsed_time,

    .malloc_device = infinirt_cuda__malloc_device,
    .free_device = infinirt_cuda__free_device,
    .malloc_host = infinirt_cuda__malloc_host,
    .free_host = infinirt_cuda__free_host,

    .memcpy = infinirt_cuda__memcpy,
    .memcpy_async = infinirt_cuda__memcpy_async,
    .memset = infinirt_cuda__memset,
    .memset_async = infinirt_cuda__memset_async,

    .stream_get_native = infinirt_cuda__stream_get_native,
    .event_get_native = infinirt_cuda__event_get_native,
    .stream_create_with_flags = infinirt_cuda__stream_create_with_flags,
    .stream_create_from_native = infinirt_cuda__stream_create_from_native,
    .stream_query = infinirt_cuda__stream_query,
    .device_get_native = infinirt_cuda__device_get_native,
    /* mem_get_native: none, memory is addressable (the pointer, offset 0). */
    .set_device = infinirt_cuda__set_device,
    .pointer_get_device = infinirt_cuda__pointer_get_device,

    /* ABI 1.2: native capture and graphs (cuda_graph.c) */
    .stream_begin_capture = infinirt_cuda__stream_begin_capture,
    .stream_end_capture = infinirt_cuda__stream_end_capture,
    .stream_is_capturing = infinirt_cuda__stream_is_capturing,
    .graph_instantiate = infinirt_cuda__graph_instantiate,
    .graph_launch = infinirt_cuda__graph_launch,
    .graph_exec_destroy = infinirt_cuda__graph_exec_destroy,
    .graph_destroy = infinirt_cuda__graph_destroy,

    /* ABI 1.2: utilisation for the resource snapshot (cuda_nvml.c) */
    .get_utilization = infinirt_cuda__get_utilization,

    /* ABI 1.3: the device's UUID */
    .get_device_uuid = cuda_get_device_uuid,
};

INFINIRT_PLUGIN_DEFINE_ENTRY(cuda_ops)
