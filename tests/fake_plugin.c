/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_plugin.c - plugins that differ in what they export and how they fail,
 * for the loader tests.  Built once per FAKE_* variant:
 *   FAKE_GOOD        serves ASCEND: `devices` devices (default 2) on host
 *                    memory; init fails unless the key answer = 42 arrived.
 *                    get_device_uuid: device 0 "FAKE-0000-UUID", device 1
 *                    fills the buffer without a terminator, device 2 gives
 *                    text with a control character, device 3 fails
 *   FAKE_NO_ENTRY    exports no entry
 *   FAKE_ABI2        declares ABI 2.0
 *   FAKE_SMALL_TABLE declares a table smaller than ABI 1.0's
 *   FAKE_INIT_FAIL   init fails with a message
 *   FAKE_ZERO        init finds no device
 *   FAKE_DUP_CPU     serves CPU, which the cpu plugin already serves
 *   FAKE_STREAMS     FAKE_GOOD with streams and events, which complete at
 *                    once (every operation runs synchronously)
 *   FAKE_BAD_TYPE    declares device type 99, outside infiniDevice_t
 *   FAKE_NO_QUERY    FAKE_STREAMS without event_query (incoherent: refused)
 *   FAKE_NO_STREAM_DESTROY  FAKE_STREAMS without stream_destroy (refused)
 *   FAKE_PTRDEV      FAKE_STREAMS of ABI 1.1 with pointer_get_device, which
 *                    reads its answer from the memory it is asked about:
 *                    "dev=N" (device N, in range or not), "bad!" (BAD_PARAM),
 *                    "err!" (INTERNAL_ERROR), anything else NOT_IMPLEMENTED
 *   FAKE_SHORT12     claims ABI 1.2 with a table of ABI 1.1's size (refused)
 *   FAKE_SHORT15     claims ABI 1.5 with a table of ABI 1.4's size (refused)
 *   FAKE_SHORT16     claims ABI 1.6 with a table of ABI 1.5's size (refused)
 *   FAKE_PARTIAL_GRAPH  FAKE_STREAMS of ABI 1.2 with stream_begin_capture
 *                    but not the other graph entries (incoherent: refused)
 *   FAKE_NULL_OBJECTS   FAKE_STREAMS of the current ABI with
 *                    stream_create_with_flags, stream_create_from_native
 *                    and native graphs, and no native-handle getters; the
 *                    key `null = entry,entry,...` makes those create
 *                    entries answer SUCCESS with a NULL object (stream_create,
 *                    stream_create_with_flags, stream_create_from_native,
 *                    event_create, stream_end_capture, graph_instantiate)
 *
 * With the key `starts = PATH`, every init call appends a line "init" to
 * PATH (the loader starts plugins on first use).
 * With the key `ledger = PATH`, the memory, stream and event operations
 * append one line each to PATH ("memset dev=1"), so a test can see which
 * plugin and device a call reached without the plugin exporting anything.
 */
#define _GNU_SOURCE
#include "infinirt_plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(FAKE_NO_QUERY) || defined(FAKE_NO_STREAM_DESTROY) || defined(FAKE_PTRDEV) || defined(FAKE_PARTIAL_GRAPH)
#define FAKE_STREAMS /* with one entry left out of the table */
#endif
#if defined(FAKE_NULL_OBJECTS)
#define FAKE_STREAMS /* with more entries */
#endif
#if defined(FAKE_NO_QUERY)
#define FAKE_OMIT_QUERY 1
#else
#define FAKE_OMIT_QUERY 0
#endif
#if defined(FAKE_NO_STREAM_DESTROY)
#define FAKE_OMIT_STREAM_DESTROY 1
#else
#define FAKE_OMIT_STREAM_DESTROY 0
#endif

static int g_devices = 2;
static char g_ledger[512];
static char g_null[512]; /* FAKE_NULL_OBJECTS: ",entry,entry," */

