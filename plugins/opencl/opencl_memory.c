/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_memory.c - raw device and host allocations.
 *
 * Device memory, per device, one of:
 *  - SVM (coarse-grained buffer): clSVMAlloc returns a real address that
 *    clEnqueueSVMMemcpy/clEnqueueSVMMemFill accept at any interior offset.
 *  - buffer: a cl_mem, handed out as a fake address: a PROT_NONE,
 *    MAP_NORESERVE range of the same size reserved with mmap.  The range
 *    costs no memory, faults if the host dereferences it, and cannot
 *    collide with any other pointer of the process, which matters because
 *    the loader keeps one address map for every plugin.  Copies translate
 *    an address to (cl_mem, offset) through opencl__device_map.
 *
 * Host memory (malloc_host): a CL_MEM_ALLOC_HOST_PTR buffer mapped once
 * with clEnqueueMapBuffer and kept mapped until free_host.  Drivers back
 * such buffers with pinned pages, so copies from them run at full speed.
 *
 * SVM and pinned host pointers are OPENCL__ALIGN (256) aligned: each request
 * is padded by 256 bytes and the pointer rounded up; the map keeps the
 * driver's own pointer (raw) for the release.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "opencl_internal.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

infiniStatus_t opencl__get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    opencl__device *d = opencl__dev(dev);
    size_t held;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    /* OpenCL has no free-memory query: report what we do not hold. */
    held = atomic_load(&d->held);
    *total_bytes = d->global_mem;
    *free_bytes = held < d->global_mem ? d->global_mem - held : 0;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t check_max_alloc(const opencl__device *d, const char *what, size_t size)
{
    if (d->max_alloc != 0 && size > d->max_alloc) {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR,
                    "%s of %zu bytes on device %d (%s) exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE, %zu bytes", what, size,
                    d->index, d->name, d->max_alloc);
        return INFINI_STATUS_BAD_PARAM;
    }
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__malloc_device(int dev, void **ptr, size_t size)
{
    opencl__device *d = opencl__dev(dev);
    opencl__alloc a = {0};
    infiniStatus_t st;
    cl_int err = CL_SUCCESS;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (size == 0) {
        *ptr = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    if ((st = check_max_alloc(d, "malloc_device", size)) != INFINI_STATUS_SUCCESS ||
        (st = opencl__device_ready(d)) != INFINI_STATUS_SUCCESS)
        return st;

    a.size = size;
    a.dev = d;
    if (d->svm) {
        /* clSVMAlloc accepts alignments only up to the largest OpenCL type
         * (128 bytes; PoCL returns NULL for more), so pad and round up. */
        size_t padded = opencl__padded(size, d->max_alloc);
        void *p = clSVMAlloc(d->context, CL_MEM_READ_WRITE, padded, 0);
        if (p == NULL) {
            opencl__log(INFINIRT_PLUGIN_LOG_ERROR,
                        "clSVMAlloc failed: NULL for %zu bytes on device %d (OpenCL gives no error code; "
                        "treated as out of memory)",
                        padded, d->index);
            return INFINI_STATUS_OUT_OF_MEMORY;
        }
        a.raw = p;
        a.base = padded > size ? opencl__align_up(p) : (uintptr_t)p;
        a.kind = OPENCL__ALLOC_SVM;
    } else {
        void *fake;

        a.mem = clCreateBuffer(d->context, CL_MEM_READ_WRITE, size, NULL, &err);
        if (a.mem == NULL)
            return opencl__cl_fail_alloc("clCreateBuffer", err);
        fake = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (fake == MAP_FAILED) {
            opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "mmap of a %zu-byte address range failed", size);
            clReleaseMemObject(a.mem);
            return INFINI_STATUS_OUT_OF_MEMORY;
        }
        a.base = (uintptr_t)fake;
        a.kind = OPENCL__ALLOC_BUFFER;
    }
    if (opencl__map_insert(&opencl__device_map, &a) != 0) {
        opencl__alloc_release(&a);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    atomic_fetch_add(&d->held, size);
    *ptr = (void *)a.base;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__free_device(int dev, void *ptr)
{
    opencl__alloc a;

    (void)dev;
    if (ptr == NULL)
        return INFINI_STATUS_SUCCESS;
    if (opencl__map_remove(&opencl__device_map, (uintptr_t)ptr, &a) != 0) {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "free_device(%p): not the start of a live allocation", ptr);
        return INFINI_STATUS_BAD_PARAM;
    }
    /* No wait here: the loader returns a segment only once the work that
     * used it has completed.  (A cl_mem would outlive queued commands on its
     * own; clSVMFree does not wait for them.) */
    atomic_fetch_sub(&a.dev->held, a.size);
    opencl__alloc_release(&a);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__malloc_host(int dev, void **ptr, size_t size)
{
    opencl__device *d = opencl__dev(dev);
    opencl__alloc a = {0};
    infiniStatus_t st;
    cl_int err = CL_SUCCESS;
    void *p;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (size == 0) {
        *ptr = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    if ((st = opencl__device_ready(d)) != INFINI_STATUS_SUCCESS)
        return st;
    a.size = size;
    a.dev = d;
    if (d->max_alloc != 0 && size > d->max_alloc) {
        /* Too big for one buffer: plain page-aligned memory still works
         * for every copy, only not pinned. */
        long page = sysconf(_SC_PAGESIZE);
        if (posix_memalign(&p, page > 0 ? (size_t)page : 4096, size) != 0)
            return INFINI_STATUS_OUT_OF_MEMORY;
        opencl__log(INFINIRT_PLUGIN_LOG_INFO,
                    "malloc_host of %zu bytes exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE (%zu): using unpinned memory",
                    size, d->max_alloc);
        a.kind = OPENCL__ALLOC_HOST_PLAIN;
    } else {
        size_t padded = opencl__padded(size, d->max_alloc);

        a.mem = clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, padded, NULL, &err);
        if (a.mem == NULL)
            return opencl__cl_fail_alloc("clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", err);
        p = clEnqueueMapBuffer(d->default_stream.queue, a.mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, padded, 0,
                               NULL, NULL, &err);
        if (p == NULL) {
            clReleaseMemObject(a.mem);
            return opencl__cl_fail_alloc("clEnqueueMapBuffer", err);
        }
        a.raw = p;
        a.kind = OPENCL__ALLOC_HOST_MAPPED;
        p = padded > size ? (void *)opencl__align_up(p) : p;
    }
    a.base = (uintptr_t)p;
    if (opencl__map_insert(&opencl__host_map, &a) != 0) {
        opencl__alloc_release(&a);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    *ptr = p;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__free_host(int dev, void *ptr)
{
    opencl__alloc a;

    (void)dev;
    if (ptr == NULL)
        return INFINI_STATUS_SUCCESS;
    if (opencl__map_remove(&opencl__host_map, (uintptr_t)ptr, &a) != 0) {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "free_host(%p): not the start of a live host allocation", ptr);
        return INFINI_STATUS_BAD_PARAM;
    }
    opencl__alloc_release(&a);
    return INFINI_STATUS_SUCCESS;
}

void opencl__alloc_release(const opencl__alloc *a)
{
    cl_event ev = NULL;
    cl_int err;

    switch (a->kind) {
    case OPENCL__ALLOC_SVM:
        clSVMFree(a->dev->context, a->raw);
        break;
    case OPENCL__ALLOC_BUFFER:
        clReleaseMemObject(a->mem);
        munmap((void *)a->base, a->size);
        break;
    case OPENCL__ALLOC_HOST_MAPPED:
        err = clEnqueueUnmapMemObject(a->dev->default_stream.queue, a->mem, a->raw, 0, NULL, &ev);
        if (err != CL_SUCCESS)
            opencl__cl_fail("clEnqueueUnmapMemObject", err);
        else {
            clWaitForEvents(1, &ev);
            clReleaseEvent(ev);
        }
        clReleaseMemObject(a->mem);
        break;
    case OPENCL__ALLOC_HOST_PLAIN:
        free(a->raw);
        break;
    default:
        break;
    }
}
