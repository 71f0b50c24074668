/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_internal.h - what the files of the CUDA plugin share: the driver
 * function table (resolved from libcuda.so.1 at init, never linked), the
 * device table, and the entries of the ops table.
 *
 * Names (plugins/README.md): what the files of this plugin share is named
 * cuda__* (hidden by the build's default visibility, so the short prefix
 * cannot clash with another library's); file-local functions are static and
 * unprefixed; only infinirtPluginEntry is exported.
 */
#ifndef INFINIRT_PLUGIN_CUDA_INTERNAL_H_
#define INFINIRT_PLUGIN_CUDA_INTERNAL_H_

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdatomic.h>

#include "infinirt_plugin.h"

#define CUDA__NAME "cuda"

/* The oldest driver that exports every symbol below under the name we ask
 * for (cuDevicePrimaryCtxRelease_v2 came with CUDA 11.0).  We never call an
 * API newer than this, so a newer toolkit does not raise the requirement. */
#define CUDA__MIN_DRIVER_VERSION 11000

/*
 * The driver functions we call, by their exported (versioned) symbol names.
 * cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2 with macros; dlsym sees no
 * macros, so the versioned names are spelled out here.  The PFN_* typedefs
 * from cudaTypedefs.h carry the version of each signature.
 *   X(field, "symbol", "fallback symbol or NULL", PFN type)
 */
#define CUDA__DRIVER_FUNCS(X)                                                                              \
    X(GetErrorName, "cuGetErrorName", NULL, PFN_cuGetErrorName_v6000)                                      \
    X(GetErrorString, "cuGetErrorString", NULL, PFN_cuGetErrorString_v6000)                                \
    X(Init, "cuInit", NULL, PFN_cuInit_v2000)                                                              \
    X(DriverGetVersion, "cuDriverGetVersion", NULL, PFN_cuDriverGetVersion_v2020)                          \
    X(DeviceGetCount, "cuDeviceGetCount", NULL, PFN_cuDeviceGetCount_v2000)                                \
    X(DeviceGet, "cuDeviceGet", NULL, PFN_cuDeviceGet_v2000)                                               \
    X(DeviceGetName, "cuDeviceGetName", NULL, PFN_cuDeviceGetName_v2000)                                   \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", NULL, PFN_cuDeviceGetAttribute_v2000)                    \
    X(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL, PFN_cuDeviceTotalMem_v3020)                             \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, PFN_cuDevicePrimaryCtxRetain_v7000)        \
    X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL, PFN_cuDevicePrimaryCtxRelease_v11000) \
    X(CtxSetCurrent, "cuCtxSetCurrent", NULL, PFN_cuCtxSetCurrent_v4000)                                   \
    X(CtxGetCurrent, "cuCtxGetCurrent", NULL, PFN_cuCtxGetCurrent_v4000)                                   \
    X(CtxSynchronize, "cuCtxSynchronize", NULL, PFN_cuCtxSynchronize_v2000)                                \
    X(DeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL, PFN_cuDeviceCanAccessPeer_v4000)                 \
    X(CtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL, PFN_cuCtxEnablePeerAccess_v4000)                 \
    X(StreamCreate, "cuStreamCreate", NULL, PFN_cuStreamCreate_v2000)                                      \
    X(StreamDestroy, "cuStreamDestroy_v2", NULL, PFN_cuStreamDestroy_v4000)                                \
    X(StreamSynchronize, "cuStreamSynchronize", NULL, PFN_cuStreamSynchronize_v2000)                       \
    X(StreamQuery, "cuStreamQuery", NULL, PFN_cuStreamQuery_v2000)                                         \
    X(StreamGetCtx, "cuStreamGetCtx", NULL, PFN_cuStreamGetCtx_v9020)                                      \
    X(StreamWaitEvent, "cuStreamWaitEvent", NULL, PFN_cuStreamWaitEvent_v3020)                             \
    X(LaunchHostFunc, "cuLaunchHostFunc", NULL, PFN_cuLaunchHostFunc_v10000)                               \
    X(EventCreate, "cuEventCreate", NULL, PFN_cuEventCreate_v2000)                                         \
    X(EventDestroy, "cuEventDestroy_v2", NULL, PFN_cuEventDestroy_v4000)                                   \
    X(EventRecord, "cuEventRecord", NULL, PFN_cuEventRecord_v2000)                                         \
    X(EventQuery, "cuEventQuery", NULL, PFN_cuEventQuery_v2000)                                            \
    X(EventSynchronize, "cuEventSynchronize", NULL, PFN_cuEventSynchronize_v2000)                          \
    /* _v2 (12.8) where the driver has it; the signature is the same */                                    \
    X(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", PFN_cuEventElapsedTime_v2000)       \
    X(MemAlloc, "cuMemAlloc_v2", NULL, PFN_cuMemAlloc_v3020)                                               \
    X(MemFree, "cuMemFree_v2", NULL, PFN_cuMemFree_v3020)                                                  \
    X(MemHostAlloc, "cuMemHostAlloc", NULL, PFN_cuMemHostAlloc_v2020)                                      \
    X(MemFreeHost, "cuMemFreeHost", NULL, PFN_cuMemFreeHost_v2000)                                         \
    X(MemGetInfo, "cuMemGetInfo_v2", NULL, PFN_cuMemGetInfo_v3020)                                         \
    X(Memcpy, "cuMemcpy", NULL, PFN_cuMemcpy_v4000)                                                        \
    X(MemcpyAsync, "cuMemcpyAsync", NULL, PFN_cuMemcpyAsync_v4000)                                         \
    X(PointerGetAttributes, "cuPointerGetAttributes", NULL, PFN_cuPointerGetAttributes_v7000)              \
    X(MemsetD8Async, "cuMemsetD8Async", NULL, PFN_cuMemsetD8Async_v3020)

