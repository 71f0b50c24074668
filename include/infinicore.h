/* SPDX-License-Identifier: Apache-2.0 */
/*
 * infinicore.h - status codes, device types and data types shared by every
 * infinirt header.
 *
 * A drop-in for InfiniCore's infinicore.h: the same include guard, the
 * same `__export` and `__INFINI_C` macros, every name InfiniCore defines with
 * the same value, so code written against InfiniCore compiles unchanged and
 * either copy may be the one a translation unit sees first.
 *
 * InfiniCore's: __export, __INFINI_C, infiniStatus_t values 0-13,
 * infiniDevice_t CPU..ALI and INFINI_DEVICE_TYPE_COUNT (11), infiniDtype_t.
 * Ours: INFINIRT_EXPORT, INFINIRT_API, INFINI_STATUS_MAP, the statuses
 * OUT_OF_MEMORY, NOT_READY and INVALID_STATE, and INFINI_DEVICE_OPENCL,
 * which lives far above InfiniCore's range (where appending device types
 * will not reach) so that arrays of INFINI_DEVICE_TYPE_COUNT entries and
 * InfiniCore's default-device choice (the first non-CPU type with devices,
 * searched over 0 .. INFINI_DEVICE_TYPE_COUNT-1) never see it.  When
 * InfiniCore's own copy of this header was included first, infinirt.h
 * supplies our names (as constants of the same values).
 */
#ifndef __INFINICORE_API_H__
#define __INFINICORE_API_H__
/* Tells infinirt.h that this copy, with our additions, is the one in use. */
#define INFINIRT_INFINICORE_H_ 1

#if defined(_WIN32)
#define __export __declspec(dllexport)
#elif defined(__GNUC__)
#define __export __attribute__((visibility("default")))
#else
#define __export
#endif

#ifdef __cplusplus
#define __INFINI_C extern "C"
#include <cstddef>
#include <cstdint>
#else
#define __INFINI_C
#include <stddef.h>
#include <stdint.h>
#endif

/* Export/linkage decoration for every public declaration. */
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

/*
 * Status of every infinirt call.  X-macro: the enum and infinirtGetErrorString
 * are generated from this one list so the two never drift.
 *   X(NAME, value, "description")
 */
#define INFINI_STATUS_MAP(X)                                                          \
    X(SUCCESS, 0, "success")                                                          \
    X(INTERNAL_ERROR, 1, "internal error")                                            \
    X(NOT_IMPLEMENTED, 2, "operation not supported by this device's backend")         \
    X(BAD_PARAM, 3, "invalid argument (unknown handle or pointer, bad size or kind)") \
    X(NULL_POINTER, 4, "a required pointer argument is NULL")                         \
    X(DEVICE_TYPE_NOT_SUPPORTED, 5, "no loaded backend serves this device type")      \
    X(DEVICE_NOT_FOUND, 6, "no device with this id")                                  \
    X(DEVICE_NOT_INITIALIZED, 7, "device or backend failed to initialise")            \
    X(DEVICE_ARCHITECTURE_NOT_SUPPORTED, 8, "device architecture not supported")      \
    X(BAD_TENSOR_DTYPE, 10, "bad tensor data type")                                   \
    X(BAD_TENSOR_SHAPE, 11, "bad tensor shape")                                       \
    X(BAD_TENSOR_STRIDES, 12, "bad tensor strides")                                   \
    X(INSUFFICIENT_WORKSPACE, 13, "insufficient workspace")                           \
    X(OUT_OF_MEMORY, 14, "out of memory")                                             \
    X(NOT_READY, 15, "operation not yet complete")                                    \
    X(INVALID_STATE, 16, "object is not in a state that allows this operation")

typedef enum {
#define INFINI_STATUS_ENUM_(name, value, text) INFINI_STATUS_##name = value,
    INFINI_STATUS_MAP(INFINI_STATUS_ENUM_)
#undef INFINI_STATUS_ENUM_
} infiniStatus_t;

/* Device types.  CPU..ALI and the count are InfiniCore's; OPENCL is ours
 * (see the top of this file). */
typedef enum {
    INFINI_DEVICE_CPU = 0,
    INFINI_DEVICE_NVIDIA = 1,
    INFINI_DEVICE_CAMBRICON = 2,
    INFINI_DEVICE_ASCEND = 3,
    INFINI_DEVICE_METAX = 4,
    INFINI_DEVICE_MOORE = 5,
    INFINI_DEVICE_ILUVATAR = 6,
    INFINI_DEVICE_KUNLUN = 7,
    INFINI_DEVICE_HYGON = 8,
    INFINI_DEVICE_QY = 9,
    INFINI_DEVICE_ALI = 10,
    INFINI_DEVICE_TYPE_COUNT,
    INFINI_DEVICE_OPENCL = 0x1000
} infiniDevice_t;

/* Element types, as InfiniCore defines them (used by operator libraries). */
typedef enum {
    INFINI_DTYPE_INVALID = 0,
    INFINI_DTYPE_BYTE = 1,
    INFINI_DTYPE_BOOL = 2,
    INFINI_DTYPE_I8 = 3,
    INFINI_DTYPE_I16 = 4,
    INFINI_DTYPE_I32 = 5,
    INFINI_DTYPE_I64 = 6,
    INFINI_DTYPE_U8 = 7,
    INFINI_DTYPE_U16 = 8,
    INFINI_DTYPE_U32 = 9,
    INFINI_DTYPE_U64 = 10,
    INFINI_DTYPE_F8 = 11,
    INFINI_DTYPE_F16 = 12,
    INFINI_DTYPE_F32 = 13,
    INFINI_DTYPE_F64 = 14,
    INFINI_DTYPE_C16 = 15,
    INFINI_DTYPE_C32 = 16,
    INFINI_DTYPE_C64 = 17,
    INFINI_DTYPE_C128 = 18,
    INFINI_DTYPE_BF16 = 19,
} infiniDtype_t;

#endif /* __INFINICORE_API_H__ */
