/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routing_tests.c - calls reach the plugin and device that own their
 * handles and pointers: two devices of one backend, two backends, device
 * memory the loader did not allocate, and a device's memory limit.  The
 * fake plugin's ledger shows which plugin and device received each call.
 */
#define _GNU_SOURCE
#include "loader_tests.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
/* Pointers, streams and events made on device 1 are used and released
 * while device 0 is current, and reach device 1. */
int test_routing_two_devices(void)
{
    char cfg[1024];
    /* async: a stream of device 1 is held while calls route to it. */
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 2\nstreams = async\n", CPU_PLUGIN);
    use_config(cfg);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 1));
    void *p;
    infinirtStream_t s;
    infinirtEvent_t e;
    ASSERT_OK(infinirtMalloc(&p, 4096));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));

    infinirtAllocatorStats_t st0, st1;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st0));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 1, &st1));
    ASSERT_EQ(st0.active_blocks, 0);
    ASSERT_EQ(st1.active_blocks, 1);

    char a[4096], b[4096];
    tc_pattern(a, sizeof a, 11);
    static tc_gate gate; /* static: the runner may open it after we return */
    ASSERT_OK(tc_hold_stream(s, &gate));
    ASSERT_OK(infinirtMemcpyAsync(p, a, sizeof a, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(b, p, sizeof a, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtEventRecord(e, s));
    infinirtEventStatus_t es;
    ASSERT_OK(infinirtEventQuery(e, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY);
    /* Device 0's synchronize does not wait for device 1's stream. */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtEventQuery(e, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtEventSynchronize(e));
    ASSERT_MEM_EQ(a, b, sizeof a);
    /* NULL stream for an event means the event's own device. */
    ASSERT_OK(infinirtEventRecord(e, NULL));
    ASSERT_OK(infinirtEventSynchronize(e));
    /* A device-0 stream cannot record a device-1 event. */
    infinirtStream_t s0;
    ASSERT_OK(infinirtStreamCreate(&s0));
    ASSERT_STATUS(infinirtEventRecord(e, s0), INFINI_STATUS_BAD_PARAM);
    /* ...but it can wait on it: same backend. */
    ASSERT_OK(infinirtStreamWaitEvent(s0, e));
    ASSERT_OK(infinirtStreamSynchronize(s0));
    ASSERT_OK(infinirtStreamDestroy(s0));

    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 1, &st1));
    ASSERT_EQ(st1.active_blocks, 0);
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtEventDestroy(e));
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(id, 0); /* nothing above changed the current device */
    return TEST_OK;
}

/* Handles and pointers of one backend are used while a device of another
 * backend is current: every call goes to the owner's plugin and device.
 * The fake plugin (ascend, with a ledger of the calls it received) and the
 * cpu plugin are the two backends; each direction is checked by what only
 * the right plugin could have done. */
