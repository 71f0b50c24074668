/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_driver_context.c - cuda_fake_driver_test: lazy primary contexts and
 * their release, context switching across threads, streams and events on
 * the fake driver.
 */
#define _POSIX_C_SOURCE 200809L
#include "fake_driver_test.h"

/* --------------------------------------------------------- contexts */

/* Primary contexts are retained on first use, once, and released at
 * shutdown; device info needs no context. */
int test_lazy_context(void)
{
    cuda_plugin p;
    infinirtPluginDeviceInfo info;
    size_t fr, tot;
    void *d;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_EQ(p.count, 3);
    ASSERT_OK(p.ops->get_device_info(2, &info));
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fake.refcount(i), 0);
    ASSERT_OK(p.ops->malloc_device(1, &d, 4096));
    ASSERT_OK(p.ops->get_mem_info(1, &fr, &tot));
    ASSERT_EQ(tot, 64 << 20);
    ASSERT_EQ(fr, (64 << 20) - 4096);
    ASSERT_OK(p.ops->device_synchronize(1));
    ASSERT_EQ(fake.refcount(0), 0);
    ASSERT_EQ(fake.refcount(1), 1);
    ASSERT_EQ(fake.refcount(2), 0);
    ASSERT_EQ(fake.live_streams(), 0); /* the NULL stream is the driver's legacy stream */
    ASSERT_OK(p.ops->free_device(1, d));
    CHECK(fake_close(&p));
    return TEST_OK;
}

typedef struct {
    const infinirtPluginOps *ops;
    int dev;
    void *ptr;
    infiniStatus_t st;
} thread_arg;

static void *alloc_thread(void *arg)
{
    thread_arg *t = arg;
    t->st = t->ops->malloc_device(t->dev, &t->ptr, 256);
    return NULL;
}

/* Work lands on the device asked for, whatever context the thread had
 * current: a fresh thread has none, and the application may have switched
 * it (cudaSetDevice) since our last call. */
int test_context_switch(void)
{
    cuda_plugin p;
    void *a, *b, *c;
    pthread_t th;
    thread_arg t[3];

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &a, 256));
    ASSERT_EQ(fake.alloc_device(a), 0);
    ASSERT_OK(p.ops->malloc_device(2, &b, 256)); /* device 2 becomes current */
    fake.set_current(1);                         /* the app switches behind our back */
    ASSERT_OK(p.ops->malloc_device(2, &c, 256));
    ASSERT_EQ(fake.alloc_device(c), 2);
    ASSERT_OK(p.ops->free_device(2, c));
    fake.set_current(-1);
    ASSERT_OK(p.ops->malloc_device(2, &c, 256));
    ASSERT_EQ(fake.alloc_device(c), 2);
    ASSERT_OK(p.ops->free_device(2, c));

    for (int i = 0; i < 3; i++) {
        t[i] = (thread_arg){p.ops, i, NULL, INFINI_STATUS_INTERNAL_ERROR};
        ASSERT_EQ(pthread_create(&th, NULL, alloc_thread, &t[i]), 0);
        pthread_join(th, NULL);
        ASSERT_OK(t[i].st);
        ASSERT_EQ(fake.alloc_device(t[i].ptr), i);
        ASSERT_OK(p.ops->free_device(i, t[i].ptr));
    }
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fake.refcount(i), 1); /* retained once, however many threads */
    ASSERT_OK(p.ops->free_device(0, a));
    ASSERT_OK(p.ops->free_device(2, b));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* ----------------------------------------------------- streams, events */

