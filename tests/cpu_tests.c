/*
 * cpu_tests.c - the CPU backend's own behaviour, through the public API and
 * its native stream table (infinirt_cpu.h): the two stream modes, blocking
 * streams ordered with the default stream (async mode), work queued
 * natively on a stream handle, and the allocator's respect for that work.
 * CPU_PLUGIN comes from CMake.
 */
#define _GNU_SOURCE
#include "common.h"
#include "infinirt_cpu.h"
#include "infinirt_plugin.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static void cpu_config(const char *streams)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 2\n%s%s%s", CPU_PLUGIN,
             streams ? "streams = " : "", streams ? streams : "", streams ? "\n" : "");
    tc_use_config(cfg);
}

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void set_flag(void *flag)
{
    atomic_store((atomic_int *)flag, 1);
}

static void sleep_20ms(void *unused)
{
    (void)unused;
    tc_sleep_ms(20);
}

/* ------------------------------------------------------------ inline mode */

/* The default mode: every "asynchronous" operation is done when its call
 * returns, on the caller's thread, with no worker thread anywhere. */
int test_cpu_inline_done_on_return(void)
{
    cpu_config(NULL); /* inline is the default */
    CHECK(tc_use_device(0));
    int threads = thread_count();
    ASSERT_GT(threads, 0);
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    for (int k = 0; k < 2; k++) {
        infinirtStream_t on = k == 0 ? s : NULL; /* a created stream, the NULL stream */
        atomic_int flag = 0;
        ASSERT_OK(infinirtLaunchHostFunc(on, set_flag, &flag));
        ASSERT_EQ(atomic_load(&flag), 1);

        size_t n = 1 * MiB;
        unsigned char *a = malloc(n), *b = calloc(1, n);
        ASSERT(a && b);
        tc_pattern(a, n, 21u + (unsigned)k);
        void *d;
        ASSERT_OK(infinirtMalloc(&d, n));
        ASSERT_OK(infinirtMemcpyAsync(d, a, n, INFINIRT_MEMCPY_H2D, on));
        ASSERT_MEM_EQ(d, a, n); /* CPU device memory is host memory */
        ASSERT_OK(infinirtMemsetAsync(d, 0x3c, 64, on));
        ASSERT_EQ(((unsigned char *)d)[63], 0x3c);
        ASSERT_OK(infinirtMemcpyAsync(b, d, n, INFINIRT_MEMCPY_D2H, on));
        ASSERT_EQ(b[0], 0x3c);
        ASSERT_MEM_EQ(b + 64, a + 64, n - 64);
        ASSERT_OK(infinirtFree(d));
        free(a);
        free(b);

        /* A record completes at once, with its time: the elapsed time
         * covers the host function queued between the two records. */
        infinirtEvent_t e0, e1;
        infinirtEventStatus_t st;
        ASSERT_OK(infinirtEventCreate(&e0));
        ASSERT_OK(infinirtEventCreate(&e1));
        ASSERT_OK(infinirtEventRecord(e0, on));
        ASSERT_OK(infinirtEventQuery(e0, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        ASSERT_OK(infinirtLaunchHostFunc(on, sleep_20ms, NULL));
        ASSERT_OK(infinirtEventRecord(e1, on));
        ASSERT_OK(infinirtEventQuery(e1, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        float ms = -1;
        ASSERT_OK(infinirtEventElapsedTime(&ms, e0, e1));
        ASSERT(ms >= 15.0f && ms < 60000.0f);
        ASSERT_OK(infinirtStreamWaitEvent(s, e1));
        ASSERT_OK(infinirtEventDestroy(e0));
        ASSERT_OK(infinirtEventDestroy(e1));
    }
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_EQ(thread_count(), threads); /* no worker thread was started */
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* streams = anything else: a warning with file:line, and the default
 * (inline) is used; the plugin serves on (as for its other keys). */
int test_cpu_bad_streams_key(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nstreams = sometimes\n", CPU_PLUGIN);
    char log[600];
    snprintf(log, sizeof log, "%s/log.txt", tc_temp_dir());
    tc_setenv("INFINIRT_LOG_FILE", log);
    tc_use_config(cfg);
    int count = -1;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &count));
    ASSERT_EQ(count, 1);
    char want[PATH_MAX + 128], resolved[PATH_MAX];
    ASSERT(realpath(getenv("INFINIRT_CONFIG"), resolved) != NULL);
    snprintf(want, sizeof want, "%s:3: [plugin.cpu] streams = 'sometimes': not inline or async; using inline",
             resolved);
    ASSERT_STR_CONTAINS(tc_read_file(log), want);
    return TEST_OK;
}

/* ------------------------------------------------ blocking streams (async) */

/* Each host function writes its turn: the order work really ran in. */
typedef struct {
    atomic_int next;
    atomic_int at[8];
} order_log;

typedef struct {
    order_log *log;
    int slot;
} order_arg;

static void log_turn(void *arg)
{
    order_arg *a = arg;
    atomic_store(&a->log->at[a->slot], atomic_fetch_add(&a->log->next, 1) + 1);
}

typedef struct {
    void *dst;
    const void *src;
    size_t n;
    order_log *log;
    int slot;
    infiniStatus_t st;
} sync_copy_arg;

static void *sync_copy(void *arg)
{
    sync_copy_arg *c = arg;
    c->st = infinirtMemcpy(c->dst, c->src, c->n, INFINIRT_MEMCPY_H2D);
    atomic_store(&c->log->at[c->slot], atomic_fetch_add(&c->log->next, 1) + 1);
    return NULL;
}

/* Wait (up to 5 s) for an event without risking a hang. */
static int completes_soon(infinirtEvent_t e)
{
    infinirtEventStatus_t st = INFINIRT_EVENT_NOT_READY;
    for (int i = 0; i < 5000 && st != INFINIRT_EVENT_COMPLETE; i++) {
        if (infinirtEventQuery(e, &st) != INFINI_STATUS_SUCCESS)
            return 0;
        if (st != INFINIRT_EVENT_COMPLETE)
            tc_sleep_ms(1);
    }
    return st == INFINIRT_EVENT_COMPLETE;
}

static void *watchdog(void *gate)
{
    tc_gate *g = gate;
    for (int i = 0; i < 2000 && !__atomic_load_n(&g->open, __ATOMIC_SEQ_CST); i++)
        tc_sleep_ms(1);
    tc_gate_open(g);
    return NULL;
}

/* As with CUDA's legacy default stream: NULL-stream work and a synchronous
 * Memcpy run after the work already queued on a blocking stream, and work
 * queued on the blocking stream afterwards runs after the NULL-stream work;
 * a non-blocking stream waits for none of it and holds none of it up. */
int test_cpu_blocking_streams(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    infinirtStream_t b, nb;
    ASSERT_OK(infinirtStreamCreate(&b));
    ASSERT_OK(infinirtStreamCreateWithFlags(&nb, INFINIRT_STREAM_NON_BLOCKING));
    ASSERT_STATUS(infinirtStreamCreateWithFlags(&nb, 0x10), INFINI_STATUS_BAD_PARAM);
    infinirtEvent_t nb_done, null_done;
    ASSERT_OK(infinirtEventCreate(&nb_done));
    ASSERT_OK(infinirtEventCreate(&null_done));
    enum { B1, NUL, COPY, B2, NB };
    static order_log log;
    static order_arg args[5];
    for (int i = 0; i < 5; i++)
        args[i] = (order_arg){&log, i};
    size_t n = 4096;
    unsigned char src[4096];
    tc_pattern(src, n, 5);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, n));

    static tc_gate gate;
    CHECK(tc_hold_stream(b, &gate));
    ASSERT_OK(infinirtLaunchHostFunc(b, log_turn, &args[B1]));
    /* Slow NULL-stream work: B2 must still wait for it. */
    ASSERT_OK(infinirtLaunchHostFunc(NULL, sleep_20ms, NULL));
    ASSERT_OK(infinirtLaunchHostFunc(NULL, log_turn, &args[NUL]));
    ASSERT_OK(infinirtEventRecord(null_done, NULL));
    sync_copy_arg c = {d, src, n, &log, COPY, INFINI_STATUS_INTERNAL_ERROR};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, sync_copy, &c), 0);
    ASSERT_OK(infinirtLaunchHostFunc(b, log_turn, &args[B2]));
    /* The non-blocking stream runs while b is held. */
    ASSERT_OK(infinirtLaunchHostFunc(nb, log_turn, &args[NB]));
    ASSERT_OK(infinirtEventRecord(nb_done, nb));
    int nb_ran = completes_soon(nb_done);
    tc_sleep_ms(30); /* time for a wrong order to show */
    int copy_early = atomic_load(&log.at[COPY]) != 0, null_early = atomic_load(&log.at[NUL]) != 0;
    infinirtEventStatus_t st;
    ASSERT_OK(infinirtEventQuery(null_done, &st));
    tc_gate_open(&gate);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(c.st);
    ASSERT(nb_ran);
    ASSERT_EQ(copy_early, 0);
    ASSERT_EQ(null_early, 0);
    ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_MEM_EQ(d, src, n);
    ASSERT_EQ(atomic_load(&log.at[NB]), 1);
    ASSERT_EQ(atomic_load(&log.at[B1]), 2);
    ASSERT_EQ(atomic_load(&log.at[NUL]), 3);
    ASSERT_GT(atomic_load(&log.at[COPY]), 3); /* after the NULL-stream work it was issued after */
    ASSERT_GT(atomic_load(&log.at[B2]), 3);   /* after the NULL-stream work queued before it */

    /* A held non-blocking stream holds up neither the NULL stream nor a
     * synchronous copy or fill (a watchdog opens the gate after 2 s, so a
     * wrong wait shows as slowness, not a hang). */
    static tc_gate gate2;
    CHECK(tc_hold_stream(nb, &gate2));
    pthread_t dog;
    ASSERT_EQ(pthread_create(&dog, NULL, watchdog, &gate2), 0);
    atomic_int flag = 0;
    ASSERT_OK(infinirtLaunchHostFunc(NULL, set_flag, &flag));
    ASSERT_OK(infinirtEventRecord(null_done, NULL));
    int null_ran = completes_soon(null_done);
    ASSERT_OK(infinirtMemset(d, 0x77, n));
    ASSERT_OK(infinirtMemcpy(d, src, 16, INFINIRT_MEMCPY_H2D));
    int held = !__atomic_load_n(&gate2.open, __ATOMIC_SEQ_CST);
    tc_gate_open(&gate2);
    ASSERT_EQ(pthread_join(dog, NULL), 0);
    ASSERT(held);
    ASSERT(null_ran);
    ASSERT_EQ(atomic_load(&flag), 1);
    ASSERT_EQ(((unsigned char *)d)[n - 1], 0x77);

    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtEventDestroy(nb_done));
    ASSERT_OK(infinirtEventDestroy(null_done));
    ASSERT_OK(infinirtStreamDestroy(b));
    ASSERT_OK(infinirtStreamDestroy(nb));
    return TEST_OK;
}

