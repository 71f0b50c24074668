/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger_plugin.c - a plugin that writes down every call it receives, with
 * its arguments, so a test can compare what the loader asked of a backend
 * with what the application asked of the loader (ledger_tests.c).
 *
 * It serves INFINI_DEVICE_METAX: `devices` devices (default 2) backed by
 * host memory.  Every operation is done before it returns and events
 * complete at once, but the plugin does not say so (no get_device_flags):
 * the loader treats its streams as asynchronous, so the allocator's fences
 * show in the ledger.
 *
 * The ledger: one line per call, "op dev=D arg arg ... -> result", where
 * objects are named by the plugin in the order they were made: streams
 * s1, s2, ... (the default stream: null), events e1, ..., device memory
 * d1, ..., host memory h1, ...; a pointer is NAME+OFFSET into such memory
 * or into a range the test named (ledger_name), else "?".  A call that
 * fails is written down too, with "-> STATUS".
 *
 * Run-time control, exported beside the entry (dlopen(path, RTLD_NOW |
 * RTLD_NOLOAD) + dlsym reach it):
 *   ledger_read(buf, size)   copies the ledger (NUL-terminated, cut at
 *                            size - 1) and returns its full length;
 *   ledger_clear()           forgets the lines written so far (not the
 *                            names);
 *   ledger_name(p, n, name)  names host memory [p, p + n) of the test.
 * Thread-safe.
 */
#define _GNU_SOURCE
#include "infinirt_plugin.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEDGER_EXPORT __attribute__((visibility("default")))

LEDGER_EXPORT size_t ledger_read(char *buf, size_t size);
LEDGER_EXPORT void ledger_clear(void);
LEDGER_EXPORT void ledger_name(const void *p, size_t n, const char *name);

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char *g_text;
static size_t g_len, g_cap;
static int g_devices = 2;

/* ------------------------------------------------------------- names */

/* Streams and events: the plugin's objects carry their name. */
typedef struct {
    char name[16];
} ledger_obj;

/* Memory ranges with a name: allocations and the test's own buffers. */
typedef struct {
    const char *base;
    size_t size;
    char name[16];
} ledger_range;

static ledger_range g_ranges[256];
static int g_nranges;
static int g_next_stream = 1, g_next_event = 1, g_next_dev = 1, g_next_host = 1;

/* Under g_mu. */
static void range_add(const void *p, size_t n, const char *name)
{
    for (int i = 0; i < g_nranges; i++) {
        if (g_ranges[i].base == p) { /* renamed, or the address came back */
            g_ranges[i].size = n;
            snprintf(g_ranges[i].name, sizeof g_ranges[i].name, "%s", name);
            return;
        }
    }
    if (g_nranges < (int)(sizeof g_ranges / sizeof g_ranges[0])) {
        g_ranges[g_nranges].base = p;
        g_ranges[g_nranges].size = n;
        snprintf(g_ranges[g_nranges].name, sizeof g_ranges[g_nranges].name, "%s", name);
        g_nranges++;
    }
}

/* Under g_mu. */
static void range_drop(const void *p)
{
    for (int i = 0; i < g_nranges; i++) {
        if (g_ranges[i].base == p) {
            g_ranges[i] = g_ranges[--g_nranges];
            return;
        }
    }
}

/* Under g_mu: "d1+256", or "?" for memory of no known range. */
static const char *ptr_name(const void *p, char *out, size_t size)
{
    const char *c = p;
    for (int i = 0; i < g_nranges; i++) {
        if (c >= g_ranges[i].base && c < g_ranges[i].base + g_ranges[i].size) {
            snprintf(out, size, "%s+%zu", g_ranges[i].name, (size_t)(c - g_ranges[i].base));
            return out;
        }
    }
    snprintf(out, size, "?");
    return out;
}

static const char *obj_name(void *o)
{
    return o ? ((ledger_obj *)o)->name : "null";
}

/* ------------------------------------------------------------- ledger */

/* Under g_mu: append one line. */
static void note(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (g_len + len + 2 > g_cap) {
        size_t cap = g_cap ? g_cap * 2 : 4096;
        while (cap < g_len + len + 2)
            cap *= 2;
        char *t = realloc(g_text, cap);
        if (t == NULL)
            return;
        g_text = t;
        g_cap = cap;
    }
    memcpy(g_text + g_len, line, len);
    g_len += len;
    g_text[g_len++] = '\n';
    g_text[g_len] = '\0';
}

size_t ledger_read(char *buf, size_t size)
{
    pthread_mutex_lock(&g_mu);
    size_t n = g_len;
    if (size > 0) {
        size_t k = n < size - 1 ? n : size - 1;
        if (k > 0)
            memcpy(buf, g_text, k);
        buf[k] = '\0';
    }
    pthread_mutex_unlock(&g_mu);
    return n;
}

