/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_list.h - every public function of include/infinirt.h, once: its
 * name, parameters, the arguments to pass them on, and what a trace shows
 * of them.  The one place calls are traced from when a trace is written
 * (trace_api.c defines each traced call from this list); a function
 * missing here is never traced, which trace.coverage catches.
 *
 *   S(name, (params), (args), desc)  a function returning infiniStatus_t
 *   C(name, (params), (args), desc)  one returning const char *
 *
 * `desc` is a list of TA_* items (trace_api.c) that name what the call
 * span's args show: the device (TA_DEV, or found through TA_STREAM,
 * TA_EVENT, TA_MEM, TA_FREE, and TA_CUR for the calling thread's current
 * device), handles and pointers as hex, sizes as "bytes", outputs once the
 * call succeeded (TA_OUT), allocator events (TA_MALLOC, TA_FREE) and
 * what completes work (TA_SYNCS_STREAM, TA_SYNCS_DEVICE).  Items run
 * before the call; TA_NONE is an empty list.
 *
 * An S function is defined under its own name, and its first statement,
 * INFINIRT__TRACE_ENTRY(name, args) (trace.h), sends a call to
 * infinirt__traced_NAME while a trace is written.  A C function keeps its
 * name in the source (and so in __func__ and the log lines); internal.h
 * renames its symbol to infinirt__impl_NAME with an asm label made from
 * this list, and trace_api.c exports NAME.
 */
#ifndef INFINIRT_LOADER_API_LIST_H_
#define INFINIRT_LOADER_API_LIST_H_