/* ------------------------------------------------------------ native path */

typedef struct {
    unsigned char *d;
    size_t n;
    int saw_first; /* the copy queued before this work had landed */
} native_arg;

static void native_work(void *arg)
{
    native_arg *a = arg;
    a->saw_first = a->d[0] == 0x11 && a->d[a->n - 1] == 0x11;
    memset(a->d, 0x22, a->n);
}

/* Work queued through the stream handle's own table runs in stream order
 * with infinirt's copies on the same stream. */
static int native_enqueue_case(const char *mode, int inline_mode)
{
    cpu_config(mode);
    CHECK(tc_use_device(0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    void *native = NULL;
    ASSERT_OK(infinirtStreamGetNativeHandle(s, &native));
    ASSERT_PTR_EQ(native, s); /* the handle is the plugin's stream object */
    const infinirtCpuStreamOps *ops = infinirtCpuStreamGetOps(s);
    ASSERT(ops != NULL);
    ASSERT_GE(ops->struct_size, sizeof(infinirtCpuStreamOps));
    ASSERT(INFINIRT_CPU_STREAM_OPS_HAS(ops, synchronize));
    ASSERT_EQ((ops->flags & INFINIRT_CPU_STREAM_INLINE) != 0, inline_mode);
    ASSERT_EQ(ops->enqueue(s, NULL, NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_EQ(ops->enqueue(NULL, set_flag, NULL), INFINI_STATUS_NULL_POINTER);

    size_t n = 2 * MiB;
    unsigned char *ones = malloc(n), *back = calloc(1, n);
    ASSERT(ones && back);
    memset(ones, 0x11, n);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, n));
    ASSERT_OK(infinirtMemset(d, 0, n));
    static tc_gate gate;
    if (!inline_mode)
        CHECK(tc_hold_stream(s, &gate)); /* everything below queues behind it */
    native_arg a = {d, n, 0};
    ASSERT_OK(infinirtMemcpyAsync(d, ones, n, INFINIRT_MEMCPY_H2D, s));
    ASSERT_EQ(ops->enqueue(s, native_work, &a), INFINI_STATUS_SUCCESS);
    ASSERT_OK(infinirtMemcpyAsync(back, d, n, INFINIRT_MEMCPY_D2H, s));
    int idle = -1;
    ASSERT_EQ(ops->query(s, &idle), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(idle, inline_mode); /* inline: done already; async: held */
    if (!inline_mode)
        tc_gate_open(&gate);
    ASSERT_EQ(ops->synchronize(s), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(ops->query(s, &idle), INFINI_STATUS_SUCCESS);
    ASSERT_EQ(idle, 1);
    ASSERT_EQ(a.saw_first, 1);
    for (size_t i = 0; i < n; i += 4093)
        ASSERT_EQ(back[i], 0x22);

    /* Native work from another thread's view: queued natively, waited for
     * through infinirt. */
    atomic_int flag = 0;
    ASSERT_EQ(ops->enqueue(s, set_flag, &flag), INFINI_STATUS_SUCCESS);
    if (inline_mode)
        ASSERT_EQ(atomic_load(&flag), 1); /* done before enqueue returned */
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_EQ(atomic_load(&flag), 1);
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtStreamDestroy(s));
    free(ones);
    free(back);
    return TEST_OK;
}

int test_cpu_native_enqueue_inline(void)
{
    return native_enqueue_case(NULL, 1);
}

int test_cpu_native_enqueue_async(void)
{
    return native_enqueue_case("async", 0);
}

typedef struct {
    tc_gate *gate;
    unsigned char *p;
    size_t n;
} late_write_arg;

static void late_write(void *arg)
{
    late_write_arg *a = arg;
    tc_gate_wait_fn(a->gate);
    memset(a->p, 0xAA, a->n);
}

/* Work queued natively is invisible to the loader's submission counts: a
 * block freed behind it (Free, or FreeAsync on that stream) must still not
 * be handed to anyone before it completes.  The plugin's stream_query tells
 * the loader the stream is busy. */
int test_cpu_native_work_free(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    for (int k = 0; k < 2; k++) {
        infinirtStream_t s, other;
        ASSERT_OK(infinirtStreamCreateWithFlags(&s, INFINIRT_STREAM_NON_BLOCKING));
        ASSERT_OK(infinirtStreamCreateWithFlags(&other, INFINIRT_STREAM_NON_BLOCKING));
        const size_t n = 1 * MiB;
        void *p;
        ASSERT_OK(infinirtMalloc(&p, n));
        ASSERT_OK(infinirtDeviceSynchronize()); /* the loader saw everything idle */
        static tc_gate gates[2];
        late_write_arg a = {&gates[k], p, n};
        ASSERT_EQ(infinirtCpuStreamGetOps(s)->enqueue(s, late_write, &a), INFINI_STATUS_SUCCESS);
        if (k == 0)
            ASSERT_OK(infinirtFree(p));
        else
            ASSERT_OK(infinirtFreeAsync(p, s));
        void *q;
        ASSERT_OK(infinirtMallocAsync(&q, n, other));
        unsigned char *want = malloc(n), *got = malloc(n);
        ASSERT(want && got);
        tc_pattern(want, n, 33u + (unsigned)k);
        ASSERT_OK(infinirtMemcpyAsync(q, want, n, INFINIRT_MEMCPY_H2D, other));
        ASSERT_OK(infinirtStreamSynchronize(other));
        tc_gate_open(&gates[k]);
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtMemcpy(got, q, n, INFINIRT_MEMCPY_D2H));
        if (memcmp(got, want, n) != 0)
            TEST_FAILED_("block %p (freed %p with native work on it queued) was overwritten by that work%s", q, p,
                         q == p ? ": handed out again too early" : "");
        ASSERT_OK(infinirtFreeAsync(q, other));
        ASSERT_OK(infinirtStreamDestroy(s));
        ASSERT_OK(infinirtStreamDestroy(other));
        free(want);
        free(got);
    }
    return TEST_OK;
}

/* ------------------------------------------------ the worker pool (async) */

/* Whether the host function holding g started within 10 s. */
static int gate_reached(tc_gate *g)
{
    for (int ms = 0; ms < 10000 && !__atomic_load_n(&g->reached, __ATOMIC_SEQ_CST); ms++)
        tc_sleep_ms(1);
    return __atomic_load_n(&g->reached, __ATOMIC_SEQ_CST) == 1;
}

static void cpu_pool_config(const char *extra)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 2\nstreams = async\n%s", CPU_PLUGIN, extra);
    tc_use_config(cfg);
}

/* The CPU plugin's worker threads (named infinirt-cpu), so that threads a
 * sanitizer's runtime starts are not counted. */
static int worker_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "re");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) != NULL && strncmp(comm, "infinirt-cpu", 12) == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Poll until the stream is idle, for at most ms: 0 when it did not get
 * there (a test that fails rather than hangs). */
