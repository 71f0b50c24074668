/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_util.h - the clock, the failure check and the qsort order of
 * doubles the benchmark programs share.  Only calls InfiniCore's header
 * also declares, so a program using it still runs against InfiniCore's own
 * runtime (compare.sh).
 */
#ifndef INFINIRT_BENCH_UTIL_H_
#define INFINIRT_BENCH_UTIL_H_

#include "infinirt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Monotonic time in nanoseconds. */
static inline double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* qsort's comparison for an ascending array of doubles. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Run an infinirt call; on failure print which (program `prog`, line,
 * status) and exit 1: a benchmark never goes on with a failed step. */
#define BENCH_MUST(prog, call)                                                                             \
    do {                                                                                                   \
        infiniStatus_t st_ = (call);                                                                       \
        if (st_ != INFINI_STATUS_SUCCESS) {                                                                \
            fprintf(stderr, "%s: line %d: %s failed with status %d\n", (prog), __LINE__, #call, (int)st_); \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

#endif
