/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_beside_capture.c - cuda_graph_test: what runs beside a capture.
 *
 *   global_capture_threads  a global-mode capture stays valid while another
 *                      thread runs the allocator's entries; the same raw
 *                      calls without the mode exchange break it;
 *   stream_query_capturing  stream_query of a capturing stream (and of the
 *                      legacy stream beside a capturing blocking one) says
 *                      "not idle" and leaves the capture valid.
 */
#define _POSIX_C_SOURCE 200809L
#include "graph_test.h"

/* ------------------------------------- the allocator beside a capture */

typedef struct {
    const infinirtPluginOps *ops;
    atomic_int stop;
    int rounds;
    infiniStatus_t st;
} churn_t;

/* What the loader's allocator does from any thread: raw memory, fence
 * events created, recorded on an idle stream of its own, queried, waited
 * for, destroyed. */
static void *churn(void *arg)
{
    churn_t *c = arg;
    void *fs = NULL;

    c->st = c->ops->stream_create(0, &fs);
    while (c->st == INFINI_STATUS_SUCCESS && (c->rounds < 20 || !atomic_load(&c->stop))) {
        void *d = NULL, *h = NULL, *ev = NULL;
        int done = 0;
        infiniStatus_t st = c->ops->malloc_device(0, &d, 4096 + (size_t)c->rounds);
        if (st == INFINI_STATUS_SUCCESS)
            st = c->ops->free_device(0, d);
        if (st == INFINI_STATUS_SUCCESS)
            st = c->ops->malloc_host(0, &h, 100);
        if (st == INFINI_STATUS_SUCCESS)
            st = c->ops->free_host(0, h);
        if (st == INFINI_STATUS_SUCCESS)
            st = c->ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &ev);
        if (st == INFINI_STATUS_SUCCESS)
            st = c->ops->event_record(0, ev, fs);
        if (st == INFINI_STATUS_SUCCESS)
            st = c->ops->event_query(0, ev, &done);
        if (st == INFINI_STATUS_SUCCESS)
            st = c->ops->event_synchronize(0, ev);
        if (st == INFINI_STATUS_SUCCESS)
            st = c->ops->event_destroy(0, ev);
        c->st = st;
        c->rounds++;
    }
    if (fs != NULL)
        (void)c->ops->stream_destroy(0, fs);
    return NULL;
}

static void *raw_alloc(void *arg)
{
    CUdeviceptr *p = arg;
    fake.set_current(0);
    return (void *)(intptr_t)fake.cuMemAlloc_v2(p, 256);
}

int test_global_capture_threads(void)
{
    cuda_plugin p;
    void *s, *d, *graph = NULL, *exec = NULL;
    unsigned char h[N];
    pthread_t th;
    churn_t c;
    void *ret = NULL;
    CUdeviceptr raw = 0;
    int invalidations;

    CHECK(open_on(&p, FAKE_CUDA_PATH));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    invalidations = fake.invalidations();

    memset(h, 0, N);
    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL));
    ASSERT_OK(p.ops->memset_async(0, d, 0x33, N, s));
    c = (churn_t){.ops = p.ops};
    ASSERT_EQ(pthread_create(&th, NULL, churn, &c), 0);
    /* This thread, which captures, may use the allocator too. */
    for (int i = 0; i < 20; i++) {
        void *x = NULL, *ev = NULL;
        int done;
        ASSERT_OK(p.ops->malloc_device(0, &x, 512));
        ASSERT_OK(p.ops->free_device(0, x));
        ASSERT_OK(p.ops->event_create(0, 0, &ev));
        ASSERT_OK(p.ops->event_query(0, ev, &done));
        ASSERT_OK(p.ops->event_destroy(0, ev));
    }
    ASSERT_OK(p.ops->memcpy_async(0, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, s));
    atomic_store(&c.stop, 1);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(c.st);
    ASSERT(c.rounds >= 20);
    ASSERT_OK(p.ops->stream_end_capture(0, s, &graph));
    ASSERT_EQ(fake.invalidations(), invalidations);
    ASSERT_OK(p.ops->graph_instantiate(0, graph, &exec, NULL, 0));
    ASSERT_OK(p.ops->graph_launch(0, exec, s));
    ASSERT_OK(p.ops->stream_synchronize(0, s));
    ASSERT_EQ(h[N - 1], 0x33);
    ASSERT_OK(p.ops->graph_exec_destroy(0, exec));
    ASSERT_OK(p.ops->graph_destroy(0, graph));

    /* The fake is strict: the same raw call without the exchange, from
     * another thread, fails and breaks the capture. */
    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL));
    ASSERT_EQ(pthread_create(&th, NULL, raw_alloc, &raw), 0);
    ASSERT_EQ(pthread_join(th, &ret), 0);
    ASSERT_EQ((int)(intptr_t)ret, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ASSERT_STATUS(p.ops->stream_end_capture(0, s, &graph), INFINI_STATUS_INVALID_STATE);
    /* ... but not a relaxed or thread-local capture of this thread. */
    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_THREAD_LOCAL));
    ASSERT_EQ(pthread_create(&th, NULL, raw_alloc, &raw), 0);
    ASSERT_EQ(pthread_join(th, &ret), 0);
    ASSERT_EQ((int)(intptr_t)ret, CUDA_SUCCESS);
    ASSERT_OK(p.ops->stream_end_capture(0, s, &graph));
    ASSERT_OK(p.ops->graph_destroy(0, graph));
    ASSERT_OK(p.ops->free_device(0, (void *)(uintptr_t)raw));

    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    CHECK(close_plugin(&p));
    return TEST_OK;
}

/* ------------------------------------------ stream_query of a capture */

int test_stream_query_capturing(void)
{
    cuda_plugin p;
    void *s, *nb, *d, *graph = NULL;
    int idle = -1, invalidations;

    CHECK(open_on(&p, FAKE_CUDA_PATH));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    invalidations = fake.invalidations();

    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL));
    ASSERT_OK(p.ops->memset_async(0, d, 1, N, s));
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 0); /* captured work has not run */
    idle = -1;
    ASSERT_OK(p.ops->stream_query(0, NULL, &idle)); /* the legacy stream, beside a blocking capture */
    ASSERT_EQ(idle, 0);
    idle = -1;
    ASSERT_OK(p.ops->stream_query(0, nb, &idle)); /* an unrelated stream is queried as usual */
    ASSERT_EQ(idle, 1);
    ASSERT_OK(p.ops->stream_end_capture(0, s, &graph));
    ASSERT_EQ(fake.invalidations(), invalidations);
    ASSERT_OK(p.ops->graph_destroy(0, graph));
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 1);

    /* The query itself would have broken it. */
    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL));
    fake.set_current(0);
    ASSERT_EQ(fake.cuStreamQuery((CUstream)s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ASSERT_STATUS(p.ops->stream_end_capture(0, s, &graph), INFINI_STATUS_INVALID_STATE);

    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(0, nb));
    CHECK(close_plugin(&p));
    return TEST_OK;
}
