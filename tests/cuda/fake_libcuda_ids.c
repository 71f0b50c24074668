/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_libcuda_ids.c - the fake driver's device identifiers (UUID and PCI
 * bus id, see fake_gpu_ids.h), which the CUDA plugin uses to find a device
 * in NVML.  FAKE_CUDA_NO_UUID=1 makes cuDeviceGetUuid fail, as a driver
 * that cannot tell would, so the plugin must fall back to the bus id.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "fake_gpu_ids.h"
#include "fake_libcuda.h"

/* cuda.h maps the name to the _v2 symbol; both are exported, by name. */
#undef cuDeviceGetUuid
#undef cuDeviceGetUuid_v2

static CUresult device_ok(CUdevice d)
{
    int n = 0;
    NEED_INIT();
    if (cuDeviceGetCount(&n) != CUDA_SUCCESS || d < 0 || d >= n)
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

static CUresult get_uuid(CUuuid *uuid, CUdevice d)
{
    CUresult r = device_ok(d);
    const char *no = getenv("FAKE_CUDA_NO_UUID");
    unsigned char b[16];

    if (r != CUDA_SUCCESS)
        return r;
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (no != NULL && strcmp(no, "1") == 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    fake_gpu_uuid_bytes((int)d, b);
    memcpy(uuid->bytes, b, sizeof b);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice d);
CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice d);

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice d)
{
    return get_uuid(uuid, d);
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice d)
{
    return get_uuid(uuid, d);
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *bus_id, int len, CUdevice d)
{
    CUresult r = device_ok(d);
    if (r != CUDA_SUCCESS)
        return r;
    if (bus_id == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* The driver's spelling: upper-case hex, a 4-digit domain. */
    snprintf(bus_id, (size_t)len, "0000:%02X:00.0", fake_gpu_bus((int)d));
    return CUDA_SUCCESS;
}