/* cuGraphInstantiate_v2 (CUDA 11.0); cudaTypedefs.h keeps its PFN only
 * for the driver's own build. */
typedef CUresult(CUDAAPI *cuda__PFN_cuGraphInstantiate_v11000)(CUgraphExec *exec, CUgraph graph,
                                                               CUgraphNode *error_node, char *log, size_t log_size);

/*
 * Optional functions: a driver without them still loads, and the entries
 * that need one answer NOT_IMPLEMENTED with a log line naming it (the field
 * stays NULL).  Stream capture and graphs (cuda_graph.c) are all here, so
 * the oldest supported driver keeps working whatever it lacks; the capture
 * mode exchange is used around the allocator's calls when present.
 * cuGraphInstantiateWithFlags came with CUDA 11.4, cuGraphInstantiate_v2
 * serves older drivers.
 */
#define CUDA__OPTIONAL_FUNCS(X)                                                                \
    X(StreamBeginCapture, "cuStreamBeginCapture_v2", NULL, PFN_cuStreamBeginCapture_v10010)    \
    X(StreamEndCapture, "cuStreamEndCapture", NULL, PFN_cuStreamEndCapture_v10000)             \
    X(StreamIsCapturing, "cuStreamIsCapturing", NULL, PFN_cuStreamIsCapturing_v10000)          \
    X(StreamGetCaptureInfo, "cuStreamGetCaptureInfo", NULL, PFN_cuStreamGetCaptureInfo_v10010) \
    X(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", NULL,              \
      PFN_cuThreadExchangeStreamCaptureMode_v10010)                                            \
    X(GraphInstantiate, "cuGraphInstantiate_v2", NULL, cuda__PFN_cuGraphInstantiate_v11000)    \
    X(GraphLaunch, "cuGraphLaunch", NULL, PFN_cuGraphLaunch_v10000)                            \
    X(GraphExecDestroy, "cuGraphExecDestroy", NULL, PFN_cuGraphExecDestroy_v10000)             \
    X(GraphDestroy, "cuGraphDestroy", NULL, PFN_cuGraphDestroy_v10000)                         \
    /* last: its absence alone is no loss when cuGraphInstantiate_v2 is there */               \
    X(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", NULL, PFN_cuGraphInstantiateWithFlags_v11040)

