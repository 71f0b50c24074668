/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_list.h - every test of cuda_plugin_test (the CUDA plugin loaded
 * straight from its file; plugin_test.c, plugin_gpu_streams.c), one per line:
 * CUDA_PLUGIN_LIST runs anywhere (cuda.plugin.NAME, label cuda),
 * CUDA_PLUGIN_GPU_LIST needs an NVIDIA GPU (cuda.plugin.NAME, label gpu).
 */
#ifndef INFINIRT_CUDA_PLUGIN_LIST_H_
#define INFINIRT_CUDA_PLUGIN_LIST_H_

#define CUDA_PLUGIN_LIST(X) \
    X(handshake)            \
    X(init)

#define CUDA_PLUGIN_GPU_LIST(X) \
    X(gpu_device_info)          \
    X(gpu_malloc_free)          \
    X(gpu_memcpy)               \
    X(gpu_memset)               \
    X(gpu_events)               \
    X(gpu_host_func)            \
    X(gpu_stream_wait_event)    \
    X(gpu_pinned_host)          \
    X(gpu_threads)              \
    X(gpu_blocking_streams)     \
    X(gpu_current_context)

#endif
