/* SPDX-License-Identifier: Apache-2.0 */
/*
 * smallest_plugin.c - a plugin with the five entries every plugin must
 * have (init, get_device_info, malloc_device, free_device, memcpy: README,
 * "Writing a plugin"; docs/plugin-abi.md, section 3) and nothing else.  It
 * serves INFINI_DEVICE_KUNLUN with `devices` devices (default 2) backed by
 * host memory, the way a vendor's first plugin might.
 *
 * conformance.smallest.all_in_one runs the conformance suite on it with
 * what it lacks declared (INFINIRT_TEST_UNSUPPORTED=streams,events,...):
 * every test must pass or skip for a declared feature, which shows that a
 * plugin this small can pass the suite, and that a test which needs what
 * such a plugin lacks asks for it instead of failing.
 */
#include "infinirt_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_devices = 2;

static infiniStatus_t smallest_init(const infinirtPluginInitArgs *args, int *device_count)
{
    for (size_t i = 0; i < args->config_count; i++) {
        long n;
        if (strcmp(args->config[i].key, "devices") != 0 || infinirtPluginParseCount(args->config[i].value, 0, 64, &n))
            infinirtPluginConfigWarn(args, "smallest", i, "ignored (known: devices = 0..64)");
        else
            g_devices = (int)n;
    }
    *device_count = g_devices;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t smallest_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "smallest plugin device %d", dev);
    snprintf(info->description, sizeof info->description, "host memory, the five required entries only");
    info->total_memory = (size_t)1 << 30;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t smallest_malloc(int dev, void **ptr, size_t size)
{
    (void)dev;
    void *p = aligned_alloc(256, (size + 255) & ~(size_t)255);
    if (p == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    *ptr = p;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t smallest_free(int dev, void *ptr)
{
    (void)dev;
    free(ptr);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t smallest_memcpy(int dev, void *dst, const void *src, size_t size, int kind)
{
    (void)dev;
    (void)kind;
    memmove(dst, src, size);
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps smallest_ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = "smallest",
    .device_type = INFINI_DEVICE_KUNLUN,
    .init = smallest_init,
    .get_device_info = smallest_device_info,
    .malloc_device = smallest_malloc,
    .free_device = smallest_free,
    .memcpy = smallest_memcpy,
    /* every other entry NULL: the loader answers NOT_IMPLEMENTED */
};

INFINIRT_PLUGIN_DEFINE_ENTRY(smallest_ops)
