/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_driver_memory.c - cuda_fake_driver_test: memory routing, pinned host
 * memory, memory info with and without NVML, peer access, error logging and
 * the driver's error states.
 */
#define _POSIX_C_SOURCE 200809L
#include "fake_driver_test.h"

/* ------------------------------------------------------------- memory */

int test_memory(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    unsigned char h[N], g[N];
    void *d, *e, *z = (void *)1, *ph, *s;

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &z, 0));
    ASSERT_PTR_EQ(z, NULL);
    ASSERT_OK(p.ops->free_device(0, NULL));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->malloc_device(1, &e, N));
    fill_pattern(h, N, 9);
    ASSERT_OK(p.ops->memcpy(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_OK(p.ops->memcpy(1, e, d, N, INFINIRT_PLUGIN_MEMCPY_D2D)); /* across devices */
    ASSERT_OK(p.ops->memset(1, (char *)e + 10, 0x1EE, 20));           /* interior; value as a byte */
    ASSERT_OK(p.ops->memcpy(1, g, e, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    memset(h + 10, 0xEE, 20);
    ASSERT_MEM_EQ(g, h, N);
    ASSERT_OK(p.ops->stream_create(1, &s));
    ASSERT_OK(p.ops->memset_async(1, e, 0, N, s));
    ASSERT_OK(p.ops->memcpy_async(1, (char *)e + 1, h, 100, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(p.ops->stream_synchronize(1, s));
    ASSERT_OK(p.ops->memcpy_async(1, g, e, N, INFINIRT_PLUGIN_MEMCPY_D2H, NULL));
    ASSERT_OK(p.ops->stream_synchronize(1, NULL));
    ASSERT_EQ(g[0], 0);
    ASSERT_MEM_EQ(g + 1, h, 100);
    ASSERT_OK(p.ops->stream_destroy(1, s));
    memset(g, 0, N);
    ASSERT_OK(p.ops->memcpy(2, g, h, N, INFINIRT_PLUGIN_MEMCPY_H2H));
    ASSERT_MEM_EQ(g, h, N);
    memset(g, 0, N);
    ASSERT_OK(p.ops->memcpy_async(2, g, h, 64, INFINIRT_PLUGIN_MEMCPY_H2H, NULL));
    ASSERT_MEM_EQ(g, h, 64);
    ASSERT_STATUS(p.ops->memcpy(0, g, d, N, 4), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->memcpy_async(0, g, d, N, -1, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(p.ops->memcpy(0, g, d, 0, INFINIRT_PLUGIN_MEMCPY_D2H));

    /* Pinned host memory is portable across contexts. */
    ASSERT_OK(p.ops->malloc_host(2, &ph, 1000));
    ASSERT_EQ(fake.host_flags(ph), CU_MEMHOSTALLOC_PORTABLE);
    ASSERT_OK(p.ops->free_host(2, ph));

    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->free_device(1, e));
    ASSERT_EQ(fake.live_allocs(), 0);
    CHECK(fake_close(&p));
    return TEST_OK;
}

typedef struct {
    const infinirtPluginOps *ops;
    void *ptr;
    infiniStatus_t st;
    int current; /* the thread's current device afterwards */
} host_arg;

static void *malloc_host_thread(void *arg)
{
    host_arg *t = arg;
    t->st = t->ops->malloc_host(0, &t->ptr, 512);
    t->current = fake.current_device();
    return NULL;
}

static void *free_host_thread(void *arg)
{
    host_arg *t = arg;
    t->st = t->ops->free_host(0, t->ptr);
    t->current = fake.current_device();
    return NULL;
}

/* Pinned host memory goes through a context the process has already (the
 * loader asks with device 0 whatever the application uses): a process that
 * only uses device 1 never retains device 0's primary context for it. */
int test_pinned_host_device(void)
{
    cuda_plugin p;
    void *a, *b, *c, *d;
    pthread_t th;
    host_arg t;

    CHECK(fake_open(&p, NULL, 0));
    /* Nothing used yet: device 0, as asked. */
    ASSERT_OK(p.ops->malloc_host(0, &a, 512));
    ASSERT_EQ(fake.alloc_ctx(a), 0);
    ASSERT_EQ(fake.refcount(0), 1);
    ASSERT_OK(p.ops->free_host(0, a));
    CHECK(fake_close(&p));

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->set_device(1));
    ASSERT_OK(p.ops->malloc_device(1, &d, 256));
    /* The calling thread's current device. */
    ASSERT_OK(p.ops->malloc_host(0, &a, 512));
    ASSERT_EQ(fake.alloc_ctx(a), 1);
    ASSERT_EQ(fake.host_flags(a), CU_MEMHOSTALLOC_PORTABLE);
    ASSERT_EQ(fake.current_device(), 1);
    /* A thread with no current context: the first device in use; it still
     * has none afterwards. */
    t = (host_arg){p.ops, NULL, INFINI_STATUS_INTERNAL_ERROR, -2};
    ASSERT_EQ(pthread_create(&th, NULL, malloc_host_thread, &t), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(t.st);
    ASSERT_EQ(fake.alloc_ctx(t.ptr), 1);
    ASSERT_EQ(t.current, -1);
    b = t.ptr;
    /* Device 2 chosen on this thread: through it. */
    ASSERT_OK(p.ops->set_device(2));
    ASSERT_OK(p.ops->malloc_host(0, &c, 512));
    ASSERT_EQ(fake.alloc_ctx(c), 2);
    /* A context that is not a primary context we retained (the application
     * made device 0's current itself): not used. */
    fake.set_current(0);
    ASSERT_OK(p.ops->free_host(0, c));
    ASSERT_EQ(fake.current_device(), 0);
    fake.set_current(-1);
    /* Freed from another thread, with no context current. */
    t = (host_arg){p.ops, b, INFINI_STATUS_INTERNAL_ERROR, -2};
    ASSERT_EQ(pthread_create(&th, NULL, free_host_thread, &t), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(t.st);
    ASSERT_EQ(t.current, -1);
    ASSERT_OK(p.ops->free_host(0, a));
    ASSERT_EQ(fake.refcount(0), 0);
    ASSERT_EQ(fake.live_allocs(), 1);
    ASSERT_OK(p.ops->free_device(1, d));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Memory figures of a device whose context the plugin has not retained
 * come from NVML (matched by UUID), so listing every device's memory
 * creates no context; once the context exists, or when NVML cannot tell,
 * the driver answers. */
int test_mem_info_nvml(void)
{
    const infinirtPluginKeyValue kv[] = {{"nvml_library", FAKE_NVML_PATH}};
    cuda_plugin p;
    size_t fr = 0, tot = 0;
    void *d;

    unsetenv("FAKE_CUDA_NO_UUID");
    CHECK(fake_open(&p, kv, 1));
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(p.ops->get_mem_info(i, &fr, &tot));
        ASSERT_EQ(tot, 64u << 20);
        ASSERT_EQ(fr, (64u << 20) - ((size_t)(i + 1) << 20)); /* the fake NVML's figure for CUDA device i */
        ASSERT_EQ(fake.refcount(i), 0);
    }
    /* The context exists: the driver's exact figure. */
    ASSERT_OK(p.ops->malloc_device(1, &d, 4096));
    ASSERT_OK(p.ops->get_mem_info(1, &fr, &tot));
    ASSERT_EQ(fr, (64u << 20) - 4096);
    ASSERT_OK(p.ops->free_device(1, d));
    /* Found by PCI bus id only (a MIG instance's UUID is not NVML's "GPU-"
     * spelling, and its bus id names the whole GPU): the driver. */
    setenv("FAKE_CUDA_NO_UUID", "1", 1);
    ASSERT_OK(p.ops->get_mem_info(2, &fr, &tot));
    ASSERT_EQ(fr, 64u << 20);
    ASSERT_EQ(fake.refcount(2), 1);
    unsetenv("FAKE_CUDA_NO_UUID");
    ASSERT_EQ(fake.refcount(0), 0);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Without NVML the driver answers, through the device's context. */
int test_mem_info_no_nvml(void)
{
    const infinirtPluginKeyValue kv[] = {{"nvml_library", "/nonexistent/libnvidia-ml.so.1"}};
    cuda_plugin p;
    size_t fr = 0, tot = 0;

    CHECK(fake_open(&p, kv, 1));
    ASSERT_OK(p.ops->get_mem_info(2, &fr, &tot));
    ASSERT_EQ(tot, 64u << 20);
    ASSERT_EQ(fr, 64u << 20);
    ASSERT_EQ(fake.refcount(2), 1);
    ASSERT_EQ(fake.refcount(0), 0);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Peer access (FAKE_CUDA_PEER=0>1,1>0: devices 0 and 1 reach each other,
 * device 2 neither): a D2D copy between two devices enables the copying
 * context's access to the other one's memory where it can, and then goes
 * directly; where it cannot, it is staged and still right.  A fill of
 * another device's memory is refused unless peer access makes it valid. */
int test_peer_access(void)
{
    enum { N = 4096 };
    cuda_plugin p;
    unsigned char h[N], g[N];
    void *m[3], *s0, *s1;

    setenv("FAKE_CUDA_PEER", "0>1,1>0", 1);
    CHECK(fake_open(&p, NULL, 0));
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(p.ops->malloc_device(i, &m[i], N));
        ASSERT_OK(p.ops->memset(i, m[i], 0, N));
    }
    ASSERT_OK(p.ops->stream_create(0, &s0));
    ASSERT_OK(p.ops->stream_create(1, &s1));
    fill_pattern(h, N, 4);
    ASSERT_OK(p.ops->memcpy(0, m[0], h, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_EQ(fake.peer_enabled(1, 0), 0); /* lazily: nothing yet */

    /* The application enabled 0 -> 1 itself: already enabled is success. */
    ASSERT_OK(p.ops->set_device(0));
    ASSERT_EQ(fake.cuCtxEnablePeerAccess((CUcontext)fake.ctx(1), 0), CUDA_SUCCESS);
    fake.set_current(-1);

    test_log_clear();
    ASSERT_OK(p.ops->memcpy_async(1, m[1], m[0], N, INFINIRT_PLUGIN_MEMCPY_D2D, s1)); /* 1 reads 0's */
    ASSERT_OK(p.ops->stream_synchronize(1, s1));
    ASSERT_EQ(fake.peer_enabled(1, 0), 1);
    ASSERT_OK(p.ops->memcpy(0, m[0], m[1], N, INFINIRT_PLUGIN_MEMCPY_D2D)); /* 0 reads 1's */
    ASSERT_EQ(fake.peer_copies(), 2);
    ASSERT_EQ(fake.staged_copies(), 0);
    ASSERT_EQ(test_log_count("", NULL), 0);
    ASSERT_OK(p.ops->memcpy(1, g, m[1], N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);

    /* Device 2 reaches nobody: staged, right, one info line per pair. */
    ASSERT_OK(p.ops->memcpy(2, m[2], m[0], N, INFINIRT_PLUGIN_MEMCPY_D2D));
    ASSERT_OK(p.ops->memcpy(2, m[2], m[0], N, INFINIRT_PLUGIN_MEMCPY_D2D));
    ASSERT_EQ(fake.staged_copies(), 2);
    ASSERT_EQ(fake.peer_enabled(2, 0), 0);
    ASSERT_EQ(test_log_count("INFO", "device 2 cannot access device 0's memory directly"), 1);
    ASSERT_EQ(test_log_count("ERROR", NULL), 0);
    ASSERT_OK(p.ops->memcpy(2, g, m[2], N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);

    /* Fills: device 1's memory on a stream of device 0 is valid (peer
     * access); device 2's is refused before the driver is asked. */
    ASSERT_OK(p.ops->memset_async(0, m[1], 0x33, 16, s0));
    ASSERT_OK(p.ops->stream_synchronize(0, s0));
    ASSERT_OK(p.ops->memcpy(1, g, m[1], 16, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(g[0], 0x33);
    ASSERT_EQ(g[15], 0x33);
    test_log_clear();
    ASSERT_STATUS(p.ops->memset_async(0, m[2], 0x44, 16, s0), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "memset_async of"), 1);
    ASSERT_EQ(test_log_count("ERROR", "device 0 cannot access it (no peer access between them)"), 1);
    ASSERT_STATUS(p.ops->memset(1, m[2], 0x44, 16), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(p.ops->memset_async(2, m[0], 0x44, 16, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.peer_faults(), 0);
    ASSERT_OK(p.ops->memcpy(2, g, m[2], N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N); /* untouched */

    ASSERT_OK(p.ops->stream_destroy(0, s0));
    ASSERT_OK(p.ops->stream_destroy(1, s1));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(p.ops->free_device(i, m[i]));
    CHECK(fake_close(&p));
    ASSERT_EQ(fake.peer_enabled(1, 0), 0); /* gone with the contexts */
    return TEST_OK;
}

/* No pair can reach another: every cross-device copy is staged and right,
 * every cross-device fill refused, and no peer access is attempted. */
int test_peer_none(void)
{
    enum { N = 1024 };
    cuda_plugin p;
    unsigned char h[N], g[N];
    void *a, *b;

    setenv("FAKE_CUDA_PEER", "none", 1);
    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->malloc_device(0, &a, N));
    ASSERT_OK(p.ops->malloc_device(1, &b, N));
    fill_pattern(h, N, 8);
    ASSERT_OK(p.ops->memcpy(0, a, h, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_OK(p.ops->memcpy(1, b, a, N, INFINIRT_PLUGIN_MEMCPY_D2D));
    ASSERT_OK(p.ops->memcpy_async(0, a, b, N, INFINIRT_PLUGIN_MEMCPY_D2D, NULL));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_EQ(fake.staged_copies(), 2);
    ASSERT_EQ(fake.peer_copies(), 0);
    ASSERT_OK(p.ops->memcpy(0, g, a, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(g, h, N);
    ASSERT_STATUS(p.ops->memset_async(0, b, 1, N, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(fake.peer_faults(), 0);
    ASSERT_OK(p.ops->free_device(0, a));
    ASSERT_OK(p.ops->free_device(1, b));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* A failed CUDA call gives the mapped status and one log line naming the
 * call and the CUDA error. */
int test_errors(void)
{
    cuda_plugin p;
    void *d = NULL;
    char bogus[16];

    CHECK(fake_open(&p, NULL, 0));
    test_log_clear();
    ASSERT_STATUS(p.ops->malloc_device(0, &d, (size_t)65 << 20), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_EQ(test_log_count("cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY", NULL), 1);
    ASSERT_EQ(test_log_count("WARN device 0: cuMemAlloc_v2", NULL), 1);
    ASSERT_STATUS(p.ops->free_device(1, bogus), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR device 1: cuMemFree_v2 failed: CUDA_ERROR_INVALID_VALUE", NULL), 1);
    ASSERT_STATUS(p.ops->free_host(1, bogus), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "cuMemFreeHost failed"), 1);
    ASSERT_EQ(test_log_count("", NULL), 3); /* and nothing else */
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* Refusals and capture errors are INVALID_STATE; an error after which the
 * context is corrupt says so in its log line, and only such an error. */
int test_error_states(void)
{
    static const CUresult sticky[] = {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED,
                                      CUDA_ERROR_ECC_UNCORRECTABLE};
    static const CUresult refused[] = {CUDA_ERROR_NOT_PERMITTED,
                                       CUDA_ERROR_ILLEGAL_STATE,
                                       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                                       CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                                       CUDA_ERROR_STREAM_CAPTURE_MERGE,
                                       CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                                       CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                                       CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                                       CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                                       CUDA_ERROR_CAPTURED_EVENT,
                                       CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD};
    const char *unusable = "the device's CUDA context is unusable until the process restarts";
    cuda_plugin p;
    void *s;
    char want[128];

    CHECK(fake_open(&p, NULL, 0));
    ASSERT_OK(p.ops->stream_create(1, &s));
    for (size_t i = 0; i < sizeof sticky / sizeof sticky[0]; i++) {
        const char *name = NULL;
        ASSERT_EQ(fake.cuGetErrorName(sticky[i], &name), CUDA_SUCCESS);
        test_log_clear();
        fake.inject_sync_error(sticky[i]);
        ASSERT_STATUS(p.ops->stream_synchronize(1, s), INFINI_STATUS_INTERNAL_ERROR);
        snprintf(want, sizeof want, "ERROR device 1: cuStreamSynchronize failed: %s (", name);
        ASSERT_EQ(test_log_count(want, unusable), 1);
        ASSERT_EQ(test_log_count("", NULL), 1);
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        test_log_clear();
        fake.inject_sync_error(refused[i]);
        ASSERT_STATUS(p.ops->stream_synchronize(1, NULL), INFINI_STATUS_INVALID_STATE);
        ASSERT_EQ(test_log_count("ERROR device 1: cuStreamSynchronize failed: CUDA_ERROR_", NULL), 1);
        ASSERT_EQ(test_log_count(unusable, NULL), 0);
    }
    /* Ordinary failures are not sticky. */
    test_log_clear();
    void *d = NULL;
    ASSERT_STATUS(p.ops->malloc_device(1, &d, (size_t)65 << 20), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_STATUS(p.ops->free_device(1, &d), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("failed: CUDA_ERROR_", NULL), 2);
    ASSERT_EQ(test_log_count(unusable, NULL), 0);
    ASSERT_OK(p.ops->stream_destroy(1, s));
    CHECK(fake_close(&p));
    return TEST_OK;
}
