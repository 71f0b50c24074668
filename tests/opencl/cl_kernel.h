/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cl_kernel.h - a real OpenCL kernel for the tests that run native work on
 * infinirt streams: built with clBuildProgram in the device's context and
 * given infinirt memory the way an application would, as an SVM pointer
 * (clSetKernelArgSVMPointer) or as a cl_mem and a byte offset (buffer mode),
 * both from the backend's mem_get_native / infinirtMemGetNativeHandle.
 *
 * The kernel, over n ints starting at the memory's address:
 *     p[i] = p[i] * a + b + i
 */
#ifndef CL_KERNEL_H_
#define CL_KERNEL_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <stddef.h>

typedef struct {
    cl_program program;
    cl_kernel kernel;
} tk_kernel;

/* Build the kernel for dev in ctx.  0, or -1 with the build log printed. */
int tk_build(cl_context ctx, cl_device_id dev, tk_kernel *k);
void tk_release(tk_kernel *k);

/* Queue the kernel on q over n ints at ptr, whose native handle is
 * (native, offset): native == ptr means an SVM pointer, anything else a
 * cl_mem.  The kernel starts after the wait list; *done (optional)
 * receives its event.  Returns the OpenCL error (CL_SUCCESS). */
cl_int tk_enqueue(tk_kernel *k, cl_command_queue q, void *ptr, void *native, size_t offset, size_t n, int a, int b,
                  cl_uint nwait, const cl_event *wait, cl_event *done);

/* What the kernel makes of v at index i. */
static inline int tk_expect(int v, size_t i, int a, int b)
{
    return (int)((unsigned)v * (unsigned)a + (unsigned)b + (unsigned)i);
}

#endif /* CL_KERNEL_H_ */
