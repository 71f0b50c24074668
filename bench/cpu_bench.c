/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_bench.c - what a CPU stream, the first call and the small calls cost,
 * each against a baseline measured in the same run (a 64 B memcpy, a 64 B
 * and a 4 KiB malloc+free, pthread_create+join, a condition-variable
 * handoff between two threads), with the goals of docs/performance.md.
 *
 *   infinirt-cpu-bench [--quick] [--passes P]
 *       runs the rows below for inline and async CPU streams (one child
 *       process each, with a config of its own; P passes of both, 3 by
 *       default, alternating) and the first-call rows (fresh processes),
 *       and prints the table: each time, baselines included, the best of
 *       its passes; the two-thread speed-up their median; the thread
 *       count their greatest.
 *   infinirt-cpu-bench --rows LABEL [--quick]
 *       the rows only, as "LABEL ROW VALUE" lines, under whatever
 *       libinfinirt and INFINIRT_CONFIG the environment gives:
 *       bench/cpu_compare.sh runs it against InfiniCore's CPU runtime.
 *
 * Only calls InfiniCore's header also declares are made, so the same binary
 * runs against either library.  Every time of a pass is the best of
 * BATCHES batches (the least disturbed by other load on a shared machine),
 * in ns per operation, the rows' batches taken in turn (time_in_turn); the
 * two-thread speed-up is the median of BATCHES paired ratios, a batch
 * after each round (two_thread_batch).  The passes are separate processes,
 * seconds apart.
 * Both spread each row over time: the VM's cores go through slow phases
 * (docs/performance.md) which would otherwise catch every batch of a row
 * and not its baseline's.
 */
#define _GNU_SOURCE
#include "bench_util.h"
#include "cpu_bench_layout.h"
#include "cpu_bench_streams.h"
#include "cpu_bench_threads.h"
#include "infinirt.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#define BATCHES 7

static long g_scale = 1; /* --quick divides every batch by 10 */

#define MUST(call) BENCH_MUST("cpu-bench", call)

typedef void (*body_fn)(long n, void *ctx);

/* A row timed in turn with the others: `n` operations of body per batch,
 * and its best time per operation. */
struct timed {
    const char *row;
    int digits; /* printed after the point */
    body_fn body;
    void *ctx;
    long n;
    double best;
};

/* Every row's batches in turn, round after round, so that the BATCHES
 * batches of a row spread over the whole pass (about half a second apart)
 * rather than over the few milliseconds that timing it alone takes: the
 * VM's slow phases last from tens of milliseconds to seconds, and a row
 * timed in one stretch could find every batch inside one, its baseline
 * not (docs/performance.md, tenth session). */
static void time_in_turn(struct timed *t, int count, void (*after_round)(int b, void *ctx), void *ctx)
{
    for (int i = 0; i < count; i++) {
        t[i].n = t[i].n / g_scale > 0 ? t[i].n / g_scale : 1;
        t[i].body(t[i].n / 10 > 0 ? t[i].n / 10 : 1, t[i].ctx); /* warm up */
        t[i].best = 1e30;
    }
    for (int b = 0; b < BATCHES; b++) {
        for (int i = 0; i < count; i++) {
            double t0 = now_ns();
            t[i].body(t[i].n, t[i].ctx);
            double per = (now_ns() - t0) / (double)t[i].n;
            if (per < t[i].best)
                t[i].best = per;
        }
        if (after_round != NULL)
            after_round(b, ctx);
    }
}

/* Best time per operation of `n` operations over BATCHES batches: one row
 * timed alone. */
static double best_per_op(body_fn body, void *ctx, long n)
{
    struct timed t = {"", 0, body, ctx, n, 0};
    time_in_turn(&t, 1, NULL, NULL);
    return t.best;
}

/* ------------------------------------------------------------ baselines */

static char g_src[4096], g_dst[4096];

static void b_memcpy64(long n, void *ctx)
{
    (void)ctx;
    for (long i = 0; i < n; i++) {
        memcpy(g_dst, g_src, 64);
        __asm__ __volatile__("" : : "r"(g_dst) : "memory");
    }
}

