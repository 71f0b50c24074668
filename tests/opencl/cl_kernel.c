/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cl_kernel.c - the tests' OpenCL kernel (see cl_kernel.h).
 */
#include "cl_kernel.h"

#include <stdio.h>
#include <stdlib.h>

/* The offset is in bytes and the pointer a char pointer first, so a
 * buffer-mode offset that is not a multiple of 4 would still address the
 * right bytes (the tests keep it aligned; OpenCL 1.2 buffers need it). */
static const char source[] = "kernel void axpb(global int *base, ulong offset, int a, int b)\n"
                             "{\n"
                             "    global int *p = (global int *)((global char *)base + offset);\n"
                             "    size_t i = get_global_id(0);\n"
                             "    p[i] = (int)((uint)p[i] * (uint)a + (uint)b + (uint)i);\n"
                             "}\n";

int tk_build(cl_context ctx, cl_device_id dev, tk_kernel *k)
{
    const char *src = source;
    cl_int err = CL_SUCCESS;

    k->kernel = NULL;
    k->program = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (k->program == NULL) {
        fprintf(stderr, "clCreateProgramWithSource: %d\n", (int)err);
        return -1;
    }
    err = clBuildProgram(k->program, 1, &dev, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(k->program, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "clBuildProgram: %d\n%s\n", (int)err, log);
        clReleaseProgram(k->program);
        k->program = NULL;
        return -1;
    }
    k->kernel = clCreateKernel(k->program, "axpb", &err);
    if (k->kernel == NULL) {
        fprintf(stderr, "clCreateKernel: %d\n", (int)err);
        clReleaseProgram(k->program);
        k->program = NULL;
        return -1;
    }
    return 0;
}

void tk_release(tk_kernel *k)
{
    if (k->kernel != NULL)
        clReleaseKernel(k->kernel);
    if (k->program != NULL)
        clReleaseProgram(k->program);
    k->kernel = NULL;
    k->program = NULL;
}

cl_int tk_enqueue(tk_kernel *k, cl_command_queue q, void *ptr, void *native, size_t offset, size_t n, int a, int b,
                  cl_uint nwait, const cl_event *wait, cl_event *done)
{
    cl_ulong off = offset;
    size_t global = n;
    cl_int err;

    if (native == ptr) {
        /* SVM: the (interior) address itself. */
        off = 0;
        err = clSetKernelArgSVMPointer(k->kernel, 0, ptr);
    } else {
        cl_mem mem = native;
        err = clSetKernelArg(k->kernel, 0, sizeof mem, &mem);
    }
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k->kernel, 1, sizeof off, &off);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k->kernel, 2, sizeof a, &a);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k->kernel, 3, sizeof b, &b);
    if (err != CL_SUCCESS)
        return err;
    err = clEnqueueNDRangeKernel(q, k->kernel, 1, NULL, &global, NULL, nwait, wait, done);
    if (err == CL_SUCCESS)
        clFlush(q);
    return err;
}
