/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_gpu_streams.c - cuda_plugin_test on a GPU (label "gpu"): events,
 * host functions, stream waits, any device from any thread, the legacy
 * stream's ordering with blocking streams, and the caller's context kept.
 */
#define _POSIX_C_SOURCE 200809L
#include "plugin_test.h"

/* A host function that holds its stream until the test opens the gate:
 * makes "not yet complete" deterministic. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open, entered, timed_out;
} gate;

#define GATE_INIT                                                    \
    {                                                                \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 \
    }

static void gate_wait(void *arg)
{
    gate *g = arg;
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20; /* never hang the test run for ever */
    pthread_mutex_lock(&g->lock);
    g->entered = 1;
    pthread_cond_broadcast(&g->cond);
    while (!g->open)
        if (pthread_cond_timedwait(&g->cond, &g->lock, &until) == ETIMEDOUT) {
            g->timed_out = 1;
            break;
        }
    pthread_mutex_unlock(&g->lock);
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

int test_gpu_events(void)
{
    enum { N = 64 << 20 };
    cuda_plugin p;
    void *h, *d, *s, *e0, *e1, *never, *notime;
    gate g = GATE_INIT;
    int done = -1;
    float ms = -1;

    CHECK(gpu_open(&p));
    ASSERT_OK(p.ops->malloc_host(0, &h, N));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->event_create(0, 0, &e0));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC, &e1));
    ASSERT_OK(p.ops->event_create(0, 0, &never));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &notime));
    ASSERT_STATUS(p.ops->event_create(0, 0x100, &notime), INFINI_STATUS_BAD_PARAM);

    /* Never recorded: complete, no elapsed time, nothing to wait for. */
    ASSERT_OK(p.ops->event_query(0, never, &done));
    ASSERT_EQ(done, 1);
    ASSERT_OK(p.ops->event_synchronize(0, never));
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, never, never), INFINI_STATUS_INVALID_STATE);
    ASSERT_OK(p.ops->stream_wait_event(0, s, never));

    /* A copy held behind a gate: its end event is not ready, and elapsed
     * says NOT_READY, until the gate opens. */
    ASSERT_OK(p.ops->event_record(0, e0, s));
    ASSERT_OK(p.ops->launch_host_func(0, s, gate_wait, &g));
    ASSERT_OK(p.ops->memcpy_async(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(p.ops->event_record(0, e1, s));
    ASSERT_OK(p.ops->event_query(0, e1, &done));
    ASSERT_EQ(done, 0);
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, e0, e1), INFINI_STATUS_NOT_READY);
    gate_open(&g);
    ASSERT_OK(p.ops->event_synchronize(0, e1));
    ASSERT_EQ(g.timed_out, 0);
    ASSERT_OK(p.ops->event_query(0, e1, &done));
    ASSERT_EQ(done, 1);
    ASSERT_OK(p.ops->event_elapsed_time(0, &ms, e0, e1));
    fprintf(stderr, "gated 64 MiB H2D: %.3f ms\n", ms);
    ASSERT(ms > 0);

    /* A plain timed copy: elapsed time in a plausible range. */
    ASSERT_OK(p.ops->event_record(0, e0, s));
    ASSERT_OK(p.ops->memcpy_async(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(p.ops->event_record(0, e1, s));
    ASSERT_OK(p.ops->stream_synchronize(0, s));
    ASSERT_OK(p.ops->event_elapsed_time(0, &ms, e0, e1));
    fprintf(stderr, "64 MiB pinned H2D: %.3f ms (%.1f GB/s)\n", ms, N / (ms * 1e6));
    ASSERT(ms > 0.01f && ms < 10000.0f);

    /* Timing disabled: recorded but no elapsed time. */
    ASSERT_OK(p.ops->event_record(0, notime, NULL));
    ASSERT_OK(p.ops->event_synchronize(0, notime));
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, e0, notime), INFINI_STATUS_INVALID_STATE);

    ASSERT_OK(p.ops->event_destroy(0, e0));
    ASSERT_OK(p.ops->event_destroy(0, e1));
    ASSERT_OK(p.ops->event_destroy(0, never));
    ASSERT_OK(p.ops->event_destroy(0, notime));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->free_host(0, h));
    p.ops->shutdown();
    return TEST_OK;
}