void ledger_clear(void)
{
    pthread_mutex_lock(&g_mu);
    g_len = 0;
    if (g_text != NULL)
        g_text[0] = '\0';
    pthread_mutex_unlock(&g_mu);
}

void ledger_name(const void *p, size_t n, const char *name)
{
    pthread_mutex_lock(&g_mu);
    range_add(p, n, name);
    pthread_mutex_unlock(&g_mu);
}

static const char *kind_name(int kind)
{
    static const char *const k[] = {"H2H", "H2D", "D2H", "D2D"};
    return kind >= 0 && kind < 4 ? k[kind] : "bad-kind";
}

/* ------------------------------------------------------------- entries */

static infiniStatus_t ledger_init(const infinirtPluginInitArgs *args, int *count)
{
    for (size_t i = 0; i < args->config_count; i++)
        if (strcmp(args->config[i].key, "devices") == 0)
            g_devices = atoi(args->config[i].value);
    pthread_mutex_lock(&g_mu);
    note("init devices=%d", g_devices);
    pthread_mutex_unlock(&g_mu);
    *count = g_devices;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "ledger device %d", dev);
    snprintf(info->description, sizeof info->description, "host memory, every call written down");
    info->total_memory = (size_t)1 << 30;
    pthread_mutex_lock(&g_mu);
    note("get_device_info dev=%d", dev);
    pthread_mutex_unlock(&g_mu);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_mem_info(int dev, size_t *free_b, size_t *total_b)
{
    *free_b = *total_b = (size_t)1 << 30;
    pthread_mutex_lock(&g_mu);
    note("get_mem_info dev=%d", dev);
    pthread_mutex_unlock(&g_mu);
    return INFINI_STATUS_SUCCESS;
}

/* Writes down "op dev=D" with nothing else to say. */
#define LEDGER_SIMPLE(fn, op)         \
    static infiniStatus_t fn(int dev) \
    {                                 \
        pthread_mutex_lock(&g_mu);    \
        note(op " dev=%d", dev);      \
        pthread_mutex_unlock(&g_mu);  \
        return INFINI_STATUS_SUCCESS; \
    }
LEDGER_SIMPLE(ledger_device_sync, "device_synchronize")
LEDGER_SIMPLE(ledger_set_device, "set_device")

