/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_tests.c - the loader against a plugin that fails on demand
 * (fixtures/fault_plugin.c, which wraps the CPU plugin and serves KUNLUN devices),
 * with the helpers the fault tests share (fault_tests.h).
 *
 * What these pin down: work queued while a DeviceSynchronize returns is not
 * taken as covered by it, a DeviceSynchronize that waits stream by stream
 * holds no device lock meanwhile, memory whose work cannot be waited for
 * never goes back to the plugin, the loader's own submission counts keep
 * memory pending where no event answers, and a plugin whose work is done
 * when queued gets no fences.  The ops table and the fences that cannot be
 * taken or answer errors are in fault_fence_tests.c; the sweep over every
 * plugin call is in fault_sweep.c.
 *
 *
 * The "gated" stream below is a CPU worker stream blocked on a host
 * function until the test opens its gate: work queued behind it is pending
 * for as long as the test wants.  FAULT_PLUGIN and CPU_PLUGIN come from
 * CMake.
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

/* ------------------------------------------------------------ helpers */

const char *ft_log_path(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/infinirt.log", tc_temp_dir());
    return p;
}

void ft_config(const char *omit, const char *extra)
{
    char cfg[4096];
    /* The inner cpu plugin with worker-thread streams (streams = async):
     * the tests hold streams with gates while calls fail around them. */
    snprintf(cfg, sizeof cfg, "[plugin.fault]\nlibrary = %s\ninner = %s\nmemory_limit = %zu\nstreams = async\n%s\n",
             FAULT_PLUGIN, CPU_PLUGIN, LIMIT, extra ? extra : "");
    tc_use_config(cfg);
    tc_setenv("FAULT_OMIT", omit ? omit : "");
    tc_setenv("INFINIRT_LOG_FILE", ft_log_path());
    tc_setenv("INFINIRT_LOG", "info");
}

infiniStatus_t ft_stream(infinirtStream_t *s)
{
    return infinirtStreamCreateWithFlags(s, INFINIRT_STREAM_NON_BLOCKING);
}

/* The control functions of the loaded fault plugin (after the loader's
 * initialisation loaded it). */
