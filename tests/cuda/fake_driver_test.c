/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_driver_test.c - the CUDA plugin against fake_libcuda.c, a stand-in
 * driver that runs everything on the host.  These run on every machine
 * (label "cuda") and cover what a GPU-less CI could otherwise not reach:
 * the "no device" / "driver too old" / broken-driver reasons, the config
 * keys, lazy primary contexts and their release, context switching across
 * threads, event state, memory routing and error logging; and ABI 1.1:
 * native handles, blocking streams against the legacy default stream,
 * set_device and the caller's context kept, pointer ownership, wrapped
 * application streams.
 *
 * This file holds the reasons for no device, the config keys and main; the
 * other tests are in fake_driver_context.c, fake_driver_memory.c,
 * fake_driver_native.c and fake_driver_strict.c, the helpers they share in
 * fake_driver_test.h.
 *
 * FAKE_CUDA_PATH / FAKE_CUDA_NOSYM_PATH / FAKE_CUDA_OLDSYM_PATH are the fake
 * driver builds, FAKE_NVML_PATH the fake NVML;
 * CUDA_STUB_LIBCUDA is the toolkit's link-time stub libcuda.so.
 */
#define _POSIX_C_SOURCE 200809L
#include "fake_driver_test.h"

/* ------------------------------------------------ reasons for no device */

int test_missing_library(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", "/nonexistent/libcuda.so.1"}};
    CHECK(plugin_open(&p));
    ASSERT_OK(plugin_init_kv(&p, kv, 1));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "/nonexistent/libcuda.so.1 not found (no NVIDIA driver installed): ");
    ASSERT_STR_CONTAINS(p.msg, "No such file");
    p.ops->shutdown();
    return TEST_OK;
}

int test_no_device(void)
{
    cuda_plugin p;
    CHECK(plugin_open(&p));
    ASSERT_OK(fake_init(&p, "nodevice", NULL, 0));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_EQ(p.msg, "no CUDA-capable device (cuInit: CUDA_ERROR_NO_DEVICE)");
    p.ops->shutdown();
    return TEST_OK;
}

int test_zero_devices(void)
{
    cuda_plugin p;
    setenv("FAKE_CUDA_DEVICES", "0", 1);
    CHECK(plugin_open(&p));
    ASSERT_OK(fake_init(&p, "ok", NULL, 0));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "no CUDA-capable device");
    p.ops->shutdown();
    return TEST_OK;
}

int test_driver_too_old(void)
{
    cuda_plugin p;
    CHECK(plugin_open(&p));
    ASSERT_OK(fake_init(&p, "old", NULL, 0));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "driver too old for this build: driver supports CUDA 10.2, plugin built with CUDA ");
    p.ops->shutdown();
    return TEST_OK;
}

/* A driver that is there but fails is an init failure, not "no device". */
int test_init_failure(void)
{
    cuda_plugin p;
    CHECK(plugin_open(&p));
    ASSERT_STATUS(fake_init(&p, "initfail", NULL, 0), INFINI_STATUS_DEVICE_NOT_INITIALIZED);
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "cuInit failed: CUDA_ERROR_OPERATING_SYSTEM");
    return TEST_OK;
}

int test_missing_symbol(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", FAKE_CUDA_NOSYM_PATH}};
    CHECK(plugin_open(&p));
    ASSERT_STATUS(plugin_init_kv(&p, kv, 1), INFINI_STATUS_DEVICE_NOT_INITIALIZED);
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "does not export cuMemsetD8Async");
    return TEST_OK;
}

/* The toolkit's link-time stub libcuda.so (found first on a misconfigured
 * library path) is "no driver", not a broken one. */
int test_toolkit_stub(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", CUDA_STUB_LIBCUDA}};
    FILE *f = fopen(CUDA_STUB_LIBCUDA, "rb");
    if (f == NULL) {
        fprintf(stderr, "no %s in this toolkit\n", CUDA_STUB_LIBCUDA);
        return TEST_SKIP;
    }
    fclose(f);
    CHECK(plugin_open(&p));
    ASSERT_OK(plugin_init_kv(&p, kv, 1));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "is the CUDA Toolkit's stub library, not a driver (no NVIDIA driver installed)");
    p.ops->shutdown();
    return TEST_OK;
}