static int stream_idle(infinirtStream_t s)
{
    int idle = 0;
    return infinirtCpuStreamGetOps(s)->query(s, &idle) == INFINI_STATUS_SUCCESS && idle;
}

static int wait_idle(infinirtStream_t s, int ms)
{
    for (int waited = 0; waited < ms; waited++) {
        if (stream_idle(s))
            return 1;
        tc_sleep_ms(1);
    }
    return stream_idle(s);
}

typedef struct {
    atomic_int n;
    int at[1000];
} seq_log;

typedef struct {
    seq_log *log;
    int i;
} seq_arg;

static void note_seq(void *arg)
{
    seq_arg *a = arg;
    a->log->at[atomic_fetch_add(&a->log->n, 1)] = a->i;
}

/* Streams are objects, not threads: creating 1000 starts none, and work on
 * all 1000 runs on at most `workers` threads (counted by name, and in all,
 * with room for threads a sanitizer's runtime starts).  A stream held by a gate
 * takes 1000 commands (its ring grows while full) and runs them in order. */
int test_cpu_pool_bounded_threads(void)
{
    cpu_pool_config("workers = 3\n");
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtInit());
    int base = worker_count(), all = thread_count();
    ASSERT_EQ(base, 0);
    enum { N = 1000 };
    static infinirtStream_t s[N];
    for (int i = 0; i < N; i++)
        ASSERT_OK(infinirtStreamCreate(&s[i]));
    ASSERT_EQ(worker_count(), base);    /* no thread per stream */
    ASSERT_LE(thread_count() - all, 2); /* (a sanitizer's runtime may start one) */
    void *d;
    ASSERT_OK(infinirtMalloc(&d, 64 * N));
    static unsigned char host[64 * N];
    tc_pattern(host, sizeof host, 5u);
    for (int i = 0; i < N; i++)
        ASSERT_OK(infinirtMemcpyAsync((char *)d + 64 * i, host + 64 * i, 64, INFINIRT_MEMCPY_H2D, s[i]));
    int peak = worker_count();
    for (int i = 0; i < N; i++) {
        ASSERT_OK(infinirtStreamSynchronize(s[i]));
        int t = worker_count();
        peak = t > peak ? t : peak;
    }
    ASSERT_MEM_EQ(d, host, sizeof host);
    ASSERT_LE(peak - base, 3);
    ASSERT_LE(thread_count() - all, 3 + 2);

    static tc_gate gate;
    CHECK(tc_hold_stream(s[0], &gate));
    static seq_log log;
    static seq_arg args[N];
    for (int i = 0; i < N; i++) {
        args[i] = (seq_arg){&log, i};
        ASSERT_OK(infinirtLaunchHostFunc(s[0], note_seq, &args[i]));
    }
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(s[0]));
    ASSERT_EQ(atomic_load(&log.n), N);
    for (int i = 0; i < N; i++)
        ASSERT_EQ(log.at[i], i);
    ASSERT_LE(worker_count() - base, 3);
    for (int i = 0; i < N; i++)
        ASSERT_OK(infinirtStreamDestroy(s[i]));
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

