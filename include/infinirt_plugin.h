/* SPDX-License-Identifier: Apache-2.0 */
/*
 * infinirt_plugin.h - the plugin ABI: everything a backend vendor builds
 * against.  Include this one header (it brings infinicore.h, installed beside
 * it, for infiniStatus_t and infiniDevice_t).  Do not link libinfinirt.
 *
 * A plugin is a shared library that exports exactly one symbol,
 * INFINIRT_PLUGIN_ENTRY_NAME ("infinirtPluginEntry"), of type
 * infinirtPluginEntryFn.  Everything else in it should be hidden.
 *
 * Handshake.  The loader calls the entry with the ABI version it speaks.  The
 * plugin returns a pointer to its ops table (static storage, valid for the
 * life of the process).  The loader rejects the plugin when the table's
 * abi_major differs from its own or struct_size is smaller than the size of
 * the header plus the entries required by the table's abi_minor.  Entries
 * added in later minors are appended; a loader reads only the entries that
 * both sides know.  A NULL entry means "not supported": the loader answers
 * INFINI_STATUS_NOT_IMPLEMENTED to the application.
 *
 * The loader copies the table once, at load: min(struct_size, its own
 * sizeof) bytes into storage of its own, with every NULL entry (and every
 * entry past a shorter table's end) replaced by a stub that returns
 * NOT_IMPLEMENTED.  Later changes to the plugin's table are not seen.  It
 * refuses (status ABI mismatch, the reason in the plugin report) a table
 * without init, get_device_info, malloc_device, free_device or memcpy, and
 * one whose entries do not make sense together: stream_create (or
 * stream_create_with_flags, stream_create_from_native) without
 * stream_destroy and stream_synchronize; event_create without event_destroy
 * and event_record; event_record without event_create, event_query and
 * event_synchronize; malloc_host without free_host or the reverse; an entry
 * that queues work without stream_synchronize or device_synchronize; some
 * of the native graph entries (ABI 1.2) but not all.  A
 * plugin with no events at all is fine: the allocator then keeps memory
 * freed behind queued work until the device is next synchronised.
 *
 * What the loader does for you, so plugins must not:
 *  - handles: the application holds the value stream_get_native and
 *    event_get_native give (the backend's native stream and event: a
 *    CUstream, a cl_command_queue), or the plugin object itself where the
 *    plugin has no such entry; the loader maps that value back to its own
 *    object.  Plugins see only their own stream/event objects and a
 *    plugin-local device index [0, count);
 *  - validation: NULL outputs, unknown handles, wrong devices, ranges past
 *    an allocation are rejected before a plugin is called;
 *  - caching: plugins allocate raw memory only; the loader's caching
 *    allocator splits, reuses and accounts for it, and may pass interior
 *    pointers of a raw allocation to memcpy/memset;
 *  - the NULL stream: passed through as NULL, meaning the device's default
 *    stream, which the plugin owns.
 *
 * Threading: every entry may be called from any thread, concurrently, except
 * init (called once, before any other) and shutdown (called by the loader
 * only to drop a plugin that declared too many devices; see below).
 */
#ifndef INFINIRT_PLUGIN_H_
#define INFINIRT_PLUGIN_H_

#include "infinicore.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define INFINIRT_PLUGIN_ABI_MAJOR 1
#define INFINIRT_PLUGIN_ABI_MINOR 7
#define INFINIRT_PLUGIN_ENTRY_NAME "infinirtPluginEntry"

