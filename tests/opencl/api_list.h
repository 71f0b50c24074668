/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_list.h - every test of opencl_api_test (OpenCL interop through the
 * public API), one per line; registered as opencl.api.MODE.NAME for each
 * memory mode.
 */
#ifndef INFINIRT_OPENCL_API_LIST_H_
#define INFINIRT_OPENCL_API_LIST_H_

#define OPENCL_API_LIST(X) \
    X(device_native)       \
    X(kernel)              \
    X(alloc_native)        \
    X(from_native)         \
    X(blocking)

#endif