typedef struct {
#define CUDA__FIELD_(field, sym, alt, type) type field;
    CUDA__DRIVER_FUNCS(CUDA__FIELD_)
    CUDA__OPTIONAL_FUNCS(CUDA__FIELD_)
#undef CUDA__FIELD_
} cuda__driver_t;

/* The symbol each field was resolved from, for log lines. */
typedef struct {
#define CUDA__FIELD_(field, sym, alt, type) const char *field;
    CUDA__DRIVER_FUNCS(CUDA__FIELD_)
    CUDA__OPTIONAL_FUNCS(CUDA__FIELD_)
#undef CUDA__FIELD_
} cuda__driver_names_t;

extern cuda__driver_t cuda__drv;
extern cuda__driver_names_t cuda__drv_names;

/* One exposed device.  ctx is set once, under `lock`, before `active`
 * becomes 1; readers check `active` with acquire order. */
typedef struct {
    int ordinal; /* CUDA device ordinal (after CUDA_VISIBLE_DEVICES) */
    CUdevice cudev;
    atomic_int active;
    pthread_mutex_t lock;
    CUcontext ctx; /* primary context, retained once */
} cuda__device_t;

/* A native stream the application made and wrapped (stream_create_from_native):
 * destroyed by the application, never by us. */
typedef struct cuda__wrapped {
    struct cuda__wrapped *next;
    CUstream stream;
} cuda__wrapped_t;

typedef struct {
    void *lib;          /* libcuda handle; never dlclosed */
    int driver_version; /* cuDriverGetVersion, e.g. 13000 */
    int count;
    cuda__device_t *devices;
    atomic_int first_active; /* the first device whose context we retained; -1: none yet */
    atomic_int *peer;        /* [a * count + b]: PEER_* of a's context reaching b's memory */
    pthread_mutex_t wrapped_lock;
    cuda__wrapped_t *wrapped; /* the live wrapped native streams */
} cuda__state_t;

extern cuda__state_t cuda__state;

/* Config of [plugin.cuda], parsed from the init args. */
typedef struct {
    const char *driver_library; /* NULL: "libcuda.so.1" */
    const char *nvml_library;   /* NULL: "libnvidia-ml.so.1" */
    int *devices;               /* NULL: every device */
    int device_count;
} cuda__config_t;

/* An event object as the loader sees it (a CUstream is passed bare); the
 * application holds `ev`. */
typedef struct {
    CUevent ev;
    uint32_t flags; /* INFINIRT_PLUGIN_EVENT_* */
} cuda__event_t;