int test_streams(void)
{
    cuda_plugin p;
    void *s0, *s1;

    CHECK(fake_open(&p, NULL, 0));
    void *nb, *bl;
    ASSERT_OK(p.ops->stream_create(0, &s0));
    ASSERT_OK(p.ops->stream_create(1, &s1));
    /* Blocking, as cudaStreamCreate's; the flag gives a non-blocking one. */
    ASSERT_EQ(fake.stream_flags(s0), CU_STREAM_DEFAULT);
    ASSERT_OK(p.ops->stream_create_with_flags(1, 0, &bl));
    ASSERT_EQ(fake.stream_flags(bl), CU_STREAM_DEFAULT);
    ASSERT_OK(p.ops->stream_create_with_flags(1, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    ASSERT_EQ(fake.stream_flags(nb), CU_STREAM_NON_BLOCKING);
    test_log_clear();
    void *bad = NULL;
    ASSERT_STATUS(p.ops->stream_create_with_flags(1, 0x2, &bad), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "unknown stream flags 0x2"), 1);
    ASSERT_EQ(fake.live_streams(), 4); /* the NULL streams are the driver's legacy streams */
    ASSERT_OK(p.ops->stream_destroy(1, bl));
    ASSERT_OK(p.ops->stream_destroy(1, nb));
    ASSERT_OK(p.ops->stream_synchronize(0, s0));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_OK(p.ops->launch_host_func(0, s0, count_call, (void *)(intptr_t)1));
    ASSERT_OK(p.ops->launch_host_func(1, NULL, count_call, (void *)(intptr_t)10));
    ASSERT_OK(p.ops->stream_synchronize(0, s0));
    ASSERT_OK(p.ops->device_synchronize(1));
    ASSERT_EQ(host_fn_calls, 11);
    ASSERT_OK(p.ops->stream_destroy(0, s0));
    ASSERT_OK(p.ops->stream_destroy(1, s1));
    ASSERT_STATUS(p.ops->stream_destroy(1, NULL), INFINI_STATUS_BAD_PARAM);
    CHECK(fake_close(&p));
    return TEST_OK;
}

int test_events(void)
{
    cuda_plugin p;
    void *a, *b, *never, *notime, *s, *s1;
    int done = -1;
    float ms = -1;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC, &a));
    ASSERT_EQ(fake.last_event_flags(), CU_EVENT_BLOCKING_SYNC);
    ASSERT_OK(p.ops->event_create(0, 0, &b));
    ASSERT_EQ(fake.last_event_flags(), CU_EVENT_DEFAULT);
    ASSERT_OK(p.ops->event_create(0, 0, &never));
    ASSERT_OK(
        p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING | INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC, &notime));
    ASSERT_EQ(fake.last_event_flags(), CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
    ASSERT_STATUS(p.ops->event_create(0, 0x4, &s), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.live_events(), 4);

    /* Never recorded: complete, nothing to wait for, no elapsed time
     * (the driver's INVALID_HANDLE there is an answer, not logged). */
    test_log_clear();
    ASSERT_OK(p.ops->event_query(0, never, &done));
    ASSERT_EQ(done, 1);
    ASSERT_OK(p.ops->event_synchronize(0, never));
    ASSERT_OK(p.ops->stream_wait_event(1, NULL, never));
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, never, a), INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(test_log_count("", NULL), 0);

    /* Recorded behind a gate: not ready, and a stream of device 1 that
     * waits for it is held too. */
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create(1, &s1));
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->event_record(0, a, s));
    ASSERT_OK(p.ops->launch_host_func(0, s, gate_wait, NULL));
    ASSERT_OK(p.ops->event_record(0, b, s));
    ASSERT_OK(p.ops->event_query(0, b, &done));
    ASSERT_EQ(done, 0);
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, a, b), INFINI_STATUS_NOT_READY);
    int waits = fake.wait_event_calls();
    ASSERT_OK(p.ops->stream_wait_event(1, s1, b));
    ASSERT_EQ(fake.wait_event_calls(), waits + 1);
    void *after;
    ASSERT_OK(p.ops->event_create(1, 0, &after));
    ASSERT_OK(p.ops->event_record(1, after, s1));
    ASSERT_OK(p.ops->event_query(1, after, &done));
    ASSERT_EQ(done, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->event_synchronize(0, b));
    ASSERT_OK(p.ops->event_query(0, b, &done));
    ASSERT_EQ(done, 1);
    int old_calls = fake.elapsed_calls(0), v2_calls = fake.elapsed_calls(1);
    ASSERT_OK(p.ops->event_elapsed_time(0, &ms, a, b));
    ASSERT(ms >= 0);
    /* A driver with both names: the _v2 one. */
    ASSERT_EQ(fake.elapsed_calls(1), v2_calls + 1);
    ASSERT_EQ(fake.elapsed_calls(0), old_calls);
    ASSERT_OK(p.ops->stream_synchronize(1, s1));
    ASSERT_OK(p.ops->event_query(1, after, &done));
    ASSERT_EQ(done, 1);

    /* Timing disabled. */
    ASSERT_OK(p.ops->event_record(0, notime, s));
    ASSERT_OK(p.ops->event_synchronize(0, notime));
    ASSERT_STATUS(p.ops->event_elapsed_time(0, &ms, a, notime), INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(test_log_count("ERROR", NULL), 0); /* none of that is a failure */

    ASSERT_OK(p.ops->event_destroy(0, a));
    ASSERT_OK(p.ops->event_destroy(0, b));
    ASSERT_OK(p.ops->event_destroy(0, never));
    ASSERT_OK(p.ops->event_destroy(0, notime));
    ASSERT_OK(p.ops->event_destroy(1, after));
    ASSERT_EQ(fake.live_events(), 0);
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(1, s1));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* A driver from before CUDA 12.8 exports cuEventElapsedTime only: the
 * plugin loads on it and times events with that name. */
static void sleep_20ms(void *arg)
{
    struct timespec t = {0, 20 * 1000000};
    (void)arg;
    nanosleep(&t, NULL);
}

int test_elapsed_old_symbol(void)
{
    void *dl = dlopen(FAKE_CUDA_OLDSYM_PATH, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL)
        TEST_FAILED_("dlopen(%s): %s", FAKE_CUDA_OLDSYM_PATH, dlerror());
    ASSERT(dlsym(dl, "cuEventElapsedTime") != NULL);
    ASSERT(dlsym(dl, "cuEventElapsedTime_v2") == NULL); /* the variant really is old */
    int (*calls)(int);
    void *sym = dlsym(dl, "fake_cuda_elapsed_calls");
    ASSERT(sym != NULL);
    memcpy(&calls, &sym, sizeof sym);

    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", FAKE_CUDA_OLDSYM_PATH}};
    setenv("FAKE_CUDA_MODE", "ok", 1);
    CHECK(plugin_open(&p));
    ASSERT_OK(plugin_init_kv(&p, kv, 1));
    ASSERT_GT(p.count, 0);
    void *s, *a, *b;
    float ms = -1;
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->event_create(0, 0, &a));
    ASSERT_OK(p.ops->event_create(0, 0, &b));
    ASSERT_OK(p.ops->event_record(0, a, s));
    ASSERT_OK(p.ops->launch_host_func(0, s, sleep_20ms, NULL));
    ASSERT_OK(p.ops->event_record(0, b, s));
    ASSERT_OK(p.ops->event_synchronize(0, b));
    ASSERT_OK(p.ops->event_elapsed_time(0, &ms, a, b));
    ASSERT(ms >= 15.0f && ms < 60000.0f);
    ASSERT_EQ(calls(0), 1);
    ASSERT_EQ(calls(1), 0);
    ASSERT_OK(p.ops->event_destroy(0, a));
    ASSERT_OK(p.ops->event_destroy(0, b));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    p.ops->shutdown();
    return TEST_OK;
}
