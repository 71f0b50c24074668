/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_faults.h - host-allocation failures on demand, for tests.
 *
 * The allocator and the loader's fences (loader/fence.c) grow a few arrays
 * with realloc where a failure takes a path of its own: a free that cannot
 * be queued behind its fence waits for it instead, a fence that cannot be
 * built synchronizes the device; a capture that cannot get its graph's
 * operation block (loader/capture.c) ends without a graph.  Nothing else
 * makes those allocations fail, so builds with INFINIRT_ALLOC_FAULTS (the
 * default where the tests are built) route them through
 * INFINIRT__HOST_REALLOC, which a test can make fail.  The counter is a
 * weak reference the test program defines: in a program that does not (or
 * a build without the macro), nothing fails.
 */
#ifndef INFINIRT_LOADER_ALLOC_FAULTS_H_
#define INFINIRT_LOADER_ALLOC_FAULTS_H_

#include <stdlib.h>

#ifdef INFINIRT_ALLOC_FAULTS
#include <stdatomic.h>
#include <stdbool.h>

/* Defined by a test program: n > 0 makes the nth INFINIRT__HOST_REALLOC
 * from now fail (once; the counter is then 0).  Weak, and of default
 * visibility, so the loader's shared library finds it in the program. */
extern __attribute__((weak, visibility("default"))) atomic_int infinirt__test_fail_host_alloc;

static inline bool infinirt__host_alloc_fails(void)
{
    if (&infinirt__test_fail_host_alloc == NULL)
        return false;
    int n = atomic_load_explicit(&infinirt__test_fail_host_alloc, memory_order_relaxed);
    while (n > 0)
        if (atomic_compare_exchange_weak(&infinirt__test_fail_host_alloc, &n, n - 1))
            return n == 1;
    return false;
}
#define INFINIRT__HOST_REALLOC(p, size) (infinirt__host_alloc_fails() ? NULL : realloc((p), (size)))
#else
#define INFINIRT__HOST_REALLOC(p, size) realloc((p), (size))
#endif
/* A malloc that counts as one of them. */
#define INFINIRT__HOST_MALLOC(size) INFINIRT__HOST_REALLOC(NULL, (size))

#endif /* INFINIRT_LOADER_ALLOC_FAULTS_H_ */
