/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compat_placement.c - our infinirt.h behind InfiniCore's own infinicore.h.
 *
 * InfiniCore's sources include "../infinicore.h" by a relative path, so in a
 * translation unit that has our headers first on the include path,
 * InfiniCore's copy of infinicore.h may be the one seen first.  It has the
 * same include guard as ours, so ours is then skipped and infinirt.h must
 * supply our additions itself.  The block below stands in for InfiniCore's
 * header: its guard, its two macros and only the names and values it
 * defines (written here from its published values).
 */
#ifndef __INFINICORE_API_H__
#define __INFINICORE_API_H__
#define __export __attribute__((visibility("default")))
#define __INFINI_C
#include <stddef.h>
typedef enum {
    INFINI_STATUS_SUCCESS = 0,
    INFINI_STATUS_INTERNAL_ERROR = 1,
    INFINI_STATUS_NOT_IMPLEMENTED = 2,
    INFINI_STATUS_BAD_PARAM = 3,
    INFINI_STATUS_NULL_POINTER = 4,
    INFINI_STATUS_DEVICE_TYPE_NOT_SUPPORTED = 5,
    INFINI_STATUS_DEVICE_NOT_FOUND = 6,
    INFINI_STATUS_DEVICE_NOT_INITIALIZED = 7,
    INFINI_STATUS_DEVICE_ARCHITECTURE_NOT_SUPPORTED = 8,
    INFINI_STATUS_BAD_TENSOR_DTYPE = 10,
    INFINI_STATUS_BAD_TENSOR_SHAPE = 11,
    INFINI_STATUS_BAD_TENSOR_STRIDES = 12,
    INFINI_STATUS_INSUFFICIENT_WORKSPACE = 13,
} infiniStatus_t;
typedef enum {
    INFINI_DEVICE_CPU = 0,
    INFINI_DEVICE_NVIDIA = 1,
    INFINI_DEVICE_CAMBRICON = 2,
    INFINI_DEVICE_ASCEND = 3,
    INFINI_DEVICE_METAX = 4,
    INFINI_DEVICE_MOORE = 5,
    INFINI_DEVICE_ILUVATAR = 6,
    INFINI_DEVICE_KUNLUN = 7,
    INFINI_DEVICE_HYGON = 8,
    INFINI_DEVICE_QY = 9,
    INFINI_DEVICE_ALI = 10,
    INFINI_DEVICE_TYPE_COUNT
} infiniDevice_t;
#endif

#include "infinirt.h"
/* And ours again: a second include changes nothing. */
#include "infinicore.h"
#include "infinirt.h"

#include <stdio.h>
#include <string.h>

#define EXPECT(cond)                                                   \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                  \
        }                                                              \
    } while (0)

int main(void)
{
    /* Our names exist, with our copy's values. */
    EXPECT(INFINI_STATUS_OUT_OF_MEMORY == 14);
    EXPECT(INFINI_STATUS_NOT_READY == 15);
    EXPECT(INFINI_STATUS_INVALID_STATE == 16);
    EXPECT(INFINI_DEVICE_OPENCL == 0x1000);
    EXPECT(INFINI_DEVICE_TYPE_COUNT == 11);
    EXPECT(strcmp(infinirtGetErrorName(INFINI_STATUS_OUT_OF_MEMORY), "OUT_OF_MEMORY") == 0);
    EXPECT(strcmp(infinirtGetDeviceTypeName(INFINI_DEVICE_OPENCL), "opencl") == 0);
    int n = -1;
    EXPECT(infinirtGetDeviceCount(INFINI_DEVICE_OPENCL, &n) == INFINI_STATUS_SUCCESS && n >= 0);
    EXPECT(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n) == INFINI_STATUS_SUCCESS && n >= 1);
    /* InfiniCore's graph and snapshot types are declared. */
    infinirtGraph_t g = NULL;
    infinirtGraphExec_t x = NULL;
    infinirtGraphNode_t node = NULL;
    infinirtDeviceResourceSnapshot_t snap = {0};
    EXPECT(g == NULL && x == NULL && node == NULL && snap.valid_fields == INFINIRT_RESOURCE_FIELD_NONE);
    EXPECT(INFINIRT_STREAM_CAPTURE_MODE_RELAXED == 2);
    EXPECT(INFINIRT_RESOURCE_FIELD_COMMUNICATION == (1 << 4));
    printf("placement: ok\n");
    return 0;
}
