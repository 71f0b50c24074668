/* SPDX-License-Identifier: Apache-2.0 */
/*
 * robust_memory_tests.c - memory requests that must fail without side
 * effects, through the public API on the CPU plugin: a request larger than
 * the device fails at once, releases nothing and leaves later allocations
 * served exactly as before.
 */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>

#define MiB ((size_t)1 << 20)

static void cpu_config(const char *extra)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 1\n%s", CPU_PLUGIN, extra);
    tc_use_config(cfg);
}

/* What a failed request must leave as it was: everything but oom_count. */
static int kept(const infinirtAllocatorStats_t *a, const infinirtAllocatorStats_t *b)
{
    ASSERT_EQ(b->reserved_bytes, a->reserved_bytes);
    ASSERT_EQ(b->cached_free_bytes, a->cached_free_bytes);
    ASSERT_EQ(b->segments, a->segments);
    ASSERT_EQ(b->raw_allocs, a->raw_allocs);
    ASSERT_EQ(b->raw_frees, a->raw_frees);
    ASSERT_EQ(b->retries, a->retries);
    ASSERT_EQ(b->allocated_bytes, a->allocated_bytes);
    ASSERT_EQ(b->active_blocks, a->active_blocks);
    ASSERT_EQ(b->alloc_requests, a->alloc_requests);
    return TEST_OK;
}

/* A 1 PiB request on a device of a few GiB (or a 16 MiB memory_limit):
 * OUT_OF_MEMORY at once, with the cache kept - the next request of the
 * cached size is served from it, with no new reserve. */
static int huge_request(size_t cached)
{
    void *p, *q = (void *)1;
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMalloc(&p, cached));
    ASSERT_OK(infinirtFree(p));
    infinirtAllocatorStats_t before, after;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &before));
    ASSERT_GE(before.cached_free_bytes, cached);
    size_t total = 0, free_bytes = 0;
    ASSERT_OK(infinirtGetMemInfo(INFINI_DEVICE_CPU, 0, &free_bytes, &total));
    const size_t sizes[] = {(size_t)1 << 50, total + 1};
    for (int i = 0; i < 2; i++) {
        ASSERT_STATUS(infinirtMalloc(&q, sizes[i]), INFINI_STATUS_OUT_OF_MEMORY);
        ASSERT_STATUS(infinirtMallocAsync(&q, sizes[i], s), INFINI_STATUS_OUT_OF_MEMORY);
    }
    ASSERT_PTR_EQ(q, (void *)1); /* the output is not written */
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &after));
    CHECK(kept(&before, &after));
    ASSERT_EQ(after.oom_count, before.oom_count + 4); /* counted, as every failure for lack of memory */
    ASSERT_OK(infinirtMalloc(&q, cached));
    ASSERT_PTR_EQ(q, p);
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &after));
    ASSERT_EQ(after.reserved_bytes, before.reserved_bytes);
    ASSERT_EQ(after.raw_allocs, before.raw_allocs);
    ASSERT_OK(infinirtFree(q));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

int test_memory_checks_huge_request(void)
{
    cpu_config("");
    return huge_request(3 * MiB);
}

int test_memory_checks_huge_request_limited(void)
{
    cpu_config("memory_limit = 16M\n");
    return huge_request(3 * MiB);
}
