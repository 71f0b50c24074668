/* SPDX-License-Identifier: Apache-2.0 */
/*
 * infinirt.h - the infinirt application API.
 *
 * One API over every accelerator: the loader (libinfinirt.so) routes each call
 * to the backend plugin that owns the device, stream, event or pointer.
 * Source-compatible with InfiniCore's infinirt.h for every name it defines,
 * and, where InfiniCore defines a behaviour, with that behaviour too.
 * Which is which: every declaration above "our additions" is InfiniCore's
 * unless its paragraph starts with "(ours)"; everything from "our
 * additions" on is ours.  A program that uses only InfiniCore's names sees
 * only InfiniCore's behaviour.  docs/infinicore.md has the details.
 *
 * Conventions that hold for every function below unless its paragraph says
 * otherwise:
 *  - Every function returns infiniStatus_t; INFINI_STATUS_SUCCESS is 0.
 *  - Any function may be the first infinirt call of the process: the loader
 *    initialises itself once, thread-safely.  If initialisation itself fails
 *    (out of memory) every call returns INFINI_STATUS_DEVICE_NOT_INITIALIZED;
 *    so does every call after process exit began and in a child forked after
 *    initialisation (see "Process lifetime" below infinirtInit).
 *  - A required output pointer that is NULL gives INFINI_STATUS_NULL_POINTER;
 *    a stream or event that is not a live handle from this library gives
 *    INFINI_STATUS_BAD_PARAM.  A failed call changes no state.
 *  - A backend that does not support an operation gives
 *    INFINI_STATUS_NOT_IMPLEMENTED.
 *  - All functions are thread-safe.  The current device is per thread; each
 *    thread starts on the configured default device (CPU 0 if none).
 *  - A NULL stream means the default stream of the current device.
 *  - Every failure is also logged with its reason (see INFINIRT_LOG).
 *    NOT_READY is an answer, not a failure: it is logged at debug level
 *    only, so a program may poll.
 */
#ifndef __INFINIRT_API_H__
#define __INFINIRT_API_H__

#include "infinicore.h"
#ifdef __cplusplus
#include <cstdint>
#else
#include <stdint.h>
#endif

#ifndef INFINIRT_INFINICORE_H_
/* InfiniCore's own infinicore.h was included first (InfiniCore's sources
 * include it by a relative path): it defines only InfiniCore's names, so
 * ours are supplied here, with the values our copy gives them.  (In C++ a
 * value outside InfiniCore's enumerators is best kept to comparisons.) */
#if defined(_WIN32)
#define INFINIRT_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define INFINIRT_EXPORT __attribute__((visibility("default")))
#else
#define INFINIRT_EXPORT
#endif
#ifdef __cplusplus
#define INFINIRT_API extern "C" INFINIRT_EXPORT
#else
#define INFINIRT_API INFINIRT_EXPORT
#endif
#define INFINI_STATUS_OUT_OF_MEMORY ((infiniStatus_t)14)
#define INFINI_STATUS_NOT_READY ((infiniStatus_t)15)
#define INFINI_STATUS_INVALID_STATE ((infiniStatus_t)16)
#define INFINI_DEVICE_OPENCL ((infiniDevice_t)0x1000)
#endif

#define INFINIRT_VERSION_MAJOR 0
#define INFINIRT_VERSION_MINOR 1
#define INFINIRT_VERSION_PATCH 0

typedef void *infinirtStream_t;
typedef void *infinirtEvent_t;

/* InfiniCore's types for stream capture, graphs and the device resource
 * snapshot (the functions are in the "graph" and "device" parts below). */
typedef void *infinirtGraph_t;
typedef void *infinirtGraphNode_t;
typedef void *infinirtGraphExec_t;

typedef enum {
    INFINIRT_STREAM_CAPTURE_MODE_GLOBAL = 0,
    INFINIRT_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    INFINIRT_STREAM_CAPTURE_MODE_RELAXED = 2,
} infinirtStreamCaptureMode_t;

/* Which fields of an infinirtDeviceResourceSnapshot_t hold a value. */
typedef enum {
    INFINIRT_RESOURCE_FIELD_NONE = 0,
    INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY = 1ull << 0,
    INFINIRT_RESOURCE_FIELD_COMPUTE_UTILIZATION = 1ull << 1,
    INFINIRT_RESOURCE_FIELD_MEMORY_BANDWIDTH_UTILIZATION = 1ull << 2,
    INFINIRT_RESOURCE_FIELD_KERNEL_TIME_RATIO = 1ull << 3,
    INFINIRT_RESOURCE_FIELD_COMMUNICATION = 1ull << 4,
} infinirtResourceField_t;

typedef struct {
    infiniDevice_t device_type;
    int device_id;
    uint64_t valid_fields;     /* infinirtResourceField_t bits */
    uint64_t estimated_fields; /* of those, the ones estimated */
    size_t free_bytes;
    size_t total_bytes;
    size_t used_bytes;
    size_t reserved_bytes;
    float compute_utilization;
    float memory_bandwidth_utilization;
    float kernel_time_ratio;
    float communication_time_ratio;
    uint64_t communication_bytes;
} infinirtDeviceResourceSnapshot_t;

typedef enum {
    INFINIRT_EVENT_COMPLETE = 0,
    INFINIRT_EVENT_NOT_READY = 1,
} infinirtEventStatus_t;

typedef enum {
    INFINIRT_EVENT_DEFAULT = 0x0,
    INFINIRT_EVENT_DISABLE_TIMING = 0x1,
    INFINIRT_EVENT_BLOCKING_SYNC = 0x2,
} infinirtEventFlags_t;

typedef enum {
    INFINIRT_MEMCPY_H2H = 0,
    INFINIRT_MEMCPY_H2D = 1,
    INFINIRT_MEMCPY_D2H = 2,
    INFINIRT_MEMCPY_D2D = 3,
} infinirtMemcpyKind_t;

/* ------------------------------------------------------------------ device */

/* Initialise the loader: read the config, open the plugins and check each
 * one's handshake.  Optional (any call initialises) and idempotent.
 * A plugin starts (its init: the driver's start-up, device discovery) on
 * the first call that needs its device type - SetDevice, GetDeviceCount of
 * that type, the first call on the default device - so a program that
 * only uses the CPU never waits for an OpenCL platform scan or a GPU
 * driver.  infinirtGetAllDeviceCount starts every plugin, and
 * infinirtGetPluginInfo the plugin it describes: their answers are
 * complete.  Starting is thread-safe and happens once per device type;
 * each type starts on its own, so a call never waits for the start of a
 * type it does not use (a slow or hung driver holds up only the calls on
 * its devices; infinirtPeekPluginInfo says which plugin is starting). 
 * Returns SUCCESS, also when some or all plugins failed to load (see
 * infinirtGetPluginInfo); DEVICE_NOT_INITIALIZED only if the loader itself
 * could not be set up. */
