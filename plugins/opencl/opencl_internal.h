/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_internal.h - shared state and internal interfaces of the OpenCL plugin.
 *
 * Names (plugins/README.md): what the files of this plugin share is named
 * opencl__* (hidden by the build's default visibility, so the short prefix
 * cannot clash with another library's); file-local functions are static and
 * unprefixed; only infinirtPluginEntry is exported.
 *
 * Object model:
 *  - opencl__device: one selected OpenCL device.  Discovery data is filled at
 *    init; the context and the default queue are created lazily on first use
 *    (opencl__device_ready), so init costs only what the ICD loader and the
 *    drivers cost to enumerate.
 *  - opencl__stream: an in-order command queue with profiling on (or one the
 *    application made and handed in, see stream_create_from_native).  Every
 *    live queue of a device, the default one included, is on the device's
 *    list so device_synchronize can finish them all.  The handle the
 *    application holds is the queue itself (stream_get_native); the plugin
 *    keeps this struct for its own state.  Blocking streams are ordered with
 *    the default one as CUDA orders streams with its legacy default stream
 *    (opencl_order.c).
 *  - opencl__event: the marker of the last record (NULL until recorded).
 *  - opencl__alloc: one raw allocation, found by address through a range map;
 *    either coarse-grained SVM (the pointer is real) or a cl_mem buffer
 *    behind a reserved PROT_NONE address range (the pointer is fake).
 */
#ifndef INFINIRT_PLUGIN_OPENCL_INTERNAL_H_
#define INFINIRT_PLUGIN_OPENCL_INTERNAL_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
/* clCreateCommandQueue is still needed for OpenCL 1.2 platforms. */
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "infinirt_plugin.h"

#define OPENCL__NAME "opencl"

/* ------------------------------------------------------------ logging, errors */

#if defined(__GNUC__)
#define OPENCL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OPENCL__PRINTF(f, a)
#endif

/* One line through the loader's logger; dropped when init got no logger. */
void opencl__log(int level, const char *fmt, ...) OPENCL__PRINTF(2, 3);
/* "CL_INVALID_VALUE" for -30; "CL_UNKNOWN_ERROR" for codes not in the table. */
const char *opencl__cl_error_name(cl_int err);
/* Log "<call> failed: <NAME> (<code>)" at ERROR and return the status.
 * opencl__cl_fail_alloc maps CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES
 * and CL_OUT_OF_HOST_MEMORY to OUT_OF_MEMORY, for allocating calls. */
infiniStatus_t opencl__cl_fail(const char *call, cl_int err);
infiniStatus_t opencl__cl_fail_alloc(const char *call, cl_int err);

/* ------------------------------------------------------------------- config */

typedef enum { OPENCL__MEM_AUTO = 0, OPENCL__MEM_SVM, OPENCL__MEM_BUFFER } opencl__mem_mode;

typedef struct {
    char *platform;           /* substring filter, NULL = any */
    cl_device_type type_mask; /* CL_DEVICE_TYPE_ALL by default */
    char type_text[64];       /* as written, for messages */
    int *devices;             /* indices into the filtered list, NULL = all */
    size_t device_count;
    opencl__mem_mode memory;
} opencl__config;

/* Parse the [plugin.opencl] keys.  Returns SUCCESS, or BAD_PARAM with the
 * reason in msg.  Unknown keys are logged as warnings. */
infiniStatus_t opencl__config_parse(const infinirtPluginInitArgs *args, opencl__config *cfg, char *msg,
                                    size_t msg_size);
void opencl__config_free(opencl__config *cfg);

/* ------------------------------------------------------------------ devices */

typedef struct opencl__device opencl__device;

typedef struct opencl__hostq opencl__hostq;

typedef struct opencl__stream {
    cl_command_queue queue;
    opencl__device *dev;
    opencl__hostq *hostq;               /* host-function thread, made on first use */
    int blocking;                       /* ordered with the default stream; fixed at creation */
    struct opencl__stream *prev, *next; /* the device's list of live queues */
    /* Blocking streams: how many commands the plugin has queued on the
     * stream (counted once queued) and how many of those are known
     * complete.  Equal, the stream holds no work of ours, though perhaps
     * commands the application queued natively (opencl_order.c).  probe:
     * the last marker "before" found pending, and probe_covers the count
     * it follows (both under the device lock; released with the stream). */
    _Atomic uint64_t queued, settled;
    cl_event probe;
    uint64_t probe_covers;
    atomic_int trace_marks; /* traced work whose report has not run yet (opencl_trace.c) */
} opencl__stream;

struct opencl__device {
    int index;
    cl_platform_id platform;
    cl_device_id id;
    int platform_major; /* the platform's OpenCL major version */
    int svm;            /* 1: raw memory is SVM; 0: cl_mem buffers */
    char name[256];
    char description[256];
    size_t global_mem;  /* CL_DEVICE_GLOBAL_MEM_SIZE */
    size_t max_alloc;   /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    atomic_size_t held; /* raw device bytes the plugin holds */

    pthread_mutex_t lock; /* guards lazy creation and the queue list */
    atomic_int ready;     /* context and default queue exist */
    cl_context context;
    opencl__stream default_stream;
    opencl__stream queues;       /* list head (sentinel) */
    atomic_int blocking_streams; /* live blocking streams (not the default one) */
    /* Asynchronous work queued on the default queue through the plugin (a
     * count), and how much of it is known complete (a synchronize of the
     * default stream or the device): a stream made while they are equal
     * has none of it to wait for (opencl__order_join_locked). */
    _Atomic uint64_t default_queued, default_drained;
    /* While a trace is written (opencl_trace.c, under its clock lock): the
     * device-to-host clock offset, the least of the window's samples. */
    int64_t trace_off, trace_off_next;
    uint64_t trace_off_window;
    int trace_off_valid, trace_off_next_valid;
};

typedef struct {
    void (*log)(int level, const char *plugin_name, const char *fmt, ...);
    opencl__device *devices;
    int count;
} opencl__state;

extern opencl__state opencl__g;

/* The device for a plugin-local index; NULL outside [0, count). */
static inline opencl__device *opencl__dev(int dev)
{
    return dev >= 0 && dev < opencl__g.count ? &opencl__g.devices[dev] : NULL;
}

/* Enumerate platforms and devices, apply the filters, fill opencl__g.devices.
 * *count = 0 with a reason in msg is a success.  Returns BAD_PARAM (msg
 * says why) when the config asks for something impossible, or the status
 * of a failing OpenCL call. */
infiniStatus_t opencl__discover(const opencl__config *cfg, int *count, char *msg, size_t msg_size);

/* Create the device's context and default queue on first use. */
infiniStatus_t opencl__device_ready(opencl__device *d);
/* NULL -> the device's default stream (created if needed). */
infiniStatus_t opencl__stream_resolve(opencl__device *d, void *stream, opencl__stream **out);
/* Create an in-order profiling queue on a ready device. */
infiniStatus_t opencl__queue_create(opencl__device *d, cl_command_queue *q);
/* Finish every live queue of the device. */
infiniStatus_t opencl__device_finish(opencl__device *d);
/* Release everything the device holds (shutdown). */
void opencl__device_teardown(opencl__device *d);

/* Blocking-stream order (opencl_order.c).  Call opencl__order_before before
 * queueing work on s and opencl__order_after once asynchronous work has been
 * queued on it: on the default stream they make the work wait for what the
 * device's blocking streams already hold, and the blocking streams' later
 * work wait for it.  On another stream "before" does nothing and "after"
 * counts the work when s is blocking (one atomic add); while the device
 * has no blocking stream, "before" does an atomic load and "after" an
 * atomic add (the count streams made later are joined by) and a load. */
infiniStatus_t opencl__order_before(opencl__stream *s);
infiniStatus_t opencl__order_after(opencl__stream *s);
/* opencl__order_before for a synchronous operation on the default stream,
 * one whose call waits for it: the host may wait too, so a blocking stream
 * that holds no work of the plugin's costs a clFinish (at once when it is
 * idle; it also waits for what the application queued natively) instead
 * of a marker the default queue waits for. */
infiniStatus_t opencl__order_before_sync(opencl__stream *s);
/* A wait on s saw complete the first `queued` commands counted on it (a
 * value of s->queued read before the wait began). */
void opencl__order_settled(opencl__stream *s, uint64_t queued);
/* Release what the order keeps of s: s is off the device's list. */
void opencl__order_forget(opencl__stream *s);
/* opencl__order_after for work that is itself a marker m on s (an event
 * record): the blocking streams wait for m, no second marker is queued. */
infiniStatus_t opencl__order_after_marker(opencl__stream *s, cl_event m);
/* A stream just linked on its ready device (caller holds d->lock): when it
 * is blocking, its work waits for the default queue's earlier asynchronous
 * work, which opencl__order_after made only the blocking streams of its
 * time wait for.  Nothing is queued on s when it fails. */
infiniStatus_t opencl__order_join_locked(opencl__stream *s);
/* Around a wait for the default queue: opencl__order_drain_start before it
 * (what has been queued so far), opencl__order_drained with that value once
 * the wait saw all of it complete. */
uint64_t opencl__order_drain_start(opencl__device *d);
void opencl__order_drained(opencl__device *d, uint64_t queued);

/* Run fn(user_data) in stream order on the stream's host-function thread
 * (opencl_hostfn.c); discard(user_data) instead, if not NULL, when earlier
 * work on the stream failed and fn is skipped. */
infiniStatus_t opencl__enqueue_host_fn(opencl__stream *s, infinirtPluginHostFn fn, infinirtPluginHostFn discard,
                                       void *user_data);
/* Wait for the stream's host functions to have run, end its thread.  Call
 * after clFinish on the queue; not from one of its own host functions. */
void opencl__hostq_stop(opencl__stream *s);

/* --------------------------------------------------------------- memory map */

typedef struct {
    uintptr_t base;
    size_t size;
    opencl__device *dev;
    cl_mem mem; /* buffer mode and pinned host memory; NULL for SVM */
    void *raw;  /* what clSVMAlloc/clEnqueueMapBuffer returned; base is
                      rounded up from it */
    int kind;   /* OPENCL__ALLOC_* */
} opencl__alloc;

/* SVM device memory and pinned host memory are 256-byte aligned, as CUDA
 * gives (the loader's allocator assumes that much).  Both are padded and
 * rounded up the same way, so a device and a pinned buffer keep the same
 * offset within a page: on CPU devices, where a copy is a memcpy, source
 * and destination at different small offsets mod 4 KiB copy up to 8%
 * slower (4K aliasing; measured with PoCL, see docs/opencl.md). */
#define OPENCL__ALIGN ((size_t)256)

/* Bytes to request so that `size` bytes fit after rounding up to
 * OPENCL__ALIGN; `size` itself where the padding would pass max_alloc. */
static inline size_t opencl__padded(size_t size, size_t max_alloc)
{
    return max_alloc == 0 || (max_alloc > OPENCL__ALIGN && size <= max_alloc - OPENCL__ALIGN) ? size + OPENCL__ALIGN
                                                                                              : size;
}

static inline uintptr_t opencl__align_up(void *p)
{
    return ((uintptr_t)p + OPENCL__ALIGN - 1) & ~(uintptr_t)(OPENCL__ALIGN - 1);
}

enum { OPENCL__ALLOC_SVM = 1, OPENCL__ALLOC_BUFFER, OPENCL__ALLOC_HOST_MAPPED, OPENCL__ALLOC_HOST_PLAIN };

/* A set of disjoint address ranges, sorted by base: O(log n) lookup under a
 * read lock, O(n) insert/remove (segments are few and large). */
typedef struct {
    pthread_rwlock_t lock;
    opencl__alloc *items;
    size_t count, capacity;
} opencl__map;

extern opencl__map opencl__device_map; /* raw device allocations of every device */
extern opencl__map opencl__host_map;   /* malloc_host allocations */

void opencl__map_init(opencl__map *m);
void opencl__map_destroy(opencl__map *m);
/* Returns 0, or -1 when out of memory or overlapping an existing range. */
int opencl__map_insert(opencl__map *m, const opencl__alloc *a);
/* Remove the range starting exactly at base into *out; 0, or -1 if none. */
int opencl__map_remove(opencl__map *m, uintptr_t base, opencl__alloc *out);
/* Copy the range containing p into *out; 0, or -1 if none. */
int opencl__map_lookup(opencl__map *m, const void *p, opencl__alloc *out);
/* Remove one range of any address into *out (shutdown); 0, or -1 if empty. */
int opencl__map_pop(opencl__map *m, opencl__alloc *out);

/* Release one allocation's OpenCL object and address range. */
void opencl__alloc_release(const opencl__alloc *a);

/* ------------------------------------------------------------------ entries */

infiniStatus_t opencl__get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes);
infiniStatus_t opencl__device_synchronize(int dev);

