/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_internal.h - internals of the CPU reference plugin.
 *
 * Two queues, chosen once by init from `streams` in [plugin.cpu]
 * (cpu__queue below; the entries call through it and never ask the mode):
 *
 *  - inline (cpu_inline.c; the default, as InfiniCore's CPU runtime is):
 *    every operation, "asynchronous" copies, fills, host functions, event
 *    records and waits included, is done on the caller's thread before the
 *    entry returns.
 *    There are no worker threads at all; a record completes at once and
 *    takes its timestamp then, so elapsed times still measure the work
 *    queued between two records.  InfiniCore's CPU operators run on the
 *    caller's thread right after an "async" copy and rely on this.
 *
 *  - async: streams are cheap objects, each with an in-order ring of
 *    commands (cpu_queue.c), run by a bounded pool of worker threads
 *    (cpu_pool.c): a stream with work is queued on the pool once, and one
 *    worker at a time drains it, so its order holds and work runs off the
 *    caller's thread, as on a GPU.  For exercising asynchronous code (the allocator's
 *    stream-ordered reuse, events) without one.  A command that must wait
 *    (an event wait, a blocking-stream wait) parks its stream instead of
 *    holding a worker; whoever completes what it waits for queues it again.
 *
 * Blocking streams (async queue; inline work is ordered anyway), as CUDA
 * orders its streams with the legacy default stream: a command on the
 * default (NULL) stream first waits (CMD_AFTER, on the default stream's
 * worker) for what is queued on each blocking stream of the device, and a
 * command on a blocking stream first waits for what is queued on the default
 * stream; synchronous Memcpy/Memset wait on the host for both.  Every
 * kind of command counts, a wait for an event whose record has completed
 * too (it queues those waits alone, cpu_queue.c CMD_ORDER).  Each stream
 * counts the commands queued and done, so "what is queued" is a count to
 * reach; `covered` and `after_default` remember the counts already waited
 * for, so idle or already-waited-for streams add no command.  Non-blocking
 * streams take part in none of it.
 *
 * Native path (include/infinirt_cpu.h): a stream object begins with a
 * pointer to a public table of functions, so a library holding the stream
 * handle queues work on it directly, in order with the rest.
 *
 * Names (plugins/README.md): what the files of this plugin share is named
 * cpu__* (CPU__* for macros); file-local functions are static and
 * unprefixed; only infinirtPluginEntry is exported (hidden visibility).
 * Template: a vendor's <p>_internal.h holds the same kind of thing: the
 * device struct, the objects behind stream and event handles, and one
 * declaration per entry the files share with <p>_plugin.c's table.
 */
#ifndef INFINIRT_PLUGIN_CPU_INTERNAL_H_
#define INFINIRT_PLUGIN_CPU_INTERNAL_H_

#include "infinirt_cpu.h"
#include "infinirt_plugin.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct cpu_stream cpu_stream;
typedef struct cpu_event cpu_event;

/* Async mode: a copy or fill of at most this many bytes, on a stream with
 * nothing pending, runs on the caller's thread (cpu_queue.c, enqueue). */
#define CPU__CALLER_RUN_MAX (16u * 1024u)

/* One pause of a spin-wait loop (the pool's idle workers, waiting callers). */
#if defined(__x86_64__) || defined(__i386__)
#define CPU__RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU__RELAX() __asm__ __volatile__("yield")
#else
#define CPU__RELAX() ((void)0)
#endif

/* A stream parked on another stream's count (an event wait is one: it waits
 * for the count the record's stream reaches with it): a link in that
 * stream's list of what waits for it, with the count to reach.  Under that
 * stream's mutex. */
typedef struct cpu_parked {
    struct cpu_parked *next;
    uint64_t until;
} cpu_parked;

#define CPU__MAX_DEVICES 64