/* A new stream or event, named prefix + its number. */
static infiniStatus_t obj_new(const char *op, int dev, char prefix, int *next, uint32_t flags, void **out)
{
    ledger_obj *o = calloc(1, sizeof *o);
    if (o == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_mu);
    snprintf(o->name, sizeof o->name, "%c%d", prefix, (*next)++);
    if (prefix == 'e')
        note("%s dev=%d flags=0x%x -> %s", op, dev, (unsigned)flags, o->name);
    else
        note("%s dev=%d -> %s", op, dev, o->name);
    pthread_mutex_unlock(&g_mu);
    *out = o;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_stream_create(int dev, void **s)
{
    return obj_new("stream_create", dev, 's', &g_next_stream, 0, s);
}

static infiniStatus_t ledger_event_create(int dev, uint32_t flags, void **e)
{
    return obj_new("event_create", dev, 'e', &g_next_event, flags, e);
}

/* Writes down "op dev=D A" for one object, or "op dev=D A B" for two. */
static void note_objs(const char *op, int dev, void *a, void *b, int two)
{
    pthread_mutex_lock(&g_mu);
    if (two)
        note("%s dev=%d %s %s", op, dev, obj_name(a), obj_name(b));
    else
        note("%s dev=%d %s", op, dev, obj_name(a));
    pthread_mutex_unlock(&g_mu);
}

static infiniStatus_t ledger_stream_destroy(int dev, void *s)
{
    note_objs("stream_destroy", dev, s, NULL, 0);
    free(s);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_stream_sync(int dev, void *s)
{
    note_objs("stream_synchronize", dev, s, NULL, 0);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_stream_wait_event(int dev, void *s, void *e)
{
    note_objs("stream_wait_event", dev, s, e, 1);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_host_func(int dev, void *s, infinirtPluginHostFn fn, void *user_data)
{
    note_objs("launch_host_func", dev, s, NULL, 0);
    fn(user_data);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_event_destroy(int dev, void *e)
{
    note_objs("event_destroy", dev, e, NULL, 0);
    free(e);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_event_record(int dev, void *e, void *s)
{
    note_objs("event_record", dev, e, s, 1);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_event_query(int dev, void *e, int *complete)
{
    note_objs("event_query", dev, e, NULL, 0);
    *complete = 1;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_event_sync(int dev, void *e)
{
    note_objs("event_synchronize", dev, e, NULL, 0);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_elapsed(int dev, float *ms, void *a, void *b)
{
    note_objs("event_elapsed_time", dev, a, b, 1);
    *ms = 0.0f;
    return INFINI_STATUS_SUCCESS;
}

/* Memory: aligned host memory, named d1.. or h1... */
static infiniStatus_t mem_new(const char *op, int dev, char prefix, int *next, void **p, size_t n)
{
    *p = aligned_alloc(256, (n + 255) / 256 * 256);
    if (*p == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    char name[16];
    pthread_mutex_lock(&g_mu);
    snprintf(name, sizeof name, "%c%d", prefix, (*next)++);
    range_add(*p, n, name);
    note("%s dev=%d size=%zu -> %s", op, dev, n, name);
    pthread_mutex_unlock(&g_mu);
    return INFINI_STATUS_SUCCESS;
}

static void mem_free(const char *op, int dev, void *p)
{
    char name[32];
    pthread_mutex_lock(&g_mu);
    note("%s dev=%d %s", op, dev, ptr_name(p, name, sizeof name));
    range_drop(p);
    pthread_mutex_unlock(&g_mu);
    free(p);
}

static infiniStatus_t ledger_malloc(int dev, void **p, size_t n)
{
    return mem_new("malloc_device", dev, 'd', &g_next_dev, p, n);
}

static infiniStatus_t ledger_free(int dev, void *p)
{
    mem_free("free_device", dev, p);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_malloc_host(int dev, void **p, size_t n)
{
    return mem_new("malloc_host", dev, 'h', &g_next_host, p, n);
}

static infiniStatus_t ledger_free_host(int dev, void *p)
{
    mem_free("free_host", dev, p);
    return INFINI_STATUS_SUCCESS;
}

/* A copy or fill; stream is written only for the queued ones. */
static void note_mem(const char *op, int dev, void *dst, const void *src, int value, size_t n, int kind, void *s,
                     int queued)
{
    char a[32], b[32], tail[48] = "";
    pthread_mutex_lock(&g_mu);
    if (queued)
        snprintf(tail, sizeof tail, " stream=%s", obj_name(s));
    if (src != NULL)
        note("%s dev=%d dst=%s src=%s size=%zu kind=%s%s", op, dev, ptr_name(dst, a, sizeof a),
             ptr_name(src, b, sizeof b), n, kind_name(kind), tail);
    else
        note("%s dev=%d ptr=%s value=0x%02x size=%zu%s", op, dev, ptr_name(dst, a, sizeof a), value & 0xff, n, tail);
    pthread_mutex_unlock(&g_mu);
}

static infiniStatus_t ledger_memcpy(int dev, void *d, const void *s, size_t n, int kind)
{
    note_mem("memcpy", dev, d, s, 0, n, kind, NULL, 0);
    memmove(d, s, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_memcpy_async(int dev, void *d, const void *s, size_t n, int kind, void *st)
{
    note_mem("memcpy_async", dev, d, s, 0, n, kind, st, 1);
    memmove(d, s, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_memset(int dev, void *p, int v, size_t n)
{
    note_mem("memset", dev, p, NULL, v, n, 0, NULL, 0);
    memset(p, v, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t ledger_memset_async(int dev, void *p, int v, size_t n, void *st)
{
    note_mem("memset_async", dev, p, NULL, v, n, 0, st, 1);
    memset(p, v, n);
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps ledger_ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = "ledger",
    .device_type = INFINI_DEVICE_METAX,
    .init = ledger_init,
    .get_device_info = ledger_device_info,
    .get_mem_info = ledger_mem_info,
    .device_synchronize = ledger_device_sync,
    .stream_create = ledger_stream_create,
    .stream_destroy = ledger_stream_destroy,
    .stream_synchronize = ledger_stream_sync,
    .stream_wait_event = ledger_stream_wait_event,
    .launch_host_func = ledger_host_func,
    .event_create = ledger_event_create,
    .event_destroy = ledger_event_destroy,
    .event_record = ledger_event_record,
    .event_query = ledger_event_query,
    .event_synchronize = ledger_event_sync,
    .event_elapsed_time = ledger_elapsed,
    .malloc_device = ledger_malloc,
    .free_device = ledger_free,
    .malloc_host = ledger_malloc_host,
    .free_host = ledger_free_host,
    .memcpy = ledger_memcpy,
    .memcpy_async = ledger_memcpy_async,
    .memset = ledger_memset,
    .memset_async = ledger_memset_async,
    .set_device = ledger_set_device,
};

INFINIRT_PLUGIN_EXPORT infiniStatus_t infinirtPluginEntry(uint32_t major, uint32_t minor,
                                                          const infinirtPluginOps **ops)
{
    (void)minor;
    if (major != INFINIRT_PLUGIN_ABI_MAJOR)
        return INFINI_STATUS_DEVICE_ARCHITECTURE_NOT_SUPPORTED;
    *ops = &ledger_ops;
    return INFINI_STATUS_SUCCESS;
}
