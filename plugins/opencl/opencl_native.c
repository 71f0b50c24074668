/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_native.c - the OpenCL objects behind the plugin's: a stream's
 * cl_command_queue (the handle the application holds), a device's
 * cl_device_id and cl_context, and the cl_mem and offset of an address.
 *
 * Nothing is retained for the caller: each object lives as long as the
 * plugin object it came from (the stream, the plugin's init, the
 * allocation).  Events have no entry here: an OpenCL event is one-shot (a
 * new record makes a new marker), so the handle stays the plugin's object.
 */
#include "opencl_internal.h"

infiniStatus_t opencl__stream_get_native(int dev, void *stream, void **native)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (native == NULL)
        return INFINI_STATUS_NULL_POINTER;
    /* NULL: the device's default queue (made now if need be). */
    st = opencl__stream_resolve(d, stream, &s);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    *native = s->queue;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__device_get_native(int dev, void **device, void **context)
{
    opencl__device *d = opencl__dev(dev);
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    /* The context is made lazily; whoever asks for it is about to use it. */
    st = opencl__device_ready(d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (device != NULL)
        *device = d->id;
    if (context != NULL)
        *context = d->context;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__mem_get_native(int dev, void *ptr, void **native, size_t *offset)
{
    opencl__device *d = opencl__dev(dev);
    opencl__alloc a;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (opencl__map_lookup(&opencl__device_map, ptr, &a) != 0) {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR,
                    "mem_get_native(%p): not inside a live device allocation of this plugin", ptr);
        return INFINI_STATUS_BAD_PARAM;
    }
    if (a.dev != d) {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "mem_get_native(%p): memory of device %d, asked on device %d", ptr,
                    a.dev->index, dev);
        return INFINI_STATUS_BAD_PARAM;
    }
    /* SVM: the address is what kernels take (clSetKernelArgSVMPointer);
     * buffer mode: the cl_mem and where ptr lies in it. */
    if (native != NULL)
        *native = a.kind == OPENCL__ALLOC_SVM ? ptr : (void *)a.mem;
    if (offset != NULL)
        *offset = a.kind == OPENCL__ALLOC_SVM ? 0 : (size_t)((uintptr_t)ptr - a.base);
    return INFINI_STATUS_SUCCESS;
}
