/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_bench.h - what the parts of the allocator benchmark share: timing,
 * the host-memory backend, and each part's entry.
 *
 *   alloc_bench.c          timing, backend, 1. pair latency, main
 *   alloc_bench_trace.c    2. random workload, 3. fragmentation
 *   alloc_bench_threads.c  4. two threads (the pool, and the public API)
 */
#ifndef INFINIRT_ALLOC_BENCH_H_
#define INFINIRT_ALLOC_BENCH_H_

#include "alloc.h"
#include "bench_util.h"

#include <stddef.h>
#include <stdint.h>

#define MiB ((size_t)1 << 20)

extern int g_quick; /* --quick: fewer iterations and runs */

double now_s(void);

/* Raw memory from malloc, no fences (nothing is ever in flight). */
infinirt__pool_backend host_backend(void);
infinirt__pool *new_pool(infinirt__pool_backend *be, int enabled);

/* 2. and 3. (alloc_bench_trace.c).  k_ns: the trace lengths; --cell sets
 * g_cell_n and g_cell_max to time one cell only. */
extern const size_t k_ns[3];
extern size_t g_cell_n, g_cell_max;
void bench_random(void);
void bench_frag(size_t n);

/* 4. (alloc_bench_threads.c); the public-API part needs INFINIRT_CONFIG. */
void bench_threads(void);
#ifndef ALLOC_BENCH_NO_API
void bench_api_threads(void);
#endif

#endif /* INFINIRT_ALLOC_BENCH_H_ */
