/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance_snapshot.c - infinirtGetDeviceResourceSnapshot on every
 * backend: the memory part as the backend and the allocator report it,
 * utilisation only where the backend observes it, and nothing written on
 * bad input.
 */
#include "common.h"

#include <string.h>

#define MiB ((size_t)1 << 20)
#define KNOWN_FIELDS                                                                                               \
    ((uint64_t)(INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY | INFINIRT_RESOURCE_FIELD_COMPUTE_UTILIZATION |            \
                INFINIRT_RESOURCE_FIELD_MEMORY_BANDWIDTH_UTILIZATION | INFINIRT_RESOURCE_FIELD_KERNEL_TIME_RATIO | \
                INFINIRT_RESOURCE_FIELD_COMMUNICATION))

/* A utilisation figure: in [0, 1] when its bit is set, 0 when not. */
static int check_fraction(const infinirtDeviceResourceSnapshot_t *s, infinirtResourceField_t bit, float v)
{
    if (s->valid_fields & (uint64_t)bit) {
        ASSERT(v >= 0.0f && v <= 1.0f);
    } else {
        ASSERT(v == 0.0f);
    }
    return TEST_OK;
}

static int check_device(infiniDevice_t type, int id, bool mem_info)
{
    void *p = NULL;
    infinirtDeviceResourceSnapshot_t s;
    infinirtAllocatorStats_t st;
    size_t f = 0, t = 0;

    ASSERT_OK(infinirtSetDevice(type, id));
    ASSERT_OK(infinirtMalloc(&p, 3 * MiB));
    /* Asked from another device: the snapshot is of the device named. */
    ASSERT_OK(infinirtSetDevice(type, 0));
    memset(&s, 0xab, sizeof s); /* every field is written */
    ASSERT_OK(infinirtGetDeviceResourceSnapshot(type, id, &s));
    ASSERT_EQ(s.device_type, type);
    ASSERT_EQ(s.device_id, id);
    ASSERT_EQ(s.valid_fields & ~KNOWN_FIELDS, 0);
    ASSERT_EQ(s.estimated_fields & ~s.valid_fields, 0); /* only figures that are there */

    /* Memory: every built-in backend gives its figures; a plugin without
     * get_mem_info (mem_info declared unsupported) none. */
    if (mem_info) {
        ASSERT(s.valid_fields & INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY);
        ASSERT_OK(infinirtGetMemInfo(type, id, &f, &t));
        ASSERT_EQ(s.total_bytes, t);
        ASSERT_GT(s.total_bytes, 0);
        ASSERT_LE(s.free_bytes, s.total_bytes);
        ASSERT_EQ(s.used_bytes, s.total_bytes - s.free_bytes);
    } else {
        ASSERT_EQ(s.valid_fields & INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY, 0);
        ASSERT_STATUS(infinirtGetMemInfo(type, id, &f, &t), INFINI_STATUS_NOT_IMPLEMENTED);
    }
    /* What the allocator holds, which includes the block above. */
    ASSERT_OK(infinirtGetAllocatorStats(type, id, &st));
    ASSERT_EQ(s.reserved_bytes, st.reserved_bytes);
    ASSERT_GE(s.reserved_bytes, 3 * MiB);

    /* Utilisation: where observed, fractions; on CPU and OpenCL never. */
    CHECK(check_fraction(&s, INFINIRT_RESOURCE_FIELD_COMPUTE_UTILIZATION, s.compute_utilization));
    CHECK(check_fraction(&s, INFINIRT_RESOURCE_FIELD_MEMORY_BANDWIDTH_UTILIZATION, s.memory_bandwidth_utilization));
    CHECK(check_fraction(&s, INFINIRT_RESOURCE_FIELD_KERNEL_TIME_RATIO, s.kernel_time_ratio));
    ASSERT_EQ(s.valid_fields & INFINIRT_RESOURCE_FIELD_COMMUNICATION, 0);
    ASSERT(s.communication_time_ratio == 0.0f);
    ASSERT_EQ(s.communication_bytes, 0);
    if (type == INFINI_DEVICE_CPU || type == INFINI_DEVICE_OPENCL)
        ASSERT_EQ(s.valid_fields, INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY);
    /* CUDA's kernel time is NVML's busy figure: an estimate. */
    if (type == INFINI_DEVICE_NVIDIA && (s.valid_fields & INFINIRT_RESOURCE_FIELD_KERNEL_TIME_RATIO))
        ASSERT(s.estimated_fields & INFINIRT_RESOURCE_FIELD_KERNEL_TIME_RATIO);
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

int test_conformance_resource_snapshot(void)
{
    CHECK(tc_use_device(0));
    infiniDevice_t type = tc_device_type();
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(type, &n));
    bool mem_info;
    CHECK(tc_probe(TC_MEM_INFO, &mem_info));
    for (int id = 0; id < n && id < 2; id++)
        CHECK(check_device(type, id, mem_info));

    /* Bad input: the status, and not a byte written. */
    infinirtDeviceResourceSnapshot_t s, before;
    memset(&s, 0x5c, sizeof s);
    before = s;
    ASSERT_STATUS(infinirtGetDeviceResourceSnapshot(type, 0, NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_STATUS(infinirtGetDeviceResourceSnapshot(type, n, &s), INFINI_STATUS_DEVICE_NOT_FOUND);
    ASSERT_STATUS(infinirtGetDeviceResourceSnapshot(type, -1, &s), INFINI_STATUS_DEVICE_NOT_FOUND);
    ASSERT_STATUS(infinirtGetDeviceResourceSnapshot((infiniDevice_t)99, 0, &s), INFINI_STATUS_BAD_PARAM);
    infiniDevice_t unserved; /* a type with no device here, whichever this run serves */
    if (tc_unserved_type(&unserved))
        ASSERT_STATUS(infinirtGetDeviceResourceSnapshot(unserved, 0, &s), INFINI_STATUS_DEVICE_TYPE_NOT_SUPPORTED);
    ASSERT_MEM_EQ(&s, &before, sizeof s);
    return TEST_OK;
}
