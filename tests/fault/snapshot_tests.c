/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot_tests.c - infinirtGetDeviceResourceSnapshot where the backend
 * cannot give memory figures (a plugin without get_mem_info) and where it
 * fails to (the fault plugin).  The behaviour on every backend is the
 * conformance test's (conformance/conformance_snapshot.c).
 */
#include "fault_tests.h"

#include <string.h>

/* A plugin without get_mem_info (the fake "good" plugin, ASCEND): a
 * success with MEMORY_CAPACITY clear and the memory figures 0, but the
 * allocator's reserved bytes still there. */
int test_snapshot_no_mem_info(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.good]\nlibrary = " FAKE_DIR "/libfake_good.so\nanswer = 42\ndevices = 2\n");
    tc_use_config(cfg);
    void *p = NULL;
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    ASSERT_OK(infinirtMalloc(&p, 4096));
    infinirtDeviceResourceSnapshot_t s;
    infinirtAllocatorStats_t st;
    memset(&s, 0xab, sizeof s);
    ASSERT_OK(infinirtGetDeviceResourceSnapshot(INFINI_DEVICE_ASCEND, 1, &s));
    ASSERT_EQ(s.device_type, INFINI_DEVICE_ASCEND);
    ASSERT_EQ(s.device_id, 1);
    ASSERT_EQ(s.valid_fields, 0);
    ASSERT_EQ(s.estimated_fields, 0);
    ASSERT_EQ(s.free_bytes, 0);
    ASSERT_EQ(s.total_bytes, 0);
    ASSERT_EQ(s.used_bytes, 0);
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 1, &st));
    ASSERT_GT(st.reserved_bytes, 0);
    ASSERT_EQ(s.reserved_bytes, st.reserved_bytes);
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

/* get_mem_info fails: its status, the caller's struct untouched; the next
 * call, with the fault gone, succeeds. */
int test_snapshot_mem_info_fails(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtDeviceResourceSnapshot_t s, before;
    memset(&s, 0x5c, sizeof s);
    before = s;
    ASSERT_EQ(api.set("get_mem_info", FAULT_ALWAYS, 0, FAIL_ST), 0);
    ASSERT_STATUS(infinirtGetDeviceResourceSnapshot(DEV, 0, &s), FAIL_ST);
    ASSERT_MEM_EQ(&s, &before, sizeof s);
    api.reset();
    ASSERT_OK(infinirtGetDeviceResourceSnapshot(DEV, 0, &s));
    ASSERT(s.valid_fields & INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY);
    ASSERT_EQ(s.total_bytes, LIMIT);
    return TEST_OK;
}
