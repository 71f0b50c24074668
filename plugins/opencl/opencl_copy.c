/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_copy.c - memcpy and memset on SVM or buffer memory.
 *
 * Device-side pointers may be anywhere inside a live raw allocation (the
 * loader's caching allocator hands out interior pointers), so every one is
 * resolved through opencl__device_map to its allocation and offset.
 *
 * A device-side pointer outside every allocation of ours is memory the
 * application got elsewhere (the loader passes such foreign pointers on).
 * On an SVM device it is taken as SVM memory of the queue's context (from
 * clSVMAlloc with the context device_get_native gives), which the SVM
 * commands accept.  A buffer-mode device has no way to name it - its
 * commands need a cl_mem - so it is refused with BAD_PARAM.
 *
 * A copy whose device memory lives in another context than the stream's
 * (another device of this plugin) cannot be one OpenCL command: it is
 * staged through host memory, synchronously, after the stream's earlier
 * work has finished.
 */
#include "opencl_internal.h"

#include <stdlib.h>
#include <string.h>

#define STAGE_CHUNK ((size_t)16 << 20)

static infiniStatus_t find(const opencl__stream *s, const void *p, const char *role, opencl__alloc *a)
{
    if (opencl__map_lookup(&opencl__device_map, p, a) == 0)
        return INFINI_STATUS_SUCCESS;
    if (s->dev->svm) {
        /* Foreign SVM memory of the queue's context. */
        *a = (opencl__alloc){
            .base = (uintptr_t)p, .size = 0, .dev = s->dev, .raw = (void *)(uintptr_t)p, .kind = OPENCL__ALLOC_SVM};
        return INFINI_STATUS_SUCCESS;
    }
    opencl__log(INFINIRT_PLUGIN_LOG_ERROR,
                "%s pointer %p is not inside a live allocation of this plugin; device %d uses buffer memory, where "
                "only memory from this plugin can be used (foreign device pointers need SVM: memory = svm)",
                role, p, s->dev->index);
    return INFINI_STATUS_BAD_PARAM;
}

/* The host side of an H2D/D2H must not be our device memory: a buffer-mode
 * address is PROT_NONE and the driver would fault on it. */
static infiniStatus_t check_host(const void *p, const char *role)
{
    opencl__alloc a;

    if (opencl__map_lookup(&opencl__device_map, p, &a) == 0) {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "%s pointer %p is device memory of this plugin (kind should be D2D)",
                    role, p);
        return INFINI_STATUS_BAD_PARAM;
    }
    return INFINI_STATUS_SUCCESS;
}

/* Wait for (blocking) or release an event returned by an enqueue. */
static infiniStatus_t finish_command(cl_event ev, int blocking)
{
    cl_int err = CL_SUCCESS;

    if (ev == NULL)
        return INFINI_STATUS_SUCCESS;
    if (blocking)
        err = clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    return err == CL_SUCCESS ? INFINI_STATUS_SUCCESS : opencl__cl_fail("clWaitForEvents", err);
}

typedef struct {
    void *dst;
    const void *src;
    size_t size;
} h2h_job;

static void h2h_run(void *p)
{
    h2h_job *job = p;

    memcpy(job->dst, job->src, job->size);
    free(job);
}

static infiniStatus_t copy_on(opencl__stream *s, void *dst, const void *src, size_t n, int kind, int blocking);

