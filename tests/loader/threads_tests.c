/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads_tests.c - the loader under concurrent callers: the first call
 * made by many threads at once, each thread's current device, and events
 * destroyed while stream workers still complete or wait on them.
 */
#define _GNU_SOURCE
#include "loader_tests.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
enum { NTHREADS = 16 };
static pthread_barrier_t g_barrier;
static int g_counts[NTHREADS];

static void *first_call(void *arg)
{
    int i = (int)(intptr_t)arg;
    int counts[INFINI_DEVICE_TYPE_COUNT];
    pthread_barrier_wait(&g_barrier);
    if (infinirtGetAllDeviceCount(counts) == INFINI_STATUS_SUCCESS)
        g_counts[i] = counts[INFINI_DEVICE_CPU];
    return NULL;
}

int test_threads_first_call(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 3\n", CPU_PLUGIN);
    use_config(cfg);
    pthread_t th[NTHREADS];
    pthread_barrier_init(&g_barrier, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, first_call, (void *)(intptr_t)i), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        ASSERT_EQ(g_counts[i], 3);
    /* The plugin was loaded once: one "loaded" line in the log. */
    const char *log = tc_read_file(log_path());
    const char *first = strstr(log, "plugin cpu (");
    ASSERT(first != NULL);
    ASSERT(strstr(first + 1, "plugin cpu (") == NULL);
    return TEST_OK;
}

static void *on_device_one(void *arg)
{
    int *ok = arg;
    infiniDevice_t t;
    int id = -1;
    /* A new thread starts on the configured default, whatever others chose. */
    *ok = infinirtGetDevice(&t, &id) == INFINI_STATUS_SUCCESS && id == 2;
    *ok = *ok && infinirtSetDevice(INFINI_DEVICE_CPU, 1) == INFINI_STATUS_SUCCESS;
    *ok = *ok && infinirtGetDevice(&t, &id) == INFINI_STATUS_SUCCESS && id == 1;
    return NULL;
}

int test_threads_current_device(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[loader]\ndefault_device = cpu:2\n[plugin.cpu]\nlibrary = %s\ndevices = 3\n",
             CPU_PLUGIN);
    use_config(cfg);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    pthread_t th;
    int ok = 0;
    ASSERT_EQ(pthread_create(&th, NULL, on_device_one, &ok), 0);
    pthread_join(th, NULL);
    ASSERT_EQ(ok, 1);
    infiniDevice_t t;
    int id;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(id, 0);
    return TEST_OK;
}

/* Events are destroyed while stream workers still complete or wait on
 * them: right after the record, from a host function on the recording
 * stream, while another stream waits on them, and after a re-record.  The
 * last of the handle, the queued record and the queued wait frees the
 * event; TSan (./dev test) checks that teardown for races. */
static infinirtStream_t g_teardown_streams[2];

static void destroy_event_fn(void *e)
{
    infinirtEventDestroy((infinirtEvent_t)e);
}

static void *event_teardown_worker(void *arg)
{
    int *ok = arg;
    infinirtStream_t a = g_teardown_streams[0], b = g_teardown_streams[1];
    for (int i = 0; i < 400; i++) {
        infinirtEvent_t e;
        if (infinirtEventCreateWithFlags(&e, i & 1 ? INFINIRT_EVENT_DISABLE_TIMING : 0) != INFINI_STATUS_SUCCESS ||
            infinirtEventRecord(e, a) != INFINI_STATUS_SUCCESS)
            return NULL;
        infiniStatus_t st = INFINI_STATUS_SUCCESS;
        switch (i % 4) {
        case 0: /* destroyed while the record is queued */
            st = infinirtEventDestroy(e);
            break;
        case 1: /* destroyed while stream b waits on it */
            st = infinirtStreamWaitEvent(b, e);
            if (st == INFINI_STATUS_SUCCESS)
                st = infinirtEventDestroy(e);
            break;
        case 2: /* destroyed by a host function queued after the record */
            st = infinirtLaunchHostFunc(a, destroy_event_fn, e);
            break;
        default: /* re-recorded, queried, then destroyed */
            st = infinirtEventRecord(e, b);
            infinirtEventStatus_t es;
            if (st == INFINI_STATUS_SUCCESS)
                st = infinirtEventQuery(e, &es);
            if (st == INFINI_STATUS_SUCCESS)
                st = infinirtEventDestroy(e);
            break;
        }
        if (st != INFINI_STATUS_SUCCESS)
            return NULL;
    }
    *ok = 1;
    return NULL;
}