typedef struct {
    atomic_int next;
    int order[64];
    const unsigned char *check, *want;
    size_t n;
    atomic_int check_ok;
    unsigned char *poke;
} host_fn_state;

static host_fn_state hfs;

static void record_order(void *arg)
{
    hfs.order[atomic_fetch_add(&hfs.next, 1)] = (int)(intptr_t)arg;
}

static void check_copy_done(void *arg)
{
    (void)arg;
    atomic_store(&hfs.check_ok, memcmp(hfs.check, hfs.want, hfs.n) == 0 ? 1 : 0);
}

static void slow_poke(void *arg)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    memset(hfs.poke, (int)(intptr_t)arg, hfs.n);
}

int test_gpu_host_func(void)
{
    enum { N = 32 << 20 };
    cuda_plugin p;
    void *src, *dst, *d, *s;

    CHECK(gpu_open(&p));
    ASSERT_OK(p.ops->malloc_host(0, &src, N));
    ASSERT_OK(p.ops->malloc_host(0, &dst, N));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->stream_create(0, &s));

    /* Host functions run in the order queued, on both kinds of stream. */
    for (int k = 0; k < 2; k++) {
        atomic_store(&hfs.next, 0);
        for (int i = 0; i < 32; i++)
            ASSERT_OK(p.ops->launch_host_func(0, k ? NULL : s, record_order, (void *)(intptr_t)i));
        ASSERT_OK(p.ops->stream_synchronize(0, k ? NULL : s));
        ASSERT_EQ(atomic_load(&hfs.next), 32);
        for (int i = 0; i < 32; i++)
            ASSERT_EQ(hfs.order[i], i);
    }

    /* It runs after the work queued before it ... */
    fill_pattern(src, N, 3);
    memset(dst, 0, N);
    hfs.check = dst;
    hfs.want = src;
    hfs.n = N;
    atomic_store(&hfs.check_ok, -1);
    ASSERT_OK(p.ops->memcpy_async(0, d, src, N, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(p.ops->memcpy_async(0, dst, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, s));
    ASSERT_OK(p.ops->launch_host_func(0, s, check_copy_done, NULL));
    ASSERT_OK(p.ops->stream_synchronize(0, s));
    ASSERT_EQ(atomic_load(&hfs.check_ok), 1);

    /* ... and before the work queued after it. */
    hfs.poke = src;
    ASSERT_OK(p.ops->launch_host_func(0, s, slow_poke, (void *)(intptr_t)0x77));
    ASSERT_OK(p.ops->memcpy_async(0, d, src, N, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(p.ops->memcpy_async(0, dst, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, s));
    ASSERT_OK(p.ops->stream_synchronize(0, s));
    ASSERT_EQ(((unsigned char *)dst)[0], 0x77);
    ASSERT_EQ(((unsigned char *)dst)[N - 1], 0x77);

    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->free_host(0, src));
    ASSERT_OK(p.ops->free_host(0, dst));
    p.ops->shutdown();
    return TEST_OK;
}

int test_gpu_stream_wait_event(void)
{
    enum { N = 16 << 20 };
    cuda_plugin p;
    void *h, *d, *a, *b, *e, *f;
    int done = -1;

    CHECK(gpu_open(&p));
    ASSERT_OK(p.ops->malloc_host(0, &h, N));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memset(0, d, 0, N));
    /* Two devices when there are: B on the last device waits for A on 0. */
    int bdev = p.count - 1;
    ASSERT_OK(p.ops->stream_create(0, &a));
    ASSERT_OK(p.ops->stream_create(bdev, &b));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &e));
    ASSERT_OK(p.ops->event_create(bdev, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &f));

    /* A is held by a gate, then fills d and records e.  B waits for e and
     * then copies d out.  Without the wait, B's copy would see zeros. */
    gate g = GATE_INIT;
    memset(h, 0x33, N);
    ASSERT_OK(p.ops->launch_host_func(0, a, gate_wait, &g));
    ASSERT_OK(p.ops->memset_async(0, d, 0x5A, N, a));
    ASSERT_OK(p.ops->event_record(0, e, a));
    ASSERT_OK(p.ops->stream_wait_event(bdev, b, e)); /* must not block the host */
    ASSERT_OK(p.ops->memcpy_async(bdev, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, b));
    ASSERT_OK(p.ops->event_record(bdev, f, b));
    ASSERT_OK(p.ops->event_query(bdev, f, &done));
    ASSERT_EQ(done, 0); /* B is held by A's gate */
    gate_open(&g);
    ASSERT_OK(p.ops->stream_synchronize(bdev, b));
    ASSERT_EQ(g.timed_out, 0);
    for (size_t i = 0; i < N; i += 4093)
        ASSERT_EQ(((unsigned char *)h)[i], 0x5A);
    ASSERT_EQ(((unsigned char *)h)[N - 1], 0x5A);

    ASSERT_OK(p.ops->event_destroy(0, e));
    ASSERT_OK(p.ops->event_destroy(bdev, f));
    ASSERT_OK(p.ops->stream_destroy(0, a));
    ASSERT_OK(p.ops->stream_destroy(bdev, b));
    ASSERT_OK(p.ops->device_synchronize(0));
    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->free_host(0, h));
    p.ops->shutdown();
    return TEST_OK;
}