static void b_malloc(long n, void *ctx)
{
    size_t size = *(const size_t *)ctx;
    for (long i = 0; i < n; i++) {
        void *p = malloc(size);
        __asm__ __volatile__("" : : "r"(p) : "memory");
        free(p);
    }
}

static void *nothing(void *arg)
{
    return arg;
}

static void b_pthread(long n, void *ctx)
{
    (void)ctx;
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) != 0)
            exit(1);
        pthread_join(t, NULL);
    }
}

/* One round trip between two threads through a mutex and two condition
 * variables: what a queue-and-signal stream pays per synchronising call. */
struct handoff {
    pthread_mutex_t m;
    pthread_cond_t to_peer, to_me;
    long turn; /* odd: the peer's turn */
    long stop;
};

static void *handoff_peer(void *arg)
{
    struct handoff *h = arg;
    pthread_mutex_lock(&h->m);
    for (;;) {
        while (!(h->turn & 1) && !h->stop)
            pthread_cond_wait(&h->to_peer, &h->m);
        if (h->stop)
            break;
        h->turn++;
        pthread_cond_signal(&h->to_me);
    }
    pthread_mutex_unlock(&h->m);
    return NULL;
}

static void b_handoff(long n, void *ctx)
{
    struct handoff *h = ctx;
    pthread_mutex_lock(&h->m);
    for (long i = 0; i < n; i++) {
        h->turn++;
        pthread_cond_signal(&h->to_peer);
        while (h->turn & 1)
            pthread_cond_wait(&h->to_me, &h->m);
    }
    pthread_mutex_unlock(&h->m);
}

static double handoff_ns(void)
{
    struct handoff h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, handoff_peer, &h) != 0)
        exit(1);
    double ns = best_per_op(b_handoff, &h, 20000);
    pthread_mutex_lock(&h.m);
    h.stop = 1;
    pthread_cond_signal(&h.to_peer);
    pthread_mutex_unlock(&h.m);
    pthread_join(t, NULL);
    return ns;
}

/* What a process-wide barrier costs: the price a StreamDestroy would pay
 * for handle references without atomic read-modify-writes on the caller's
 * side (hazard pointers; docs/performance.md).  With `busy`, another thread
 * of the process spins meanwhile, as a program's other threads would run.
 * The mean of one run, not the best batch: every destroy would pay it. */
static atomic_int g_spin_stop, g_spin_started;

static void *spinner(void *arg)
{
    (void)arg;
    atomic_store(&g_spin_started, 1);
    while (!atomic_load_explicit(&g_spin_stop, memory_order_relaxed))
        ;
    return NULL;
}

static double membarrier_ns(int busy)
{
#if defined(__linux__) && defined(SYS_membarrier)
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0)
        return -1;
    pthread_t t;
    atomic_store(&g_spin_stop, 0);
    atomic_store(&g_spin_started, 0);
    if (busy && pthread_create(&t, NULL, spinner, NULL) != 0)
        return -1;
    while (busy && !atomic_load(&g_spin_started))
        ;
    long n = 5000 / g_scale;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
            exit(1);
    double ns = (now_ns() - t0) / (double)n;
    if (busy) {
        atomic_store(&g_spin_stop, 1);
        pthread_join(t, NULL);
    }
    return ns;
#else
    (void)busy;
    return -1;
#endif
}

/* ------------------------------------------------------------- the API */

struct copies {
    infinirtStream_t s[4];
    int streams;
    void *dev; /* 64 B of device memory per stream, 256 B apart */
};

static void a_copy_sync(long n, void *ctx)
{
    struct copies *c = ctx;
    for (long i = 0; i < n; i += c->streams) {
        for (int k = 0; k < c->streams; k++)
            MUST(infinirtMemcpyAsync((char *)c->dev + 256 * k, g_src, 64, INFINIRT_MEMCPY_H2D, c->s[k]));
        for (int k = 0; k < c->streams; k++)
            MUST(infinirtStreamSynchronize(c->s[k]));
    }
}

struct ev {
    infinirtStream_t s;
    infinirtEvent_t e;
};

static void a_event_idle(long n, void *ctx)
{
    struct ev *v = ctx;
    for (long i = 0; i < n; i++) {
        MUST(infinirtEventRecord(v->e, v->s));
        MUST(infinirtEventSynchronize(v->e));
    }
}