/* ---- logging and errors (cuda_driver.c) ---- */
void cuda__set_logger(void (*log)(int, const char *, const char *, ...));
void cuda__log(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* SUCCESS for CUDA_SUCCESS; otherwise one ERROR line naming `call`, the
 * CUDA error name and `dev` (-1: none), and the mapped status. */
infiniStatus_t cuda__check(CUresult r, const char *call, int dev);
const char *cuda__error_name(CUresult r);

/* Call driver function `fn` and check it: evaluates to an infiniStatus_t. */
/* As cuda__check, for a call on an event the loader has checked:
 * CUDA_ERROR_INVALID_VALUE is INVALID_STATE (cuda_event.c). */
infiniStatus_t cuda__event_check(CUresult r, const char *fn, int dev);

#define CUDA__CALL(dev, fn, ...) cuda__check(cuda__drv.fn(__VA_ARGS__), cuda__drv_names.fn, (dev))

/* dlopen the driver and resolve every function; on failure write a reason
 * into msg and return nonzero.  *no_device is set when the failure only
 * means "nothing to serve" (no library, driver too old). */
int cuda__driver_load(const char *path, char *msg, size_t msg_size, int *no_device);
void cuda__driver_forget(void);

/* ---- config (cuda_config.c) ---- */
/* Parse the section's keys; warn about unknown ones.  On a malformed value
 * write the reason into msg and return BAD_PARAM. */
infiniStatus_t cuda__config_parse(const infinirtPluginInitArgs *args, cuda__config_t *cfg, char *msg,
                                  size_t msg_size);
void cuda__config_free(cuda__config_t *cfg);

/* ---- devices and contexts (cuda_device.c) ---- */
/* Device `dev`'s UUID ("GPU-..."), without a context and without logging;
 * *fn names the driver call used (CUDA_ERROR_NOT_FOUND: the driver exports
 * no UUID call). */
CUresult cuda__device_uuid(int dev, char *uuid, size_t size, const char **fn);
/* The device for a plugin-local index; NULL outside [0, count) (the one
 * check of `dev`, see plugins/README.md). */
cuda__device_t *cuda__device(int dev);
/* Build the device table from the driver's devices and cfg's selection. */
infiniStatus_t cuda__devices_discover(const cuda__config_t *cfg, char *msg, size_t msg_size);
/*
 * Around every entry that needs a context:
 *
 *     cuda__scope_t sc;
 *     st = cuda__enter(dev, &sc);      retain (first use), make current
 *     ... driver calls on sc.d ...
 *     cuda__leave(&sc);                the caller's context again
 *
 * enter remembers the context the caller had current and leave restores it,
 * so a call routed to another device (by pointer, stream or event) does not
 * move the application's current device; both are a cuCtxGetCurrent only
 * when the device's context is already current.  leave is called exactly
 * when enter succeeded.
 */
typedef struct {
    cuda__device_t *d;
    CUcontext prev; /* current on entry; NULL: none */
} cuda__scope_t;

infiniStatus_t cuda__enter(int dev, cuda__scope_t *sc);
void cuda__leave(const cuda__scope_t *sc);
infiniStatus_t cuda__set_device(int dev);
infiniStatus_t cuda__device_get_native(int dev, void **device, void **context);
infiniStatus_t cuda__device_synchronize(int dev);
infiniStatus_t cuda__get_device_uuid(int dev, char *uuid, size_t size);
/* The CUstream for a plugin stream argument.  NULL stays NULL: the legacy
 * default stream of the current context (see cuda_stream.c). */
static inline CUstream cuda__stream_of(void *stream)
{
    return (CUstream)stream;
}
void cuda__devices_release(void);
/* Peer access of device a's context to device b's memory (a != b). */
enum { CUDA__PEER_UNKNOWN, CUDA__PEER_ENABLED, CUDA__PEER_IMPOSSIBLE };
/* Call with a's context current (inside an enter scope): enables a's access
 * to b's memory on first need, where cuDeviceCanAccessPeer allows; 1 when
 * it is enabled, 0 when it cannot be (logged once per pair). */
int cuda__peer_enable(int a, int b);

/* ---- ops (cuda_stream.c, cuda_event.c, cuda_memory.c) ---- */
infiniStatus_t cuda__stream_create(int dev, void **stream);
infiniStatus_t cuda__stream_destroy(int dev, void *stream);
infiniStatus_t cuda__stream_synchronize(int dev, void *stream);
infiniStatus_t cuda__stream_wait_event(int dev, void *stream, void *event);
infiniStatus_t cuda__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data);
infiniStatus_t cuda__stream_create_with_flags(int dev, uint32_t flags, void **stream);
infiniStatus_t cuda__stream_create_from_native(int dev, void *native, void **stream);
infiniStatus_t cuda__stream_query(int dev, void *stream, int *idle);
infiniStatus_t cuda__stream_get_native(int dev, void *stream, void **native);

infiniStatus_t cuda__event_create(int dev, uint32_t flags, void **event);
infiniStatus_t cuda__event_destroy(int dev, void *event);
infiniStatus_t cuda__event_record(int dev, void *event, void *stream);
infiniStatus_t cuda__event_query(int dev, void *event, int *complete);
infiniStatus_t cuda__event_synchronize(int dev, void *event);
infiniStatus_t cuda__event_elapsed_time(int dev, float *ms, void *start, void *end);
infiniStatus_t cuda__event_get_native(int dev, void *event, void **native);

