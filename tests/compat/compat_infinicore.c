/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compat_infinicore.c - a program written for InfiniCore's infinirt.h, using
 * only the names InfiniCore defines: count devices, set one, allocate, copy
 * in every kind, free.  It must compile against our headers unchanged and
 * pass.  It targets the first non-CPU device if any, else CPU 0 - the way
 * InfiniCore picks its default device.
 *
 * InfiniCore's header has INFINI_DEVICE_TYPE_COUNT = 11: the count array is
 * allocated with exactly that many ints (on the heap, where ASan sees a
 * write past it), as a binary built against InfiniCore's header would.
 */
#include <infinirt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_RT(call)                                                                     \
    do {                                                                                   \
        infiniStatus_t s_ = (call);                                                        \
        if (s_ != INFINI_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)s_); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void)
{
    CHECK_RT(infinirtInit());
    enum { INFINICORE_TYPE_COUNT = 11 };
    if (INFINI_DEVICE_TYPE_COUNT != INFINICORE_TYPE_COUNT)
        return 1;
    int *counts = malloc(INFINICORE_TYPE_COUNT * sizeof *counts);
    if (counts == NULL)
        return 1;
    CHECK_RT(infinirtGetAllDeviceCount(counts));
    infiniDevice_t dev = INFINI_DEVICE_CPU;
    for (int t = 1; t < INFINICORE_TYPE_COUNT; t++)
        if (counts[t] > 0 && dev == INFINI_DEVICE_CPU)
            dev = (infiniDevice_t)t;
    free(counts);
    int n = 0;
    CHECK_RT(infinirtGetDeviceCount(dev, &n));
    if (n < 1) {
        fprintf(stderr, "no device\n");
        return 1;
    }
    CHECK_RT(infinirtSetDevice(dev, 0));
    infiniDevice_t got;
    int id;
    CHECK_RT(infinirtGetDevice(&got, &id));
    if (got != dev || id != 0)
        return 1;

    enum { N = 1 << 20 };
    unsigned char *h1 = malloc(N), *h2 = malloc(N), *h3 = malloc(N);
    for (int i = 0; i < N; i++)
        h1[i] = (unsigned char)(i * 7 + 3);
    void *d1, *d2;
    CHECK_RT(infinirtMalloc(&d1, N));
    CHECK_RT(infinirtMalloc(&d2, N));
    CHECK_RT(infinirtMemcpy(d1, h1, N, INFINIRT_MEMCPY_H2D));
    CHECK_RT(infinirtMemcpy(d2, d1, N, INFINIRT_MEMCPY_D2D));
    CHECK_RT(infinirtMemcpy(h2, d2, N, INFINIRT_MEMCPY_D2H));
    CHECK_RT(infinirtMemcpy(h3, h2, N, INFINIRT_MEMCPY_H2H));
    infinirtStream_t s;
    infinirtEvent_t e;
    CHECK_RT(infinirtStreamCreate(&s));
    CHECK_RT(infinirtEventCreate(&e));
    CHECK_RT(infinirtMemcpyAsync(d2, h1, N, INFINIRT_MEMCPY_H2D, s));
    CHECK_RT(infinirtEventRecord(e, s));
    CHECK_RT(infinirtEventSynchronize(e));
    infinirtEventStatus_t st;
    CHECK_RT(infinirtEventQuery(e, &st));
    CHECK_RT(infinirtStreamSynchronize(s));
    CHECK_RT(infinirtFree(d1));
    CHECK_RT(infinirtFree(d2));
    CHECK_RT(infinirtEventDestroy(e));
    CHECK_RT(infinirtStreamDestroy(s));
    int ok = memcmp(h1, h3, N) == 0 && st == INFINIRT_EVENT_COMPLETE;
    free(h1);
    free(h2);
    free(h3);
    printf("compat: %s on %s:%d\n", ok ? "ok" : "MISMATCH", infinirtGetDeviceTypeName(dev), id);
    return ok ? 0 : 1;
}