static void a_event_cycle(long n, void *ctx)
{
    struct ev *v = ctx;
    for (long i = 0; i < n; i++) {
        infinirtEvent_t e;
        infinirtEventStatus_t q;
        MUST(infinirtEventCreate(&e));
        MUST(infinirtEventRecord(e, v->s));
        MUST(infinirtEventQuery(e, &q));
        MUST(infinirtEventDestroy(e));
    }
}

static void a_stream_cycle(long n, void *ctx)
{
    (void)ctx;
    for (long i = 0; i < n; i++) {
        infinirtStream_t s;
        MUST(infinirtStreamCreate(&s));
        MUST(infinirtStreamDestroy(s));
    }
}

struct copy1 {
    void *dst;
    const void *src;
    infinirtMemcpyKind_t kind;
};

static void a_memcpy(long n, void *ctx)
{
    struct copy1 *c = ctx;
    for (long i = 0; i < n; i++)
        MUST(infinirtMemcpy(c->dst, c->src, 64, c->kind));
}

static void a_malloc(long n, void *ctx)
{
    size_t size = *(const size_t *)ctx;
    for (long i = 0; i < n; i++) {
        void *p;
        MUST(infinirtMalloc(&p, size));
        MUST(infinirtFree(p));
    }
}

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

struct worker {
    int cpu;                  /* the CPU it runs on (pinned) */
    double window;            /* ns to copy for */
    pthread_barrier_t *start; /* NULL: run alone */
    long ops;                 /* copies made in the window */
    double t0, t1;            /* the timed loop's start and end (now_ns) */
};

/* Pinned to its CPU, set up (device, stream, block, a warm-up), meet the
 * other worker at `start`, then copy in chunks until `window` ns have
 * passed: only the loop is timed, alone or side by side, so set-up and
 * warm-up count in neither, and two workers side by side copy over the
 * same span whatever their speeds. */
static void *copy_worker(void *arg)
{
    struct worker *w = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((size_t)w->cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "cpu-bench: cannot run a thread on CPU %d\n", w->cpu);
        exit(1);
    }
    struct copies c = {.streams = 1};
    MUST(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    MUST(infinirtStreamCreate(&c.s[0]));
    MUST(infinirtMalloc(&c.dev, 256));
    a_copy_sync(20000 / g_scale, &c);
    if (w->start != NULL)
        pthread_barrier_wait(w->start);
    long ops = 0;
    double t0 = now_ns(), t1;
    do {
        a_copy_sync(100, &c);
        ops += 100;
    } while ((t1 = now_ns()) - t0 < w->window);
    w->ops = ops;
    w->t0 = t0;
    w->t1 = t1;
    /* Neither tears down while the other still copies. */
    if (w->start != NULL)
        pthread_barrier_wait(w->start);
    MUST(infinirtFree(c.dev));
    MUST(infinirtStreamDestroy(c.s[0]));
    return NULL;
}

static void run_workers(struct worker *w, int n)
{
    pthread_t t[2];
    for (int k = 0; k < n; k++)
        if (pthread_create(&t[k], NULL, copy_worker, &w[k]) != 0)
            exit(1);
    for (int k = 0; k < n; k++)
        pthread_join(t[k], NULL);
}

/* The physical core of CPU i (package << 32 | core id), or -1 unknown. */
static long long core_of(int i)
{
    long long v[2];
    const char *name[2] = {"physical_package_id", "core_id"};
    for (int k = 0; k < 2; k++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", i, name[k]);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            return -1;
        int ok = fscanf(f, "%lld", &v[k]) == 1;
        fclose(f);
        if (!ok)
            return -1;
    }
    return v[0] << 32 | v[1];
}

/* Two CPUs this process may run on, of different cores where the
 * topology says so (two hardware threads of one core would measure the
 * core's sharing), else the first two; false with fewer than two. */