#define INFINIRT__API_LIST(S, C)                                                                                     \
    S(infinirtInit, (void), (), TA_NONE)                                                                             \
    S(infinirtGetAllDeviceCount, (int *count_array), (count_array), TA_NONE)                                         \
    S(infinirtGetDeviceTypes, (infiniDevice_t * types, int capacity, int *count), (types, capacity, count), TA_NONE) \
    S(infinirtGetDeviceCount, (infiniDevice_t device, int *count), (device, count), TA_INT("type", device))          \
    S(infinirtSetDevice, (infiniDevice_t device, int device_id), (device, device_id), TA_DEV(device, device_id))     \
    S(infinirtGetDevice, (infiniDevice_t * device_ptr, int *device_id_ptr), (device_ptr, device_id_ptr), TA_CUR)     \
    S(infinirtGetMemInfo, (infiniDevice_t device, int device_id, size_t *free_bytes, size_t *total_bytes),           \
      (device, device_id, free_bytes, total_bytes), TA_DEV(device, device_id))                                       \
    S(infinirtGetDeviceResourceSnapshot,                                                                             \
      (infiniDevice_t device, int device_id, infinirtDeviceResourceSnapshot_t *snapshot),                            \
      (device, device_id, snapshot), TA_DEV(device, device_id))                                                      \
    S(infinirtDeviceSynchronize, (void), (), TA_CUR TA_SYNCS_DEVICE)                                                 \
    S(infinirtDeviceGetNativeHandle,                                                                                 \
      (infiniDevice_t device, int device_id, void **native_device, void **native_context),                           \
      (device, device_id, native_device, native_context), TA_DEV(device, device_id))                                 \
    S(infinirtStreamCreate, (infinirtStream_t * stream_ptr), (stream_ptr), TA_CUR TA_OUT("stream", stream_ptr))      \
    S(infinirtStreamCreateWithFlags, (infinirtStream_t * stream_ptr, uint32_t flags), (stream_ptr, flags),           \
      TA_CUR TA_INT("flags", flags) TA_OUT("stream", stream_ptr))                                                    \
    S(infinirtStreamCreateFromNative, (infinirtStream_t * stream_ptr, void *native), (stream_ptr, native),           \
      TA_CUR TA_HEX("native", native) TA_OUT("stream", stream_ptr))                                                  \
    S(infinirtStreamGetNativeHandle, (infinirtStream_t stream, void **native), (stream, native), TA_STREAM(stream))  \
    S(infinirtStreamDestroy, (infinirtStream_t stream), (stream), TA_STREAM(stream) TA_SYNCS_STREAM(stream))         \
    S(infinirtStreamSynchronize, (infinirtStream_t stream), (stream),                                                \
      TA_STREAM(stream) TA_CUR TA_SYNCS_STREAM(stream))                                                              \
    S(infinirtStreamWaitEvent, (infinirtStream_t stream, infinirtEvent_t event), (stream, event),                    \
      TA_STREAM(stream) TA_EVENT(event) TA_CUR)                                                                      \
    S(infinirtLaunchHostFunc, (infinirtStream_t stream, infinirtHostFn_t fn, void *user_data),                       \
      (stream, fn, user_data), TA_STREAM(stream) TA_CUR)                                                             \
    S(infinirtEventCreate, (infinirtEvent_t * event_ptr), (event_ptr), TA_CUR TA_OUT("event", event_ptr))            \
    S(infinirtEventCreateWithFlags, (infinirtEvent_t * event_ptr, uint32_t flags), (event_ptr, flags),               \
      TA_CUR TA_INT("flags", flags) TA_OUT("event", event_ptr))                                                      \
    S(infinirtEventRecord, (infinirtEvent_t event, infinirtStream_t stream), (event, stream),                        \
      TA_EVENT(event) TA_STREAM(stream))                                                                             \
    S(infinirtEventQuery, (infinirtEvent_t event, infinirtEventStatus_t * status_ptr), (event, status_ptr),          \
      TA_EVENT(event))                                                                                               \
    S(infinirtEventSynchronize, (infinirtEvent_t event), (event), TA_EVENT(event))                                   \
    S(infinirtEventDestroy, (infinirtEvent_t event), (event), TA_EVENT(event))                                       \
    S(infinirtEventGetNativeHandle, (infinirtEvent_t event, void **native), (event, native), TA_EVENT(event))        \
    S(infinirtEventElapsedTime, (float *ms_ptr, infinirtEvent_t start, infinirtEvent_t end), (ms_ptr, start, end),   \
      TA_EVENT(start) TA_HEX("end", end))                                                                            \
    S(infinirtMalloc, (void **p_ptr, size_t size), (p_ptr, size), TA_CUR TA_BYTES(size) TA_MALLOC(p_ptr, size))      \
    S(infinirtMallocHost, (void **p_ptr, size_t size), (p_ptr, size), TA_CUR TA_BYTES(size) TA_MALLOC(p_ptr, size))  \
    S(infinirtFree, (void *ptr), (ptr), TA_FREE(ptr))                                                                \
    S(infinirtFreeHost, (void *ptr), (ptr), TA_FREE(ptr))                                                            \
    S(infinirtMemcpy, (void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind), (dst, src, size, kind),  \
      TA_MEM("ptr", dst) TA_MEM("src", src) TA_BYTES(size) TA_KIND(kind) TA_CUR)                                     \
    S(infinirtMemcpyAsync,                                                                                           \
      (void *dst, const void *src, size_t size, infinirtMemcpyKind_t kind, infinirtStream_t stream),                 \
      (dst, src, size, kind, stream),                                                                                \
      TA_STREAM(stream) TA_MEM("ptr", dst) TA_MEM("src", src) TA_BYTES(size) TA_KIND(kind) TA_CUR)                   \
    S(infinirtMallocAsync, (void **p_ptr, size_t size, infinirtStream_t stream), (p_ptr, size, stream),              \
      TA_STREAM(stream) TA_CUR TA_BYTES(size) TA_MALLOC(p_ptr, size))                                                \
    S(infinirtFreeAsync, (void *ptr, infinirtStream_t stream), (ptr, stream), TA_STREAM(stream) TA_FREE(ptr))        \
    S(infinirtMemset, (void *ptr, int value, size_t count), (ptr, value, count),                                     \
      TA_MEM("ptr", ptr) TA_BYTES(count) TA_INT("value", value) TA_CUR)                                              \
    S(infinirtMemsetAsync, (void *ptr, int value, size_t count, infinirtStream_t stream),                            \
      (ptr, value, count, stream),                                                                                   \
      TA_STREAM(stream) TA_MEM("ptr", ptr) TA_BYTES(count) TA_INT("value", value) TA_CUR)                            \
    S(infinirtMemGetNativeHandle, (const void *ptr, void **native, size_t *offset), (ptr, native, offset),           \
      TA_MEM("ptr", ptr))                                                                                            \
    S(infinirtStreamBeginCapture, (infinirtStream_t stream, infinirtStreamCaptureMode_t mode), (stream, mode),       \
      TA_STREAM(stream) TA_INT("mode", mode))                                                                        \
    S(infinirtStreamEndCapture, (infinirtStream_t stream, infinirtGraph_t * graph_ptr), (stream, graph_ptr),         \
      TA_STREAM(stream) TA_OUT("graph", graph_ptr) TA_MEMORY)                                                        \
    S(infinirtGraphDestroy, (infinirtGraph_t graph), (graph), TA_HEX("graph", graph) TA_MEMORY)                      \
    S(infinirtGraphInstantiate,                                                                                      \
      (infinirtGraphExec_t * graph_exec_ptr, infinirtGraph_t graph, infinirtGraphNode_t * node_ptr,                  \
       char *log_buffer, size_t buffer_size),                                                                        \
      (graph_exec_ptr, graph, node_ptr, log_buffer, buffer_size),                                                    \
      TA_HEX("graph", graph) TA_OUT("exec", graph_exec_ptr))                                                         \
    S(infinirtGraphExecDestroy, (infinirtGraphExec_t graph_exec), (graph_exec),                                      \
      TA_HEX("exec", graph_exec) TA_MEMORY)                                                                          \
    S(infinirtGraphLuanch, (infinirtGraphExec_t graph_exec, infinirtStream_t stream), (graph_exec, stream),          \
      TA_STREAM(stream) TA_HEX("exec", graph_exec))                                                                  \
    S(infinirtGraphLaunch, (infinirtGraphExec_t graph_exec, infinirtStream_t stream), (graph_exec, stream),          \
      TA_STREAM(stream) TA_HEX("exec", graph_exec))                                                                  \
    C(infinirtGetErrorString, (infiniStatus_t status), (status), TA_INT("arg", status))                              \
    C(infinirtGetErrorName, (infiniStatus_t status), (status), TA_INT("arg", status))                                \
    C(infinirtGetDeviceTypeName, (infiniDevice_t device), (device), TA_INT("type", device))                          \
    S(infinirtGetDeviceProperties, (infiniDevice_t device, int device_id, infinirtDeviceProperties_t *props),        \
      (device, device_id, props), TA_DEV(device, device_id))                                                         \
    S(infinirtGetPluginCount, (int *count), (count), TA_NONE)                                                        \
    S(infinirtGetPluginInfo, (int index, infinirtPluginInfo_t *info), (index, info), TA_INT("index", index))         \
    S(infinirtPeekPluginInfo, (int index, infinirtPluginInfo_t *info), (index, info), TA_INT("index", index))        \
    C(infinirtGetPluginStatusString, (infinirtPluginStatus_t status), (status), TA_INT("arg", status))               \
    S(infinirtGetConfigPath, (const char **path), (path), TA_NONE)                                                   \
    S(infinirtGetConfigEntryCount, (int *count), (count), TA_NONE)                                                   \
    S(infinirtGetConfigEntry, (int index, infinirtConfigEntry_t *entry), (index, entry), TA_INT("index", index))     \
    S(infinirtGetVersion, (int *major, int *minor, int *patch), (major, minor, patch), TA_NONE)                      \
    S(infinirtGetAllocatorStats, (infiniDevice_t device, int device_id, infinirtAllocatorStats_t *stats),            \
      (device, device_id, stats), TA_DEV(device, device_id))                                                         \
    S(infinirtGetHostAllocatorStats, (infiniDevice_t device, infinirtAllocatorStats_t * stats), (device, stats),     \
      TA_INT("type", device))                                                                                        \
    S(infinirtGetAllocatorSettings, (infinirtAllocatorSettings_t * settings), (settings), TA_NONE)                   \
    S(infinirtResetPeakStats, (infiniDevice_t device, int device_id), (device, device_id),                           \
      TA_DEV(device, device_id))                                                                                     \
    S(infinirtTrimCache, (infiniDevice_t device, int device_id), (device, device_id),                                \
      TA_DEV(device, device_id) TA_MEMORY)                                                                           \
    S(infinirtTraceFlush, (void), (), TA_NONE)

#endif /* INFINIRT_LOADER_API_LIST_H_ */
