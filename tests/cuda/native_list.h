/* SPDX-License-Identifier: Apache-2.0 */
/*
 * native_list.h - every test of cuda_native_test (native_test.c), one per line; registered as
 * cuda.native.NAME.
 */
#ifndef INFINIRT_CUDA_NATIVE_LIST_H_
#define INFINIRT_CUDA_NATIVE_LIST_H_

#define CUDA_NATIVE_LIST(X) \
    X(handles)              \
    X(set_device)           \
    X(set_device_threads)   \
    X(wrap_native)          \
    X(native_capture)       \
    X(device_uuid)

#endif