INFINIRT_API infiniStatus_t infinirtInit(void);

/* Process lifetime: fork and exit.
 *  - fork: a child forked before the first infinirt call initialises
 *    normally on its own first call.  A child forked after it (or while it
 *    runs) cannot use infinirt: it has none of the parent's stream threads,
 *    locks may be held by threads that were not copied, and GPU drivers do
 *    not survive fork.  Every call in such a child returns
 *    DEVICE_NOT_INITIALIZED and logs why; nothing hangs, and the child may
 *    exit (or exec) freely whether or not it called infinirt.  Handles and
 *    device pointers inherited from the parent are not usable through
 *    infinirt in the child.
 *  - exit: at process exit (atexit, registered on the first call) infinirt
 *    only stops accepting calls; it tears nothing down and makes no driver
 *    call (the OS reclaims memory, threads and devices), so threads still
 *    running and handlers that run later never meet freed state.  Work still
 *    queued on streams is not waited for: synchronize before exiting.
 *  - after that shutdown (an atexit handler registered before infinirt's
 *    first call, a static destructor): every call returns
 *    DEVICE_NOT_INITIALIZED and logs why.  A call already in progress on
 *    another thread completes normally. */

/* (InfiniCore's.)  Write the number of devices of each of InfiniCore's
 * types into count_array[0 .. INFINI_DEVICE_TYPE_COUNT-1] - exactly
 * INFINI_DEVICE_TYPE_COUNT (11) entries, as a program built against
 * InfiniCore's header allocates; 0 where no plugin serves a type.  Our own
 * types (INFINI_DEVICE_OPENCL) are not among them: list them with
 * infinirtGetDeviceTypes and count them with infinirtGetDeviceCount.  Never
 * fails because a plugin did.  Returns SUCCESS or NULL_POINTER. */
INFINIRT_API infiniStatus_t infinirtGetAllDeviceCount(int *count_array);

/* (ours) Every device type this library knows, InfiniCore's first (in
 * value order) and then ours: the first min(capacity, *count) are written
 * to types, and *count is set to how many there are (call with capacity 0
 * to size the array).  Whether a type has devices is infinirtGetDeviceCount's
 * answer.  Returns SUCCESS; NULL_POINTER when count is NULL, or types is
 * NULL with capacity > 0; BAD_PARAM for a negative capacity. */
INFINIRT_API infiniStatus_t infinirtGetDeviceTypes(infiniDevice_t *types, int capacity, int *count);

/* Number of devices of one type into *count (0 where none).
 * Returns SUCCESS, NULL_POINTER, or BAD_PARAM for a type outside the enum. */
INFINIRT_API infiniStatus_t infinirtGetDeviceCount(infiniDevice_t device, int *count);

/* Make (device, device_id) this thread's current device.
 * Returns SUCCESS; BAD_PARAM for a type outside the enum;
 * DEVICE_TYPE_NOT_SUPPORTED when no loaded plugin serves the type;
 * DEVICE_NOT_FOUND for an id outside [0, count).  On failure the current
 * device is unchanged. */
INFINIRT_API infiniStatus_t infinirtSetDevice(infiniDevice_t device, int device_id);
/* As cudaSetDevice does, the call also makes the device the backend's own
 * current device for the calling thread (on CUDA its primary context becomes
 * current), so the application's own kernels and library calls reach it;
 * calls that infinirt routes to another device (by pointer, stream or event)
 * leave the caller's current context as it was. */

/* This thread's current device.  Either pointer may be NULL (that part is
 * not written), not both.  Returns SUCCESS, NULL_POINTER (both NULL, as
 * InfiniCore's runtime answers). */
INFINIRT_API infiniStatus_t infinirtGetDevice(infiniDevice_t *device_ptr, int *device_id_ptr);

/* Free and total memory of a device, in bytes, as its backend reports them
 * (the CPU backend reads the machine's memory, capped by memory_limit).
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM, DEVICE_TYPE_NOT_SUPPORTED,
 * DEVICE_NOT_FOUND, NOT_IMPLEMENTED. */
INFINIRT_API infiniStatus_t infinirtGetMemInfo(infiniDevice_t device, int device_id, size_t *free_bytes,
                                               size_t *total_bytes);

/* A snapshot of a device's resources into *snapshot (all of it written:
 * fields without a value are 0).  Read only the fields whose bit is set in
 * valid_fields; estimated_fields marks the figures among them that are
 * estimates.
 *  - device_type, device_id: the arguments.
 *  - reserved_bytes: memory infinirt's caching allocator holds from the
 *    backend for this device (infinirtGetAllocatorStats' reserved_bytes),
 *    on every backend, whatever the bits say.
 *  - free_bytes, total_bytes from the backend (as infinirtGetMemInfo),
 *    used_bytes = total - free, with MEMORY_CAPACITY set; on a backend
 *    that cannot tell (a plugin without get_mem_info) they stay 0 and the
 *    bit clear.
 *  - compute_utilization, memory_bandwidth_utilization, kernel_time_ratio,
 *    fractions in [0, 1], where the backend can observe them: on CUDA from
 *    NVML when it is installed and lists the device (kernel_time_ratio is
 *    the compute figure, marked estimated; see docs/cuda.md); on the CPU
 *    and OpenCL backends never.  The communication fields are never set.
 * Utilisation the backend fails to give leaves its bits clear and is not
 * an error.  On failure *snapshot is not written.  Thread-safe.
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM, DEVICE_TYPE_NOT_SUPPORTED,
 * DEVICE_NOT_FOUND, or the backend's error from reading its memory
 * figures. */
INFINIRT_API infiniStatus_t infinirtGetDeviceResourceSnapshot(infiniDevice_t device, int device_id,
                                                              infinirtDeviceResourceSnapshot_t *snapshot);