static int ft_get_api(fault_api *api)
{
    void *dl = dlopen(FAULT_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    if (dl == NULL) {
        fprintf(stderr, "the fault plugin is not loaded: %s\n", dlerror());
        return -1;
    }
    void *s[5] = {dlsym(dl, "fault_set"), dlsym(dl, "fault_fail_nth_any"), dlsym(dl, "fault_calls"),
                  dlsym(dl, "fault_reset"), dlsym(dl, "fault_hook")};
    dlclose(dl); /* the loader's own reference keeps it mapped */
    for (int i = 0; i < 5; i++)
        if (s[i] == NULL)
            return -1;
    /* ISO C has no cast from void * to a function pointer. */
    memcpy(&api->set, &s[0], sizeof s[0]);
    memcpy(&api->nth_any, &s[1], sizeof s[1]);
    memcpy(&api->calls, &s[2], sizeof s[2]);
    memcpy(&api->reset, &s[3], sizeof s[3]);
    memcpy(&api->hook, &s[4], sizeof s[4]);
    return 0;
}

int ft_find_plugin(const char *name, infinirtPluginInfo_t *out)
{
    int n = 0;
    if (infinirtGetPluginCount(&n) != INFINI_STATUS_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++)
        if (infinirtGetPluginInfo(i, out) == INFINI_STATUS_SUCCESS && strcmp(out->name, name) == 0)
            return i;
    return -1;
}

/* Load the fault plugin and make its device 0 current. */
int ft_start(fault_api *api)
{
    infinirtPluginInfo_t pi;
    ASSERT_GE(ft_find_plugin("fault", &pi), 0);
    if (pi.status != INFINIRT_PLUGIN_LOADED)
        TEST_FAILED_("fault plugin: %s (%s)", infinirtGetPluginStatusString(pi.status), pi.message);
    ASSERT_OK(infinirtSetDevice(DEV, 0));
    ASSERT_EQ(ft_get_api(api), 0);
    return TEST_OK;
}

/* Opens a gate after a while unless the test got past the call that might
 * wait for it: a loader that waits for the device inside Free (allowed)
 * instead of keeping the block pending must not hang the test. */
typedef struct {
    tc_gate *gate;
    atomic_int past;
    pthread_t thread;
} watchdog;

static void *watchdog_main(void *arg)
{
    watchdog *w = arg;
    for (int i = 0; i < 1000 && !atomic_load(&w->past); i++)
        tc_sleep_ms(1);
    if (!atomic_load(&w->past))
        tc_gate_open(w->gate);
    return NULL;
}

static void watchdog_start(watchdog *w, tc_gate *g)
{
    w->gate = g;
    atomic_init(&w->past, 0);
    if (pthread_create(&w->thread, NULL, watchdog_main, w) != 0)
        abort();
}

static void watchdog_stop(watchdog *w)
{
    atomic_store(&w->past, 1);
    pthread_join(w->thread, NULL);
}

/*
 * The data-safety check.  Block `old` gets a copy of pattern A queued
 * behind a closed gate on stream `gated`, then is freed: synchronously
 * (async_free false) or with FreeAsync on `gated`.  A new block of the same
 * size is then allocated for `other` (NULL: the default stream) and filled
 * with pattern B there.  Once the gate opens and everything has run, the
 * new block must still hold B: if the allocator handed out `old` while the
 * gated copy was pending, that copy overwrote it with A.
 */
int reuse_is_safe(infinirtStream_t gated, bool async_free, infinirtStream_t other, size_t size)
{
    unsigned char *a = malloc(size), *b = malloc(size), *got = malloc(size);
    ASSERT(a != NULL && b != NULL && got != NULL);
    tc_pattern(a, size, 1);
    tc_pattern(b, size, 2);
    void *old = NULL, *fresh = NULL;
    ASSERT_OK(infinirtMalloc(&old, size));
    tc_gate g = {0};
    CHECK(tc_hold_stream(gated, &g));
    ASSERT_OK(infinirtMemcpyAsync(old, a, size, INFINIRT_MEMCPY_H2D, gated));
    /* The free, and the allocation (which for the whole device can only
     * be served by waiting for the gated work), under the watchdog. */
    watchdog w;
    watchdog_start(&w, &g);
    infiniStatus_t fst = async_free ? infinirtFreeAsync(old, gated) : infinirtFree(old);
    infiniStatus_t mst = other != NULL ? infinirtMallocAsync(&fresh, size, other) : infinirtMalloc(&fresh, size);
    watchdog_stop(&w);
    ASSERT_OK(fst);
    ASSERT_OK(mst);
    ASSERT_OK(infinirtMemcpyAsync(fresh, b, size, INFINIRT_MEMCPY_H2D, other));
    ASSERT_OK(infinirtStreamSynchronize(other));
    tc_gate_open(&g);
    ASSERT_OK(infinirtStreamSynchronize(gated));
    ASSERT_OK(infinirtMemcpy(got, fresh, size, INFINIRT_MEMCPY_D2H));
    if (memcmp(got, b, size) != 0)
        TEST_FAILED_("block %p (freed %p while a copy into it was queued) was overwritten by that copy%s", fresh, old,
                     fresh == old ? ": the allocator handed it out again too early" : "");
    ASSERT_OK(infinirtFree(fresh));
    free(a);
    free(b);
    free(got);
    return TEST_OK;
}

/* Everything freed: a Malloc of all the device's memory succeeds (so no
 * block is stranded), and the statistics balance. */
int all_memory_back(void)
{
    void *p = NULL;
    ASSERT_OK(infinirtMalloc(&p, LIMIT));
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(DEV, 0, &st));
    ASSERT_EQ(st.active_blocks, 1);
    ASSERT_EQ(st.allocated_bytes, LIMIT);
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtTrimCache(DEV, 0));
    ASSERT_OK(infinirtGetAllocatorStats(DEV, 0, &st));
    ASSERT_EQ(st.allocated_bytes, 0);
    ASSERT_EQ(st.active_blocks, 0);
    ASSERT_EQ(st.reserved_bytes, 0);
    ASSERT_EQ(st.segments, 0);
    ASSERT_EQ(st.raw_allocs, st.raw_frees);
    return TEST_OK;
}

