/* SPDX-License-Identifier: Apache-2.0 */
/*
 * internal.h - the loader's internal types and functions.
 *
 * Names with the `infinirt__` prefix are internal: never exported (hidden
 * visibility), never part of the API.  The public functions are defined in
 * runtime.c, stream.c, event.c, memory.c, capture.c, graph.c, native.c,
 * snapshot.c, and for the names, the reports and the trace in common.c,
 * plugin.c, config_report.c and trace.c (docs/architecture.md has the
 * map); the machinery they share is declared here.
 */
#ifndef INFINIRT_LOADER_INTERNAL_H_
#define INFINIRT_LOADER_INTERNAL_H_

#include "alloc.h"
#include "api_list.h"
#include "handles.h"
#include "infinirt.h"
#include "infinirt_plugin.h"
#include "log.h"
#include "ops_list.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct infinirt__plugin infinirt__plugin;
typedef struct infinirt__device infinirt__device;
typedef struct infinirt__stream infinirt__stream;
typedef struct infinirt__event infinirt__event;
typedef struct infinirt__capture infinirt__capture;

/* Each public function returning a status is defined under its own name
 * and tests the trace flag first (INFINIRT__TRACE_ENTRY, trace.h).  Those
 * returning const char * are defined as infinirt__impl_NAME (hidden, an
 * asm label made from api_list.h) and trace_api.c defines each public
 * NAME, which traces the call when a trace is written: the loader calls
 * them itself (log lines) from threads and places no call is made from.
 * Calls between the loader's files go straight to those definitions. */
#ifndef INFINIRT__API_WRAPPERS
#define INFINIRT__RENAME_S(name, params, args, desc)
#define INFINIRT__RENAME_C(name, params, args, desc) const char *name params __asm__("infinirt__impl_" #name);
INFINIRT__API_LIST(INFINIRT__RENAME_S, INFINIRT__RENAME_C)
#undef INFINIRT__RENAME_S
#undef INFINIRT__RENAME_C
#endif

/* ------------------------------------------------------------- config */

typedef struct {
    char *key, *value;
    int line;
    const char *file; /* the file it was read from (one of infinirt__config.files) */
} infinirt__kv;

typedef struct {
    char name[64]; /* NAME of [plugin.NAME] */
    /* The resolved path (owned); NULL while no key or folder set it, then
     * the default <plugin_dir>/libinfinirt_NAME.so once the config is read.
     * Held by pointer, as why_off: a config of many sections costs a few
     * bytes for each, not kilobytes. */
    char *library;
    /* Where library was set: the key's file and line (NULL, 0 when no key
     * set it: found in a plugin folder, or the default), so a file that
     * cannot be loaded is reported with the line that named it. */
    const char *library_file;
    int library_line;
    bool enabled;
    char *why_off;      /* why it is not loaded when !enabled (the report's message; owned), or NULL */
    infinirt__kv *keys; /* keys other than library/enabled, passed to the plugin */
    size_t nkeys, capkeys;
} infinirt__plugin_conf;

/* One line of the config report (infinirtGetConfigEntry): strings owned
 * by the config, never freed (the report lives as long as the process). */
typedef struct {
    int kind; /* infinirtConfigEntryKind_t */
    char *name, *value, *message;
    int problem;
} infinirt__config_entry;

typedef struct infinirt__visible infinirt__visible; /* INFINIRT_VISIBLE_DEVICES (config_env.c) */

