/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_native_tests.c - the CPU backend's native path: work queued natively
 * on a stream handle (infinirt_cpu.h), the allocator's respect for that
 * work, and infinirt called from a host function on a stream.
 */
#define _GNU_SOURCE
#include "cpu_tests.h"
#include "infinirt_cpu.h"
#include "infinirt_plugin.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
/* ------------------------------------------------------------ native path */

typedef struct {
    unsigned char *d;
    size_t n;
    int saw_first; /* the copy queued before this work had landed */
} native_arg;

static void native_work(void *arg)
{
    native_arg *a = arg;
    a->saw_first = a->d[0] == 0x11 && a->d[a->n - 1] == 0x11;
    memset(a->d, 0x22, a->n);
}

/* Work queued through the stream handle's own table runs in stream order
 * with infinirt's copies on the same stream. */
static int native_enqueue_case(const char *mode, int inline_mode)
{
    cpu_config(mode);
    CHECK(tc_use_device(0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    void *native = NULL;
    ASSERT_OK(infinirtStreamGetNativeHandle(s, &native));
    ASSERT_PTR_EQ(native, s); /* the handle is the plugin's stream object */
    const infinirtCpuStreamOps *ops = infinirtCpuStreamGetOps(s);
    ASSERT(ops != NULL);
    ASSERT_GE(ops->struct_size, sizeof(infinirtCpuStreamOps));
    ASSERT(INFINIRT_CPU_STREAM_OPS_HAS(ops, synchronize));
    ASSERT_EQ((ops->flags & INFINIRT_CPU_STREAM_INLINE) != 0, inline_mode);
    ASSERT_EQ(ops->enqueue(s, NULL, NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_EQ(ops->enqueue(NULL, set_flag, NULL), INFINI_STATUS_NULL_POINTER);

    size_t n = 2 * MiB;
    unsigned char *ones = malloc(n), *back = calloc(1, n);
    ASSERT(ones && back);
    memset(ones, 0x11, n);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMemset(d, 0, n));
    static tc_gate gate;
    if (!inline_mode)
        CHECK(tc_hold_stream(s, &gate)); /* everything below queues behind it */
    native_arg a = {d, n, 0};
    ASSERT_OK(infinirtMemcpyAsync(d, ones, n, INFINIRT_MEMCPY_H2D, s));
    ASSERT_EQ(ops->enqueue(s, native_work, &a), INFINI_STATUS_SUCCESS);
    ASSERT_OK(infinirtMemcpyAsync(back, d, n, INFINIRT_MEMCPY_D2H, s));
    int idle = -1;
    ASSERT_EQ(ops->query(s, &idle), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(idle, inline_mode); /* inline: done already; async: held */
    if (!inline_mode)
        tc_gate_open(&gate);
    ASSERT_EQ(ops->synchronize(s), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(ops->query(s, &idle), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(idle, 1);
    ASSERT_EQ(a.saw_first, 1);
    for (size_t i = 0; i < n; i += 4093)
        ASSERT_EQ(back[i], 0x22);

    /* Native work from another thread's view: queued natively, waited for
     * through infinirt. */
    atomic_int flag = 0;
    ASSERT_EQ(ops->enqueue(s, set_flag, &flag), INFINI_STATUS_SUCCESS);
    if (inline_mode)
        ASSERT_EQ(atomic_load(&flag), 1); /* done before enqueue returned */
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_EQ(atomic_load(&flag), 1);
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtStreamDestroy(s));
    free(ones);
    free(back);
    return TEST_OK;
}

int test_cpu_native_enqueue_inline(void)
{
    return native_enqueue_case(NULL, 1);
}

int test_cpu_native_enqueue_async(void)
{
    return native_enqueue_case("async", 0);
}

typedef struct {
    tc_gate *gate;
    unsigned char *p;
    size_t n;
} late_write_arg;

static void late_write(void *arg)
{
    late_write_arg *a = arg;
    tc_gate_wait_fn(a->gate);
    memset(a->p, 0xAA, a->n);
}

/* Work queued natively is invisible to the loader's submission counts: a
 * block freed behind it (Free, or FreeAsync on that stream) must still not
 * be handed to anyone before it completes.  The plugin's stream_query tells
 * the loader the stream is busy. */
int test_cpu_native_work_free(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    for (int k = 0; k < 2; k++) {
        infinirtStream_t s, other;
        ASSERT_OK(infinirtStreamCreateWithFlags(&s, INFINIRT_STREAM_NON_BLOCKING));
        ASSERT_OK(infinirtStreamCreateWithFlags(&other, INFINIRT_STREAM_NON_BLOCKING));
        const size_t n = 1 * MiB;
        void *p;
        ASSERT_OK(infinirtMalloc(&p, n));
        ASSERT_OK(infinirtDeviceSynchronize()); /* the loader saw everything idle */
        static tc_gate gates[2];
        late_write_arg a = {&gates[k], p, n};
        ASSERT_EQ(infinirtCpuStreamGetOps(s)->enqueue(s, late_write, &a), INFINI_STATUS_SUCCESS);
        if (k == 0)
            ASSERT_OK(infinirtFree(p));
        else
            ASSERT_OK(infinirtFreeAsync(p, s));
        void *q;
        ASSERT_OK(infinirtMallocAsync(&q, n, other));
        unsigned char *want = malloc(n), *got = malloc(n);
        ASSERT(want && got);
        tc_pattern(want, n, 33u + (unsigned)k);
        ASSERT_OK(infinirtMemcpyAsync(q, want, n, INFINIRT_MEMCPY_H2D, other));
        ASSERT_OK(infinirtStreamSynchronize(other));
        tc_gate_open(&gates[k]);
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtMemcpy(got, q, n, INFINIRT_MEMCPY_D2H));
        if (memcmp(got, want, n) != 0)
            TEST_FAILED_("block %p (freed %p with native work on it queued) was overwritten by that work%s", q, p,
                         q == p ? ": handed out again too early" : "");
        ASSERT_OK(infinirtFreeAsync(q, other));
        ASSERT_OK(infinirtStreamDestroy(s));
        ASSERT_OK(infinirtStreamDestroy(other));
        free(want);
        free(got);
    }
    return TEST_OK;
}

/* ------------------------------------- infinirt called from a host function */

typedef struct {
    infinirtStream_t s;
    infinirtEvent_t e;
    void *d;
    unsigned char host[64];
    infiniStatus_t stream_sync, event_sync, device_sync, memcpy_sync, memset_sync, copy_async;
    atomic_int done;
} reentry_arg;

/* Calls infinirt, as a host function must not: each call that waits is
 * refused (it would wait for this very function, in async mode); queueing
 * more work is allowed. */
static void call_infinirt(void *arg)
{
    reentry_arg *a = arg;
    a->stream_sync = infinirtStreamSynchronize(a->s);
    a->event_sync = infinirtEventSynchronize(a->e);
    a->device_sync = infinirtDeviceSynchronize();
    a->memcpy_sync = infinirtMemcpy(a->d, a->host, 64, INFINIRT_MEMCPY_H2D);
    a->memset_sync = infinirtMemset(a->d, 0, 64);
    a->copy_async = infinirtMemcpyAsync(a->d, a->host, 64, INFINIRT_MEMCPY_H2D, a->s);
    atomic_store(&a->done, 1);
}

static int host_fn_reentry_case(const char *mode)
{
    cpu_config(mode);
    CHECK(tc_use_device(0));
    static reentry_arg a;
    memset(a.host, 0x5a, sizeof a.host);
    ASSERT_OK(infinirtStreamCreate(&a.s));
    ASSERT_OK(infinirtEventCreate(&a.e));
    ASSERT_OK(infinirtMalloc(&a.d, 64));
    ASSERT_OK(infinirtMemset(a.d, 0, 64));
    ASSERT_OK(infinirtEventRecord(a.e, a.s));
    ASSERT_OK(infinirtLaunchHostFunc(a.s, call_infinirt, &a));
    ASSERT_OK(infinirtEventRecord(a.e, a.s)); /* behind the host function (async) */
    for (int ms = 0; ms < 10000 && !atomic_load(&a.done); ms++)
        tc_sleep_ms(1);
    if (!atomic_load(&a.done))
        TEST_FAILED_("%s", "a host function calling infinirt did not return within 10 s (a hang)");
    ASSERT_EQ(a.stream_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.event_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.device_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.memcpy_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.memset_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.copy_async, INFINI_STATUS_SUCCESS);
    ASSERT_OK(infinirtStreamSynchronize(a.s));
    ASSERT_OK(infinirtEventSynchronize(a.e));
    ASSERT_MEM_EQ(a.d, a.host, 64); /* the copy it queued ran */
    /* Outside a host function the same calls work again on this thread. */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtFree(a.d));
    ASSERT_OK(infinirtEventDestroy(a.e));
    ASSERT_OK(infinirtStreamDestroy(a.s));
    return TEST_OK;
}

int test_cpu_host_fn_reentry_async(void)
{
    return host_fn_reentry_case("async");
}

int test_cpu_host_fn_reentry_inline(void)
{
    return host_fn_reentry_case(NULL);
}
/* A synchronous free skips the fence (and the plugin's stream queries)
 * when the device is idle by the loader's counts and has no stream: only a
 * created stream can carry native work on the CPU backend.  The count of
 * streams must stay right as streams come and go: with one stream destroyed
 * and the other holding native work, a block freed behind that work is not
 * handed to the next allocation of its size on this thread. */
int test_cpu_native_work_free_streams_counted(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    /* Before any stream: the free takes no fence and the block is reused
     * at once (the fast path must not keep it from this thread). */
    void *p0, *p1;
    ASSERT_OK(infinirtMalloc(&p0, 64));
    ASSERT_OK(infinirtFree(p0));
    ASSERT_OK(infinirtMalloc(&p1, 64));
    ASSERT(p1 == p0);
    ASSERT_OK(infinirtFree(p1));
    for (int k = 0; k < 2; k++) {
        infinirtStream_t s, gone;
        ASSERT_OK(infinirtStreamCreateWithFlags(&gone, INFINIRT_STREAM_NON_BLOCKING));
        ASSERT_OK(infinirtStreamCreateWithFlags(&s, INFINIRT_STREAM_NON_BLOCKING));
        ASSERT_OK(infinirtStreamDestroy(gone));
        const size_t n = k == 0 ? 4096 : 1 * MiB;
        void *p;
        ASSERT_OK(infinirtMalloc(&p, n));
        ASSERT_OK(infinirtDeviceSynchronize()); /* the loader saw everything idle */
        static tc_gate gates[2];
        late_write_arg a = {&gates[k], p, n};
        ASSERT_EQ(infinirtCpuStreamGetOps(s)->enqueue(s, late_write, &a), INFINI_STATUS_SUCCESS);
        ASSERT_OK(infinirtFree(p));
        void *q;
        ASSERT_OK(infinirtMalloc(&q, n));
        unsigned char *want = malloc(n), *got = malloc(n);
        ASSERT(want && got);
        tc_pattern(want, n, 71u + (unsigned)k);
        ASSERT_OK(infinirtMemcpy(q, want, n, INFINIRT_MEMCPY_H2D));
        tc_gate_open(&gates[k]);
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtMemcpy(got, q, n, INFINIRT_MEMCPY_D2H));
        if (memcmp(got, want, n) != 0)
            TEST_FAILED_("block %p (freed %p behind native work, one other stream destroyed) was overwritten by "
                         "that work%s",
                         q, p, q == p ? ": handed out again too early" : "");
        ASSERT_OK(infinirtFree(q));
        ASSERT_OK(infinirtStreamDestroy(s));
        free(want);
        free(got);
    }
    return TEST_OK;
}
