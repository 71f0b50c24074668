/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cl_calls.h - OpenCL calls counted per command queue, whoever makes them:
 * the test program defines clEnqueueMarkerWithWaitList,
 * clEnqueueBarrierWithWaitList, clFlush and clFinish and exports them
 * (cl_calls.list), so the plugin, dlopened after, binds to these; each
 * counts when its queue is watched and calls the ICD loader's.  This sees
 * what the plugin asks of OpenCL without a hook in the plugin, on any
 * OpenCL implementation.
 */
#ifndef INFINIRT_TESTS_OPENCL_CL_CALLS_H_
#define INFINIRT_TESTS_OPENCL_CL_CALLS_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

typedef struct {
    long markers, barriers, flushes, finishes;
} cl_calls;

/* Count the calls on q from now on, in slot 0 or 1 (NULL: stop); zeroes
 * the slot. */
void cl_calls_watch(int slot, cl_command_queue q);
/* The slot's counts so far. */
cl_calls cl_calls_get(int slot);

#endif