int log_count(const char *needle)
{
    const char *log = tc_read_file(ft_log_path());
    int n = 0;
    for (const char *p = log; p != NULL && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* ------------------------------ a device synchronize and late work */

typedef struct {
    infinirtStream_t s;
    tc_gate *g;
    void *dst;
    const void *src;
    size_t n;
    int rc;
} late_work;

/* Runs inside the plugin's device_synchronize, after the device drained:
 * what another thread may queue while a DeviceSynchronize is returning. */
static void queue_late_work(void *arg)
{
    late_work *w = arg;
    w->rc = tc_hold_stream(w->s, w->g);
    if (w->rc == TEST_OK && infinirtMemcpyAsync(w->dst, w->src, w->n, INFINIRT_MEMCPY_H2D, w->s) != 0)
        w->rc = TEST_FAIL;
}

/* Work queued on a stream while a DeviceSynchronize is completing is not
 * covered by it: a free after it must still wait for that work. */
int test_fault_device_sync_late_work(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t s;
    ASSERT_OK(ft_stream(&s));
    static unsigned char a[BLK], b[BLK], got[BLK];
    tc_pattern(a, BLK, 1);
    tc_pattern(b, BLK, 2);
    void *old, *fresh;
    ASSERT_OK(infinirtMalloc(&old, BLK));
    tc_gate g = {0};
    late_work w = {s, &g, old, a, BLK, TEST_FAIL};
    ASSERT_EQ(api.hook("device_synchronize", queue_late_work, &w), 0);
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_EQ(w.rc, TEST_OK);
    watchdog wd;
    watchdog_start(&wd, &g);
    infiniStatus_t fst = infinirtFree(old);
    infiniStatus_t mst = infinirtMalloc(&fresh, BLK);
    watchdog_stop(&wd);
    ASSERT_OK(fst);
    ASSERT_OK(mst);
    ASSERT_OK(infinirtMemcpy(fresh, b, BLK, INFINIRT_MEMCPY_H2D));
    tc_gate_open(&g);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtMemcpy(got, fresh, BLK, INFINIRT_MEMCPY_D2H));
    if (memcmp(got, b, BLK) != 0)
        TEST_FAILED_("block %p (freed %p after a DeviceSynchronize, while a copy queued during it was pending) "
                     "was overwritten by that copy",
                     fresh, old);
    ASSERT_OK(infinirtFree(fresh));
    ASSERT_OK(infinirtStreamDestroy(s));
    CHECK(all_memory_back());
    return TEST_OK;
}

/* A plugin without device_synchronize: DeviceSynchronize waits for each
 * stream in turn, but must not hold the device's lock while it does -
 * StreamCreate (and the allocator's fence paths) would block behind a
 * stream that only the blocked thread could release. */
typedef struct {
    infiniStatus_t st;
    int done;
    infinirtStream_t s;
} ft_call;

static void *ft_device_sync(void *p)
{
    ft_call *c = p;
    infinirtSetDevice(DEV, 0);
    c->st = infinirtDeviceSynchronize();
    __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *ft_stream_create(void *p)
{
    ft_call *c = p;
    infinirtSetDevice(DEV, 0);
    c->st = ft_stream(&c->s);
    __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

int test_fault_sync_by_stream_unlocked(void)
{
    ft_config("device_synchronize", NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t s;
    ASSERT_OK(ft_stream(&s));
    static tc_gate gate;
    CHECK(tc_hold_stream(s, &gate));
    ft_call sync = {0}, create = {0};
    pthread_t ts, tcr;
    ASSERT_EQ(pthread_create(&ts, NULL, ft_device_sync, &sync), 0);
    tc_sleep_ms(50); /* the synchronize now waits on s */
    ASSERT_EQ(pthread_create(&tcr, NULL, ft_stream_create, &create), 0);
    for (int i = 0; i < 200 && !__atomic_load_n(&create.done, __ATOMIC_SEQ_CST); i++)
        tc_sleep_ms(10);
    int created = __atomic_load_n(&create.done, __ATOMIC_SEQ_CST);
    ASSERT_EQ(__atomic_load_n(&sync.done, __ATOMIC_SEQ_CST), 0); /* still waiting for the gate */
    tc_gate_open(&gate);
    ASSERT_EQ(pthread_join(ts, NULL), 0);
    ASSERT_EQ(pthread_join(tcr, NULL), 0);
    ASSERT_EQ(created, 1); /* StreamCreate did not wait for the synchronize */
    ASSERT_OK(sync.st);
    ASSERT_OK(create.st);
    ASSERT_OK(infinirtStreamDestroy(create.s));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* Without the cache a Free waits for the work using the block before the
 * plugin gets it back.  When every way of waiting fails, the memory must
 * stay with the loader (out of use), never go back to the plugin, which
 * would hand it out again while the gated write is still queued. */
int test_fault_passthrough_wait_fails(void)
{
    ft_config(NULL, "[allocator]\nenabled = false\n");
    fault_api api;
    CHECK(ft_start(&api));
    enum { N = 64 * 1024 };
    infinirtStream_t s;
    ASSERT_OK(ft_stream(&s));
    void *p, *q;
    ASSERT_OK(infinirtMalloc(&p, N));
    static tc_gate gate;
    CHECK(tc_hold_stream(s, &gate));
    ASSERT_OK(infinirtMemsetAsync(p, 0xaa, N, s));
    ASSERT_EQ(api.set("event_query", FAULT_ALWAYS, 0, FAIL_ST), 0);
    ASSERT_EQ(api.set("event_synchronize", FAULT_ALWAYS, 0, FAIL_ST), 0);
    ASSERT_EQ(api.set("device_synchronize", FAULT_ALWAYS, 0, FAIL_ST), 0);
    ASSERT_EQ(api.set("stream_synchronize", FAULT_ALWAYS, 0, FAIL_ST), 0);
    ASSERT_OK(infinirtFree(p)); /* kept out of use, with an error line */
    api.reset();
    ASSERT_OK(infinirtMalloc(&q, N));
    ASSERT_OK(infinirtMemset(q, 0x55, N));
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(s));
    unsigned char *got = malloc(N);
    ASSERT(got != NULL);
    ASSERT_OK(infinirtMemcpy(got, q, N, INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < N; i++)
        ASSERT_EQ(got[i], 0x55);
    ASSERT_STR_CONTAINS(tc_read_file(ft_log_path()), "kept out of use");
    free(got);
    ASSERT_OK(infinirtFree(q));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* No events: a block freed behind gated work on the default stream is not
 * reused by the default stream's next allocation (the loader's counters
 * must count the default stream's work). */
int test_fault_no_events_default_stream(void)
{
    ft_config("event_create,event_destroy,event_record,event_query,event_synchronize,event_elapsed_time,"
              "stream_wait_event",
              NULL);
    fault_api api;
    CHECK(ft_start(&api));
    /* The whole device: the next allocation can only be this block. */
    enum { N = LIMIT };
    unsigned char *a = malloc(N), *b = malloc(N), *got = malloc(N);
    ASSERT(a != NULL && b != NULL && got != NULL);
    tc_pattern(a, N, 1);
    tc_pattern(b, N, 2);
    void *old, *fresh;
    ASSERT_OK(infinirtMalloc(&old, N));
    static tc_gate gate;
    CHECK(tc_hold_stream(NULL, &gate));
    ASSERT_OK(infinirtMemcpyAsync(old, a, N, INFINIRT_MEMCPY_H2D, NULL));
    ASSERT_OK(infinirtFree(old));
    /* It must wait for the gated copy (the watchdog opens the gate). */
    watchdog w;
    watchdog_start(&w, &gate);
    infiniStatus_t mst = infinirtMalloc(&fresh, N);
    watchdog_stop(&w);
    ASSERT_OK(mst);
    /* The fault device is host memory (the CPU plugin's): written and read
     * directly, since a synchronous copy would wait for the gated default
     * stream. */
    memcpy(fresh, b, N);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(NULL));
    memcpy(got, fresh, N);
    ASSERT_MEM_EQ(got, b, N);
    ASSERT_OK(infinirtFree(fresh));
    free(a);
    free(b);
    free(got);
    return TEST_OK;
}

/* The loader's own submission counts decide where the plugin has no
 * stream_query (the fault plugin has none; the CPU plugin's, which answers
 * for native work too, makes the loader ask it instead).  The only work
 * queued since the device was synchronised is one host function: a block
 * freed behind it is one submission past the idle mark and must stay
 * pending (allocator.fence_one_past_sync, on the counters).  Half the
 * device each: the allocation would be served from p's segment. */
int test_fault_counted_host_fn_in_flight(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t a;
    ASSERT_OK(ft_stream(&a));
    void *p, *q;
    ASSERT_OK(infinirtMalloc(&p, LIMIT / 2));
    ASSERT_OK(infinirtDeviceSynchronize());
    static tc_gate gate;
    CHECK(tc_hold_stream(a, &gate)); /* may use p, as far as the loader knows */
    ASSERT_OK(infinirtFreeAsync(p, a));
    ASSERT_OK(infinirtMalloc(&q, LIMIT / 2));
    ASSERT_PTR_NE(q, p);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(a));
    ASSERT_OK(infinirtFree(q));
    ASSERT_OK(infinirtStreamDestroy(a));
    CHECK(all_memory_back());
    return TEST_OK;
}

/* The same for an asynchronous copy.  The stream is held by work queued
 * natively through infinirt_cpu.h (the fault plugin passes the CPU
 * plugin's streams through), which the loader does not count, so the copy
 * is the only counted work since the device was synchronised: a block
 * freed right behind it must stay pending. */
static atomic_int g_native_open;

static void native_hold(void *unused)
{
    (void)unused;
    while (!atomic_load(&g_native_open))
        tc_sleep_ms(1);
}

int test_fault_counted_memcpy_async_in_flight(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t a;
    ASSERT_OK(ft_stream(&a));
    const infinirtCpuStreamOps *ops = infinirtCpuStreamGetOps(a);
    ASSERT(ops != NULL && !(ops->flags & INFINIRT_CPU_STREAM_INLINE));
    static unsigned char host[LIMIT / 2];
    void *p, *q;
    ASSERT_OK(infinirtMalloc(&p, LIMIT / 2));
    ASSERT_OK(infinirtDeviceSynchronize());
    atomic_store(&g_native_open, 0);
    ASSERT_OK(ops->enqueue(a, native_hold, NULL));
    ASSERT_OK(infinirtMemcpyAsync(p, host, LIMIT / 2, INFINIRT_MEMCPY_H2D, a));
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtMalloc(&q, LIMIT / 2));
    int reused = q == p;
    atomic_store(&g_native_open, 1);
    ASSERT_OK(infinirtStreamSynchronize(a));
    ASSERT(!reused);
    ASSERT_OK(infinirtFree(q));
    ASSERT_OK(infinirtStreamDestroy(a));
    CHECK(all_memory_back());
    return TEST_OK;
}

/* A device whose plugin says its work is done when queued (ABI 1.5
 * DONE_AT_RETURN; the cpu plugin with streams = inline, passed on by the
 * fault plugin under FAULT_DONE_AT_RETURN=1) gets no submission counting
 * and no fence: a block freed behind work on a stream is reused at once,
 * and no event is recorded for it.  Without the flag the same sequence
 * records fences, so the count tells the two apart. */
static int done_at_return_run(int flag, long *records)
{
    ft_config(NULL, "streams = inline");
    tc_setenv("FAULT_DONE_AT_RETURN", flag ? "1" : "0");
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t a;
    ASSERT_OK(ft_stream(&a));
    const infinirtCpuStreamOps *ops = infinirtCpuStreamGetOps(a);
    ASSERT(ops != NULL && (ops->flags & INFINIRT_CPU_STREAM_INLINE));
    long before = api.calls("event_record");
    for (int i = 0; i < 8; i++) {
        void *p, *q;
        ASSERT_OK(infinirtMalloc(&p, 4096));
        ASSERT_OK(infinirtMemsetAsync(p, i, 4096, a));
        ASSERT_OK(infinirtFreeAsync(p, a));
        ASSERT_OK(infinirtMalloc(&q, 4096));
        ASSERT_OK(infinirtMemsetAsync(q, i, 4096, NULL));
        ASSERT_OK(infinirtFree(q));
        if (flag)
            ASSERT_PTR_EQ(q, p);
    }
    *records = api.calls("event_record") - before;
    ASSERT_OK(infinirtStreamDestroy(a));
    CHECK(all_memory_back());
    return TEST_OK;
}

int test_fault_done_at_return(void)
{
    long records = -1;
    CHECK(done_at_return_run(1, &records));
    ASSERT_EQ(records, 0);
    return TEST_OK;
}

int test_fault_done_at_return_off(void)
{
    long records = -1;
    CHECK(done_at_return_run(0, &records));
    ASSERT_GT(records, 0);
    return TEST_OK;
}

/* A plugin with stream_query and device_query (ABI 1.6; the fault plugin
 * passes the CPU plugin's on under FAULT_NATIVE_QUERIES=1): the loader does
 * not trust its own counts there, and asks device_query first before a
 * synchronous free.  On an idle device that one answer is enough - no
 * stream is queried; with a stream held it answers busy, the streams are
 * queried, and the block stays pending until the stream's work is done. */
static int native_queries_start(fault_api *api)
{
    ft_config(NULL, NULL);
    tc_setenv("FAULT_NATIVE_QUERIES", "1");
    return ft_start(api);
}

/* Frees a block of half the device while stream a is held by a gate, and
 * checks that the next allocation of that size is not served from it. */
static int free_behind_held_stream(fault_api *api, infinirtStream_t a, long *stream_queries)
{
    void *p, *q;
    ASSERT_OK(infinirtMalloc(&p, LIMIT / 2));
    static tc_gate gate;
    CHECK(tc_hold_stream(a, &gate));
    long before = api->calls("stream_query");
    ASSERT_OK(infinirtFree(p)); /* the held stream may use it, as far as anyone knows */
    *stream_queries = api->calls("stream_query") - before;
    ASSERT_OK(infinirtMalloc(&q, LIMIT / 2));
    int reused = q == p;
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(a));
    ASSERT(!reused);
    ASSERT_OK(infinirtFree(q));
    return TEST_OK;
}

int test_fault_device_query_idle(void)
{
    fault_api api;
    CHECK(native_queries_start(&api));
    infinirtStream_t a;
    ASSERT_OK(ft_stream(&a));
    void *p;
    ASSERT_OK(infinirtMalloc(&p, 4096));
    ASSERT_OK(infinirtDeviceSynchronize());
    long sq = api.calls("stream_query"), dq = api.calls("device_query");
    ASSERT_OK(infinirtFree(p));
    ASSERT_GE(api.calls("device_query") - dq, 1);
    ASSERT_EQ(api.calls("stream_query") - sq, 0);
    long queried = 0;
    CHECK(free_behind_held_stream(&api, a, &queried));
    ASSERT_GE(queried, 1);
    ASSERT_OK(infinirtStreamDestroy(a));
    CHECK(all_memory_back());
    return TEST_OK;
}

/* device_query failing: one warning, and the per-stream queries decide, so
 * a block freed behind a held stream still waits for it. */
int test_fault_device_query_fails(void)
{
    fault_api api;
    CHECK(native_queries_start(&api));
    infinirtStream_t a;
    ASSERT_OK(ft_stream(&a));
    ASSERT_EQ(api.set("device_query", FAULT_ALWAYS, 0, INFINI_STATUS_INTERNAL_ERROR), 0);
    long queried = 0;
    CHECK(free_behind_held_stream(&api, a, &queried));
    ASSERT_GE(queried, 1);
    CHECK(free_behind_held_stream(&api, a, &queried));
    ASSERT_EQ(log_count("device_query failed"), 1);
    api.reset();
    ASSERT_OK(infinirtStreamDestroy(a));
    CHECK(all_memory_back());
    return TEST_OK;
}