typedef struct {
    char path[1024];             /* the config file read, "" = embedded default */
    char dir[1024];              /* its folder */
    int log_level;               /* -1 = not set */
    char plugin_dir[1024];       /* resolved; "" = beside the loader */
    const char *plugin_dir_file; /* where plugin_dir was set (NULL: the default) */
    int plugin_dir_line;
    infiniDevice_t default_type;
    int default_id;
    infinirt__alloc_config alloc;
    infinirt__plugin_conf *plugins;
    size_t nplugins, capplugins;
    /* plugins by name (config_keys.c): a config of many [plugin.NAME]
     * sections is read in linear time. */
    struct infinirt__plugin_names *plugin_names;
    char *only;            /* [loader] plugins = LIST or INFINIRT_PLUGINS (comma list), NULL = every plugin found */
    const char *only_file; /* where it was set: a file (with only_line), or NULL for INFINIRT_PLUGINS */
    int only_line;
    /* Every file read, the main one first, then the drop-ins in the order
     * read: keys point at these names for their messages. */
    char **files;
    size_t nfiles, capfiles;
    infinirt__visible *visible;      /* NULL: INFINIRT_VISIBLE_DEVICES unset */
    infinirt__config_entry *entries; /* the config report, in order */
    size_t nentries, capentries;
    size_t nproblems;            /* WARNING entries, and those the report did not keep */
    struct infinirt__seen *seen; /* while reading: the keys seen (config_keys.c) */
    /* [loader] trace = FILE, or INFINIRT_TRACE, which wins: "" = no trace
     * (trace.c, docs/tracing.md); where the key was set (NULL: not by a file). */
    char trace[1024];
    const char *trace_file;
    int trace_line;
    size_t trace_max_mb; /* [loader] trace_max_mb: the trace file's limit, MiB */
} infinirt__config;

/* Find and read the config (search order: the README's configuration section).  Returns 0;
 * malformed lines and bad values are logged with file:line and skipped.
 * Returns -1, with an error logged, when the file INFINIRT_CONFIG names
 * cannot be used (missing, not a regular file, empty, binary, not INI):
 * the operator asked for that file, so initialisation fails rather than
 * run with another one. */
int infinirt__config_load(infinirt__config *cfg);
/* The devices of device type `type` that INFINIRT_VISIBLE_DEVICES shows,
 * of the `count` its plugin declared: their plugin indices, in the
 * loader's order, into map (room for count).  Returns how many; count when the
 * variable is unset or does not name the type.  Logs and describes in why
 * (for the plugin's report message; "" when there is nothing to say) what
 * it hid or could not show. */
int infinirt__config_visible(const infinirt__config *cfg, infiniDevice_t type, int count, int *map, char *why,
                             size_t why_size);
/* Log a problem with key `index` of a plugin's section, with file:line,
 * section, key and value in front of the plugin's text (the ABI's
 * config_warnv). */
void infinirt__config_warn_key(const infinirt__config *cfg, const infinirt__plugin_conf *pc, size_t index,
                               const char *fmt, va_list ap);

/* The INI reader (ini.c).  It calls section() for each [NAME] header,
 * key() for each KEY = VALUE in a section and problem() for each line it
 * cannot use, with 1-based line numbers. */
typedef struct infinirt__ini_sink infinirt__ini_sink;
struct infinirt__ini_sink {
    void (*section)(infinirt__ini_sink *sink, const char *name, int line);
    void (*key)(infinirt__ini_sink *sink, const char *section, const char *key, const char *value, int line);
    void (*problem)(infinirt__ini_sink *sink, int line, const char *what);
};
/* Read len bytes of text.  Returns the number of section headers and keys
 * found (0: nothing of INI in it). */
size_t infinirt__ini_parse(const char *text, size_t len, infinirt__ini_sink *sink);
/* "cpu", "nvidia"/"cuda", "opencl", ...: the device type, or -1. */
int infinirt__parse_device_type(const char *name);

/* ------------------------------------------------------------- plugins */

/* The entries of infinirtPluginOps, in table order: INFINIRT__OP_name is
 * the entry's row of ops_list.h, its capability bit and its row of the
 * dispatch table. */
typedef enum {
#define INFINIRT__OP_ENUM_(name, ...) INFINIRT__OP_##name,
    INFINIRT__OPS_LIST(INFINIRT__OP_ENUM_)
#undef INFINIRT__OP_ENUM_
        INFINIRT__OP_COUNT
} infinirt__op;

