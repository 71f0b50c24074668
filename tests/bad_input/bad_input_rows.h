/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bad_input_rows.h - the bad-input table: one row per (public function, bad
 * argument), each X(function, row, expected status, flags, call).
 *
 * `call` is an expression over the fixture `f` (bad_input_tests.c) that makes
 * the call with one bad argument; every output argument points into f->out,
 * which the runner checks was not written.  The expected status is what
 * include/infinirt.h documents; where it says nothing the row follows CUDA
 * and its comment says so.  Every function declared in infinirt.h and
 * infinicore.h has at least one row: bad_input_coverage.sh compares this
 * table with the header and with what libinfinirt.so exports.
 *
 * Flags: BI_STR    the call returns a string; the row checks it and gives
 *                  SUCCESS or -1 (bi_str);
 *        BI_OTHER  the row needs a second device (f->s_other, f->e_other);
 *        BI_CACHED the row needs the caching allocator: a freed block's
 *                  memory stays the loader's, so using it is refused; with
 *                  the allocator off it went back to the backend and the
 *                  pointer is foreign memory, taken on trust.
 * Statuses BI_HUGE and BI_HUGE_HOST are worked out at run time: an
 * allocation of HUGE bytes is BAD_PARAM beyond the device's max_alloc_size,
 * OUT_OF_MEMORY otherwise; the host pool's maximum is not public, so either.
 */
#ifndef INFINIRT_BAD_INPUT_ROWS_H_
#define INFINIRT_BAD_INPUT_ROWS_H_

#define OK_ INFINI_STATUS_SUCCESS
#define BP_ INFINI_STATUS_BAD_PARAM
#define NP_ INFINI_STATUS_NULL_POINTER
#define DNF_ INFINI_STATUS_DEVICE_NOT_FOUND
#define DTNS_ INFINI_STATUS_DEVICE_TYPE_NOT_SUPPORTED
#define TYPE_COUNT_ INFINI_DEVICE_TYPE_COUNT
#define TYPE_NEG_ ((infiniDevice_t)-1)
#define UNSERVED_ INFINI_DEVICE_KUNLUN /* no test config loads a plugin for it */
#define H2H_ INFINIRT_MEMCPY_H2H
#define H2D_ INFINIRT_MEMCPY_H2D
#define D2H_ INFINIRT_MEMCPY_D2H
#define D2D_ INFINIRT_MEMCPY_D2D
#define IS_ INFINI_STATUS_INVALID_STATE
#define GLOBAL_ INFINIRT_STREAM_CAPTURE_MODE_GLOBAL
#define LOG_ f->log, sizeof f->log
#define A_ BI_SMALL /* bytes in d_a and h_pin */
#define OUT_ (&f->out)
#define TOP_ ((void *)(UINTPTR_MAX - 15)) /* 64 bytes from here wrap around */

/* A device-id family of rows for a function f(type, id, ...rest). */
#define BI_DEVICE_ROWS(X, fn, ...)                               \
    X(fn, type_count, BP_, 0, fn(TYPE_COUNT_, 0 __VA_ARGS__))    \
    X(fn, type_negative, BP_, 0, fn(TYPE_NEG_, 0 __VA_ARGS__))   \
    X(fn, type_unserved, DTNS_, 0, fn(UNSERVED_, 0 __VA_ARGS__)) \
    X(fn, id_count, DNF_, 0, fn(f->type, f->count __VA_ARGS__))  \
    X(fn, id_negative, DNF_, 0, fn(f->type, -1 __VA_ARGS__))     \
    X(fn, id_int_max, DNF_, 0, fn(f->type, INT_MAX __VA_ARGS__))