typedef struct {
    int index;
    atomic_size_t used;                   /* raw device bytes held */
    _Atomic(cpu_stream *) default_stream; /* async mode: created on first use */
    /* Async mode: the streams that had work queued since the last walk of
     * the list (each held by it), to find what a default-stream command
     * or a drain waits for without looking at idle streams.  Pushed
     * without a lock; `lock` lets one walk at a time take it, keep the
     * streams with work and let the others go (cpu_queue.c, "the busy
     * list").  Nothing else of a stream's life touches the device. */
    _Atomic(cpu_stream *) busy;
    pthread_mutex_t lock;
    atomic_int listed;  /* streams on `busy` */
    atomic_int walk_at; /* twice what the last walk kept: a push past it (and 64 more) walks */
    /* Async mode: commands queued on any stream of the device (rings, the
     * native path included) and not yet done.  Raised when a command is
     * queued, lowered (release) when it is done: 0 lets a synchronous copy
     * and device_query skip `lock` and the stream scan.  Work run on the
     * caller's thread is never counted: it is done when its call returns. */
    atomic_uint_fast64_t pending;
} cpu_device;

/* An event is its latest record.  A record takes the next generation
 * (`recorded`); while it is queued and not yet run, `on` and `at` say
 * where: the stream (held) and the count of commands that stream has done
 * once the record has run.  A wait (StreamWaitEvent, EventSynchronize)
 * takes that pair when it is called and waits for the stream's count, so
 * it is bound to the record current at the call: a later record replaces
 * the pair without touching a wait already made (CUDA's semantics; a
 * single "highest generation completed" would let a later record that
 * completes first release it).  `completed` is raised only by the record
 * that is still the latest when it completes, so `completed >= recorded`
 * says the latest record is complete.  Written under mu; `recorded` and
 * `completed` are read without it, so a query or a synchronize of a
 * completed event takes no lock. */
struct cpu_event {
    pthread_mutex_t mu;
    uint32_t flags;
    atomic_int refs;            /* the handle + each queued record */
    _Atomic uint64_t recorded;  /* generation of the latest record */
    _Atomic uint64_t completed; /* generation of the latest record, once it completed */
    double completed_at_ms;     /* CLOCK_MONOTONIC of `completed` */
    cpu_stream *on;             /* the latest record's stream while it is pending, held; else NULL (mu) */
    uint64_t at;                /* ... and the count `on` reaches with it (mu) */
    int device;
};

/* One stream.  `pub` first, so the handle is the public view
 * (infinirt_cpu.h); the rest is the async queue's (cpu_queue.c), what a
 * copy and a synchronize read first in one cache line. */
struct cpu_stream {
    infinirtCpuStreamHeader pub; /* first: the public view (infinirt_cpu.h) */
    cpu_device *dev;
    /* CPU__ST_* (below; cpu_queue.c says what each means): changed under
     * mu, except that a caller running small work claims an IDLE stream
     * (and gives it back) with an atomic operation alone. */
    _Atomic int sched;
    bool blocking; /* ordered with the default stream */
    bool is_default;
    /* Commands queued / completed: written under mu, read without it. */
    _Atomic uint64_t queued, done;
    /* The owner, each CMD_AFTER aimed at the stream, each host thread
     * waiting on it, each event whose latest record is queued on it and
     * the device's busy list: the memory outlives stream_free while they
     * last. */
    atomic_int refs;
    atomic_bool on_busy;   /* on dev->busy */
    cpu_stream *busy_next; /* ... its link (cpu_queue.c) */
    pthread_mutex_t mu;
    pthread_cond_t cv_done; /* a command completed while waiters > 0 */
    int waiters;
    struct cpu_cmd *ring; /* cap entries; count from `first` on */
    uint32_t cap, first, count;
    uint64_t after_default; /* blocking: the default stream's count we already wait for */
    uint64_t covered;       /* blocking: our count the default stream already waits for */
    bool rewake;            /* woken while RUNNING, before it could park */
    cpu_parked park;        /* on what the first command waits for */
    cpu_parked *parked;     /* streams waiting for our count (mu) */
    cpu_stream *run_next;   /* on the pool's run queue (the pool's lock) */
};