infiniStatus_t opencl__stream_create(int dev, void **stream);
infiniStatus_t opencl__stream_create_with_flags(int dev, uint32_t flags, void **stream);
infiniStatus_t opencl__stream_create_from_native(int dev, void *native, void **stream);
infiniStatus_t opencl__stream_query(int dev, void *stream, int *idle);
infiniStatus_t opencl__stream_get_native(int dev, void *stream, void **native);
infiniStatus_t opencl__device_get_native(int dev, void **device, void **context);
infiniStatus_t opencl__mem_get_native(int dev, void *ptr, void **native, size_t *offset);
infiniStatus_t opencl__stream_destroy(int dev, void *stream);
infiniStatus_t opencl__stream_synchronize(int dev, void *stream);
infiniStatus_t opencl__stream_wait_event(int dev, void *stream, void *event);
infiniStatus_t opencl__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data);

infiniStatus_t opencl__event_create(int dev, uint32_t flags, void **event);
infiniStatus_t opencl__event_destroy(int dev, void *event);
infiniStatus_t opencl__event_record(int dev, void *event, void *stream);
infiniStatus_t opencl__event_query(int dev, void *event, int *complete);
infiniStatus_t opencl__event_synchronize(int dev, void *event);
infiniStatus_t opencl__event_elapsed_time(int dev, float *ms, void *start, void *end);
/* The event's last marker, retained (caller releases), or NULL. */
cl_event opencl__event_marker(void *event);

