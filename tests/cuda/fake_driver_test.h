/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_driver_test.h - what the files of cuda_fake_driver_test share: the
 * fake driver's inspection functions, opening the plugin on it and closing
 * it, the gate host function that holds a stream, and the list of tests.
 *
 * Every helper is static: each file of the program has its own copy, as it
 * has its own log capture (cuda_test_util.h), and a test only ever uses the
 * copies of its own file.
 */
#ifndef INFINIRT_CUDA_FAKE_DRIVER_TEST_H_
#define INFINIRT_CUDA_FAKE_DRIVER_TEST_H_

#include <cuda.h> /* flag values only */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "cuda_internal.h" /* the plugin's driver symbol table */
#include "cuda_test_util.h"
#include "fake_driver_list.h"
#include "fake_gpu_ids.h"

CUDA_FAKE_DRIVER_LIST(TEST_DECLARE)

/* The fake's inspection functions, found in the same loaded copy the
 * plugin uses (dlopen of the same path returns the same handle). */
static struct {
    int (*refcount)(int);
    int (*live_streams)(void);
    int (*live_events)(void);
    int (*live_allocs)(void);
    int (*alloc_device)(const void *);
    int (*alloc_ctx)(const void *);
    unsigned (*host_flags)(const void *);
    unsigned (*stream_flags)(const void *);
    unsigned (*last_event_flags)(void);
    int (*wait_event_calls)(void);
    int (*elapsed_calls)(int);
    void (*set_current)(int);
    int (*current_device)(void);
    void *(*ctx)(int);
    int (*set_current_calls)(void);
    void *(*last_stream)(void);
    void (*inject_sync_error)(CUresult);
    int (*peer_enabled)(int, int);
    int (*peer_copies)(void);
    int (*staged_copies)(void);
    int (*peer_faults)(void);
    int (*strict)(void);
    void (*inject_sticky)(int, CUresult);
    void (*unload)(void);
    int (*host_fn_max_concurrent)(void);
    int (*host_fn_refusals)(void);
    int (*ctx_stack_depth)(void);
    /* driver entries, called as the application would call them */
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuStreamGetCtx)(CUstream, CUcontext *);
    CUresult (*cuStreamQuery)(CUstream);
    CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn, void *);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventQuery)(CUevent);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuCtxPushCurrent_v2)(CUcontext);
    CUresult (*cuCtxPopCurrent_v2)(CUcontext *);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuDeviceGetCount)(int *);
} fake;

static inline int fake_bind(void)
{
    void *dl = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL)
        TEST_FAILED_("dlopen(%s): %s", FAKE_CUDA_PATH, dlerror());
