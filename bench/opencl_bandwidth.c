/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_bandwidth.c - the OpenCL plugin's copy bandwidth and start-up cost.
 *
 * For each memory mode of the plugin (svm where the device has SVM, and
 * buffer), in one run, at 64 MiB (--size), median of --reps repetitions:
 *   H2D, D2H and D2D, from pageable and from pinned host memory, through
 *     - the plugin's ops, dlopened directly            ("ops")
 *     - the public API, infinirtMemcpy via the loader  ("api"; when built
 *       with the loader, INFINIRT_CONFIG pointing at a generated config
 *       that enables only the opencl plugin in that mode)
 *     - OpenCL itself: blocking clEnqueueSVMMemcpy, or clEnqueueWrite/
 *       ReadBuffer and clEnqueueCopyBuffer + clFinish  ("direct")
 *     - memcpy of the same bytes between host buffers  ("memcpy")
 *   and the ratios ops/direct, api/direct, direct/memcpy.  The paths of a
 *   row take turns rep by rep; the plugin and the loader cannot hold the
 *   plugin at once, so "api" is timed in a second round beside OpenCL again,
 *   and api/direct divides by that round's OpenCL figure.
 *   Each path rotates over --sets (default 4) sets of buffers: on PoCL two
 *   identical 64 MiB buffers of one context copy up to 8% apart (where their
 *   pages landed), which one buffer per path would report as a difference
 *   between the paths.
 * Per call: a synchronous 64 B H2D and D2H through the plugin's ops with no,
 * one and four idle blocking streams, as ratios to the same blocking call
 * made directly on the plugin's default queue (opencl_bandwidth_sync.c).
 * Start-up: each figure in a fresh process (fork before any OpenCL call),
 * median of 5: clGetPlatformIDs alone, the plugin's entry + init, its first
 * use of a device (context + queue), and infinirtInit with the plugin.
 *
 * The copy paths are in opencl_bandwidth_paths.c.
 *
 * Usage: infinirt-opencl-bandwidth [--reps N (40)] [--size MiB] [--sets N]
 *                                  [--plugin PATH] [--memory svm|buffer]
 *                                  [--sync] [--quick]
 * --sync: only the per-call rows; --quick: the same in short batches
 * (ctest -L bench).
 * Exit 77 when there is no OpenCL device.
 */
#define _POSIX_C_SOURCE 200809L
#include "opencl_bandwidth.h"
#include "bench_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef INFINIRT_OPENCL_PLUGIN
#define INFINIRT_OPENCL_PLUGIN "libinfinirt_opencl.so"
#endif

#define EXIT_SKIP 77
#define EXIT_ROWS_ONLY 78 /* run_mode: the per-call rows only, nothing to print after */
#define MiB ((size_t)1 << 20)
#define USAGE "[--reps N] [--size MiB] [--sets N] [--plugin PATH] [--memory svm|buffer] [--sync] [--quick]"
#define INIT_RUNS 5

enum { OPS, API, DIRECT, MEMCPY, N_PATHS };
static const char *const kind_names[N_KINDS] = {"H2D", "D2H", "D2D"};

const char *bw_plugin_path = INFINIRT_OPENCL_PLUGIN;
size_t bw_bytes = 64 * MiB;
int bw_sets = 4;
static int reps = 40;
static int quick, sync_only;

void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A copy to time: returns after the copy has completed. */
typedef void (*copy_fn)(void *ctx, int kind);

typedef struct {
    copy_fn fn;
    void *ctx;
    double gbps; /* out: median */
} bench_path;

/* Median GB/s of each path over `reps` rounds.  The paths take turns within
 * each round, starting with a different one each round, so drift (clock,
 * other tenants of the machine) and cache state fall on all of them alike;
 * two untimed warm-up rounds first. */
static void measure(bench_path *paths, int n, int kind)
{
    double *t = malloc((size_t)reps * (size_t)n * sizeof *t);

    if (t == NULL)
        die("out of memory");
    for (int w = 0; w < 2; w++)
        for (int p = 0; p < n; p++)
            paths[p].fn(paths[p].ctx, kind);
    for (int i = 0; i < reps; i++)
        for (int j = 0; j < n; j++) {
            int p = (i + j) % n; /* who goes first rotates too */
            double t0 = now_ms();
            paths[p].fn(paths[p].ctx, kind);
            t[p * reps + i] = now_ms() - t0;
        }
    for (int p = 0; p < n; p++)
        paths[p].gbps = (double)bw_bytes / (median(t + p * reps, reps) * 1e6);
    free(t);
}

/* --------------------------------------------------------- one memory mode */

typedef struct {
    double gbps[2][N_KINDS][N_PATHS]; /* [pinned][kind][path] */
    double direct_with_api[2][N_KINDS];
    double small_us[N_KINDS][N_PATHS]; /* SMALL_BYTES copies, pageable host */
    double small_direct_with_api[N_KINDS];
    int have_api;
} results;