/* Every versioned symbol the plugin asks for (the optional ones too) is
 * exported by this toolkit's driver interface (the stub exports exactly the real driver's names). */
int test_driver_symbols(void)
{
    void *stub = dlopen(CUDA_STUB_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    int missing = 0;
    if (stub == NULL) {
        fprintf(stderr, "no %s in this toolkit\n", CUDA_STUB_LIBCUDA);
        return TEST_SKIP;
    }
#define CHECK_SYM_(field, sym, alt, type)                                   \
    if (dlsym(stub, sym) == NULL) {                                         \
        fprintf(stderr, "%s does not export %s\n", CUDA_STUB_LIBCUDA, sym); \
        missing++;                                                          \
    }
    CUDA__DRIVER_FUNCS(CHECK_SYM_)
    CUDA__OPTIONAL_FUNCS(CHECK_SYM_)
#undef CHECK_SYM_
    ASSERT_EQ(missing, 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ config */

int test_config(void)
{
    cuda_plugin p;

    /* A malformed list is a warning with the value quoted; every device
     * is used instead (one typo never takes the backend down). */
    static const char *const bad[] = {"", "1,x", "-1", "0,,2", "0,", "99999999999"};
    CHECK(plugin_open(&p));
    CHECK(fake_bind());
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const infinirtPluginKeyValue kv[] = {{"devices", bad[i]}};
        test_log_clear();
        ASSERT_OK(fake_init(&p, "ok", kv, 1));
        ASSERT_EQ(p.count, 3);
        ASSERT_EQ(test_log_count("WARN", "not a comma-separated list of CUDA device ordinals"), 1);
        ASSERT_EQ(test_log_count("WARN", "using every device"), 1);
        CHECK(fake_close(&p));
    }

    /* An unknown key is a warning, nothing more. */
    test_log_clear();
    const infinirtPluginKeyValue unknown[] = {{"devicez", "1"}};
    CHECK(fake_bind());
    ASSERT_OK(fake_init(&p, "ok", unknown, 1));
    ASSERT_EQ(p.count, 3);
    ASSERT_EQ(test_log_count("WARN", "devicez = '1': unknown key ignored"), 1);
    CHECK(fake_close(&p));

    /* Ordinals that do not exist are skipped with a warning; when nothing
     * is left, no device and a reason. */
    test_log_clear();
    const infinirtPluginKeyValue none[] = {{"devices", "7, 5"}};
    ASSERT_OK(fake_init(&p, "ok", none, 1));
    ASSERT_EQ(p.count, 0);
    ASSERT_STR_CONTAINS(p.msg, "selects none of the 3 CUDA device(s)");
    ASSERT_EQ(test_log_count("WARN", "CUDA device 7 does not exist"), 1);
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* devices = 2, 0 exposes two devices in that order: plugin device 0 is
 * CUDA device 2, and its memory lands there. */
int test_devices_subset(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"devices", " 2 , 0,2"}};
    infinirtPluginDeviceInfo info;
    void *a, *b;

    test_log_clear();
    CHECK(fake_open(&p, kv, 1));
    ASSERT_EQ(p.count, 2);
    ASSERT_EQ(test_log_count("WARN", "CUDA device 2 listed twice"), 1);
    ASSERT_OK(p.ops->get_device_info(0, &info));
    ASSERT_STR_EQ(info.name, "Fake GPU 2");
    ASSERT_STR_CONTAINS(info.description, "compute capability 9.0, driver 13.0, 132 SMs, CUDA device 2");
    ASSERT_EQ(info.total_memory, 64 << 20);
    ASSERT_EQ(info.max_alloc_size, 0);
    ASSERT_OK(p.ops->get_device_info(1, &info));
    ASSERT_STR_EQ(info.name, "Fake GPU 0");
    ASSERT_OK(p.ops->malloc_device(0, &a, 100));
    ASSERT_OK(p.ops->malloc_device(1, &b, 100));
    ASSERT_EQ(fake.alloc_device(a), 2);
    ASSERT_EQ(fake.alloc_device(b), 0);
    ASSERT_OK(p.ops->free_device(0, a));
    ASSERT_OK(p.ops->free_device(1, b));
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* get_device_uuid names the GPU behind each device, whatever id `devices =`
 * gives it, without creating a context; a driver that cannot tell means no
 * UUID. */
int test_device_uuid(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"devices", "2,0"}};
    char want[64], got[64];

    CHECK(fake_open(&p, kv, 1));
    ASSERT(p.ops->get_device_uuid != NULL);
    ASSERT_GE(p.ops->struct_size, INFINIRT_PLUGIN_OPS_SIZE_1_3);
    fake_gpu_uuid_string(2, want, sizeof want);
    ASSERT_OK(p.ops->get_device_uuid(0, got, sizeof got));
    ASSERT_STR_EQ(got, want);
    fake_gpu_uuid_string(0, want, sizeof want);
    ASSERT_OK(p.ops->get_device_uuid(1, got, sizeof got));
    ASSERT_STR_EQ(got, want);
    ASSERT_EQ(strlen(got), 40); /* "GPU-" and 36 */
    for (int d = 0; d < 3; d++)
        ASSERT_EQ(fake.refcount(d), 0);
    setenv("FAKE_CUDA_NO_UUID", "1", 1);
    ASSERT_STATUS(p.ops->get_device_uuid(0, got, sizeof got), INFINI_STATUS_NOT_IMPLEMENTED);
    unsetenv("FAKE_CUDA_NO_UUID");
    CHECK(fake_close(&p));
    return TEST_OK;
}