#define BIND_(field)                               \
    do {                                           \
        void *s_ = dlsym(dl, "fake_cuda_" #field); \
        ASSERT(s_ != NULL);                        \
        memcpy(&fake.field, &s_, sizeof s_);       \
    } while (0)
    BIND_(refcount);
    BIND_(live_streams);
    BIND_(live_events);
    BIND_(live_allocs);
    BIND_(alloc_device);
    BIND_(alloc_ctx);
    BIND_(host_flags);
    BIND_(stream_flags);
    BIND_(last_event_flags);
    BIND_(wait_event_calls);
    BIND_(elapsed_calls);
    BIND_(set_current);
    BIND_(current_device);
    BIND_(ctx);
    BIND_(set_current_calls);
    BIND_(last_stream);
    BIND_(inject_sync_error);
    BIND_(peer_enabled);
    BIND_(peer_copies);
    BIND_(staged_copies);
    BIND_(peer_faults);
    BIND_(strict);
    BIND_(inject_sticky);
    BIND_(unload);
    BIND_(host_fn_max_concurrent);
    BIND_(host_fn_refusals);
    BIND_(ctx_stack_depth);
#undef BIND_
#define BIND_CU_(field)                      \
    do {                                     \
        void *s_ = dlsym(dl, #field);        \
        ASSERT(s_ != NULL);                  \
        memcpy(&fake.field, &s_, sizeof s_); \
    } while (0)
    BIND_CU_(cuGetErrorName);
    BIND_CU_(cuCtxGetCurrent);
    BIND_CU_(cuCtxEnablePeerAccess);
    BIND_CU_(cuCtxSetCurrent);
    BIND_CU_(cuDevicePrimaryCtxRetain);
    BIND_CU_(cuDevicePrimaryCtxRelease_v2);
    BIND_CU_(cuStreamCreate);
    BIND_CU_(cuStreamDestroy_v2);
    BIND_CU_(cuStreamGetCtx);
    BIND_CU_(cuStreamQuery);
    BIND_CU_(cuLaunchHostFunc);
    BIND_CU_(cuEventRecord);
    BIND_CU_(cuEventQuery);
    BIND_CU_(cuMemAlloc_v2);
    BIND_CU_(cuMemFree_v2);
    BIND_CU_(cuCtxPushCurrent_v2);
    BIND_CU_(cuCtxPopCurrent_v2);
    BIND_CU_(cuCtxSynchronize);
    BIND_CU_(cuMemcpyAsync);
    BIND_CU_(cuMemHostAlloc);
    BIND_CU_(cuMemFreeHost);
    BIND_CU_(cuEventCreate);
    BIND_CU_(cuStreamSynchronize);
    BIND_CU_(cuDeviceGetCount);
#undef BIND_CU_
    return TEST_OK;
}

/* Open the plugin and init it on the fake driver in `mode`, with extra
 * config pairs. */
static inline infiniStatus_t fake_init(cuda_plugin *p, const char *mode, const infinirtPluginKeyValue *extra,
                                       size_t n)
{
    infinirtPluginKeyValue kv[8] = {{"driver_library", FAKE_CUDA_PATH}};
    for (size_t i = 0; i < n && i < 7; i++)
        kv[i + 1] = extra[i];
    setenv("FAKE_CUDA_MODE", mode, 1);
    return plugin_init_kv(p, kv, n + 1);
}

/* Open, bind and init in mode "ok"; fails the test unless init succeeds. */
static inline int fake_open(cuda_plugin *p, const infinirtPluginKeyValue *extra, size_t n)
{
    CHECK(plugin_open(p));
    CHECK(fake_bind());
    ASSERT_OK(fake_init(p, "ok", extra, n));
    return TEST_OK;
}

static atomic_int gate_timeouts;

/* Shutdown leaves nothing behind in the driver, and no gate timed out. */
static inline int fake_close(cuda_plugin *p)
{
    ASSERT_EQ(atomic_load(&gate_timeouts), 0);
    p->ops->shutdown();
    for (int d = 0; d < 8; d++)
        ASSERT_EQ(fake.refcount(d), 0);
    ASSERT_EQ(fake.live_streams(), 0);
    return TEST_OK;
}

static int host_fn_calls;
static inline void count_call(void *arg)
{
    host_fn_calls += (int)(intptr_t)arg;
}

/* A host function that holds its stream until the test opens the gate.
 * It gives up after 20 s, so a test whose opener is blocked (a copy of
 * pageable memory queued behind the gate, which the strict fake, like the
 * real driver, returns only after it completes) fails in fake_close
 * instead of hanging. */
static atomic_int gate_open_flag;
static inline void gate_wait(void *arg)
{
    struct timespec ms = {0, 1000000};
    int i;
    (void)arg;
    for (i = 0; i < 20000 && !atomic_load(&gate_open_flag); i++)
        nanosleep(&ms, NULL);
    if (i == 20000)
        atomic_fetch_add(&gate_timeouts, 1);
}

static inline void sleep_ms_fn(void *arg)
{
    struct timespec ts = {0, (long)(intptr_t)arg * 1000000L};
    nanosleep(&ts, NULL);
}

static inline void *open_gate_later(void *arg)
{
    sleep_ms_fn(arg);
    atomic_store(&gate_open_flag, 1);
    return NULL;
}

static inline int strict_open(cuda_plugin *p)
{
    setenv("FAKE_CUDA_STRICT", "1", 1);
    CHECK(fake_open(p, NULL, 0));
    ASSERT_EQ(fake.strict(), 1);
    return TEST_OK;
}

#endif
