/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_harness.c - the shared part of the OpenCL plugin tests (see
 * plugin_harness.h).
 */
#include "plugin_harness.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <time.h>

#ifndef INFINIRT_OPENCL_PLUGIN
#define INFINIRT_OPENCL_PLUGIN "libinfinirt_opencl.so"
#endif

const char *plugin_path = INFINIRT_OPENCL_PLUGIN;
infinirtPluginEntryFn entry;
const infinirtPluginOps *ops;
int cl_touched;
pthread_t main_thread;
static int initialised;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[32768];

static void test_log(int level, const char *plugin, const char *fmt, ...)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    char line[1024];
    va_list ap;
    size_t len;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    len = strlen(log_text);
    snprintf(log_text + len, sizeof log_text - len, "[%s] %s: %s\n", levels[level & 3], plugin, line);
    pthread_mutex_unlock(&log_lock);
    if (getenv("CLP_TEST_VERBOSE"))
        fprintf(stderr, "[%s] %s: %s\n", levels[level & 3], plugin, line);
}

int log_contains(const char *needle)
{
    int found;

    pthread_mutex_lock(&log_lock);
    found = strstr(log_text, needle) != NULL;
    pthread_mutex_unlock(&log_lock);
    return found;
}

void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Number of OpenCL devices of a type, asked of OpenCL directly. */
unsigned cl_device_count(cl_device_type type)
{
    cl_platform_id ps[16];
    cl_uint np = 0, total = 0;

    cl_touched = 1;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS)
        return 0;
    for (cl_uint i = 0; i < np && i < 16; i++) {
        cl_uint n = 0;
        if (clGetDeviceIDs(ps[i], type, 0, NULL, &n) == CL_SUCCESS)
            total += n;
    }
    return total;
}

int load_plugin(void)
{
    void *lib;

    if (entry != NULL)
        return TEST_OK;
    lib = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        TEST_FAILED_("dlopen(%s): %s", plugin_path, dlerror());
    *(void **)&entry = dlsym(lib, INFINIRT_PLUGIN_ENTRY_NAME);
    if (entry == NULL)
        TEST_FAILED_("dlsym(%s): %s", INFINIRT_PLUGIN_ENTRY_NAME, dlerror());
    /* Never dlclosed, as the loader does. */
    ASSERT_OK(entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, &ops));
    ASSERT(ops != NULL);
    return TEST_OK;
}

void stop(void)
{
    if (initialised && ops->shutdown)
        ops->shutdown();
    initialised = 0;
}

/* Init with key/value pairs (NULL-terminated list: k1, v1, k2, v2, ..., NULL). */
infiniStatus_t init_kv(int *count, char *msg, size_t msg_size, const char *const *kv)
{
    infinirtPluginKeyValue cfg[8];
    infinirtPluginInitArgs args;
    size_t n = 0;
    infiniStatus_t st;

    stop();
    while (kv != NULL && kv[2 * n] != NULL && n < 8) {
        cfg[n].key = kv[2 * n];
        cfg[n].value = kv[2 * n + 1];
        n++;
    }
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.abi_major = INFINIRT_PLUGIN_ABI_MAJOR;
    args.abi_minor = INFINIRT_PLUGIN_ABI_MINOR;
    args.config = cfg;
    args.config_count = n;
    args.plugin_path = plugin_path;
    args.log = test_log;
    args.message = msg;
    args.message_size = msg_size;
    msg[0] = '\0';
    pthread_mutex_lock(&log_lock);
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_lock);
    *count = -1;
    cl_touched = 1;
    st = ops->init(&args, count);
    if (st == INFINI_STATUS_SUCCESS)
        initialised = 1;
    return st;
}

/* Init (optionally with keys) and require a device, or skip. */
int start(const char *const *kv)
{
    char msg[512];
    int count;

    CHECK(load_plugin());
    if (cl_device_count(CL_DEVICE_TYPE_ALL) == 0) {
        fprintf(stderr, "skip: no OpenCL device\n");
        return TEST_SKIP;
    }
    ASSERT_OK(init_kv(&count, msg, sizeof msg, kv));
    if (count < 1)
        TEST_FAILED_("init found no device: %s", msg);
    return TEST_OK;
}

void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 8)) & 0xff);
}

void block_fn(void *blocker_ptr)
{
    blocker *b = blocker_ptr;

    atomic_store(&b->entered, 1);
    atomic_store(&b->on_caller_thread, pthread_equal(pthread_self(), main_thread) != 0);
    for (int i = 0; i < 10000 && !atomic_load(&b->release); i++)
        sleep_ms(1);
}

blocker *blocker_reset(blocker *b)
{
    atomic_store(&b->entered, 0);
    atomic_store(&b->release, 0);
    atomic_store(&b->on_caller_thread, 0);
    return b;
}

/* -------------------------------------------------------------------- tests */