/* The ABI fields every plugin handles the same way (plugins/README.md,
 * "ABI fields"): init args shorter than ABI 1.0's are refused, with the
 * reason in the log; args of exactly that size (a loader from before
 * config_warnv) are served; a device index outside [0, count) is
 * DEVICE_NOT_FOUND from every entry that starts from one. */
int test_abi_fields(void)
{
    cuda_plugin p;
    const infinirtPluginKeyValue kv[] = {{"driver_library", FAKE_CUDA_PATH}};
    infinirtPluginInitArgs args = {
        .struct_size = offsetof(infinirtPluginInitArgs, message_size) + sizeof(size_t) - 1,
        .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
        .abi_minor = 0,
        .config = kv,
        .config_count = 1,
        .plugin_path = INFINIRT_CUDA_PLUGIN_PATH,
        .log = test_log,
        .message = p.msg,
        .message_size = sizeof p.msg,
    };
    infinirtPluginDeviceInfo info;
    infinirtPluginUtilization util;
    size_t fr, tot;
    void *a, *b;
    char uuid[64];

    CHECK(plugin_open(&p));
    CHECK(fake_bind());
    setenv("FAKE_CUDA_MODE", "ok", 1);
    test_log_clear();
    ASSERT_STATUS(p.ops->init(&args, &p.count), INFINI_STATUS_BAD_PARAM);
    ASSERT_STR_CONTAINS(test_log_buf, "init args of");
    args.struct_size++;
    ASSERT_OK(p.ops->init(&args, &p.count));
    ASSERT_EQ(p.count, 3);
    for (int dev = -1; dev <= 3; dev += 4) {
        ASSERT_STATUS(p.ops->get_device_info(dev, &info), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->get_mem_info(dev, &fr, &tot), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->device_synchronize(dev), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->device_get_native(dev, &a, &b), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->set_device(dev), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->get_device_uuid(dev, uuid, sizeof uuid), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->get_utilization(dev, &util), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->malloc_device(dev, &a, 64), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(p.ops->stream_create(dev, &a), INFINI_STATUS_DEVICE_NOT_FOUND);
    }
    CHECK(fake_close(&p));
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {CUDA_FAKE_DRIVER_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