/* The per-call cost: a copy small enough that the work is negligible. */
#define SMALL_BYTES ((size_t)4096)

static void measure_small(bench_path *paths, int n, int kind, double *us)
{
    size_t saved = bw_bytes;

    bw_bytes = SMALL_BYTES;
    measure(paths, n, kind);
    bw_bytes = saved;
    for (int p = 0; p < n; p++)
        us[p] = (double)SMALL_BYTES / (paths[p].gbps * 1e3);
}

static void fill(void *p, unsigned char v)
{
    memset(p, v, bw_bytes);
}

/* Measure one mode in this process.  Returns 0, or EXIT_SKIP. */
static int run_mode(const char *memory, results *r)
{
    char msg[512];
    infinirtPluginDeviceInfo info;
    set_ctx pc = {0};
    direct_ctx dc;
    host_ctx hc;
    int count;

    memset(r, 0, sizeof *r);
    plugin_load();
    count = plugin_init(memory, msg, sizeof msg);
    if (count < 0) {
        printf("\nmode %s: plugin init failed: %s\n", memory, msg);
        return EXIT_SKIP;
    }
    if (count == 0) {
        printf("\nmode %s: no device: %s\n", memory, msg);
        bw_ops->shutdown();
        return EXIT_SKIP;
    }
    PLUG(bw_ops->get_device_info(0, &info));
    printf("\nmode %s: device 0 \"%s\"\n  %s\n", memory, info.name, info.description);
    sync_rows(strstr(info.description, "mode: svm") != NULL, quick);
    if (sync_only) {
        bw_ops->shutdown();
        return EXIT_ROWS_ONLY;
    }

    /* Pageable host memory, touched first so page faults are not timed. */
    hc.a = malloc(bw_bytes);
    hc.b = malloc(bw_bytes);
    hc.c = malloc(bw_bytes);
    if (!hc.a || !hc.b || !hc.c)
        die("out of memory");
    fill(hc.a, 1);
    fill(hc.b, 2);
    fill(hc.c, 3);

    /* OpenCL itself, in the plugin's mode, on the same device. */
    direct_open(&dc, info.name, strstr(info.description, "mode: svm") != NULL);
    direct_pinned(&dc);

    /* Round 1: the plugin's ops beside OpenCL and memcpy. */
    for (int i = 0; i < bw_sets; i++) {
        PLUG(bw_ops->malloc_device(0, &pc.dev_a[i], bw_bytes));
        PLUG(bw_ops->malloc_device(0, &pc.dev_b[i], bw_bytes));
        PLUG(bw_ops->malloc_host(0, &pc.pin_src[i], bw_bytes));
        PLUG(bw_ops->malloc_host(0, &pc.pin_dst[i], bw_bytes));
        fill(pc.pin_src[i], 4);
        fill(pc.pin_dst[i], 5);
    }
    for (int pinned = 0; pinned < 2; pinned++) {
        bench_path paths[3] = {{plug_copy, &pc, 0}, {direct_copy, &dc, 0}, {host_copy, &hc, 0}};
        use_host(&pc, hc.a, hc.b, pinned);
        use_host(&dc.host, hc.a, hc.b, pinned);
        for (int k = 0; k < N_KINDS; k++) {
            measure(paths, 3, k);
            r->gbps[pinned][k][OPS] = paths[0].gbps;
            r->gbps[pinned][k][DIRECT] = paths[1].gbps;
            r->gbps[pinned][k][MEMCPY] = paths[2].gbps;
        }
    }
    {
        bench_path paths[3] = {{plug_copy, &pc, 0}, {direct_copy, &dc, 0}, {host_copy, &hc, 0}};
        use_host(&pc, hc.a, hc.b, 0);
        use_host(&dc.host, hc.a, hc.b, 0);
        for (int k = 0; k < N_KINDS; k++) {
            double us[3];
            measure_small(paths, 3, k, us);
            r->small_us[k][OPS] = us[0];
            r->small_us[k][DIRECT] = us[1];
            r->small_us[k][MEMCPY] = us[2];
        }
    }
    for (int i = 0; i < bw_sets; i++) {
        PLUG(bw_ops->free_device(0, pc.dev_a[i]));
        PLUG(bw_ops->free_device(0, pc.dev_b[i]));
        PLUG(bw_ops->free_host(0, pc.pin_src[i]));
        PLUG(bw_ops->free_host(0, pc.pin_dst[i]));
    }
    bw_ops->shutdown(); /* the loader initialises the same library again below */

#ifdef INFINIRT_BENCH_API
    /* Round 2: the public API (loader + plugin) beside OpenCL. */
    {
        char cfg[256];
        const char *env = getenv("INFINIRT_CONFIG");
        set_ctx ac = {0};
        int n = 0;

        if (env == NULL) {
            api_config(memory, cfg, sizeof cfg);
            setenv("INFINIRT_CONFIG", cfg, 1);
        }
        IRT(infinirtInit());
        if (env == NULL)
            unlink(cfg);
        IRT(infinirtGetDeviceCount(INFINI_DEVICE_OPENCL, &n));
        if (n > 0) {
            IRT(infinirtSetDevice(INFINI_DEVICE_OPENCL, 0));
            for (int i = 0; i < bw_sets; i++) {
                IRT(infinirtMalloc(&ac.dev_a[i], bw_bytes));
                IRT(infinirtMalloc(&ac.dev_b[i], bw_bytes));
                IRT(infinirtMallocHost(&ac.pin_src[i], bw_bytes));
                IRT(infinirtMallocHost(&ac.pin_dst[i], bw_bytes));
                fill(ac.pin_src[i], 4);
                fill(ac.pin_dst[i], 5);
            }
            for (int pinned = 0; pinned < 2; pinned++) {
                bench_path paths[2] = {{api_copy, &ac, 0}, {direct_copy, &dc, 0}};
                use_host(&ac, hc.a, hc.b, pinned);
                use_host(&dc.host, hc.a, hc.b, pinned);
                for (int k = 0; k < N_KINDS; k++) {
                    measure(paths, 2, k);
                    r->gbps[pinned][k][API] = paths[0].gbps;
                    r->direct_with_api[pinned][k] = paths[1].gbps;
                }
            }
            {
                bench_path paths[2] = {{api_copy, &ac, 0}, {direct_copy, &dc, 0}};
                use_host(&ac, hc.a, hc.b, 0);
                use_host(&dc.host, hc.a, hc.b, 0);
                for (int k = 0; k < N_KINDS; k++) {
                    double us[2];
                    measure_small(paths, 2, k, us);
                    r->small_us[k][API] = us[0];
                    r->small_direct_with_api[k] = us[1];
                }
            }
            for (int i = 0; i < bw_sets; i++) {
                IRT(infinirtFree(ac.dev_a[i]));
                IRT(infinirtFree(ac.dev_b[i]));
                IRT(infinirtFreeHost(ac.pin_src[i]));
                IRT(infinirtFreeHost(ac.pin_dst[i]));
            }
            r->have_api = 1;
        } else {
            printf("  public API: the loader serves no OpenCL device (check INFINIRT_CONFIG)\n");
        }
    }
#endif
    direct_close(&dc);
    free(hc.a);
    free(hc.b);
    free(hc.c);
    return 0;
}