/* Block until all work queued on every stream of the current device has
 * completed (on a backend without a device-wide wait, each stream in turn).
 * On CUDA this is cudaDeviceSynchronize, as in InfiniCore: cuCtxSynchronize
 * on the device's primary context, which the CUDA runtime shares, so it
 * waits for every stream of the process on that device - those of other
 * libraries (PyTorch, NCCL) and native ones included, not only the streams
 * infinirt created.  Use infinirtStreamSynchronize to wait for one stream.
 * Refused with INVALID_STATE while a stream of the device captures (the
 * capture is invalidated, as CUDA does), and on CUDA also while a capture
 * infinirt does not know of (another library's) forbids it.
 * Returns SUCCESS, INVALID_STATE, or the backend's error. */
INFINIRT_API infiniStatus_t infinirtDeviceSynchronize(void);

/* (ours) The backend's native objects for a device: on CUDA the CUdevice
 * (cast through intptr_t) and its primary CUcontext; on OpenCL the
 * cl_device_id and cl_context; what a vendor's backend gives; NULL where the
 * backend has none (the CPU backend).  Either output may be NULL (that part
 * is not written).  Returns SUCCESS, BAD_PARAM, DEVICE_TYPE_NOT_SUPPORTED,
 * DEVICE_NOT_FOUND, or the backend's error. */
INFINIRT_API infiniStatus_t infinirtDeviceGetNativeHandle(infiniDevice_t device, int device_id, void **native_device,
                                                          void **native_context);

/* ------------------------------------------------------------------ stream */

/*
 * Stream and event handles are the backends' native objects (InfiniCore's
 * behaviour, which its kernels rely on): on CUDA an infinirtStream_t is the
 * CUstream (usable as a cudaStream_t) and an infinirtEvent_t the CUevent; on
 * OpenCL a stream is the cl_command_queue (events stay the backend's own
 * objects: OpenCL's native events are one-shot); on the CPU backend both are
 * the backend's objects (see infinirt_cpu.h for queueing work natively).
 * The loader keeps a map from each value to its owner, so calls route by
 * handle and made-up, destroyed or wrong-kind handles still give BAD_PARAM.
 * As with CUDA itself: once a handle is destroyed, the driver may hand out
 * the same value for a new object, and the old value then names the new one.
 *
 * Blocking streams (InfiniCore's and CUDA's behaviour): work on the NULL
 * stream and synchronous Memcpy/Memset of a device run after the work
 * already queued on the device's blocking streams, and work queued on a
 * blocking stream afterwards waits for them, as with CUDA's legacy default
 * stream - whenever the blocking stream was created, before or after that
 * work.  Every kind of work counts: copies, fills, host functions, event
 * records, waits for a recorded event, graph launches (a wait for an event
 * never recorded queues nothing) - except that a wait for an event on a
 * blocking stream is not itself ordered after the NULL stream's earlier
 * work (CUDA's driver does not order it: a StreamSynchronize of a blocking
 * stream whose last work is such a wait may return while the NULL stream
 * is busy; the stream's later work is ordered as above, and the NULL
 * stream's later work after the wait).  infinirtStreamCreate makes blocking
 * streams; non-blocking ones (ours, like cudaStreamNonBlocking) never wait
 * for the NULL stream, nor it for them.
 *
 * Every ordering rule of this header, with the CUDA documentation each
 * follows, is listed in docs/semantics.md (rules R1-R7); every backend
 * keeps them all, and tests/semantics checks random programs against a
 * model of them on each.
 */
typedef enum {
    INFINIRT_STREAM_DEFAULT = 0x0,
    INFINIRT_STREAM_NON_BLOCKING = 0x1,
} infinirtStreamFlags_t;

/* Create a blocking stream on the current device; *stream_ptr receives a
 * handle owned by the caller, released with infinirtStreamDestroy.  Work on
 * different streams may run concurrently; work on one stream runs in order.
 * Returns SUCCESS, NULL_POINTER, OUT_OF_MEMORY, or the backend's error. */
INFINIRT_API infiniStatus_t infinirtStreamCreate(infinirtStream_t *stream_ptr);

/* (ours) infinirtStreamCreate with flags: INFINIRT_STREAM_DEFAULT or
 * INFINIRT_STREAM_NON_BLOCKING.  Returns as infinirtStreamCreate, BAD_PARAM
 * for unknown flag bits, NOT_IMPLEMENTED where the backend has only one
 * kind of stream. */
INFINIRT_API infiniStatus_t infinirtStreamCreateWithFlags(infinirtStream_t *stream_ptr, uint32_t flags);

/* (ours) Wrap a native stream the application made itself (a CUstream, a
 * cl_command_queue of the current device's context; PyTorch's current
 * stream, say) as an infinirt stream of the current device, so infinirt
 * copies, stream-ordered allocations and events work on it.  The handle
 * written to *stream_ptr is `native` itself.  infinirtStreamDestroy of it
 * waits for the work queued so far and releases the wrapper; the native
 * stream stays the application's.
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM (native is NULL or already an
 * infinirt stream), NOT_IMPLEMENTED, or the backend's error. */
INFINIRT_API infiniStatus_t infinirtStreamCreateFromNative(infinirtStream_t *stream_ptr, void *native);

/* (ours) The backend's native stream behind `stream` (the handle's own
 * value for a live stream; for NULL, the current device's default stream as
 * the backend names it, NULL on CUDA and the CPU backend).
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM. */
INFINIRT_API infiniStatus_t infinirtStreamGetNativeHandle(infinirtStream_t stream, void **native);

/* Destroy a stream after the work queued on it has completed (waits for it,
 * also while another thread is still inside a call on the stream; that
 * thread's call completes, and the backend's stream goes when it returns).
 * The stream's cached memory moves to the device only once its work has
 * completed.  The handle is invalid afterwards; using it again gives
 * BAD_PARAM.
 * Cost (ours): the frequent calls on a stream or event (copies, host
 * functions, stream-ordered allocation, record, query, synchronize, wait)
 * take no atomic read-modify-write for the handle when the calling thread
 * made it or is the only one using the runtime; in exchange, the last
 * release of a handle by a thread other than the one that made it costs a
 * process-wide barrier (membarrier(2), one to tens of microseconds).
 * Returns SUCCESS, BAD_PARAM (NULL, unknown or destroyed handle), or the
 * backend's error when the wait failed - the one failure after which the
 * handle is nevertheless gone (its memory is then kept out of use). */
INFINIRT_API infiniStatus_t infinirtStreamDestroy(infinirtStream_t stream);

/* Block until all work queued on the stream has completed.  The call reaches
 * the stream's own device, whatever the current device is.
 * Returns SUCCESS, BAD_PARAM, or the backend's error. */
INFINIRT_API infiniStatus_t infinirtStreamSynchronize(infinirtStream_t stream);