/* Device memory of another context: host staging, synchronous. */
static infiniStatus_t copy_staged(opencl__stream *s, void *dst, const void *src, size_t n, int kind,
                                  const opencl__alloc *ad, const opencl__alloc *as)
{
    cl_int err = clFinish(s->queue);
    unsigned char *tmp;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;

    if (err != CL_SUCCESS)
        return opencl__cl_fail("clFinish", err);
    if (kind == INFINIRT_PLUGIN_MEMCPY_H2D)
        return copy_on(&ad->dev->default_stream, dst, src, n, kind, 1);
    if (kind == INFINIRT_PLUGIN_MEMCPY_D2H)
        return copy_on(&as->dev->default_stream, dst, src, n, kind, 1);

    tmp = malloc(n < STAGE_CHUNK ? n : STAGE_CHUNK);
    if (tmp == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    for (size_t off = 0; off < n && st == INFINI_STATUS_SUCCESS; off += STAGE_CHUNK) {
        size_t len = n - off < STAGE_CHUNK ? n - off : STAGE_CHUNK;
        st = copy_on(&as->dev->default_stream, tmp, (const unsigned char *)src + off, len, INFINIRT_PLUGIN_MEMCPY_D2H,
                     1);
        if (st == INFINI_STATUS_SUCCESS)
            st = copy_on(&ad->dev->default_stream, (unsigned char *)dst + off, tmp, len, INFINIRT_PLUGIN_MEMCPY_H2D,
                         1);
    }
    free(tmp);
    return st;
}

static infiniStatus_t copy_cmd(opencl__stream *s, void *dst, const void *src, size_t n, int kind, int blocking)
{
    cl_context ctx = s->dev->context;
    cl_bool block = blocking ? CL_TRUE : CL_FALSE;
    opencl__alloc ad = {0}, as = {0};
    cl_event ev = NULL;
    infiniStatus_t st;
    cl_int err;

    if (n == 0)
        return INFINI_STATUS_SUCCESS;

    switch (kind) {
    case INFINIRT_PLUGIN_MEMCPY_H2H:
        if (blocking) {
            memcpy(dst, src, n);
            return INFINI_STATUS_SUCCESS;
        } else {
            h2h_job *job = malloc(sizeof *job);
            if (job == NULL)
                return INFINI_STATUS_OUT_OF_MEMORY;
            *job = (h2h_job){dst, src, n};
            st = opencl__enqueue_host_fn(s, h2h_run, free, job);
            if (st != INFINI_STATUS_SUCCESS)
                free(job);
            return st;
        }

    case INFINIRT_PLUGIN_MEMCPY_H2D:
        if ((st = find(s, dst, "H2D destination", &ad)) != INFINI_STATUS_SUCCESS ||
            (st = check_host(src, "H2D source")) != INFINI_STATUS_SUCCESS)
            return st;
        if (ad.dev->context != ctx)
            return copy_staged(s, dst, src, n, kind, &ad, NULL);
        if (ad.kind == OPENCL__ALLOC_SVM)
            err = clEnqueueSVMMemcpy(s->queue, block, dst, src, n, 0, NULL, NULL);
        else
            err = clEnqueueWriteBuffer(s->queue, ad.mem, block, (uintptr_t)dst - ad.base, n, src, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return opencl__cl_fail(ad.kind == OPENCL__ALLOC_SVM ? "clEnqueueSVMMemcpy" : "clEnqueueWriteBuffer", err);
        break;

    case INFINIRT_PLUGIN_MEMCPY_D2H:
        if ((st = find(s, src, "D2H source", &as)) != INFINI_STATUS_SUCCESS ||
            (st = check_host(dst, "D2H destination")) != INFINI_STATUS_SUCCESS)
            return st;
        if (as.dev->context != ctx)
            return copy_staged(s, dst, src, n, kind, NULL, &as);
        if (as.kind == OPENCL__ALLOC_SVM)
            err = clEnqueueSVMMemcpy(s->queue, block, dst, src, n, 0, NULL, NULL);
        else
            err = clEnqueueReadBuffer(s->queue, as.mem, block, (uintptr_t)src - as.base, n, dst, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return opencl__cl_fail(as.kind == OPENCL__ALLOC_SVM ? "clEnqueueSVMMemcpy" : "clEnqueueReadBuffer", err);
        break;

    case INFINIRT_PLUGIN_MEMCPY_D2D:
        if ((st = find(s, dst, "D2D destination", &ad)) != INFINI_STATUS_SUCCESS ||
            (st = find(s, src, "D2D source", &as)) != INFINI_STATUS_SUCCESS)
            return st;
        if (ad.dev->context != ctx || as.dev->context != ctx)
            return copy_staged(s, dst, src, n, kind, &ad, &as);
        if (ad.kind == OPENCL__ALLOC_SVM) {
            err = clEnqueueSVMMemcpy(s->queue, block, dst, src, n, 0, NULL, NULL);
            if (err != CL_SUCCESS)
                return opencl__cl_fail("clEnqueueSVMMemcpy", err);
        } else {
            err = clEnqueueCopyBuffer(s->queue, as.mem, ad.mem, (uintptr_t)src - as.base, (uintptr_t)dst - ad.base, n,
                                      0, NULL, blocking ? &ev : NULL);
            if (err != CL_SUCCESS)
                return opencl__cl_fail("clEnqueueCopyBuffer", err);
            if ((st = finish_command(ev, blocking)) != INFINI_STATUS_SUCCESS)
                return st;
        }
        break;

    default:
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "memcpy: unknown kind %d", kind);
        return INFINI_STATUS_BAD_PARAM;
    }
    if (!blocking)
        clFlush(s->queue);
    return INFINI_STATUS_SUCCESS;
}

/* The copy in blocking-stream order (opencl_order.c).  A copy that copy_cmd
 * refuses may leave the barrier of "before" queued: it only orders the
 * default queue behind work already there, which nothing can observe. */
static infiniStatus_t copy_on(opencl__stream *s, void *dst, const void *src, size_t n, int kind, int blocking)
{
    infiniStatus_t st;

    if (n == 0)
        return INFINI_STATUS_SUCCESS;
    if ((st = blocking ? opencl__order_before_sync(s) : opencl__order_before(s)) != INFINI_STATUS_SUCCESS ||
        (st = copy_cmd(s, dst, src, n, kind, blocking)) != INFINI_STATUS_SUCCESS)
        return st;
    return blocking ? INFINI_STATUS_SUCCESS : opencl__order_after(s);
}

static infiniStatus_t fill_cmd(opencl__stream *s, void *ptr, int value, size_t n, int blocking);

/* The fill in blocking-stream order (opencl_order.c). */
static infiniStatus_t fill_on(opencl__stream *s, void *ptr, int value, size_t n, int blocking)
{
    infiniStatus_t st;

    if (n == 0)
        return INFINI_STATUS_SUCCESS;
    if ((st = blocking ? opencl__order_before_sync(s) : opencl__order_before(s)) != INFINI_STATUS_SUCCESS ||
        (st = fill_cmd(s, ptr, value, n, blocking)) != INFINI_STATUS_SUCCESS)
        return st;
    return blocking ? INFINI_STATUS_SUCCESS : opencl__order_after(s);
}

static infiniStatus_t fill_cmd(opencl__stream *s, void *ptr, int value, size_t n, int blocking)
{
    const cl_uchar pattern = (cl_uchar)value;
    opencl__alloc a;
    cl_event ev = NULL;
    infiniStatus_t st;
    cl_int err;

    if (n == 0)
        return INFINI_STATUS_SUCCESS;
    if ((st = find(s, ptr, "memset", &a)) != INFINI_STATUS_SUCCESS)
        return st;
    if (a.dev->context != s->dev->context) {
        /* Another device's memory: fill it on its own default queue. */
        err = clFinish(s->queue);
        if (err != CL_SUCCESS)
            return opencl__cl_fail("clFinish", err);
        return fill_on(&a.dev->default_stream, ptr, value, n, 1);
    }
    if (a.kind == OPENCL__ALLOC_SVM) {
        err = clEnqueueSVMMemFill(s->queue, ptr, &pattern, 1, n, 0, NULL, blocking ? &ev : NULL);
        if (err != CL_SUCCESS)
            return opencl__cl_fail("clEnqueueSVMMemFill", err);
    } else {
        err = clEnqueueFillBuffer(s->queue, a.mem, &pattern, 1, (uintptr_t)ptr - a.base, n, 0, NULL,
                                  blocking ? &ev : NULL);
        if (err != CL_SUCCESS)
            return opencl__cl_fail("clEnqueueFillBuffer", err);
    }
    if (!blocking)
        clFlush(s->queue);
    return finish_command(ev, blocking);
}

infiniStatus_t opencl__memcpy(int dev, void *dst, const void *src, size_t size, int kind)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (kind == INFINIRT_PLUGIN_MEMCPY_H2H) {
        if (size > 0)
            memcpy(dst, src, size);
        return INFINI_STATUS_SUCCESS;
    }
    if ((st = opencl__stream_resolve(d, NULL, &s)) != INFINI_STATUS_SUCCESS)
        return st;
    return copy_on(s, dst, src, size, kind, 1);
}

infiniStatus_t opencl__memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if ((st = opencl__stream_resolve(d, stream, &s)) != INFINI_STATUS_SUCCESS)
        return st;
    return copy_on(s, dst, src, size, kind, 0);
}

infiniStatus_t opencl__memset(int dev, void *ptr, int value, size_t size)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if ((st = opencl__stream_resolve(d, NULL, &s)) != INFINI_STATUS_SUCCESS)
        return st;
    return fill_on(s, ptr, value, size, 1);
}

infiniStatus_t opencl__memset_async(int dev, void *ptr, int value, size_t size, void *stream)
{
    opencl__device *d = opencl__dev(dev);
    opencl__stream *s;
    infiniStatus_t st;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if ((st = opencl__stream_resolve(d, stream, &s)) != INFINI_STATUS_SUCCESS)
        return st;
    return fill_on(s, ptr, value, size, 0);
}