extern void (*cpu__log)(int level, const char *plugin, const char *fmt, ...);
/* The loader's tracing functions while it writes a trace (async mode), else
 * NULL: a queued command takes an id and the worker reports when it ran
 * (cpu_queue.c, cpu_pool.c).  Set once by init. */
extern const infinirtPluginTrace *cpu__trace;

/* [plugin.cpu] (cpu_config.c): a bad value is reported and its default kept. */
typedef struct {
    int devices;
    size_t memory_limit; /* per device; 0: none */
    bool inline_mode;    /* streams = inline */
    int workers;         /* async: the pool's threads kept */
    int max_workers;     /* async: the most while workers sit in host functions */
} cpu__config;
/* The settings in use: parsed by init before it finds the devices, and
 * read-only afterwards (cpu_config.c). */
extern cpu__config cpu__settings;
void cpu__config_parse(const infinirtPluginInitArgs *args, cpu__config *cfg);

/* Nonzero while this thread runs a host function (either mode).  Calls that
 * wait (synchronize, a synchronous copy or fill) are refused there: waiting
 * for the stream the function runs on, or for work queued behind it, would
 * never end. */
extern __attribute__((tls_model("initial-exec"))) _Thread_local int cpu__in_host_fn;
/* Log that `call` was made from a host function; INVALID_STATE. */
infiniStatus_t cpu__refuse_in_host_fn(const char *call);
#define CPU__REFUSE_IN_HOST_FN(call)                   \
    do {                                               \
        if (__builtin_expect(cpu__in_host_fn != 0, 0)) \
            return cpu__refuse_in_host_fn(call);       \
    } while (0)
/* Run fn(user) as a host function on this thread (sets cpu__in_host_fn). */
void cpu__call_host_fn(infinirtPluginHostFn fn, void *user);

/* The worker pool (cpu_pool.c), async mode, sized by cpu__settings. */
/* s has work and is not on the pool: queue it. */
void cpu__pool_push(cpu_stream *s);
/* OUT_OF_MEMORY when no worker thread exists and none can be started. */
infiniStatus_t cpu__pool_ready(void);
/* Stop the workers once the queued streams are drained. */
void cpu__pool_shutdown(void);

/* The async queue's parts (cpu_queue.c queues and waits, cpu_pool.c runs,
 * cpu_busy.c finds the streams with work).  A stream's scheduling state
 * (cpu_stream.sched; cpu_queue.c says how it moves): */
enum { CPU__ST_IDLE, CPU__ST_CALLER, CPU__ST_QUEUED, CPU__ST_RUNNING, CPU__ST_PARKED };

/* A command in a stream's ring.  CPU__CMD_ORDER is never in a ring: it
 * asks enqueue for the blocking-stream order alone, for an action with no
 * work of its own (a wait for a record that has already completed). */
enum cpu_cmd_kind { CPU__CMD_COPY, CPU__CMD_FILL, CPU__CMD_HOST_FN, CPU__CMD_RECORD, CPU__CMD_AFTER, CPU__CMD_ORDER };
typedef struct cpu_cmd {
    enum cpu_cmd_kind kind;
    uint64_t trace_id; /* the loader's id for the trace, 0 when none (cpu__trace) */
    union {
        struct {
            void *dst;
            const void *src;
            size_t n;
        } copy;
        struct {
            void *dst;
            int value;
            size_t n;
        } fill;
        struct {
            infinirtPluginHostFn fn;
            void *user;
        } host;
        struct {
            cpu_event *e;
            uint64_t gen;
        } ev;
        /* Wait until stream s has completed `count` commands: a
         * blocking-stream order, or an event wait (the count s reaches
         * with the record the wait was bound to). */
        struct {
            cpu_stream *s;
            uint64_t count;
        } after;
    } u;
} cpu_cmd;

/* A stream to wait for, and the count it must reach (held). */
typedef struct cpu_after {
    struct cpu_after *next;
    cpu_stream *s;
    uint64_t count;
} cpu_after;
void cpu__afters_free(cpu_after *w, bool release); /* and put their streams, with `release` */

