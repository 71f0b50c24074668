/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demo - the typical infinirt flow: pick a device, make a stream, queue
 * asynchronous copies, time them with events, check the data, free.
 *
 * What is timed: ROUNDS rounds of H2D + D2D + D2H of 64 MiB each, after one
 * untimed round.  The untimed round makes every page of every buffer
 * resident; timing it would measure first-touch page faults (a few hundred
 * MB/s) rather than the copies.
 *
 *   infinirt-demo [TYPE[:ID]]   e.g. infinirt-demo opencl:0; default: the
 *                               first non-CPU device present, else cpu:0
 *   infinirt-demo --help | --version
 */
#include "infinirt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                 \
    do {                                                                            \
        infiniStatus_t st_ = (call);                                                \
        if (st_ != INFINI_STATUS_SUCCESS) {                                         \
            fprintf(stderr, "%s failed: %s\n", #call, infinirtGetErrorString(st_)); \
            return 1;                                                               \
        }                                                                           \
    } while (0)

static int pick(const char *arg, infiniDevice_t *type, int *id)
{
    /* Every type the library knows, InfiniCore's and ours. */
    infiniDevice_t types[32];
    int ntypes = 0;
    if (infinirtGetDeviceTypes(types, 32, &ntypes) != INFINI_STATUS_SUCCESS)
        return -1;
    if (ntypes > 32)
        ntypes = 32;
    *id = 0;
    if (arg == NULL) {
        *type = INFINI_DEVICE_CPU;
        for (int i = 0; i < ntypes; i++) {
            int n = 0;
            if (types[i] != INFINI_DEVICE_CPU && infinirtGetDeviceCount(types[i], &n) == INFINI_STATUS_SUCCESS &&
                n > 0) {
                *type = types[i];
                break;
            }
        }
        return 0;
    }
    for (int i = 0; i < ntypes; i++) {
        const char *name = infinirtGetDeviceTypeName(types[i]);
        size_t n = strlen(name);
        if (strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == ':')) {
            *type = types[i];
            *id = arg[n] == ':' ? atoi(arg + n + 1) : 0;
            return 0;
        }
    }
    return -1;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: infinirt-demo [TYPE[:ID]]\n"
                "       infinirt-demo --help | --version\n"
                "Times asynchronous H2D, D2D and D2H copies of 64 MiB on one device, with\n"
                "events, and checks the data.  TYPE[:ID] as in infinirt-info -l (e.g. cpu:1,\n"
                "opencl); default: the first non-CPU device present, else cpu:0.\n");
}

int main(int argc, char **argv)
{
    infiniDevice_t type;
    int id;
    const char *arg = argc > 1 ? argv[1] : NULL;
    if (arg != NULL && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (arg != NULL && (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0)) {
        int major = 0, minor = 0, patch = 0;
        infinirtGetVersion(&major, &minor, &patch);
        printf("infinirt-demo infinirt %d.%d.%d\n", major, minor, patch);
        return 0;
    }
    if (argc > 2 || pick(arg, &type, &id) != 0) {
        if (argc > 2) {
            fprintf(stderr, "infinirt-demo: one device at most ('%s' is one too many)\n", argv[2]);
        } else if (arg == NULL) {
            fprintf(stderr, "infinirt-demo: the device types cannot be listed: infinirt did not start\n");
            return 1;
        } else if (arg[0] == '-') {
            fprintf(stderr, "infinirt-demo: unknown option '%s'\n", arg);
        } else {
            fprintf(stderr, "infinirt-demo: '%s' is not a device type the library knows (TYPE[:ID])\n", arg);
        }
        usage(stderr);
        return 2;
    }
    CHECK(infinirtSetDevice(type, id));
    infinirtDeviceProperties_t props;
    CHECK(infinirtGetDeviceProperties(type, id, &props));
    printf("device %s:%d: %s\n", infinirtGetDeviceTypeName(type), id, props.name);

    const size_t n = 64u << 20;
    unsigned char *src, *dst;
    void *dev_a, *dev_b;
    CHECK(infinirtMallocHost((void **)&src, n)); /* page-locked: fast copies */
    CHECK(infinirtMallocHost((void **)&dst, n));
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * 31 + 7);
    memset(dst, 0, n);

    infinirtStream_t stream;
    infinirtEvent_t start, stop;
    CHECK(infinirtStreamCreate(&stream));
    CHECK(infinirtEventCreate(&start));
    CHECK(infinirtEventCreate(&stop));
    CHECK(infinirtMallocAsync(&dev_a, n, stream));
    CHECK(infinirtMallocAsync(&dev_b, n, stream));

    /* Everything below is queued; the host goes on at once.  Round 0 is
     * not timed: it touches every page of the device buffers first. */
    enum { ROUNDS = 5 };
    for (int r = 0; r <= ROUNDS; r++) {
        if (r == 1)
            CHECK(infinirtEventRecord(start, stream));
        CHECK(infinirtMemcpyAsync(dev_a, src, n, INFINIRT_MEMCPY_H2D, stream));
        CHECK(infinirtMemcpyAsync(dev_b, dev_a, n, INFINIRT_MEMCPY_D2D, stream));
        CHECK(infinirtMemcpyAsync(dst, dev_b, n, INFINIRT_MEMCPY_D2H, stream));
    }
    CHECK(infinirtEventRecord(stop, stream));
    CHECK(infinirtFreeAsync(dev_a, stream));
    CHECK(infinirtFreeAsync(dev_b, stream));
    CHECK(infinirtEventSynchronize(stop));

    float ms = 0;
    CHECK(infinirtEventElapsedTime(&ms, start, stop));
    int ok = memcmp(src, dst, n) == 0;
    double per_round = ms / ROUNDS;
    printf("timed: %d warm rounds (after 1 untimed round that touches every page) of H2D + D2D + D2H, %zu MiB "
           "each\n",
           ROUNDS, n >> 20);
    printf("  %.3f ms per round, %.2f GB/s per copy; data %s\n", per_round,
           per_round > 0 ? 3.0 * (double)n / (per_round * 1e6) : 0.0, ok ? "correct" : "WRONG");

    CHECK(infinirtStreamDestroy(stream));
    CHECK(infinirtEventDestroy(start));
    CHECK(infinirtEventDestroy(stop));
    CHECK(infinirtFreeHost(src));
    CHECK(infinirtFreeHost(dst));
    return ok ? 0 : 1;
}