int test_routing_other_backend(void)
{
    char ledger[600], cfg[2048];
    snprintf(ledger, sizeof ledger, "%s/fake.ledger", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\ndevices = 2\nstreams = async\n\n[plugin.streams]\nlibrary = " FAKE_DIR
             "/libfake_streams.so\nanswer = 42\ndevices = 2\nledger = %s\n",
             CPU_PLUGIN, ledger);
    use_config(cfg);
    enum { N = 8192 };
    static unsigned char a[N], b[N];
    infinirtAllocatorStats_t st;

    /* cpu:1 objects while ascend:0 is current.  The fake completes every
     * event at once and would log any call it received, so a NOT_READY
     * answer and an empty ledger show that the cpu plugin answered. */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 1));
    void *pc;
    infinirtStream_t sc;
    infinirtEvent_t ec;
    ASSERT_OK(infinirtMalloc(&pc, N));
    ASSERT_OK(infinirtStreamCreate(&sc));
    ASSERT_OK(infinirtEventCreate(&ec));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    static tc_gate gate; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(sc, &gate));
    ASSERT_OK(infinirtMemsetAsync(pc, 0x5a, N, sc));
    ASSERT_OK(infinirtEventRecord(ec, sc));
    infinirtEventStatus_t es;
    ASSERT_OK(infinirtEventQuery(ec, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(sc));
    ASSERT_OK(infinirtMemcpy(b, pc, N, INFINIRT_MEMCPY_D2H));
    memset(a, 0x5a, N);
    ASSERT_MEM_EQ(a, b, N); /* the fill ran before StreamSynchronize returned */
    ASSERT_OK(infinirtEventSynchronize(ec));
    ASSERT_OK(infinirtEventQuery(ec, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_COMPLETE);
    ASSERT_OK(infinirtMemset(pc, 0x33, N));
    tc_pattern(a, N, 3);
    ASSERT_OK(infinirtMemcpy(pc, a, 100, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(b, pc, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, 100);
    ASSERT_EQ(b[100], 0x33);
    ASSERT_EQ(b[N - 1], 0x33);
    ASSERT_OK(infinirtFreeAsync(pc, sc));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 1, &st));
    ASSERT_EQ(st.active_blocks, 0);
    ASSERT_OK(infinirtStreamSynchronize(sc));
    ASSERT_OK(infinirtStreamDestroy(sc));
    ASSERT_OK(infinirtEventDestroy(ec));
    ASSERT_STR_EQ(ledger_text(ledger), ""); /* the fake saw none of it */

    /* ascend:1 objects while cpu:0 is current: the fake's ledger names
     * each call with the device that received it and the device that made
     * the object. */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    void *pf;
    infinirtStream_t sf;
    infinirtEvent_t ef;
    ASSERT_OK(infinirtMalloc(&pf, N));
    ASSERT_OK(infinirtStreamCreate(&sf));
    ASSERT_OK(infinirtEventCreate(&ef));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtMemset(pf, 0x11, N));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "memset dev=1\n");
    ASSERT_OK(infinirtMemcpy(b, pf, N, INFINIRT_MEMCPY_D2H));
    memset(a, 0x11, N);
    ASSERT_MEM_EQ(a, b, N);
    ASSERT_STR_CONTAINS(ledger_text(ledger), "memcpy dev=1\n");
    ASSERT_OK(infinirtMemsetAsync(pf, 0x22, N, sf));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "memset_async dev=1 owner=1\n");
    ASSERT_OK(infinirtMemsetAsync(pf, 0x23, 16, NULL)); /* the pointer's device's default stream */
    ASSERT_STR_CONTAINS(ledger_text(ledger), "memset_async dev=1 owner=-1\n");
    ASSERT_OK(infinirtStreamSynchronize(sf));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "stream_synchronize dev=1 owner=1\n");
    ASSERT_OK(infinirtMemcpy(b, pf, N, INFINIRT_MEMCPY_D2H));
    ASSERT_EQ(b[0], 0x23);
    ASSERT_EQ(b[16], 0x22);
    ASSERT_EQ(b[N - 1], 0x22);
    ASSERT_OK(infinirtEventRecord(ef, sf));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "event_record dev=1 owner=1\n");
    ASSERT_OK(infinirtEventQuery(ef, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_COMPLETE);
    ASSERT_STR_CONTAINS(ledger_text(ledger), "event_query dev=1 owner=1\n");
    ASSERT_OK(infinirtEventSynchronize(ef));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "event_synchronize dev=1 owner=1\n");
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 1, &st));
    ASSERT_EQ(st.active_blocks, 1);
    ASSERT_OK(infinirtFreeAsync(pf, sf));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 1, &st));
    ASSERT_EQ(st.active_blocks, 0);
    ASSERT_OK(infinirtStreamDestroy(sf));
    ASSERT_STR_CONTAINS(ledger_text(ledger), "stream_destroy dev=1 owner=1\n");
    ASSERT_OK(infinirtEventDestroy(ef)); /* no other reference: the plugin's event goes now */
    ASSERT_STR_CONTAINS(ledger_text(ledger), "event_destroy dev=1 owner=1\n");
    /* Nothing reached the fake's device 0, nor a fake call a cpu object. */
    ASSERT(strstr(ledger_text(ledger), "dev=0") == NULL);
    ASSERT(strstr(ledger_text(ledger), "owner=0") == NULL);
    ASSERT(strstr(ledger_text(ledger), "device_synchronize") == NULL);
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(t, INFINI_DEVICE_CPU);
    ASSERT_EQ(id, 0);
    return TEST_OK;
}

