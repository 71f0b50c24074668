/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_memory.c - raw memory, copies and fills, and memory info.
 *
 * Device memory is host memory, 256-byte aligned as CUDA's is; its size
 * lives in a header before the returned pointer so free can account for it
 * against memory_limit.  A synchronous copy or fill comes after the work
 * queued on the default stream and the blocking streams (cpu__sync_point);
 * an asynchronous one is the queue's (cpu__queue: done at once inline,
 * queued on its stream in async mode).
 *
 * Template: a vendor's <p>_memory.c holds the same entries over the
 * driver's allocator and copy engine: raw allocations only (the loader
 * caches, splits and counts), OUT_OF_MEMORY when the device is full, at
 * least 256-byte alignment.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#define CPU_ALIGN 256

size_t cpu__machine_total(void)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0)
        return 0;
    return (size_t)si.totalram * si.mem_unit;
}

static size_t machine_available(void)
{
    /* MemAvailable counts reclaimable cache, which sysinfo's freeram does
     * not: it is the figure a user means by "free". */
    FILE *f = fopen("/proc/meminfo", "re");
    size_t kb = 0;
    if (f != NULL) {
        char line[128];
        while (fgets(line, sizeof line, f) != NULL)
            if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1)
                break;
        fclose(f);
    }
    if (kb == 0) {
        struct sysinfo si;
        if (sysinfo(&si) == 0)
            return (size_t)si.freeram * si.mem_unit;
    }
    return kb * 1024;
}

infiniStatus_t cpu__get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    cpu_device *d = cpu__device(dev);
    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    size_t total = cpu__machine_total(), avail = machine_available(), limit = cpu__settings.memory_limit;
    if (limit != 0) {
        size_t used = atomic_load(&d->used);
        size_t left = limit > used ? limit - used : 0;
        total = limit < total ? limit : total;
        avail = left < avail ? left : avail;
    }
    *free_bytes = avail;
    *total_bytes = total;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t raw_alloc(void **ptr, size_t size)
{
    if (size > SIZE_MAX - CPU_ALIGN)
        return INFINI_STATUS_OUT_OF_MEMORY;
    void *base = NULL;
    if (posix_memalign(&base, CPU_ALIGN, size + CPU_ALIGN) != 0)
        return INFINI_STATUS_OUT_OF_MEMORY;
    *(size_t *)base = size;
    *ptr = (char *)base + CPU_ALIGN;
    return INFINI_STATUS_SUCCESS;
}

static size_t raw_size(void *ptr)
{
    return *(size_t *)((char *)ptr - CPU_ALIGN);
}

static void raw_free(void *ptr)
{
    free((char *)ptr - CPU_ALIGN);
}

infiniStatus_t cpu__malloc_device(int dev, void **ptr, size_t size)
{
    cpu_device *d = cpu__device(dev);
    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    size_t limit = cpu__settings.memory_limit;
    if (limit != 0) {
        /* Reserve first, so concurrent allocations never overshoot. */
        size_t before = atomic_fetch_add(&d->used, size);
        if (before + size > limit || before + size < before) {
            atomic_fetch_sub(&d->used, size);
            return INFINI_STATUS_OUT_OF_MEMORY;
        }
    }
    infiniStatus_t st = raw_alloc(ptr, size);
    if (st != INFINI_STATUS_SUCCESS && limit != 0)
        atomic_fetch_sub(&d->used, size);
    return st;
}

infiniStatus_t cpu__free_device(int dev, void *ptr)
{
    cpu_device *d = cpu__device(dev);
    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (cpu__settings.memory_limit != 0)
        atomic_fetch_sub(&d->used, raw_size(ptr));
    raw_free(ptr);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__malloc_host(int dev, void **ptr, size_t size)
{
    return raw_alloc(ptr, size);
}

infiniStatus_t cpu__free_host(int dev, void *ptr)
{
    raw_free(ptr);
    return INFINI_STATUS_SUCCESS;
}

/* A synchronous copy or fill comes after the work queued on the default
 * stream and the blocking streams, as a legacy-stream cudaMemcpy does (with
 * inline streams there is none).  The wait is out of line (..._after_sync):
 * the call with nothing to wait for, the usual case, saves no registers. */
static __attribute__((noinline)) infiniStatus_t memcpy_after_sync(int dev, void *dst, const void *src, size_t size)
{
    infiniStatus_t st = cpu__sync_point(dev, "memcpy");
    if (st == INFINI_STATUS_SUCCESS)
        memmove(dst, src, size);
    return st;
}

static __attribute__((noinline)) infiniStatus_t memset_after_sync(int dev, void *ptr, int value, size_t size)
{
    infiniStatus_t st = cpu__sync_point(dev, "memset");
    if (st == INFINI_STATUS_SUCCESS)
        memset(ptr, value, size);
    return st;
}

infiniStatus_t cpu__memcpy(int dev, void *dst, const void *src, size_t size, int kind)
{
    (void)kind;
    if (!cpu__sync_free(dev))
        return memcpy_after_sync(dev, dst, src, size);
    memmove(dst, src, size); /* nothing to wait for, no call */
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__memset(int dev, void *ptr, int value, size_t size)
{
    if (!cpu__sync_free(dev))
        return memset_after_sync(dev, ptr, value, size);
    memset(ptr, value, size); /* nothing to wait for, no call */
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream)
{
    (void)kind;
    return cpu__queue->copy(dev, stream, dst, src, size);
}

infiniStatus_t cpu__memset_async(int dev, void *ptr, int value, size_t size, void *stream)
{
    return cpu__queue->fill(dev, stream, ptr, value, size);
}