/* The busy list (cpu_busy.c).  Work was just queued in s's ring (under
 * s->mu): list s unless it is listed; true when the list should be walked
 * (once s->mu is let go). */
bool cpu__busy_note(cpu_stream *s);
enum cpu__busy_set {
    CPU__FOR_NONE,    /* only drop the idle streams from the list */
    CPU__FOR_DEFAULT, /* blocking streams the default stream does not yet wait for */
    CPU__FOR_SYNC,    /* a synchronous copy: blocking streams and the default one */
    CPU__FOR_DEVICE,  /* a device synchronize: every stream */
};
/* Walk d's busy list: drop the idle streams; of the others, those in `set`
 * into *out with the count to reach.  -1 out of memory (nothing in *out). */
int cpu__busy_walk(cpu_device *d, enum cpu__busy_set set, cpu_after **out);

/* Devices (cpu_device.c). */
extern cpu_device cpu__devices[CPU__MAX_DEVICES];
extern int cpu__ndevices;
/* Device dev, or NULL when there is no such device. */
static inline cpu_device *cpu__device(int dev)
{
    return dev >= 0 && dev < cpu__ndevices ? &cpu__devices[dev] : NULL;
}
int cpu__device_count(void);
void cpu__devices_init(int count);

/* Whether a synchronous copy or fill on dev runs at once, with no call:
 * not from inside a host function, and nothing queued on the device
 * (inline streams never queue).  Else cpu__sync_point decides (and
 * refuses, waits, or reports an unknown device). */
static inline bool cpu__sync_free(int dev)
{
    if (cpu__in_host_fn != 0)
        return false;
    cpu_device *d = cpu__device(dev);
    return d != NULL && atomic_load_explicit(&d->pending, memory_order_acquire) == 0;
}
/* Before a synchronous copy or fill (`call`, for the refusal's message):
 * wait for the work queued on the default stream and on every blocking
 * stream of dev. */
infiniStatus_t cpu__sync_point(int dev, const char *call);

/* What cpu__queue_ops.drain waits for. */
enum cpu__drain {
    CPU__DRAIN_SYNC,   /* a synchronous copy or fill: the default stream and the blocking streams */
    CPU__DRAIN_DEVICE, /* device_synchronize: every stream */
};

/* The queue: how the work of a stream is done, chosen once by init from
 * `streams` (cpu__queue_inline in cpu_inline.c, cpu__queue_async in
 * cpu_queue.c), as each stream's native table is.  The entries call
 * through it and never ask which it is.  `stream` NULL is dev's default
 * stream; work returns SUCCESS, OUT_OF_MEMORY (nothing queued), or
 * DEVICE_NOT_FOUND (a NULL stream of no device).  Template: a backend
 * with its own queues calls its driver in the entries instead. */
typedef struct {
    uint32_t device_flags;              /* what get_device_flags says */
    const infinirtCpuStreamOps *native; /* each stream's public table */
    /* A new stream object, before it is handed out; the destroy of one
     * (after its work, before the owner's reference goes); the last
     * reference to one went. */
    infiniStatus_t (*stream_open)(cpu_stream *s);
    void (*stream_close)(cpu_stream *s);
    void (*stream_free)(cpu_stream *s);
    /* Work queued on a stream, in its order. */
    infiniStatus_t (*copy)(int dev, void *stream, void *dst, const void *src, size_t n);
    infiniStatus_t (*fill)(int dev, void *stream, void *dst, int value, size_t n);
    infiniStatus_t (*host_fn)(int dev, void *stream, infinirtPluginHostFn fn, void *user);
    infiniStatus_t (*record)(int dev, void *stream, cpu_event *e);
    infiniStatus_t (*wait_event)(int dev, void *stream, cpu_event *e);
    /* Host waits and questions (the device known to exist). */
    void (*sync)(cpu_stream *s);
    bool (*idle)(cpu_stream *s);
    void (*event_wait)(cpu_event *e); /* until its latest record (as of the call) has run */
    infiniStatus_t (*drain)(cpu_device *d, enum cpu__drain what);
    /* Let every stream go (plugin shutdown). */
    void (*shutdown)(void);
} cpu__queue_ops;
/* (Hidden: the plugin's own, so each entry reads it in one instruction.) */
extern __attribute__((visibility("hidden"))) const cpu__queue_ops *cpu__queue;
extern const cpu__queue_ops cpu__queue_inline, cpu__queue_async;

