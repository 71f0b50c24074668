/*
 * cpu.h - internals of the CPU reference plugin.
 *
 * Two modes, chosen by `streams` in [plugin.cpu]:
 *
 *  - inline (the default, as InfiniCore's CPU runtime is): every operation,
 *    "asynchronous" copies, fills, host functions, event records and waits
 *    included, is done on the caller's thread before the entry returns.
 *    There are no worker threads at all; a record completes at once and
 *    takes its timestamp then, so elapsed times still measure the work
 *    queued between two records.  InfiniCore's CPU operators run on the
 *    caller's thread right after an "async" copy and rely on this.
 *
 *  - async: streams are cheap objects, each with an in-order ring of
 *    commands, run by a bounded pool of worker threads (cpu_pool.c): a
 *    stream with work is queued on the pool once, and one worker at a time
 *    drains it, so its order holds and work runs off the caller's thread,
 *    as on a GPU.  For exercising asynchronous code (the allocator's
 *    stream-ordered reuse, events) without one.  A command that must wait
 *    (an event wait, a blocking-stream wait) parks its stream instead of
 *    holding a worker; whoever completes what it waits for queues it again.
 *
 * Blocking streams (async mode; inline work is ordered anyway), as CUDA
 * orders its streams with the legacy default stream: a command on the
 * default (NULL) stream first waits (CMD_AFTER, on the default stream's
 * worker) for what is queued on each blocking stream of the device, and a
 * command on a blocking stream first waits for what is queued on the default
 * stream; synchronous Memcpy/Memset wait on the host for both.  Each stream
 * counts the commands queued and done, so "what is queued" is a count to
 * reach; `covered` and `after_default` remember the counts already waited
 * for, so idle or already-waited-for streams add no command.  Non-blocking
 * streams take part in none of it.
 *
 * Native path (include/infinirt_cpu.h): a stream object begins with a
 * pointer to a public table of functions, so a library holding the stream
 * handle queues work on it directly, in order with the rest.
 */
#ifndef INFINIRT_PLUGIN_CPU_INTERNAL_H_
#define INFINIRT_PLUGIN_CPU_INTERNAL_H_

#include "infinirt_cpu.h"
#include "infinirt_plugin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct cpu_stream cpu_stream;
typedef struct cpu_event cpu_event;

/* Async mode: a copy or fill of at most this many bytes, on a stream with
 * nothing pending, runs on the caller's thread (cpu_stream.c, enqueue). */
#define CPU_CALLER_RUN_MAX (16u * 1024u)

/* One pause of a spin-wait loop (the pool's idle workers, waiting callers). */
#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* A stream parked on an event (or on another stream's count): a link in the
 * list of what waits for it, with the generation (count) to reach.  Under
 * the mutex of what it waits for. */
typedef struct cpu_parked {
    struct cpu_parked *next;
    uint64_t until;
} cpu_parked;

typedef struct {
    int index;
    size_t memory_limit;                  /* 0 = no limit */
    atomic_size_t used;                   /* raw device bytes held */
    pthread_mutex_t lock;                 /* streams list, default stream creation */
    cpu_stream *streams;                  /* every stream of the device, default included */
    _Atomic(cpu_stream *) default_stream; /* async mode: created on first use */
} cpu_device;

/* Written under mu; `recorded` and `completed` are read without it, so a
 * query or a synchronize of a completed event takes no lock. */
struct cpu_event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t flags;
    atomic_int refs;            /* the handle + each queued record/wait */
    _Atomic uint64_t recorded;  /* generation of the latest record */
    _Atomic uint64_t completed; /* highest generation completed */
    double completed_at_ms;     /* CLOCK_MONOTONIC of `completed` */
    int waiters;                /* host threads in cv (mu) */
    cpu_parked *parked;         /* streams whose worker waits for a generation (mu) */
    int device;
};

extern void (*cpu__log)(int level, const char *plugin, const char *fmt, ...);
/* streams = inline: set once by init, read-only afterwards. */
extern bool cpu__inline;

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

/* The worker pool (cpu_pool.c), async mode.  workers: the threads kept;
 * max_workers: the most there may be while workers sit in host functions.
 * Set by init before any stream exists. */
extern int cpu__workers, cpu__max_workers;
/* s has work and is not on the pool: queue it. */
void cpu__pool_push(cpu_stream *s);
/* OUT_OF_MEMORY when no worker thread exists and none can be started. */
infiniStatus_t cpu__pool_ready(void);
/* A worker enters / leaves a host function (it may block: the pool grows). */
void cpu__pool_fn_enter(void);
void cpu__pool_fn_leave(void);
/* Stop the workers once the queued streams are drained. */
void cpu__pool_shutdown(void);
/* Run s (popped from the pool by a worker) until it is idle, parked, or
 * has had its turn (then it is queued again). */
void cpu__stream_run(cpu_stream *s);
/* The link queueing s on the pool. */
cpu_stream **cpu__stream_run_next(cpu_stream *s);

/* Parking (cpu_stream.c): take from *list, under the lock that guards it,
 * the streams whose `until` is <= reached; wake them after unlocking. */
cpu_parked *cpu__parked_take(cpu_parked **list, uint64_t reached);
void cpu__parked_wake(cpu_parked *taken);

cpu_device *cpu__device(int dev);
int cpu__device_count(void);

/* Streams (cpu_stream.c).  `stream` NULL is the device's default stream.
 * Each returns SUCCESS or OUT_OF_MEMORY (nothing queued). */
infiniStatus_t cpu__stream_new(int dev, uint32_t flags, void **out);
void cpu__stream_free(void *stream); /* waits for its work first */
infiniStatus_t cpu__copy(int dev, void *stream, void *dst, const void *src, size_t n);
infiniStatus_t cpu__fill(int dev, void *stream, void *dst, int value, size_t n);
infiniStatus_t cpu__host_fn(int dev, void *stream, infinirtPluginHostFn fn, void *user);
infiniStatus_t cpu__record(int dev, void *stream, cpu_event *e);
infiniStatus_t cpu__wait_event(int dev, void *stream, cpu_event *e);
infiniStatus_t cpu__stream_sync(int dev, void *stream);
void cpu__stream_query(int dev, void *stream, int *idle);
/* Wait for every stream of the device (the work queued when called). */
infiniStatus_t cpu__device_sync(int dev);
/* Before a synchronous copy or fill (`call`, for the refusal's message):
 * wait for the work queued on the default stream and on every blocking
 * stream of dev. */
infiniStatus_t cpu__sync_point(int dev, const char *call);
void cpu__shutdown_streams(void);

/* Events (cpu_event.c). */
cpu_event *cpu__event_new(int dev, uint32_t flags);
void cpu__event_put(cpu_event *e);
double cpu__now_ms(void);
uint64_t cpu__event_next_gen(cpu_event *e);           /* a record queued: its generation */
void cpu__event_complete(cpu_event *e, uint64_t gen); /* that record ran */
void cpu__event_record_now(cpu_event *e);             /* both at once (inline mode) */
/* The generation a wait queued now must reach; 0 when there is none (never
 * recorded, or complete). */
uint64_t cpu__event_pending_gen(cpu_event *e);
void cpu__event_wait_gen(cpu_event *e, uint64_t gen);
/* A worker reached a wait for generation gen: true when it is complete;
 * otherwise p is linked on the event, to be woken when it is. */
bool cpu__event_park(cpu_event *e, uint64_t gen, cpu_parked *p);

#endif /* INFINIRT_PLUGIN_CPU_INTERNAL_H_ */