/* The fake's ledger since the last call, emptied: what one step did. */
static const char *ledger_take(const char *path)
{
    const char *t = ledger_text(path);
    unlink(path);
    return t;
}

/* Device memory the loader did not allocate goes to the plugin that says it
 * owns it (pointer_get_device), asked of the current device's plugin, the
 * stream's, or the plugin of a copy's other, known side; where that plugin
 * cannot tell, to the current device or the stream's.  The fake plugin
 * (ascend, 3 devices, ABI 1.1) reads its answer from the memory asked
 * about and logs every call with the device that received it. */
int test_routing_foreign_pointer(void)
{
    char ledger[600], cfg[2048];
    snprintf(ledger, sizeof ledger, "%s/fake.ledger", tc_temp_dir());
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\ndevices = 2\n\n[plugin.ptrdev]\nlibrary = " FAKE_DIR
             "/libfake_ptrdev.so\nanswer = 42\ndevices = 3\nledger = %s\n",
             CPU_PLUGIN, ledger);
    use_config(cfg);
    enum { N = 256 };
    static char f[N], a[N], b[N], keep[N];
    tc_pattern(a, N, 7);

    /* Synchronous: the current device's plugin is asked. */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    strcpy(f, "dev=2");
    ASSERT_OK(infinirtMemcpy(f, a, N, INFINIRT_MEMCPY_H2D));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy dev=2\n");
    ASSERT_MEM_EQ(f, a, N);
    strcpy(f, "bad!"); /* cannot tell: the current device */
    ASSERT_OK(infinirtMemcpy(b, f, N, INFINIRT_MEMCPY_D2H));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy dev=0\n");
    ASSERT_STR_EQ(b, "bad!");
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    memset(f, 0, N); /* NOT_IMPLEMENTED: the current device */
    ASSERT_OK(infinirtMemset(f, 0x44, N));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemset dev=1\n");
    ASSERT_EQ(f[N - 1], 0x44);
    /* A device the plugin does not have, or a failure of the query: the
     * call fails, nothing is copied. */
    strcpy(f, "dev=7");
    memcpy(keep, f, N);
    ASSERT_STATUS(infinirtMemcpy(f, a, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_INTERNAL_ERROR);
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\n");
    ASSERT_MEM_EQ(f, keep, N);
    strcpy(f, "err!");
    memcpy(keep, f, N);
    ASSERT_STATUS(infinirtMemset(f, 0, N), INFINI_STATUS_INTERNAL_ERROR);
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\n");
    ASSERT_MEM_EQ(f, keep, N);

    /* Queued: the stream's plugin is asked, whatever device is current;
     * the copy goes on the stream, to its device.  With the NULL stream,
     * the resolved device's default stream. */
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s)); /* on ascend:1 */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    strcpy(f, "dev=2");
    ASSERT_OK(infinirtMemcpyAsync(f, a, N, INFINIRT_MEMCPY_H2D, s));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy_async dev=1 owner=1\n");
    ASSERT_MEM_EQ(f, a, N);
    memset(f, 0, N);
    ASSERT_OK(infinirtMemsetAsync(f, 0x55, N, s));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemset_async dev=1 owner=1\n");
    ASSERT_EQ(f[0], 0x55);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    strcpy(f, "dev=2");
    ASSERT_OK(infinirtMemsetAsync(f, 0x66, 8, NULL));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemset_async dev=2 owner=-1\n");
    strcpy(f, "bad!");
    ASSERT_OK(infinirtMemcpyAsync(b, f, N, INFINIRT_MEMCPY_D2H, NULL));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy_async dev=0 owner=-1\n");
    ASSERT_STR_EQ(b, "bad!");

    /* D2D with one known side: routed by the known one, whose plugin is
     * asked about the other; the current device plays no part. */
    void *pf, *pc;
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 1));
    ASSERT_OK(infinirtMalloc(&pf, N));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 1));
    ASSERT_OK(infinirtMalloc(&pc, N));
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    strcpy(f, "dev=2");
    ASSERT_OK(infinirtMemcpy(pf, f, N, INFINIRT_MEMCPY_D2D));
    ASSERT_STR_EQ(ledger_take(ledger), "pointer_get_device\nmemcpy dev=1\n");
    ASSERT_OK(infinirtMemcpy(b, pf, N, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(b, f, N);
    ledger_take(ledger);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 0));
    ASSERT_OK(infinirtMemcpy(f, pc, N, INFINIRT_MEMCPY_D2D)); /* the cpu plugin's copy */
    ASSERT_STR_EQ(ledger_take(ledger), "");
    /* Known pointers never ask. */
    ASSERT_OK(infinirtMemcpy(pf, a, N, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemsetAsync(pf, 0, N, s));
    ASSERT(strstr(ledger_text(ledger), "pointer_get_device") == NULL);

    /* Free never takes a foreign pointer, and asks no plugin. */
    ledger_take(ledger);
    strcpy(f, "dev=2");
    ASSERT_STATUS(infinirtFree(f), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtFreeAsync(f, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STR_EQ(ledger_take(ledger), "");
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(pf));
    ASSERT_OK(infinirtFree(pc));
    return TEST_OK;
}

/* memory_limit makes raw allocation fail with OUT_OF_MEMORY, and a failed
 * allocation changes nothing. */
int test_routing_memory_limit(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nmemory_limit = 4M\n", CPU_PLUGIN);
    use_config(cfg);
    void *p = NULL, *q = (void *)1;
    ASSERT_OK(infinirtMalloc(&p, 3u << 20));
    infinirtAllocatorStats_t before, after;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &before));
    ASSERT_STATUS(infinirtMalloc(&q, 2u << 20), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_PTR_EQ(q, (void *)1);
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &after));
    ASSERT_EQ(after.allocated_bytes, before.allocated_bytes);
    ASSERT_EQ(after.oom_count, before.oom_count + 1);
    size_t f, t;
    ASSERT_OK(infinirtGetMemInfo(INFINI_DEVICE_CPU, 0, &f, &t));
    ASSERT_EQ(t, 4u << 20);
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtMalloc(&q, 2u << 20));
    ASSERT_OK(infinirtFree(q));
    return TEST_OK;
}

