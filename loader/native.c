/* SPDX-License-Identifier: Apache-2.0 */
/*
 * native.c - the backends' native objects behind devices and memory
 * (streams and events: handles.c, whose handle values are native already).
 */
#include "internal.h"

INFINIRT_API infiniStatus_t infinirtDeviceGetNativeHandle(infiniDevice_t device, int device_id, void **native_device,
                                                          void **native_context)
{
    INFINIRT__TRACE_ENTRY(infinirtDeviceGetNativeHandle, (device, device_id, native_device, native_context));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__device *dev = NULL;
    if ((st = infinirt__device_lookup(device, device_id, __func__, &dev)) != INFINI_STATUS_SUCCESS)
        return st;
    void *d = NULL, *c = NULL;
    if (INFINIRT__HAS(dev->plugin, device_get_native) &&
        (st = dev->plugin->ops->device_get_native(dev->index, &d, &c)) != INFINI_STATUS_SUCCESS)
        return infinirt__plugin_failed(st, dev, "device_get_native");
    if (native_device != NULL)
        *native_device = d;
    if (native_context != NULL)
        *native_context = c;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtMemGetNativeHandle(const void *ptr, void **native, size_t *offset)
{
    INFINIRT__TRACE_ENTRY(infinirtMemGetNativeHandle, (ptr, native, offset));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__ptr_info info;
    if (ptr == NULL || !infinirt__pool_lookup(ptr, &info) || info.offset >= info.block_size)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "%p is not inside any live infinirt allocation",
                              ptr);
    void *n = (void *)(uintptr_t)ptr;
    size_t off = 0;
    if (info.device_id >= 0) {
        infinirt__device *dev = NULL;
        if ((st = infinirt__device_lookup((infiniDevice_t)info.device_type, info.device_id, __func__, &dev)) !=
            INFINI_STATUS_SUCCESS)
            return st;
        if (INFINIRT__HAS(dev->plugin, mem_get_native) &&
            (st = dev->plugin->ops->mem_get_native(dev->index, (void *)(uintptr_t)ptr, &n, &off)) !=
                INFINI_STATUS_SUCCESS)
            return infinirt__plugin_failed(st, dev, "mem_get_native");
    }
    if (native != NULL)
        *native = n;
    if (offset != NULL)
        *offset = off;
    return INFINI_STATUS_SUCCESS;
}