#ifdef __cplusplus
extern "C" {
#endif

/* Values of the `kind` argument of memcpy entries (= infinirtMemcpyKind_t). */
#define INFINIRT_PLUGIN_MEMCPY_H2H 0
#define INFINIRT_PLUGIN_MEMCPY_H2D 1
#define INFINIRT_PLUGIN_MEMCPY_D2H 2
#define INFINIRT_PLUGIN_MEMCPY_D2D 3

/* Values of stream_create_with_flags' flags (= infinirtStreamFlags_t). */
#define INFINIRT_PLUGIN_STREAM_NON_BLOCKING 0x1u

/* Values of event_create's flags (= infinirtEventFlags_t). */
#define INFINIRT_PLUGIN_EVENT_DISABLE_TIMING 0x1u
#define INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC 0x2u

/* Log levels for infinirtPluginInitArgs.log. */
#define INFINIRT_PLUGIN_LOG_ERROR 0
#define INFINIRT_PLUGIN_LOG_WARN 1
#define INFINIRT_PLUGIN_LOG_INFO 2
#define INFINIRT_PLUGIN_LOG_DEBUG 3

/* One key = value line of the plugin's [plugin.NAME] section. */
typedef struct {
    const char *key;
    const char *value;
} infinirtPluginKeyValue;

/* ABI 1.7: tracing (docs/tracing.md).  When a trace is written the
 * loader gives each plugin one of these at init (InitArgs.trace), valid for
 * the life of the process; NULL otherwise, so a plugin tests one pointer.
 *
 * The loader shows on each stream's track the work it queues through an
 * entry (memcpy_async, memset_async, launch_host_func, event_record,
 * stream_wait_event, graph_launch, memcpy, memset).  A plugin that can
 * tell when such work really ran sets INFINIRT_PLUGIN_TRACE_REPORTS in
 * plugin_flags during init, and then, in the entry that queues the work,
 * on the calling thread, calls work_id() once for each piece of work it
 * leaves queued, keeps the id with the work, and calls work_ran(id, begin,
 * end) once the work has run (any thread, CLOCK_MONOTONIC nanoseconds; a
 * device clock converted to it).  Work it does within the entry, it takes
 * no id for: the loader times the entry for it.  A plugin that does not
 * report has its queued work shown from the entry to when the loader
 * next sees the stream complete (a synchronize).  work_id returns 0 (no
 * report wanted) when the loader is not tracing that call. */
#define INFINIRT_PLUGIN_TRACE_REPORTS 0x1u
typedef struct infinirtPluginTrace {
    uint32_t struct_size;  /* sizeof as the loader knows it */
    uint32_t plugin_flags; /* set by the plugin during init: INFINIRT_PLUGIN_TRACE_* */
    uint64_t (*work_id)(void);
    void (*work_ran)(uint64_t id, uint64_t begin_ns, uint64_t end_ns);
} infinirtPluginTrace;

/* What the loader gives the plugin at init.  Valid during init only, except
 * `log`, which may be called at any time from any thread. */
typedef struct infinirtPluginInitArgs {
    uint32_t struct_size;                 /* sizeof as the loader knows it */
    uint32_t abi_major, abi_minor;        /* the loader's ABI */
    const infinirtPluginKeyValue *config; /* the section's keys, in file order */
    size_t config_count;
    const char *plugin_path; /* the plugin's own file */
    /* Log one line through the loader's logger (prefix and newline added). */
    void (*log)(int level, const char *plugin_name, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    /* Where init writes a reason: why it failed, or why it found no device
     * ("no CUDA-capable device").  NUL-terminated, at most message_size. */
    char *message;
    size_t message_size;
    /* ABI 1.4: report a problem with config[index] (an unknown key, a value
     * that cannot be used).  The loader logs a warning that starts with the
     * file and line of that key, the section, the key and the value; fmt
     * says what is wrong and what is used instead ("not a number from 0 to
     * 64; using 1").  Call it through infinirtPluginConfigWarn below, which
     * falls back to `log` with an older loader.  A bad value should not fail
     * init: warn and use the default, as the loader does for its own keys. */
    void (*config_warnv)(const struct infinirtPluginInitArgs *args, size_t index, const char *fmt, va_list ap);
    /* ABI 1.7: the tracing functions (above) while a trace is written, else
     * NULL.  Read it through infinirtPluginTraceOf, which gives NULL with an
     * older loader. */
    infinirtPluginTrace *trace;
} infinirtPluginInitArgs;

/* args->trace, or NULL when the loader is older than ABI 1.7. */
static inline infinirtPluginTrace *infinirtPluginTraceOf(const infinirtPluginInitArgs *args)
{
    return args->struct_size >= offsetof(infinirtPluginInitArgs, trace) + sizeof args->trace ? args->trace : NULL;
}

/* Report a problem with args->config[index] (see config_warnv). */
static inline void infinirtPluginConfigWarn(const infinirtPluginInitArgs *args, const char *plugin_name, size_t index,
                                            const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static inline void infinirtPluginConfigWarn(const infinirtPluginInitArgs *args, const char *plugin_name, size_t index,
                                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (args->struct_size >= offsetof(infinirtPluginInitArgs, config_warnv) + sizeof args->config_warnv &&
        args->config_warnv != NULL) {
        args->config_warnv(args, index, fmt, ap);
    } else if (args->log != NULL) {
        char what[512];
        vsnprintf(what, sizeof what, fmt, ap);
        args->log(INFINIRT_PLUGIN_LOG_WARN, plugin_name, "[plugin.%s] %s = '%s': %s", plugin_name,
                  args->config[index].key, args->config[index].value, what);
    }
    va_end(ap);
}

/* A byte count: digits with an optional binary suffix K, M, G or T (also
 * written KB/KiB, MB/MiB, GB/GiB, TB/TiB; any case), 1K = 1024.  The one
 * parser of sizes: the loader reads its own keys with it too, so every
 * section accepts the same spellings.  Returns 0 with *out set, or -1
 * (*out unchanged) when text is not such a size or does not fit size_t. */
static inline int infinirtPluginParseSize(const char *text, size_t *out)
{
    unsigned long long v = 0;
    const char *p = text;
    unsigned shift = 0;
    if (p == NULL || *p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (~0ull - (unsigned)(*p - '0')) / 10)
            return -1;
        v = v * 10 + (unsigned)(*p - '0');
    }
    switch (*p) {
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    case 't':
    case 'T':
        shift = 40;
        break;
    default:
        break;
    }
    if (shift != 0) {
        p++;
        if (*p == 'i' || *p == 'I') {
            p++;
            if (*p != 'b' && *p != 'B')
                return -1; /* "Ki" alone */
        }
        if (*p == 'b' || *p == 'B')
            p++;
    }
    if (*p != '\0' || v > ((size_t)-1 >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

/* A whole number from lo to hi (0 <= lo <= hi): decimal digits and nothing
 * else.  Returns 0 with *out set, or -1 (*out unchanged). */
static inline int infinirtPluginParseCount(const char *text, long lo, long hi, long *out)
{
    long v = 0;
    const char *p = text;
    if (p == NULL || *p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        long d = *p - '0';
        if (v > hi / 10 || (v == hi / 10 && d > hi % 10))
            return -1; /* past hi (and so no overflow) */
        v = v * 10 + d;
    }
    if (*p != '\0' || v < lo)
        return -1;
    *out = v;
    return 0;
}

/* A device list: whole numbers from 0 to max separated by commas ("0, 2,3";
 * spaces and tabs around an item are allowed, an empty item is not).
 * Returns 0 with *list (malloc'd: the caller frees it) and *count set; -1
 * when text is not such a list, with *bad at the first character of the
 * item that is not (text's end for an empty list or a trailing comma); -2
 * out of memory.  *list and *count are left alone on failure. */
static inline int infinirtPluginParseIndexList(const char *text, int max, int **list, size_t *count, const char **bad)
{
    size_t cap = 1, n = 0;
    const char *p = text;
    for (const char *q = text; *q; q++)
        cap += *q == ',';
    int *out = (int *)malloc(cap * sizeof *out);
    if (out == NULL)
        return -2;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *item = p;
        long v = 0;
        if (*p < '0' || *p > '9')
            goto bad_item; /* "", "-1", "1,,2", a trailing comma */
        for (; *p >= '0' && *p <= '9'; p++) {
            long d = *p - '0';
            if (v > max / 10 || (v == max / 10 && d > max % 10))
                goto bad_item; /* past max (and so no overflow) */
            v = v * 10 + d;
        }
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '\0' && *p != ',')
            goto bad_item;
        out[n++] = (int)v;
        if (*p == '\0')
            break;
        p++;
        continue;
    bad_item:
        free(out);
        *bad = item;
        return -1;
    }
    *list = out;
    *count = n;
    return 0;
}

typedef struct {
    char name[256];
    char description[256]; /* free text: platform, compute capability, driver */
    size_t total_memory;   /* bytes */
    size_t max_alloc_size; /* largest single raw allocation; 0 = no limit */
} infinirtPluginDeviceInfo;

typedef void (*infinirtPluginHostFn)(void *user_data);

/* Values of stream_begin_capture's mode (= infinirtStreamCaptureMode_t). */
#define INFINIRT_PLUGIN_CAPTURE_GLOBAL 0
#define INFINIRT_PLUGIN_CAPTURE_THREAD_LOCAL 1
#define INFINIRT_PLUGIN_CAPTURE_RELAXED 2

/* Bits of infinirtPluginUtilization.valid / .estimated (the values of
 * infinirtResourceField_t). */
#define INFINIRT_PLUGIN_UTIL_COMPUTE (1ull << 1)
#define INFINIRT_PLUGIN_UTIL_MEMORY_BANDWIDTH (1ull << 2)
#define INFINIRT_PLUGIN_UTIL_KERNEL_TIME (1ull << 3)

/* What get_utilization reports: fractions in [0, 1]; only the fields whose
 * bit is in `valid` hold a value, `estimated` marks estimates among them. */
typedef struct {
    uint64_t valid;
    uint64_t estimated;
    float compute;          /* share of time a kernel was running */
    float memory_bandwidth; /* share of time device memory was read or written */
    float kernel_time;      /* share of time spent in kernels */
} infinirtPluginUtilization;

/*
 * The ops table.  `dev` is always a valid plugin-local index; `stream` is
 * NULL (default stream) or an object from this plugin's stream_create for
 * the same device; `event` is an object from this plugin's event_create.
 * Each entry returns INFINI_STATUS_SUCCESS or the status to report.
 *
 * Entries are only appended, each minor in its own block below.  Adding
 * one (docs/plugin-abi.md, "Adding an entry in a new minor"): the field
 * here and its minor's INFINIRT_PLUGIN_OPS_SIZE_1_N, one row at the end of
 * the loader's loader/ops_list.h (whose build fails if the two disagree),
 * and the plugins that bring it.
 */
typedef struct infinirtPluginOps {
    /* ---- header: never reordered across ABI versions ---- */
    uint32_t abi_major; /* INFINIRT_PLUGIN_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;
    uint32_t struct_size; /* sizeof(infinirtPluginOps) the plugin was built with */
    uint32_t reserved;
    const char *name;           /* short name, e.g. "cpu" */
    infiniDevice_t device_type; /* the one device type served */

    /* ---- ABI 1.0 ---- */
    /* Required.  Discover devices; *device_count = 0 with a message is a
     * successful init that serves nothing. */
    infiniStatus_t (*init)(const infinirtPluginInitArgs *args, int *device_count);
    /* Optional.  Release everything.  The loader calls it only to drop a
     * plugin whose init succeeded but declared more devices than a plugin
     * may serve (4096); at process exit it tears nothing down (other
     * threads and later atexit handlers may still be inside the plugin;
     * the OS reclaims the rest).  For harnesses that load the plugin
     * directly. */
    void (*shutdown)(void);
    /* Required. */
    infiniStatus_t (*get_device_info)(int dev, infinirtPluginDeviceInfo *info);
    /* Optional from here on, except malloc_device, free_device and memcpy. */
    infiniStatus_t (*get_mem_info)(int dev, size_t *free_bytes, size_t *total_bytes);
    /* Wait for every stream of the device, the default one included.
     * Without it the loader synchronises each stream in turn. */
    infiniStatus_t (*device_synchronize)(int dev);

    infiniStatus_t (*stream_create)(int dev, void **stream);
    /* Waits for the stream's work, then destroys it. */
    infiniStatus_t (*stream_destroy)(int dev, void *stream);
    infiniStatus_t (*stream_synchronize)(int dev, void *stream);
    /* Stream and event may belong to different devices of this plugin:
     * `dev` is the stream's. Must not block the host. Waits for the
     * event's record current at this call: a later event_record of the
     * event must neither release nor extend it (nor event_synchronize). */
    infiniStatus_t (*stream_wait_event)(int dev, void *stream, void *event);
    infiniStatus_t (*launch_host_func)(int dev, void *stream, infinirtPluginHostFn fn, void *user_data);

    infiniStatus_t (*event_create)(int dev, uint32_t flags, void **event);
    /* Final even when it fails: the loader reports the status and never
     * passes the event again, so the plugin frees what it holds for it. */
    infiniStatus_t (*event_destroy)(int dev, void *event);
    infiniStatus_t (*event_record)(int dev, void *event, void *stream);
    /* *complete = 1 when done or never recorded, else 0. Never blocks. */
    infiniStatus_t (*event_query)(int dev, void *event, int *complete);
    infiniStatus_t (*event_synchronize)(int dev, void *event);
    /* Return INFINI_STATUS_NOT_READY for an incomplete record and
     * INFINI_STATUS_INVALID_STATE for one never recorded or without timing. */
    infiniStatus_t (*event_elapsed_time)(int dev, float *ms, void *start, void *end);

    /* Raw memory.  Pointers must be aligned to at least 256 bytes (as CUDA's
     * are; the conformance suite checks it).  Return
     * INFINI_STATUS_OUT_OF_MEMORY when the device is full, so the loader can
     * release its cache and retry.  free_device receives exactly the pointer
     * malloc_device returned, and only after the work using it completed.
     *
     * Pinned host memory is one pool per plugin in the loader, so
     * malloc_host's `dev` is only a hint (the loader passes 0): the memory
     * must be usable by every device of the plugin (CUDA's portable pinned
     * memory), and the plugin should take it through a device the process
     * already uses rather than start one (a CUDA context costs hundreds of
     * MiB of its GPU).  free_host gets the same hint. */
    infiniStatus_t (*malloc_device)(int dev, void **ptr, size_t size);
    infiniStatus_t (*free_device)(int dev, void *ptr);
    infiniStatus_t (*malloc_host)(int dev, void **ptr, size_t size);
    infiniStatus_t (*free_host)(int dev, void *ptr);

    /* Copies.  For D2D, src may live on another device of this plugin;
     * `dev` is the device the copy is issued on. memcpy waits for completion. */
    infiniStatus_t (*memcpy)(int dev, void *dst, const void *src, size_t size, int kind);
    infiniStatus_t (*memcpy_async)(int dev, void *dst, const void *src, size_t size, int kind, void *stream);
    infiniStatus_t (*memset)(int dev, void *ptr, int value, size_t size);
    infiniStatus_t (*memset_async)(int dev, void *ptr, int value, size_t size, void *stream);

    /* ---- ABI 1.1: native handles, blocking streams (all optional) ---- */
    /* The value the application holds for a stream / event: the backend's
     * native object (CUstream, cl_command_queue, CUevent), so kernels of
     * any library can be queued on it.  Non-NULL and unique among the
     * plugin's live objects of that kind.  Without the entry the handle is
     * the plugin object itself. */
    infiniStatus_t (*stream_get_native)(int dev, void *stream, void **native);
    infiniStatus_t (*event_get_native)(int dev, void *event, void **native);
    /* stream_create with flags: 0 is a blocking stream (work on it is
     * ordered with the device's default stream as CUDA orders a stream
     * with the legacy default stream); INFINIRT_PLUGIN_STREAM_NON_BLOCKING
     * an independent one.  Without the entry stream_create serves flags 0
     * and non-blocking streams are refused (NOT_IMPLEMENTED). */
    infiniStatus_t (*stream_create_with_flags)(int dev, uint32_t flags, void **stream);
    /* Wrap a native stream the application made (and keeps owning): the
     * result is a plugin stream whose work goes to `native`.  Its
     * stream_destroy waits for the work, then releases the wrapper only. */
    infiniStatus_t (*stream_create_from_native)(int dev, void *native, void **stream);
    /* *idle = 1 when everything queued on the stream so far - through the
     * plugin or natively, by the application - has completed.  Must not
     * block.  A plugin with this entry says its streams may carry work the
     * loader does not see: the allocator then asks it (and records fences)
     * before it reuses memory freed behind a stream, instead of trusting
     * its own counts of the work it queued. */
    infiniStatus_t (*stream_query)(int dev, void *stream, int *idle);
    /* The device's native objects (CUdevice and its primary CUcontext;
     * cl_device_id and cl_context); either may be set to NULL. */
    infiniStatus_t (*device_get_native)(int dev, void **device, void **context);
    /* For a pointer into memory of malloc_device (possibly interior): the
     * native object and the byte offset into it that the backend's own API
     * needs (cl_mem in OpenCL buffer mode).  Without the entry the pointer
     * itself with offset 0. */
    infiniStatus_t (*mem_get_native)(int dev, void *ptr, void **native, size_t *offset);
    /* The calling thread chose dev (infinirtSetDevice): make it the
     * backend's current device for code that calls the backend directly
     * (cuCtxSetCurrent of its primary context).  Entries called for
     * another device must leave the caller's current device as it was. */
    infiniStatus_t (*set_device)(int dev);
    /* For a pointer the loader did not allocate (a tensor from another
     * library): the plugin-local device whose memory it is.  BAD_PARAM or
     * NOT_IMPLEMENTED when the plugin cannot tell: the loader then uses
     * the calling thread's current device. */
    infiniStatus_t (*pointer_get_device)(const void *ptr, int *dev);

    /* ---- ABI 1.2: native stream capture and graphs, utilisation ---- */
    /* Native graphs: a plugin brings all seven entries below or none.
     * Without them the loader captures the operations it issues on a
     * stream itself and replays them through the entries above; with them
     * the backend captures (so work the application queues natively on the
     * stream is captured too) and the loader only keeps the handles and
     * the allocator's rules.  `stream` is never NULL (the default stream is
     * not captured).  Errors a capture causes map to INFINI_STATUS_INVALID_STATE.
     *
     * Begin capturing: mode is INFINIRT_PLUGIN_CAPTURE_*.  While a stream
     * captures, the plugin's entries that would run or wait for work on it
     * must not (the backend's own rules; CUDA fails them and invalidates
     * the capture).  Allocator entries (malloc_device, free_device,
     * event_query, event_synchronize) must neither fail nor invalidate a
     * capture of any thread in any mode (CUDA: exchange the thread's capture
     * mode to relaxed around the driver call). */
    infiniStatus_t (*stream_begin_capture)(int dev, void *stream, int mode);
    /* End the capture; *graph = the backend's graph.  INVALID_STATE (capture
     * ended, *graph NULL) when it was invalidated or is not capturing. */
    infiniStatus_t (*stream_end_capture)(int dev, void *stream, void **graph);
    /* *capturing = 1 while the stream captures (also a capture begun
     * natively by the application, or invalidated and not yet ended), and
     * *id = an identifier of that capture, unique in the process (streams
     * that joined one capture give the same id).  stream NULL (the default
     * stream, never captured): *capturing = 1 while using it would touch a
     * capture (CUDA: a blocking stream captures, and the legacy stream is
     * ordered with it), *id = 0.  Never blocks, never affects the capture. */
    infiniStatus_t (*stream_is_capturing)(int dev, void *stream, int *capturing, uint64_t *id);
    /* An executable graph from `graph`; on failure a reason in log
     * (log_size bytes, NUL-terminated). */
    infiniStatus_t (*graph_instantiate)(int dev, void *graph, void **exec, char *log, size_t log_size);
    /* Queue one run of exec on stream (NULL: the default stream), to start
     * after the work queued before it on stream and after the previous
     * launch of exec, whatever stream that was on (cuGraphLaunch's order:
     * the loader adds none for native graphs). */
    infiniStatus_t (*graph_launch)(int dev, void *exec, void *stream);
    /* Launches already queued still run. */
    infiniStatus_t (*graph_exec_destroy)(int dev, void *exec);
    infiniStatus_t (*graph_destroy)(int dev, void *graph);
    /* Utilisation for infinirtGetDeviceResourceSnapshot (optional, on its
     * own): fill what the backend can observe; NOT_IMPLEMENTED or valid = 0
     * when it can observe nothing now.  Must not block for long. */
    infiniStatus_t (*get_utilization)(int dev, infinirtPluginUtilization *util);

    /* ---- ABI 1.3: device identity ---- */
    /* The device's UUID as text (NUL-terminated, at most size - 1 bytes,
     * printable ASCII), stable for the life of the device whatever order or
     * subset the backend exposes it in: on CUDA "GPU-" and 8-4-4-4-12 hex
     * digits, NVML's spelling.  Optional: without it, or on NOT_IMPLEMENTED,
     * the device has no UUID ("").  Called once per device at load; must
     * not create a context or allocate device memory.  (An entry rather
     * than a field of infinirtPluginDeviceInfo: a plugin built for a later
     * ABI would write past an older loader's copy of that struct.) */
    infiniStatus_t (*get_device_uuid)(int dev, char *uuid, size_t size);

    /* ---- ABI 1.5: device properties ---- */
    /* *flags = the INFINIRT_PLUGIN_DEVICE_* bits that hold for device `dev`
     * for the life of the process.  Optional: without it, or on any
     * status but SUCCESS, none holds.  Called once per device when the
     * plugin starts; must not block.  Bits the loader does not know are
     * ignored. */
    infiniStatus_t (*get_device_flags)(int dev, uint32_t *flags);

    /* ---- ABI 1.6: whole-device query ---- */
    /* *idle = 1 when everything queued so far on every stream of device
     * `dev` - through the plugin or natively, by any thread - has
     * completed; 0 otherwise.  Must not block, and must neither take part
     * in nor invalidate a capture.  Optional, and only worth bringing
     * where it is cheaper than stream_query on each stream (one counter).
     * The loader asks it only of a plugin that has stream_query (whose
     * streams may carry work it does not see), before it queries each
     * stream: for a synchronous free, and when a fence's event cannot
     * answer (then under an allocator lock, so it must return at once
     * and never call into libinfinirt).  An answer of 0, or an error,
     * sends the loader to the per-stream queries. */
    infiniStatus_t (*device_query)(int dev, int *idle);
} infinirtPluginOps;

/* Bits of get_device_flags.
 *
 * DONE_AT_RETURN: every operation queued on any stream of the device, by
 * the plugin's entries or through its native stream interface, has
 * completed when the call that queued it returns; nothing is ever left
 * queued (the CPU plugin with streams = inline).  The loader then counts no
 * queued work on the device and its allocator reuses freed memory without
 * a fence.  A plugin that claims it wrongly gets memory handed out while
 * its queued work still touches it: claim it only where it always holds. */
#define INFINIRT_PLUGIN_DEVICE_DONE_AT_RETURN 0x1u

/* The size a table of ABI 1.0 must at least have: up to its last entry.
 * Fixed for ever, whatever later minors append. */
#define INFINIRT_PLUGIN_OPS_SIZE_1_0 (offsetof(infinirtPluginOps, memset_async) + sizeof(void (*)(void)))
/* The same for ABI 1.1. */
#define INFINIRT_PLUGIN_OPS_SIZE_1_1 (offsetof(infinirtPluginOps, pointer_get_device) + sizeof(void (*)(void)))
/* The same for ABI 1.2. */
#define INFINIRT_PLUGIN_OPS_SIZE_1_2 (offsetof(infinirtPluginOps, get_utilization) + sizeof(void (*)(void)))
/* The same for ABI 1.3. */
#define INFINIRT_PLUGIN_OPS_SIZE_1_3 (offsetof(infinirtPluginOps, get_device_uuid) + sizeof(void (*)(void)))
/* ABI 1.4 appends no entry (it adds config_warnv to infinirtPluginInitArgs):
 * a 1.4 table needs INFINIRT_PLUGIN_OPS_SIZE_1_3. */
/* The same for ABI 1.5. */
#define INFINIRT_PLUGIN_OPS_SIZE_1_5 (offsetof(infinirtPluginOps, get_device_flags) + sizeof(void (*)(void)))
/* The same for ABI 1.6. */
#define INFINIRT_PLUGIN_OPS_SIZE_1_6 (offsetof(infinirtPluginOps, device_query) + sizeof(void (*)(void)))
/* ABI 1.7 appends no entry (it adds trace to infinirtPluginInitArgs): a
 * 1.7 table needs INFINIRT_PLUGIN_OPS_SIZE_1_6. */

/*
 * The entry.  Called once by the loader.  Set *ops to the plugin's table and
 * return INFINI_STATUS_SUCCESS; return DEVICE_ARCHITECTURE_NOT_SUPPORTED
 * (leaving *ops NULL) when the plugin cannot serve loader_abi_major.
 */
typedef infiniStatus_t (*infinirtPluginEntryFn)(uint32_t loader_abi_major, uint32_t loader_abi_minor,
                                                const infinirtPluginOps **ops);

#if defined(_WIN32)
#define INFINIRT_PLUGIN_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define INFINIRT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define INFINIRT_PLUGIN_EXPORT
#endif

/* The entry every plugin defines (usually through the macro below). */
INFINIRT_PLUGIN_EXPORT infiniStatus_t infinirtPluginEntry(uint32_t loader_abi_major, uint32_t loader_abi_minor,
                                                          const infinirtPluginOps **ops);

/* Use in the plugin's source to define its entry:
 *   INFINIRT_PLUGIN_DEFINE_ENTRY(my_ops)   where my_ops is a static table.
 * The table may have any name (`ops` included): the definition's own
 * parameters carry a reserved prefix so they never shadow it.  The entry is
 * declared above, so no prototype of your own is needed. */
#define INFINIRT_PLUGIN_DEFINE_ENTRY(table)                                                                    \
    INFINIRT_PLUGIN_EXPORT infiniStatus_t infinirtPluginEntry(uint32_t infinirt_plugin__loader_major_,         \
                                                              uint32_t infinirt_plugin__loader_minor_,         \
                                                              const infinirtPluginOps **infinirt_plugin__out_) \
    {                                                                                                          \
        (void)infinirt_plugin__loader_minor_;                                                                  \
        if (infinirt_plugin__out_ == NULL)                                                                     \
            return INFINI_STATUS_NULL_POINTER;                                                                 \
        *infinirt_plugin__out_ = NULL;                                                                         \
        if (infinirt_plugin__loader_major_ != INFINIRT_PLUGIN_ABI_MAJOR)                                       \
            return INFINI_STATUS_DEVICE_ARCHITECTURE_NOT_SUPPORTED;                                            \
        *infinirt_plugin__out_ = &(table);                                                                     \
        return INFINI_STATUS_SUCCESS;                                                                          \
    }

#ifdef __cplusplus
}
#endif

#endif /* INFINIRT_PLUGIN_H_ */