static void print_results(const results *r)
{
    printf("  per call, %zu-byte copies, pageable host, median us (lower is better):\n", SMALL_BYTES);
    printf("  %-4s %9s %9s %9s %9s   %10s %10s\n", "copy", "ops", "api", "direct", "memcpy", "ops-direct",
           "api-direct");
    for (int k = 0; k < N_KINDS; k++) {
        const double *u = r->small_us[k];
        char api[16] = "-", api_diff[16] = "-";
        if (r->have_api) {
            snprintf(api, sizeof api, "%.2f", u[API]);
            snprintf(api_diff, sizeof api_diff, "%+.2f", u[API] - r->small_direct_with_api[k]);
        }
        printf("  %-4s %9.2f %9s %9.2f %9.2f   %+10.2f %10s\n", kind_names[k], u[OPS], api, u[DIRECT], u[MEMCPY],
               u[OPS] - u[DIRECT], api_diff);
    }
    printf("  bandwidth, GB/s:\n");
    printf("  %-4s %-8s %9s %9s %9s %9s   %10s %10s %13s\n", "copy", "host", "ops", "api", "direct", "memcpy",
           "ops/direct", "api/direct", "direct/memcpy");
    for (int pinned = 0; pinned < 2; pinned++)
        for (int k = 0; k < N_KINDS; k++) {
            const double *g = r->gbps[pinned][k];
            char api[16] = "-", api_ratio[16] = "-";
            if (r->have_api) {
                snprintf(api, sizeof api, "%.2f", g[API]);
                snprintf(api_ratio, sizeof api_ratio, "%.3f", g[API] / r->direct_with_api[pinned][k]);
            }
            printf("  %-4s %-8s %9.2f %9s %9.2f %9.2f   %10.3f %10s %13.3f\n", kind_names[k],
                   k == D2D ? "-"
                   : pinned ? "pinned"
                            : "pageable",
                   g[OPS], api, g[DIRECT], g[MEMCPY], g[OPS] / g[DIRECT], api_ratio, g[DIRECT] / g[MEMCPY]);
        }
}

