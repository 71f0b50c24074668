/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_plugin.c - a plugin that wraps another one (the CPU plugin in the
 * tests) and fails on demand, for the fault-injection tests
 * (fault_tests.c).  It serves INFINI_DEVICE_KUNLUN, so a config may load it
 * beside the real plugins.
 *
 * [plugin.fault] keys:
 *   inner = PATH   the plugin wrapped; required.  Every other key is passed
 *                  on to the inner plugin's init (memory_limit, devices).
 *
 * The environment variable FAULT_OMIT=op,op,... (entry names as in
 * infinirtPluginOps: event_query, stream_destroy, ...) leaves those entries
 * NULL in the table handed to the loader, as a vendor's table missing them
 * would.  It is read when the library is loaded, before the loader asks for
 * the table.
 *
 * Run-time control, for tests (a test plugin may export more than a real
 * one; dlopen(path, RTLD_NOW | RTLD_NOLOAD) + dlsym reach it):
 *   fault_set(op, mode, n, status)  op fails with `status`: FAULT_OFF,
 *                                   FAULT_ALWAYS, or FAULT_NTH (the n-th call
 *                                   from now, once);
 *   fault_fail_nth_any(n, status)   the n-th call from now of any entry
 *                                   (0: off);
 *   fault_calls(op)                 calls of op so far (NULL: of every entry);
 *   fault_reset()                   every fault off;
 *   fault_hook(op, fn, arg)         fn(arg) runs once, right after the next
 *                                   successful call of op returns from the
 *                                   inner plugin (before the loader sees it
 *                                   return): a test's way to act at an
 *                                   exact point inside a loader call.
 * Failing calls do nothing else: they never reach the inner plugin, so a
 * failed free or destroy leaves the object where it was (kept reachable
 * here, as a device still holding it would).  Thread-safe.
 */
#define _GNU_SOURCE
#include "infinirt_plugin.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_plugin.h"

#define FAULT_EXPORT __attribute__((visibility("default")))

enum {
#define X(op) OP_##op,
    FAULT_OPS(X)
#undef X
        OP_COUNT
};

static const char *const k_names[OP_COUNT] = {
#define X(op) #op,
    FAULT_OPS(X)
#undef X
};

static const infinirtPluginOps *g_inner;
static atomic_long g_calls[OP_COUNT];
static atomic_int g_mode[OP_COUNT];
static atomic_long g_left[OP_COUNT]; /* FAULT_NTH: calls until the failing one */
static atomic_int g_status[OP_COUNT];
static atomic_long g_any_left;
static atomic_int g_any_status;
static _Atomic(fault_hook_fn) g_hook[OP_COUNT];
static _Atomic(void *) g_hook_arg[OP_COUNT];

/* Objects whose failed free or destroy left them alive: reachable from
 * here, so a leak checker sees what the device would still hold. */
#define STRANDED_MAX 4096
static void *volatile g_stranded[STRANDED_MAX]; /* volatile: stores never read must stay */
static atomic_int g_nstranded;

static int op_index(const char *name)
{
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(name, k_names[i]) == 0)
            return i;
    return -1;
}

/* Take one from *left when positive; true when that was the last one. */
static bool count_down(atomic_long *left)
{
    long v = atomic_load(left);
    while (v > 0 && !atomic_compare_exchange_weak(left, &v, v - 1))
        ;
    return v == 1;
}

/* Count a call of op; a nonzero status when it is to fail. */
static infiniStatus_t hit(int op)
{
    atomic_fetch_add(&g_calls[op], 1);
    if (count_down(&g_any_left))
        return (infiniStatus_t)atomic_load(&g_any_status);
    switch (atomic_load(&g_mode[op])) {
    case FAULT_ALWAYS:
        return (infiniStatus_t)atomic_load(&g_status[op]);
    case FAULT_NTH:
        if (count_down(&g_left[op]))
            return (infiniStatus_t)atomic_load(&g_status[op]);
        break;
    default:
        break;
    }
    return INFINI_STATUS_SUCCESS;
}

static void strand(void *obj)
{
    int i = atomic_fetch_add(&g_nstranded, 1);
    if (i < STRANDED_MAX)
        g_stranded[i] = obj;
}

/* ------------------------------------------------------------ control */

FAULT_EXPORT int fault_set(const char *op, int mode, long n, int status)
{
    int i = op_index(op);
    if (i < 0 || (mode == FAULT_NTH && n <= 0))
        return -1;
    atomic_store(&g_mode[i], FAULT_OFF);
    atomic_store(&g_status[i], status);
    atomic_store(&g_left[i], mode == FAULT_NTH ? n : 0);
    atomic_store(&g_mode[i], mode);
    return 0;
}

FAULT_EXPORT void fault_fail_nth_any(long n, int status)
{
    atomic_store(&g_any_status, status);
    atomic_store(&g_any_left, n > 0 ? n : 0);
}