struct infinirt__plugin {
    char name[64];
    const char *path; /* its conf's library */
    infinirtPluginStatus_t status;
    char message[512];
    char *warning; /* an unsafe file or folder (owned; NULL: none): shown with the report's message */
    void *dl;
    /* &table once the handshake passed: the loader's own complete copy of
     * the plugin's entries, NULL ones replaced by NOT_IMPLEMENTED stubs, so
     * every entry may be called without a check.  caps has bit
     * INFINIRT__OP_x set when the plugin brought entry x itself. */
    const infinirtPluginOps *ops;
    infinirtPluginOps table;
    uint64_t caps;
    infiniDevice_t type;
    uint32_t abi_major, abi_minor;
    int device_count;          /* the devices the loader serves: p->devices */
    int declared_count;        /* the plugin's own count (INFINIRT_VISIBLE_DEVICES may show fewer) */
    infinirt__device *devices; /* device_count entries */
    infinirt__pool *host_pool; /* MallocHost memory of this plugin */
    /* The tracing functions it was given at init (ABI 1.7), with the flags
     * it set in them; unused when no trace is written. */
    infinirtPluginTrace trace;
    /* Plugins start on first use (infinirt__plugin_start): infinirtInit
     * only reads the config and does each plugin's handshake, so a
     * CPU-only program never waits for an OpenCL platform scan.  `started`
     * is set, with release, once status, message, device_count, devices
     * and host_pool are final: only then are they read without the
     * type's start lock (plugin.c). */
    const infinirt__plugin_conf *conf;
    atomic_int started;
};

/* Build p->table from the plugin's table `theirs` (dispatch.c) and point
 * p->ops at it.  Returns 0, or -1 with the reason in why when the table
 * lacks a required entry or has entries that do not make sense together. */
int infinirt__dispatch_build(infinirt__plugin *p, const infinirtPluginOps *theirs, char *why, size_t why_size);
/* The size a table of ABI 1.minor must at least have: up to its last
 * entry, every row of ops_list.h of that minor or earlier. */
size_t infinirt__dispatch_table_size(uint32_t minor);
/* Whether the plugin brought entry `op` (a bare name: event_query). */
#define INFINIRT__HAS(plugin, op) (((plugin)->caps >> INFINIRT__OP_##op) & 1u)
/* Whether the plugin's streams may carry work the loader does not see
 * (it brought stream_query): the allocator asks it before reusing memory. */
#define INFINIRT__NATIVE_WORK(plugin) INFINIRT__HAS(plugin, stream_query)
/* Whether the plugin captures streams itself (it brought the graph
 * entries, all of them: dispatch.c refuses a part). */
#define INFINIRT__NATIVE_GRAPHS(plugin) INFINIRT__HAS(plugin, stream_begin_capture)

/* Open every configured plugin and do its handshake, recording each one's
 * status.  Never fails as a whole.  No plugin's init runs here.  Sets
 * *plugins to a new array, in config order, and returns how many it holds
 * (0 with *plugins NULL when out of memory); the caller installs them in
 * infinirt__rt before any plugin is started. */
int infinirt__plugins_load(const infinirt__config *cfg, infinirt__plugin **plugins);
/* The started plugin serving device type slot `slot`, or NULL when none
 * does (none claimed it, or its start failed or found no device); starts
 * the type first if no call has yet. */
infinirt__plugin *infinirt__plugin_of_slot(int slot);
/* The same, without starting or waiting: NULL too while the type has not
 * finished starting (then none of its devices can hold anything yet). */
infinirt__plugin *infinirt__plugin_of_slot_if_started(int slot);

/* ------------------------------------------------------------- devices */

