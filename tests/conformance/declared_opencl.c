/* SPDX-License-Identifier: Apache-2.0 */
/*
 * declared_opencl.c - what the OpenCL plugin declares unsupported to the
 * conformance suite (common.h, "declared unsupported"): nothing, except
 * foreign memory when its config says memory = buffer.
 */
#include "common.h"

/* OpenCL with memory = buffer hands out cl_mem buffers, not pointers into
 * the device's SVM: no memory made outside infinirt can stand for them. */
static unsigned opencl_by_config(void)
{
    void *d = NULL, *native = NULL;
    unsigned bits = 0;
    if (infinirtMalloc(&d, 256) != INFINI_STATUS_SUCCESS)
        return 0;
    if (infinirtMemGetNativeHandle(d, &native, NULL) == INFINI_STATUS_SUCCESS && native != d)
        bits |= TC_BIT(TC_FOREIGN_MEMORY);
    infinirtFree(d);
    return bits;
}

const tc_declaration tc_declared_opencl = {"opencl", 0, opencl_by_config};