infiniStatus_t opencl__malloc_device(int dev, void **ptr, size_t size);
infiniStatus_t opencl__free_device(int dev, void *ptr);
infiniStatus_t opencl__malloc_host(int dev, void **ptr, size_t size);
infiniStatus_t opencl__free_host(int dev, void *ptr);

infiniStatus_t opencl__memcpy(int dev, void *dst, const void *src, size_t size, int kind);
infiniStatus_t opencl__memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream);
infiniStatus_t opencl__memset(int dev, void *ptr, int value, size_t size);
infiniStatus_t opencl__memset_async(int dev, void *ptr, int value, size_t size, void *stream);

/* ------------------------------------------------------------------ tracing */

/* The loader's tracing functions while it writes a trace (ABI 1.7), else
 * NULL; set by init.  The entries below are the table's: each passes the
 * call on, and with a trace brackets the work it queues with profiling
 * markers to report when it ran (opencl_trace.c). */
extern const infinirtPluginTrace *opencl__trace;
infiniStatus_t opencl__traced_memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream);
infiniStatus_t opencl__traced_memset_async(int dev, void *ptr, int value, size_t size, void *stream);
infiniStatus_t opencl__traced_launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data);
infiniStatus_t opencl__traced_event_record(int dev, void *event, void *stream);
infiniStatus_t opencl__traced_stream_wait_event(int dev, void *stream, void *event);
infiniStatus_t opencl__traced_stream_synchronize(int dev, void *stream);
infiniStatus_t opencl__traced_device_synchronize(int dev);
infiniStatus_t opencl__traced_stream_destroy(int dev, void *stream);
/* The first samples of d's clock offset, from markers on its new (empty)
 * default queue (opencl__device_ready, while a trace is written). */
void opencl__trace_calibrate(opencl__device *d);

#endif /* INFINIRT_PLUGIN_OPENCL_INTERNAL_H_ */
