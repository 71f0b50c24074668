/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_errors.c - OpenCL error names, their infinirt statuses, and logging.
 *
 * The table carries literal codes rather than the CL_* macros so it compiles
 * against headers of any OpenCL version (the 2.x/3.0 codes are guarded by
 * CL_TARGET_OPENCL_VERSION in cl.h).
 */
#include "opencl_internal.h"

#include <stdarg.h>
#include <stdio.h>

/* X(code, NAME) */
#define OPENCL__CL_ERROR_MAP(X)                          \
    X(0, CL_SUCCESS)                                     \
    X(-1, CL_DEVICE_NOT_FOUND)                           \
    X(-2, CL_DEVICE_NOT_AVAILABLE)                       \
    X(-3, CL_COMPILER_NOT_AVAILABLE)                     \
    X(-4, CL_MEM_OBJECT_ALLOCATION_FAILURE)              \
    X(-5, CL_OUT_OF_RESOURCES)                           \
    X(-6, CL_OUT_OF_HOST_MEMORY)                         \
    X(-7, CL_PROFILING_INFO_NOT_AVAILABLE)               \
    X(-8, CL_MEM_COPY_OVERLAP)                           \
    X(-9, CL_IMAGE_FORMAT_MISMATCH)                      \
    X(-10, CL_IMAGE_FORMAT_NOT_SUPPORTED)                \
    X(-11, CL_BUILD_PROGRAM_FAILURE)                     \
    X(-12, CL_MAP_FAILURE)                               \
    X(-13, CL_MISALIGNED_SUB_BUFFER_OFFSET)              \
    X(-14, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) \
    X(-15, CL_COMPILE_PROGRAM_FAILURE)                   \
    X(-16, CL_LINKER_NOT_AVAILABLE)                      \
    X(-17, CL_LINK_PROGRAM_FAILURE)                      \
    X(-18, CL_DEVICE_PARTITION_FAILED)                   \
    X(-19, CL_KERNEL_ARG_INFO_NOT_AVAILABLE)             \
    X(-30, CL_INVALID_VALUE)                             \
    X(-31, CL_INVALID_DEVICE_TYPE)                       \
    X(-32, CL_INVALID_PLATFORM)                          \
    X(-33, CL_INVALID_DEVICE)                            \
    X(-34, CL_INVALID_CONTEXT)                           \
    X(-35, CL_INVALID_QUEUE_PROPERTIES)                  \
    X(-36, CL_INVALID_COMMAND_QUEUE)                     \
    X(-37, CL_INVALID_HOST_PTR)                          \
    X(-38, CL_INVALID_MEM_OBJECT)                        \
    X(-39, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)           \
    X(-40, CL_INVALID_IMAGE_SIZE)                        \
    X(-41, CL_INVALID_SAMPLER)                           \
    X(-42, CL_INVALID_BINARY)                            \
    X(-43, CL_INVALID_BUILD_OPTIONS)                     \
    X(-44, CL_INVALID_PROGRAM)                           \
    X(-45, CL_INVALID_PROGRAM_EXECUTABLE)                \
    X(-46, CL_INVALID_KERNEL_NAME)                       \
    X(-47, CL_INVALID_KERNEL_DEFINITION)                 \
    X(-48, CL_INVALID_KERNEL)                            \
    X(-49, CL_INVALID_ARG_INDEX)                         \
    X(-50, CL_INVALID_ARG_VALUE)                         \
    X(-51, CL_INVALID_ARG_SIZE)                          \
    X(-52, CL_INVALID_KERNEL_ARGS)                       \
    X(-53, CL_INVALID_WORK_DIMENSION)                    \
    X(-54, CL_INVALID_WORK_GROUP_SIZE)                   \
    X(-55, CL_INVALID_WORK_ITEM_SIZE)                    \
    X(-56, CL_INVALID_GLOBAL_OFFSET)                     \
    X(-57, CL_INVALID_EVENT_WAIT_LIST)                   \
    X(-58, CL_INVALID_EVENT)                             \
    X(-59, CL_INVALID_OPERATION)                         \
    X(-60, CL_INVALID_GL_OBJECT)                         \
    X(-61, CL_INVALID_BUFFER_SIZE)                       \
    X(-62, CL_INVALID_MIP_LEVEL)                         \
    X(-63, CL_INVALID_GLOBAL_WORK_SIZE)                  \
    X(-64, CL_INVALID_PROPERTY)                          \
    X(-65, CL_INVALID_IMAGE_DESCRIPTOR)                  \
    X(-66, CL_INVALID_COMPILER_OPTIONS)                  \
    X(-67, CL_INVALID_LINKER_OPTIONS)                    \
    X(-68, CL_INVALID_DEVICE_PARTITION_COUNT)            \
    X(-69, CL_INVALID_PIPE_SIZE)                         \
    X(-70, CL_INVALID_DEVICE_QUEUE)                      \
    X(-71, CL_INVALID_SPEC_ID)                           \
    X(-72, CL_MAX_SIZE_RESTRICTION_EXCEEDED)             \
    X(-1000, CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR)     \
    X(-1001, CL_PLATFORM_NOT_FOUND_KHR)                  \
    X(-1057, CL_DEVICE_PARTITION_FAILED_EXT)             \
    X(-1058, CL_INVALID_PARTITION_COUNT_EXT)             \
    X(-1059, CL_INVALID_PARTITION_NAME_EXT)

const char *opencl__cl_error_name(cl_int err)
{
    switch (err) {
#define OPENCL__ERR_CASE_(code, name) \
    case code:                        \
        return #name;
        OPENCL__CL_ERROR_MAP(OPENCL__ERR_CASE_)
#undef OPENCL__ERR_CASE_
    default:
        return "CL_UNKNOWN_ERROR";
    }
}

/* The infinirt status for an OpenCL error. */
static infiniStatus_t opencl__cl_status(cl_int err)
{
    switch (err) {
    case 0:
        return INFINI_STATUS_SUCCESS;
    case -1: /* CL_DEVICE_NOT_FOUND */
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    case -2: /* CL_DEVICE_NOT_AVAILABLE */
        return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
    case -4: /* CL_MEM_OBJECT_ALLOCATION_FAILURE */
    case -6: /* CL_OUT_OF_HOST_MEMORY */
        return INFINI_STATUS_OUT_OF_MEMORY;
    case -8:  /* CL_MEM_COPY_OVERLAP */
    case -30: /* CL_INVALID_VALUE */
    case -61: /* CL_INVALID_BUFFER_SIZE */
        return INFINI_STATUS_BAD_PARAM;
    default:
        return INFINI_STATUS_INTERNAL_ERROR;
    }
}

void opencl__log(int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (opencl__g.log == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    opencl__g.log(level, OPENCL__NAME, "%s", line);
}

infiniStatus_t opencl__cl_fail(const char *call, cl_int err)
{
    opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "%s failed: %s (%d)", call, opencl__cl_error_name(err), (int)err);
    return opencl__cl_status(err);
}

infiniStatus_t opencl__cl_fail_alloc(const char *call, cl_int err)
{
    opencl__log(INFINIRT_PLUGIN_LOG_ERROR, "%s failed: %s (%d)", call, opencl__cl_error_name(err), (int)err);
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY)
        return INFINI_STATUS_OUT_OF_MEMORY;
    return opencl__cl_status(err);
}
