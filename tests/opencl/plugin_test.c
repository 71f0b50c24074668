/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_test.c - the OpenCL plugin's tests: the runner, and the entry,
 * init and config tests.  Memory tests are in plugin_test_memory.c, stream
 * and event tests in plugin_test_streams.c.
 *
 * The plugin is dlopened directly (no loader): the tests call the entry and
 * the ops as the loader would.  Usage:
 *   opencl_plugin_test NAME [PLUGIN_PATH]     run one test
 *   opencl_plugin_test all  [PLUGIN_PATH]     run every test in one process
 * The default path is the one CMake compiled in.  Exit 77 (skip) when no
 * OpenCL platform or device exists.  CLP_TEST_VERBOSE=1 echoes the plugin's
 * log to stderr.
 */
#include "plugin_harness.h"

#include <dlfcn.h>
#include <stddef.h>

int test_entry(void)
{
    const infinirtPluginOps *t = (const infinirtPluginOps *)1;

    CHECK(load_plugin());
    ASSERT_STATUS(entry(INFINIRT_PLUGIN_ABI_MAJOR + 1, 0, &t), INFINI_STATUS_DEVICE_ARCHITECTURE_NOT_SUPPORTED);
    ASSERT_PTR_EQ(t, NULL);
    ASSERT_STATUS(entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_OK(entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, &t));
    ASSERT_PTR_EQ(t, ops);
    ASSERT_EQ(t->abi_major, INFINIRT_PLUGIN_ABI_MAJOR);
    ASSERT_EQ(t->abi_minor, INFINIRT_PLUGIN_ABI_MINOR);
    ASSERT_GE(t->struct_size, INFINIRT_PLUGIN_OPS_SIZE_1_0);
    ASSERT_STR_EQ(t->name, "opencl");
    ASSERT_EQ(t->device_type, INFINI_DEVICE_OPENCL);
    /* Every 1.0 entry is implemented. */
    ASSERT(t->init && t->shutdown && t->get_device_info && t->get_mem_info && t->device_synchronize);
    ASSERT(t->stream_create && t->stream_destroy && t->stream_synchronize && t->stream_wait_event &&
           t->launch_host_func);
    ASSERT(t->event_create && t->event_destroy && t->event_record && t->event_query && t->event_synchronize &&
           t->event_elapsed_time);
    ASSERT(t->malloc_device && t->free_device && t->malloc_host && t->free_host);
    ASSERT(t->memcpy && t->memcpy_async && t->memset && t->memset_async);
    /* Nothing but the entry is exported. */
    {
        void *lib = dlopen(plugin_path, RTLD_NOW | RTLD_NOLOAD);
        ASSERT(lib != NULL);
        ASSERT(dlsym(lib, "opencl__discover") == NULL);
        ASSERT(dlsym(lib, "opencl__g") == NULL);
        dlclose(lib);
    }
    return TEST_OK;
}

int test_init_default(void)
{
    infinirtPluginDeviceInfo info;
    size_t free_b = 0, total_b = 0;

    CHECK(start(NULL));
    ASSERT_OK(ops->get_device_info(0, &info));
    ASSERT_GT(strlen(info.name), 0);
    ASSERT_STR_CONTAINS(info.description, "platform: ");
    ASSERT_STR_CONTAINS(info.description, "svm: ");
    ASSERT_STR_CONTAINS(info.description, "mode: ");
    ASSERT_GT(info.total_memory, 0);
    ASSERT_GT(info.max_alloc_size, 0);
    ASSERT_LE(info.max_alloc_size, info.total_memory);
    ASSERT_OK(ops->get_mem_info(0, &free_b, &total_b));
    ASSERT_EQ(total_b, info.total_memory);
    ASSERT_EQ(free_b, total_b); /* nothing held yet */
    ASSERT(log_contains("init: "));
    /* Unused devices have nothing to synchronise. */
    ASSERT_OK(ops->device_synchronize(0));
    ASSERT_OK(ops->stream_synchronize(0, NULL));
    stop();
    return TEST_OK;
}

/* No ICD at all: the ICD loader reads OCL_ICD_VENDORS at its first call,
 * so this needs a process that has not called OpenCL yet. */
