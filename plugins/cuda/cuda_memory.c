/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_memory.c - raw device and pinned host memory, copies and fills.
 *
 * Every supported GPU has unified virtual addressing on 64-bit hosts, so the
 * driver tells host from device memory (and one device from another) by the
 * pointer: cuMemcpyAsync serves H2D, D2H and D2D, interior pointers and
 * peer copies included.  Host-to-host is the exception: CUDA documents it
 * as "fully synchronous with respect to the host" without promising that it
 * waits for the stream, so we wait for the stream and copy on the host.
 *
 * The synchronous copy and fill run on the legacy default stream, as
 * cudaMemcpy and cudaMemset do: the driver orders them after the work
 * already queued on the device's blocking streams and the NULL stream, and
 * holds back the work queued on them afterwards (see cuda_stream.c).  The
 * copy is cuMemcpy, the driver's own synchronous copy.  The ABI also says
 * memcpy and memset return once the data has landed, which cuMemcpy
 * promises only for D2H and H2H (a D2D copy, or an H2D copy from pageable
 * memory, may return before the DMA is done) and cuMemsetD8 never promises:
 * those are followed by a cuStreamSynchronize of the legacy stream.
 *
 * The raw allocations and frees are the loader's allocator at work, which
 * may run on any thread while another one captures: they run in relaxed
 * capture mode (cuda__relax), so a capture in global mode is not
 * broken by them.  Copies and fills keep the caller's mode: they are the
 * application's work, and CUDA's rules for them apply.
 */
#include <stdint.h>
#include <string.h>

#include "cuda_internal.h"

static CUdeviceptr dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