static bool two_cpus(int cpu[2])
{
    cpu_set_t set;
    int found = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return false;
    for (int i = 0; i < CPU_SETSIZE && found < 2; i++) {
        if (!CPU_ISSET((size_t)i, &set))
            continue;
        if (found == 1 && core_of(cpu[0]) >= 0 && core_of(i) == core_of(cpu[0]))
            continue;
        cpu[found++] = i;
    }
    for (int i = 0; i < CPU_SETSIZE && found < 2; i++)
        if (CPU_ISSET((size_t)i, &set) && i != cpu[0])
            cpu[found++] = i;
    return found == 2;
}

/* What two threads, each on its own stream and its own CPU, copy side by
 * side, over what each copies alone on the same CPU: one batch of the
 * two-thread row.  A thread copies alone on the first CPU, then on the
 * second, then one on each side by side; the figure is the sum over the
 * two CPUs of (copies per ns side by side) / (copies per ns alone), 2.0
 * when neither slows the other.  The workers are pinned so that each is
 * held against its own CPU alone: the development VM's two vCPUs go
 * through phases of about twice the time, often one at a time
 * (docs/performance.md), and a measure against one thread's time -
 * whichever vCPU it got - read such a phase as the library not scaling. */
static double two_thread_batch(const int cpu[2])
{
    double window = 5e6 / (double)g_scale;
    struct worker one[2], two[2];
    pthread_barrier_t start;
    if (pthread_barrier_init(&start, NULL, 2) != 0)
        exit(1);
    for (int k = 0; k < 2; k++) {
        one[k] = (struct worker){.cpu = cpu[k], .window = window};
        two[k] = (struct worker){.cpu = cpu[k], .window = window, .start = &start};
        run_workers(&one[k], 1);
    }
    run_workers(two, 2);
    pthread_barrier_destroy(&start);
    double sum = 0;
    for (int k = 0; k < 2; k++)
        sum += ((double)two[k].ops / (two[k].t1 - two[k].t0)) / ((double)one[k].ops / (one[k].t1 - one[k].t0));
    return sum;
}

/* The two-thread row: BATCHES batches, one after each round of the timed
 * rows (time_in_turn), so that they too spread over the pass; the row is
 * their median, since noise moves a ratio either way.  A batch takes
 * about 20 ms: seven in a row could all fall in one stretch in which two
 * threads side by side each ran at half speed (the row read 1.03-1.04x;
 * docs/performance.md, tenth session). */
struct two_threads {
    bool ok; /* two CPUs found */
    int cpu[2];
    double sum[BATCHES];
};

static void two_threads_round(int b, void *ctx)
{
    struct two_threads *tt = ctx;
    if (tt->ok)
        tt->sum[b] = two_thread_batch(tt->cpu);
}

/* The median of the batches; -1 when there were not two CPUs to run on. */
static double two_threads_median(struct two_threads *tt)
{
    if (!tt->ok)
        return -1;
    qsort(tt->sum, BATCHES, sizeof tt->sum[0], bench_cmp_double);
    return tt->sum[BATCHES / 2];
}

static void copies_open(struct copies *c, int streams)
{
    c->streams = streams;
    for (int k = 0; k < streams; k++)
        MUST(infinirtStreamCreate(&c->s[k]));
    MUST(infinirtMalloc(&c->dev, 1024));
}

static void copies_close(struct copies *c)
{
    MUST(infinirtFree(c->dev));
    for (int k = 0; k < c->streams; k++)
        MUST(infinirtStreamDestroy(c->s[k]));
}

