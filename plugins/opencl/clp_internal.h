/*
 * clp_internal.h - shared state and internal interfaces of the OpenCL plugin.
 *
 * Naming: everything non-static in this plugin is prefixed `clp__`; nothing
 * but infinirtPluginEntry is exported (hidden visibility is the default).
 *
 * Object model:
 *  - clp__device: one selected OpenCL device.  Discovery data is filled at
 *    init; the context and the default queue are created lazily on first use
 *    (clp__device_ready), so init costs only what the ICD loader and the
 *    drivers cost to enumerate.
 *  - clp__stream: an in-order command queue with profiling on (or one the
 *    application made and handed in, see stream_create_from_native).  Every
 *    live queue of a device, the default one included, is on the device's
 *    list so device_synchronize can finish them all.  The handle the
 *    application holds is the queue itself (stream_get_native); the plugin
 *    keeps this struct for its own state.  Blocking streams are ordered with
 *    the default one as CUDA orders streams with its legacy default stream
 *    (clp_order.c).
 *  - clp__event: the marker of the last record (NULL until recorded).
 *  - clp__alloc: one raw allocation, found by address through a range map;
 *    either coarse-grained SVM (the pointer is real) or a cl_mem buffer
 *    behind a reserved PROT_NONE address range (the pointer is fake).
 */
#ifndef CLP_INTERNAL_H_
#define CLP_INTERNAL_H_

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

#define CLP_NAME "opencl"

/* ------------------------------------------------------------ logging, errors */

#if defined(__GNUC__)
#define CLP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLP_PRINTF(f, a)
#endif

/* One line through the loader's logger; dropped when init got no logger. */
void clp__log(int level, const char *fmt, ...) CLP_PRINTF(2, 3);
/* "CL_INVALID_VALUE" for -30; "CL_UNKNOWN_ERROR" for codes not in the table. */
const char *clp__cl_error_name(cl_int err);
/* The infinirt status for an OpenCL error. */
infiniStatus_t clp__cl_status(cl_int err);
/* Log "<call> failed: <NAME> (<code>)" at ERROR and return the status.
 * clp__cl_fail_alloc maps CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES
 * and CL_OUT_OF_HOST_MEMORY to OUT_OF_MEMORY, for allocating calls. */
infiniStatus_t clp__cl_fail(const char *call, cl_int err);
infiniStatus_t clp__cl_fail_alloc(const char *call, cl_int err);

/* ------------------------------------------------------------------- config */

typedef enum { CLP_MEM_AUTO = 0, CLP_MEM_SVM, CLP_MEM_BUFFER } clp__mem_mode;

typedef struct {
    char *platform;           /* substring filter, NULL = any */
    cl_device_type type_mask; /* CL_DEVICE_TYPE_ALL by default */
    char type_text[64];       /* as written, for messages */
    int *devices;             /* indices into the filtered list, NULL = all */
    size_t device_count;
    clp__mem_mode memory;
} clp__config;

/* Parse the [plugin.opencl] keys.  Returns SUCCESS, or BAD_PARAM with the
 * reason in msg.  Unknown keys are logged as warnings. */
infiniStatus_t clp__config_parse(const infinirtPluginInitArgs *args, clp__config *cfg, char *msg, size_t msg_size);
void clp__config_free(clp__config *cfg);
const char *clp__mem_mode_name(clp__mem_mode m);

/* ------------------------------------------------------------------ devices */

typedef struct clp__device clp__device;

typedef struct clp__hostq clp__hostq;

typedef struct clp__stream {
    cl_command_queue queue;
    clp__device *dev;
    clp__hostq *hostq;               /* host-function thread, made on first use */
    int blocking;                    /* ordered with the default stream; fixed at creation */
    struct clp__stream *prev, *next; /* the device's list of live queues */
} clp__stream;

struct clp__device {
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
    clp__stream default_stream;
    clp__stream queues;          /* list head (sentinel) */
    atomic_int blocking_streams; /* live blocking streams (not the default one) */
};

typedef struct {
    void (*log)(int level, const char *plugin_name, const char *fmt, ...);
    clp__device *devices;
    int count;
} clp__state;

extern clp__state clp__g;

/* The device for a plugin-local index; NULL outside [0, count). */
static inline clp__device *clp__dev(int dev)
{
    return dev >= 0 && dev < clp__g.count ? &clp__g.devices[dev] : NULL;
}

/* Enumerate platforms and devices, apply the filters, fill clp__g.devices.
 * *count = 0 with a reason in msg is a success.  Returns BAD_PARAM (msg
 * says why) when the config asks for something impossible, or the status
 * of a failing OpenCL call. */
infiniStatus_t clp__discover(const clp__config *cfg, int *count, char *msg, size_t msg_size);

/* Create the device's context and default queue on first use. */
infiniStatus_t clp__device_ready(clp__device *d);
/* NULL -> the device's default stream (created if needed). */
infiniStatus_t clp__stream_resolve(clp__device *d, void *stream, clp__stream **out);
/* Create an in-order profiling queue on a ready device. */
infiniStatus_t clp__queue_create(clp__device *d, cl_command_queue *q);
/* Finish every live queue of the device. */
infiniStatus_t clp__device_finish(clp__device *d);
/* Release everything the device holds (shutdown). */
void clp__device_teardown(clp__device *d);

/* Blocking-stream order (clp_order.c).  Call clp__order_before before
 * queueing work on s and clp__order_after once asynchronous work has been
 * queued on it: on the default stream they make the work wait for what the
 * device's blocking streams already hold, and the blocking streams' later
 * work wait for it.  Both do nothing for other streams, and nothing but an
 * atomic load while the device has no blocking stream. */
