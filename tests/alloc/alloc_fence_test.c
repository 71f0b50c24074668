/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_fence_test.c - the loader's fences (loader/fence.c) when the fence
 * itself cannot be built: its item array's realloc fails (made to by
 * alloc_faults.h).  The free must then wait for the work queued before it
 * - it cannot leave a block to be reused behind that work - so it returns
 * only once that work has completed.  And a capture whose graph cannot get
 * its operation block (the same hook, loader/capture.c).
 *
 * Unlike alloc_test, this program goes through the public API: the CPU
 * plugin with worker-thread streams, one of them held by a host function
 * until a second thread opens its gate.  CPU_PLUGIN comes from CMake.
 */
#define _GNU_SOURCE
#include "alloc_list.h"
#include "infinirt.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The counter alloc_faults.h reads: the loader's weak reference finds
 * this definition, exported from the program. */
__attribute__((visibility("default"))) atomic_int infinirt__test_fail_host_alloc;

static atomic_int g_open;

static void gate_fn(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_open))
        sched_yield();
}

static void *opener(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    atomic_store(&g_open, 1);
    return NULL;
}

static int use_cpu_plugin(void)
{
    char path[] = "/tmp/infinirt-fence-test-XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    ASSERT(fp != NULL);
    fprintf(fp, "[plugin.cpu]\nlibrary = %s\nstreams = async\n", CPU_PLUGIN);
    ASSERT_EQ(fclose(fp), 0);
    ASSERT_EQ(setenv("INFINIRT_CONFIG", path, 1), 0);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    unlink(path); /* read by the first call */
    return TEST_OK;
}

/* Work held on stream s writes a block; the block is freed (synchronously,
 * or on s) while the fence's realloc fails: the free returns only after
 * that work. */
static int free_without_fence(bool sync)
{
#ifndef INFINIRT_ALLOC_FAULTS
    (void)sync;
    return TEST_SKIP; /* a loader built without the failure hooks */
#endif
    CHECK(use_cpu_plugin());
    enum { SIZE = 1 << 20 };
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreateWithFlags(&s, INFINIRT_STREAM_NON_BLOCKING));
    void *p;
    ASSERT_OK(infinirtMalloc(&p, SIZE));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    atomic_store(&g_open, 0);
    ASSERT_OK(infinirtLaunchHostFunc(s, gate_fn, NULL));
    ASSERT_OK(infinirtMemsetAsync(p, 1, SIZE, s));
    ASSERT_OK(infinirtEventRecord(e, s));
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, opener, NULL), 0);
    atomic_store(&infinirt__test_fail_host_alloc, 1);
    ASSERT_OK(sync ? infinirtFree(p) : infinirtFreeAsync(p, s));
    /* The fence's realloc was reached (and failed)... */
    ASSERT_EQ(atomic_load(&infinirt__test_fail_host_alloc), 0);
    /* ...and the free waited for the work behind it. */
    infinirtEventStatus_t es;
    ASSERT_OK(infinirtEventQuery(e, &es));
    ASSERT_EQ(es, INFINIRT_EVENT_COMPLETE);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

static int test_fence_oom_sync(void)
{
    return free_without_fence(true);
}

static int test_fence_oom_async(void)
{
    return free_without_fence(false);
}

/* A capture whose graph cannot get its operation block (the loader's
 * malloc made to fail): EndCapture reports OUT_OF_MEMORY with no graph,
 * the capture is over, and the stream and its memory work as before.  The
 * status is decided from the capture before the capture is freed (ASan
 * saw a read of it after the free). */
static int test_capture_end_oom(void)
{
#ifndef INFINIRT_ALLOC_FAULTS
    return TEST_SKIP; /* a loader built without the failure hooks */
#endif
    CHECK(use_cpu_plugin());
    static char host[256];
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    void *p;
    ASSERT_OK(infinirtMalloc(&p, sizeof host));
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMemsetAsync(p, 7, sizeof host, s));
    ASSERT_OK(infinirtMemcpyAsync(host, p, sizeof host, INFINIRT_MEMCPY_D2H, s));
    atomic_store(&infinirt__test_fail_host_alloc, 1);
    infinirtGraph_t g = (infinirtGraph_t)&g; /* set to NULL on failure */
    ASSERT_EQ(infinirtStreamEndCapture(s, &g), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_EQ(atomic_load(&infinirt__test_fail_host_alloc), 0); /* the block's malloc failed */
    ASSERT(g == NULL);
    /* The capture is over: a second end finds none, and the stream runs
     * work again (nothing captured ran). */
    ASSERT_EQ(infinirtStreamEndCapture(s, &g), INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(host[0], 0);
    ASSERT_OK(infinirtMemsetAsync(p, 9, sizeof host, s));
    ASSERT_OK(infinirtMemcpyAsync(host, p, sizeof host, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_EQ(host[0], 9);
    ASSERT_EQ(host[sizeof host - 1], 9);
    /* And a capture after it ends with a graph. */
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMemsetAsync(p, 5, sizeof host, s));
    ASSERT_OK(infinirtStreamEndCapture(s, &g));
    ASSERT(g != NULL);
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {ALLOC_FENCE_TESTS(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