int test_no_platform(void)
{
    char msg[512];
    int count;

    CHECK(load_plugin());
    if (cl_touched) {
        fprintf(stderr, "skip: OpenCL already initialised in this process\n");
        return TEST_SKIP;
    }
    setenv("OCL_ICD_VENDORS", "/nonexistent/infinirt-test-vendors", 1);
    ASSERT_OK(init_kv(&count, msg, sizeof msg, NULL));
    ASSERT_EQ(count, 0);
    ASSERT_STR_CONTAINS(msg, "no OpenCL platform found");
    stop();
    return TEST_OK;
}

int test_filter_gpu(void)
{
    char msg[512];
    int count;
    unsigned gpus;

    CHECK(load_plugin());
    if (cl_device_count(CL_DEVICE_TYPE_ALL) == 0)
        return TEST_SKIP;
    gpus = cl_device_count(CL_DEVICE_TYPE_GPU);
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("device_type", "gpu")));
    ASSERT_EQ(count, gpus);
    if (gpus == 0) {
        ASSERT_STR_CONTAINS(msg, "no OpenCL device matches");
        ASSERT_STR_CONTAINS(msg, "device_type = gpu");
    }
    /* A comma list: cpu and gpu together are every cpu and gpu device. */
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("device_type", " cpu , GPU ")));
    ASSERT_EQ(count, cl_device_count(CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU));
    stop();
    return TEST_OK;
}

int test_filter_platform(void)
{
    char msg[512];
    int count;

    CHECK(load_plugin());
    if (cl_device_count(CL_DEVICE_TYPE_ALL) == 0)
        return TEST_SKIP;
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("platform", "nonexistent-platform")));
    ASSERT_EQ(count, 0);
    ASSERT_STR_CONTAINS(msg, "platform = \"nonexistent-platform\"");
    stop();
    return TEST_OK;
}

/* A platform, device_type or devices filter that matches no device is a
 * warning, not only the report's reason (an info line): the config most
 * likely has a mistake. */
int test_filter_no_match_warns(void)
{
    char msg[512];
    int count;

    CHECK(load_plugin());
    if (cl_device_count(CL_DEVICE_TYPE_ALL) == 0)
        return TEST_SKIP;
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("platform", "nonexistent-platform")));
    ASSERT_EQ(count, 0);
    ASSERT(log_contains("[warn] opencl: no OpenCL device matches platform = \"nonexistent-platform\""));
    if (cl_device_count(CL_DEVICE_TYPE_ACCELERATOR) == 0) {
        ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("device_type", "accelerator")));
        ASSERT_EQ(count, 0);
        ASSERT(log_contains("[warn] opencl: no OpenCL device matches platform = \"*\", device_type = accelerator"));
    }
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("devices", "4000")));
    ASSERT_EQ(count, 0);
    ASSERT(log_contains("[warn] opencl: [plugin.opencl] devices: no listed index is below"));
    /* Without a filter a machine's devices are found: no such warning. */
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("memory", "auto")));
    ASSERT_GT(count, 0);
    ASSERT(!log_contains("[warn]"));
    stop();
    return TEST_OK;
}

int test_filter_devices(void)
{
    char msg[512];
    int count;
    infinirtPluginDeviceInfo all0, one;

    CHECK(start(NULL));
    ASSERT_OK(ops->get_device_info(0, &all0));
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("devices", "0")));
    ASSERT_EQ(count, 1);
    ASSERT_OK(ops->get_device_info(0, &one));
    ASSERT_STR_EQ(one.name, all0.name);
    ASSERT_STATUS(ops->get_device_info(1, &one), INFINI_STATUS_DEVICE_NOT_FOUND);
    /* Out of range: skipped with a warning; nothing left gives a reason. */
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("devices", "4000")));
    ASSERT_EQ(count, 0);
    ASSERT_STR_CONTAINS(msg, "devices");
    ASSERT(log_contains("index 4000 skipped"));
    stop();
    return TEST_OK;
}