infiniStatus_t cuda__malloc_device(int dev, void **ptr, size_t size)
{
    int relaxed;
    cuda__scope_t sc;
    CUdeviceptr p = 0;
    infiniStatus_t st;

    if (size == 0) { /* cuMemAlloc rejects 0; the API gives NULL */
        *ptr = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    relaxed = cuda__relax();
    st = CUDA__CALL(dev, MemAlloc, &p, size);
    cuda__unrelax(relaxed);
    cuda__leave(&sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    *ptr = (void *)(uintptr_t)p;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cuda__free_device(int dev, void *ptr)
{
    int relaxed;
    cuda__scope_t sc;
    infiniStatus_t st;

    if (ptr == NULL)
        return INFINI_STATUS_SUCCESS;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    relaxed = cuda__relax();
    st = CUDA__CALL(dev, MemFree, dptr(ptr));
    cuda__unrelax(relaxed);
    cuda__leave(&sc);
    return st;
}

/*
 * The device pinned host memory goes through.  The loader's pinned pool asks
 * with device 0 whatever the application uses, and the allocation needs a
 * current context: retaining device 0's primary context for it would cost a
 * process that only uses GPU 3 some hundreds of MiB on GPU 0.  So it goes
 * through a context the process already has: the calling thread's current
 * one when it is a device's primary context we retained, else the first
 * device whose context we retained; `dev` only when none is.  The memory is
 * portable (CU_MEMHOSTALLOC_PORTABLE), so which context it went through
 * makes no difference to its users, and that context lives until shutdown.
 */
static int host_device(int dev)
{
    const cuda__state_t *s = &cuda__state;
    CUcontext cur = NULL;
    int first;

    if (cuda__drv.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur != NULL)
        for (int i = 0; i < s->count; i++)
            if (atomic_load_explicit(&s->devices[i].active, memory_order_acquire) && s->devices[i].ctx == cur)
                return i;
    first = atomic_load_explicit(&cuda__state.first_active, memory_order_acquire);
    return first >= 0 ? first : dev;
}

infiniStatus_t cuda__malloc_host(int dev, void **ptr, size_t size)
{
    int relaxed;
    cuda__scope_t sc;
    infiniStatus_t st;

    if (size == 0) {
        *ptr = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    dev = host_device(dev);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* PORTABLE: pinned for every context, so a buffer allocated through one
     * GPU is fast with the others too (the API promises "that backend's
     * devices"). */
    relaxed = cuda__relax();
    st = CUDA__CALL(dev, MemHostAlloc, ptr, size, CU_MEMHOSTALLOC_PORTABLE);
    cuda__unrelax(relaxed);
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__free_host(int dev, void *ptr)
{
    int relaxed;
    cuda__scope_t sc;
    infiniStatus_t st;

    if (ptr == NULL)
        return INFINI_STATUS_SUCCESS;
    /* Any context will do for portable memory; the one malloc_host would
     * pick exists already, so freeing creates none. */
    dev = host_device(dev);
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    relaxed = cuda__relax();
    st = CUDA__CALL(dev, MemFreeHost, ptr);
    cuda__unrelax(relaxed);
    cuda__leave(&sc);
    return st;
}

/*
 * cuMemGetInfo needs the device's context, and retaining a primary context
 * costs hundreds of MiB of the device: a tool that lists every device's
 * memory (infinirt-info) must not create one on each.  So a device whose
 * context we have not retained is asked through NVML (no context), and the
 * driver only when NVML cannot tell.  Once the context exists the driver
 * answers: exact for this process, and no slower.
 */
infiniStatus_t cuda__get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    cuda__scope_t sc;
    infiniStatus_t st;

    if (cuda__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (!atomic_load_explicit(&cuda__device(dev)->active, memory_order_acquire) &&
        cuda__nvml_mem_info(dev, free_bytes, total_bytes) == 0)
        return INFINI_STATUS_SUCCESS;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, MemGetInfo, free_bytes, total_bytes);
    cuda__leave(&sc);
    return st;
}

/* Where p is, for peer access: our device index; NOT_OURS for host
 * memory, pointers the driver does not know, and memory of a CUDA device
 * that `devices =` does not expose (*ordinal says which, else -1). */
#define NOT_OURS (-1)
static int device_of_ptr(const void *p, int *ordinal)
{
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned int type = 0;
    int ord = -1;
    void *data[2] = {&type, &ord};

    *ordinal = -1;
    if (cuda__drv.PointerGetAttributes(2, attrs, data, dptr(p)) != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE)
        return NOT_OURS;
    *ordinal = ord;
    for (int i = 0; i < cuda__state.count; i++)
        if (cuda__state.devices[i].ordinal == ord)
            return i;
    return NOT_OURS;
}

/* A D2D copy made through dev's context: map the other device's memory
 * first where it can be, so the copy goes directly (NVLink, PCIe) instead
 * of through host memory.  Neither outcome is an error. */
static void peer_for_copy(int dev, const void *dst, const void *src)
{
    int ord, d = device_of_ptr(dst, &ord), s = device_of_ptr(src, &ord);

    if (d != NOT_OURS && d != dev)
        (void)cuda__peer_enable(dev, d);
    if (s != NOT_OURS && s != dev && s != d)
        (void)cuda__peer_enable(dev, s);
}

/* A fill of ptr queued in dev's context: valid when ptr is dev's own
 * memory or host memory, or another device's that dev's context can map
 * (mapped here).  Else BAD_PARAM, with the reason: the fill would fault. */
static infiniStatus_t peer_for_fill(int dev, const void *ptr, const char *fn)
{
    int ord, d = device_of_ptr(ptr, &ord);

    if (d == NOT_OURS && ord < 0)
        return INFINI_STATUS_SUCCESS; /* host memory, or unknown: the driver decides */
    if (d == dev || (d != NOT_OURS && cuda__peer_enable(dev, d)))
        return INFINI_STATUS_SUCCESS;
    if (d == NOT_OURS)
        cuda__log(INFINIRT_PLUGIN_LOG_ERROR,
                  "device %d: %s of %p refused: the memory is CUDA device %d's, which [plugin.cuda] "
                  "devices does not expose, so no peer access to it can be enabled",
                  dev, fn, ptr, ord);
    else
        cuda__log(INFINIRT_PLUGIN_LOG_ERROR,
                  "device %d: %s of %p refused: the memory is device %d's, and device %d cannot access "
                  "it (no peer access between them); fill it on a stream of device %d",
                  dev, fn, ptr, d, dev, d);
    return INFINI_STATUS_BAD_PARAM;
}

static int kind_ok(int kind)
{
    return kind >= INFINIRT_PLUGIN_MEMCPY_H2H && kind <= INFINIRT_PLUGIN_MEMCPY_D2D;
}

infiniStatus_t cuda__memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream)
{
    CUstream s = cuda__stream_of(stream);
    cuda__scope_t sc;
    infiniStatus_t st;

    if (!kind_ok(kind))
        return INFINI_STATUS_BAD_PARAM;
    if (size == 0)
        return INFINI_STATUS_SUCCESS;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (kind == INFINIRT_PLUGIN_MEMCPY_H2H) {
        /* In stream order: after the work queued before (which may write
         * src), and done before the work queued after, since we return
         * only once it is done. */
        st = CUDA__CALL(dev, StreamSynchronize, s);
        if (st == INFINI_STATUS_SUCCESS)
            memcpy(dst, src, size);
    } else {
        if (kind == INFINIRT_PLUGIN_MEMCPY_D2D)
            peer_for_copy(dev, dst, src);
        st = CUDA__CALL(dev, MemcpyAsync, dptr(dst), dptr(src), size, s);
    }
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__memcpy(int dev, void *dst, const void *src, size_t size, int kind)
{
    cuda__scope_t sc;
    infiniStatus_t st;

    if (!kind_ok(kind))
        return INFINI_STATUS_BAD_PARAM;
    if (size == 0)
        return INFINI_STATUS_SUCCESS;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* Unified addressing: cuMemcpy tells host from device memory (and one
     * device from another) by the pointers, host-to-host included. */
    if (kind == INFINIRT_PLUGIN_MEMCPY_D2D)
        peer_for_copy(dev, dst, src);
    st = CUDA__CALL(dev, Memcpy, dptr(dst), dptr(src), size);
    if (st == INFINI_STATUS_SUCCESS && (kind == INFINIRT_PLUGIN_MEMCPY_H2D || kind == INFINIRT_PLUGIN_MEMCPY_D2D))
        st = CUDA__CALL(dev, StreamSynchronize, NULL);
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__memset_async(int dev, void *ptr, int value, size_t size, void *stream)
{
    cuda__scope_t sc;
    infiniStatus_t st;

    if (size == 0)
        return INFINI_STATUS_SUCCESS;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = peer_for_fill(dev, ptr, "memset_async");
    if (st == INFINI_STATUS_SUCCESS)
        st = CUDA__CALL(dev, MemsetD8Async, dptr(ptr), (unsigned char)value, size, cuda__stream_of(stream));
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__memset(int dev, void *ptr, int value, size_t size)
{
    cuda__scope_t sc;
    infiniStatus_t st;

    if (size == 0)
        return INFINI_STATUS_SUCCESS;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* On the legacy stream, as cudaMemset; then waited for, since the fill
     * of device memory returns before it is done. */
    st = peer_for_fill(dev, ptr, "memset");
    if (st == INFINI_STATUS_SUCCESS)
        st = CUDA__CALL(dev, MemsetD8Async, dptr(ptr), (unsigned char)value, size, NULL);
    if (st == INFINI_STATUS_SUCCESS)
        st = CUDA__CALL(dev, StreamSynchronize, NULL);
    cuda__leave(&sc);
    return st;
}

/*
 * A device pointer infinirt did not allocate (a tensor from another
 * library): which of our devices holds it.  One cuPointerGetAttributes call
 * reads the memory type and the ordinal; unlike cuPointerGetAttribute it
 * answers (memory type 0) for a pointer the driver does not know, and needs
 * no current context.  Host memory, unknown pointers and devices that
 * `devices =` does not expose are BAD_PARAM without a log line: the loader
 * asks for every foreign pointer, and then uses the current device.
 */
infiniStatus_t cuda__pointer_get_device(const void *ptr, int *dev)
{
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned int type = 0;
    int ordinal = -1;
    void *data[2] = {&type, &ordinal};
    CUresult r = cuda__drv.PointerGetAttributes(2, attrs, data, dptr(ptr));

    if (r != CUDA_SUCCESS)
        return cuda__check(r, cuda__drv_names.PointerGetAttributes, -1);
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return INFINI_STATUS_BAD_PARAM;
    for (int i = 0; i < cuda__state.count; i++)
        if (cuda__state.devices[i].ordinal == ordinal) {
            *dev = i;
            return INFINI_STATUS_SUCCESS;
        }
    return INFINI_STATUS_BAD_PARAM;
}
