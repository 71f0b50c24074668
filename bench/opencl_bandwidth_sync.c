/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_bandwidth_sync.c - the OpenCL benchmark's per-call rows: a
 * synchronous 64 B copy through the plugin's ops, H2D and D2H, as a ratio
 * to the same copy made directly - a blocking clEnqueueWriteBuffer/
 * ReadBuffer (clEnqueueSVMMemcpy in SVM mode) on the plugin's own default
 * queue and memory - with no blocking stream, and with one and four idle
 * ones (streams that ran work and were synchronized, as an application's
 * streams are between steps).  A synchronous copy runs after the blocking
 * streams' earlier work (docs/opencl.md, "Blocking streams"); an idle
 * stream should cost it nothing.  Goal: each row <= 1.1x the direct call.
 *
 * Each row gives wall time and the process's CPU time (PoCL's driver
 * threads included) per call.  The goal is judged on CPU time: on the
 * shared 2-core VM the wall time of a blocking call is mostly the wait for
 * a core to wake PoCL's thread on, and swings 2-4x between batches.
 *
 * The rows take turns, batch by batch (best of 21, 5 quick): the VM's slow
 * phases then fall on every row and on its baseline alike.  The streams a
 * row needs are made before its batch and destroyed after it, untimed.
 */
#define _POSIX_C_SOURCE 200809L
#include "opencl_bandwidth.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define SYNC_BYTES 64
#define MAX_IDLE 4

typedef struct {
    int svm;
    cl_command_queue q; /* the plugin's default queue */
    cl_mem mem;         /* buffer mode: the allocation's cl_mem ... */
    size_t off;         /* ... and the offset of dev in it */
    void *dev;          /* device memory from the plugin */
    unsigned char host[SYNC_BYTES];
    void *streams[MAX_IDLE];
} sync_ctx;

typedef struct {
    const char *name;
    int kind;   /* H2D or D2H */
    int plug;   /* 1: the plugin's memcpy; 0: OpenCL directly */
    int idle;   /* idle blocking streams while the batch runs */
    double ns;  /* out: best wall time per call */
    double cpu; /* out: best CPU time of the process per call */
} sync_row;

static double clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void one_copy(sync_ctx *c, const sync_row *r)
{
    if (r->plug) {
        if (r->kind == H2D)
            PLUG(bw_ops->memcpy(0, c->dev, c->host, SYNC_BYTES, INFINIRT_PLUGIN_MEMCPY_H2D));
        else
            PLUG(bw_ops->memcpy(0, c->host, c->dev, SYNC_BYTES, INFINIRT_PLUGIN_MEMCPY_D2H));
    } else if (c->svm) {
        if (r->kind == H2D)
            CL(clEnqueueSVMMemcpy(c->q, CL_TRUE, c->dev, c->host, SYNC_BYTES, 0, NULL, NULL));
        else
            CL(clEnqueueSVMMemcpy(c->q, CL_TRUE, c->host, c->dev, SYNC_BYTES, 0, NULL, NULL));
    } else if (r->kind == H2D) {
        CL(clEnqueueWriteBuffer(c->q, c->mem, CL_TRUE, c->off, SYNC_BYTES, c->host, 0, NULL, NULL));
    } else {
        CL(clEnqueueReadBuffer(c->q, c->mem, CL_TRUE, c->off, SYNC_BYTES, c->host, 0, NULL, NULL));
    }
}

/* `n` blocking streams that have run work and are idle again. */
static void make_idle(sync_ctx *c, int n)
{
    for (int i = 0; i < n; i++) {
        PLUG(bw_ops->stream_create(0, &c->streams[i]));
        PLUG(bw_ops->memset_async(0, c->dev, 0, SYNC_BYTES, c->streams[i]));
        PLUG(bw_ops->stream_synchronize(0, c->streams[i]));
    }
}

static void drop_idle(sync_ctx *c, int n)
{
    for (int i = 0; i < n; i++)
        PLUG(bw_ops->stream_destroy(0, c->streams[i]));
}

/* One batch of n calls; the row keeps its best wall and CPU times. */
static void batch(sync_ctx *c, sync_row *r, long n)
{
    double t0, c0, t, cpu;

    make_idle(c, r->idle);
    one_copy(c, r); /* the first call after the setup is not the row's */
    t0 = clock_ns(CLOCK_MONOTONIC);
    c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    for (long i = 0; i < n; i++)
        one_copy(c, r);
    cpu = (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / (double)n;
    t = (clock_ns(CLOCK_MONOTONIC) - t0) / (double)n;
    drop_idle(c, r->idle);
    if (t < r->ns)
        r->ns = t;
    if (cpu < r->cpu)
        r->cpu = cpu;
}

void sync_rows(int svm, int quick)
{
    static sync_row rows[] = {
        {"H2D, direct blocking write", H2D, 0, 0, 0, 0},
        {"H2D, plugin, no blocking stream", H2D, 1, 0, 0, 0},
        {"H2D, plugin, 1 idle blocking stream", H2D, 1, 1, 0, 0},
        {"H2D, plugin, 4 idle blocking streams", H2D, 1, 4, 0, 0},
        {"D2H, direct blocking read", D2H, 0, 0, 0, 0},
        {"D2H, plugin, no blocking stream", D2H, 1, 0, 0, 0},
        {"D2H, plugin, 1 idle blocking stream", D2H, 1, 1, 0, 0},
        {"D2H, plugin, 4 idle blocking streams", D2H, 1, 4, 0, 0},
    };
    const int count = (int)(sizeof rows / sizeof rows[0]);
    const long n = quick ? 100 : 500;
    const int batches = quick ? 5 : 21;
    static sync_ctx c;
    void *native = NULL;

    memset(&c, 0, sizeof c);
    c.svm = svm;
    PLUG(bw_ops->malloc_device(0, &c.dev, 4096));
    PLUG(bw_ops->stream_get_native(0, NULL, (void **)&c.q));
    PLUG(bw_ops->mem_get_native(0, c.dev, &native, &c.off));
    c.mem = svm ? NULL : (cl_mem)native;
    for (int i = 0; i < count; i++) {
        batch(&c, &rows[i], n / 10); /* warm up */
        rows[i].ns = rows[i].cpu = 1e30;
    }
    for (int b = 0; b < batches; b++)
        for (int i = 0; i < count; i++)
            batch(&c, &rows[i], n);
    PLUG(bw_ops->free_device(0, c.dev));

    printf("  synchronous %d B copies, pageable host, best of %d batches of %ld in turn; wall and process CPU "
           "time\n  per call, ratios to the direct call on the same queue (goal <= 1.10x, judged on CPU time):\n",
           SYNC_BYTES, batches, n);
    for (int i = 0; i < count; i++) {
        const sync_row *base = &rows[i - (i % 4)];
        if (!rows[i].plug)
            printf("  %-40s %8.2f us %8.2f us cpu\n", rows[i].name, rows[i].ns / 1e3, rows[i].cpu / 1e3);
        else
            printf("  %-40s %8.2f us %8.2f us cpu %6.2fx %6.2fx cpu %s\n", rows[i].name, rows[i].ns / 1e3,
                   rows[i].cpu / 1e3, rows[i].ns / base->ns, rows[i].cpu / base->cpu,
                   rows[i].cpu / base->cpu <= 1.10 ? "ok" : "MISSED");
    }
}