/* More streams blocked in host functions than there are workers: an
 * unrelated stream still completes (the pool grows past `workers`, up to
 * `max_workers`), and no more than max_workers threads ever run. */
int test_cpu_pool_grows_past_blocked(void)
{
    cpu_pool_config("workers = 2\nmax_workers = 8\n");
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtInit());
    int base = worker_count();
    ASSERT_EQ(base, 0);
    enum { HELD = 5 };
    static infinirtStream_t held[HELD];
    static tc_gate gates[HELD];
    for (int i = 0; i < HELD; i++) {
        ASSERT_OK(infinirtStreamCreateWithFlags(&held[i], INFINIRT_STREAM_NON_BLOCKING));
        CHECK(tc_hold_stream(held[i], &gates[i]));
    }
    for (int i = 0; i < HELD; i++) /* each gate is reached: none waits for a worker */
        ASSERT(gate_reached(&gates[i]));
    infinirtStream_t free_one;
    ASSERT_OK(infinirtStreamCreateWithFlags(&free_one, INFINIRT_STREAM_NON_BLOCKING));
    atomic_int flag = 0;
    ASSERT_OK(infinirtLaunchHostFunc(free_one, set_flag, &flag));
    if (!wait_idle(free_one, 10000))
        TEST_FAILED_("a stream was not run within 10 s while %d streams sat in host functions (workers = 2)", HELD);
    ASSERT_EQ(atomic_load(&flag), 1);
    ASSERT_LE(worker_count() - base, 8);
    for (int i = 0; i < HELD; i++)
        tc_gate_open(&gates[i]);
    for (int i = 0; i < HELD; i++) {
        ASSERT_OK(infinirtStreamSynchronize(held[i]));
        ASSERT_OK(infinirtStreamDestroy(held[i]));
    }
    ASSERT_OK(infinirtStreamDestroy(free_one));
    return TEST_OK;
}