int test_threads_event_teardown(void)
{
    char cfg[1024];
    /* async: the events are destroyed on the streams' worker threads. */
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nstreams = async\n", CPU_PLUGIN);
    use_config(cfg);
    ASSERT_OK(infinirtStreamCreate(&g_teardown_streams[0]));
    ASSERT_OK(infinirtStreamCreate(&g_teardown_streams[1]));
    enum { T = 4 };
    pthread_t th[T];
    int ok[T] = {0};
    for (int i = 0; i < T; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, event_teardown_worker, &ok[i]), 0);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++)
        ASSERT_EQ(ok[i], 1);
    ASSERT_OK(infinirtStreamSynchronize(g_teardown_streams[0]));
    ASSERT_OK(infinirtStreamSynchronize(g_teardown_streams[1]));
    ASSERT_OK(infinirtStreamDestroy(g_teardown_streams[0]));
    ASSERT_OK(infinirtStreamDestroy(g_teardown_streams[1]));
    return TEST_OK;
}

/* ---------------------------------------- reserved bytes under a limit */

enum { RL_THREADS = 8, RL_ROUNDS = 400, RL_HELD = 4 };
static atomic_int g_rl_running;

static void *rl_worker(void *arg)
{
    uint32_t x = 2654435761u * (uint32_t)((intptr_t)arg + 1);
    infinirtStream_t s;
    if (infinirtSetDevice(INFINI_DEVICE_CPU, 0) != INFINI_STATUS_SUCCESS || infinirtStreamCreate(&s) != 0)
        return (void *)1;
    void *held[RL_HELD] = {0};
    for (int r = 0; r < RL_ROUNDS; r++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        int k = (int)(x % RL_HELD);
        if (held[k] != NULL) {
            infiniStatus_t st = (x >> 8) & 1 ? infinirtFree(held[k]) : infinirtFreeAsync(held[k], s);
            if (st != INFINI_STATUS_SUCCESS)
                return (void *)2;
            held[k] = NULL;
            continue;
        }
        /* Up to 6 MiB, a segment each: 8 threads holding 4 can need more
         * than the limit, so the cache is released and requests retried. */
        size_t size = 1 + (x >> 8) % ((size_t)6 << 20);
        infiniStatus_t st = infinirtMallocAsync(&held[k], size, s);
        if (st == INFINI_STATUS_OUT_OF_MEMORY)
            held[k] = NULL;
        else if (st != INFINI_STATUS_SUCCESS)
            return (void *)3;
    }
    for (int k = 0; k < RL_HELD; k++)
        if (held[k] != NULL && infinirtFreeAsync(held[k], s) != INFINI_STATUS_SUCCESS)
            return (void *)4;
    if (infinirtStreamDestroy(s) != INFINI_STATUS_SUCCESS)
        return (void *)5;
    return NULL;
}

static void *rl_observer(void *arg)
{
    size_t *most = arg;
    while (atomic_load(&g_rl_running)) {
        infinirtAllocatorStats_t st;
        if (infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st) == INFINI_STATUS_SUCCESS &&
            st.reserved_bytes > *most)
            *most = st.reserved_bytes;
    }
    return NULL;
}

/* 8 threads allocate and free under memory_limit = 48M, with a small
 * cache cap so segments keep going back to the plugin and coming again
 * (give-backs, the out-of-memory release and retry): reserved_bytes, read
 * by another thread all along, and peak_reserved_bytes never exceed the
 * 48 MiB the plugin can hold.  (The allocator's unit tests force the
 * interleaving: alloc.reserved_*.) */
