/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_nvml.c - a stand-in for libnvidia-ml.so.1, pointed at with
 * `nvml_library = <path>` in [plugin.cuda], so the CUDA plugin's
 * utilisation path is tested without a GPU.
 *
 * It lists the fake driver's devices (fake_gpu_ids.h) in an order unlike
 * CUDA's: NVML index j is CUDA device (j + 1) % n, as a machine where NVML
 * and CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER disagree.  A plugin that
 * picked NVML devices by index would report another device's figures.
 * CUDA device d's utilisation is gpu = 10 * d + 11 %, memory = 5 * d + 7 %;
 * its memory is FAKE_CUDA_MEM bytes (default 64 MiB, as the fake driver's),
 * d + 1 MiB of them used (by "other processes": the figures differ from
 * the fake driver's, so a test sees which one answered).
 *
 * Environment, read at nvmlInit_v2:
 *   FAKE_NVML_DEVICES   how many of CUDA's devices it lists (default
 *                       FAKE_CUDA_DEVICES, else 3): the others are unknown
 *   FAKE_NVML_INIT      fail: nvmlInit_v2 fails
 *   FAKE_NVML_RATES_FAIL  a CUDA device whose utilisation query fails
 * fake_nvml_* functions count what the plugin asked.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fake_gpu_ids.h"

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_UNKNOWN 999
#define MAX_DEV 8

typedef struct {
    int cuda_dev;
} fake_nvml_device;
typedef struct {
    unsigned int gpu, memory;
} fake_nvml_utilization;

static int ndev, rates_fail = -1;
typedef struct {
    unsigned long long total, free, used;
} fake_nvml_memory;

static fake_nvml_device devices[MAX_DEV]; /* by NVML index */
static unsigned long long mem_total;
static atomic_int initialized, init_calls, uuid_calls, pci_calls, index_calls, rates_calls, memory_calls;

/* Exported for the tests. */
int fake_nvml_init_calls(void)
{
    return init_calls;
}
int fake_nvml_uuid_calls(void)
{
    return uuid_calls;
}
int fake_nvml_pci_calls(void)
{
    return pci_calls;
}
int fake_nvml_index_calls(void)
{
    return index_calls;
}
int fake_nvml_rates_calls(void)
{
    return rates_calls;
}
int fake_nvml_memory_calls(void)
{
    return memory_calls;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v ? atoi(v) : dflt;
}

int nvmlInit_v2(void)
{
    const char *mode = getenv("FAKE_NVML_INIT");
    atomic_fetch_add(&init_calls, 1);
    if (mode != NULL && strcmp(mode, "fail") == 0)
        return NVML_ERROR_UNKNOWN;
    ndev = env_int("FAKE_NVML_DEVICES", env_int("FAKE_CUDA_DEVICES", 3));
    if (ndev < 0 || ndev > MAX_DEV)
        ndev = MAX_DEV;
    for (int j = 0; j < ndev; j++)
        devices[j].cuda_dev = (j + 1) % ndev;
    rates_fail = env_int("FAKE_NVML_RATES_FAIL", -1);
    mem_total = getenv("FAKE_CUDA_MEM") != NULL ? strtoull(getenv("FAKE_CUDA_MEM"), NULL, 10) : 64ull << 20;
    atomic_store(&initialized, 1);
    return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

const char *nvmlErrorString(int r)
{
    switch (r) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    default:
        return "Unknown Error";
    }
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!atomic_load(&initialized))
        return NVML_ERROR_UNINITIALIZED;
    *n = (unsigned)ndev;
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, fake_nvml_device **out)
{
    atomic_fetch_add(&index_calls, 1);
    if (!atomic_load(&initialized))
        return NVML_ERROR_UNINITIALIZED;
    if (out == NULL || index >= (unsigned)ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *out = &devices[index];
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, fake_nvml_device **out)
{
    char want[64];
    atomic_fetch_add(&uuid_calls, 1);
    if (!atomic_load(&initialized))
        return NVML_ERROR_UNINITIALIZED;
    if (uuid == NULL || out == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int j = 0; j < ndev; j++) {
        fake_gpu_uuid_string(devices[j].cuda_dev, want, sizeof want);
        if (strcmp(uuid, want) == 0) {
            *out = &devices[j];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* NVML takes "domain:bus:device.function" in hex, any case and width. */
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, fake_nvml_device **out)
{
    unsigned domain, bus, dev, fn;
    atomic_fetch_add(&pci_calls, 1);
    if (!atomic_load(&initialized))
        return NVML_ERROR_UNINITIALIZED;
    if (bus_id == NULL || out == NULL || sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int j = 0; j < ndev; j++)
        if (domain == 0 && bus == (unsigned)fake_gpu_bus(devices[j].cuda_dev) && dev == 0 && fn == 0) {
            *out = &devices[j];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

int nvmlDeviceGetUtilizationRates(const fake_nvml_device *d, fake_nvml_utilization *u)
{
    atomic_fetch_add(&rates_calls, 1);
    if (!atomic_load(&initialized))
        return NVML_ERROR_UNINITIALIZED;
    if (d == NULL || u == NULL || d < devices || d >= devices + ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (d->cuda_dev == rates_fail)
        return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = 10u * (unsigned)d->cuda_dev + 11u;
    u->memory = 5u * (unsigned)d->cuda_dev + 7u;
    return NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo(const fake_nvml_device *d, fake_nvml_memory *m)
{
    atomic_fetch_add(&memory_calls, 1);
    if (!atomic_load(&initialized))
        return NVML_ERROR_UNINITIALIZED;
    if (d == NULL || m == NULL || d < devices || d >= devices + ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    m->used = ((unsigned long long)d->cuda_dev + 1) << 20;
    m->total = mem_total;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}