struct infinirt__device {
    infinirt__plugin *plugin;
    int index; /* the plugin's index of the device: what every plugin call is given */
    /* The device's id within its type, its place in plugin->devices: the
     * plugin's index unless INFINIRT_VISIBLE_DEVICES renumbered the
     * devices.  Log lines, the allocator's device_id and the peers bits
     * use it. */
    int id;
    infinirtPluginDeviceInfo info;
    char uuid[64]; /* get_device_uuid's answer; "" = none */
    /* get_device_flags said DONE_AT_RETURN: no stream of the device ever
     * has work queued, so none is counted and no fence is made. */
    bool done_at_return;
    /* The plugin has stream_query (INFINIRT__NATIVE_WORK): the allocator
     * asks it whether a stream is idle and raises `submitted` itself for
     * each fence, so the loader's calls are not counted (neither on the
     * device, a counter every stream of the device would fight over, nor
     * on the stream: counts_work). */
    bool native_work;
    /* Neither done_at_return nor native_work: the loader's counts are all
     * there is to tell queued work from done, so every submission is
     * counted (infinirt__stream_note_submit). */
    bool counts_work;
    /* A trace is written and the plugin reports when the work it leaves
     * queued ran (INFINIRT_PLUGIN_TRACE_REPORTS; trace.c). */
    bool trace_reports;
    /* Created on first use (infinirt__device_pool): a device that is never
     * used costs no allocator. */
    _Atomic(infinirt__pool *) pool;
    infinirt__stream *default_stream; /* the NULL stream's loader object */
    pthread_mutex_t lock;             /* streams list, events_owned */
    infinirt__stream *streams;        /* created streams, doubly linked */
    /* Idle plugin events for fences (fence.c): a leaf lock, taken under
     * dev->lock or an allocator arena lock, never across a plugin call. */
    pthread_mutex_t event_lock;
    void **event_pool; /* under event_lock; room for events_owned */
    size_t event_pool_n, event_pool_cap;
    size_t events_owned; /* idle or in a fence; under dev->lock */
    /* Work accounting for the allocator's fences: submitted counts every
     * async operation queued on any stream of the device (on a native_work
     * device only the fences' own raises); synced_all is the value of
     * `submitted` at the last moment every stream was known idle. */
    atomic_uint_fast64_t submitted;
    atomic_uint_fast64_t synced_all;
    /* Bit i: a stream of device i of the same plugin has had asynchronous
     * work touching this device's memory (a peer memset or copy), so a
     * synchronous free here must wait for that device's streams too.  Bit
     * 63 stands for every device from 63 on.  Never cleared. */
    atomic_uint_fast64_t peers;
    /* One warning each when the plugin fails the allocator's fences. */
    atomic_bool fence_warned, query_warned, wait_warned, devq_warned;
    /* Stream captures begun through infinirt and not yet ended on this
     * device (capture.c; the list is under the capture lock). */
    atomic_int captures;
    infinirt__capture *capture_list;
};

/* ------------------------------------------------------------- handles */

struct infinirt__stream {
    uint32_t slot; /* handle table slot (handles.c) */
    infinirt__device *dev;
    void *ps;     /* plugin stream; NULL for the default stream */
    void *native; /* the handle value (stream_get_native, else ps) */
    bool is_default;
    bool wrapped;      /* made by StreamCreateFromNative */
    bool non_blocking; /* created with INFINIRT_STREAM_NON_BLOCKING */
    /* The capture this stream takes part in (began it, or joined it by
     * waiting on an event recorded in it); NULL when not capturing.  Read
     * with no lock on every operation; set and cleared under the capture
     * lock (capture.c), which anyone who uses the capture takes. */
    _Atomic(infinirt__capture *) capture;
    uint64_t id;                    /* unique for the process: a freed stream's address may come back */
    atomic_int pins;                /* device_sync is using it with no lock held: not freed until 0 */
    atomic_uint_fast64_t submitted; /* async operations queued (only where dev->counts_work) */
    atomic_uint_fast64_t synced;    /* `submitted` as of the last completed sync */
    /* StreamDestroy drained it: the last reference's drop drains again
     * only if loader calls queued work after that drain. */
    atomic_bool destroy_drained;
    infinirt__stream *prev, *next; /* in dev->streams */
    /* The trace (trace.c): the stream's track (0 until its first work),
     * and the newest work of a plugin that does not report, whose span
     * ends when the stream is next seen idle (0: none). */
    atomic_uint trace_tid;
    _Atomic uint64_t trace_open;
};

struct infinirt__event {
    uint32_t slot;
    infinirt__device *dev;
    void *pe;
    void *native; /* the handle value (event_get_native, else pe) */
    uint32_t flags;
    /* The loader capture its last record was made in (NULL: a plain
     * record, or none); under the capture lock, read without it. */
    _Atomic(infinirt__capture *) captured;
    uint64_t captured_seq; /* that record's place in the capture */
    infinirt__stream *captured_on;
};

/* (The handle kinds of the registry are in handles.h.) */
/* The registry for stream.c, event.c and graph.c: register obj under the
 * handle value key (one reference, live; 0, -1 without memory, -2 when the
 * value is taken); take a reference on a live handle (NULL if none; `put`,
 * the kind's reference drop, gives back one taken on the way on a handle
 * that turned out stale); kill a handle (0, or -1 if it was not live); drop
 * a reference (the object when it was the last, else NULL). */