#define BI_ROWS(X)                                                                                                   \
    /* -------------------------------------------------------------- device */                                      \
    X(infinirtInit, again, OK_, 0, infinirtInit()) /* no arguments: a repeat changes nothing */                      \
    X(infinirtGetAllDeviceCount, null_out, NP_, 0, infinirtGetAllDeviceCount(NULL))                                  \
    X(infinirtGetDeviceCount, null_out, NP_, 0, infinirtGetDeviceCount(f->type, NULL))                               \
    X(infinirtGetDeviceCount, type_count, BP_, 0, infinirtGetDeviceCount(TYPE_COUNT_, &OUT_->i))                     \
    X(infinirtGetDeviceCount, type_negative, BP_, 0, infinirtGetDeviceCount(TYPE_NEG_, &OUT_->i))                    \
    X(infinirtGetDeviceCount, type_int_max, BP_, 0, infinirtGetDeviceCount((infiniDevice_t)INT_MAX, &OUT_->i))       \
    X(infinirtGetDeviceCount, type_past_count, BP_, 0, /* between InfiniCore's range and ours */                     \
      infinirtGetDeviceCount((infiniDevice_t)(INFINI_DEVICE_TYPE_COUNT + 1), &OUT_->i))                              \
    X(infinirtGetDeviceTypes, null_count, NP_, 0, infinirtGetDeviceTypes(OUT_->types, 4, NULL))                      \
    X(infinirtGetDeviceTypes, null_types, NP_, 0, infinirtGetDeviceTypes(NULL, 4, &OUT_->i))                         \
    X(infinirtGetDeviceTypes, negative_capacity, BP_, 0, infinirtGetDeviceTypes(OUT_->types, -1, &OUT_->i))          \
    BI_DEVICE_ROWS(X, infinirtSetDevice, )                                                                           \
    X(infinirtGetDevice, both_null, NP_, 0, infinirtGetDevice(NULL, NULL)) /* one may be NULL, not both */           \
    X(infinirtGetMemInfo, null_free, NP_, 0, infinirtGetMemInfo(f->type, 0, NULL, &OUT_->z2))                        \
    X(infinirtGetMemInfo, null_total, NP_, 0, infinirtGetMemInfo(f->type, 0, &OUT_->z1, NULL))                       \
    BI_DEVICE_ROWS(X, infinirtGetMemInfo, , &OUT_->z1, &OUT_->z2)                                                    \
    X(infinirtGetDeviceResourceSnapshot, null_out, NP_, 0, infinirtGetDeviceResourceSnapshot(f->type, 0, NULL))      \
    BI_DEVICE_ROWS(X, infinirtGetDeviceResourceSnapshot, , &OUT_->snap)                                              \
    X(infinirtDeviceSynchronize, no_args, OK_, 0, infinirtDeviceSynchronize())                                       \
    BI_DEVICE_ROWS(X, infinirtDeviceGetNativeHandle, , &OUT_->p, &OUT_->p2)                                          \
    /* -------------------------------------------------------------- stream */                                      \
    X(infinirtStreamCreate, null_out, NP_, 0, infinirtStreamCreate(NULL))                                            \
    X(infinirtStreamCreateWithFlags, null_out, NP_, 0, infinirtStreamCreateWithFlags(NULL, 0))                       \
    X(infinirtStreamCreateWithFlags, flag_0x2, BP_, 0, infinirtStreamCreateWithFlags(&OUT_->s, 0x2))                 \
    X(infinirtStreamCreateWithFlags, flag_all, BP_, 0, infinirtStreamCreateWithFlags(&OUT_->s, UINT32_MAX))          \
    X(infinirtStreamCreateFromNative, null_out, NP_, 0, infinirtStreamCreateFromNative(NULL, f->s_live))             \
    X(infinirtStreamCreateFromNative, native_null, BP_, 0, infinirtStreamCreateFromNative(&OUT_->s, NULL))           \
    X(infinirtStreamCreateFromNative, already_infinirt, BP_, 0, infinirtStreamCreateFromNative(&OUT_->s, f->s_live)) \
    X(infinirtStreamGetNativeHandle, null_out, NP_, 0, infinirtStreamGetNativeHandle(f->s_live, NULL))               \
    X(infinirtStreamGetNativeHandle, made_up, BP_, 0, infinirtStreamGetNativeHandle(f->made_up, &OUT_->p))           \
    X(infinirtStreamGetNativeHandle, destroyed, BP_, 0, infinirtStreamGetNativeHandle(f->s_dead, &OUT_->p))          \
    X(infinirtStreamGetNativeHandle, is_event, BP_, 0, infinirtStreamGetNativeHandle(f->e_live, &OUT_->p))           \
    X(infinirtStreamDestroy, null, BP_, 0, infinirtStreamDestroy(NULL))                                              \
    X(infinirtStreamDestroy, made_up, BP_, 0, infinirtStreamDestroy(f->made_up))                                     \
    X(infinirtStreamDestroy, forged, BP_, 0, infinirtStreamDestroy(f->forged_s))                                     \
    X(infinirtStreamDestroy, destroyed, BP_, 0, infinirtStreamDestroy(f->s_dead))                                    \
    X(infinirtStreamDestroy, is_event, BP_, 0, infinirtStreamDestroy(f->e_live))                                     \
    X(infinirtStreamSynchronize, made_up, BP_, 0, infinirtStreamSynchronize(f->made_up))                             \
    X(infinirtStreamSynchronize, forged, BP_, 0, infinirtStreamSynchronize(f->forged_s))                             \
    X(infinirtStreamSynchronize, destroyed, BP_, 0, infinirtStreamSynchronize(f->s_dead))                            \
    X(infinirtStreamSynchronize, is_event, BP_, 0, infinirtStreamSynchronize(f->e_live))                             \
    X(infinirtStreamWaitEvent, stream_made_up, BP_, 0, infinirtStreamWaitEvent(f->made_up, f->e_live))               \
    X(infinirtStreamWaitEvent, stream_destroyed, BP_, 0, infinirtStreamWaitEvent(f->s_dead, f->e_live))              \
    X(infinirtStreamWaitEvent, stream_is_event, BP_, 0, infinirtStreamWaitEvent(f->e_live, f->e_live))               \
    X(infinirtStreamWaitEvent, event_null, BP_, 0, infinirtStreamWaitEvent(f->s_live, NULL))                         \
    X(infinirtStreamWaitEvent, event_made_up, BP_, 0, infinirtStreamWaitEvent(f->s_live, f->made_up))                \
    X(infinirtStreamWaitEvent, event_forged, BP_, 0, infinirtStreamWaitEvent(f->s_live, f->forged_e))                \
    X(infinirtStreamWaitEvent, event_destroyed, BP_, 0, infinirtStreamWaitEvent(f->s_live, f->e_dead))               \
    X(infinirtStreamWaitEvent, event_is_stream, BP_, 0, infinirtStreamWaitEvent(f->s_live, f->s_live))               \
    X(infinirtLaunchHostFunc, null_fn, NP_, 0, infinirtLaunchHostFunc(f->s_live, NULL, f))                           \
    X(infinirtLaunchHostFunc, stream_made_up, BP_, 0, infinirtLaunchHostFunc(f->made_up, bi_hostfn, f))              \
    X(infinirtLaunchHostFunc, stream_destroyed, BP_, 0, infinirtLaunchHostFunc(f->s_dead, bi_hostfn, f))             \
    X(infinirtLaunchHostFunc, stream_is_event, BP_, 0, infinirtLaunchHostFunc(f->e_live, bi_hostfn, f))              \
    /* --------------------------------------------------------------- event */                                      \
    X(infinirtEventCreate, null_out, NP_, 0, infinirtEventCreate(NULL))                                              \
    X(infinirtEventCreateWithFlags, null_out, NP_, 0, infinirtEventCreateWithFlags(NULL, 0))                         \
    X(infinirtEventCreateWithFlags, flag_0x4, BP_, 0, infinirtEventCreateWithFlags(&OUT_->e, 0x4))                   \
    X(infinirtEventCreateWithFlags, flag_high_bit, BP_, 0, infinirtEventCreateWithFlags(&OUT_->e, 0x80000000u))      \
    X(infinirtEventCreateWithFlags, flag_all, BP_, 0, infinirtEventCreateWithFlags(&OUT_->e, UINT32_MAX))            \
    X(infinirtEventRecord, event_null, BP_, 0, infinirtEventRecord(NULL, f->s_live))                                 \
    X(infinirtEventRecord, event_made_up, BP_, 0, infinirtEventRecord(f->made_up, f->s_live))                        \
    X(infinirtEventRecord, event_forged, BP_, 0, infinirtEventRecord(f->forged_e, NULL))                             \
    X(infinirtEventRecord, event_destroyed, BP_, 0, infinirtEventRecord(f->e_dead, f->s_live))                       \
    X(infinirtEventRecord, event_is_stream, BP_, 0, infinirtEventRecord(f->s_live, f->s_live))                       \
    X(infinirtEventRecord, stream_made_up, BP_, 0, infinirtEventRecord(f->e_live, f->made_up))                       \
    X(infinirtEventRecord, stream_destroyed, BP_, 0, infinirtEventRecord(f->e_live, f->s_dead))                      \
    X(infinirtEventRecord, stream_is_event, BP_, 0, infinirtEventRecord(f->e_live, f->e_live))                       \
    X(infinirtEventRecord, stream_other_device, BP_, BI_OTHER, infinirtEventRecord(f->e_live, f->s_other))           \
    X(infinirtEventQuery, null_out, NP_, 0, infinirtEventQuery(f->e_live, NULL))                                     \
    X(infinirtEventQuery, null, BP_, 0, infinirtEventQuery(NULL, &OUT_->es))                                         \
    X(infinirtEventQuery, made_up, BP_, 0, infinirtEventQuery(f->made_up, &OUT_->es))                                \
    X(infinirtEventQuery, forged, BP_, 0, infinirtEventQuery(f->forged_e, &OUT_->es))                                \
    X(infinirtEventQuery, destroyed, BP_, 0, infinirtEventQuery(f->e_dead, &OUT_->es))                               \
    X(infinirtEventQuery, is_stream, BP_, 0, infinirtEventQuery(f->s_live, &OUT_->es))                               \
    X(infinirtEventSynchronize, null, BP_, 0, infinirtEventSynchronize(NULL))                                        \
    X(infinirtEventSynchronize, made_up, BP_, 0, infinirtEventSynchronize(f->made_up))                               \
    X(infinirtEventSynchronize, destroyed, BP_, 0, infinirtEventSynchronize(f->e_dead))                              \
    X(infinirtEventSynchronize, is_stream, BP_, 0, infinirtEventSynchronize(f->s_live))                              \
    X(infinirtEventDestroy, null, BP_, 0, infinirtEventDestroy(NULL))                                                \
    X(infinirtEventDestroy, made_up, BP_, 0, infinirtEventDestroy(f->made_up))                                       \
    X(infinirtEventDestroy, forged, BP_, 0, infinirtEventDestroy(f->forged_e))                                       \
    X(infinirtEventDestroy, destroyed, BP_, 0, infinirtEventDestroy(f->e_dead))                                      \
    X(infinirtEventDestroy, is_stream, BP_, 0, infinirtEventDestroy(f->s_live))                                      \
    X(infinirtEventGetNativeHandle, null_out, NP_, 0, infinirtEventGetNativeHandle(f->e_live, NULL))                 \
    X(infinirtEventGetNativeHandle, null, BP_, 0, infinirtEventGetNativeHandle(NULL, &OUT_->p))                      \
    X(infinirtEventGetNativeHandle, made_up, BP_, 0, infinirtEventGetNativeHandle(f->made_up, &OUT_->p))             \
    X(infinirtEventGetNativeHandle, destroyed, BP_, 0, infinirtEventGetNativeHandle(f->e_dead, &OUT_->p))            \
    X(infinirtEventGetNativeHandle, is_stream, BP_, 0, infinirtEventGetNativeHandle(f->s_live, &OUT_->p))            \
    X(infinirtEventElapsedTime, null_out, NP_, 0, infinirtEventElapsedTime(NULL, f->e_live, f->e_live))              \
    X(infinirtEventElapsedTime, start_destroyed, BP_, 0, infinirtEventElapsedTime(&OUT_->ms, f->e_dead, f->e_live))  \
    X(infinirtEventElapsedTime, end_made_up, BP_, 0, infinirtEventElapsedTime(&OUT_->ms, f->e_live, f->made_up))     \
    X(infinirtEventElapsedTime, start_is_stream, BP_, 0, infinirtEventElapsedTime(&OUT_->ms, f->s_live, f->e_live))  \
    X(infinirtEventElapsedTime, other_device, BP_, BI_OTHER,                                                         \
      infinirtEventElapsedTime(&OUT_->ms, f->e_live, f->e_other))                                                    \
    /* --------------------------------------------------------------- graph */                                      \
    /* The NULL stream cannot be captured (CUDA's legacy stream cannot). */                                          \
    X(infinirtStreamBeginCapture, stream_null, IS_, 0, infinirtStreamBeginCapture(NULL, GLOBAL_))                    \
    X(infinirtStreamBeginCapture, stream_made_up, BP_, 0, infinirtStreamBeginCapture(f->made_up, GLOBAL_))           \
    X(infinirtStreamBeginCapture, stream_forged, BP_, 0, infinirtStreamBeginCapture(f->forged_s, GLOBAL_))           \
    X(infinirtStreamBeginCapture, stream_destroyed, BP_, 0, infinirtStreamBeginCapture(f->s_dead, GLOBAL_))          \
    X(infinirtStreamBeginCapture, stream_is_event, BP_, 0, infinirtStreamBeginCapture(f->e_live, GLOBAL_))           \
    X(infinirtStreamBeginCapture, mode_3, BP_, 0,                                                                    \
      infinirtStreamBeginCapture(f->s_live, (infinirtStreamCaptureMode_t)3))                                         \
    X(infinirtStreamBeginCapture, mode_negative, BP_, 0,                                                             \
      infinirtStreamBeginCapture(f->s_live, (infinirtStreamCaptureMode_t)-1))                                        \
    X(infinirtStreamEndCapture, null_out, NP_, 0, infinirtStreamEndCapture(f->s_live, NULL))                         \
    X(infinirtStreamEndCapture, not_capturing, IS_, 0, infinirtStreamEndCapture(f->s_live, &f->g_end))               \
    X(infinirtStreamEndCapture, stream_made_up, BP_, 0, infinirtStreamEndCapture(f->made_up, &OUT_->g))              \
    X(infinirtStreamEndCapture, stream_destroyed, BP_, 0, infinirtStreamEndCapture(f->s_dead, &OUT_->g))             \
    X(infinirtStreamEndCapture, stream_is_event, BP_, 0, infinirtStreamEndCapture(f->e_live, &OUT_->g))              \
    X(infinirtGraphDestroy, null, BP_, 0, infinirtGraphDestroy(NULL))                                                \
    X(infinirtGraphDestroy, made_up, BP_, 0, infinirtGraphDestroy(f->made_up))                                       \
    X(infinirtGraphDestroy, destroyed, BP_, 0, infinirtGraphDestroy(f->g_dead))                                      \
    X(infinirtGraphDestroy, is_exec, BP_, 0, infinirtGraphDestroy(f->x_live))                                        \
    X(infinirtGraphDestroy, is_stream, BP_, 0, infinirtGraphDestroy(f->s_live))                                      \
    X(infinirtGraphInstantiate, null_out, NP_, 0, infinirtGraphInstantiate(NULL, f->g_live, NULL, LOG_))             \
    X(infinirtGraphInstantiate, graph_null, BP_, 0, infinirtGraphInstantiate(&OUT_->x, NULL, &OUT_->node, LOG_))     \
    X(infinirtGraphInstantiate, graph_made_up, BP_, 0,                                                               \
      infinirtGraphInstantiate(&OUT_->x, f->made_up, &OUT_->node, LOG_))                                             \
    X(infinirtGraphInstantiate, graph_destroyed, BP_, 0,                                                             \
      infinirtGraphInstantiate(&OUT_->x, f->g_dead, &OUT_->node, LOG_))                                              \
    X(infinirtGraphInstantiate, graph_is_exec, BP_, 0,                                                               \
      infinirtGraphInstantiate(&OUT_->x, f->x_live, &OUT_->node, LOG_))                                              \
    X(infinirtGraphInstantiate, graph_is_stream, BP_, 0,                                                             \
      infinirtGraphInstantiate(&OUT_->x, f->s_live, &OUT_->node, NULL, 0))                                           \
    X(infinirtGraphExecDestroy, null, BP_, 0, infinirtGraphExecDestroy(NULL))                                        \
    X(infinirtGraphExecDestroy, made_up, BP_, 0, infinirtGraphExecDestroy(f->made_up))                               \
    X(infinirtGraphExecDestroy, destroyed, BP_, 0, infinirtGraphExecDestroy(f->x_dead))                              \
    X(infinirtGraphExecDestroy, is_graph, BP_, 0, infinirtGraphExecDestroy(f->g_live))                               \
    X(infinirtGraphExecDestroy, is_event, BP_, 0, infinirtGraphExecDestroy(f->e_live))                               \
    X(infinirtGraphLuanch, exec_null, BP_, 0, infinirtGraphLuanch(NULL, f->s_live))                                  \
    X(infinirtGraphLuanch, exec_made_up, BP_, 0, infinirtGraphLuanch(f->made_up, f->s_live))                         \
    X(infinirtGraphLuanch, exec_destroyed, BP_, 0, infinirtGraphLuanch(f->x_dead, f->s_live))                        \
    X(infinirtGraphLuanch, exec_is_graph, BP_, 0, infinirtGraphLuanch(f->g_live, f->s_live))                         \
    X(infinirtGraphLuanch, stream_made_up, BP_, 0, infinirtGraphLuanch(f->x_live, f->made_up))                       \
    X(infinirtGraphLuanch, stream_forged, BP_, 0, infinirtGraphLuanch(f->x_live, f->forged_s))                       \
    X(infinirtGraphLuanch, stream_destroyed, BP_, 0, infinirtGraphLuanch(f->x_live, f->s_dead))                      \
    X(infinirtGraphLuanch, stream_is_event, BP_, 0, infinirtGraphLuanch(f->x_live, f->e_live))                       \
    X(infinirtGraphLuanch, stream_other_device, BP_, BI_OTHER, infinirtGraphLuanch(f->x_live, f->s_other))           \
    X(infinirtGraphLaunch, exec_destroyed, BP_, 0, infinirtGraphLaunch(f->x_dead, NULL))                             \
    X(infinirtGraphLaunch, exec_is_stream, BP_, 0, infinirtGraphLaunch(f->s_live, f->s_live))                        \
    X(infinirtGraphLaunch, stream_destroyed, BP_, 0, infinirtGraphLaunch(f->x_live, f->s_dead))                      \
    X(infinirtGraphLaunch, stream_other_device, BP_, BI_OTHER, infinirtGraphLaunch(f->x_live, f->s_other))           \
    /* -------------------------------------------------------------- memory */                                      \
    X(infinirtMalloc, null_out, NP_, 0, infinirtMalloc(NULL, 16))                                                    \
    X(infinirtMalloc, null_out_size_0, NP_, 0, infinirtMalloc(NULL, 0))                                              \
    X(infinirtMalloc, size_max, BP_, 0, infinirtMalloc(&OUT_->p, SIZE_MAX))                                          \
    X(infinirtMalloc, size_max_minus_1, BP_, 0, infinirtMalloc(&OUT_->p, SIZE_MAX - 1))                              \
    X(infinirtMalloc, huge, BI_HUGE, 0, infinirtMalloc(&OUT_->p, BI_HUGE_BYTES))                                     \
    X(infinirtMallocHost, null_out, NP_, 0, infinirtMallocHost(NULL, 16))                                            \
    X(infinirtMallocHost, size_max, BP_, 0, infinirtMallocHost(&OUT_->p, SIZE_MAX))                                  \
    X(infinirtMallocHost, huge, BI_HUGE_HOST, 0, infinirtMallocHost(&OUT_->p, BI_HUGE_BYTES))                        \
    X(infinirtMemGetNativeHandle, null, BP_, 0, infinirtMemGetNativeHandle(NULL, &OUT_->p, &OUT_->z1))               \
    X(infinirtMemGetNativeHandle, made_up, BP_, 0, infinirtMemGetNativeHandle(f->made_up, &OUT_->p, &OUT_->z1))      \
    X(infinirtMemGetNativeHandle, freed, BP_, 0, infinirtMemGetNativeHandle(f->d_freed, &OUT_->p, &OUT_->z1))        \
    X(infinirtMemGetNativeHandle, host_buffer, BP_, 0, infinirtMemGetNativeHandle(f->h_src, &OUT_->p, &OUT_->z1))    \
    X(infinirtMemGetNativeHandle, host_freed, BP_, 0,                                                                \
      infinirtMemGetNativeHandle(f->h_pin_freed, &OUT_->p, &OUT_->z1))                                               \
    X(infinirtFree, made_up, BP_, 0, infinirtFree(f->made_up))                                                       \
    X(infinirtFree, host_buffer, BP_, 0, infinirtFree(f->h_src))                                                     \
    X(infinirtFree, interior, BP_, 0, infinirtFree((char *)f->d_a + 256))                                            \
    X(infinirtFree, last_byte, BP_, 0, infinirtFree((char *)f->d_a + A_ - 1))                                        \
    X(infinirtFree, double_free, BP_, 0, infinirtFree(f->d_freed))                                                   \
    X(infinirtFree, pinned_host, BP_, 0, infinirtFree(f->h_pin))                                                     \
    X(infinirtFree, stream_handle, BP_, 0, infinirtFree(f->s_live))                                                  \
    X(infinirtFreeHost, device_ptr, BP_, 0, infinirtFreeHost(f->d_a))                                                \
    X(infinirtFreeHost, interior, BP_, 0, infinirtFreeHost((char *)f->h_pin + 8))                                    \
    X(infinirtFreeHost, double_free, BP_, 0, infinirtFreeHost(f->h_pin_freed))                                       \
    X(infinirtFreeHost, host_buffer, BP_, 0, infinirtFreeHost(f->h_src))                                             \
    X(infinirtMemcpy, kind_4, BP_, 0, infinirtMemcpy(f->h_dst, f->h_src, 16, (infinirtMemcpyKind_t)4))               \
    X(infinirtMemcpy, kind_negative, BP_, 0, infinirtMemcpy(f->h_dst, f->h_src, 16, (infinirtMemcpyKind_t)-1))       \
    X(infinirtMemcpy, kind_int_max, BP_, 0, infinirtMemcpy(f->h_dst, f->h_src, 16, (infinirtMemcpyKind_t)INT_MAX))   \
    X(infinirtMemcpy, kind_4_size_0, BP_, 0, infinirtMemcpy(f->h_dst, f->h_src, 0, (infinirtMemcpyKind_t)4))         \
    X(infinirtMemcpy, null_dst, NP_, 0, infinirtMemcpy(NULL, f->h_src, 16, H2H_))                                    \
    X(infinirtMemcpy, null_src, NP_, 0, infinirtMemcpy(f->h_dst, NULL, 16, H2H_))                                    \
    X(infinirtMemcpy, null_dst_h2d, NP_, 0, infinirtMemcpy(NULL, f->h_src, 16, H2D_))                                \
    /* A device side the loader did not allocate is foreign device memory, \
     * taken on trust; only a range that wraps or a size no object has is  \
     * still refused. */                                         \
    X(infinirtMemcpy, h2d_foreign_dst_wraps, BP_, 0, infinirtMemcpy(TOP_, f->h_src, 64, H2D_))                       \
    X(infinirtMemcpy, h2d_foreign_dst_size_max, BP_, 0, infinirtMemcpy(f->h_dst, f->h_src, SIZE_MAX, H2D_))          \
    X(infinirtMemcpy, h2d_dst_pinned, BP_, 0, infinirtMemcpy(f->h_pin, f->h_src, 16, H2D_))                          \
    X(infinirtMemcpy, h2d_dst_freed, BP_, BI_CACHED, infinirtMemcpy(f->d_freed, f->h_src, 16, H2D_))                 \
    X(infinirtMemcpy, h2d_dst_overrun, BP_, 0, infinirtMemcpy((char *)f->d_a + A_ - 16, f->h_src, 32, H2D_))         \
    X(infinirtMemcpy, d2h_foreign_src_wraps, BP_, 0, infinirtMemcpy(f->h_dst, TOP_, 64, D2H_))                       \
    X(infinirtMemcpy, d2h_src_overrun, BP_, 0, infinirtMemcpy(f->h_dst, (char *)f->d_a + 8, A_, D2H_))               \
    X(infinirtMemcpy, d2d_src_freed, BP_, BI_CACHED, infinirtMemcpy(f->d_a, f->d_freed, 16, D2D_))                   \
    X(infinirtMemcpy, d2d_dst_overrun, BP_, 0, infinirtMemcpy(f->d_a, f->d_big, A_ + 1, D2D_))                       \
    X(infinirtMemcpy, h2d_size_max, BP_, 0, infinirtMemcpy(f->d_a, f->h_src, SIZE_MAX, H2D_))                        \
    X(infinirtMemcpy, d2h_size_max, BP_, 0, infinirtMemcpy(f->h_dst, f->d_a, SIZE_MAX, D2H_))                        \
    X(infinirtMemcpy, h2h_size_max, BP_, 0, infinirtMemcpy(f->h_dst, f->h_src, SIZE_MAX, H2H_))                      \
    X(infinirtMemcpy, h2h_pinned_dst_overrun, BP_, 0, infinirtMemcpy(f->h_pin, f->h_src, 2 * A_, H2H_))              \
    X(infinirtMemcpy, h2h_device_src_overrun, BP_, 0, infinirtMemcpy(f->h_dst, f->d_a, 2 * A_, H2H_))                \
    X(infinirtMemcpy, d2h_pinned_dst_overrun, BP_, 0, infinirtMemcpy(f->h_pin, f->d_big, 2 * A_, D2H_))              \
    X(infinirtMemcpy, h2d_pinned_src_overrun, BP_, 0, infinirtMemcpy(f->d_big, f->h_pin, 2 * A_, H2D_))              \
    X(infinirtMemcpyAsync, kind_4, BP_, 0,                                                                           \
      infinirtMemcpyAsync(f->h_dst, f->h_src, 16, (infinirtMemcpyKind_t)4, f->s_live))                               \
    X(infinirtMemcpyAsync, kind_4_size_0, BP_, 0,                                                                    \
      infinirtMemcpyAsync(f->h_dst, f->h_src, 0, (infinirtMemcpyKind_t)4, f->s_live))                                \
    X(infinirtMemcpyAsync, null_dst, NP_, 0, infinirtMemcpyAsync(NULL, f->h_src, 16, H2D_, f->s_live))               \
    X(infinirtMemcpyAsync, stream_made_up, BP_, 0, infinirtMemcpyAsync(f->d_a, f->h_src, 16, H2D_, f->made_up))      \
    X(infinirtMemcpyAsync, stream_forged, BP_, 0, infinirtMemcpyAsync(f->d_a, f->h_src, 16, H2D_, f->forged_s))      \
    X(infinirtMemcpyAsync, stream_destroyed, BP_, 0, infinirtMemcpyAsync(f->d_a, f->h_src, 16, H2D_, f->s_dead))     \
    X(infinirtMemcpyAsync, stream_destroyed_size_0, BP_, 0,                                                          \
      infinirtMemcpyAsync(f->d_a, f->h_src, 0, H2D_, f->s_dead))                                                     \
    X(infinirtMemcpyAsync, stream_is_event, BP_, 0, infinirtMemcpyAsync(f->d_a, f->h_src, 16, H2D_, f->e_live))      \
    X(infinirtMemcpyAsync, h2d_foreign_dst_wraps, BP_, 0, infinirtMemcpyAsync(TOP_, f->h_src, 64, H2D_, f->s_live))  \
    X(infinirtMemcpyAsync, h2d_dst_freed, BP_, BI_CACHED,                                                            \
      infinirtMemcpyAsync(f->d_freed, f->h_src, 16, H2D_, f->s_live))                                                \
    X(infinirtMemcpyAsync, h2d_dst_overrun, BP_, 0,                                                                  \
      infinirtMemcpyAsync((char *)f->d_a + A_ - 16, f->h_src, 32, H2D_, f->s_live))                                  \
    X(infinirtMemcpyAsync, d2h_size_max, BP_, 0, infinirtMemcpyAsync(f->h_dst, f->d_a, SIZE_MAX, D2H_, f->s_live))   \
    X(infinirtMemcpyAsync, h2h_size_max, BP_, 0, infinirtMemcpyAsync(f->h_dst, f->h_src, SIZE_MAX, H2H_, f->s_live)) \
    X(infinirtMemcpyAsync, h2h_pinned_dst_overrun, BP_, 0,                                                           \
      infinirtMemcpyAsync(f->h_pin, f->h_src, 2 * A_, H2H_, f->s_live))                                              \
    X(infinirtMemcpyAsync, d2h_pinned_dst_overrun, BP_, 0,                                                           \
      infinirtMemcpyAsync(f->h_pin, f->d_big, 2 * A_, D2H_, f->s_live))                                              \
    X(infinirtMallocAsync, null_out, NP_, 0, infinirtMallocAsync(NULL, 16, f->s_live))                               \
    X(infinirtMallocAsync, stream_made_up, BP_, 0, infinirtMallocAsync(&OUT_->p, 16, f->made_up))                    \
    X(infinirtMallocAsync, stream_destroyed, BP_, 0, infinirtMallocAsync(&OUT_->p, 16, f->s_dead))                   \
    X(infinirtMallocAsync, stream_destroyed_size_0, BP_, 0, infinirtMallocAsync(&OUT_->p, 0, f->s_dead))             \
    X(infinirtMallocAsync, stream_is_event, BP_, 0, infinirtMallocAsync(&OUT_->p, 16, f->e_live))                    \
    X(infinirtMallocAsync, size_max, BP_, 0, infinirtMallocAsync(&OUT_->p, SIZE_MAX, f->s_live))                     \
    X(infinirtMallocAsync, huge, BI_HUGE, 0, infinirtMallocAsync(&OUT_->p, BI_HUGE_BYTES, f->s_live))                \
    X(infinirtFreeAsync, double_free, BP_, 0, infinirtFreeAsync(f->d_freed, f->s_live))                              \
    X(infinirtFreeAsync, interior, BP_, 0, infinirtFreeAsync((char *)f->d_a + 256, f->s_live))                       \
    X(infinirtFreeAsync, pinned_host, BP_, 0, infinirtFreeAsync(f->h_pin, f->s_live))                                \
    X(infinirtFreeAsync, host_buffer, BP_, 0, infinirtFreeAsync(f->h_src, f->s_live))                                \
    X(infinirtFreeAsync, stream_made_up, BP_, 0, infinirtFreeAsync(f->d_a, f->made_up))                              \
    X(infinirtFreeAsync, stream_destroyed, BP_, 0, infinirtFreeAsync(f->d_a, f->s_dead))                             \
    X(infinirtFreeAsync, stream_is_event, BP_, 0, infinirtFreeAsync(f->d_a, f->e_live))                              \
    /* NULL ptr on a dead stream: the header makes a dead handle BAD_PARAM   \
     * for every call, as MemcpyAsync of size 0 already does. */                                       \
    X(infinirtFreeAsync, null_ptr_stream_destroyed, BP_, 0, infinirtFreeAsync(NULL, f->s_dead))                      \
    X(infinirtMemset, null_ptr, NP_, 0, infinirtMemset(NULL, 0, 16))                                                 \
    X(infinirtMemset, foreign_wraps, BP_, 0, infinirtMemset(TOP_, 0, 64))                                            \
    X(infinirtMemset, pinned_host, BP_, 0, infinirtMemset(f->h_pin, 0, 16))                                          \
    X(infinirtMemset, freed, BP_, BI_CACHED, infinirtMemset(f->d_freed, 0, 16))                                      \
    X(infinirtMemset, overrun, BP_, 0, infinirtMemset((char *)f->d_a + A_ - 8, 0, 16))                               \
    X(infinirtMemset, size_max, BP_, 0, infinirtMemset(f->d_a, 0, SIZE_MAX))                                         \
    X(infinirtMemsetAsync, null_ptr, NP_, 0, infinirtMemsetAsync(NULL, 0, 16, f->s_live))                            \
    X(infinirtMemsetAsync, freed, BP_, BI_CACHED, infinirtMemsetAsync(f->d_freed, 0, 16, f->s_live))                 \
    X(infinirtMemsetAsync, foreign_wraps, BP_, 0, infinirtMemsetAsync(TOP_, 0, 64, f->s_live))                       \
    X(infinirtMemsetAsync, overrun, BP_, 0, infinirtMemsetAsync((char *)f->d_a + A_ - 8, 0, 16, f->s_live))          \
    X(infinirtMemsetAsync, size_max, BP_, 0, infinirtMemsetAsync(f->d_a, 0, SIZE_MAX, f->s_live))                    \
    X(infinirtMemsetAsync, stream_made_up, BP_, 0, infinirtMemsetAsync(f->d_a, 0, 16, f->made_up))                   \
    X(infinirtMemsetAsync, stream_destroyed, BP_, 0, infinirtMemsetAsync(f->d_a, 0, 16, f->s_dead))                  \
    X(infinirtMemsetAsync, stream_destroyed_size_0, BP_, 0, infinirtMemsetAsync(f->d_a, 0, 0, f->s_dead))            \
    X(infinirtMemsetAsync, stream_is_event, BP_, 0, infinirtMemsetAsync(f->d_a, 0, 16, f->e_live))                   \
    /* ------------------------------------------------------- our additions */                                      \
    X(infinirtGetErrorString, status_9, OK_, BI_STR,                                                                 \
      bi_str(infinirtGetErrorString((infiniStatus_t)9), "unknown status"))                                           \
    X(infinirtGetErrorString, status_negative, OK_, BI_STR,                                                          \
      bi_str(infinirtGetErrorString((infiniStatus_t)-1), "unknown status"))                                          \
    X(infinirtGetErrorString, status_int_max, OK_, BI_STR,                                                           \
      bi_str(infinirtGetErrorString((infiniStatus_t)INT_MAX), "unknown status"))                                     \
    X(infinirtGetErrorName, status_9, OK_, BI_STR,                                                                   \
      bi_str(infinirtGetErrorName((infiniStatus_t)9), "UNKNOWN_STATUS"))                                             \
    X(infinirtGetErrorName, status_negative, OK_, BI_STR,                                                            \
      bi_str(infinirtGetErrorName((infiniStatus_t)-1), "UNKNOWN_STATUS"))                                            \
    X(infinirtGetDeviceTypeName, type_count, OK_, BI_STR, bi_str(infinirtGetDeviceTypeName(TYPE_COUNT_), "unknown")) \
    X(infinirtGetDeviceTypeName, type_negative, OK_, BI_STR,                                                         \
      bi_str(infinirtGetDeviceTypeName(TYPE_NEG_), "unknown"))                                                       \
    X(infinirtGetDeviceProperties, null_out, NP_, 0, infinirtGetDeviceProperties(f->type, 0, NULL))                  \
    BI_DEVICE_ROWS(X, infinirtGetDeviceProperties, , &OUT_->props)                                                   \
    X(infinirtGetPluginCount, null_out, NP_, 0, infinirtGetPluginCount(NULL))                                        \
    X(infinirtGetPluginInfo, null_out, NP_, 0, infinirtGetPluginInfo(0, NULL))                                       \
    X(infinirtGetPluginInfo, index_negative, BP_, 0, infinirtGetPluginInfo(-1, &OUT_->info))                         \
    X(infinirtGetPluginInfo, index_count, BP_, 0, infinirtGetPluginInfo(f->nplugins, &OUT_->info))                   \
    X(infinirtGetPluginInfo, index_int_max, BP_, 0, infinirtGetPluginInfo(INT_MAX, &OUT_->info))                     \
    X(infinirtPeekPluginInfo, null_out, NP_, 0, infinirtPeekPluginInfo(0, NULL))                                     \
    X(infinirtPeekPluginInfo, index_negative, BP_, 0, infinirtPeekPluginInfo(-1, &OUT_->info))                       \
    X(infinirtPeekPluginInfo, index_count, BP_, 0, infinirtPeekPluginInfo(f->nplugins, &OUT_->info))                 \
    /* Out of range: the header says nothing; "unknown", as GetDeviceTypeName. */                                    \
    X(infinirtGetPluginStatusString, status_99, OK_, BI_STR,                                                         \
      bi_str(infinirtGetPluginStatusString((infinirtPluginStatus_t)99), "unknown"))                                  \
    X(infinirtGetPluginStatusString, status_negative, OK_, BI_STR,                                                   \
      bi_str(infinirtGetPluginStatusString((infinirtPluginStatus_t)-1), "unknown"))                                  \
    X(infinirtGetConfigPath, null_out, NP_, 0, infinirtGetConfigPath(NULL))                                          \
    X(infinirtGetConfigEntryCount, null_out, NP_, 0, infinirtGetConfigEntryCount(NULL))                              \
    X(infinirtGetConfigEntry, null_out, NP_, 0, infinirtGetConfigEntry(0, NULL))                                     \
    X(infinirtGetConfigEntry, index_negative, BP_, 0, infinirtGetConfigEntry(-1, &OUT_->entry))                      \
    X(infinirtGetConfigEntry, index_count, BP_, 0, infinirtGetConfigEntry(f->nentries, &OUT_->entry))                \
    X(infinirtGetConfigEntry, index_int_max, BP_, 0, infinirtGetConfigEntry(INT_MAX, &OUT_->entry))                  \
    X(infinirtGetVersion, all_null, OK_, 0, infinirtGetVersion(NULL, NULL, NULL)) /* documented: may be NULL */      \
    X(infinirtGetAllocatorStats, null_out, NP_, 0, infinirtGetAllocatorStats(f->type, 0, NULL))                      \
    BI_DEVICE_ROWS(X, infinirtGetAllocatorStats, , &OUT_->stats)                                                     \
    X(infinirtGetHostAllocatorStats, null_out, NP_, 0, infinirtGetHostAllocatorStats(f->type, NULL))                 \
    X(infinirtGetHostAllocatorStats, type_count, BP_, 0, infinirtGetHostAllocatorStats(TYPE_COUNT_, &OUT_->stats))   \
    X(infinirtGetHostAllocatorStats, type_negative, BP_, 0, infinirtGetHostAllocatorStats(TYPE_NEG_, &OUT_->stats))  \
    X(infinirtGetHostAllocatorStats, type_unserved, DTNS_, 0,                                                        \
      infinirtGetHostAllocatorStats(UNSERVED_, &OUT_->stats))                                                        \
    X(infinirtGetAllocatorSettings, null_out, NP_, 0, infinirtGetAllocatorSettings(NULL))                            \
    BI_DEVICE_ROWS(X, infinirtResetPeakStats, )                                                                      \
    BI_DEVICE_ROWS(X, infinirtTrimCache, )                                                                           \
    /* ------------------------------------------------------------- tracing */                                      \
    X(infinirtTraceFlush, no_args, OK_, 0, infinirtTraceFlush()) /* no arguments; no trace: nothing to do */

#endif /* INFINIRT_BAD_INPUT_ROWS_H_ */