/* The first work of a process starts one worker, not two: the thread
 * started for it is counted as on its way while it starts (a second one
 * would be idle churn, and a thread starting while the process forks
 * leaves a sanitizer's allocator locked in the child). */
int test_cpu_pool_first_work_one_thread(void)
{
    cpu_pool_config("workers = 4\n");
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtInit());
    ASSERT_EQ(worker_count(), 0);
    infinirtStream_t s;
    static tc_gate g; /* static: the runner may open it after we return */
    ASSERT_OK(infinirtStreamCreate(&s));
    CHECK(tc_hold_stream(s, &g));
    ASSERT(gate_reached(&g));
    tc_sleep_ms(20); /* a second thread, if one was started, is listed by now */
    ASSERT_EQ(worker_count(), 1);
    tc_gate_open(&g);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* At max_workers, a stream waits until a host function returns (the
 * documented limit), and runs then. */
int test_cpu_pool_limit_waits(void)
{
    cpu_pool_config("workers = 1\nmax_workers = 2\n");
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtInit());
    int base = worker_count();
    ASSERT_EQ(base, 0);
    static infinirtStream_t held[2];
    static tc_gate gates[2];
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(infinirtStreamCreateWithFlags(&held[i], INFINIRT_STREAM_NON_BLOCKING));
        CHECK(tc_hold_stream(held[i], &gates[i]));
        ASSERT(gate_reached(&gates[i]));
    }
    infinirtStream_t late;
    ASSERT_OK(infinirtStreamCreateWithFlags(&late, INFINIRT_STREAM_NON_BLOCKING));
    atomic_int flag = 0;
    ASSERT_OK(infinirtLaunchHostFunc(late, set_flag, &flag));
    tc_sleep_ms(100);
    ASSERT_EQ(atomic_load(&flag), 0); /* both workers are held */
    ASSERT_EQ(stream_idle(late), 0);
    ASSERT_LE(worker_count() - base, 2);
    tc_gate_open(&gates[0]);
    if (!wait_idle(late, 10000))
        TEST_FAILED_("%s", "a stream did not run within 10 s of a host function returning at max_workers");
    ASSERT_EQ(atomic_load(&flag), 1);
    tc_gate_open(&gates[1]);
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(infinirtStreamSynchronize(held[i]));
        ASSERT_OK(infinirtStreamDestroy(held[i]));
    }
    ASSERT_OK(infinirtStreamDestroy(late));
    return TEST_OK;
}

