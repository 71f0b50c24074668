/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_driver_native.c - cuda_fake_driver_test, ABI 1.1: native handles,
 * blocking streams against the legacy default stream, set_device and the
 * caller's context kept, pointer ownership, wrapped application streams.
 */
#define _POSIX_C_SOURCE 200809L
#include "fake_driver_test.h"

/* ------------------------------------------------------ ABI 1.1 */

/* The handles the application gets are the driver's own objects: the
 * CUstream the fake created, and the CUevent inside the plugin's event.
 * Work the application queues on them natively is seen by infinirt. */
int test_native_handles(void)
{
    cuda_plugin p;
    void *s, *native = NULL, *e, *ev = NULL, *dev = NULL, *ctx = NULL;
    CUcontext c = NULL;
    int done = -1, idle = -1;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_PTR_EQ(s, fake.last_stream());
    ASSERT_OK(p.ops->stream_get_native(0, s, &native));
    ASSERT_PTR_EQ(native, s);
    ASSERT_EQ(fake.cuStreamGetCtx((CUstream)native, &c), CUDA_SUCCESS);
    ASSERT_PTR_EQ(c, fake.ctx(0));

    ASSERT_OK(p.ops->event_create(0, 0, &e));
    ASSERT_OK(p.ops->event_get_native(0, e, &ev));
    ASSERT(ev != NULL && ev != e);
    fake.set_current(0);
    ASSERT_EQ(fake.cuEventQuery((CUevent)ev), CUDA_SUCCESS); /* a live CUevent of device 0 */

    /* The application records the CUevent itself, behind a gate. */
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc((CUstream)native, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuEventRecord((CUevent)ev, (CUstream)native), CUDA_SUCCESS);
    ASSERT_OK(p.ops->event_query(0, e, &done));
    ASSERT_EQ(done, 0);
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->event_synchronize(0, e));
    ASSERT_OK(p.ops->event_query(0, e, &done));
    ASSERT_EQ(done, 1);
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 1);

    /* The device: CUdevice and primary context, retained but made current
     * nowhere. */
    fake.set_current(-1);
    ASSERT_OK(p.ops->device_get_native(2, &dev, &ctx));
    ASSERT_EQ((int)(intptr_t)dev, 2);
    ASSERT_PTR_EQ(ctx, fake.ctx(2));
    ASSERT_EQ(fake.refcount(2), 1);
    ASSERT_EQ(fake.current_device(), -1);
    ASSERT_OK(p.ops->device_get_native(2, NULL, &ctx));
    ASSERT_EQ(fake.refcount(2), 1);
    /* Memory is addressable: no mem_get_native, the pointer is the handle. */
    ASSERT(p.ops->mem_get_native == NULL);

    ASSERT_OK(p.ops->event_destroy(0, e));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Blocking streams with the driver's legacy default stream: synchronous
 * copies and fills, and NULL-stream work, come after the work queued on
 * the device's blocking streams, and blocking streams wait for NULL-stream
 * work (a wait for an event excepted); a non-blocking stream does neither. */