/* Stream objects (cpu_stream.c).  A reference for each holder (the handle,
 * a command aimed at the stream, a waiting thread); the last put frees. */
void cpu__stream_hold(cpu_stream *s);
void cpu__stream_put(cpu_stream *s);
/* The device's default stream (async streams), created on first use; NULL
 * when out of memory. */
cpu_stream *cpu__default_stream(int dev);
/* The native tables (infinirt_cpu.h), one per queue. */
extern const infinirtCpuStreamOps cpu__native_inline, cpu__native_async;

/* Events (cpu_event.c). */
void cpu__event_put(cpu_event *e);
/* A record of e queued on s (under s->mu), where s's count reaches `at`
 * when it has run: its generation.  The event holds s meanwhile. */
uint64_t cpu__event_queued(cpu_event *e, cpu_stream *s, uint64_t at);
void cpu__event_complete(cpu_event *e, uint64_t gen); /* that record ran */
void cpu__event_record_now(cpu_event *e);             /* a record complete at once */
/* The latest record, when it is pending: true, with its stream (held: the
 * caller puts it) and the count to wait for; false when there is nothing
 * to wait for (never recorded, or complete). */
bool cpu__event_pending(cpu_event *e, cpu_stream **s, uint64_t *at);

/* The entries of the ops table, each in the file of its group (cpu_plugin.c
 * holds init, shutdown and get_device_info). */
infiniStatus_t cpu__device_synchronize(int dev); /* cpu_device.c */
infiniStatus_t cpu__device_query(int dev, int *idle);
infiniStatus_t cpu__get_device_flags(int dev, uint32_t *flags);
infiniStatus_t cpu__device_get_native(int dev, void **device, void **context);

infiniStatus_t cpu__stream_create(int dev, void **stream); /* cpu_stream.c */
infiniStatus_t cpu__stream_create_with_flags(int dev, uint32_t flags, void **stream);
infiniStatus_t cpu__stream_destroy(int dev, void *stream);
infiniStatus_t cpu__stream_synchronize(int dev, void *stream);
infiniStatus_t cpu__stream_query(int dev, void *stream, int *idle);
infiniStatus_t cpu__stream_wait_event(int dev, void *stream, void *event);
infiniStatus_t cpu__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user);

infiniStatus_t cpu__event_create(int dev, uint32_t flags, void **event); /* cpu_event.c */
infiniStatus_t cpu__event_destroy(int dev, void *event);
infiniStatus_t cpu__event_record(int dev, void *event, void *stream);
infiniStatus_t cpu__event_query(int dev, void *event, int *complete);
infiniStatus_t cpu__event_synchronize(int dev, void *event);
infiniStatus_t cpu__event_elapsed_time(int dev, float *ms, void *start, void *end);

infiniStatus_t cpu__get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes); /* cpu_memory.c */
/* The machine's RAM (sysinfo), for device info and mem info. */
size_t cpu__machine_total(void);
infiniStatus_t cpu__malloc_device(int dev, void **ptr, size_t size);
infiniStatus_t cpu__free_device(int dev, void *ptr);
infiniStatus_t cpu__malloc_host(int dev, void **ptr, size_t size);
infiniStatus_t cpu__free_host(int dev, void *ptr);
infiniStatus_t cpu__memcpy(int dev, void *dst, const void *src, size_t size, int kind);
infiniStatus_t cpu__memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream);
infiniStatus_t cpu__memset(int dev, void *ptr, int value, size_t size);
infiniStatus_t cpu__memset_async(int dev, void *ptr, int value, size_t size, void *stream);

#endif /* INFINIRT_PLUGIN_CPU_INTERNAL_H_ */