/* A record on a stream with nothing pending completes on the caller's
 * thread: the event is complete when the call returns, and no worker
 * thread was needed for it. */
int test_cpu_idle_record_on_caller(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtInit());
    int base = worker_count();
    ASSERT_EQ(base, 0);
    infinirtStream_t s;
    infinirtEvent_t e0, e1;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&e0));
    ASSERT_OK(infinirtEventCreate(&e1));
    for (int k = 0; k < 3; k++) {
        infinirtEventStatus_t st = INFINIRT_EVENT_NOT_READY;
        ASSERT_OK(infinirtEventRecord(e0, k < 2 ? s : NULL));
        ASSERT_OK(infinirtEventQuery(e0, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        ASSERT_OK(infinirtEventSynchronize(e0));
        ASSERT_OK(infinirtStreamSynchronize(s));
    }
    ASSERT_EQ(worker_count(), base); /* nothing was handed to a worker */
    ASSERT_OK(infinirtEventRecord(e1, s));
    float ms = -1;
    ASSERT_OK(infinirtEventElapsedTime(&ms, e0, e1));
    ASSERT(ms >= 0.0f && ms < 60000.0f);
    ASSERT_OK(infinirtEventDestroy(e0));
    ASSERT_OK(infinirtEventDestroy(e1));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* Async mode: a small copy or fill on a stream with nothing pending is
 * done on the caller's thread (done when the call returns, no worker); a
 * large one, or one behind pending work, goes to a worker, in order. */
int test_cpu_idle_small_copy_on_caller(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtInit());
    ASSERT_EQ(worker_count(), 0);
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    enum { BIG = 1 << 20 };
    unsigned char *src = NULL, *back = malloc(BIG);
    void *d;
    ASSERT(back != NULL);
    ASSERT_OK(infinirtMallocHost((void **)&src, BIG));
    ASSERT_OK(infinirtMalloc(&d, BIG));
    tc_pattern(src, BIG, 7);
    ASSERT_OK(infinirtMemcpyAsync(d, src, 64, INFINIRT_MEMCPY_H2D, s));
    ASSERT_MEM_EQ(d, src, 64); /* done at return: CPU device memory is host memory */
    ASSERT_OK(infinirtMemsetAsync((char *)d + 64, 0xAB, 64, s));
    ASSERT_EQ(((unsigned char *)d)[127], 0xAB);
    ASSERT_EQ(worker_count(), 0);

    /* Behind a held host function, a small copy waits its turn. */
    static tc_gate g; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(s, &g));
    ASSERT_OK(infinirtMemsetAsync(d, 0, 64, s));
    ASSERT_EQ(((unsigned char *)d)[0], src[0]); /* not run yet */
    tc_gate_open(&g);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_EQ(((unsigned char *)d)[0], 0);

    /* A large copy goes to a worker, and completes by the synchronize. */
    ASSERT_OK(infinirtMemcpyAsync(d, src, BIG, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtMemcpy(back, d, BIG, INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(back, src, BIG);
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFreeHost(src));
    ASSERT_OK(infinirtStreamDestroy(s));
    free(back);
    return TEST_OK;
}

/* The plugin report's message for the cpu plugin, or NULL. */
static int cpu_plugin_info(infinirtPluginInfo_t *pi)
{
    int n = 0;
    if (infinirtGetPluginCount(&n) != INFINI_STATUS_SUCCESS)
        return 0;
    for (int i = 0; i < n; i++)
        if (infinirtGetPluginInfo(i, pi) == INFINI_STATUS_SUCCESS && strcmp(pi->name, "cpu") == 0)
            return 1;
    return 0;
}

/* workers and max_workers are validated like the other keys: a bad value
 * fails the plugin's init with the reason.  One process per config (the
 * loader reads its config once). */
int test_cpu_bad_workers_key(void)
{
    /* A bad value is a warning with file:line, and the backend serves on
     * with the default (the config policy of every section). */
    static const char *const bad[][2] = {
        {"workers = 0\n", ":4: [plugin.cpu] workers = '0': not a number from 1 to 1024; using the default"},
        {"workers = many\n", ":4: [plugin.cpu] workers = 'many': not a number from 1 to 1024; using the default"},
        {"max_workers = 2000\n",
         ":4: [plugin.cpu] max_workers = '2000': not a number from 1 to 1024; using the default"},
        {"workers = 8\nmax_workers = 4\n", ":5: [plugin.cpu] max_workers = '4': less than workers = 8; using 8"},
        {"workers = 4\nmax_workers = 4\n", NULL}, /* accepted, no warning */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fflush(NULL);
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
            char cfg[1024], log[600];
            snprintf(log, sizeof log, "%s/workers-%zu.log", tc_temp_dir(), k);
            tc_setenv("INFINIRT_LOG_FILE", log);
            snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nstreams = async\n%s", CPU_PLUGIN, bad[k][0]);
            tc_use_config(cfg);
            infinirtPluginInfo_t pi;
            int count = -1;
            infinirtGetDeviceCount(INFINI_DEVICE_CPU, &count);
            if (!cpu_plugin_info(&pi))
                _exit(2);
            if (pi.status != INFINIRT_PLUGIN_LOADED || count != 1)
                _exit(3);
            const char *text = tc_read_file(log);
            text = text != NULL ? text : "";
            if (bad[k][1] == NULL ? strstr(text, "[plugin.cpu]") != NULL : strstr(text, bad[k][1]) == NULL) {
                fprintf(stderr, "config '%s': log '%s'\n", bad[k][0], text);
                _exit(4);
            }
            _exit(0);
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            TEST_FAILED_("config case %zu ('%s') gave exit status %d", k, bad[k][0], status);
    }
    return TEST_OK;
}

/* ------------------------------------- infinirt called from a host function */

typedef struct {
    infinirtStream_t s;
    infinirtEvent_t e;
    void *d;
    unsigned char host[64];
    infiniStatus_t stream_sync, event_sync, device_sync, memcpy_sync, memset_sync, copy_async;
    atomic_int done;
} reentry_arg;

/* Calls infinirt, as a host function must not: each call that waits is
 * refused (it would wait for this very function, in async mode); queueing
 * more work is allowed. */
static void call_infinirt(void *arg)
{
    reentry_arg *a = arg;
    a->stream_sync = infinirtStreamSynchronize(a->s);
    a->event_sync = infinirtEventSynchronize(a->e);
    a->device_sync = infinirtDeviceSynchronize();
    a->memcpy_sync = infinirtMemcpy(a->d, a->host, 64, INFINIRT_MEMCPY_H2D);
    a->memset_sync = infinirtMemset(a->d, 0, 64);
    a->copy_async = infinirtMemcpyAsync(a->d, a->host, 64, INFINIRT_MEMCPY_H2D, a->s);
    atomic_store(&a->done, 1);
}

static int host_fn_reentry_case(const char *mode)
{
    cpu_config(mode);
    CHECK(tc_use_device(0));
    static reentry_arg a;
    memset(a.host, 0x5a, sizeof a.host);
    ASSERT_OK(infinirtStreamCreate(&a.s));
    ASSERT_OK(infinirtEventCreate(&a.e));
    ASSERT_OK(infinirtMalloc(&a.d, 64));
    ASSERT_OK(infinirtMemset(a.d, 0, 64));
    ASSERT_OK(infinirtEventRecord(a.e, a.s));
    ASSERT_OK(infinirtLaunchHostFunc(a.s, call_infinirt, &a));
    ASSERT_OK(infinirtEventRecord(a.e, a.s)); /* behind the host function (async) */
    for (int ms = 0; ms < 10000 && !atomic_load(&a.done); ms++)
        tc_sleep_ms(1);
    if (!atomic_load(&a.done))
        TEST_FAILED_("%s", "a host function calling infinirt did not return within 10 s (a hang)");
    ASSERT_EQ(a.stream_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.event_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.device_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.memcpy_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.memset_sync, INFINI_STATUS_INVALID_STATE);
    ASSERT_EQ(a.copy_async, INFINI_STATUS_SUCCESS);
    ASSERT_OK(infinirtStreamSynchronize(a.s));
    ASSERT_OK(infinirtEventSynchronize(a.e));
    ASSERT_MEM_EQ(a.d, a.host, 64); /* the copy it queued ran */
    /* Outside a host function the same calls work again on this thread. */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtFree(a.d));
    ASSERT_OK(infinirtEventDestroy(a.e));
    ASSERT_OK(infinirtStreamDestroy(a.s));
    return TEST_OK;
}

int test_cpu_host_fn_reentry_async(void)
{
    return host_fn_reentry_case("async");
}

int test_cpu_host_fn_reentry_inline(void)
{
    return host_fn_reentry_case(NULL);
}
/* A synchronous free skips the fence (and the plugin's stream queries)
 * when the device is idle by the loader's counts and has no stream: only a
 * created stream can carry native work on the CPU backend.  The count of
 * streams must stay right as streams come and go: with one stream destroyed
 * and the other holding native work, a block freed behind that work is not
 * handed to the next allocation of its size on this thread. */
int test_cpu_native_work_free_streams_counted(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    /* Before any stream: the free takes no fence and the block is reused
     * at once (the fast path must not keep it from this thread). */
    void *p0, *p1;
    ASSERT_OK(infinirtMalloc(&p0, 64));
    ASSERT_OK(infinirtFree(p0));
    ASSERT_OK(infinirtMalloc(&p1, 64));
    ASSERT(p1 == p0);
    ASSERT_OK(infinirtFree(p1));
    for (int k = 0; k < 2; k++) {
        infinirtStream_t s, gone;
        ASSERT_OK(infinirtStreamCreateWithFlags(&gone, INFINIRT_STREAM_NON_BLOCKING));
        ASSERT_OK(infinirtStreamCreateWithFlags(&s, INFINIRT_STREAM_NON_BLOCKING));
        ASSERT_OK(infinirtStreamDestroy(gone));
        const size_t n = k == 0 ? 4096 : 1 * MiB;
        void *p;
        ASSERT_OK(infinirtMalloc(&p, n));
        ASSERT_OK(infinirtDeviceSynchronize()); /* the loader saw everything idle */
        static tc_gate gates[2];
        late_write_arg a = {&gates[k], p, n};
        ASSERT_EQ(infinirtCpuStreamGetOps(s)->enqueue(s, late_write, &a), INFINI_STATUS_SUCCESS);
        ASSERT_OK(infinirtFree(p));
        void *q;
        ASSERT_OK(infinirtMalloc(&q, n));
        unsigned char *want = malloc(n), *got = malloc(n);
        ASSERT(want && got);
        tc_pattern(want, n, 71u + (unsigned)k);
        ASSERT_OK(infinirtMemcpy(q, want, n, INFINIRT_MEMCPY_H2D));
        tc_gate_open(&gates[k]);
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtMemcpy(got, q, n, INFINIRT_MEMCPY_D2H));
        if (memcmp(got, want, n) != 0)
            TEST_FAILED_("block %p (freed %p behind native work, one other stream destroyed) was overwritten by "
                         "that work%s",
                         q, p, q == p ? ": handed out again too early" : "");
        ASSERT_OK(infinirtFree(q));
        ASSERT_OK(infinirtStreamDestroy(s));
        free(want);
        free(got);
    }
    return TEST_OK;
}

