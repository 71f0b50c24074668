/*
 * cpu.h - internals of the CPU reference plugin.
 *
 * The CPU plugin is the reference for the semantics every backend honours:
 * each stream is a worker thread draining an in-order command queue, so
 * asynchronous copies, fills, event records, waits and host functions run
 * off the caller's thread, in stream order, exactly as on a GPU.
 */
#ifndef INFINIRT_CPU_H_
#define INFINIRT_CPU_H_

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
    pthread_mutex_t lock;        /* streams list, pins, default stream creation */
    pthread_cond_t unpinned;     /* a device sync released its pins */
    cpu_stream *streams;         /* every stream of the device, default included */
    cpu_stream *default_stream;  /* created on first use */
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

cpu_device *cpu__device(int dev);
int cpu__device_count(void);

/* Streams (cpu_stream.c). */
int cpu__stream_new(cpu_device *d, cpu_stream **out);
void cpu__stream_free(cpu_stream *s);          /* waits for its work first */
cpu_stream *cpu__resolve(int dev, void *stream); /* NULL -> default stream */
void cpu__stream_sync(cpu_stream *s);
bool cpu__stream_idle(cpu_stream *s);
int cpu__enqueue_copy(cpu_stream *s, void *dst, const void *src, size_t n);
int cpu__enqueue_fill(cpu_stream *s, void *dst, int value, size_t n);
int cpu__enqueue_host_fn(cpu_stream *s, infinirtPluginHostFn fn, void *user);
int cpu__enqueue_record(cpu_stream *s, cpu_event *e);
int cpu__enqueue_wait(cpu_stream *s, cpu_event *e);
void cpu__shutdown_streams(void);
/* Wait for every stream of d (those existing when called). */
void cpu__device_sync(cpu_device *d);

/* Events (cpu_stream.c). */
cpu_event *cpu__event_new(int dev, uint32_t flags);
void cpu__event_put(cpu_event *e);
double cpu__now_ms(void);

#endif /* INFINIRT_CPU_H_ */