typedef void infinirt__handle_put_fn(uint32_t kind, void *obj);
int infinirt__handle_register(uint32_t kind, void *obj, uintptr_t key, uint32_t *slot);
void *infinirt__handle_get(uint32_t kind, const void *h, infinirt__handle_put_fn *put);
int infinirt__handle_kill(uint32_t kind, const void *h, uint32_t slot);
/* The kind's release of an object whose last reference is gone, for the
 * drops and destroys below: called later by the registry itself when a
 * call still borrowed the object then (see infinirt__handle_borrow_slow). */
typedef void infinirt__handle_free_fn(void *obj);
void *infinirt__handle_drop(uint32_t kind, uint32_t slot, infinirt__handle_free_fn *release);
/* Kill a handle and drop its own reference at once, with no reference
 * taken first: -1 if it was not live; else 0 and *last = the object when
 * that was its last reference (NULL: a user's drop will return it). */
int infinirt__handle_destroy(uint32_t kind, const void *h, void **last, infinirt__handle_free_fn *release);
/* Borrow a live handle for the length of one call, with no reference when
 * the process allows it (handles.c, "borrows"): the object, or NULL if h
 * is not live.  *use says how it is held; give it back with
 * infinirt__handle_return when *use >= 0, else drop the reference taken
 * instead.  The object must not outlive the call (store nothing that
 * keeps it: take a reference for that). */
void *infinirt__handle_borrow_slow(uint32_t kind, const void *h, infinirt__handle_put_fn *put, int *use);
/* (infinirt__handle_borrow_mine, handles.h, is the inline borrow that
 * comes first, and infinirt__handle_return gives a borrow back.) */
/* What infinirt__handle_register's failure rc means, for the log. */
const char *infinirt__handle_register_error(int rc);

/* Take a reference to a live stream/event handle; NULL if not live.
 * A NULL stream handle resolves to the default stream of `fallback`. */
infinirt__stream *infinirt__stream_get(infinirtStream_t h);
void infinirt__stream_put(infinirt__stream *s);
infinirt__event *infinirt__event_get(infinirtEvent_t h);
void infinirt__event_put(infinirt__event *e);

/* A stream or event borrowed for one call, and given back.  The inline
 * borrow first (infinirt__handle_borrow_mine); the full one out of line
 * (infinirt__handle_borrow_slow). */
infinirt__stream *infinirt__stream_borrow_slow(infinirtStream_t h, int *use);
infinirt__event *infinirt__event_borrow_slow(infinirtEvent_t h, int *use);
static inline __attribute__((always_inline)) infinirt__stream *infinirt__stream_borrow(infinirtStream_t h, int *use)
{
    infinirt__stream *s = infinirt__handle_borrow_mine(INFINIRT__KIND_STREAM, h, use);
    return __builtin_expect(s != NULL, 1) ? s : infinirt__stream_borrow_slow(h, use);
}
static inline __attribute__((always_inline)) infinirt__event *infinirt__event_borrow(infinirtEvent_t h, int *use)
{
    infinirt__event *e = infinirt__handle_borrow_mine(INFINIRT__KIND_EVENT, h, use);
    return __builtin_expect(e != NULL, 1) ? e : infinirt__event_borrow_slow(h, use);
}
static inline void infinirt__stream_return(infinirt__stream *s, int use)
{
    if (use >= 0)
        infinirt__handle_return(use);
    else
        infinirt__stream_put(s);
}
static inline void infinirt__event_return(infinirt__event *e, int use)
{
    if (use >= 0)
        infinirt__handle_return(use);
    else
        infinirt__event_put(e);
}

/* Resolve a stream argument: NULL → default stream of `dev` (no reference
 * taken), else a live handle (reference taken; release with
 * infinirt__stream_put).  Logs and returns BAD_PARAM for dead handles. */
infiniStatus_t infinirt__stream_resolve(infinirtStream_t h, infinirt__device *dev, const char *fn,
                                        infinirt__stream **out);
/* Log that stream h is not a live stream and return BAD_PARAM: what
 * every call says of a stream handle it cannot resolve. */
infiniStatus_t infinirt__stream_not_live(infinirtStream_t h, const char *fn);
/* infinirt__stream_resolve with the stream borrowed (give it back with
 * infinirt__stream_return(*out, *use)). */