/* --------------------------------------------- ABI fields, called directly */

/* Counts the log lines about short init args (the format is enough). */
static int abi_logged;

static void abi_log_fn(int level, const char *plugin, const char *fmt, ...)
{
    (void)plugin;
    abi_logged += level == INFINIRT_PLUGIN_LOG_ERROR && strstr(fmt, "init args of") != NULL;
}

/* plugins/README.md, "ABI fields", on the CPU plugin's table called
 * without the loader (as a tool or a test harness may): init args shorter
 * than ABI 1.0's are refused with the reason in the log, args of exactly
 * that size are served, and a device index outside [0, count) is
 * DEVICE_NOT_FOUND from every entry that looks a device up.  No infinirt
 * call is made, so the loader never loads the same library. */
int test_cpu_abi_fields(void)
{
    void *lib = dlopen(CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT(lib != NULL);
    void *sym = dlsym(lib, INFINIRT_PLUGIN_ENTRY_NAME);
    ASSERT(sym != NULL);
    infinirtPluginEntryFn entry;
    memcpy(&entry, &sym, sizeof sym);
    const infinirtPluginOps *ops = NULL;
    ASSERT_OK(entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, &ops));
    const infinirtPluginKeyValue kv[] = {{"devices", "2"}, {"streams", "async"}};
    char msg[256] = "";
    infinirtPluginInitArgs args = {
        .struct_size = offsetof(infinirtPluginInitArgs, message_size) + sizeof(size_t) - 1,
        .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
        .config = kv,
        .config_count = 2,
        .log = abi_log_fn,
        .message = msg,
        .message_size = sizeof msg,
    };
    int count = -1;
    ASSERT_STATUS(ops->init(&args, &count), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(abi_logged, 1);
    args.struct_size++;
    ASSERT_OK(ops->init(&args, &count));
    ASSERT_EQ(count, 2);
    infinirtPluginDeviceInfo info;
    size_t fr, tot;
    void *a = NULL, *b = NULL;
    uint32_t flags;
    int idle;
    unsigned char x = 1, y = 0;
    for (int dev = -1; dev <= 2; dev += 3) {
        ASSERT_STATUS(ops->get_device_info(dev, &info), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->get_mem_info(dev, &fr, &tot), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->device_synchronize(dev), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->device_get_native(dev, &a, &b), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->get_device_flags(dev, &flags), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->malloc_device(dev, &a, 64), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->stream_create(dev, &a), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->stream_synchronize(dev, NULL), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->stream_query(dev, NULL, &idle), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->memcpy(dev, &y, &x, 1, INFINIRT_PLUGIN_MEMCPY_H2H), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->memcpy_async(dev, &y, &x, 1, INFINIRT_PLUGIN_MEMCPY_H2H, NULL),
                      INFINI_STATUS_DEVICE_NOT_FOUND);
    }
    ASSERT_EQ(y, 0);
    ops->shutdown();
    return TEST_OK;
}