int test_bad_values(void)
{
    char msg[512];
    int count;

    CHECK(load_plugin());
    /* A bad value is a warning naming the key, the value and the default
     * used instead; init goes on (one typo never takes the backend down). */
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("memory", "foo")));
    ASSERT(log_contains("[plugin.opencl] memory = 'foo': want auto, svm or buffer; using auto"));
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("device_type", "gpu,banana")));
    ASSERT(log_contains("device_type = 'gpu,banana': unknown type \"banana\""));
    ASSERT(log_contains("; using all"));
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("devices", "0,x")));
    ASSERT(log_contains("devices = '0,x': \"x\" is not a device index"));
    ASSERT(log_contains("; using every device"));
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("devices", "-1")));
    ASSERT(log_contains("devices = '-1'"));
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("devices", "")));
    ASSERT(log_contains("devices = '': empty"));
    /* Each init leaves the plugin ready for another. */
    if (cl_device_count(CL_DEVICE_TYPE_ALL) > 0) {
        ASSERT_OK(init_kv(&count, msg, sizeof msg, NULL));
        ASSERT_GE(count, 1);
    }
    stop();
    return TEST_OK;
}

int test_unknown_key(void)
{
    char msg[512];
    int count;

    CHECK(load_plugin());
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("frobnicate", "1", "library", "x.so")));
    ASSERT(log_contains("[warn] opencl: [plugin.opencl] frobnicate = '1': unknown key ignored"));
    ASSERT(!log_contains("library")); /* the loader's key */
    stop();
    return TEST_OK;
}

int test_max_alloc(void)
{
    infinirtPluginDeviceInfo info;
    char want[64];
    void *p = (void *)1;

    CHECK(start(NULL));
    ASSERT_OK(ops->get_device_info(0, &info));
    ASSERT_GT(info.max_alloc_size, 0);
    ASSERT_STATUS(ops->malloc_device(0, &p, info.max_alloc_size + 1), INFINI_STATUS_BAD_PARAM);
    snprintf(want, sizeof want, "%zu bytes", info.max_alloc_size + 1);
    ASSERT(log_contains(want));
    snprintf(want, sizeof want, "%zu bytes", info.max_alloc_size);
    ASSERT(log_contains(want));
    ASSERT(log_contains("CL_DEVICE_MAX_MEM_ALLOC_SIZE"));
    /* A zero-byte allocation is NULL and freeing NULL is a no-op. */
    ASSERT_OK(ops->malloc_device(0, &p, 0));
    ASSERT_PTR_EQ(p, NULL);
    ASSERT_OK(ops->free_device(0, NULL));
    stop();
    return TEST_OK;
}

/* ------------------------------------------------------------------- runner */

/* After each test: shut the plugin down if the test left it running. */
static int finish(int rc)
{
    stop();
    return rc;
}

/* opencl_plugin_test NAME [PLUGIN_PATH]: the runner's usage (harness/test.h),
 * and the plugin to test (the built one by default). */
int main(int argc, char **argv)
{
    static const test_case tests[] = {OPENCL_PLUGIN_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), finish, NULL, NULL};
    if (argc == 3)
        plugin_path = argv[--argc];
    main_thread = pthread_self();
    return test_main(argc, argv, &suite);
}

/* plugins/README.md, "ABI fields": init args shorter than ABI 1.0's are
 * refused, the reason in the log (the message buffer is among the missing
 * fields); args of exactly that size (a loader from before config_warnv)
 * are served. */
/* Counts the log lines about short init args (the format is enough). */
static int abi_logged;

static void abi_log_fn(int level, const char *plugin, const char *fmt, ...)
{
    (void)plugin;
    abi_logged += level == INFINIRT_PLUGIN_LOG_ERROR && strstr(fmt, "init args of") != NULL;
}

int test_abi_fields(void)
{
    char msg[512] = "";
    int count = -1;
    infinirtPluginInitArgs args = {
        .struct_size = offsetof(infinirtPluginInitArgs, message_size) + sizeof(size_t) - 1,
        .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
        .abi_minor = 0,
        .log = abi_log_fn,
        .message = msg,
        .message_size = sizeof msg,
    };

    CHECK(load_plugin());
    stop();
    cl_touched = 1;
    ASSERT_STATUS(ops->init(&args, &count), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(abi_logged, 1);
    args.struct_size++;
    ASSERT_OK(ops->init(&args, &count));
    ASSERT_GE(count, 0);
    ASSERT_STATUS(ops->get_device_info(count, &(infinirtPluginDeviceInfo){0}), INFINI_STATUS_DEVICE_NOT_FOUND);
    ops->shutdown();
    return TEST_OK;
}