static inline __attribute__((always_inline)) infiniStatus_t
infinirt__stream_resolve_borrow(infinirtStream_t h, infinirt__device *dev, const char *fn, infinirt__stream **out,
                                int *use)
{
    if (h == NULL) {
        *use = -1;
        *out = dev->default_stream; /* no reference: stream_put skips it */
        return INFINI_STATUS_SUCCESS;
    }
    infinirt__stream *s = infinirt__stream_borrow(h, use);
    if (__builtin_expect(s == NULL, 0))
        return infinirt__stream_not_live(h, fn);
    *out = s;
    return INFINI_STATUS_SUCCESS;
}

/* Note async work queued on s; call once the plugin has queued it (a sync
 * that read the counts before then did not cover it).  The stream's count
 * first: whoever reads the device's count and then the streams' (the
 * allocator's "every stream idle" checks) sees this stream busy whenever
 * that device count includes the work.  Only a device that counts_work
 * counts: on a done_at_return one the work is complete already, and on a
 * native_work one nothing reads the counts as "work queued" - whoever
 * asks whether a stream is idle asks the plugin (infinirt__stream_busy),
 * and each fence raises the device's count itself (fence.c) - so the
 * common path there takes no locked instruction of the loader's, and a
 * synchronize after it has nothing to raise. */
static inline void infinirt__stream_note_submit_on(infinirt__stream *s, infinirt__device *dev)
{
    if (!dev->counts_work)
        return;
    atomic_fetch_add_explicit(&s->submitted, 1, memory_order_release);
    atomic_fetch_add_explicit(&dev->submitted, 1, memory_order_release);
}
/* The same with s's device (infinirt__stream_note_submit_on takes it from
 * a caller that has it at hand). */
static inline void infinirt__stream_note_submit(infinirt__stream *s)
{
    infinirt__stream_note_submit_on(s, s->dev);
}
/* Work queued on a stream of `user` touches memory of `owner`. */
static inline void infinirt__note_peer(infinirt__device *owner, const infinirt__device *user)
{
    if (owner == NULL || owner == user || owner->plugin != user->plugin || user->done_at_return)
        return;
    uint_fast64_t bit = (uint_fast64_t)1 << (user->id < 63 ? user->id : 63);
    if (!(atomic_load_explicit(&owner->peers, memory_order_relaxed) & bit))
        atomic_fetch_or(&owner->peers, bit);
}
/* Raise *v to at least `to` (never lower it): the loader's "completed up
 * to" counters only move forward.  Read first: no locked instruction
 * when *v is there already (a synchronize with nothing counted since the
 * last one). */
static inline void infinirt__raise(atomic_uint_fast64_t *v, uint_fast64_t to)
{
    uint_fast64_t cur = atomic_load(v);
    while (cur < to && !atomic_compare_exchange_weak(v, &cur, to))
        ;
}
/* Record that everything dev had queued as of `seen` has completed. */
static inline void infinirt__device_note_idle(infinirt__device *dev, uint_fast64_t seen)
{
    infinirt__raise(&dev->synced_all, seen);
}
/* Record that everything s had queued as of `seen` has completed. */
static inline void infinirt__stream_note_synced(infinirt__stream *s, uint_fast64_t seen)
{
    infinirt__raise(&s->synced, seen);
}
/* Synchronize every stream of dev and note it idle: the plugin's
 * device_synchronize, or each stream in turn where it has none.  Logs and
 * returns the plugin's status on failure (device.c). */
infiniStatus_t infinirt__device_sync(infinirt__device *dev);

/* ------------------------------------------------------------- captures */

/* An operation recorded by a loader capture (capture.c), replayed at launch. */
typedef enum {
    INFINIRT__GOP_COPY,   /* memcpy_async(dst, src, size, arg = kind) */
    INFINIRT__GOP_SET,    /* memset_async(dst, arg = value, size) */
    INFINIRT__GOP_HOSTFN, /* launch_host_func(fn, ud) */
} infinirt__gop_kind;

typedef struct {
    infinirt__gop_kind kind;
    int arg;
    void *dst;
    const void *src;
    size_t size;
    infinirtHostFn_t fn;
    void *ud;
    infinirt__device *touched[2]; /* devices whose memory it touches (peers), or NULL */
} infinirt__gop;

