/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_gpu_ids.h - the identifiers of the fake driver's devices, shared by
 * the fake libcuda (cuDeviceGetUuid, cuDeviceGetPCIBusId) and the fake NVML
 * (which lists the same devices in another order).
 *
 * CUDA device d: UUID bytes 0xfa, 0xce, then 0x10 * i + d, spelled by NVML
 * as "GPU-face1020-..."; PCI bus id 0000:<0x10 + d>:00.0 (the bus number is
 * CU_DEVICE_ATTRIBUTE_PCI_BUS_ID's in fake_libcuda.c).
 */
#ifndef FAKE_GPU_IDS_H_
#define FAKE_GPU_IDS_H_

#include <stdio.h>

static inline void fake_gpu_uuid_bytes(int d, unsigned char out[16])
{
    out[0] = 0xfa;
    out[1] = 0xce;
    for (int i = 2; i < 16; i++)
        out[i] = (unsigned char)(0x10 * i + d);
}

/* NVML's spelling: "GPU-" and 8-4-4-4-12 lower-case hex digits. */
static inline void fake_gpu_uuid_string(int d, char *buf, size_t size)
{
    unsigned char b[16];
    fake_gpu_uuid_bytes(d, b);
    snprintf(buf, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static inline int fake_gpu_bus(int d)
{
    return 0x10 + d;
}

#endif /* FAKE_GPU_IDS_H_ */
