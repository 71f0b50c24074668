/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_bench.c - the cost of single API calls, through whichever libinfinirt
 * the dynamic linker finds.  Only calls InfiniCore's header also declares
 * are used, so the same binary runs against this project's library, an
 * older build of it, or InfiniCore's own runtime (bench/compare.sh swaps
 * them with LD_LIBRARY_PATH and prints the ratios).
 *
 *   infinirt-api-bench CASE [calls]
 *
 * CASE: event_query   EventQuery of a completed event
 *       stream_sync   StreamSynchronize of an idle stream
 *       memcpy_h2d    synchronous 64 B Memcpy host -> device, nothing queued
 *       memcpy_d2h    the same, device -> host
 *       memcpy_async  MemcpyAsync of 64 B host -> device on a stream
 *       malloc_free   Malloc of 64 B, then its Free
 *       event_record  EventRecord on an idle stream
 * Prints "CASE ns_per_call": the best of 7 batches (the least disturbed by
 * other load on the machine).
 */
#define _GNU_SOURCE
#include "bench_util.h"
#include "infinirt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 7

#define MUST(call) BENCH_MUST("api-bench", call)

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: %s event_query|stream_sync|memcpy_h2d|memcpy_d2h|memcpy_async|malloc_free|event_record "
                "[calls]\n",
                argv[0]);
        return argc < 2 ? 2 : 0;
    }
    const char *which = argv[1];
    long calls = argc > 2 ? atol(argv[2]) : 1000000;
    if (calls <= 0)
        calls = 1000000;
    MUST(infinirtInit());
    MUST(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    infinirtStream_t s;
    infinirtEvent_t e;
    MUST(infinirtStreamCreate(&s));
    MUST(infinirtEventCreate(&e));
    MUST(infinirtEventRecord(e, s));
    MUST(infinirtStreamSynchronize(s));
    void *d = NULL;
    MUST(infinirtMalloc(&d, 64));
    unsigned char host[64];
    memset(host, 1, sizeof host);
    infinirtEventStatus_t es;
    double best = 0;
    int kind = strcmp(which, "event_query") == 0    ? 0
               : strcmp(which, "stream_sync") == 0  ? 1
               : strcmp(which, "memcpy_h2d") == 0   ? 2
               : strcmp(which, "memcpy_d2h") == 0   ? 3
               : strcmp(which, "memcpy_async") == 0 ? 4
               : strcmp(which, "malloc_free") == 0  ? 5
               : strcmp(which, "event_record") == 0 ? 6
                                                    : -1;
    if (kind < 0) {
        fprintf(stderr, "api-bench: unknown case '%s'\n", which);
        return 2;
    }
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (long i = 0; i < calls; i++) {
            infiniStatus_t st;
            switch (kind) {
            case 0:
                st = infinirtEventQuery(e, &es);
                break;
            case 1:
                st = infinirtStreamSynchronize(s);
                break;
            case 2:
                st = infinirtMemcpy(d, host, 64, INFINIRT_MEMCPY_H2D);
                break;
            case 3:
                st = infinirtMemcpy(host, d, 64, INFINIRT_MEMCPY_D2H);
                break;
            case 4:
                st = infinirtMemcpyAsync(d, host, 64, INFINIRT_MEMCPY_H2D, s);
                break;
            case 5: {
                void *p = NULL;
                st = infinirtMalloc(&p, 64);
                if (st == INFINI_STATUS_SUCCESS)
                    st = infinirtFree(p);
                break;
            }
            default:
                st = infinirtEventRecord(e, s);
                break;
            }
            if (st != INFINI_STATUS_SUCCESS) {
                fprintf(stderr, "api-bench: call %ld of %s failed with status %d\n", i, which, (int)st);
                return 1;
            }
        }
        if (kind >= 4)
            MUST(infinirtStreamSynchronize(s)); /* the work queued (an async plugin), done */
        double ns = (now_ns() - t0) / (double)calls;
        if (b == 0 || ns < best)
            best = ns;
    }
    printf("%s %.2f\n", which, best);
    MUST(infinirtFree(d));
    MUST(infinirtEventDestroy(e));
    MUST(infinirtStreamDestroy(s));
    return 0;
}