static inline infinirt__capture *infinirt__stream_capture(infinirt__stream *s)
{
    return atomic_load_explicit(&s->capture, memory_order_acquire);
}
/* s was seen capturing: record op (a loader capture; *recorded = true), or
 * leave it to the plugin (a native capture, or the capture ended
 * meanwhile; *recorded = false).  INVALID_STATE (logged) when the capture
 * was invalidated. */
infiniStatus_t infinirt__capture_op(infinirt__stream *s, const infinirt__gop *op, const char *fn, bool *recorded);
/* A call that waits for the device's default stream (blocking_only: a
 * synchronous copy or fill) or every stream (DeviceSynchronize) on dev,
 * which has captures: loader captures it would wait for are invalidated
 * and INVALID_STATE returned; native ones are left to the plugin, whose
 * backend decides (SUCCESS: go on). */
infiniStatus_t infinirt__capture_sync_slow(infinirt__device *dev, bool blocking_only, const char *fn);
static inline infiniStatus_t infinirt__capture_sync_check(infinirt__device *dev, bool blocking_only, const char *fn)
{
    if (__builtin_expect(atomic_load_explicit(&dev->captures, memory_order_acquire) == 0, 1))
        return INFINI_STATUS_SUCCESS;
    return infinirt__capture_sync_slow(dev, blocking_only, fn);
}
/* A call that may not run on a capturing stream (StreamSynchronize,
 * StreamDestroy) met s capturing: invalidate the capture and return
 * INVALID_STATE; SUCCESS when s is not capturing after all. */
infiniStatus_t infinirt__capture_forbid(infinirt__stream *s, const char *fn);
/* EventRecord on s: note where e's record was made. */
infiniStatus_t infinirt__capture_event_record(infinirt__event *e, infinirt__stream *s, const char *fn,
                                              bool *recorded);
/* StreamWaitEvent(s, e) where s or e takes part in a loader capture. */
infiniStatus_t infinirt__capture_wait(infinirt__stream *s, infinirt__event *e, const char *fn, bool *recorded);
/* EventQuery / EventSynchronize of an event recorded in a capture. */
infiniStatus_t infinirt__capture_event_forbid(infinirt__event *e, const char *fn);
/* Number of blocks graphs hold (graph_mem.c); the free paths ask capture.c only
 * when it is not 0 or the stream captures. */
extern __attribute__((visibility("hidden"))) atomic_size_t infinirt__graph_held;
/* MallocAsync on a capturing stream (or one of a plugin with native
 * graphs, which may capture natively): *handled = true when the block came
 * from the capture's private memory. */
infiniStatus_t infinirt__capture_malloc(infinirt__stream *s, size_t size, void **out, const char *fn, bool *handled);
/* Free/FreeAsync of ptr (s: FreeAsync's stream or NULL): *handled = true
 * when a graph holds ptr or the free is deferred into a capture. */
infiniStatus_t infinirt__capture_free(void *ptr, infinirt__stream *s, const char *fn, bool *handled);
/* Whether s is capturing natively in its backend (plugins with native
 * graphs; never touches the capture).  false on error. */
bool infinirt__native_capturing(infinirt__stream *s);

/* The allocator's backend, raw memory and fences (fence.c): for a device's
 * pool, and for a plugin's host (MallocHost) pool. */
void infinirt__fence_backend_device(infinirt__pool_backend *be, infinirt__device *dev);
void infinirt__fence_backend_host(infinirt__pool_backend *be, infinirt__plugin *host_plugin);
/* Whether s may have work queued that has not completed, as the allocator's
 * fences decide it (fence.c): by the loader's counts on a device that
 * counts_work, else by asking the plugin (an error, or a stream capturing
 * in its backend, counts as busy); never on a done_at_return device.
 * Never blocks. */
bool infinirt__stream_busy(infinirt__stream *s);

/* ------------------------------------------------------------- runtime */

/* Device types: InfiniCore's 0 .. INFINI_DEVICE_TYPE_COUNT-1, then ours
 * (INFINI_DEVICE_OPENCL), which live far above InfiniCore's range.  Tables
 * indexed by type use the slot: InfiniCore's types map to themselves, ours
 * follow them. */