infiniStatus_t clp__order_before(clp__stream *s);
infiniStatus_t clp__order_after(clp__stream *s);

/* Run fn(user_data) in stream order on the stream's host-function thread
 * (clp_hostfn.c); discard(user_data) instead, if not NULL, when earlier
 * work on the stream failed and fn is skipped. */
infiniStatus_t clp__enqueue_host_fn(clp__stream *s, infinirtPluginHostFn fn, infinirtPluginHostFn discard,
                                    void *user_data);
/* Wait for the stream's host functions to have run, end its thread.  Call
 * after clFinish on the queue; not from one of its own host functions. */
void clp__hostq_stop(clp__stream *s);

/* --------------------------------------------------------------- memory map */

typedef struct {
    uintptr_t base;
    size_t size;
    clp__device *dev;
    cl_mem mem; /* buffer mode and pinned host memory; NULL for SVM */
    void *raw;  /* what clSVMAlloc/clEnqueueMapBuffer returned; base is
                      rounded up from it */
    int kind;   /* CLP_ALLOC_* */
} clp__alloc;

/* SVM device memory and pinned host memory are 256-byte aligned, as CUDA
 * gives (the loader's allocator assumes that much).  Both are padded and
 * rounded up the same way, so a device and a pinned buffer keep the same
 * offset within a page: on CPU devices, where a copy is a memcpy, source
 * and destination at different small offsets mod 4 KiB copy up to 8%
 * slower (4K aliasing; measured with PoCL, see docs/opencl.md). */
#define CLP_ALIGN ((size_t)256)

/* Bytes to request so that `size` bytes fit after rounding up to
 * CLP_ALIGN; `size` itself where the padding would pass max_alloc. */
static inline size_t clp__padded(size_t size, size_t max_alloc)
{
    return max_alloc == 0 || (max_alloc > CLP_ALIGN && size <= max_alloc - CLP_ALIGN) ? size + CLP_ALIGN : size;
}

static inline uintptr_t clp__align_up(void *p)
{
    return ((uintptr_t)p + CLP_ALIGN - 1) & ~(uintptr_t)(CLP_ALIGN - 1);
}

enum { CLP_ALLOC_SVM = 1, CLP_ALLOC_BUFFER, CLP_ALLOC_HOST_MAPPED, CLP_ALLOC_HOST_PLAIN };

/* A set of disjoint address ranges, sorted by base: O(log n) lookup under a
 * read lock, O(n) insert/remove (segments are few and large). */
typedef struct {
    pthread_rwlock_t lock;
    clp__alloc *items;
    size_t count, capacity;
} clp__map;

extern clp__map clp__device_map; /* raw device allocations of every device */
extern clp__map clp__host_map;   /* malloc_host allocations */

void clp__map_init(clp__map *m);
void clp__map_destroy(clp__map *m);
/* Returns 0, or -1 when out of memory or overlapping an existing range. */
int clp__map_insert(clp__map *m, const clp__alloc *a);
/* Remove the range starting exactly at base into *out; 0, or -1 if none. */
int clp__map_remove(clp__map *m, uintptr_t base, clp__alloc *out);
/* Copy the range containing p into *out; 0, or -1 if none. */
int clp__map_lookup(clp__map *m, const void *p, clp__alloc *out);
/* Remove one range of any address into *out (shutdown); 0, or -1 if empty. */
int clp__map_pop(clp__map *m, clp__alloc *out);

/* Release one allocation's OpenCL object and address range. */
void clp__alloc_release(const clp__alloc *a);

/* ------------------------------------------------------------------ entries */

infiniStatus_t clp__get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes);
infiniStatus_t clp__device_synchronize(int dev);

infiniStatus_t clp__stream_create(int dev, void **stream);
infiniStatus_t clp__stream_create_with_flags(int dev, uint32_t flags, void **stream);
infiniStatus_t clp__stream_create_from_native(int dev, void *native, void **stream);
infiniStatus_t clp__stream_query(int dev, void *stream, int *idle);
infiniStatus_t clp__stream_get_native(int dev, void *stream, void **native);
infiniStatus_t clp__device_get_native(int dev, void **device, void **context);
infiniStatus_t clp__mem_get_native(int dev, void *ptr, void **native, size_t *offset);
infiniStatus_t clp__stream_destroy(int dev, void *stream);
infiniStatus_t clp__stream_synchronize(int dev, void *stream);
infiniStatus_t clp__stream_wait_event(int dev, void *stream, void *event);
infiniStatus_t clp__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data);

infiniStatus_t clp__event_create(int dev, uint32_t flags, void **event);
infiniStatus_t clp__event_destroy(int dev, void *event);
infiniStatus_t clp__event_record(int dev, void *event, void *stream);
infiniStatus_t clp__event_query(int dev, void *event, int *complete);
infiniStatus_t clp__event_synchronize(int dev, void *event);
infiniStatus_t clp__event_elapsed_time(int dev, float *ms, void *start, void *end);
/* The event's last marker, retained (caller releases), or NULL. */
cl_event clp__event_marker(void *event);

infiniStatus_t clp__malloc_device(int dev, void **ptr, size_t size);
infiniStatus_t clp__free_device(int dev, void *ptr);
infiniStatus_t clp__malloc_host(int dev, void **ptr, size_t size);
infiniStatus_t clp__free_host(int dev, void *ptr);

infiniStatus_t clp__memcpy(int dev, void *dst, const void *src, size_t size, int kind);
infiniStatus_t clp__memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream);
infiniStatus_t clp__memset(int dev, void *ptr, int value, size_t size);
infiniStatus_t clp__memset_async(int dev, void *ptr, int value, size_t size, void *stream);

#endif /* CLP_INTERNAL_H_ */