int test_threads_reserved_within_limit(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[allocator]\nmax_cached = 4M\n\n[plugin.cpu]\nlibrary = %s\nmemory_limit = 48M\n",
             CPU_PLUGIN);
    use_config(cfg);
    tc_setenv("INFINIRT_LOG", "error"); /* the expected out-of-memory lines */
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    const size_t limit = (size_t)48 << 20;
    size_t most = 0;
    atomic_store(&g_rl_running, 1);
    pthread_t obs, th[RL_THREADS];
    ASSERT_EQ(pthread_create(&obs, NULL, rl_observer, &most), 0);
    for (int i = 0; i < RL_THREADS; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, rl_worker, (void *)(intptr_t)i), 0);
    int bad = 0;
    for (int i = 0; i < RL_THREADS; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        if (rc != NULL) {
            fprintf(stderr, "worker %d failed with %d\n", i, (int)(intptr_t)rc);
            bad = 1;
        }
    }
    atomic_store(&g_rl_running, 0);
    pthread_join(obs, NULL);
    ASSERT_EQ(bad, 0);
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
    ASSERT_LE(most, limit);
    ASSERT_LE(st.peak_reserved_bytes, limit);
    ASSERT_GT(st.raw_frees, 0); /* segments did go back meanwhile */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtTrimCache(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
    ASSERT_EQ(st.reserved_bytes, 0);
    return TEST_OK;
}

/* ------------------------------------------------ the NULL stream's cache */

/* Threads allocating on the NULL stream at once, each from an arena of its
 * own (docs/allocator.md, "Thread arenas"), some blocks freed by another
 * thread than their own: no block is handed to two threads at once (each
 * writes its mark through the whole block and finds it intact at the
 * free); once they have freed everything, and while they still live, the
 * statistics say nothing is allocated and trim gives every byte back, and
 * so again after they have exited. */
enum { NC_THREADS = 4, NC_LIVE = 32 };
static pthread_barrier_t g_nc_done, g_nc_go;
static pthread_mutex_t g_nc_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *g_nc_hand[64];
static size_t g_nc_hand_size[64];
static int g_nc_nh;

static int nc_check(const unsigned char *p, size_t size, unsigned char mark)
{
    for (size_t i = 0; i < size; i++)
        if (p[i] != mark)
            return 0;
    return 1;
}

static intptr_t nc_work(unsigned char mark)
{
    uint64_t st = 0x9e3779b97f4a7c15ull * (mark + 1u);
    unsigned char *mine[NC_LIVE];
    size_t msz[NC_LIVE];
    int n = 0;
    if (infinirtSetDevice(INFINI_DEVICE_CPU, 0) != INFINI_STATUS_SUCCESS)
        return 1;
    for (int it = 0; it < 20000; it++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(st >> 33);
        if (n < NC_LIVE && (r % 3 != 0 || n == 0)) {
            size_t size = 1 + r % 2000;
            void *p;
            if (infinirtMallocAsync(&p, size, NULL) != INFINI_STATUS_SUCCESS)
                return 2;
            memset(p, mark, size);
            mine[n] = p;
            msz[n++] = size;
            continue;
        }
        int i = (int)(r % (unsigned)n);
        unsigned char *p = mine[i];
        size_t size = msz[i];
        mine[i] = mine[--n];
        msz[i] = msz[n];
        if (!nc_check(p, size, mark))
            return 3; /* someone else was handed our block */
        if (r % 5 == 0) {
            /* Freed by whichever thread takes it next. */
            unsigned char *other = NULL;
            size_t osize = 0;
            bool handed = false;
            pthread_mutex_lock(&g_nc_mu);
            if (g_nc_nh < 64) {
                g_nc_hand[g_nc_nh] = p;
                g_nc_hand_size[g_nc_nh++] = size;
                handed = true;
            }
            if (g_nc_nh > 32) {
                other = g_nc_hand[--g_nc_nh];
                osize = g_nc_hand_size[g_nc_nh];
            }
            pthread_mutex_unlock(&g_nc_mu);
            if (other != NULL) {
                if (!nc_check(other, osize, other[0]))
                    return 4; /* a handed block is still its maker's, intact */
                if (infinirtFreeAsync(other, NULL) != INFINI_STATUS_SUCCESS)
                    return 5;
            }
            if (handed)
                continue;
        }
        if (infinirtFreeAsync(p, NULL) != INFINI_STATUS_SUCCESS)
            return 6;
    }
    while (n > 0)
        if (infinirtFreeAsync(mine[--n], NULL) != INFINI_STATUS_SUCCESS)
            return 7;
    return 0;
}