/* An allocation of exactly memory_limit succeeds; one byte more fails
 * with OUT_OF_MEMORY and changes nothing. */
static int exact_limit_case(const char *allocator)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "%s[plugin.cpu]\nlibrary = %s\nmemory_limit = 4M\n", allocator, CPU_PLUGIN);
    use_config(cfg);
    const size_t limit = (size_t)4 << 20;
    void *p = NULL, *q = (void *)1;
    ASSERT_OK(infinirtMalloc(&p, limit));
    ASSERT_OK(infinirtMemset(p, 0x7e, limit)); /* all of it is usable */
    ASSERT_STATUS(infinirtMalloc(&q, 1), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_PTR_EQ(q, (void *)1);
    ASSERT_OK(infinirtFree(p));
    ASSERT_STATUS(infinirtMalloc(&q, limit + 1), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_PTR_EQ(q, (void *)1);
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
    ASSERT_EQ(st.allocated_bytes, 0);
    /* The failure released nothing it should not have: the limit is whole. */
    ASSERT_OK(infinirtMalloc(&p, limit));
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

int test_routing_memory_limit_exact(void)
{
    return exact_limit_case("");
}

int test_routing_memory_limit_exact_noalloc(void)
{
    return exact_limit_case("[allocator]\nenabled = false\n\n");
}