/* Make all work queued on `stream` after this call wait until the work
 * `event`'s last record captured has completed.  The wait binds to the
 * record the event holds at this call: recording the event again later, on
 * any stream, does not change what this wait waits for (R3 in
 * docs/semantics.md).  Never blocks the host.  An event never recorded
 * is complete.  Stream and event must be on the same backend; they may be on
 * different devices of it.  Returns SUCCESS, BAD_PARAM, NOT_IMPLEMENTED. */
INFINIRT_API infiniStatus_t infinirtStreamWaitEvent(infinirtStream_t stream, infinirtEvent_t event);

/* A host function run in stream order on a backend thread. */
typedef void (*infinirtHostFn_t)(void *user_data);

/* Queue a call of fn(user_data) on the stream: it runs after all work queued
 * before it and before any work queued after it, on a thread of the backend.
 * fn must not call infinirt functions (some backends, CUDA among them,
 * forbid any runtime call from a host function) and should be short: the
 * stream waits for it.
 * On CUDA (cuLaunchHostFunc):
 *  - no CUDA call may be made from fn, and so no infinirt call that reaches
 *    an NVIDIA device; it may deadlock or fail with NOT_PERMITTED;
 *  - the driver may run the host functions of all streams on one thread, one
 *    after another: fn must not wait for another stream's host function (or
 *    for anything queued behind one), or both streams may stall for ever;
 *  - after a context error (a faulting kernel: the error is sticky) queued
 *    host functions are not called at all: code that waits for fn to run
 *    should also watch the stream's status.
 * On the CPU backend (docs/cpu.md), in both stream modes, a call that would
 * wait made from fn (StreamSynchronize, EventSynchronize, DeviceSynchronize,
 * a synchronous Memcpy or Memset) is refused with INVALID_STATE and a log
 * line naming it, rather than waiting for fn itself; queueing more work
 * from fn (MemcpyAsync, LaunchHostFunc, EventRecord) works.  A host function
 * that blocks holds one of the backend's worker threads; past the plugin's
 * max_workers, other streams wait for it.
 * Returns SUCCESS, NULL_POINTER (fn), BAD_PARAM, NOT_IMPLEMENTED. */
INFINIRT_API infiniStatus_t infinirtLaunchHostFunc(infinirtStream_t stream, infinirtHostFn_t fn, void *user_data);

/* ------------------------------------------------------------------- event */

/* Create an event on the current device with default flags (timing on).
 * Owned by the caller; release with infinirtEventDestroy.
 * Returns SUCCESS, NULL_POINTER, OUT_OF_MEMORY, or the backend's error. */
INFINIRT_API infiniStatus_t infinirtEventCreate(infinirtEvent_t *event_ptr);

/* As infinirtEventCreate, with flags from infinirtEventFlags_t OR-ed
 * together.  Returns BAD_PARAM for unknown flag bits. */
INFINIRT_API infiniStatus_t infinirtEventCreateWithFlags(infinirtEvent_t *event_ptr, uint32_t flags);

/* Capture the work queued so far on `stream` (NULL: the event's device's
 * default stream; with it, by the blocking-stream rule, the work of the
 * device's blocking streams) into the event; a later record replaces an
 * earlier one for the calls made after it - waits, queries and
 * synchronizations already made keep the record they saw.
 * The stream must belong to the event's device.
 * Returns SUCCESS, BAD_PARAM. */
INFINIRT_API infiniStatus_t infinirtEventRecord(infinirtEvent_t event, infinirtStream_t stream);

/* *status_ptr = COMPLETE when the work the event's current record (the
 * record current at this call) captured has completed, or the event was
 * never recorded; NOT_READY otherwise.  After COMPLETE the host may rely
 * on that work as after infinirtEventSynchronize.  Never blocks.
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM. */
INFINIRT_API infiniStatus_t infinirtEventQuery(infinirtEvent_t event, infinirtEventStatus_t *status_ptr);

/* Block until the work the record current at this call captured has
 * completed (a record made meanwhile neither ends nor extends the wait).
 * Returns SUCCESS, BAD_PARAM. */
INFINIRT_API infiniStatus_t infinirtEventSynchronize(infinirtEvent_t event);

/* Destroy an event; work that records it and is still queued completes
 * normally.  Destroying an event another thread made costs a process-wide
 * barrier (see infinirtStreamDestroy).
 * Returns SUCCESS, BAD_PARAM (unknown or destroyed handle). */
INFINIRT_API infiniStatus_t infinirtEventDestroy(infinirtEvent_t event);

/* (ours) The backend's native event behind `event` (the CUevent on CUDA;
 * the backend's own object where its native events are one-shot).
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM. */
INFINIRT_API infiniStatus_t infinirtEventGetNativeHandle(infinirtEvent_t event, void **native);

/* *ms_ptr = milliseconds between the completion of start and of end.
 * Returns SUCCESS; NULL_POINTER; BAD_PARAM (unknown handles, or events of
 * different devices); NOT_READY when either record has not completed;
 * INVALID_STATE when either was never recorded or was created with
 * INFINIRT_EVENT_DISABLE_TIMING. */
INFINIRT_API infiniStatus_t infinirtEventElapsedTime(float *ms_ptr, infinirtEvent_t start, infinirtEvent_t end);

/* ------------------------------------------------------------------ memory */

/* Allocate `size` bytes of device memory on the current device; *p_ptr is
 * owned by the caller and released with infinirtFree.  The memory may be
 * used at once by work on any stream, non-blocking ones included: no work
 * queued earlier (before a Free or FreeAsync of the same memory, on any
 * stream) touches it any more.  size 0 gives *p_ptr =
 * NULL and SUCCESS.  Served by the loader's caching allocator when enabled.
 * Returns SUCCESS, NULL_POINTER, OUT_OF_MEMORY, BAD_PARAM (larger than the
 * device's maximum single allocation).  A request larger than the device's
 * total memory fails at once with OUT_OF_MEMORY: the cache is not released
 * for it and later allocations are served as if it had never been made. */
INFINIRT_API infiniStatus_t infinirtMalloc(void **p_ptr, size_t size);

/* Allocate `size` bytes of page-locked host memory through the current
 * device's backend, fast for copies to and from that backend's devices.
 * Released with infinirtFreeHost.  Returns as infinirtMalloc. */
INFINIRT_API infiniStatus_t infinirtMallocHost(void **p_ptr, size_t size);