/* ------------------------------------------------------------ start-up cost */

enum { T_PLATFORMS, T_PLUGIN_INIT, T_FIRST_USE, T_API_INIT, N_TIMES };

/* Runs in a fresh child: one start-up figure, in ms. */
static double startup_child(int which)
{
    double t0, t;
    char msg[512];

    switch (which) {
    case T_PLATFORMS: {
        cl_uint n = 0;
        t0 = now_ms();
        clGetPlatformIDs(0, NULL, &n);
        return now_ms() - t0;
    }
    case T_PLUGIN_INIT:
    case T_FIRST_USE: {
        void *p;
        t0 = now_ms();
        plugin_load();
        if (plugin_init(NULL, msg, sizeof msg) < 1)
            return -1;
        t = now_ms() - t0;
        if (which == T_PLUGIN_INIT)
            return t;
        t0 = now_ms();
        PLUG(bw_ops->malloc_device(0, &p, 4096)); /* context + default queue + allocation */
        return now_ms() - t0;
    }
    default:
#ifdef INFINIRT_BENCH_API
    {
        char cfg[256];
        api_config("auto", cfg, sizeof cfg);
        setenv("INFINIRT_CONFIG", cfg, 1);
        t0 = now_ms();
        infiniStatus_t st = infinirtInit();
        t = now_ms() - t0;
        unlink(cfg);
        return st == INFINI_STATUS_SUCCESS ? t : -1;
    }
#else
        return -1;
#endif
    }
}

static double startup_median(int which)
{
    double v[INIT_RUNS];
    int n = 0;

    for (int i = 0; i < INIT_RUNS; i++) {
        int fds[2];
        pid_t pid;
        double t = -1;

        if (pipe(fds) != 0)
            die("pipe failed");
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            close(fds[0]);
            t = startup_child(which);
            if (write(fds[1], &t, sizeof t) != (ssize_t)sizeof t)
                _exit(1);
            _exit(0);
        }
        close(fds[1]);
        if (pid < 0 || read(fds[0], &t, sizeof t) != (ssize_t)sizeof t)
            t = -1;
        close(fds[0]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        if (t >= 0)
            v[n++] = t;
    }
    return n ? median(v, n) : -1;
}

static void print_startup(void)
{
    static const char *const what[N_TIMES] = {
        "clGetPlatformIDs, cold (ICD loader + drivers)",
        "plugin dlopen + entry + init (enumeration)",
        "plugin first use of device 0 (context, queue)",
        "infinirtInit, loader with the opencl plugin",
    };

    printf("start-up, each in a fresh process, median of %d:\n", INIT_RUNS);
    for (int i = 0; i < N_TIMES; i++) {
        double t = startup_median(i);
        if (t < 0)
            printf("  %-48s %9s\n", what[i], "n/a");
        else
            printf("  %-48s %8.2f ms\n", what[i], t);
    }
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    const char *modes[2] = {"svm", "buffer"};
    int status = EXIT_SKIP;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s %s\n", argv[0], USAGE);
            return 0;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
            bw_bytes = (size_t)atol(argv[++i]) * MiB;
        else if (strcmp(argv[i], "--sets") == 0 && i + 1 < argc)
            bw_sets = atoi(argv[++i]);
        else if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc)
            bw_plugin_path = argv[++i];
        else if (strcmp(argv[i], "--memory") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--sync") == 0)
            sync_only = 1;
        else if (strcmp(argv[i], "--quick") == 0)
            quick = sync_only = 1;
        else
            die("usage: %s %s", argv[0], USAGE);
    }
    if (reps < 1 || bw_bytes == 0 || bw_sets < 1 || bw_sets > MAX_SETS)
        die("--reps and --size must be positive, --sets 1..%d", MAX_SETS);

    /* Before this process touches OpenCL: children measure cold starts. */
    if (!sync_only) {
        print_startup();
        printf(
            "\nbandwidth: %zu MiB per copy, blocking, median of %d, %d buffer sets per path (GB/s = 1e9 bytes/s)\n",
            bw_bytes / MiB, reps, bw_sets);
    }
    for (int m = 0; m < 2; m++) {
        pid_t pid;
        int ws;

        if (only != NULL && strcmp(only, modes[m]) != 0)
            continue;
        /* One process per mode: the loader initialises once per process. */
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            results r;
            int rc = run_mode(modes[m], &r);
            if (rc == 0)
                print_results(&r);
            fflush(stdout);
            _exit(rc == EXIT_ROWS_ONLY ? 0 : rc);
        }
        if (pid < 0 || waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws))
            die("mode %s: child failed", modes[m]);
        if (WEXITSTATUS(ws) == 0)
            status = 0;
        else if (WEXITSTATUS(ws) != EXIT_SKIP)
            return 1;
    }
    return status;
}
