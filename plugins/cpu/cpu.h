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
 *  - async: each stream is a worker thread draining an in-order command
 *    queue, so asynchronous work runs off the caller's thread, in stream
 *    order, exactly as on a GPU.  For exercising asynchronous code (the
 *    allocator's stream-ordered reuse, events) without one.
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

typedef struct {
    int index;
    size_t memory_limit;         /* 0 = no limit */
    atomic_size_t used;          /* raw device bytes held */
    pthread_mutex_t lock;        /* streams list, default stream creation */
    cpu_stream *streams;         /* every stream of the device, default included */
    _Atomic(cpu_stream *) default_stream; /* async mode: created on first use */
} cpu_device;

struct cpu_event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t flags;
    atomic_int refs;             /* the handle + each queued record/wait */
    uint64_t recorded;           /* generation of the latest record */
    uint64_t completed;          /* highest generation completed */
    double completed_at_ms;      /* CLOCK_MONOTONIC of `completed` */
    int device;
};

extern void (*cpu__log)(int level, const char *plugin, const char *fmt, ...);
/* streams = inline: set once by init, read-only afterwards. */
extern bool cpu__inline;

cpu_device *cpu__device(int dev);
int cpu__device_count(void);

/* Streams (cpu_stream.c).  `stream` NULL is the device's default stream.
 * Each returns SUCCESS or OUT_OF_MEMORY (nothing queued). */
infiniStatus_t cpu__stream_new(int dev, uint32_t flags, void **out);
void cpu__stream_free(void *stream);           /* waits for its work first */
infiniStatus_t cpu__copy(int dev, void *stream, void *dst, const void *src, size_t n);
infiniStatus_t cpu__fill(int dev, void *stream, void *dst, int value, size_t n);
infiniStatus_t cpu__host_fn(int dev, void *stream, infinirtPluginHostFn fn, void *user);
infiniStatus_t cpu__record(int dev, void *stream, cpu_event *e);
infiniStatus_t cpu__wait_event(int dev, void *stream, cpu_event *e);
infiniStatus_t cpu__stream_sync(int dev, void *stream);
void cpu__stream_query(int dev, void *stream, int *idle);
/* Wait for every stream of the device (the work queued when called). */
infiniStatus_t cpu__device_sync(int dev);
/* Before a synchronous copy or fill: wait for the work queued on the
 * default stream and on every blocking stream of dev. */
infiniStatus_t cpu__sync_point(int dev);
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

#endif /* INFINIRT_PLUGIN_CPU_INTERNAL_H_ */
