/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_libcuda_memory.c - the fake driver's memory: device allocations (host
 * memory, 256-byte aligned, counted against each device's FAKE_CUDA_MEM),
 * pinned host allocations, pointer attributes, memory info, and the table of
 * allocations the tests look into.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_libcuda.h"

size_t fake_mem_per_dev = 64u << 20, fake_used[FAKE_MAX_DEV];
alloc *fake_allocs;

int fake_cuda_live_allocs(void)
{
    int n = 0;
    pthread_mutex_lock(&fake_lock);
    for (alloc *a = fake_allocs; a; a = a->next)
        n++;
    pthread_mutex_unlock(&fake_lock);
    return n;
}

/* The allocation containing p (interior pointers too), or NULL. */
alloc *fake_find_alloc_locked(const void *p)
{
    for (alloc *a = fake_allocs; a; a = a->next)
        if ((const char *)p >= (const char *)a->p && (const char *)p < (const char *)a->p + a->size)
            return a;
    return NULL;
}

int fake_cuda_alloc_device(const void *p)
{
    pthread_mutex_lock(&fake_lock);
    alloc *a = fake_find_alloc_locked(p);
    int dev = a ? a->dev : -2;
    pthread_mutex_unlock(&fake_lock);
    return dev;
}

int fake_pageable_locked(const void *p)
{
    return fake_find_alloc_locked(p) == NULL;
}

int fake_cuda_alloc_ctx(const void *p)
{
    pthread_mutex_lock(&fake_lock);
    alloc *a = fake_find_alloc_locked(p);
    int dev = a ? a->ctx_dev : -2;
    pthread_mutex_unlock(&fake_lock);
    return dev;
}

unsigned fake_cuda_host_flags(const void *p)
{
    pthread_mutex_lock(&fake_lock);
    alloc *a = fake_find_alloc_locked(p);
    unsigned f = a ? a->flags : 0xffffffffu;
    pthread_mutex_unlock(&fake_lock);
    return f;
}

/* ---- memory ---- */
/* cuMemAlloc's alignment; the loader's allocator relies on it. */
static void *aligned(size_t size)
{
    return aligned_alloc(256, (size + 255) / 256 * 256);
}

static CUresult track(void *p, size_t size, int dev, unsigned flags)
{
    alloc *a = malloc(sizeof *a);
    if (a == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *a = (alloc){fake_allocs, p, size, dev, flags, fake_current != NULL ? fake_current->dev : -1};
    fake_allocs = a;
    return CUDA_SUCCESS;
}

/* Remove the allocation starting exactly at p; its record, or NULL. */
static alloc *untrack(const void *p, int host)
{
    for (alloc **pp = &fake_allocs; *pp; pp = &(*pp)->next)
        if ((*pp)->p == p && ((*pp)->dev < 0) == host) {
            alloc *a = *pp;
            *pp = a->next;
            return a;
        }
    return NULL;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    NEED_CTX();
    int dev = fake_current->dev;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_lock);
    CUresult r = fake_capture_unsafe_call_locked();
    void *p = NULL;
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&fake_lock);
        return r;
    }
    r = CUDA_ERROR_OUT_OF_MEMORY;
    if (size <= fake_mem_per_dev - fake_used[dev] && (p = aligned(size)) != NULL && (r = track(p, size, dev, 0)) == 0)
        fake_used[dev] += size;
    else {
        free(p);
        p = NULL;
    }
    pthread_mutex_unlock(&fake_lock);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    NEED_CTX();
    pthread_mutex_lock(&fake_lock);
    CUresult r = fake_capture_unsafe_call_locked();
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&fake_lock);
        return r;
    }
    /* Like the real one, free waits for the context's queued work. */
    fake_wait_idle_locked(fake_current);
    alloc *a = untrack((void *)(uintptr_t)dptr, 0);
    if (a != NULL)
        fake_used[a->dev] -= a->size;
    pthread_mutex_unlock(&fake_lock);
    if (a == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    free(a->p);
    free(a);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    NEED_CTX();
    pthread_mutex_lock(&fake_lock);
    CUresult r = fake_capture_unsafe_call_locked();
    pthread_mutex_unlock(&fake_lock);
    if (r != CUDA_SUCCESS)
        return r;
    void *p = aligned(size ? size : 1);
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&fake_lock);
    r = track(p, size, -1, flags);
    pthread_mutex_unlock(&fake_lock);
    if (r != CUDA_SUCCESS)
        free(p);
    *pp = r == CUDA_SUCCESS ? p : NULL;
    return r;
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
    NEED_CTX();
    pthread_mutex_lock(&fake_lock);
    CUresult r = fake_capture_unsafe_call_locked();
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&fake_lock);
        return r;
    }
    fake_wait_idle_locked(NULL);
    alloc *a = untrack(p, 1);
    pthread_mutex_unlock(&fake_lock);
    if (a == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    free(a->p);
    free(a);
    return CUDA_SUCCESS;
}

/* Only the attributes the plugin asks for; an unknown pointer is memory type
 * 0, not an error, as cuPointerGetAttributes documents. */
CUresult CUDAAPI cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
    NEED_INIT();
    if (attrs == NULL || data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_lock);
    alloc *a = fake_find_alloc_locked((const void *)(uintptr_t)ptr);
    unsigned type = a == NULL ? 0 : a->dev < 0 ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    /* Pinned host memory reports the device it was allocated through, as
     * the real driver may: the memory type is what tells it apart. */
    int ordinal = a != NULL ? a->ctx_dev : -2;
    pthread_mutex_unlock(&fake_lock);
    for (unsigned i = 0; i < n; i++) {
        if (attrs[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
            *(unsigned *)data[i] = type;
        else if (attrs[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
            *(int *)data[i] = ordinal;
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    NEED_CTX();
    *total = fake_mem_per_dev;
    *free_bytes = fake_mem_per_dev - fake_used[fake_current->dev];
    return CUDA_SUCCESS;
}