/* Free device memory from infinirtMalloc/MallocAsync, on whichever device
 * owns it (found from the pointer, not the current device).  Work queued
 * before the call on any stream of that device never sees the memory reused.
 * ptr NULL: SUCCESS, nothing done.  Returns SUCCESS; BAD_PARAM for a pointer
 * that is not the start of a live allocation (unknown, interior, or freed
 * already: a double free).  Memory infinirt did not allocate is never freed,
 * unlike in copies: BAD_PARAM, nothing done, no plugin called. */
INFINIRT_API infiniStatus_t infinirtFree(void *ptr);

/* Free host memory from infinirtMallocHost.  Returns as infinirtFree. */
INFINIRT_API infiniStatus_t infinirtFreeHost(void *ptr);

/* Copy `size` bytes and wait for the copy to complete.  Device pointers are
 * looked up (interior pointers too) to find the owning device; the current
 * device is not used.  Host pointers may be any host memory.
 * Foreign device memory - a device side (dst of H2D, src of D2H, either of
 * D2D) that infinirt did not allocate, such as a tensor of another library
 * or InfiniCore's from_blob - is accepted as InfiniCore's runtime accepts
 * it, and taken on trust: its range cannot be checked.  It goes to the
 * device whose plugin's pointer_get_device claims it, asked of the current
 * device's plugin, or, in a D2D copy whose other side infinirt allocated,
 * of that side's plugin; where the plugin cannot tell (the CPU and OpenCL
 * plugins), to the current device, or to that other side's device.  The
 * backend must be able to use the pointer as it is: on CPU any host
 * memory; on OpenCL SVM memory of the device's context (memory = svm or
 * auto with SVM), while in buffer mode the plugin refuses it with
 * BAD_PARAM; on CUDA a device or unified address.  (Accepting them is
 * InfiniCore's behaviour; the routing and the range checks are ours.)
 * Every range the loader can see is checked before anything is copied, on
 * both sides: a side inside a live allocation (device memory, or host
 * memory from infinirtMallocHost) must fit in it, whatever the other side
 * is; a device side in memory the caching allocator holds but no live
 * block covers (freed already, or past the end of its block) is refused; a
 * host side must not be device memory the host cannot address (the CPU
 * backend's device memory is host memory and may be either side of any
 * kind; other backends' may not be a host side); size must fit a ptrdiff_t
 * and no range may wrap around the address space.  Host memory the loader
 * did not allocate is taken on trust.  A rejected copy writes nothing.
 * Returns SUCCESS; NULL_POINTER (dst or src NULL with size > 0); BAD_PARAM
 * (unknown kind, a device side that is MallocHost memory or freed memory
 * the allocator still holds, a range running past the end of its
 * allocation, a host side in device memory the host cannot address, a size
 * larger than PTRDIFF_MAX or wrapping around, or a foreign pointer the
 * backend cannot use), logged naming the side, its offset, the size and
 * the allocation's size; INTERNAL_ERROR when a plugin names a device it
 * does not have for a foreign pointer.  A D2D copy between devices of two
 * different backends is staged through host memory (in chunks of at most
 * 64 MiB); the asynchronous form refuses it with NOT_IMPLEMENTED.  size 0
 * is a no-op (SUCCESS, pointers unchecked). */
INFINIRT_API infiniStatus_t infinirtMemcpy(void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind);

/* As infinirtMemcpy, queued on `stream` (NULL: the owning device's default
 * stream).  Host memory must stay valid until the copy completes.  Host
 * memory from infinirtMallocHost makes the copy asynchronous: the call
 * returns once it is queued.  With other (pageable, malloc'd) host memory a
 * backend may block the host, as CUDA's rule is: a D2H copy into pageable
 * memory returns only when it has completed (after all work queued before it
 * on the stream), and an H2D copy from pageable memory may read the source
 * when it is called, before the work queued ahead of it on the stream has
 * run (CUDA stages it so: a host function queued earlier that writes the
 * source is not seen), or may wait for the stream first.  So never queue
 * such a copy behind work that only the calling thread can release (a host
 * function waiting for it, an event it has yet to record), and use
 * infinirtMallocHost memory where the copy must see what earlier work on
 * the stream wrote into its source.  The
 * device-side pointers must belong to the stream's backend.  Foreign device
 * memory (see infinirtMemcpy) is asked of the stream's plugin and, where it
 * cannot tell, taken as memory of the stream's device; with the NULL stream
 * it is routed as by infinirtMemcpy, on that device's default stream.
 * Checked as infinirtMemcpy, before anything is queued.
 * Returns as infinirtMemcpy, plus BAD_PARAM for an unknown or destroyed
 * stream, even with size 0. */
INFINIRT_API infiniStatus_t infinirtMemcpyAsync(void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind,
                                                infinirtStream_t stream);

/* Stream-ordered allocation on the stream's device (NULL stream: the current
 * device's default stream).  The memory may be used by work queued on the
 * stream from now on.  Returns as infinirtMalloc, plus BAD_PARAM. */
INFINIRT_API infiniStatus_t infinirtMallocAsync(void **p_ptr, size_t size, infinirtStream_t stream);

/* Stream-ordered free: the memory is released once the work queued on
 * `stream` before this call has completed; allocations on the same stream
 * may reuse it at once.  The stream must belong to the pointer's device
 * (NULL: that device's default stream); a stream of another device gives
 * BAD_PARAM, logged naming the stream's device, and frees nothing.
 * Returns as infinirtFree, plus BAD_PARAM. */
INFINIRT_API infiniStatus_t infinirtFreeAsync(void *ptr, infinirtStream_t stream);

/* Set `count` bytes at device pointer ptr to (unsigned char)value and wait.
 * Routed by pointer.  Inside a live device allocation, [ptr, ptr+count)
 * must fit in it (checked as in infinirtMemcpy; nothing is written
 * otherwise).  Foreign device memory is accepted and routed as in
 * infinirtMemcpy (the current device's plugin is asked, else the current
 * device is used), unchecked.  count 0 is a no-op.
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM (MallocHost memory, freed memory
 * the allocator still holds, a range past the end of its allocation or
 * wrapping around, count larger than PTRDIFF_MAX, a foreign pointer the
 * backend cannot use), INTERNAL_ERROR as infinirtMemcpy. */
INFINIRT_API infiniStatus_t infinirtMemset(void *ptr, int value, size_t count);

/* As infinirtMemset, queued on `stream`; foreign device memory is routed as
 * in infinirtMemcpyAsync (the stream's plugin is asked, else the stream's
 * device).  Returns as infinirtMemcpyAsync: BAD_PARAM for an unknown or
 * destroyed stream, even with count 0. */