static void note(const char *fmt, ...)
{
    if (g_ledger[0] == '\0')
        return;
    FILE *f = fopen(g_ledger, "a");
    if (f == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static infiniStatus_t fake_init(const infinirtPluginInitArgs *args, int *count)
{
#if defined(FAKE_INIT_FAIL)
    snprintf(args->message, args->message_size, "fake init refused: no licence");
    return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
#elif defined(FAKE_ZERO)
    snprintf(args->message, args->message_size, "no fake hardware present");
    *count = 0;
    return INFINI_STATUS_SUCCESS;
#else
    int answer = 0;
    for (size_t i = 0; i < args->config_count; i++) {
        if (strcmp(args->config[i].key, "answer") == 0)
            answer = atoi(args->config[i].value);
        else if (strcmp(args->config[i].key, "devices") == 0)
            g_devices = atoi(args->config[i].value);
        else if (strcmp(args->config[i].key, "ledger") == 0)
            snprintf(g_ledger, sizeof g_ledger, "%s", args->config[i].value);
        else if (strcmp(args->config[i].key, "null") == 0) {
            snprintf(g_null, sizeof g_null, ",%s,", args->config[i].value);
            for (char *c = g_null; *c != '\0'; c++) /* "a, b" as "a,b" */
                if (*c == ' ')
                    memmove(c, c + 1, strlen(c));
        } else if (strcmp(args->config[i].key, "starts") == 0) {
            /* One line per init call: when the loader started the plugin. */
            FILE *f = fopen(args->config[i].value, "a");
            if (f != NULL) {
                fputs("init\n", f);
                fclose(f);
            }
        }
    }
#if defined(FAKE_GOOD) || defined(FAKE_STREAMS)
    if (answer != 42) {
        snprintf(args->message, args->message_size, "expected key answer = 42 from the config");
        return INFINI_STATUS_BAD_PARAM;
    }
#endif
    (void)answer;
    *count = g_devices;
    return INFINI_STATUS_SUCCESS;
#endif
}

static infiniStatus_t fake_info(int dev, infinirtPluginDeviceInfo *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "fake device %d", dev);
    snprintf(info->description, sizeof info->description, "host memory pretending");
    info->total_memory = (size_t)1 << 30;
    return INFINI_STATUS_SUCCESS;
}

#if defined(FAKE_GOOD)
static infiniStatus_t fake_uuid(int dev, char *uuid, size_t size)
{
    switch (dev) {
    case 0:
        snprintf(uuid, size, "FAKE-0000-UUID");
        return INFINI_STATUS_SUCCESS;
    case 1:
        memset(uuid, 'x', size);
        return INFINI_STATUS_SUCCESS;
    case 2:
        snprintf(uuid, size, "FAKE\n0002");
        return INFINI_STATUS_SUCCESS;
    default:
        return INFINI_STATUS_INTERNAL_ERROR;
    }
}
#endif

static infiniStatus_t fake_malloc(int dev, void **p, size_t n)
{
    *p = aligned_alloc(256, (n + 255) / 256 * 256);
    return *p ? INFINI_STATUS_SUCCESS : INFINI_STATUS_OUT_OF_MEMORY;
}

static infiniStatus_t fake_free(int dev, void *p)
{
    note("free_device dev=%d", dev);
    free(p);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_memcpy(int dev, void *d, const void *s, size_t n, int kind)
{
    note("memcpy dev=%d", dev);
    memmove(d, s, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_memset(int dev, void *p, int v, size_t n)
{
    note("memset dev=%d", dev);
    memset(p, v, n);
    return INFINI_STATUS_SUCCESS;
}

#if defined(FAKE_STREAMS)
/* Streams and events that know their device, so a call that reaches the
 * wrong device (or another plugin's object) shows in the ledger. */
typedef struct {
    int dev;
    int capturing; /* FAKE_NULL_OBJECTS' streams */
} fake_obj;

/* Whether the key `null` names entry: it answers SUCCESS and NULL. */
static int gives_null(const char *entry)
{
    char key[64];
    snprintf(key, sizeof key, ",%s,", entry);
    return strstr(g_null, key) != NULL;
}

static infiniStatus_t fake_obj_new(int dev, void **out)
{
    fake_obj *o = malloc(sizeof *o);
    if (o == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    o->dev = dev;
    o->capturing = 0;
    *out = o;
    return INFINI_STATUS_SUCCESS;
}

/* A create entry: a new object, or NULL where the key `null` says so. */
static infiniStatus_t fake_create(const char *entry, int dev, void **out)
{
    if (gives_null(entry)) {
        *out = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    return fake_obj_new(dev, out);
}

/* The owner device an object names, or -1 for the default (NULL) stream. */
static int owner(void *obj)
{
    return obj ? ((fake_obj *)obj)->dev : -1;
}

static infiniStatus_t fake_stream_create(int dev, void **s)
{
    return fake_create("stream_create", dev, s);
}

static infiniStatus_t fake_stream_destroy(int dev, void *s)
{
    note("stream_destroy dev=%d owner=%d", dev, owner(s));
    free(s);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_stream_synchronize(int dev, void *s)
{
    note("stream_synchronize dev=%d owner=%d", dev, owner(s));
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_device_synchronize(int dev)
{
    note("device_synchronize dev=%d", dev);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_memset_async(int dev, void *p, int v, size_t n, void *s)
{
    note("memset_async dev=%d owner=%d", dev, owner(s));
    memset(p, v, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_memcpy_async(int dev, void *d, const void *src, size_t n, int kind, void *s)
{
    note("memcpy_async dev=%d owner=%d", dev, owner(s));
    memmove(d, src, n);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_event_create(int dev, uint32_t flags, void **e)
{
    (void)flags;
    return fake_create("event_create", dev, e);
}

static infiniStatus_t fake_event_destroy(int dev, void *e)
{
    note("event_destroy dev=%d owner=%d", dev, owner(e));
    free(e);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_event_record(int dev, void *e, void *s)
{
    note("event_record dev=%d owner=%d", dev, owner(e));
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_event_query(int dev, void *e, int *complete)
{
    note("event_query dev=%d owner=%d", dev, owner(e));
    *complete = 1; /* every operation ran when it was queued */
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_event_synchronize(int dev, void *e)
{
    note("event_synchronize dev=%d owner=%d", dev, owner(e));
    return INFINI_STATUS_SUCCESS;
}
#endif

#if defined(FAKE_NULL_OBJECTS)
static infiniStatus_t fake_stream_create_with_flags(int dev, uint32_t flags, void **s)
{
    (void)flags;
    return fake_create("stream_create_with_flags", dev, s);
}

static infiniStatus_t fake_stream_create_from_native(int dev, void *native, void **s)
{
    (void)native;
    return fake_create("stream_create_from_native", dev, s);
}

/* Native graphs that record nothing: a capture only marks its stream. */
static infiniStatus_t fake_begin_capture(int dev, void *stream, int mode)
{
    (void)mode;
    note("stream_begin_capture dev=%d owner=%d", dev, owner(stream));
    ((fake_obj *)stream)->capturing = 1;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_end_capture(int dev, void *stream, void **graph)
{
    fake_obj *o = stream;
    if (!o->capturing) {
        *graph = NULL;
        return INFINI_STATUS_INVALID_STATE;
    }
    o->capturing = 0;
    return fake_create("stream_end_capture", dev, graph);
}

static infiniStatus_t fake_is_capturing(int dev, void *stream, int *capturing, uint64_t *id)
{
    (void)dev;
    *capturing = stream != NULL && ((fake_obj *)stream)->capturing;
    *id = *capturing ? (uint64_t)(uintptr_t)stream : 0;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_instantiate(int dev, void *graph, void **exec, char *log, size_t log_size)
{
    (void)graph;
    (void)log;
    (void)log_size;
    return fake_create("graph_instantiate", dev, exec);
}

static infiniStatus_t fake_graph_launch(int dev, void *exec, void *stream)
{
    (void)exec;
    note("graph_launch dev=%d owner=%d", dev, owner(stream));
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fake_graph_free(int dev, void *obj)
{
    note("graph_destroy dev=%d owner=%d", dev, owner(obj));
    free(obj);
    return INFINI_STATUS_SUCCESS;
}
#endif

#if defined(FAKE_PTRDEV)
/* Host memory pretends to be device memory here, so the test says whose it
 * is by writing the answer into it. */
static infiniStatus_t fake_pointer_get_device(const void *ptr, int *dev)
{
    const char *p = ptr;
    note("pointer_get_device");
    if (strncmp(p, "dev=", 4) == 0) {
        *dev = atoi(p + 4);
        return INFINI_STATUS_SUCCESS;
    }
    if (strncmp(p, "bad!", 4) == 0)
        return INFINI_STATUS_BAD_PARAM;
    if (strncmp(p, "err!", 4) == 0)
        return INFINI_STATUS_INTERNAL_ERROR;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
#endif

#if defined(FAKE_PARTIAL_GRAPH)
static infiniStatus_t fake_begin_capture(int dev, void *stream, int mode)
{
    (void)dev;
    (void)stream;
    (void)mode;
    return INFINI_STATUS_SUCCESS;
}
#endif

static const infinirtPluginOps fake_ops = {
#if defined(FAKE_ABI2)
    .abi_major = 2,
#else
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
#endif
#if defined(FAKE_SHORT16)
    .abi_minor = 6,
#elif defined(FAKE_SHORT15)
    .abi_minor = 5,
#elif defined(FAKE_SHORT12) || defined(FAKE_PARTIAL_GRAPH)
    .abi_minor = 2,
#elif defined(FAKE_PTRDEV) || defined(FAKE_SHORT11)
    .abi_minor = 1,
#elif defined(FAKE_NULL_OBJECTS)
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
#else
    .abi_minor = 0,
#endif
#if defined(FAKE_SMALL_TABLE)
    .struct_size = 40,
#elif defined(FAKE_SHORT12)
    .struct_size = INFINIRT_PLUGIN_OPS_SIZE_1_1,
#elif defined(FAKE_SHORT15)
    .struct_size = INFINIRT_PLUGIN_OPS_SIZE_1_3, /* 1.4 appended no entry */
#elif defined(FAKE_SHORT16)
    .struct_size = INFINIRT_PLUGIN_OPS_SIZE_1_5,
#elif (defined(FAKE_STREAMS) && !defined(FAKE_PTRDEV) && !defined(FAKE_PARTIAL_GRAPH) && \
       !defined(FAKE_NULL_OBJECTS)) ||                                                   \
    defined(FAKE_SHORT11)
    /* A plugin built against ABI 1.0: its table ends after memset_async
     * (short11 claims minor 1 with such a table, and is refused). */
    .struct_size = INFINIRT_PLUGIN_OPS_SIZE_1_0,
#else
    .struct_size = sizeof(infinirtPluginOps),
#endif
    .name = "fake",
#if defined(FAKE_DUP_CPU)
    .device_type = INFINI_DEVICE_CPU,
#elif defined(FAKE_BAD_TYPE)
    .device_type = (infiniDevice_t)99,
#else
    .device_type = INFINI_DEVICE_ASCEND,
#endif
    .init = fake_init,
    .get_device_info = fake_info,
    .malloc_device = fake_malloc,
    .free_device = fake_free,
    .memcpy = fake_memcpy,
    .memset = fake_memset,
#if defined(FAKE_STREAMS)
    .device_synchronize = fake_device_synchronize,
    .stream_create = fake_stream_create,
    .stream_destroy = FAKE_OMIT_STREAM_DESTROY ? NULL : fake_stream_destroy,
    .stream_synchronize = fake_stream_synchronize,
    .event_create = fake_event_create,
    .event_destroy = fake_event_destroy,
    .event_record = fake_event_record,
    .event_query = FAKE_OMIT_QUERY ? NULL : fake_event_query,
    .event_synchronize = fake_event_synchronize,
    .memcpy_async = fake_memcpy_async,
    .memset_async = fake_memset_async,
#endif
#if defined(FAKE_PTRDEV)
    .pointer_get_device = fake_pointer_get_device,
#endif
#if defined(FAKE_PARTIAL_GRAPH)
    .stream_begin_capture = fake_begin_capture,
#endif
#if defined(FAKE_NULL_OBJECTS)
    .stream_create_with_flags = fake_stream_create_with_flags,
    .stream_create_from_native = fake_stream_create_from_native,
    .stream_begin_capture = fake_begin_capture,
    .stream_end_capture = fake_end_capture,
    .stream_is_capturing = fake_is_capturing,
    .graph_instantiate = fake_instantiate,
    .graph_launch = fake_graph_launch,
    .graph_exec_destroy = fake_graph_free,
    .graph_destroy = fake_graph_free,
#endif
#if defined(FAKE_GOOD)
    .get_device_uuid = fake_uuid,
#endif
    /* otherwise no streams, events or host memory: the loader answers
     * NOT_IMPLEMENTED */
};

#if defined(FAKE_NO_ENTRY)
/* Exported, but under the wrong name. */
INFINIRT_PLUGIN_EXPORT const infinirtPluginOps *infinirtPluginEntryTypo(void);
const infinirtPluginOps *infinirtPluginEntryTypo(void)
{
    return &fake_ops;
}
#elif defined(FAKE_ABI2)
/* A plugin built for ABI 2 would still answer a 1.x loader's call, with
 * its own table; the loader must refuse it on abi_major. */
infiniStatus_t infinirtPluginEntry(uint32_t major, uint32_t minor, const infinirtPluginOps **ops)
{
    (void)major;
    (void)minor;
    *ops = &fake_ops;
    return INFINI_STATUS_SUCCESS;
}
#else
INFINIRT_PLUGIN_DEFINE_ENTRY(fake_ops)
#endif
