/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cl_calls.c - the counting OpenCL entry points of cl_calls.h.  Each looks
 * the ICD loader's up once (dlsym RTLD_NEXT: the next definition after the
 * program's own) and forwards every call unchanged.
 */
#define _GNU_SOURCE
#include "cl_calls.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

enum { SLOTS = 2 };

static _Atomic(cl_command_queue) watched[SLOTS];
static atomic_long markers[SLOTS], barriers[SLOTS], flushes[SLOTS], finishes[SLOTS];

void cl_calls_watch(int slot, cl_command_queue q)
{
    atomic_store(&watched[slot], NULL);
    atomic_store(&markers[slot], 0);
    atomic_store(&barriers[slot], 0);
    atomic_store(&flushes[slot], 0);
    atomic_store(&finishes[slot], 0);
    atomic_store(&watched[slot], q);
}

cl_calls cl_calls_get(int slot)
{
    return (cl_calls){atomic_load(&markers[slot]), atomic_load(&barriers[slot]), atomic_load(&flushes[slot]),
                      atomic_load(&finishes[slot])};
}

static void count(cl_command_queue q, atomic_long *counter)
{
    for (int i = 0; i < SLOTS; i++)
        if (q != NULL && atomic_load(&watched[i]) == q)
            atomic_fetch_add(&counter[i], 1);
}

/* The next definition of `name`; a missing one ends the program, as every
 * call would otherwise fail in ways that look like the plugin's. */
static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);

    if (f == NULL) {
        fprintf(stderr, "cl_calls: no %s after the test program's: %s\n", name, dlerror());
        abort();
    }
    return f;
}

/* Racing first calls look the same function up: any of the stores wins. */
#define REAL(type, name)                                          \
    static _Atomic(type) real_;                                   \
    type f_ = atomic_load_explicit(&real_, memory_order_acquire); \
    if (f_ == NULL) {                                             \
        *(void **)&f_ = next(#name);                              \
        atomic_store_explicit(&real_, f_, memory_order_release);  \
    }

/* The build hides symbols by default; these must be seen by the plugin. */
#define EXPORTED __attribute__((visibility("default")))

typedef cl_int(CL_API_CALL *enqueue_fn)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
typedef cl_int(CL_API_CALL *queue_fn)(cl_command_queue);

EXPORTED cl_int CL_API_CALL clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint n, const cl_event *wait,
                                                        cl_event *event)
{
    REAL(enqueue_fn, clEnqueueMarkerWithWaitList)
    count(q, markers);
    return f_(q, n, wait, event);
}

EXPORTED cl_int CL_API_CALL clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint n, const cl_event *wait,
                                                         cl_event *event)
{
    REAL(enqueue_fn, clEnqueueBarrierWithWaitList)
    count(q, barriers);
    return f_(q, n, wait, event);
}

EXPORTED cl_int CL_API_CALL clFlush(cl_command_queue q)
{
    REAL(queue_fn, clFlush)
    count(q, flushes);
    return f_(q);
}

EXPORTED cl_int CL_API_CALL clFinish(cl_command_queue q)
{
    REAL(queue_fn, clFinish)
    count(q, finishes);
    return f_(q);
}
