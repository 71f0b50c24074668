/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_fence_tests.c - the loader against a plugin that fails on demand
 * (fixtures/fault_plugin.c): an incoherent ops table is refused and a legal one
 * without events works; a fence that cannot be taken, or whose events
 * fail, never lets the allocator hand out memory that queued work may
 * still write, and never strands memory once the device is known idle.
 *
 * The "gated" stream below is a CPU worker stream blocked on a host
 * function until the test opens its gate.  FAULT_PLUGIN and CPU_PLUGIN
 * come from CMake.
 */
#define _GNU_SOURCE
#include "fault_tests.h"
#include "infinirt_cpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* ------------------------------------------------ defect 4: the table */

/* An incoherent table is refused with the reason; the config's other
 * plugin serves on. */
static int refused_case(const char *omit, const char *have, const char *missing)
{
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\n\n[plugin.fault]\nlibrary = %s\ninner = %s\n", CPU_PLUGIN,
             FAULT_PLUGIN, CPU_PLUGIN);
    tc_use_config(cfg);
    tc_setenv("FAULT_OMIT", omit);
    infinirtPluginInfo_t pi;
    ASSERT_GE(ft_find_plugin("fault", &pi), 0);
    if (pi.status != INFINIRT_PLUGIN_ABI_MISMATCH)
        TEST_FAILED_("fault plugin without %s: status %s (%s), want ABI mismatch", omit,
                     infinirtGetPluginStatusString(pi.status), pi.message);
    ASSERT_STR_CONTAINS(pi.message, "incoherent ops table");
    ASSERT_STR_CONTAINS(pi.message, have);
    ASSERT_STR_CONTAINS(pi.message, missing);
    ASSERT_EQ(pi.device_count, 0);
    int n = -1;
    ASSERT_OK(infinirtGetDeviceCount(DEV, &n));
    ASSERT_EQ(n, 0);
    ASSERT_STATUS(infinirtSetDevice(DEV, 0), INFINI_STATUS_DEVICE_TYPE_NOT_SUPPORTED);
    /* The cpu plugin serves on. */
    ASSERT_GE(ft_find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    char a[256], b[256];
    tc_pattern(a, sizeof a, 3);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, sizeof a));
    ASSERT_OK(infinirtMemcpy(d, a, sizeof a, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(b, d, sizeof a, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, sizeof a);
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

int test_fault_table_no_event_query(void)
{
    return refused_case("event_query", "event_record", "event_query");
}

int test_fault_table_no_event_synchronize(void)
{
    return refused_case("event_synchronize", "event_record", "event_synchronize");
}

int test_fault_table_no_stream_destroy(void)
{
    return refused_case("stream_destroy", "stream_create", "stream_destroy");
}

/* A legal table without events: it loads, the public event calls answer
 * NOT_IMPLEMENTED, and a free behind queued work is kept from reuse until
 * that work has run (its fence has no event to record). */
int test_fault_no_events(void)
{
    ft_config("event_create,event_destroy,event_record,event_query,event_synchronize,event_elapsed_time,"
              "stream_wait_event",
              NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtEvent_t e = NULL;
    ASSERT_STATUS(infinirtEventCreate(&e), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_STATUS(infinirtEventCreateWithFlags(&e, INFINIRT_EVENT_DISABLE_TIMING), INFINI_STATUS_NOT_IMPLEMENTED);
    infinirtStream_t s, s2;
    ASSERT_OK(ft_stream(&s));
    ASSERT_OK(ft_stream(&s2));
    CHECK(reuse_is_safe(s, false, NULL, BLK));   /* Free, reused on the default stream */
    CHECK(reuse_is_safe(s, true, s2, BLK));      /* FreeAsync, reused on another stream */
    CHECK(reuse_is_safe(s, false, NULL, LIMIT)); /* the whole device */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(s2));
    CHECK(all_memory_back());
    return TEST_OK;
}

/* Optional entries left out one by one: NOT_IMPLEMENTED, no crash, and the
 * stream stays usable. */
int test_fault_omitted_entries(void)
{
    ft_config("stream_wait_event,event_elapsed_time,memset_async,get_mem_info,launch_host_func", NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t s;
    ASSERT_OK(ft_stream(&s));
    infinirtEvent_t a, b;
    ASSERT_OK(infinirtEventCreate(&a));
    ASSERT_OK(infinirtEventCreate(&b));
    ASSERT_OK(infinirtEventRecord(a, s));
    ASSERT_OK(infinirtEventRecord(b, s));
    ASSERT_STATUS(infinirtStreamWaitEvent(s, a), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_OK(infinirtEventSynchronize(b));
    float ms = -1;
    ASSERT_STATUS(infinirtEventElapsedTime(&ms, a, b), INFINI_STATUS_NOT_IMPLEMENTED);
    void *p;
    ASSERT_OK(infinirtMalloc(&p, 4096));
    ASSERT_STATUS(infinirtMemsetAsync(p, 1, 4096, s), INFINI_STATUS_NOT_IMPLEMENTED);
    size_t fr = 0, tot = 0;
    ASSERT_STATUS(infinirtGetMemInfo(DEV, 0, &fr, &tot), INFINI_STATUS_NOT_IMPLEMENTED);
    static tc_gate open = {.open = 1};
    ASSERT_STATUS(infinirtLaunchHostFunc(s, tc_gate_wait_fn, &open), INFINI_STATUS_NOT_IMPLEMENTED);
    /* Still usable, and the stream's (failed) submissions do not wedge it. */
    ASSERT_OK(infinirtMemset(p, 7, 4096));
    ASSERT_OK(infinirtFreeAsync(p, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtEventDestroy(a));
    ASSERT_OK(infinirtEventDestroy(b));
    ASSERT_OK(infinirtStreamDestroy(s));
    CHECK(all_memory_back());
    return TEST_OK;
}

/* ------------------------------------- defect 2: no fence to be had */

/* event_create or event_record fails at every call: frees behind queued
 * work get fences without events, which hold the block until the device is
 * seen idle; then all of it is usable again. */
static int fence_unavailable(const char *op)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t s, s2;
    ASSERT_OK(ft_stream(&s));
    ASSERT_OK(ft_stream(&s2));
    ASSERT_EQ(api.set(op, FAULT_ALWAYS, 0, FAIL_ST), 0);
    CHECK(reuse_is_safe(s, false, NULL, BLK));
    CHECK(reuse_is_safe(s, true, s2, BLK));
    CHECK(reuse_is_safe(s, true, NULL, BLK));
    CHECK(reuse_is_safe(s, false, s2, LIMIT));
    ASSERT_GT(api.calls(op), 0); /* the fault was met */
    /* The log says what happens: memory held, not a wait that never was. */
    ASSERT_GE(log_count("held until the device is next synchronized"), 1);
    ASSERT_EQ(log_count("waiting for the device instead"), 0);
    /* A failing event is no reason to block the free on the device: the
     * fence goes on without an event (only a fence that cannot be
     * allocated at all makes the free synchronise). */
    ASSERT_EQ(log_count("no memory for a fence"), 0);
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(s2));
    CHECK(all_memory_back());
    return TEST_OK;
}

int test_fault_event_record_fails(void)
{
    return fence_unavailable("event_record");
}

int test_fault_event_create_fails(void)
{
    return fence_unavailable("event_create");
}

/* ---------------------------------- defect 3: fences that answer errors */

/* Block `*old` (the whole device) behind a copy on a gated stream, freed
 * synchronously; the gate is left closed for the caller. */
static int pending_whole_device(infinirtStream_t s, tc_gate *g, void **old)
{
    static unsigned char src[64 << 10];
    ASSERT_OK(infinirtMalloc(old, LIMIT));
    CHECK(tc_hold_stream(s, g));
    ASSERT_OK(infinirtMemcpyAsync(*old, src, sizeof src, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtFree(*old));
    return TEST_OK;
}

/* event_query fails at every call: once the loader's own counters show the
 * work done - after a device synchronize, or after every stream was
 * synchronised - the memory is usable again, and the failure is logged
 * once. */
int test_fault_event_query_fails(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t s, s2;
    ASSERT_OK(ft_stream(&s));
    ASSERT_OK(ft_stream(&s2));
    ASSERT_EQ(api.set("event_query", FAULT_ALWAYS, 0, FAIL_ST), 0);
    void *old, *p;
    for (int way = 0; way < 2; way++) {
        /* Work on a second stream too, so "every stream" means both. */
        static tc_gate open = {.open = 1};
        ASSERT_OK(infinirtLaunchHostFunc(s2, tc_gate_wait_fn, &open));
        tc_gate g = {0};
        CHECK(pending_whole_device(s, &g, &old));
        tc_gate_open(&g);
        if (way == 0) {
            ASSERT_OK(infinirtDeviceSynchronize());
        } else {
            ASSERT_OK(infinirtStreamSynchronize(s));
            ASSERT_OK(infinirtStreamSynchronize(s2));
        }
        ASSERT_OK(infinirtMalloc(&p, LIMIT));
        ASSERT_OK(infinirtFree(p));
    }
    ASSERT_GT(api.calls("event_query"), 0);
    ASSERT_EQ(log_count("event_query on a fence failed"), 1);
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(s2));
    CHECK(all_memory_back());
    return TEST_OK;
}

/* event_query and event_synchronize fail: a Malloc that needs the pending
 * memory synchronises the device (the gate is open, so it can) and
 * succeeds. */
int test_fault_event_wait_fails(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t s;
    ASSERT_OK(ft_stream(&s));
    ASSERT_EQ(api.set("event_query", FAULT_ALWAYS, 0, FAIL_ST), 0);
    ASSERT_EQ(api.set("event_synchronize", FAULT_ALWAYS, 0, FAIL_ST), 0);
    tc_gate g = {0};
    void *old, *p;
    CHECK(pending_whole_device(s, &g, &old));
    tc_gate_open(&g);
    long syncs = api.calls("device_synchronize");
    ASSERT_OK(infinirtMalloc(&p, LIMIT));
    ASSERT_GT(api.calls("device_synchronize"), syncs);
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtStreamDestroy(s));
    CHECK(all_memory_back());
    return TEST_OK;
}

/* Every way to learn that the work finished fails: the pending block is
 * never handed out, and the Malloc that would need it fails cleanly.  Once
 * a stream synchronize succeeds, it is usable again. */
int test_fault_device_sync_fails(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t s;
    ASSERT_OK(ft_stream(&s));
    ASSERT_EQ(api.set("event_query", FAULT_ALWAYS, 0, FAIL_ST), 0);
    ASSERT_EQ(api.set("event_synchronize", FAULT_ALWAYS, 0, FAIL_ST), 0);
    ASSERT_EQ(api.set("device_synchronize", FAULT_ALWAYS, 0, FAIL_ST), 0);
    tc_gate g = {0};
    void *old, *p = NULL;
    CHECK(pending_whole_device(s, &g, &old));
    ASSERT_STATUS(infinirtMalloc(&p, LIMIT), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_STATUS(infinirtMalloc(&p, LIMIT), INFINI_STATUS_OUT_OF_MEMORY); /* still kept */
    ASSERT_STATUS(infinirtDeviceSynchronize(), FAIL_ST);
    ASSERT_STATUS(infinirtMalloc(&p, LIMIT), INFINI_STATUS_OUT_OF_MEMORY);
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(DEV, 0, &st));
    ASSERT_EQ(st.allocated_bytes, 0);
    ASSERT_EQ(st.reserved_bytes, LIMIT);
    ASSERT_GE(st.oom_count, 3);
    tc_gate_open(&g);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtMalloc(&p, LIMIT));
    ASSERT_OK(infinirtFree(p));
    api.reset();
    ASSERT_OK(infinirtStreamDestroy(s));
    CHECK(all_memory_back());
    return TEST_OK;
}
