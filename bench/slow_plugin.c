/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slow_plugin.c - a plugin whose start-up is slow: what a GPU driver's init
 * costs, for infinirt-cpu-bench's "first CPU call while another type
 * starts" row (cpu_bench_loader.c).  It serves INFINI_DEVICE_ASCEND with
 * one device on host memory (the five required entries only).  Keys:
 *   init_ms = N     init sleeps N ms (default 500)
 *   started = PATH  init creates the file PATH first, so the benchmark
 *                   knows the init is under way before it times anything
 */
#define _POSIX_C_SOURCE 200809L
#include "infinirt_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static infiniStatus_t slow_init(const infinirtPluginInitArgs *args, int *device_count)
{
    long ms = 500;
    for (size_t i = 0; i < args->config_count; i++) {
        if (strcmp(args->config[i].key, "init_ms") == 0) {
            ms = atol(args->config[i].value);
        } else if (strcmp(args->config[i].key, "started") == 0) {
            FILE *f = fopen(args->config[i].value, "w");
            if (f != NULL)
                fclose(f);
        }
    }
    nanosleep(&(struct timespec){ms / 1000, ms % 1000 * 1000000L}, NULL);
    *device_count = 1;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t slow_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "slow plugin device %d", dev);
    snprintf(info->description, sizeof info->description, "host memory behind a slow init");
    info->total_memory = (size_t)1 << 30;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t slow_malloc(int dev, void **ptr, size_t size)
{
    (void)dev;
    void *p = aligned_alloc(256, (size + 255) & ~(size_t)255);
    if (p == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    *ptr = p;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t slow_free(int dev, void *ptr)
{
    (void)dev;
    free(ptr);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t slow_memcpy(int dev, void *dst, const void *src, size_t size, int kind)
{
    (void)dev;
    (void)kind;
    memmove(dst, src, size);
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps slow_ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = "slow",
    .device_type = INFINI_DEVICE_ASCEND,
    .init = slow_init,
    .get_device_info = slow_device_info,
    .malloc_device = slow_malloc,
    .free_device = slow_free,
    .memcpy = slow_memcpy,
};

INFINIRT_PLUGIN_DEFINE_ENTRY(slow_ops)
