/*
 * fake_plugin.c - plugins that differ in what they export and how they fail,
 * for the loader tests.  Built once per FAKE_* variant:
 *   FAKE_GOOD        serves ASCEND: `devices` devices (default 2) on host
 *                    memory; init fails unless the key answer = 42 arrived
 *   FAKE_NO_ENTRY    exports no entry
 *   FAKE_ABI2        declares ABI 2.0
 *   FAKE_SMALL_TABLE declares a table smaller than ABI 1.0's
 *   FAKE_INIT_FAIL   init fails with a message
 *   FAKE_ZERO        init finds no device
 *   FAKE_DUP_CPU     serves CPU, which the cpu plugin already serves
 */
#define _GNU_SOURCE
#include "infinirt_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_devices = 2;

static infiniStatus_t fake_init(const infinirtPluginInitArgs *args, int *count)
{
#if defined(FAKE_INIT_FAIL)
    snprintf(args->message, args->message_size, "fake init refused: no licence");
    return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
#elif defined(FAKE_ZERO)
    snprintf(args->message, args->message_size, "no fake hardware present");
    *count = 0;
    return INFINI_STATUS_SUCCESS;
#else
    int answer = 0;
    for (size_t i = 0; i < args->config_count; i++) {
        if (strcmp(args->config[i].key, "answer") == 0)
            answer = atoi(args->config[i].value);
        else if (strcmp(args->config[i].key, "devices") == 0)
            g_devices = atoi(args->config[i].value);
    }
#if defined(FAKE_GOOD)
    if (answer != 42) {
        snprintf(args->message, args->message_size, "expected key answer = 42 from the config");
        return INFINI_STATUS_BAD_PARAM;
    }
#endif
    (void)answer;
    *count = g_devices;
    return INFINI_STATUS_SUCCESS;
#endif
}

static infiniStatus_t fake_info(int dev, infinirtPluginDeviceInfo *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "fake device %d", dev);
    snprintf(info->description, sizeof info->description, "host memory pretending");
    info->total_memory = (size_t)1 << 30;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_malloc(int dev, void **p, size_t n)
{
    *p = aligned_alloc(256, (n + 255) / 256 * 256);
    return *p ? INFINI_STATUS_SUCCESS : INFINI_STATUS_OUT_OF_MEMORY;
}

static infiniStatus_t fake_free(int dev, void *p)
{
    free(p);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_memcpy(int dev, void *d, const void *s, size_t n, int kind)
{
    memmove(d, s, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_memset(int dev, void *p, int v, size_t n)
{
    memset(p, v, n);
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps fake_ops = {
#if defined(FAKE_ABI2)
    .abi_major = 2,
#else
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
#endif
    .abi_minor = 0,
#if defined(FAKE_SMALL_TABLE)
    .struct_size = 40,
#else
    .struct_size = sizeof(infinirtPluginOps),
#endif
    .name = "fake",
#if defined(FAKE_DUP_CPU)
    .device_type = INFINI_DEVICE_CPU,
#else
    .device_type = INFINI_DEVICE_ASCEND,
#endif
    .init = fake_init,
    .get_device_info = fake_info,
    .malloc_device = fake_malloc,
    .free_device = fake_free,
    .memcpy = fake_memcpy,
    .memset = fake_memset,
    /* no streams, events or host memory: the loader answers NOT_IMPLEMENTED */
};

#if defined(FAKE_NO_ENTRY)
/* Exported, but under the wrong name. */
INFINIRT_PLUGIN_EXPORT const infinirtPluginOps *infinirtPluginEntryTypo(void);
const infinirtPluginOps *infinirtPluginEntryTypo(void)
{
    return &fake_ops;
}
#elif defined(FAKE_ABI2)
/* A plugin built for ABI 2 would still answer a 1.x loader's call, with
 * its own table; the loader must refuse it on abi_major. */
infiniStatus_t infinirtPluginEntry(uint32_t major, uint32_t minor, const infinirtPluginOps **ops)
{
    (void)major;
    (void)minor;
    *ops = &fake_ops;
    return INFINI_STATUS_SUCCESS;
}
#else
INFINIRT_PLUGIN_DEFINE_ENTRY(fake_ops)
#endif