INFINIRT_API infiniStatus_t infinirtMemsetAsync(void *ptr, int value, size_t count, infinirtStream_t stream);

/* (ours) The backend's native object for the memory at ptr (any address
 * inside an infinirtMalloc/MallocAsync block), for APIs that do not take
 * plain device pointers: in OpenCL buffer mode the cl_mem of the allocation
 * and ptr's byte offset in it; where memory is addressable (CUDA, the CPU,
 * OpenCL SVM) ptr itself and offset 0.  Either output may be NULL.
 * Returns SUCCESS, BAD_PARAM (ptr is not inside live infinirt memory). */
INFINIRT_API infiniStatus_t infinirtMemGetNativeHandle(const void *ptr, void **native, size_t *offset);

/* ------------------------------------------------------------------- graph */

/*
 * Stream capture and graphs, on every backend (docs/graphs.md).
 *
 * Between infinirtStreamBeginCapture and infinirtStreamEndCapture nothing
 * queued on the capturing stream runs: it is recorded into a graph.  An
 * executable graph made from it by infinirtGraphInstantiate runs the
 * recorded work again, in order, at every infinirtGraphLuanch, on the launch
 * stream, reading memory as it is at launch time.  Launches of one
 * executable graph run one after the other, on any streams; launches of
 * different executable graphs do not wait for each other.
 *
 *  - CUDA captures natively (cuStreamBeginCapture on the native stream):
 *    kernels the application launches on the stream handle are captured
 *    too.  A capture the application began natively on an infinirt stream
 *    is seen by the allocator and can be ended with infinirtStreamEndCapture.
 *  - Every other backend (CPU, OpenCL, a vendor plugin without native
 *    graphs): the loader records the infinirt operations issued on the
 *    stream (MemcpyAsync, MemsetAsync, LaunchHostFunc, EventRecord and
 *    StreamWaitEvent as dependencies, MallocAsync/FreeAsync).  Only what
 *    goes through infinirt is in the graph; work queued natively on the
 *    stream during the capture runs at once.  A stream that waits on an
 *    event recorded inside a capture joins it (fork), and must be joined
 *    back (the capturing stream waits on an event recorded on it after its
 *    last operation) before the capture ends; the graph then runs as one
 *    sequence, in the order the operations were issued.
 *
 * Calls that cannot be captured fail with INVALID_STATE and invalidate the
 * capture, as CUDA's do: StreamSynchronize or StreamDestroy of a capturing
 * stream; DeviceSynchronize, and synchronous Memcpy/Memset, on a device
 * where a (blocking) stream is capturing; StreamWaitEvent on an event
 * recorded outside the capture (or in another one).  Every later operation
 * on the invalidated stream fails with INVALID_STATE until
 * infinirtStreamEndCapture ends the capture (it returns INVALID_STATE and no
 * graph); the stream is usable afterwards.  EventQuery / EventSynchronize
 * of an event recorded in a capture under way give INVALID_STATE and
 * invalidate the capture too (CUDA's CAPTURED_EVENT).  An event whose last
 * record was in a capture must be recorded again outside one before it is
 * queried, synchronized, waited for or timed: CUDA refuses it until then
 * (INVALID_STATE), even after the capture ended well.
 *
 * Memory (the caching allocator): MallocAsync on a capturing stream is
 * served from memory private to the capture, never from blocks other
 * streams may still use; its addresses are the same at every launch.  Such
 * a block, and a block allocated before the capture but freed with
 * FreeAsync during it, stays out of every other use until the graph and
 * every executable graph made from it are destroyed and the last launch
 * has completed.  A block allocated during the capture and not freed in it
 * belongs to the application once the graph is gone (free it as usual; a
 * Free while the graph still lives is honoured when the graph goes).  The
 * allocator never records or queries a fence on a capturing stream, and
 * calls from other threads during a capture (Malloc, Free, FreeAsync,
 * EventQuery) do not invalidate it.
 *
 * Graph and executable-graph handles are checked like streams: made-up or
 * destroyed ones give BAD_PARAM.
 */

/* Begin capturing `stream` (a created stream: the NULL stream cannot be
 * captured, as CUDA's legacy stream cannot).  mode: GLOBAL, THREAD_LOCAL or
 * RELAXED (CUDA's rules for other threads' unsafe calls; the loader's own
 * captures treat them alike).  Returns SUCCESS, BAD_PARAM (dead stream,
 * unknown mode), INVALID_STATE (the NULL stream, a stream already
 * capturing), or the backend's error. */
INFINIRT_API infiniStatus_t infinirtStreamBeginCapture(infinirtStream_t stream, infinirtStreamCaptureMode_t mode);

/* End the capture on `stream` (the stream it began on) and give the graph in
 * *graph_ptr, owned by the caller (infinirtGraphDestroy).  Returns SUCCESS,
 * NULL_POINTER, BAD_PARAM, INVALID_STATE (the stream is not capturing, was
 * joined to another stream's capture, the capture was invalidated, or a
 * forked stream was not joined back: the capture ends, *graph_ptr = NULL),
 * OUT_OF_MEMORY (no host memory for the graph: the capture ends, *graph_ptr
 * = NULL), or the backend's error (INTERNAL_ERROR when it gave no graph: the
 * capture ends, *graph_ptr = NULL). */
INFINIRT_API infiniStatus_t infinirtStreamEndCapture(infinirtStream_t stream, infinirtGraph_t *graph_ptr);

/* Destroy a graph.  Executable graphs made from it stay valid; memory the
 * capture holds is released once the last of them is destroyed too.
 * Returns SUCCESS, BAD_PARAM (not a live graph). */
INFINIRT_API infiniStatus_t infinirtGraphDestroy(infinirtGraph_t graph);

/* Make an executable graph from `graph` into *graph_exec_ptr.  node_ptr,
 * when not NULL, receives NULL on success (no node failed; kept for
 * InfiniCore's signature) and is left alone on failure.  On failure a readable reason is written to log_buffer (when
 * not NULL, at most buffer_size bytes, NUL-terminated); on success
 * log_buffer holds "".  Returns SUCCESS, NULL_POINTER, BAD_PARAM,
 * OUT_OF_MEMORY, or the backend's error. */
INFINIRT_API infiniStatus_t infinirtGraphInstantiate(infinirtGraphExec_t *graph_exec_ptr, infinirtGraph_t graph,
                                                     infinirtGraphNode_t *node_ptr, char *log_buffer,
                                                     size_t buffer_size);