#define INFINIRT__TYPE_SLOTS (INFINI_DEVICE_TYPE_COUNT + 1)
static inline int infinirt__type_slot(infiniDevice_t t)
{
    if ((unsigned)t < (unsigned)INFINI_DEVICE_TYPE_COUNT)
        return (int)t;
    if (t == INFINI_DEVICE_OPENCL)
        return INFINI_DEVICE_TYPE_COUNT;
    return -1;
}
/* The type of a slot (the inverse of infinirt__type_slot). */
infiniDevice_t infinirt__slot_type(int slot);

typedef struct {
    infinirt__config cfg;
    infinirt__plugin *plugins; /* every plugin considered, in order */
    int nplugins;
    /* The device a thread starts on: set once, when a thread first needs
     * it (runtime.c, default_device). */
    infiniDevice_t default_type;
    int default_id;
    char config_path[1024];
} infinirt__runtime;

extern __attribute__((visibility("hidden"))) infinirt__runtime infinirt__rt;
/* 1 while calls may proceed: set once infinirt__rt is complete, cleared for
 * good at process exit and in a child forked after initialisation. */
extern __attribute__((visibility("hidden"))) atomic_int infinirt__ready;

/* Initialise once; returns SUCCESS, or DEVICE_NOT_INITIALIZED with a log line
 * saying why (shut down at exit, forked child). */
infiniStatus_t infinirt__init_slow(void);
static inline infiniStatus_t infinirt__ensure_init(void)
{
    if (__builtin_expect(atomic_load_explicit(&infinirt__ready, memory_order_acquire), 1))
        return INFINI_STATUS_SUCCESS;
    return infinirt__init_slow();
}

/* The device (type, id) or NULL; logs why with the calling function's name. */
infiniStatus_t infinirt__device_lookup(infiniDevice_t type, int id, const char *fn, infinirt__device **out);
/* This thread's current device (runtime.c): set by a successful
 * SetDevice, else the configured default once first asked for (dev NULL
 * until then, and when that default does not exist).  initial-exec: read
 * on every call that takes no stream. */
typedef struct {
    bool set;
    infiniDevice_t type;
    int id;
    infinirt__device *dev;
} infinirt__current;
extern _Thread_local __attribute__((tls_model("initial-exec"))) infinirt__current infinirt__tl_current;
infiniStatus_t infinirt__current_device_slow(const char *fn, infinirt__device **out);
/* This thread's current device; NULL (with status) if it does not exist. */
static inline infiniStatus_t infinirt__current_device(const char *fn, infinirt__device **out)
{
    infinirt__device *d = infinirt__tl_current.dev;
    if (__builtin_expect(d != NULL, 1)) {
        *out = d;
        return INFINI_STATUS_SUCCESS;
    }
    return infinirt__current_device_slow(fn, out);
}

/* Log a failed call: "fn: reason (STATUS)" and return the status. */
infiniStatus_t infinirt__fail(infiniStatus_t st, const char *fn, const char *fmt, ...) INFINIRT__PRINTF(3, 4);
/* The device's allocator pool, created on first use; NULL only when out
 * of memory. */
infinirt__pool *infinirt__device_pool_slow(infinirt__device *d);
static inline infinirt__pool *infinirt__device_pool(infinirt__device *d)
{
    infinirt__pool *p = atomic_load_explicit(&d->pool, memory_order_acquire);
    return __builtin_expect(p != NULL, 1) ? p : infinirt__device_pool_slow(d);
}
/* The pool if it was created, else NULL: then the device holds no block. */
static inline infinirt__pool *infinirt__device_pool_peek(infinirt__device *d)
{
    return atomic_load_explicit(&d->pool, memory_order_acquire);
}
/* Log a plugin call that failed, naming plugin, device and entry. */
infiniStatus_t infinirt__plugin_failed(infiniStatus_t st, const infinirt__device *dev, const char *entry);
/* Log a create entry that answered SUCCESS with a NULL `what` (no object to
 * destroy or register: plugin-abi.md, "Handle values") and return
 * INFINI_STATUS_INTERNAL_ERROR, which the create then fails with. */
infiniStatus_t infinirt__plugin_gave_null(const infinirt__device *dev, const char *entry, const char *what);

#include "trace.h"

#endif /* INFINIRT_LOADER_INTERNAL_H_ */
