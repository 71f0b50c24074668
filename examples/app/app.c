/* SPDX-License-Identifier: Apache-2.0 */
/*
 * app.c - an application linked against an installed infinirt.  It runs the
 * typical flow on every device the loader offers: allocate, copy there and
 * back on a stream, time it with events, check the bytes, free.
 */
#include <infinirt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run_on(infiniDevice_t type, int id)
{
    enum { N = 4 << 20 };
    infinirtDeviceProperties_t p;
    unsigned char *a = malloc(N), *b = calloc(1, N);
    void *d = NULL;
    infinirtStream_t s = NULL;
    infinirtEvent_t e0 = NULL, e1 = NULL;
    float ms = 0;
    int ok = 0;
    if (a == NULL || b == NULL)
        goto out;
    for (int i = 0; i < N; i++)
        a[i] = (unsigned char)(i * 13 + id);
    if (infinirtSetDevice(type, id) || infinirtGetDeviceProperties(type, id, &p) || infinirtStreamCreate(&s) ||
        infinirtEventCreate(&e0) || infinirtEventCreate(&e1) || infinirtMallocAsync(&d, N, s))
        goto out;
    if (infinirtEventRecord(e0, s) || infinirtMemcpyAsync(d, a, N, INFINIRT_MEMCPY_H2D, s) ||
        infinirtMemcpyAsync(b, d, N, INFINIRT_MEMCPY_D2H, s) || infinirtEventRecord(e1, s) ||
        infinirtStreamSynchronize(s) || infinirtEventElapsedTime(&ms, e0, e1))
        goto out;
    ok = memcmp(a, b, N) == 0;
    printf("%s:%d %-40s 2 x %d MiB in %.3f ms: %s\n", infinirtGetDeviceTypeName(type), id, p.name, N >> 20, ms,
           ok ? "ok" : "DATA MISMATCH");
out:
    if (!ok)
        printf("%s:%d failed\n", infinirtGetDeviceTypeName(type), id);
    if (d)
        infinirtFreeAsync(d, s);
    if (s)
        infinirtStreamDestroy(s);
    if (e0)
        infinirtEventDestroy(e0);
    if (e1)
        infinirtEventDestroy(e1);
    free(a);
    free(b);
    return ok;
}

int main(void)
{
    infiniDevice_t types[32];
    int ntypes = 0, total = 0, good = 0;
    if (infinirtGetDeviceTypes(types, 32, &ntypes) != INFINI_STATUS_SUCCESS) {
        fprintf(stderr, "infinirt is not usable\n");
        return 1;
    }
    for (int k = 0; k < ntypes && k < 32; k++) {
        int count = 0;
        infinirtGetDeviceCount(types[k], &count);
        for (int i = 0; i < count; i++, total++)
            good += run_on(types[k], i);
    }
    printf("app: %d of %d devices ok\n", good, total);
    return total > 0 && good == total ? 0 : 1;
}