int test_blocking_streams(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    unsigned char h[N], g[N];
    void *d, *s, *nb, *eb, *en;
    int done = -1, idle = -1;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memset(0, d, 0, N));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    fill_pattern(h, N, 3);

    /* A synchronous D2H reads what a blocking stream's queued copy, held
     * back 50 ms, writes. */
    ASSERT_OK(p.ops->launch_host_func(0, s, sleep_ms_fn, (void *)(intptr_t)50));
    ASSERT_OK(p.ops->memcpy_async(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(p.ops->memcpy(0, g, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);
    /* A synchronous fill lands after the stream's queued fill. */
    ASSERT_OK(p.ops->launch_host_func(0, s, sleep_ms_fn, (void *)(intptr_t)50));
    ASSERT_OK(p.ops->memset_async(0, d, 0x5a, N, s));
    ASSERT_OK(p.ops->memset(0, d, 0x11, 16));
    ASSERT_OK(p.ops->memcpy(0, g, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(g[0], 0x11);
    ASSERT_EQ(g[15], 0x11);
    ASSERT_EQ(g[16], 0x5a);
    ASSERT_EQ(g[N - 1], 0x5a);

    /* NULL-stream work held by a gate holds later work of the blocking
     * stream, not of the non-blocking one. */
    ASSERT_OK(p.ops->event_create(0, 0, &eb));
    ASSERT_OK(p.ops->event_create(0, 0, &en));
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->launch_host_func(0, NULL, gate_wait, NULL));
    ASSERT_OK(p.ops->event_record(0, eb, s));
    ASSERT_OK(p.ops->event_record(0, en, nb));
    ASSERT_OK(p.ops->event_synchronize(0, en));
    sleep_ms_fn((void *)(intptr_t)50); /* time enough for s, were it not held */
    ASSERT_OK(p.ops->event_query(0, eb, &done));
    ASSERT_EQ(done, 0);
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 0);
    ASSERT_OK(p.ops->stream_query(0, NULL, &idle));
    ASSERT_EQ(idle, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->event_synchronize(0, eb));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_OK(p.ops->stream_query(0, NULL, &idle));
    ASSERT_EQ(idle, 1);

    /* As the driver does (an H200, docs/cuda.md): a wait on the blocking
     * stream, for a record already complete, is not itself held by the
     * NULL stream's work; the stream goes idle while the NULL stream is
     * held (polled for up to 5 s: only a held wait never gets there), and
     * a record queued after the wait is still held. */
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->launch_host_func(0, NULL, gate_wait, NULL));
    ASSERT_OK(p.ops->stream_wait_event(0, s, en));
    idle = 0;
    for (int ms = 0; ms < 5000 && !idle; ms++) {
        ASSERT_OK(p.ops->stream_query(0, s, &idle));
        if (!idle)
            sleep_ms_fn((void *)(intptr_t)1);
    }
    ASSERT_EQ(idle, 1); /* the wait was held behind the NULL stream */
    ASSERT_OK(p.ops->event_record(0, eb, s));
    sleep_ms_fn((void *)(intptr_t)50);
    ASSERT_OK(p.ops->event_query(0, eb, &done));
    ASSERT_EQ(done, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->event_synchronize(0, eb));

    /* A synchronous copy does not wait for a held non-blocking stream. */
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->launch_host_func(0, nb, gate_wait, NULL));
    ASSERT_OK(p.ops->memcpy(0, g, d, 16, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_OK(p.ops->stream_query(0, nb, &idle));
    ASSERT_EQ(idle, 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_OK(p.ops->stream_synchronize(0, nb));

    ASSERT_OK(p.ops->event_destroy(0, eb));
    ASSERT_OK(p.ops->event_destroy(0, en));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(0, nb));
    ASSERT_OK(p.ops->free_device(0, d));
    CHECK(fake_close(&p));
    return TEST_OK;
}

static void *set_device_2(void *arg)
{
    cuda_plugin *p = arg;
    intptr_t ok = p->ops->set_device(2) == INFINI_STATUS_SUCCESS && fake.current_device() == 2;
    return (void *)ok;
}

/* set_device makes the device's primary context current on the calling
 * thread (only there); every other entry leaves the caller's context as it
 * found it, whichever device it works on, and switches nothing when the
 * device's context is already current. */
int test_current_context(void)
{
    cuda_plugin p;
    unsigned char h[256] = {1, 2, 3};
    void *d0, *d1, *big, *s0, *e0, *w;
    size_t fr, tot;
    CUcontext c = NULL;
    int done, idle, calls;
    float ms;
    pthread_t th;
    void *thread_ok = NULL;

    CHECK(fake_open(&p, NULL, 0));
    fake.set_current(-1);
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_EQ(fake.cuCtxGetCurrent(&c), CUDA_SUCCESS);
    ASSERT_PTR_EQ(c, fake.ctx(1));

    calls = fake.set_current_calls();
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_OK(p.ops->malloc_device(1, &d1, 256));
    ASSERT_EQ(fake.alloc_device(d1), 1);
    ASSERT_EQ(fake.set_current_calls(), calls); /* already current: no switch */

#define KEEPS_1_(call)                       \
    do {                                     \
        ASSERT_OK(call);                     \
        ASSERT_EQ(fake.current_device(), 1); \
    } while (0)
    KEEPS_1_(p.ops->malloc_device(0, &d0, 256));
    ASSERT_EQ(fake.alloc_device(d0), 0);
    KEEPS_1_(p.ops->stream_create(0, &s0));
    ASSERT_EQ(fake.cuStreamGetCtx((CUstream)s0, &c), CUDA_SUCCESS);
    ASSERT_PTR_EQ(c, fake.ctx(0));
    KEEPS_1_(p.ops->event_create(0, 0, &e0));
    KEEPS_1_(p.ops->memcpy_async(0, d0, h, 256, INFINIRT_PLUGIN_MEMCPY_H2D, s0));
    KEEPS_1_(p.ops->memset_async(0, d0, 7, 8, s0));
    KEEPS_1_(p.ops->launch_host_func(0, s0, count_call, (void *)(intptr_t)0));
    KEEPS_1_(p.ops->event_record(0, e0, s0));
    KEEPS_1_(p.ops->stream_wait_event(0, NULL, e0));
    KEEPS_1_(p.ops->stream_wait_event(1, NULL, e0)); /* device 1's stream, device 0's event */
    KEEPS_1_(p.ops->event_query(0, e0, &done));
    KEEPS_1_(p.ops->event_synchronize(0, e0));
    KEEPS_1_(p.ops->event_elapsed_time(0, &ms, e0, e0));
    KEEPS_1_(p.ops->stream_query(0, s0, &idle));
    KEEPS_1_(p.ops->stream_synchronize(0, s0));
    KEEPS_1_(p.ops->stream_synchronize(0, NULL));
    KEEPS_1_(p.ops->memset(0, d0, 9, 4));
    KEEPS_1_(p.ops->memcpy(0, h, d0, 256, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(h[3], 9);
    ASSERT_EQ(h[4], 7);
    KEEPS_1_(p.ops->memcpy(0, d0, d1, 256, INFINIRT_PLUGIN_MEMCPY_D2D));
    KEEPS_1_(p.ops->get_mem_info(0, &fr, &tot));
    KEEPS_1_(p.ops->device_synchronize(0));
    KEEPS_1_(p.ops->device_get_native(0, NULL, NULL));
    /* an application stream of device 0 */
    ASSERT_EQ(fake.cuCtxSetCurrent((CUcontext)fake.ctx(0)), CUDA_SUCCESS);
    CUstream mine = NULL;
    ASSERT_EQ(fake.cuStreamCreate(&mine, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent((CUcontext)fake.ctx(1)), CUDA_SUCCESS);
    KEEPS_1_(p.ops->stream_create_from_native(0, mine, &w));
    KEEPS_1_(p.ops->stream_destroy(0, w));
    KEEPS_1_(p.ops->event_destroy(0, e0));
    KEEPS_1_(p.ops->stream_destroy(0, s0));
    KEEPS_1_(p.ops->free_device(0, d0));
#undef KEEPS_1_
    /* A failing call restores it too. */
    ASSERT_STATUS(p.ops->malloc_device(0, &big, (size_t)65 << 20), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_EQ(fake.current_device(), 1);

    /* No current context before: none after. */
    fake.set_current(-1);
    ASSERT_OK(p.ops->free_device(1, d1));
    ASSERT_EQ(fake.current_device(), -1);

    /* The current context is the calling thread's. */
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_EQ(pthread_create(&th, NULL, set_device_2, &p), 0);
    ASSERT_EQ(pthread_join(th, &thread_ok), 0);
    ASSERT(thread_ok != NULL);
    ASSERT_EQ(fake.current_device(), 0);

    fake.set_current(0);
    ASSERT_EQ(fake.cuStreamDestroy_v2(mine), CUDA_SUCCESS);
    fake.set_current(-1);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* pointer_get_device: the plugin-local device of a pointer the loader did
 * not allocate, through `devices =`; BAD_PARAM, without a log line, for
 * host memory, unknown pointers and devices not exposed. */
int test_pointer_device(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"devices", "2,0"}};
    void *a, *b, *ph;
    int dev = -1, local = 0;
    CUcontext c1 = NULL;
    CUdeviceptr other = 0;

    CHECK(fake_open(&p, kv, 1));
    ASSERT_OK(p.ops->malloc_device(0, &a, 4096));
    ASSERT_OK(p.ops->malloc_device(1, &b, 4096));
    ASSERT_OK(p.ops->malloc_host(0, &ph, 64));
    test_log_clear();
    ASSERT_OK(p.ops->pointer_get_device(a, &dev));
    ASSERT_EQ(dev, 0);
    ASSERT_OK(p.ops->pointer_get_device((char *)b + 1000, &dev));
    ASSERT_EQ(dev, 1);
    dev = -1;
    ASSERT_STATUS(p.ops->pointer_get_device(ph, &dev), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->pointer_get_device(&local, &dev), INFINI_STATUS_BAD_PARAM);
    /* memory of CUDA device 1, which this config does not expose */
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent(c1), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&other, 256), CUDA_SUCCESS);
    ASSERT_STATUS(p.ops->pointer_get_device((void *)(uintptr_t)other, &dev), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(dev, -1);
    ASSERT_EQ(test_log_count("", NULL), 0);
    ASSERT_EQ(fake.cuMemFree_v2(other), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(1), CUDA_SUCCESS);
    fake.set_current(-1);

    ASSERT_OK(p.ops->free_host(0, ph));
    ASSERT_OK(p.ops->free_device(0, a));
    ASSERT_OK(p.ops->free_device(1, b));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* stream_create_from_native wraps the application's CUstream of the
 * device's primary context: the handle is that CUstream, infinirt work
 * goes to it, and destroying the wrapper waits for the work queued on it
 * (natively too) but leaves the stream to the application. */
int test_wrap_native(void)
{
    enum { N = 1024 };
    cuda_plugin p;
    unsigned char *h, g[N];
    CUstream mine = NULL, gone = NULL, other = NULL;
    void *w = NULL, *w2, *d, *pinned;
    int idle = -1;
    pthread_t th;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memset(0, d, 0, N));
    ASSERT_OK(p.ops->set_device(0)); /* the application's own stream, on device 0 */
    ASSERT_EQ(fake.cuStreamCreate(&mine, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_OK(p.ops->stream_create_from_native(0, mine, &w));
    ASSERT_PTR_EQ(w, mine);
    ASSERT_EQ(fake.live_streams(), 1);

    /* Native work holds the stream; infinirt's copy queues behind it.
     * Pinned memory: a pageable copy would return only once done, after
     * the gate that only this thread opens (the driver's rule). */
    ASSERT_OK(p.ops->malloc_host(0, &pinned, N));
    h = pinned;
    fill_pattern(h, N, 5);
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(mine, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_OK(p.ops->memcpy_async(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D, w));
    ASSERT_OK(p.ops->stream_query(0, w, &idle));
    ASSERT_EQ(idle, 0);
    ASSERT_EQ(pthread_create(&th, NULL, open_gate_later, (void *)(intptr_t)50), 0);
    ASSERT_OK(p.ops->stream_destroy(0, w)); /* waits for the gate and the copy */
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_EQ(fake.cuStreamQuery(mine), CUDA_SUCCESS); /* still the application's, idle */
    ASSERT_EQ(fake.live_streams(), 1);
    ASSERT_OK(p.ops->memcpy(0, g, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);

    /* Wrapped again after that; twice at once is refused. */
    ASSERT_OK(p.ops->stream_create_from_native(0, mine, &w));
    test_log_clear();
    ASSERT_STATUS(p.ops->stream_create_from_native(0, mine, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "is wrapped already"), 1);
    ASSERT_OK(p.ops->stream_destroy(0, w));

    /* Not device 1's: its context is device 0's. */
    test_log_clear();
    ASSERT_STATUS(p.ops->stream_create_from_native(1, mine, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "belongs to context"), 1);
    ASSERT_EQ(fake.current_device(), 0);
    /* A stream of device 1, wrapped on device 1, is fine. */
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_EQ(fake.cuStreamCreate(&other, 0), CUDA_SUCCESS);
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_OK(p.ops->stream_create_from_native(1, other, &w2));
    ASSERT_PTR_EQ(w2, other);
    ASSERT_EQ(fake.current_device(), 0);
    ASSERT_OK(p.ops->stream_destroy(1, w2));
    /* The special handles and a destroyed stream are refused. */
    ASSERT_STATUS(p.ops->stream_create_from_native(0, NULL, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->stream_create_from_native(0, CU_STREAM_LEGACY, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->stream_create_from_native(0, CU_STREAM_PER_THREAD, &w2), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.cuStreamCreate(&gone, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamDestroy_v2(gone), CUDA_SUCCESS);
    ASSERT_STATUS(p.ops->stream_create_from_native(0, gone, &w2), INFINI_STATUS_BAD_PARAM);

    ASSERT_EQ(fake.live_streams(), 2);
    ASSERT_EQ(fake.cuStreamDestroy_v2(mine), CUDA_SUCCESS);
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_EQ(fake.cuStreamDestroy_v2(other), CUDA_SUCCESS);
    fake.set_current(-1);
    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->free_host(0, pinned));
    CHECK(fake_close(&p));
    return TEST_OK;
}