static void rows(const char *label)
{
    size_t s64 = 64, s4k = 4096;
    printf("%s pthread %.1f\n", label, best_per_op(b_pthread, NULL, 2000));
    printf("%s handoff %.1f\n", label, handoff_ns());
    printf("%s membarrier %.0f\n", label, membarrier_ns(0));
    printf("%s membarrier_busy %.0f\n", label, membarrier_ns(1));
    fflush(stdout);

    MUST(infinirtInit());
    MUST(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    struct copies c1, c4;
    copies_open(&c1, 1);
    copies_open(&c4, 4);
    struct ev v;
    MUST(infinirtStreamCreate(&v.s));
    MUST(infinirtEventCreate(&v.e));
    /* Two blocks in different segments of the cache: a small one and one
     * too big to share a segment with it. */
    void *small, *big, *host = malloc(64);
    if (host == NULL) {
        fprintf(stderr, "cpu-bench: out of memory\n");
        exit(1);
    }
    MUST(infinirtMalloc(&small, 64));
    MUST(infinirtMalloc(&big, 8 << 20));
    struct copy1 d2d = {big, small, INFINIRT_MEMCPY_D2D}, h2d = {small, host, INFINIRT_MEMCPY_H2D},
                 d2h = {host, small, INFINIRT_MEMCPY_D2H};
    memset(host, 1, 64);
    MUST(infinirtMemset(small, 0, 64));

    /* The baselines first in each round, timed in turn with the rows. */
    struct timed t[] = {
        {"memcpy64", 2, b_memcpy64, NULL, 10000000, 0},   {"malloc64", 2, b_malloc, &s64, 2000000, 0},
        {"malloc4k", 2, b_malloc, &s4k, 2000000, 0},      {"copy_sync_1", 1, a_copy_sync, &c1, 100000, 0},
        {"copy_sync_4", 1, a_copy_sync, &c4, 100000, 0},  {"event_idle", 1, a_event_idle, &v, 100000, 0},
        {"event_cycle", 1, a_event_cycle, &v, 100000, 0}, {"stream_cycle", 1, a_stream_cycle, NULL, 20000, 0},
        {"d2d64", 2, a_memcpy, &d2d, 2000000, 0},         {"h2d64", 2, a_memcpy, &h2d, 2000000, 0},
        {"d2h64", 2, a_memcpy, &d2h, 2000000, 0},         {"cmalloc64", 2, a_malloc, &s64, 2000000, 0},
        {"cmalloc4k", 2, a_malloc, &s4k, 2000000, 0},
    };
    int count = (int)(sizeof t / sizeof t[0]);
    struct two_threads tt = {.ok = false};
    tt.ok = two_cpus(tt.cpu);
    time_in_turn(t, count, two_threads_round, &tt);
    for (int i = 0; i < count; i++)
        printf("%s %s %.*f\n", label, t[i].row, t[i].digits, t[i].best);
    fflush(stdout);

    MUST(infinirtFree(big));
    MUST(infinirtFree(small));
    free(host);
    MUST(infinirtEventDestroy(v.e));
    MUST(infinirtStreamDestroy(v.s));
    copies_close(&c4);
    copies_close(&c1);

    infinirtStream_t many[1000];
    for (int i = 0; i < 1000; i++)
        MUST(infinirtStreamCreate(&many[i]));
    /* The least of a few looks 2 ms apart: a worker of the two-thread row
     * that was just joined can still be listed while it finishes exiting
     * (one pass read 2 with inline streams, where the library starts no
     * thread). */
    int threads = thread_count();
    for (int i = 0; i < 4 && threads > 1; i++) {
        nanosleep(&(struct timespec){0, 2000000}, NULL);
        int now = thread_count();
        threads = now >= 0 && now < threads ? now : threads;
    }
    printf("%s threads_1000 %d\n", label, threads);
    for (int i = 0; i < 1000; i++)
        MUST(infinirtStreamDestroy(many[i]));
    printf("%s two_threads %.2f\n", label, two_threads_median(&tt));
    fflush(stdout);
    layout_rows(label, g_scale);
    cpu_bench_stream_rows(label, g_scale);
    cpu_bench_threads_rows(label, g_scale);
}

/* The first call of a fresh process: Init, the CPU device, one allocation. */
static void first_call(void)
{
    double t0 = now_ns();
    void *p;
    MUST(infinirtInit());
    MUST(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    MUST(infinirtMalloc(&p, 64));
    double t1 = now_ns();
    MUST(infinirtFree(p));
    printf("%.0f\n", t1 - t0);
}

/* ------------------------------------------------------------- driver */

#ifndef CPU_PLUGIN
#define CPU_PLUGIN ""
#endif

/* The loader's rows (cpu_bench_loader.c). */
int cpu_bench_loader_child(int argc, char **argv);
int cpu_bench_loader_rows(const char *self, int quick);

static const char *write_config(const char *name, const char *body)
{
    static char path[8][256];
    static int used;
    char *p = path[used++ % 8];
    snprintf(p, sizeof path[0], "%s/infinirt-cpu-bench-%ld-%s.ini", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (long)getpid(), name);
    FILE *f = fopen(p, "w");
    if (f == NULL || fputs(body, f) < 0 || fclose(f) != 0) {
        perror(p);
        exit(1);
    }
    return p;
}

/* Runs this program with `args` under config `cfg`; its stdout into `out`. */
static void run_child(const char *self, const char *cfg, char *const args[], char *out, size_t size)
{
    int fd[2];
    if (pipe(fd) != 0)
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("INFINIRT_CONFIG", cfg, 1);
        execv(self, args);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    for (ssize_t r; len + 1 < size && (r = read(fd[0], out + len, size - 1 - len)) > 0;)
        len += (size_t)r;
    out[len] = '\0';
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cpu-bench: %s under %s failed\n", args[1], cfg);
        exit(1);
    }
}

static double value1(const char *out, const char *label, const char *row)
{
    char key[96];
    snprintf(key, sizeof key, "%s %s ", label, row);
    const char *p = strstr(out, key);
    return p != NULL ? strtod(p + strlen(key), NULL) : -1;
}

#define MAX_PASSES 9
static int g_passes = 3;
static double value(char (*outs)[8192], const char *label, const char *row);

/* value() for layout_table (cpu_bench_layout.c). */
struct mode_outs {
    char (*outs)[8192];
    const char *label;
};
static double mode_value(const char *row, void *ctx)
{
    const struct mode_outs *m = ctx;
    return value(m->outs, m->label, row);
}

/* A row over the passes' outputs: the least for a time (noise only adds
 * to a time); the median for the two-thread speed-up (a ratio, which noise
 * moves either way); the greatest for the thread count (its worst). */
static double value(char (*outs)[8192], const char *label, const char *row)
{
    double v[MAX_PASSES];
    int n = 0;
    for (int i = 0; i < g_passes; i++)
        if ((v[n] = value1(outs[i], label, row)) >= 0)
            n++;
    if (n == 0)
        return -1;
    qsort(v, (size_t)n, sizeof v[0], bench_cmp_double);
    if (strcmp(row, "two_threads") == 0)
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return strcmp(row, "threads_1000") == 0 ? v[n - 1] : v[0];
}

/* Median of five fresh processes' first call, in ms. */
static double first_call_ms(const char *self, const char *cfg)
{
    double v[5];
    char out[64];
    char *args[] = {(char *)self, "--first-call", NULL};
    for (int i = 0; i < 5; i++) {
        run_child(self, cfg, args, out, sizeof out);
        v[i] = strtod(out, NULL) / 1e6;
    }
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (v[j] < v[i]) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
    return v[2];
}

/* One row: the figure, its ratio to the baseline and, when goal > 0, the
 * goal (a ratio at most, or at least) and whether this run met it. */
static int g_missing; /* a row or baseline no pass printed: the run fails */

static void line(const char *what, double fig, const char *unit, double base, const char *base_name, double goal,
                 int at_least)
{
    if (fig < 0 || !(base > 0)) {
        printf("%-46s missing: no pass printed it or its baseline\n", what);
        g_missing = 1;
        return;
    }
    double ratio = fig / base;
    printf("%-46s %10.1f %-2s %8.2fx %-19s", what, fig, unit, ratio, base_name);
    if (goal > 0)
        printf(" goal %s %.2fx: %s", at_least ? ">=" : "<=", goal,
               (at_least ? ratio >= goal : ratio <= goal) ? "met" : "MISSED");
    else
        printf(" goal against InfiniCore (cpu_compare.sh)");
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: %s [--quick] [--passes P] | --rows LABEL [--quick]\n"
               "Prints the CPU stream, start-up and small-call figures against baselines\n"
               "measured in the same run (see docs/performance.md).\n",
               argv[0]);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            g_scale = 10;
        if (strcmp(argv[i], "--passes") == 0) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (end == NULL || *end != '\0' || v < 1 || v > MAX_PASSES) {
                fprintf(stderr, "cpu-bench: --passes takes a number from 1 to %d\n", MAX_PASSES);
                return 2;
            }
            g_passes = (int)v;
        }
    }
    if (argc > 1 && strncmp(argv[1], "--loader-", 9) == 0)
        return cpu_bench_loader_child(argc, argv);
    if (argc > 1 && strcmp(argv[1], "--first-call") == 0) {
        first_call();
        return 0;
    }
    if (argc > 2 && strcmp(argv[1], "--rows") == 0) {
        rows(argv[2]);
        return 0;
    }

    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    char body[2048];
    static char out_inline[MAX_PASSES][8192], out_async[MAX_PASSES][8192];
    char *quick = g_scale > 1 ? "--quick" : NULL;

    snprintf(body, sizeof body, "[loader]\nplugins = cpu\n\n[plugin.cpu]\nlibrary = %s\nstreams = inline\n",
             CPU_PLUGIN);
    const char *cfg_inline = write_config("inline", body);
    snprintf(body, sizeof body, "[loader]\nplugins = cpu\n\n[plugin.cpu]\nlibrary = %s\nstreams = async\n",
             CPU_PLUGIN);
    const char *cfg_async = write_config("async", body);
    char *args_inline[] = {self, "--rows", "inline", quick, NULL};
    char *args_async[] = {self, "--rows", "async", quick, NULL};
    for (int i = 0; i < g_passes; i++) {
        run_child(self, cfg_inline, args_inline, out_inline[i], sizeof out_inline[i]);
        run_child(self, cfg_async, args_async, out_async[i], sizeof out_async[i]);
    }

    double cpu_only = first_call_ms(self, cfg_inline), with_cl = -1;