/* Destroy an executable graph; launches already queued still run, in
 * order.  Returns SUCCESS, BAD_PARAM (not a live executable graph). */
INFINIRT_API infiniStatus_t infinirtGraphExecDestroy(infinirtGraphExec_t graph_exec);

/* Queue one run of the executable graph on `stream` (NULL: the default
 * stream of the graph's device).  The run starts after the work queued
 * before it on `stream` and after the previous launch of the same
 * executable graph has completed, whatever stream that was on (as CUDA
 * orders a graphExec's launches: they reuse the same buffers).  Launches
 * of different executable graphs, even of one graph, are not ordered with
 * each other.  The call does not wait on the host, except on a backend
 * without events, where a launch on another stream than the previous one
 * first synchronizes that stream (docs/graphs.md, "Launch order").
 * Returns SUCCESS, BAD_PARAM (dead handle, a stream of another device),
 * INVALID_STATE (the stream is capturing on a backend without native
 * graphs), or the backend's error (then nothing was queued, unless the
 * backend failed part-way through the graph's operations).  (InfiniCore's
 * spelling; infinirtGraphLaunch is the same call.) */
INFINIRT_API infiniStatus_t infinirtGraphLuanch(infinirtGraphExec_t graph_exec, infinirtStream_t stream);

/* (ours) infinirtGraphLuanch, spelled correctly. */
INFINIRT_API infiniStatus_t infinirtGraphLaunch(infinirtGraphExec_t graph_exec, infinirtStream_t stream);

/* ---------------------------------------------------------- our additions */

/* A static English description of a status ("out of memory"); never NULL,
 * "unknown status" for values outside the enum.  Thread-safe. */
INFINIRT_API const char *infinirtGetErrorString(infiniStatus_t status);

/* The enumerator's name without prefix ("OUT_OF_MEMORY"); never NULL. */
INFINIRT_API const char *infinirtGetErrorName(infiniStatus_t status);

/* The name of a device type ("cpu", "nvidia", "opencl"), or "unknown". */
INFINIRT_API const char *infinirtGetDeviceTypeName(infiniDevice_t device);

typedef struct {
    char name[256];        /* e.g. "NVIDIA H100", "cpu0 (x86_64)" */
    char description[256]; /* backend details: platform, compute capability */
    size_t total_memory;   /* bytes */
    size_t max_alloc_size; /* largest single allocation; 0 = no limit */
    char plugin[64];       /* the plugin serving it, e.g. "cpu" */
    /* The device's UUID, "" where the backend has none (CPU, OpenCL).  On
     * CUDA "GPU-" and 8-4-4-4-12 hex digits from cuDeviceGetUuid_v2, as
     * nvidia-smi -L and NVML spell it: the same device gets the same UUID
     * whatever CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER or `devices =` make
     * its id.  Under MIG, cuDeviceGetUuid_v2 gives the instance's UUID
     * (spelled here with "GPU-" too; nvidia-smi writes "MIG-"). */
    char uuid[64];
} infinirtDeviceProperties_t;

/* Properties of one device into *props (caller-owned).
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM, DEVICE_TYPE_NOT_SUPPORTED,
 * DEVICE_NOT_FOUND. */
INFINIRT_API infiniStatus_t infinirtGetDeviceProperties(infiniDevice_t device, int device_id,
                                                        infinirtDeviceProperties_t *props);

/* Why a plugin is, or is not, serving devices. */
typedef enum {
    INFINIRT_PLUGIN_LOADED = 0,
    INFINIRT_PLUGIN_DISABLED = 1,  /* enabled = false in the config */
    INFINIRT_PLUGIN_NOT_FOUND = 2, /* library file does not exist */
    /* message holds dlerror(), or why the file was not opened: it is not a
     * regular file (a FIFO, a device, a directory), or, in a setuid/setgid
     * process, it or its folder is world-writable or owned by a user other
     * than root and the process's.  Outside setuid/setgid such a plugin
     * loads, with a warning logged and added to its message. */
    INFINIRT_PLUGIN_DLOPEN_ERROR = 3,
    INFINIRT_PLUGIN_ENTRY_MISSING = 4, /* no infinirtPluginEntry symbol */
    INFINIRT_PLUGIN_ABI_MISMATCH = 5,  /* message holds got/wanted */
    /* message holds the plugin's reason, or the loader's: the plugin
     * declared more than 4096 devices (refused, not cut down: such a count
     * is a plugin bug). */
    INFINIRT_PLUGIN_INIT_FAILED = 6,
    INFINIRT_PLUGIN_NO_DEVICES = 7,     /* loaded, zero devices; message says why */
    INFINIRT_PLUGIN_DUPLICATE_TYPE = 8, /* another plugin already serves the type */
    /* (ours) Only from infinirtPeekPluginInfo, for a plugin whose start
     * has not finished: no call has needed its device type yet
     * (NOT_STARTED), or its init is running now, or it waits for an
     * earlier plugin of its type whose init is (STARTING; the message says
     * which, and for how long). */
    INFINIRT_PLUGIN_NOT_STARTED = 9,
    INFINIRT_PLUGIN_STARTING = 10,
} infinirtPluginStatus_t;

typedef struct {
    char name[64];   /* section name: [plugin.NAME] */
    char path[1024]; /* library path as resolved */
    infinirtPluginStatus_t status;
    char message[512];          /* reason, empty when loaded normally */
    infiniDevice_t device_type; /* INFINI_DEVICE_TYPE_COUNT when unknown */
    int device_count;
    uint32_t abi_major, abi_minor; /* as the plugin declared them; 0 if unknown */
} infinirtPluginInfo_t;

/* Number of plugins the loader considered (loaded or not) into *count.
 * Known once the config is read: starts no plugin. */
INFINIRT_API infiniStatus_t infinirtGetPluginCount(int *count);

/* The report entry of plugin `index` in [0, count) into *info, final: the
 * plugin's device type is started first if no call has started it yet
 * (waiting for its init, however long that takes).
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM (index out of range). */
INFINIRT_API infiniStatus_t infinirtGetPluginInfo(int index, infinirtPluginInfo_t *info);

/* (ours) The report entry of plugin `index` as it stands now: as
 * infinirtGetPluginInfo, but it never starts a plugin and never waits for
 * one.  A plugin whose start has not finished has status
 * INFINIRT_PLUGIN_NOT_STARTED or INFINIRT_PLUGIN_STARTING (the message
 * says why, and how long its init has been running) and device_count 0.
 * What infinirt-info shows of a driver whose start-up hangs.
 * Returns SUCCESS, NULL_POINTER, BAD_PARAM (index out of range). */
