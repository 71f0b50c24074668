/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_driver_strict.c - cuda_fake_driver_test: the strict fake driver's own
 * rules (pageable copies, host functions, the context stack, primary reset,
 * stream destroy, sticky errors, deinit), and the plugin under them.
 */
#define _POSIX_C_SOURCE 200809L
#include "fake_driver_test.h"

/* ------------------------------------------ the strict fake's own rules */
/* Each rule the strict fake adds (fake_libcuda.c), checked on the fake
 * itself, so that it cannot slip back to the lenient behaviour unnoticed.
 * Every ctest entry sets FAKE_CUDA_STRICT=1; these set it themselves too. */

static CUdeviceptr dptr(void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

/* Rule: an async copy touching pageable memory returns after it has
 * completed, so after the gate before it; a pinned one returns at once. */
int test_strict_pageable_copy(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    unsigned char *page = malloc(N), *pinned = NULL, want[N];
    void *d;
    CUstream s;
    pthread_t th;

    ASSERT(page != NULL);
    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    fill_pattern(want, N, 9);
    ASSERT_OK(p.ops->memcpy(0, d, want, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_EQ(fake.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

    /* D2H into malloc'd memory behind a gate another thread opens. */
    memset(page, 0, N);
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_EQ(pthread_create(&th, NULL, open_gate_later, (void *)(intptr_t)100), 0);
    ASSERT_EQ(fake.cuMemcpyAsync(dptr(page), dptr(d), N, s), CUDA_SUCCESS);
    ASSERT_EQ(atomic_load(&gate_open_flag), 1); /* it waited for the gate */
    ASSERT_MEM_EQ(page, want, N);               /* and the copy is done */
    ASSERT_EQ(pthread_join(th, NULL), 0);

    /* H2D from malloc'd memory: the source is read before the call
     * returns, without waiting for the gate queued before it (a real
     * driver stages it), so it may be reused at once. */
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, gate_wait, NULL), CUDA_SUCCESS);
    fill_pattern(page, N, 10);
    memcpy(want, page, N);
    ASSERT_EQ(fake.cuMemcpyAsync(dptr(d), dptr(page), N, s), CUDA_SUCCESS);
    ASSERT_EQ(atomic_load(&gate_open_flag), 0); /* it did not wait */
    memset(page, 0xee, N);
    atomic_store(&gate_open_flag, 1);
    ASSERT_EQ(fake.cuStreamSynchronize(s), CUDA_SUCCESS);
    memset(page, 0, N);
    ASSERT_OK(p.ops->memcpy(0, page, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(page, want, N);

    /* Pinned memory: the copy is queued behind the gate, returns at once. */
    ASSERT_EQ(fake.cuMemHostAlloc((void **)&pinned, N, 0), CUDA_SUCCESS);
    memset(pinned, 0, N);
    atomic_store(&gate_open_flag, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemcpyAsync(dptr(pinned), dptr(d), N, s), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    atomic_store(&gate_open_flag, 1);
    ASSERT_EQ(fake.cuStreamSynchronize(s), CUDA_SUCCESS);
    ASSERT_MEM_EQ(pinned, want, N);
    ASSERT_EQ(fake.cuMemFreeHost(pinned), CUDA_SUCCESS);

    ASSERT_EQ(fake.cuStreamDestroy_v2(s), CUDA_SUCCESS);
    ASSERT_OK(p.ops->free_device(0, d));
    free(page);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: host functions run one at a time across streams, and a driver call
 * from inside one is refused with CUDA_ERROR_NOT_PERMITTED. */
static atomic_int hf_running, hf_max;
static _Atomic CUresult hf_calls[3];
static void hf_probe(void *arg)
{
    int now = atomic_fetch_add(&hf_running, 1) + 1;
    int seen = atomic_load(&hf_max);
    while (now > seen && !atomic_compare_exchange_weak(&hf_max, &seen, now))
        ;
    if (arg != NULL) {
        CUcontext c;
        int n;
        atomic_store(&hf_calls[0], fake.cuCtxGetCurrent(&c));
        atomic_store(&hf_calls[1], fake.cuStreamQuery((CUstream)arg));
        atomic_store(&hf_calls[2], fake.cuDeviceGetCount(&n));
    }
    struct timespec ts = {0, 30 * 1000000L};
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&hf_running, 1);
}

int test_strict_host_functions(void)
{
    cuda_plugin p;
    CUstream s[4];

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->set_device(0));
    int refusals = fake.host_fn_refusals();
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fake.cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fake.cuLaunchHostFunc(s[i], hf_probe, i == 0 ? (void *)s[1] : NULL), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fake.cuStreamSynchronize(s[i]), CUDA_SUCCESS);
    ASSERT_EQ(atomic_load(&hf_max), 1);
    ASSERT_EQ(fake.host_fn_max_concurrent(), 1);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(atomic_load(&hf_calls[i]), CUDA_ERROR_NOT_PERMITTED);
    ASSERT_EQ(fake.host_fn_refusals() - refusals, 3);
    /* Outside a host function the same calls work. */
    ASSERT_EQ(fake.cuStreamQuery(s[1]), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fake.cuStreamDestroy_v2(s[i]), CUDA_SUCCESS);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: cuCtxSetCurrent replaces the top of the thread's context stack
 * (NULL pops it); cuCtxPushCurrent / cuCtxPopCurrent push and pop. */
int test_strict_ctx_stack(void)
{
    cuda_plugin p;
    CUcontext c[3], got = NULL;

    CHECK(strict_open(&p));
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c[i], i), CUDA_SUCCESS);
    fake.set_current(-1);
    ASSERT_EQ(fake.ctx_stack_depth(), 0);
    ASSERT_EQ(fake.cuCtxPushCurrent_v2(c[0]), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxPushCurrent_v2(c[1]), CUDA_SUCCESS);
    ASSERT_EQ(fake.ctx_stack_depth(), 2);
    ASSERT_EQ(fake.cuCtxSetCurrent(c[2]), CUDA_SUCCESS); /* replaces c[1] */
    ASSERT_EQ(fake.ctx_stack_depth(), 2);
    ASSERT_EQ(fake.current_device(), 2);
    ASSERT_EQ(fake.cuCtxPopCurrent_v2(&got), CUDA_SUCCESS);
    ASSERT_PTR_EQ(got, c[2]);
    ASSERT_EQ(fake.current_device(), 0);                 /* c[0] under it, not c[1] */
    ASSERT_EQ(fake.cuCtxSetCurrent(NULL), CUDA_SUCCESS); /* pops c[0] */
    ASSERT_EQ(fake.ctx_stack_depth(), 0);
    ASSERT_EQ(fake.current_device(), -1);
    ASSERT_EQ(fake.cuCtxPopCurrent_v2(&got), CUDA_ERROR_INVALID_CONTEXT);
    ASSERT_EQ(fake.cuCtxSetCurrent(c[1]), CUDA_SUCCESS); /* empty: pushes */
    ASSERT_EQ(fake.ctx_stack_depth(), 1);
    fake.set_current(-1);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(i), CUDA_SUCCESS);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: the last release of a primary context resets it: its streams,
 * events and allocations are gone, and a new retain starts afresh. */
int test_strict_primary_reset(void)
{
    cuda_plugin p;
    CUcontext c;
    CUstream s;
    CUevent e;
    CUdeviceptr d;
    void *h;

    CHECK(strict_open(&p));
    int allocs = fake.live_allocs(), events = fake.live_events();
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c, 2), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent(c), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamCreate(&s, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuEventCreate(&e, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&d, 1024), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemHostAlloc(&h, 1024, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.live_allocs(), allocs + 2);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(2), CUDA_SUCCESS);
    ASSERT_EQ(fake.refcount(2), 0);
    ASSERT_EQ(fake.live_allocs(), allocs);
    ASSERT_EQ(fake.live_events(), events);
    ASSERT_EQ(fake.live_streams(), 0);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c, 2), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(fake.cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(fake.cuMemFree_v2(d), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(fake.cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
    fake.set_current(-1);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(2), CUDA_SUCCESS);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: cuStreamDestroy returns at once with work queued; the handle is
 * invalid at once and the work still completes. */
static atomic_int after_gate_ran;
static void after_gate(void *arg)
{
    (void)arg;
    atomic_store(&after_gate_ran, 1);
}

int test_strict_stream_destroy(void)
{
    cuda_plugin p;
    CUstream s;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_EQ(fake.cuStreamCreate(&s, 0), CUDA_SUCCESS);
    atomic_store(&gate_open_flag, 0);
    atomic_store(&after_gate_ran, 0);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, gate_wait, NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuLaunchHostFunc(s, after_gate, NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamDestroy_v2(s), CUDA_SUCCESS); /* gate still shut */
    ASSERT_EQ(atomic_load(&after_gate_ran), 0);
    ASSERT_EQ(fake.cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(fake.live_streams(), 0);
    atomic_store(&gate_open_flag, 1);
    ASSERT_EQ(fake.cuCtxSynchronize(), CUDA_SUCCESS); /* waits for it too */
    ASSERT_EQ(atomic_load(&after_gate_ran), 1);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: a sticky error breaks its context only, for every later call,
 * until the context's last release resets it. */
int test_strict_sticky(void)
{
    cuda_plugin p;
    CUcontext c0, c1;
    CUstream s;
    CUdeviceptr d;

    CHECK(strict_open(&p));
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent(c0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuStreamCreate(&s, 0), CUDA_SUCCESS);
    fake.inject_sticky(0, CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&d, 256), CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuStreamQuery(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuStreamSynchronize(NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    ASSERT_EQ(fake.cuStreamDestroy_v2(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    /* Another context is unaffected. */
    ASSERT_EQ(fake.cuCtxSetCurrent(c1), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&d, 256), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemFree_v2(d), CUDA_SUCCESS);
    /* The last release resets device 0's context. */
    ASSERT_EQ(fake.cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuCtxSetCurrent(c0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemAlloc_v2(&d, 256), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuMemFree_v2(d), CUDA_SUCCESS);
    fake.set_current(-1);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    ASSERT_EQ(fake.cuDevicePrimaryCtxRelease_v2(1), CUDA_SUCCESS);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Rule: after the driver's teardown every call is DEINITIALIZED; the
 * plugin then fails calls cleanly and shuts down without an error log. */
int test_strict_deinit(void)
{
    cuda_plugin p;
    void *d = NULL;
    int n = -1;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->malloc_device(0, &d, 256));
    fake.unload();
    ASSERT_EQ(fake.cuDeviceGetCount(&n), CUDA_ERROR_DEINITIALIZED);
    test_log_clear();
    void *d2 = NULL;
    ASSERT(p.ops->malloc_device(0, &d2, 256) != INFINI_STATUS_SUCCESS);
    ASSERT_PTR_EQ(d2, NULL);
    ASSERT_EQ(test_log_count("ERROR", "CUDA_ERROR_DEINITIALIZED"), 1);
    test_log_clear();
    p.ops->shutdown();
    ASSERT_EQ(test_log_count("ERROR", NULL), 0);
    return TEST_OK;
}

/* ------------------------------ the plugin under the strict fake's rules */

/* The plugin makes no driver call from inside a host function: its host
 * functions are the caller's, passed straight to cuLaunchHostFunc. */
static atomic_int plugin_hf_calls;
static void plugin_hf(void *arg)
{
    (void)arg;
    atomic_fetch_add(&plugin_hf_calls, 1);
}

int test_strict_plugin_host_fn(void)
{
    cuda_plugin p;
    void *s, *nb;

    CHECK(strict_open(&p));
    int refusals = fake.host_fn_refusals();
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create_with_flags(1, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    atomic_store(&plugin_hf_calls, 0);
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(p.ops->launch_host_func(0, s, plugin_hf, NULL));
        ASSERT_OK(p.ops->launch_host_func(1, nb, plugin_hf, NULL));
        ASSERT_OK(p.ops->launch_host_func(0, NULL, plugin_hf, NULL));
    }
    ASSERT_OK(p.ops->stream_synchronize(0, s));
    ASSERT_OK(p.ops->stream_synchronize(1, nb));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_EQ(atomic_load(&plugin_hf_calls), 12);
    ASSERT_EQ(fake.host_fn_refusals(), refusals);
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(1, nb));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* cuStreamDestroy returns at once; the plugin's stream_destroy still
 * returns only after the stream's work (the ABI's promise). */
int test_strict_plugin_stream_destroy(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    void *s, *d, *h;
    unsigned char want[N];
    pthread_t th;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->malloc_host(0, &h, N));
    fill_pattern(want, N, 4);
    ASSERT_OK(p.ops->memcpy(0, d, want, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    memset(h, 0, N);
    ASSERT_OK(p.ops->stream_create(0, &s));
    atomic_store(&gate_open_flag, 0);
    ASSERT_OK(p.ops->launch_host_func(0, s, gate_wait, NULL));
    ASSERT_OK(p.ops->memcpy_async(0, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, s));
    ASSERT_EQ(pthread_create(&th, NULL, open_gate_later, (void *)(intptr_t)50), 0);
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_MEM_EQ(h, want, N); /* the queued copy is done */
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_EQ(fake.live_streams(), 0);
    ASSERT_OK(p.ops->free_host(0, h));
    ASSERT_OK(p.ops->free_device(0, d));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* After a sticky error every call on that device fails, each with the
 * "unusable" log line; other devices go on; shutdown still releases. */
int test_strict_plugin_sticky(void)
{
    const char *unusable = "the device's CUDA context is unusable until the process restarts";
    cuda_plugin p;
    void *s, *d = NULL, *e;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->event_create(0, 0, &e));
    fake.inject_sticky(0, CUDA_ERROR_ILLEGAL_ADDRESS);
    test_log_clear();
    ASSERT(p.ops->stream_synchronize(0, s) != INFINI_STATUS_SUCCESS);
    ASSERT(p.ops->malloc_device(0, &d, 256) != INFINI_STATUS_SUCCESS);
    ASSERT_PTR_EQ(d, NULL);
    ASSERT(p.ops->event_record(0, e, s) != INFINI_STATUS_SUCCESS);
    ASSERT_EQ(test_log_count("ERROR device 0", unusable), 3);
    ASSERT_EQ(test_log_count("CUDA_ERROR_ILLEGAL_ADDRESS", NULL), 3);
    /* Device 1 is another context. */
    ASSERT_OK(p.ops->malloc_device(1, &d, 256));
    ASSERT_OK(p.ops->free_device(1, d));
    /* The broken context's handles cannot be destroyed; shutdown releases
     * the context, which resets it. */
    ASSERT(p.ops->stream_destroy(0, s) != INFINI_STATUS_SUCCESS);
    ASSERT(p.ops->event_destroy(0, e) != INFINI_STATUS_SUCCESS);
    p.ops->shutdown();
    for (int dv = 0; dv < 8; dv++)
        ASSERT_EQ(fake.refcount(dv), 0);
    ASSERT_EQ(fake.live_streams(), 0);
    ASSERT_EQ(fake.live_events(), 0);
    return TEST_OK;
}

/* Shutdown releases the primary contexts, which resets them: memory from
 * before is gone, and a later plugin refuses it with a clear error
 * rather than touching it. */
int test_strict_plugin_reset(void)
{
    cuda_plugin p;
    void *d = NULL;

    CHECK(strict_open(&p));
    ASSERT_OK(p.ops->malloc_device(0, &d, 256));
    ASSERT_EQ(fake.live_allocs(), 1);
    p.ops->shutdown();
    ASSERT_EQ(fake.refcount(0), 0);
    ASSERT_EQ(fake.live_allocs(), 0);
    ASSERT_OK(fake_init(&p, "ok", NULL, 0));
    test_log_clear();
    ASSERT_STATUS(p.ops->free_device(0, d), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", NULL), 1);
    CHECK(fake_close(&p));
    return TEST_OK;
}
