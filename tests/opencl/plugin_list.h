/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_list.h - every test of opencl_plugin_test (the OpenCL plugin called
 * as the loader would), one per line; registered as opencl.plugin.NAME.
 */
#ifndef INFINIRT_OPENCL_PLUGIN_LIST_H_
#define INFINIRT_OPENCL_PLUGIN_LIST_H_

#define OPENCL_PLUGIN_LIST(X) \
    X(entry)                  \
    X(init_default)           \
    X(no_platform)            \
    X(filter_gpu)             \
    X(filter_platform)        \
    X(filter_devices)         \
    X(filter_no_match_warns)  \
    X(bad_values)             \
    X(unknown_key)            \
    X(max_alloc)              \
    X(memory_buffer)          \
    X(kind_mismatch)          \
    X(memory_svm)             \
    X(memory_auto)            \
    X(foreign_buffer)         \
    X(foreign_svm)            \
    X(malloc_host)            \
    X(event_timing)           \
    X(host_func)              \
    X(wait_event)             \
    X(cross_device)           \
    X(device_sync)            \
    X(threads)                \
    X(shutdown_pending)       \
    X(native_handles)         \
    X(native_mem)             \
    X(native_kernel)          \
    X(stream_query)           \
    X(from_native)            \
    X(blocking_order)         \
    X(abi_fields)             \
    X(blocking_join)          \
    X(blocking_idle_busy)     \
    X(blocking_idle_calls)

#endif
