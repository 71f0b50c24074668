/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops_list.h - the entries of infinirtPluginOps as one X-macro list, the
 * one place besides the struct itself that names them.
 *
 * Row i is the struct's entry i (counted from init): its capability bit
 * (infinirt__plugin.caps), its INFINIRT__OP_ value (internal.h), its row of
 * the loader's dispatch table and its not-supported stub (dispatch.c), the
 * size a table of each minor must have (infinirt__dispatch_table_size), and
 * the fault plugin's forwarders (tests/fixtures/fault_plugin.c) are all expanded
 * from it.  dispatch.c checks at compile time that every row sits where
 * the struct has that field and that no field lacks a row.
 *
 *   X(name, minor, group, ret, params, args)
 *
 *   name    the field of infinirtPluginOps;
 *   minor   the ABI 1.minor that appended it (a row's entry is part of every
 *           table of that minor or later; INFINIRT_PLUGIN_OPS_SIZE_1_minor
 *           must cover it);
 *   group   what it works on: device, stream, event, memory (raw
 *           allocations), copy (memcpy/memset), native (the backend's own
 *           handles), graph (native capture and graphs: a plugin brings
 *           the whole group or none of it);
 *   ret     status (returns infiniStatus_t: the stub answers
 *           INFINI_STATUS_NOT_IMPLEMENTED) or void (the stub does nothing);
 *   params  the parameter list, with names, exactly the field's type (the
 *           stubs are declared with the field's type, so a mismatch does
 *           not compile);
 *   args    the parameter names alone, to pass a call on.
 *
 * Adding an entry: the field at the end of infinirtPluginOps (and its
 * minor's INFINIRT_PLUGIN_OPS_SIZE_1_N), one row at the end of this list,
 * the plugins that bring it (docs/plugin-abi.md, "Adding an entry in a new
 * minor").
 */
#ifndef INFINIRT_LOADER_OPS_LIST_H_
#define INFINIRT_LOADER_OPS_LIST_H_

#include "infinirt_plugin.h"

/* clang-format off */
#define INFINIRT__OPS_LIST(X)                                                                                       \
    /* ---- ABI 1.0 ---- */                                                                                         \
    X(init,                      0, device, status, (const infinirtPluginInitArgs *args, int *device_count),        \
      (args, device_count))                                                                                         \
    X(shutdown,                  0, device, void,   (void), ())                                                     \
    X(get_device_info,           0, device, status, (int dev, infinirtPluginDeviceInfo *info), (dev, info))         \
    X(get_mem_info,              0, device, status, (int dev, size_t *free_bytes, size_t *total_bytes),             \
      (dev, free_bytes, total_bytes))                                                                               \
    X(device_synchronize,        0, device, status, (int dev), (dev))                                               \
    X(stream_create,             0, stream, status, (int dev, void **stream), (dev, stream))                        \
    X(stream_destroy,            0, stream, status, (int dev, void *stream), (dev, stream))                         \
    X(stream_synchronize,        0, stream, status, (int dev, void *stream), (dev, stream))                         \
    X(stream_wait_event,         0, stream, status, (int dev, void *stream, void *event), (dev, stream, event))     \
    X(launch_host_func,          0, stream, status, (int dev, void *stream, infinirtPluginHostFn fn, void *user),   \
      (dev, stream, fn, user))                                                                                      \
    X(event_create,              0, event,  status, (int dev, uint32_t flags, void **event), (dev, flags, event))   \
    X(event_destroy,             0, event,  status, (int dev, void *event), (dev, event))                           \
    X(event_record,              0, event,  status, (int dev, void *event, void *stream), (dev, event, stream))     \
    X(event_query,               0, event,  status, (int dev, void *event, int *complete), (dev, event, complete))  \
    X(event_synchronize,         0, event,  status, (int dev, void *event), (dev, event))                           \
    X(event_elapsed_time,        0, event,  status, (int dev, float *ms, void *start, void *end),                   \
      (dev, ms, start, end))                                                                                        \
    X(malloc_device,             0, memory, status, (int dev, void **ptr, size_t size), (dev, ptr, size))           \
    X(free_device,               0, memory, status, (int dev, void *ptr), (dev, ptr))                               \
    X(malloc_host,               0, memory, status, (int dev, void **ptr, size_t size), (dev, ptr, size))           \
    X(free_host,                 0, memory, status, (int dev, void *ptr), (dev, ptr))                               \
    X(memcpy,                    0, copy,   status, (int dev, void *dst, const void *src, size_t size, int kind),   \
      (dev, dst, src, size, kind))                                                                                  \
    X(memcpy_async,              0, copy,   status,                                                                 \
      (int dev, void *dst, const void *src, size_t size, int kind, void *stream),                                   \
      (dev, dst, src, size, kind, stream))                                                                          \
    X(memset,                    0, copy,   status, (int dev, void *ptr, int value, size_t size),                   \
      (dev, ptr, value, size))                                                                                      \
    X(memset_async,              0, copy,   status, (int dev, void *ptr, int value, size_t size, void *stream),     \
      (dev, ptr, value, size, stream))                                                                              \
    /* ---- ABI 1.1 ---- */                                                                                         \
    X(stream_get_native,         1, native, status, (int dev, void *stream, void **native), (dev, stream, native))  \
    X(event_get_native,          1, native, status, (int dev, void *event, void **native), (dev, event, native))    \
    X(stream_create_with_flags,  1, stream, status, (int dev, uint32_t flags, void **stream), (dev, flags, stream)) \
    X(stream_create_from_native, 1, native, status, (int dev, void *native, void **stream), (dev, native, stream))  \
    X(stream_query,              1, stream, status, (int dev, void *stream, int *idle), (dev, stream, idle))        \
    X(device_get_native,         1, native, status, (int dev, void **device, void **context),                       \
      (dev, device, context))                                                                                       \
    X(mem_get_native,            1, native, status, (int dev, void *ptr, void **native, size_t *offset),            \
      (dev, ptr, native, offset))                                                                                   \
    X(set_device,                1, device, status, (int dev), (dev))                                               \
    X(pointer_get_device,        1, memory, status, (const void *ptr, int *dev), (ptr, dev))                        \
    /* ---- ABI 1.2 ---- */                                                                                         \
    X(stream_begin_capture,      2, graph,  status, (int dev, void *stream, int mode), (dev, stream, mode))         \
    X(stream_end_capture,        2, graph,  status, (int dev, void *stream, void **graph), (dev, stream, graph))    \
    X(stream_is_capturing,       2, graph,  status, (int dev, void *stream, int *capturing, uint64_t *id),          \
      (dev, stream, capturing, id))                                                                                 \
    X(graph_instantiate,         2, graph,  status,                                                                 \
      (int dev, void *graph, void **exec, char *log_buf, size_t log_size),                                          \
      (dev, graph, exec, log_buf, log_size))                                                                        \
    X(graph_launch,              2, graph,  status, (int dev, void *exec, void *stream), (dev, exec, stream))       \
    X(graph_exec_destroy,        2, graph,  status, (int dev, void *exec), (dev, exec))                             \
    X(graph_destroy,             2, graph,  status, (int dev, void *graph), (dev, graph))                           \
    X(get_utilization,           2, device, status, (int dev, infinirtPluginUtilization *util), (dev, util))        \
    /* ---- ABI 1.3 ---- */                                                                                         \
    X(get_device_uuid,           3, device, status, (int dev, char *uuid, size_t size), (dev, uuid, size))          \
    /* ---- ABI 1.5 ---- */                                                                                         \
    X(get_device_flags,          5, device, status, (int dev, uint32_t *flags), (dev, flags))                       \
    /* ---- ABI 1.6 ---- */                                                                                         \
    X(device_query,              6, device, status, (int dev, int *idle), (dev, idle))                              \
    /* (the end: a new row goes above this line) */
/* clang-format on */

/* The group column's values (INFINIRT__OPS_GROUP_##group). */
enum {
    INFINIRT__OPS_GROUP_device,
    INFINIRT__OPS_GROUP_stream,
    INFINIRT__OPS_GROUP_event,
    INFINIRT__OPS_GROUP_memory,
    INFINIRT__OPS_GROUP_copy,
    INFINIRT__OPS_GROUP_native,
    INFINIRT__OPS_GROUP_graph,
};

/* The ret column: the return type, and the body of a stub that answers
 * "not supported" (INFINIRT__OPS_RET_##ret, INFINIRT__OPS_STUB_##ret). */
#define INFINIRT__OPS_RET_status infiniStatus_t
#define INFINIRT__OPS_RET_void void
#define INFINIRT__OPS_STUB_status return INFINI_STATUS_NOT_IMPLEMENTED;
#define INFINIRT__OPS_STUB_void

/* The function type of field `name` (to declare a function that must have
 * exactly the field's type). */
#define INFINIRT__OPS_FN_TYPE(name) __typeof__(*((infinirtPluginOps *)0)->name)

#endif /* INFINIRT_LOADER_OPS_LIST_H_ */