INFINIRT_API infiniStatus_t infinirtPeekPluginInfo(int index, infinirtPluginInfo_t *info);

/* A static description of a plugin status ("dlopen error"). */
INFINIRT_API const char *infinirtGetPluginStatusString(infinirtPluginStatus_t status);

/* The config file the loader read into *path (a static string), or "" when
 * it used the embedded default.  Returns SUCCESS, NULL_POINTER. */
INFINIRT_API infiniStatus_t infinirtGetConfigPath(const char **path);

/* What the loader's configuration came from, for reports such as
 * infinirt-info's: the environment variables it reads, the files it read,
 * the folders it looked in for plugins, and every problem it found (each
 * also logged at warn or error, with file:line where there is one). */
typedef enum {
    /* A variable of the README's environment table: name is the variable,
     * value its value ("" when unset, or ignored in a setuid/setgid
     * process), message what the loader made of it. */
    INFINIRT_CONFIG_ENTRY_ENVIRONMENT = 0,
    /* A config file read: value is its path; name is "config" for the file
     * the search found (infinirtGetConfigPath), "drop-in" for a plugins.d
     * snippet read after it. */
    INFINIRT_CONFIG_ENTRY_FILE = 1,
    /* A folder scanned for plugins (libinfinirt_NAME.so), in the order
     * scanned: value is the folder, name what named it
     * ("INFINIRT_PLUGIN_PATH", "plugin_dir", "default"). */
    INFINIRT_CONFIG_ENTRY_PLUGIN_DIR = 2,
    /* A problem with the configuration: message, as logged. */
    INFINIRT_CONFIG_ENTRY_WARNING = 3,
} infinirtConfigEntryKind_t;

typedef struct {
    infinirtConfigEntryKind_t kind;
    char name[64];
    char value[1024];
    char message[512]; /* what it did, or what is wrong with it; "" when nothing */
    int problem;       /* 1: something is wrong (message says what; it was logged) */
} infinirtConfigEntry_t;

/* Number of entries of the config report into *count: the
 * ENVIRONMENT entries first (every variable, set or not), then the FILE,
 * PLUGIN_DIR and WARNING entries in the order the loader met them.
 * Returns SUCCESS, NULL_POINTER. */
INFINIRT_API infiniStatus_t infinirtGetConfigEntryCount(int *count);

/* Entry `index` in [0, count) of the config report into *entry
 * (caller-owned; longer texts are cut).  Returns SUCCESS, NULL_POINTER,
 * BAD_PARAM (index out of range). */
INFINIRT_API infiniStatus_t infinirtGetConfigEntry(int index, infinirtConfigEntry_t *entry);

/* The loader's version (INFINIRT_VERSION_* it was built with).  Any pointer
 * may be NULL.  Returns SUCCESS. */
INFINIRT_API infiniStatus_t infinirtGetVersion(int *major, int *minor, int *patch);

/* Caching allocator statistics of one pool; bytes unless said otherwise. */
typedef struct {
    size_t allocated_bytes;      /* handed to the application now */
    size_t peak_allocated_bytes; /* since start or the last peak reset */
    size_t reserved_bytes;       /* obtained from the backend now (segments) */
    size_t peak_reserved_bytes;
    size_t active_blocks;     /* live allocations */
    size_t segments;          /* backend allocations held */
    size_t raw_allocs;        /* backend allocation calls, total */
    size_t raw_frees;         /* backend free calls, total */
    size_t alloc_requests;    /* Malloc/MallocAsync calls that succeeded */
    size_t retries;           /* allocations that released cache and retried */
    size_t oom_count;         /* allocations that failed for lack of memory */
    size_t cached_free_bytes; /* reserved but not allocated */
} infinirtAllocatorStats_t;

/* Statistics of a device's memory pool.  Returns SUCCESS, NULL_POINTER,
 * BAD_PARAM, DEVICE_TYPE_NOT_SUPPORTED, DEVICE_NOT_FOUND. */
INFINIRT_API infiniStatus_t infinirtGetAllocatorStats(infiniDevice_t device, int device_id,
                                                      infinirtAllocatorStats_t *stats);

/* Statistics of the host (MallocHost) pool of the backend serving `device`. */
INFINIRT_API infiniStatus_t infinirtGetHostAllocatorStats(infiniDevice_t device, infinirtAllocatorStats_t *stats);

/* The caching allocator's settings, from the [allocator] section. */
typedef struct {
    int enabled;             /* 0: every allocation goes to the plugin */
    size_t granularity;      /* request rounding, bytes */
    size_t max_cached_bytes; /* 0 = no cap */
    size_t max_split_size;   /* 0 = no limit */
    int release_on_free;
} infinirtAllocatorSettings_t;

/* The settings every pool was created with into *settings.
 * Returns SUCCESS, NULL_POINTER. */
INFINIRT_API infiniStatus_t infinirtGetAllocatorSettings(infinirtAllocatorSettings_t *settings);

/* Set the peak counters of a device's pool to the current values. */
INFINIRT_API infiniStatus_t infinirtResetPeakStats(infiniDevice_t device, int device_id);

/* Give every fully free cached segment of a device's pool back to the
 * backend, after the work that may still use them has completed: blocks
 * the caller until the work queued before earlier frees on the device's
 * streams has completed.  Returns SUCCESS, BAD_PARAM, DEVICE_NOT_FOUND,
 * DEVICE_TYPE_NOT_SUPPORTED. */
INFINIRT_API infiniStatus_t infinirtTrimCache(infiniDevice_t device, int device_id);

/* ----------------------------------------------------------------- tracing */

/* (ours) Write the events recorded so far, by every thread, to the trace
 * file (INFINIRT_TRACE or [loader] trace; docs/tracing.md) before
 * returning, so that the file is a complete trace of everything up to this
 * call - for a program about to crash or be killed, or one that reads its
 * own trace.  The file is also written as the program runs (a writer
 * thread, a few times a second) and at exit.  Work still queued on
 * streams is written once it has run.  Thread-safe; may block while
 * writing.  Returns SUCCESS, also when no trace is being written (nothing
 * to do), or DEVICE_NOT_INITIALIZED. */
INFINIRT_API infiniStatus_t infinirtTraceFlush(void);

#endif /* __INFINIRT_API_H__ */