static void *nc_worker(void *arg)
{
    intptr_t rc = nc_work((unsigned char)(uintptr_t)arg);
    /* Alive, with what the thread's arena caches, while the test trims. */
    pthread_barrier_wait(&g_nc_done);
    pthread_barrier_wait(&g_nc_go);
    void *p;
    if (rc == 0 && (infinirtMallocAsync(&p, 64, NULL) != INFINI_STATUS_SUCCESS ||
                    infinirtFreeAsync(p, NULL) != INFINI_STATUS_SUCCESS))
        rc = 8;
    return (void *)rc;
}

static int nc_all_back(void)
{
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
    ASSERT_EQ(st.allocated_bytes, 0);
    ASSERT_EQ(st.active_blocks, 0);
    ASSERT_EQ(st.cached_free_bytes, st.reserved_bytes);
    ASSERT_GT(st.reserved_bytes, 0);
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtTrimCache(INFINI_DEVICE_CPU, 0));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
    ASSERT_EQ(st.reserved_bytes, 0);
    ASSERT_EQ(st.segments, 0);
    return TEST_OK;
}

int test_threads_null_stream_cache(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\n", CPU_PLUGIN);
    use_config(cfg);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    pthread_barrier_init(&g_nc_done, NULL, NC_THREADS + 1);
    pthread_barrier_init(&g_nc_go, NULL, NC_THREADS + 1);
    pthread_t th[NC_THREADS];
    for (int i = 0; i < NC_THREADS; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, nc_worker, (void *)(uintptr_t)(i + 1)), 0);
    /* The workers wait (alive) until released, whatever happens here. */
    pthread_barrier_wait(&g_nc_done);
    int freed = 1;
    while (g_nc_nh > 0)
        freed &= infinirtFreeAsync(g_nc_hand[--g_nc_nh], NULL) == INFINI_STATUS_SUCCESS;
    int alive = freed ? nc_all_back() : TEST_FAIL;
    pthread_barrier_wait(&g_nc_go);
    int bad = 0;
    for (int i = 0; i < NC_THREADS; i++) {
        void *wrc;
        pthread_join(th[i], &wrc);
        if (wrc != NULL) {
            fprintf(stderr, "worker %d failed with %d\n", i, (int)(intptr_t)wrc);
            bad = 1;
        }
    }
    ASSERT_EQ(bad, 0);
    ASSERT(freed);
    CHECK(alive);
    return nc_all_back();
}

/* A capture's MallocAsync comes from the capture's own memory, never from
 * the blocks the thread keeps for the NULL stream, which still serve the
 * thread's next NULL-stream request afterwards; the graph's block is
 * reused by nobody while the graph lives. */
int test_threads_null_cache_capture(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nstreams = async\n", CPU_PLUGIN);
    use_config(cfg);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    void *a, *b, *q, *r;
    ASSERT_OK(infinirtMallocAsync(&a, 64, NULL));
    ASSERT_OK(infinirtFreeAsync(a, NULL));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMallocAsync(&q, 64, s));
    ASSERT_PTR_NE(q, a);
    ASSERT_OK(infinirtMemsetAsync(q, 7, 64, s));
    ASSERT_OK(infinirtFreeAsync(q, s));
    infinirtGraph_t g = NULL;
    ASSERT_OK(infinirtStreamEndCapture(s, &g));
    ASSERT_OK(infinirtMallocAsync(&b, 64, NULL));
    ASSERT_PTR_EQ(b, a);
    ASSERT_OK(infinirtMallocAsync(&r, 64, NULL));
    ASSERT_PTR_NE(r, q);
    ASSERT_OK(infinirtFreeAsync(r, NULL));
    ASSERT_OK(infinirtFreeAsync(b, NULL));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtDeviceSynchronize());
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_CPU, 0, &st));
    ASSERT_EQ(st.allocated_bytes, 0);
    ASSERT_EQ(st.active_blocks, 0);
    return TEST_OK;
}
