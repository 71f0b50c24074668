/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_pool_tests.c - the CPU backend's worker pool (async streams): a
 * bounded number of threads, growth past a blocked worker, the workers
 * limit, work done on the caller's thread when a stream is idle, and bad
 * values of the workers key.
 */
#define _GNU_SOURCE
#include "cpu_tests.h"
#include "infinirt_cpu.h"
#include "infinirt_plugin.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* Two threads share one async stream: each fills a buffer with its own
 * byte, small enough to run on the caller's thread when the stream is
 * idle, and now and then queues a host function that checks the buffer
 * holds one byte throughout.  A stream runs one piece of work at a time
 * (docs/semantics.md, R1), so no fill may overlap another or a check: a
 * caller running a fill on a stream that a worker or another caller is
 * running would show as a torn buffer (and as a race under TSan). */
enum { SERIAL_BYTES = 16 * 1024, SERIAL_ROUNDS = 20000 };

typedef struct {
    unsigned char *buf;
    atomic_int torn, checks;
} serial_state;

static void serial_check(void *arg)
{
    serial_state *st = arg;
    for (int i = 1; i < SERIAL_BYTES; i++)
        if (st->buf[i] != st->buf[0]) {
            atomic_fetch_add(&st->torn, 1);
            break;
        }
    atomic_fetch_add(&st->checks, 1);
}

typedef struct {
    serial_state *st;
    infinirtStream_t s;
    int value;
    infiniStatus_t rc;
} serial_thread;

static void *serial_filler(void *arg)
{
    serial_thread *t = arg;
    t->rc = infinirtSetDevice(INFINI_DEVICE_CPU, 0);
    for (int i = 0; i < SERIAL_ROUNDS && t->rc == INFINI_STATUS_SUCCESS; i++) {
        t->rc = infinirtMemsetAsync(t->st->buf, t->value, SERIAL_BYTES, t->s);
        if (t->rc == INFINI_STATUS_SUCCESS && i % 8 == 0)
            t->rc = infinirtLaunchHostFunc(t->s, serial_check, t->st);
    }
    return NULL;
}

int test_cpu_caller_runs_one_at_a_time(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtInit());
    static serial_state st; /* static: host functions may outlive a failed test */
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMalloc((void **)&st.buf, SERIAL_BYTES));
    ASSERT_OK(infinirtMemset(st.buf, 0, SERIAL_BYTES));
    serial_thread t[2] = {{&st, s, 0x11, INFINI_STATUS_SUCCESS}, {&st, s, 0x22, INFINI_STATUS_SUCCESS}};
    pthread_t th[2];
    for (int k = 0; k < 2; k++)
        ASSERT_EQ(pthread_create(&th[k], NULL, serial_filler, &t[k]), 0);
    for (int k = 0; k < 2; k++)
        ASSERT_EQ(pthread_join(th[k], NULL), 0);
    ASSERT_OK(t[0].rc);
    ASSERT_OK(t[1].rc);
    ASSERT_OK(infinirtStreamSynchronize(s));
    serial_check(&st);
    ASSERT_EQ(atomic_load(&st.checks), 2 * ((SERIAL_ROUNDS + 7) / 8) + 1);
    ASSERT_EQ(atomic_load(&st.torn), 0);
    ASSERT(st.buf[0] == 0x11 || st.buf[0] == 0x22);
    ASSERT_OK(infinirtFree(st.buf));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* Heap bytes in use (glibc's count), or 0 where there is none to read. */
static size_t heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    return mallinfo2().uordblks;
#else
    return 0;
#endif
}

static void nothing_fn(void *arg)
{
    (void)arg;
}

/* n streams made, given work in their ring (a host function), waited for
 * and destroyed, one after the other. */
static int churn_streams(int n)
{
    for (int i = 0; i < n; i++) {
        infinirtStream_t s;
        ASSERT_OK(infinirtStreamCreate(&s));
        ASSERT_OK(infinirtLaunchHostFunc(s, nothing_fn, NULL));
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtStreamDestroy(s));
    }
    return TEST_OK;
}

/* A stream that had work in its ring sits on its device's busy list, which
 * holds it past its destroy until the list is next walked (cpu_busy.c).
 * A program that never waits on the device (no device synchronize, no
 * synchronous copy while work is pending, no NULL-stream work) must still
 * have its destroyed streams let go of: 20000 of them may not keep their
 * memory (about 15 MB if nothing let them go). */
int test_cpu_destroyed_streams_let_go(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtInit());
    CHECK(churn_streams(500)); /* the loader's and the pool's first allocations */
    size_t before = heap_in_use();
    CHECK(churn_streams(20000));
    size_t after = heap_in_use();
    if (after > before && after - before > (4u << 20))
        TEST_FAILED_("20000 destroyed streams still hold %zu bytes", after - before);
    return TEST_OK;
}
