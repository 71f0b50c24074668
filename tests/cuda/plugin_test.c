/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_test.c - tests of libinfinirt_cuda.so against the real driver,
 * loaded straight from its file (no loader).
 *
 * handshake and init run everywhere (label "cuda"): on a machine without
 * the driver, init must succeed with no device and say why.  The gpu_*
 * tests (label "gpu") need an NVIDIA GPU and exit 77 (skip) without one.
 *
 * This file holds handshake, init, the GPU tests of device info and memory,
 * and main; the GPU tests of streams, events and threads are in
 * plugin_gpu_streams.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "plugin_test.h"

/* ------------------------------------------------------------ everywhere */

int test_handshake(void)
{
    infinirtPluginEntryFn entry;
    const infinirtPluginOps *ops = (const infinirtPluginOps *)1;
    void *dl = dlopen(INFINIRT_CUDA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    void *sym;

    if (dl == NULL)
        TEST_FAILED_("dlopen(%s): %s", INFINIRT_CUDA_PLUGIN_PATH, dlerror());
    sym = dlsym(dl, INFINIRT_PLUGIN_ENTRY_NAME);
    ASSERT(sym != NULL);
    memcpy(&entry, &sym, sizeof sym);
    /* Internal names stay hidden: only the entry is exported. */
    ASSERT(dlsym(dl, "cuda__drv") == NULL);
    ASSERT(dlsym(dl, "cuda__enter") == NULL);

    ASSERT_STATUS(entry(INFINIRT_PLUGIN_ABI_MAJOR + 1, 0, &ops), INFINI_STATUS_DEVICE_ARCHITECTURE_NOT_SUPPORTED);
    ASSERT_PTR_EQ(ops, NULL);
    ASSERT_STATUS(entry(INFINIRT_PLUGIN_ABI_MAJOR, 0, NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_OK(entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, &ops));
    ASSERT(ops != NULL);
    ASSERT_EQ(ops->abi_major, INFINIRT_PLUGIN_ABI_MAJOR);
    ASSERT_EQ(ops->abi_minor, INFINIRT_PLUGIN_ABI_MINOR);
    ASSERT_GE(ops->struct_size, INFINIRT_PLUGIN_OPS_SIZE_1_0);
    ASSERT_STR_EQ(ops->name, "cuda");
    ASSERT_EQ(ops->device_type, INFINI_DEVICE_NVIDIA);
    /* Every 1.0 entry is implemented. */
    const void *const entries[] = {
        (const void *)ops->init,
        (const void *)ops->shutdown,
        (const void *)ops->get_device_info,
        (const void *)ops->get_mem_info,
        (const void *)ops->device_synchronize,
        (const void *)ops->stream_create,
        (const void *)ops->stream_destroy,
        (const void *)ops->stream_synchronize,
        (const void *)ops->stream_wait_event,
        (const void *)ops->launch_host_func,
        (const void *)ops->event_create,
        (const void *)ops->event_destroy,
        (const void *)ops->event_record,
        (const void *)ops->event_query,
        (const void *)ops->event_synchronize,
        (const void *)ops->event_elapsed_time,
        (const void *)ops->malloc_device,
        (const void *)ops->free_device,
        (const void *)ops->malloc_host,
        (const void *)ops->free_host,
        (const void *)ops->memcpy,
        (const void *)ops->memcpy_async,
        (const void *)ops->memset,
        (const void *)ops->memset_async,
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        ASSERT(entries[i] != NULL);
    /* ABI 1.1: all but mem_get_native (memory is addressable). */
    ASSERT_GE(ops->struct_size, INFINIRT_PLUGIN_OPS_SIZE_1_1);
    const void *const entries_1_1[] = {
        (const void *)ops->stream_get_native,
        (const void *)ops->event_get_native,
        (const void *)ops->stream_create_with_flags,
        (const void *)ops->stream_create_from_native,
        (const void *)ops->stream_query,
        (const void *)ops->device_get_native,
        (const void *)ops->set_device,
        (const void *)ops->pointer_get_device,
    };
    for (size_t i = 0; i < sizeof entries_1_1 / sizeof entries_1_1[0]; i++)
        ASSERT(entries_1_1[i] != NULL);
    ASSERT(ops->mem_get_native == NULL);
    return TEST_OK;
}

/* Init with the system's driver.  Without libcuda.so.1 (our CI) it must
 * succeed with 0 devices and name the driver library; with a driver and a
 * GPU it must find the GPU. */
int test_init(void)
{
    cuda_plugin p;
    void *driver;

    CHECK(plugin_open(&p));
    ASSERT_OK(plugin_init(&p));
    fprintf(stderr, "device_count = %d, message = \"%s\"\n", p.count, p.msg);
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == NULL) {
        ASSERT_EQ(p.count, 0);
        ASSERT_STR_CONTAINS(p.msg, "libcuda.so.1 not found (no NVIDIA driver installed)");
    } else {
        /* A driver is installed: the plugin serves every device the driver
         * counts (no `devices` key here), or, with none, init says why. */
        typedef int (*init_fn)(unsigned);
        typedef int (*count_fn)(int *);
        init_fn cu_init;
        count_fn cu_count;
        void *f = dlsym(driver, "cuInit"), *g = dlsym(driver, "cuDeviceGetCount");
        int n = 0;
        ASSERT(f != NULL && g != NULL);
        memcpy(&cu_init, &f, sizeof f);
        memcpy(&cu_count, &g, sizeof g);
        if (cu_init(0) != 0 || cu_count(&n) != 0)
            n = 0;
        ASSERT_EQ(p.count, n);
        if (n == 0)
            ASSERT(p.msg[0] != '\0');
    }
    p.ops->shutdown();
    return TEST_OK;
}

/* ------------------------------------------------------------ GPU tests */

int test_gpu_device_info(void)
{
    cuda_plugin p;
    CHECK(gpu_open(&p));
    for (int dev = 0; dev < p.count; dev++) {
        infinirtPluginDeviceInfo info;
        size_t free_b = 0, total_b = 0;
        ASSERT_OK(p.ops->get_device_info(dev, &info));
        fprintf(stderr, "device %d: %s, %s, %zu bytes\n", dev, info.name, info.description, info.total_memory);
        ASSERT(info.name[0] != '\0');
        ASSERT_STR_CONTAINS(info.description, "compute capability");
        ASSERT_GT(info.total_memory, 0);
        ASSERT_EQ(info.max_alloc_size, 0);
        ASSERT_OK(p.ops->get_mem_info(dev, &free_b, &total_b));
        ASSERT_GT(total_b, 0);
        ASSERT_LE(free_b, total_b);
        ASSERT_OK(p.ops->device_synchronize(dev));
    }
    p.ops->shutdown();
    return TEST_OK;
}

int test_gpu_malloc_free(void)
{
    cuda_plugin p;
    void *d = (void *)1, *big = NULL;
    size_t free_b, total_b;

    CHECK(gpu_open(&p));
    for (int dev = 0; dev < p.count; dev++) {
        ASSERT_OK(p.ops->malloc_device(dev, &d, 1 << 20));
        ASSERT(d != NULL);
        ASSERT_OK(p.ops->free_device(dev, d));
        ASSERT_OK(p.ops->malloc_device(dev, &d, 0));
        ASSERT_PTR_EQ(d, NULL);
        ASSERT_OK(p.ops->free_device(dev, NULL));
    }
    /* Larger than the device: OUT_OF_MEMORY, so the loader can retry. */
    ASSERT_OK(p.ops->get_mem_info(0, &free_b, &total_b));
    test_log_clear();
    ASSERT_STATUS(p.ops->malloc_device(0, &big, total_b * 2), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_EQ(test_log_count("cuMemAlloc_v2", "CUDA_ERROR_OUT_OF_MEMORY"), 1);
    p.ops->shutdown();
    return TEST_OK;
}

int test_gpu_memcpy(void)
{
    enum { N = (1 << 20) + 13 };
    cuda_plugin p;
    unsigned char *a, *b, *c;
    void *d1, *d2, *s;

    CHECK(gpu_open(&p));
    a = malloc(N);
    b = malloc(N);
    c = malloc(N);
    ASSERT(a && b && c);
    fill_pattern(a, N, 1);
    ASSERT_OK(p.ops->malloc_device(0, &d1, N));
    ASSERT_OK(p.ops->malloc_device(0, &d2, N));

    /* Synchronous, every kind. */
    ASSERT_OK(p.ops->memcpy(0, d1, a, N, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_OK(p.ops->memcpy(0, d2, d1, N, INFINIRT_PLUGIN_MEMCPY_D2D));
    memset(b, 0, N);
    ASSERT_OK(p.ops->memcpy(0, b, d2, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, N);
    memset(c, 0, N);
    ASSERT_OK(p.ops->memcpy(0, c, a, N, INFINIRT_PLUGIN_MEMCPY_H2H));
    ASSERT_MEM_EQ(a, c, N);

    /* Interior pointers of a raw allocation, as the loader's allocator
     * passes them. */
    fill_pattern(b, N, 2);
    ASSERT_OK(p.ops->memcpy(0, (char *)d1 + 100, b + 7, 1000, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_OK(p.ops->memcpy(0, (char *)d2 + 5000, (char *)d1 + 100, 1000, INFINIRT_PLUGIN_MEMCPY_D2D));
    memset(c, 0, N);
    ASSERT_OK(p.ops->memcpy(0, c, (char *)d2 + 5000, 1000, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(c, b + 7, 1000);
    ASSERT_OK(p.ops->memcpy(0, c, d1, 100, INFINIRT_PLUGIN_MEMCPY_D2H)); /* bytes before: untouched */
    ASSERT_MEM_EQ(c, a, 100);

    /* Asynchronous, every kind, on a created stream and on the NULL stream. */
    ASSERT_OK(p.ops->stream_create(0, &s));
    for (int k = 0; k < 2; k++) {
        void *st = k == 0 ? s : NULL;
        fill_pattern(a, N, 10 + k);
        memset(b, 0, N);
        memset(c, 0, N);
        ASSERT_OK(p.ops->memcpy_async(0, d1, a, N, INFINIRT_PLUGIN_MEMCPY_H2D, st));
        ASSERT_OK(p.ops->memcpy_async(0, d2, d1, N, INFINIRT_PLUGIN_MEMCPY_D2D, st));
        ASSERT_OK(p.ops->memcpy_async(0, b, d2, N, INFINIRT_PLUGIN_MEMCPY_D2H, st));
        ASSERT_OK(p.ops->memcpy_async(0, c, a, N, INFINIRT_PLUGIN_MEMCPY_H2H, st));
        ASSERT_OK(p.ops->stream_synchronize(0, st));
        ASSERT_MEM_EQ(a, b, N);
        ASSERT_MEM_EQ(a, c, N);
    }
    ASSERT_OK(p.ops->stream_destroy(0, s));

    /* A synchronous copy is ordered after work queued on the default
     * stream, as cudaMemcpy is after stream-0 work. */
    fill_pattern(a, N, 20);
    ASSERT_OK(p.ops->memcpy_async(0, d1, a, N, INFINIRT_PLUGIN_MEMCPY_H2D, NULL));
    ASSERT_OK(p.ops->memcpy(0, b, d1, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(a, b, N);

    /* D2D between devices: issued on the destination's device. */
    if (p.count >= 2) {
        void *e;
        ASSERT_OK(p.ops->malloc_device(1, &e, N));
        ASSERT_OK(p.ops->memcpy(1, e, d1, N, INFINIRT_PLUGIN_MEMCPY_D2D));
        memset(c, 0, N);
        ASSERT_OK(p.ops->memcpy(1, c, e, N, INFINIRT_PLUGIN_MEMCPY_D2H));
        ASSERT_MEM_EQ(a, c, N);
        ASSERT_OK(p.ops->free_device(1, e));
    } else {
        fprintf(stderr, "one device: cross-device copy not tested\n");
    }

    ASSERT_STATUS(p.ops->memcpy(0, b, d1, 16, 7), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(p.ops->free_device(0, d1));
    ASSERT_OK(p.ops->free_device(0, d2));
    p.ops->shutdown();
    free(a);
    free(b);
    free(c);
    return TEST_OK;
}

int test_gpu_memset(void)
{
    enum { N = 3 << 20 };
    cuda_plugin p;
    unsigned char *h, *want;
    void *d, *s;

    CHECK(gpu_open(&p));
    h = malloc(N);
    want = malloc(N);
    ASSERT(h && want);
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memset(0, d, 0xAB, N));
    ASSERT_OK(p.ops->memset(0, (char *)d + 10, 0x11, 100));
    memset(want, 0xAB, N);
    memset(want + 10, 0x11, 100);
    ASSERT_OK(p.ops->memcpy(0, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(h, want, N);

    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->memset_async(0, (char *)d + 1, 0x1FF, N - 2, s)); /* (unsigned char)0x1FF = 0xFF */
    ASSERT_OK(p.ops->memset_async(0, d, 0x00, 1, NULL));
    ASSERT_OK(p.ops->stream_synchronize(0, s));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    memset(want + 1, 0xFF, N - 2);
    want[0] = 0;
    ASSERT_OK(p.ops->memcpy(0, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(h, want, N);
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->free_device(0, d));
    p.ops->shutdown();
    free(h);
    free(want);
    return TEST_OK;
}

int test_gpu_pinned_host(void)
{
    enum { N = 16 << 20 };
    cuda_plugin p;
    void *a, *b, *d, *z = (void *)1;

    CHECK(gpu_open(&p));
    ASSERT_OK(p.ops->malloc_host(0, &a, N));
    ASSERT_OK(p.ops->malloc_host(p.count - 1, &b, N));
    ASSERT(a != NULL && b != NULL);
    ASSERT_OK(p.ops->malloc_host(0, &z, 0));
    ASSERT_PTR_EQ(z, NULL);
    fill_pattern(a, N, 5);
    memset(b, 0, N);
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memcpy_async(0, d, a, N, INFINIRT_PLUGIN_MEMCPY_H2D, NULL));
    ASSERT_OK(p.ops->memcpy_async(0, b, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, NULL));
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_MEM_EQ(a, b, N);
    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->free_host(0, a));
    ASSERT_OK(p.ops->free_host(p.count - 1, b));
    p.ops->shutdown();
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {CUDA_PLUGIN_LIST(TEST_ENTRY) CUDA_PLUGIN_GPU_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