FAULT_EXPORT long fault_calls(const char *op)
{
    if (op == NULL) {
        long sum = 0;
        for (int i = 0; i < OP_COUNT; i++)
            sum += atomic_load(&g_calls[i]);
        return sum;
    }
    int i = op_index(op);
    return i < 0 ? -1 : atomic_load(&g_calls[i]);
}

FAULT_EXPORT void fault_reset(void)
{
    atomic_store(&g_any_left, 0);
    for (int i = 0; i < OP_COUNT; i++) {
        atomic_store(&g_mode[i], FAULT_OFF);
        atomic_store(&g_hook[i], NULL);
    }
}

FAULT_EXPORT int fault_hook(const char *op, fault_hook_fn fn, void *arg)
{
    int i = op_index(op);
    if (i < 0)
        return -1;
    atomic_store(&g_hook_arg[i], arg);
    atomic_store(&g_hook[i], fn);
    return 0;
}

/* After a successful call of op: its hook, once. */
static infiniStatus_t after(int op, infiniStatus_t st)
{
    if (st == INFINI_STATUS_SUCCESS && atomic_load_explicit(&g_hook[op], memory_order_relaxed) != NULL) {
        fault_hook_fn fn = atomic_exchange(&g_hook[op], NULL);
        if (fn != NULL)
            fn(atomic_load(&g_hook_arg[op]));
    }
    return st;
}

/* ------------------------------------------------------------ the wrapper */

static infiniStatus_t fault_init(const infinirtPluginInitArgs *args, int *device_count)
{
    const char *inner = NULL;
    for (size_t i = 0; i < args->config_count; i++)
        if (strcmp(args->config[i].key, "inner") == 0)
            inner = args->config[i].value;
    if (inner == NULL) {
        snprintf(args->message, args->message_size, "no key inner = PATH of the plugin to wrap");
        return INFINI_STATUS_BAD_PARAM;
    }
    /* Local: the inner plugin's entry must not be found in place of ours. */
    void *dl = dlopen(inner, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        snprintf(args->message, args->message_size, "dlopen %s: %s", inner, dlerror());
        return INFINI_STATUS_BAD_PARAM;
    }
    infinirtPluginEntryFn entry;
    void *sym = dlsym(dl, INFINIRT_PLUGIN_ENTRY_NAME);
    memcpy(&entry, &sym, sizeof entry);
    if (sym == NULL ||
        entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, &g_inner) != INFINI_STATUS_SUCCESS ||
        g_inner == NULL) {
        snprintf(args->message, args->message_size, "%s has no usable entry", inner);
        return INFINI_STATUS_BAD_PARAM;
    }
    /* The inner plugin's own keys only; it would warn about ours. */
    infinirtPluginKeyValue *kv = calloc(args->config_count + 1, sizeof *kv);
    if (kv == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    size_t n = 0;
    for (size_t i = 0; i < args->config_count; i++)
        if (strcmp(args->config[i].key, "inner") != 0)
            kv[n++] = args->config[i];
    infinirtPluginInitArgs a = *args;
    a.config = kv;
    a.config_count = n;
    infiniStatus_t st = g_inner->init(&a, device_count);
    free(kv);
    return st;
}

static void fault_shutdown(void)
{
    if (g_inner != NULL && g_inner->shutdown != NULL)
        g_inner->shutdown();
}

