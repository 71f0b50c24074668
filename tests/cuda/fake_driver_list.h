/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_driver_list.h - every test of cuda_fake_driver_test (fake_driver_*.c), one per line; registered as
 * cuda.fake.NAME.
 */
#ifndef INFINIRT_CUDA_FAKE_DRIVER_LIST_H_
#define INFINIRT_CUDA_FAKE_DRIVER_LIST_H_

#define CUDA_FAKE_DRIVER_LIST(X)    \
    X(missing_library)              \
    X(no_device)                    \
    X(zero_devices)                 \
    X(driver_too_old)               \
    X(init_failure)                 \
    X(missing_symbol)               \
    X(toolkit_stub)                 \
    X(driver_symbols)               \
    X(config)                       \
    X(devices_subset)               \
    X(device_uuid)                  \
    X(lazy_context)                 \
    X(context_switch)               \
    X(streams)                      \
    X(events)                       \
    X(elapsed_old_symbol)           \
    X(memory)                       \
    X(pinned_host_device)           \
    X(mem_info_nvml)                \
    X(mem_info_no_nvml)             \
    X(peer_access)                  \
    X(peer_none)                    \
    X(errors)                       \
    X(error_states)                 \
    X(native_handles)               \
    X(blocking_streams)             \
    X(current_context)              \
    X(pointer_device)               \
    X(wrap_native)                  \
    X(strict_pageable_copy)         \
    X(strict_host_functions)        \
    X(strict_ctx_stack)             \
    X(strict_primary_reset)         \
    X(strict_stream_destroy)        \
    X(strict_sticky)                \
    X(strict_deinit)                \
    X(strict_plugin_host_fn)        \
    X(strict_plugin_stream_destroy) \
    X(strict_plugin_sticky)         \
    X(strict_plugin_reset)          \
    X(abi_fields)

#endif