#ifdef OPENCL_PLUGIN
    snprintf(body, sizeof body,
             "[loader]\nplugins = cpu, opencl\n\n[plugin.cpu]\nlibrary = %s\n\n[plugin.opencl]\nlibrary = %s\n",
             CPU_PLUGIN, OPENCL_PLUGIN);
    const char *cfg_cl = write_config("opencl", body);
    with_cl = first_call_ms(self, cfg_cl);
    unlink(cfg_cl);
#endif
    unlink(cfg_inline);
    unlink(cfg_async);

    char(*o)[8192] = out_inline;
    double memcpy64 = value(o, "inline", "memcpy64"), malloc64 = value(o, "inline", "malloc64");
    double malloc4k = value(o, "inline", "malloc4k"), pthread = value(o, "inline", "pthread");
    printf("%d pass%s, each a process per mode: times the best of them, the two-thread speed-up their median, the "
           "thread count their greatest\n",
           g_passes, g_passes > 1 ? "es" : "");
    printf("baselines (this run): memcpy 64 B %.2f ns, malloc+free 64 B %.2f ns / 4 KiB %.2f ns, "
           "pthread_create+join %.0f ns, condition-variable round trip %.0f ns\n\n",
           memcpy64, malloc64, malloc4k, pthread, value(o, "inline", "handoff"));
    printf("%-46s %13s %9s %-19s\n", "measure", "figure", "ratio", "against");
    for (int m = 0; m < 2; m++) {
        const char *lab = m ? "async" : "inline";
        char(*out)[8192] = m ? out_async : out_inline;
        char what[96];
        printf("-- %s streams\n", lab);
        snprintf(what, sizeof what, "64 B MemcpyAsync+StreamSynchronize, 1 stream");
        line(what, value(out, lab, "copy_sync_1"), "ns", memcpy64, "memcpy 64 B", m ? 40 : 15, 0);
        line("the same, round robin over 4 streams", value(out, lab, "copy_sync_4"), "ns", memcpy64, "memcpy 64 B",
             m ? 40 : 15, 0);
        line("EventRecord+EventSynchronize, idle stream", value(out, lab, "event_idle"), "ns", malloc64,
             "malloc+free 64 B", 20, 0);
        line("EventCreate+Record+Query+Destroy", value(out, lab, "event_cycle"), "ns", malloc64, "malloc+free 64 B",
             0, 0);
        line("StreamCreate+StreamDestroy", value(out, lab, "stream_cycle"), "ns", pthread, "pthread_create+join", 0.1,
             0);
        double threads = value(out, lab, "threads_1000");
        if (threads < 0)
            g_missing = 1;
        printf("%-46s %10.0f %-2s %9s %-19s goal <= 64: %s\n", "threads with 1000 streams", threads, "", "", "",
               threads >= 0 && threads <= 64 ? "met" : "MISSED");
        line("D2D Memcpy 64 B, two segments", value(out, lab, "d2d64"), "ns", memcpy64, "memcpy 64 B", 0, 0);
        line("H2D Memcpy 64 B", value(out, lab, "h2d64"), "ns", memcpy64, "memcpy 64 B", 0, 0);
        line("D2H Memcpy 64 B", value(out, lab, "d2h64"), "ns", memcpy64, "memcpy 64 B", 0, 0);
        line("cached Malloc+Free 64 B", value(out, lab, "cmalloc64"), "ns", malloc64, "malloc+free 64 B", 0, 0);
        line("cached Malloc+Free 4 KiB", value(out, lab, "cmalloc4k"), "ns", malloc4k, "malloc+free 4 KiB", 2, 0);
        line("StreamDestroy, 20000 live streams (CPU time)", value(out, lab, "destroy_20000"), "ns",
             value(out, lab, "destroy_1000"), "1000 live streams", 2, 0);
        line("64 B copy+sync, turns over 1000 (CPU time)", value(out, lab, "rr_1000"), "ns", value(out, lab, "rr_1"),
             "one stream", 1.3, 0);
        double two = value(out, lab, "two_threads");
        if (two >= 0)
            line("two threads, each its own stream and CPU", two, "x", 1, "each CPU alone", 1.8, 1);
        else
            printf("%-46s not measured: no two CPUs to run on\n", "two threads, each its own stream and CPU");
        double t1 = value(out, lab, "null_malloc_1t");
        line("MallocAsync+FreeAsync 64 B, NULL stream", t1, "ns", malloc64, "malloc+free 64 B", 0, 0);
        line("the same, 2 threads at once (thread CPU)", value(out, lab, "null_malloc_2t"), "ns", t1, "1 thread", 1.3,
             0);
        line("the same, 4 threads at once (thread CPU)", value(out, lab, "null_malloc_4t"), "ns", t1, "1 thread", 1.5,
             0);
        /* glibc's through the same harness: what the machine itself charges
         * for threads side by side (no goal of ours). */
        double g1 = value(out, lab, "libc_malloc_1t");
        for (int k = 2; k <= 4; k += 2) {
            char row[32];
            snprintf(row, sizeof row, "libc_malloc_%dt", k);
            snprintf(what, sizeof what, "glibc malloc+free 64 B, %d threads at once", k);
            double g = value(out, lab, row);
            if (g < 0 || !(g1 > 0))
                line(what, g, "ns", g1, "1 thread", 0, 0); /* says it is missing */
            else
                printf("%-46s %10.1f %-2s %8.2fx %-19s the machine's own, no goal\n", what, g, "ns", g / g1,
                       "1 thread");
        }
        struct mode_outs mo = {out, lab};
        g_missing |= layout_table(lab, out[0], mode_value, &mo);
    }
    double mb = value(out_inline, "inline", "membarrier"), mb_busy = value(out_inline, "inline", "membarrier_busy");
    if (mb >= 0)
        printf("-- a process-wide barrier (what RMW-free handle references would cost each destroy): "
               "membarrier %.1f us, %.1f us with another thread running\n",
               mb / 1e3, mb_busy / 1e3);
    printf("-- start-up (median of 5 fresh processes: Init, SetDevice(CPU), Malloc)\n");
    printf("%-46s %10.2f ms\n", "first CPU call, cpu plugin only", cpu_only);
    if (with_cl >= 0)
        printf("%-46s %10.2f ms %8.2fx %-19s goal <= 1.50x or <= 2 ms: %s\n", "first CPU call, cpu and opencl",
               with_cl, with_cl / cpu_only, "cpu only", with_cl <= 1.5 * cpu_only || with_cl <= 2 ? "met" : "MISSED");
    g_missing |= cpu_bench_loader_rows(self, g_scale > 1);
    if (g_missing)
        fprintf(stderr, "cpu-bench: rows missing from every pass (above)\n");
    return g_missing;
}
