/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_bench.c - infinirt on an NVIDIA GPU beside the CUDA runtime.
 *
 * Written against the public API (infinirt.h, the loader and its CUDA
 * plugin) and the CUDA runtime linked statically (cudart_static dlopens the
 * driver itself, so this program starts on machines without one and exits
 * 77 "no CUDA device").  One run measures, on device 0:
 *   - pinned H2D and D2H bandwidth at 256 MiB: infinirtMemcpy with
 *     infinirtMallocHost buffers beside cudaMemcpy with cudaMallocHost
 *     buffers (goal: at least 0.95x);
 *   - malloc+free pair latency, median and p99: infinirtMalloc+infinirtFree
 *     (served by the loader's cache) beside cudaMalloc+cudaFree and beside
 *     cudaMallocAsync+cudaFreeAsync (the runtime's own pool);
 *   - the event-timed duration of a known copy: infinirtEventElapsedTime
 *     beside cudaEventElapsedTime;
 *   - a round of 100 small operations (64-byte D2D copies and memsets,
 *     alternating), issued one by one and launched as a captured graph,
 *     through infinirt beside the runtime (cudaStreamBeginCapture,
 *     cudaGraphLaunch): per round, best of 7 batches of 500 rounds, each
 *     batch ended by a stream synchronize.  The runtime's own ratio of graph
 *     launch to eager issue is the baseline for infinirt's (the graph bench's
 *     1/3 target is the device's to meet, not ours, where the two agree).
 * and prints a table.  Usage: infinirt-cuda-bench [reps] (default 20).
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "infinirt.h"

#define COPY_BYTES ((size_t)256 << 20)
#define PAIR_BYTES ((size_t)1 << 20)
#define EXIT_SKIP 77

#define IRT(call)                                                                                       \
    do {                                                                                                \
        infiniStatus_t st_ = (call);                                                                    \
        if (st_ != INFINI_STATUS_SUCCESS) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, infinirtGetErrorString(st_)); \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

#define CUDA(call)                                                                               \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

/* Sorts v in place; the value at quantile q (0.5 = median). */
static double quantile(double *v, int n, double q)
{
    int i = (int)(q * (n - 1) + 0.5);
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[i < n ? i : n - 1];
}

static double gbps(size_t bytes, double ns)
{
    return (double)bytes / ns; /* bytes per ns = GB/s */
}

/* Why infinirt found no NVIDIA device although CUDA did: the plugin
 * report says. */
static void print_plugin_report(void)
{
    int n = 0;
    infinirtGetPluginCount(&n);
    for (int i = 0; i < n; i++) {
        infinirtPluginInfo_t info;
        if (infinirtGetPluginInfo(i, &info) == INFINI_STATUS_SUCCESS)
            fprintf(stderr, "  plugin %s (%s): %s, %d device(s)%s%s\n", info.name, info.path,
                    infinirtGetPluginStatusString(info.status), info.device_count, info.message[0] ? ": " : "",
                    info.message);
    }
}

typedef struct {
    double irt_h2d, cuda_h2d, irt_d2h, cuda_d2h; /* GB/s, median */
} bandwidth;

static bandwidth measure_bandwidth(int reps)
{
    void *ih, *id, *ch, *cd;
    double *t[4];
    bandwidth bw;

    IRT(infinirtMallocHost(&ih, COPY_BYTES));
    IRT(infinirtMalloc(&id, COPY_BYTES));
    CUDA(cudaMallocHost(&ch, COPY_BYTES));
    CUDA(cudaMalloc(&cd, COPY_BYTES));
    memset(ih, 1, COPY_BYTES);
    memset(ch, 1, COPY_BYTES);
    for (int k = 0; k < 4; k++)
        t[k] = calloc((size_t)reps, sizeof(double));

    /* Warm-up (first-touch mappings, clocks), then both sides alternate
     * round by round so drift affects them alike. */
    for (int r = -2; r < reps; r++) {
        double t0 = now_ns();
        IRT(infinirtMemcpy(id, ih, COPY_BYTES, INFINIRT_MEMCPY_H2D));
        double t1 = now_ns();
        CUDA(cudaMemcpy(cd, ch, COPY_BYTES, cudaMemcpyHostToDevice));
        double t2 = now_ns();
        IRT(infinirtMemcpy(ih, id, COPY_BYTES, INFINIRT_MEMCPY_D2H));
        double t3 = now_ns();
        CUDA(cudaMemcpy(ch, cd, COPY_BYTES, cudaMemcpyDeviceToHost));
        double t4 = now_ns();
        if (r >= 0) {
            t[0][r] = t1 - t0;
            t[1][r] = t2 - t1;
            t[2][r] = t3 - t2;
            t[3][r] = t4 - t3;
        }
    }
    bw.irt_h2d = gbps(COPY_BYTES, quantile(t[0], reps, 0.5));
    bw.cuda_h2d = gbps(COPY_BYTES, quantile(t[1], reps, 0.5));
    bw.irt_d2h = gbps(COPY_BYTES, quantile(t[2], reps, 0.5));
    bw.cuda_d2h = gbps(COPY_BYTES, quantile(t[3], reps, 0.5));
    for (int k = 0; k < 4; k++)
        free(t[k]);
    IRT(infinirtFree(id));
    IRT(infinirtFreeHost(ih));
    CUDA(cudaFree(cd));
    CUDA(cudaFreeHost(ch));
    return bw;
}

typedef struct {
    double median, p99; /* ns per malloc+free pair */
} latency;

enum { PAIR_IRT, PAIR_CUDA, PAIR_CUDA_ASYNC };

static latency measure_pairs(int which, int iters)
{
    double *t = calloc((size_t)iters, sizeof(double));
    cudaStream_t s = NULL;
    latency l;
    void *p;

    if (which == PAIR_CUDA_ASYNC)
        CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = -100; i < iters; i++) { /* the first 100 fill the caches */
        double t0 = now_ns();
        switch (which) {
        case PAIR_IRT:
            IRT(infinirtMalloc(&p, PAIR_BYTES));
            IRT(infinirtFree(p));
            break;
        case PAIR_CUDA:
            CUDA(cudaMalloc(&p, PAIR_BYTES));
            CUDA(cudaFree(p));
            break;
        default:
            CUDA(cudaMallocAsync(&p, PAIR_BYTES, s));
            CUDA(cudaFreeAsync(p, s));
            break;
        }
        if (i >= 0)
            t[i] = now_ns() - t0;
    }
    if (s != NULL) {
        CUDA(cudaStreamSynchronize(s));
        CUDA(cudaStreamDestroy(s));
    }
    l.median = quantile(t, iters, 0.5);
    l.p99 = quantile(t, iters, 0.99);
    free(t);
    return l;
}

typedef struct {
    float irt_ms, cuda_ms; /* median event-timed duration of one H2D copy */
} timing;

static timing measure_events(int reps)
{
    float *ti = calloc((size_t)reps, sizeof(float)), *tc = calloc((size_t)reps, sizeof(float));
    double *v = calloc((size_t)reps, sizeof(double));
    infinirtStream_t is;
    infinirtEvent_t ie0, ie1;
    cudaStream_t cs;
    cudaEvent_t ce0, ce1;
    void *ih, *id, *ch, *cd;
    timing out;

    IRT(infinirtMallocHost(&ih, COPY_BYTES));
    IRT(infinirtMalloc(&id, COPY_BYTES));
    IRT(infinirtStreamCreate(&is));
    IRT(infinirtEventCreate(&ie0));
    IRT(infinirtEventCreate(&ie1));
    CUDA(cudaMallocHost(&ch, COPY_BYTES));
    CUDA(cudaMalloc(&cd, COPY_BYTES));
    CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    CUDA(cudaEventCreate(&ce0));
    CUDA(cudaEventCreate(&ce1));

    for (int r = -1; r < reps; r++) {
        float ms;
        IRT(infinirtEventRecord(ie0, is));
        IRT(infinirtMemcpyAsync(id, ih, COPY_BYTES, INFINIRT_MEMCPY_H2D, is));
        IRT(infinirtEventRecord(ie1, is));
        IRT(infinirtEventSynchronize(ie1));
        IRT(infinirtEventElapsedTime(&ms, ie0, ie1));
        if (r >= 0)
            ti[r] = ms;
        CUDA(cudaEventRecord(ce0, cs));
        CUDA(cudaMemcpyAsync(cd, ch, COPY_BYTES, cudaMemcpyHostToDevice, cs));
        CUDA(cudaEventRecord(ce1, cs));
        CUDA(cudaEventSynchronize(ce1));
        CUDA(cudaEventElapsedTime(&ms, ce0, ce1));
        if (r >= 0)
            tc[r] = ms;
    }
    for (int r = 0; r < reps; r++)
        v[r] = ti[r];
    out.irt_ms = (float)quantile(v, reps, 0.5);
    for (int r = 0; r < reps; r++)
        v[r] = tc[r];
    out.cuda_ms = (float)quantile(v, reps, 0.5);

    IRT(infinirtEventDestroy(ie0));
    IRT(infinirtEventDestroy(ie1));
    IRT(infinirtStreamDestroy(is));
    IRT(infinirtFree(id));
    IRT(infinirtFreeHost(ih));
    CUDA(cudaEventDestroy(ce0));
    CUDA(cudaEventDestroy(ce1));
    CUDA(cudaStreamDestroy(cs));
    CUDA(cudaFree(cd));
    CUDA(cudaFreeHost(ch));
    free(ti);
    free(tc);
    free(v);
    return out;
}

#define GRAPH_OPS 100
#define GRAPH_ROUNDS 500
#define GRAPH_BATCHES 7

typedef struct {
    double irt_eager_us, irt_graph_us, cuda_eager_us, cuda_graph_us;
} graph_timing;

static void irt_round(void *dst, const void *src, infinirtStream_t s)
{
    for (int i = 0; i < GRAPH_OPS; i++) {
        if (i % 2)
            IRT(infinirtMemsetAsync(dst, i & 0xff, 64, s));
        else
            IRT(infinirtMemcpyAsync(dst, src, 64, INFINIRT_MEMCPY_D2D, s));
    }
}

static void cuda_round(void *dst, const void *src, cudaStream_t s)
{
    for (int i = 0; i < GRAPH_OPS; i++) {
        if (i % 2)
            CUDA(cudaMemsetAsync(dst, i & 0xff, 64, s));
        else
            CUDA(cudaMemcpyAsync(dst, src, 64, cudaMemcpyDeviceToDevice, s));
    }
}

/* One side of the comparison: its buffers, stream and executable graph,
 * and how it issues a round (eager: the 100 calls; graph: one launch) and
 * waits for its stream. */
typedef struct side {
    void *dst, *src, *stream, *exec;
    void (*round)(const struct side *sd, int graph);
    void (*sync)(const struct side *sd);
} side;

static void irt_side_round(const side *sd, int graph)
{
    if (graph)
        IRT(infinirtGraphLaunch(sd->exec, sd->stream));
    else
        irt_round(sd->dst, sd->src, sd->stream);
}

static void irt_side_sync(const side *sd)
{
    IRT(infinirtStreamSynchronize(sd->stream));
}

static void cuda_side_round(const side *sd, int graph)
{
    if (graph)
        CUDA(cudaGraphLaunch(sd->exec, sd->stream));
    else
        cuda_round(sd->dst, sd->src, sd->stream);
}

static void cuda_side_sync(const side *sd)
{
    CUDA(cudaStreamSynchronize(sd->stream));
}

/* Best per-round microseconds over the batches, each ended by a sync. */
static double rounds(const side *sd, int graph)
{
    double best = 0;
    for (int b = 0; b < GRAPH_BATCHES; b++) {
        double t0 = now_ns();
        for (int k = 0; k < GRAPH_ROUNDS; k++)
            sd->round(sd, graph);
        sd->sync(sd);
        double us = (now_ns() - t0) / GRAPH_ROUNDS / 1e3;
        if (b == 0 || us < best)
            best = us;
    }
    return best;
}

static graph_timing measure_graph(void)
{
    graph_timing out;
    infinirtStream_t is;
    infinirtGraph_t ig;
    infinirtGraphExec_t ix;
    cudaStream_t cs;
    cudaGraph_t cg;
    cudaGraphExec_t cx;
    void *isrc, *idst, *csrc, *cdst;

    IRT(infinirtMalloc(&isrc, 64));
    IRT(infinirtMalloc(&idst, 64));
    IRT(infinirtStreamCreate(&is));
    IRT(infinirtMemset(isrc, 1, 64));
    IRT(infinirtStreamBeginCapture(is, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    irt_round(idst, isrc, is);
    IRT(infinirtStreamEndCapture(is, &ig));
    IRT(infinirtGraphInstantiate(&ix, ig, NULL, NULL, 0));
    CUDA(cudaMalloc(&csrc, 64));
    CUDA(cudaMalloc(&cdst, 64));
    CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    CUDA(cudaMemset(csrc, 1, 64));
    CUDA(cudaStreamBeginCapture(cs, cudaStreamCaptureModeRelaxed));
    cuda_round(cdst, csrc, cs);
    CUDA(cudaStreamEndCapture(cs, &cg));
    CUDA(cudaGraphInstantiate(&cx, cg, 0));

    const side irt = {idst, isrc, is, ix, irt_side_round, irt_side_sync};
    const side cuda = {cdst, csrc, cs, cx, cuda_side_round, cuda_side_sync};
    /* Interleaved, each side once before the timed pass (warm-up). */
    for (int pass = 0; pass < 2; pass++) {
        out.irt_eager_us = rounds(&irt, 0);
        out.cuda_eager_us = rounds(&cuda, 0);
        out.irt_graph_us = rounds(&irt, 1);
        out.cuda_graph_us = rounds(&cuda, 1);
    }

    IRT(infinirtGraphExecDestroy(ix));
    IRT(infinirtGraphDestroy(ig));
    IRT(infinirtStreamDestroy(is));
    IRT(infinirtFree(isrc));
    IRT(infinirtFree(idst));
    CUDA(cudaGraphExecDestroy(cx));
    CUDA(cudaGraphDestroy(cg));
    CUDA(cudaStreamDestroy(cs));
    CUDA(cudaFree(csrc));
    CUDA(cudaFree(cdst));
    return out;
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && (argv[1][0] < '0' || argv[1][0] > '9'))) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr, "usage: %s [REPETITIONS]   (default 20)\n", argv[0]);
        return help ? 0 : 2;
    }
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    int ncuda = 0, nirt = 0, drv = 0;
    struct cudaDeviceProp prop;
    cudaError_t ce;

    if (reps < 3)
        reps = 3;
    ce = cudaGetDeviceCount(&ncuda);
    if (ce != cudaSuccess || ncuda == 0) {
        printf("no CUDA device (cudaGetDeviceCount: %s)\n", ce != cudaSuccess ? cudaGetErrorName(ce) : "0 devices");
        return EXIT_SKIP;
    }
    IRT(infinirtInit());
    IRT(infinirtGetDeviceCount(INFINI_DEVICE_NVIDIA, &nirt));
    if (nirt == 0) {
        fprintf(stderr, "CUDA sees %d device(s) but infinirt serves no NVIDIA device:\n", ncuda);
        print_plugin_report();
        return 1;
    }
    IRT(infinirtSetDevice(INFINI_DEVICE_NVIDIA, 0));
    CUDA(cudaSetDevice(0));
    CUDA(cudaGetDeviceProperties(&prop, 0));
    cudaDriverGetVersion(&drv);

    bandwidth bw = measure_bandwidth(reps);
    latency li = measure_pairs(PAIR_IRT, 20000);
    latency lc = measure_pairs(PAIR_CUDA, 1000);
    latency la = measure_pairs(PAIR_CUDA_ASYNC, 20000);
    timing ev = measure_events(reps);
    graph_timing gt = measure_graph();

    printf("infinirt CUDA bench: device 0 = %s (cc %d.%d), driver %d.%d, cudart %d.%d, %d reps\n", prop.name,
           prop.major, prop.minor, drv / 1000, drv % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10,
           reps);
    printf("%-44s %14s %14s %9s  %s\n", "metric", "infinirt", "cuda", "ratio", "note");
    printf("%-44s %14.2f %14.2f %9.3f  %s\n", "H2D pinned 256 MiB, GB/s (median)", bw.irt_h2d, bw.cuda_h2d,
           bw.irt_h2d / bw.cuda_h2d, bw.irt_h2d >= 0.95 * bw.cuda_h2d ? "goal >= 0.95 met" : "BELOW GOAL 0.95");
    printf("%-44s %14.2f %14.2f %9.3f  %s\n", "D2H pinned 256 MiB, GB/s (median)", bw.irt_d2h, bw.cuda_d2h,
           bw.irt_d2h / bw.cuda_d2h, bw.irt_d2h >= 0.95 * bw.cuda_d2h ? "goal >= 0.95 met" : "BELOW GOAL 0.95");
    printf("%-44s %14.0f %14.0f %9.3f  %s\n", "malloc+free 1 MiB, ns median (cudaMalloc)", li.median, lc.median,
           li.median / lc.median, "ratio < 1: infinirt faster");
    printf("%-44s %14.0f %14.0f %9.3f\n", "malloc+free 1 MiB, ns p99 (cudaMalloc)", li.p99, lc.p99, li.p99 / lc.p99);
    printf("%-44s %14.0f %14.0f %9.3f  %s\n", "malloc+free 1 MiB, ns median (cudaMallocAsync)", li.median, la.median,
           li.median / la.median, "runtime's stream-ordered pool");
    printf("%-44s %14.0f %14.0f %9.3f\n", "malloc+free 1 MiB, ns p99 (cudaMallocAsync)", li.p99, la.p99,
           li.p99 / la.p99);
    printf("%-44s %14.3f %14.3f %9.3f  %s\n", "event-timed 256 MiB H2D copy, ms (median)", ev.irt_ms, ev.cuda_ms,
           ev.irt_ms / ev.cuda_ms, "same copy: ratio ~ 1");
    printf("%-44s %14.2f %14.2f\n", "  = GB/s", gbps(COPY_BYTES, ev.irt_ms * 1e6),
           gbps(COPY_BYTES, ev.cuda_ms * 1e6));
    printf("%-44s %14.2f %14.2f %9.3f  %s\n", "100 small ops issued one by one, us/round", gt.irt_eager_us,
           gt.cuda_eager_us, gt.irt_eager_us / gt.cuda_eager_us, "64 B D2D copies and memsets");
    printf("%-44s %14.2f %14.2f %9.3f  %s\n", "the same 100 as one graph launch, us/round", gt.irt_graph_us,
           gt.cuda_graph_us, gt.irt_graph_us / gt.cuda_graph_us, "captured once, launched per round");
    printf("%-44s %14.3f %14.3f %9.3f  %s\n", "  graph launch / one by one", gt.irt_graph_us / gt.irt_eager_us,
           gt.cuda_graph_us / gt.cuda_eager_us,
           (gt.irt_graph_us / gt.irt_eager_us) / (gt.cuda_graph_us / gt.cuda_eager_us),
           "the runtime's ratio is the baseline");
    return 0;
}