infiniStatus_t cuda__get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes);
infiniStatus_t cuda__malloc_device(int dev, void **ptr, size_t size);
infiniStatus_t cuda__free_device(int dev, void *ptr);
infiniStatus_t cuda__malloc_host(int dev, void **ptr, size_t size);
infiniStatus_t cuda__free_host(int dev, void *ptr);
infiniStatus_t cuda__memcpy(int dev, void *dst, const void *src, size_t size, int kind);
infiniStatus_t cuda__memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream);
infiniStatus_t cuda__memset(int dev, void *ptr, int value, size_t size);
infiniStatus_t cuda__memset_async(int dev, void *ptr, int value, size_t size, void *stream);
infiniStatus_t cuda__pointer_get_device(const void *ptr, int *dev);

/* ---- stream capture and graphs (cuda_graph.c) ---- */
infiniStatus_t cuda__stream_begin_capture(int dev, void *stream, int mode);
infiniStatus_t cuda__stream_end_capture(int dev, void *stream, void **graph);
infiniStatus_t cuda__stream_is_capturing(int dev, void *stream, int *capturing, uint64_t *id);
infiniStatus_t cuda__graph_instantiate(int dev, void *graph, void **exec, char *log, size_t log_size);
infiniStatus_t cuda__graph_launch(int dev, void *exec, void *stream);
infiniStatus_t cuda__graph_exec_destroy(int dev, void *exec);
infiniStatus_t cuda__graph_destroy(int dev, void *graph);
/* The driver's capture status of s: CUDA_SUCCESS with *status (and *id when
 * the driver tells it, else 0), or the driver's error; CUDA_ERROR_NOT_FOUND
 * when the driver has no way to tell.  Never affects a capture. */
CUresult cuda__capture_status(CUstream s, CUstreamCaptureStatus *status, uint64_t *id);

/*
 * Around a driver call of the allocator's entries (raw memory, fence
 * events):
 *
 *     int m = cuda__relax();
 *     ... driver call ...
 *     cuda__unrelax(m);
 *
 * The calling thread's capture mode is relaxed for the call, so a capture
 * in global mode on any thread (or one of this thread's own) is neither
 * failed nor invalidated by it, as PyTorch's caching allocator does it.
 * A driver without cuThreadExchangeStreamCaptureMode changes nothing (relax
 * then gives -1, which unrelax ignores).
 */
int cuda__relax(void);
void cuda__unrelax(int previous);

/* ---- utilisation from NVML (cuda_nvml.c) ---- */
/* The NVML library to load on the first utilisation query (NULL: the
 * default); copied.  Called at init. */
void cuda__nvml_configure(const char *path);
infiniStatus_t cuda__get_utilization(int dev, infinirtPluginUtilization *util);
/* Free and total memory of dev from NVML, creating no CUDA context: 0, or
 * nonzero when NVML cannot tell (the driver must be asked). */
int cuda__nvml_mem_info(int dev, size_t *free_bytes, size_t *total_bytes);

/* ---- tracing (cuda_trace.c) ---- */
/* The loader's tracing functions while it writes a trace (ABI 1.7), else
 * NULL; set by cuda__trace_init at init, for `count` devices. */
extern const infinirtPluginTrace *cuda__trace;
void cuda__trace_init(const infinirtPluginTrace *trace, int count);
/* The table's entries: each passes the call on, and with a trace brackets
 * the work it queues with timing events (or, for the synchronizes, polls). */
infiniStatus_t cuda__traced_memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream);
infiniStatus_t cuda__traced_memset_async(int dev, void *ptr, int value, size_t size, void *stream);
infiniStatus_t cuda__traced_launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data);
infiniStatus_t cuda__traced_event_record(int dev, void *event, void *stream);
infiniStatus_t cuda__traced_stream_wait_event(int dev, void *stream, void *event);
infiniStatus_t cuda__traced_graph_launch(int dev, void *exec, void *stream);
infiniStatus_t cuda__traced_stream_synchronize(int dev, void *stream);
infiniStatus_t cuda__traced_device_synchronize(int dev);
infiniStatus_t cuda__traced_event_synchronize(int dev, void *event);

#endif /* INFINIRT_PLUGIN_CUDA_INTERNAL_H_ */