/* Fail when told to, else forward to the inner plugin. */
#define FORWARD(op, ...)                                 \
    do {                                                 \
        infiniStatus_t st_ = hit(OP_##op);               \
        if (st_ != INFINI_STATUS_SUCCESS)                \
            return st_;                                  \
        return after(OP_##op, g_inner->op(__VA_ARGS__)); \
    } while (0)

/* The same for frees and destroys: a failed one leaves obj alive. */
#define FORWARD_RELEASE(op, obj, ...)       \
    do {                                    \
        infiniStatus_t st_ = hit(OP_##op);  \
        if (st_ != INFINI_STATUS_SUCCESS) { \
            strand(obj);                    \
            return st_;                     \
        }                                   \
        return g_inner->op(__VA_ARGS__);    \
    } while (0)

static infiniStatus_t f_get_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    FORWARD(get_device_info, dev, info);
}
static infiniStatus_t f_get_mem_info(int dev, size_t *f, size_t *t)
{
    FORWARD(get_mem_info, dev, f, t);
}
static infiniStatus_t f_device_synchronize(int dev)
{
    FORWARD(device_synchronize, dev);
}
static infiniStatus_t f_stream_create(int dev, void **s)
{
    FORWARD(stream_create, dev, s);
}
static infiniStatus_t f_stream_create_with_flags(int dev, uint32_t flags, void **s)
{
    FORWARD(stream_create_with_flags, dev, flags, s);
}
static infiniStatus_t f_stream_destroy(int dev, void *s)
{
    FORWARD_RELEASE(stream_destroy, s, dev, s);
}
static infiniStatus_t f_stream_synchronize(int dev, void *s)
{
    FORWARD(stream_synchronize, dev, s);
}
static infiniStatus_t f_stream_wait_event(int dev, void *s, void *e)
{
    FORWARD(stream_wait_event, dev, s, e);
}
static infiniStatus_t f_launch_host_func(int dev, void *s, infinirtPluginHostFn fn, void *u)
{
    FORWARD(launch_host_func, dev, s, fn, u);
}
static infiniStatus_t f_event_create(int dev, uint32_t flags, void **e)
{
    FORWARD(event_create, dev, flags, e);
}
static infiniStatus_t f_event_destroy(int dev, void *e)
{
    FORWARD_RELEASE(event_destroy, e, dev, e);
}
static infiniStatus_t f_event_record(int dev, void *e, void *s)
{
    FORWARD(event_record, dev, e, s);
}
static infiniStatus_t f_event_query(int dev, void *e, int *done)
{
    FORWARD(event_query, dev, e, done);
}
static infiniStatus_t f_event_synchronize(int dev, void *e)
{
    FORWARD(event_synchronize, dev, e);
}
static infiniStatus_t f_event_elapsed_time(int dev, float *ms, void *a, void *b)
{
    FORWARD(event_elapsed_time, dev, ms, a, b);
}
static infiniStatus_t f_malloc_device(int dev, void **p, size_t n)
{
    FORWARD(malloc_device, dev, p, n);
}
static infiniStatus_t f_free_device(int dev, void *p)
{
    FORWARD_RELEASE(free_device, p, dev, p);
}
static infiniStatus_t f_malloc_host(int dev, void **p, size_t n)
{
    FORWARD(malloc_host, dev, p, n);
}
static infiniStatus_t f_free_host(int dev, void *p)
{
    FORWARD_RELEASE(free_host, p, dev, p);
}
static infiniStatus_t f_memcpy(int dev, void *dst, const void *src, size_t n, int kind)
{
    FORWARD(memcpy, dev, dst, src, n, kind);
}
static infiniStatus_t f_memcpy_async(int dev, void *dst, const void *src, size_t n, int kind, void *s)
{
    FORWARD(memcpy_async, dev, dst, src, n, kind, s);
}
static infiniStatus_t f_memset(int dev, void *p, int v, size_t n)
{
    FORWARD(memset, dev, p, v, n);
}
static infiniStatus_t f_memset_async(int dev, void *p, int v, size_t n, void *s)
{
    FORWARD(memset_async, dev, p, v, n, s);
}

static infiniStatus_t f_stream_query(int dev, void *s, int *idle)
{
    FORWARD(stream_query, dev, s, idle);
}
static infiniStatus_t f_device_query(int dev, int *idle)
{
    if (g_inner->struct_size < INFINIRT_PLUGIN_OPS_SIZE_1_6 || g_inner->device_query == NULL)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    FORWARD(device_query, dev, idle);
}

/* The inner plugin's flags only with FAULT_DONE_AT_RETURN=1 (read at each
 * call, which is once per device when the plugin starts): the fault tests
 * exercise the loader's fences, which a device whose work is done at
 * return never gets. */
static infiniStatus_t f_get_device_flags(int dev, uint32_t *flags)
{
    const char *env = getenv("FAULT_DONE_AT_RETURN");
    if (env == NULL || strcmp(env, "1") != 0 || g_inner->struct_size < INFINIRT_PLUGIN_OPS_SIZE_1_5 ||
        g_inner->get_device_flags == NULL)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    return g_inner->get_device_flags(dev, flags);
}

/* Not const: FAULT_OMIT clears entries of it before the loader reads it.
 * Named `ops`, the name the entry macro must not shadow. */
static infinirtPluginOps ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = "fault",
    .device_type = INFINI_DEVICE_KUNLUN,
    .init = fault_init,
    .shutdown = fault_shutdown,
#define X(op) .op = f_##op,
    FAULT_OPS(X)
#undef X
        .get_device_flags = f_get_device_flags,
};

/* The entry is the header's macro, so its table cannot be edited there:
 * FAULT_OMIT is applied when the library is loaded, which is before the
 * loader calls the entry. */
__attribute__((constructor)) static void apply_omit(void)
{
    const char *native = getenv("FAULT_NATIVE_QUERIES");
    if (native == NULL || strcmp(native, "1") != 0) {
        ops.stream_query = NULL;
        ops.device_query = NULL;
    }
    const char *env = getenv("FAULT_OMIT");
    if (env == NULL || env[0] == '\0')
        return;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        int i = op_index(tok);
        if (i < 0) {
            fprintf(stderr, "fault plugin: FAULT_OMIT names no entry '%s'\n", tok);
            abort();
        }
        switch (i) {
#define X(op)          \
    case OP_##op:      \
        ops.op = NULL; \
        break;
            FAULT_OPS(X)
#undef X
        }
    }
}

INFINIRT_PLUGIN_DEFINE_ENTRY(ops)
