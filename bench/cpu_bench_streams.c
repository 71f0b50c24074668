/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_bench_streams.c - infinirt-cpu-bench's rows for many live streams
 * (issue 34), each against a baseline taken in the same process:
 *
 *   destroy_1000, destroy_20000   StreamDestroy per stream, destroying (in
 *       the order they were made) 1000 or 20000 streams that each had a
 *       64 B MemcpyAsync + StreamSynchronize: the ratio says whether a
 *       destroy depends on how many streams live (goal <= 2x).
 *   rr_1, rr_1000   64 B MemcpyAsync + StreamSynchronize on one stream, and
 *       taking turns over 1000 streams (goal <= 1.3x).
 *
 * Times are the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), best
 * of the batches: on a machine shared with other work a thread that is not
 * running accrues none, where a wall clock would count every wait for a
 * core.  All of these calls run on the calling thread (a 64 B copy on an
 * idle stream runs there in both stream modes; a destroy waits for
 * nothing), so its CPU time is their whole cost.  The round-robin batches
 * alternate with the one-stream batches, so a slow phase of the machine
 * falls on both.  Only calls InfiniCore's header declares too.
 */
#define _GNU_SOURCE
#include "bench_util.h"
#include "cpu_bench_streams.h"

#include <stdint.h>
#include <string.h>

#define MUST(call) BENCH_MUST("cpu-bench", call)

#define RR_STREAMS 1000
#define RR_BATCHES 7

static double thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static char g_host[64];

/* StreamDestroy per stream, destroying n streams made (and used once) just
 * before. */
static double destroy_ns(int n, void *dev)
{
    infinirtStream_t *s = malloc((size_t)n * sizeof *s);
    if (s == NULL) {
        fprintf(stderr, "cpu-bench: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        MUST(infinirtStreamCreate(&s[i]));
        MUST(infinirtMemcpyAsync(dev, g_host, 64, INFINIRT_MEMCPY_H2D, s[i]));
        MUST(infinirtStreamSynchronize(s[i]));
    }
    double t0 = thread_ns();
    for (int i = 0; i < n; i++)
        MUST(infinirtStreamDestroy(s[i]));
    double per = (thread_ns() - t0) / n;
    free(s);
    return per;
}

/* `ops` copies + synchronizes, taking turns over the first `streams` of s;
 * CPU time per operation. */
static double copy_turns_ns(infinirtStream_t *s, int streams, long ops, void *dev)
{
    double t0 = thread_ns();
    for (long i = 0; i < ops; i++) {
        infinirtStream_t x = s[i % streams];
        MUST(infinirtMemcpyAsync(dev, g_host, 64, INFINIRT_MEMCPY_H2D, x));
        MUST(infinirtStreamSynchronize(x));
    }
    return (thread_ns() - t0) / (double)ops;
}

static double least(double a, double b)
{
    return a < b ? a : b;
}

/* --quick (scale > 1) runs fewer rounds and operations, never fewer
 * streams. */
void cpu_bench_stream_rows(const char *label, long scale)
{
    void *dev;
    MUST(infinirtMalloc(&dev, 256));
    memset(g_host, 3, sizeof g_host);

    int reps = scale > 1 ? 1 : 3;
    double d1k = 1e30, d20k = 1e30;
    for (int r = 0; r < reps; r++) {
        d1k = least(d1k, destroy_ns(1000, dev));
        d20k = least(d20k, destroy_ns(20000, dev));
    }
    printf("%s destroy_1000 %.1f\n%s destroy_20000 %.1f\n", label, d1k, label, d20k);

    infinirtStream_t s[RR_STREAMS];
    for (int i = 0; i < RR_STREAMS; i++)
        MUST(infinirtStreamCreate(&s[i]));
    long ops = 100000 / scale;
    copy_turns_ns(s, RR_STREAMS, ops / 10 + RR_STREAMS, dev); /* warm up: each stream used */
    double one = 1e30, many = 1e30;
    for (int b = 0; b < RR_BATCHES; b++) {
        one = least(one, copy_turns_ns(s, 1, ops, dev));
        many = least(many, copy_turns_ns(s, RR_STREAMS, ops, dev));
    }
    for (int i = 0; i < RR_STREAMS; i++)
        MUST(infinirtStreamDestroy(s[i]));
    MUST(infinirtFree(dev));
    printf("%s rr_1 %.1f\n%s rr_1000 %.1f\n", label, one, label, many);
    fflush(stdout);
}