/* Any thread can use any device: each thread makes the context current. */
typedef struct {
    const infinirtPluginOps *ops;
    int dev, ok;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg *w = arg;
    enum { N = 1 << 20 };
    unsigned char *h = malloc(N);
    void *d = NULL;

    w->ok = h != NULL && w->ops->malloc_device(w->dev, &d, N) == 0 && w->ops->memset(w->dev, d, w->dev + 1, N) == 0 &&
            w->ops->memcpy(w->dev, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H) == 0 && h[0] == w->dev + 1 &&
            h[N - 1] == w->dev + 1 && w->ops->free_device(w->dev, d) == 0;
    free(h);
    return NULL;
}

int test_gpu_threads(void)
{
    cuda_plugin p;
    pthread_t t[8];
    worker_arg w[8];

    CHECK(gpu_open(&p));
    for (int i = 0; i < 8; i++) {
        w[i] = (worker_arg){p.ops, i % p.count, 0};
        ASSERT_EQ(pthread_create(&t[i], NULL, worker, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ASSERT_EQ(w[i].ok, 1);
    }
    p.ops->shutdown();
    return TEST_OK;
}

static void *open_gate_after_100ms(void *arg)
{
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    gate_open(arg);
    return NULL;
}

/* The driver's legacy-stream ordering, which the plugin relies on: a
 * synchronous copy or fill comes after the work queued on a blocking
 * stream (a gate opened by another thread holds that work), and does not
 * wait for a non-blocking stream. */
int test_gpu_blocking_streams(void)
{
    enum { N = 8 << 20 };
    cuda_plugin p;
    unsigned char *h;
    void *d, *s, *nb, *e;
    int done = -1, idle = -1;
    pthread_t th;

    CHECK(gpu_open(&p));
    h = malloc(N);
    ASSERT(h != NULL);
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memset(0, d, 0, N));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &e));

    gate g1 = GATE_INIT;
    ASSERT_OK(p.ops->launch_host_func(0, s, gate_wait, &g1));
    ASSERT_OK(p.ops->memset_async(0, d, 0x5A, N, s));
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 0);
    ASSERT_EQ(pthread_create(&th, NULL, open_gate_after_100ms, &g1), 0);
    ASSERT_OK(p.ops->memcpy(0, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_EQ(g1.timed_out, 0);
    for (size_t i = 0; i < N; i += 4093)
        ASSERT_EQ(h[i], 0x5A);
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 1);

    gate g2 = GATE_INIT;
    ASSERT_OK(p.ops->launch_host_func(0, s, gate_wait, &g2));
    ASSERT_OK(p.ops->memset_async(0, d, 0x77, N, s));
    ASSERT_EQ(pthread_create(&th, NULL, open_gate_after_100ms, &g2), 0);
    ASSERT_OK(p.ops->memset(0, d, 0x11, 64));
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(p.ops->memcpy(0, h, d, 128, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(h[0], 0x11);
    ASSERT_EQ(h[63], 0x11);
    ASSERT_EQ(h[64], 0x77);

    gate g3 = GATE_INIT;
    ASSERT_OK(p.ops->launch_host_func(0, nb, gate_wait, &g3));
    ASSERT_OK(p.ops->event_record(0, e, nb));
    ASSERT_OK(p.ops->memcpy(0, h, d, 128, INFINIRT_PLUGIN_MEMCPY_D2H)); /* does not wait for nb */
    ASSERT_OK(p.ops->event_query(0, e, &done));
    ASSERT_EQ(done, 0);
    gate_open(&g3);
    ASSERT_OK(p.ops->event_synchronize(0, e));
    ASSERT_EQ(g3.timed_out, 0);

    ASSERT_OK(p.ops->event_destroy(0, e));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(0, nb));
    ASSERT_OK(p.ops->free_device(0, d));
    free(h);
    p.ops->shutdown();
    return TEST_OK;
}

/* On the real driver: set_device makes the primary context current, a call
 * for another device leaves it current, pointer_get_device finds the
 * device of cuMemAlloc'd memory, and the stream handle is a CUstream of the
 * device's context.  With one GPU, "another device" is exercised only by
 * the no-context case. */
int test_gpu_current_context(void)
{
    cuda_plugin p;
    void *drv, *sym, *d, *s, *ctx = NULL;
    CUresult (*get_current)(CUcontext *);
    CUresult (*set_current)(CUcontext);
    CUresult (*stream_get_ctx)(CUstream, CUcontext *);
    CUcontext cur = NULL;
    int dev = -1, last;

    CHECK(gpu_open(&p));
    drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    ASSERT(drv != NULL);
    sym = dlsym(drv, "cuCtxGetCurrent");
    ASSERT(sym != NULL);
    memcpy(&get_current, &sym, sizeof sym);
    sym = dlsym(drv, "cuCtxSetCurrent");
    ASSERT(sym != NULL);
    memcpy(&set_current, &sym, sizeof sym);
    sym = dlsym(drv, "cuStreamGetCtx");
    ASSERT(sym != NULL);
    memcpy(&stream_get_ctx, &sym, sizeof sym);

    last = p.count - 1;
    ASSERT_EQ(set_current(NULL), CUDA_SUCCESS);
    ASSERT_OK(p.ops->malloc_device(last, &d, 4096));
    ASSERT_EQ(get_current(&cur), CUDA_SUCCESS);
    ASSERT_PTR_EQ(cur, NULL); /* none before, none after */
    ASSERT_OK(p.ops->pointer_get_device((char *)d + 100, &dev));
    ASSERT_EQ(dev, last);
    ASSERT_STATUS(p.ops->pointer_get_device(&dev, &dev), INFINI_STATUS_BAD_PARAM);

    ASSERT_OK(p.ops->set_device(0));
    ASSERT_OK(p.ops->device_get_native(0, NULL, &ctx));
    ASSERT_EQ(get_current(&cur), CUDA_SUCCESS);
    ASSERT_PTR_EQ(cur, ctx);
    ASSERT_OK(p.ops->stream_create(last, &s));
    ASSERT_OK(p.ops->memset_async(last, d, 1, 4096, s));
    ASSERT_OK(p.ops->stream_synchronize(last, s));
    ASSERT_EQ(get_current(&cur), CUDA_SUCCESS);
    ASSERT_PTR_EQ(cur, ctx); /* still device 0's */
    void *last_ctx = NULL;
    ASSERT_OK(p.ops->device_get_native(last, NULL, &last_ctx));
    ASSERT_EQ(stream_get_ctx((CUstream)s, &cur), CUDA_SUCCESS);
    ASSERT_PTR_EQ(cur, last_ctx);
    ASSERT_OK(p.ops->stream_destroy(last, s));
    ASSERT_OK(p.ops->free_device(last, d));
    p.ops->shutdown();
    return TEST_OK;
}
