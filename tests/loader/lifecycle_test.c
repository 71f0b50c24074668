/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lifecycle_test.c - infinirt across fork() and process exit.
 *
 *   lifecycle-test NAME    run one test (CTest registers each on its own;
 *                          the list is lifecycle_list.h)
 *
 * A program of its own rather than infinirt-tests tests: each test here
 * needs a process whose loader has not been initialised yet, and ends it
 * the way these tests are about.  Every child runs under a deadline, so a hang fails the
 * test instead of stalling CTest.  The device is INFINIRT_TEST_DEVICE's.
 */
#define _GNU_SOURCE
#include "common.h"
#include "lifecycle_list.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEADLINE_MS 20000
#define NOT_INIT INFINI_STATUS_DEVICE_NOT_INITIALIZED

/* What a child wrote to stderr, and how it ended. */
typedef struct {
    int exit_code; /* -1 unless it exited */
    int signal;    /* 0 unless a signal ended it */
    bool hung;     /* killed at the deadline */
    char err[8192];
} child_result;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Fork; the child runs fn with stderr sent to a pipe, then exit()s with its
 * result (exit, not _exit: the atexit handlers must run).  The parent waits
 * at most DEADLINE_MS, then kills the child and reports it hung. */
static int run_child(int (*fn)(void), child_result *r)
{
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        exit(fn());
    }
    close(fds[1]);
    /* Drain the pipe while waiting, so a chatty child never blocks on it. */
    ASSERT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    size_t len = 0;
    int status = 0;
    double deadline = now_ms() + DEADLINE_MS;
    for (;;) {
        ssize_t n = read(fds[0], r->err + len, sizeof r->err - 1 - len);
        if (n > 0)
            len += (size_t)n;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        ASSERT(w == 0 || errno == EINTR);
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            r->hung = true;
            break;
        }
        tc_sleep_ms(5);
    }
    for (ssize_t n; (n = read(fds[0], r->err + len, sizeof r->err - 1 - len)) > 0;)
        len += (size_t)n;
    close(fds[0]);
    r->err[len] = '\0';
    if (!r->hung && WIFEXITED(status))
        r->exit_code = WEXITSTATUS(status);
    if (!r->hung && WIFSIGNALED(status))
        r->signal = WTERMSIG(status);
    fprintf(stderr, "child %s (exit %d, signal %d); its stderr:\n%s--\n", r->hung ? "HUNG and was killed" : "ended",
            r->exit_code, r->signal, r->err);
    return TEST_OK;
}

/* The child must have ended by itself with exit code 0. */
#define ASSERT_CHILD_OK(r)           \
    do {                             \
        ASSERT(!(r).hung);           \
        ASSERT_EQ((r).signal, 0);    \
        ASSERT_EQ((r).exit_code, 0); \
    } while (0)

/* Device memory, a stream with a copy queued on it, and a stream whose
 * worker is busy (held on a gate) while the process forks. */
static infinirtStream_t g_stream, g_held;
static void *g_dev;
static tc_gate g_gate;
static char g_host[4096];

static int setup_busy_runtime(void)
{
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtMalloc(&g_dev, sizeof g_host));
    ASSERT_OK(infinirtStreamCreate(&g_stream));
    ASSERT_OK(infinirtStreamCreate(&g_held));
    memset(g_host, 0x5a, sizeof g_host);
    /* The two streams write disjoint bytes: nothing orders them. */
    ASSERT_OK(infinirtMemcpyAsync((char *)g_dev + 16, g_host, sizeof g_host - 16, INFINIRT_MEMCPY_H2D, g_stream));
    CHECK(tc_hold_stream(g_held, &g_gate));
    while (!__atomic_load_n(&g_gate.reached, __ATOMIC_SEQ_CST))
        tc_sleep_ms(1);
    ASSERT_OK(infinirtMemsetAsync(g_dev, 0x11, 16, g_held)); /* queued behind the gate */
    /* The copy's worker is idle before the fork: a worker caught inside
     * free() would leave the sanitizers' allocator lock held in the child
     * (gcc 12's ASan has no fork handlers), and LeakSanitizer's exit-time
     * check would then hang there.  The held stream keeps work queued. */
    ASSERT_OK(infinirtStreamSynchronize(g_stream));
    return TEST_OK;
}

/* After the children: the parent's own runtime is unharmed. */
static int check_parent_still_works(void)
{
    tc_gate_open(&g_gate);
    ASSERT_OK(infinirtStreamSynchronize(g_held));
    ASSERT_OK(infinirtStreamSynchronize(g_stream));
    char back[sizeof g_host];
    ASSERT_OK(infinirtMemcpy(back, g_dev, sizeof back, INFINIRT_MEMCPY_D2H));
    ASSERT_EQ(back[0], 0x11);
    ASSERT_EQ(back[sizeof back - 1], 0x5a);
    ASSERT_OK(infinirtStreamDestroy(g_held));
    ASSERT_OK(infinirtStreamDestroy(g_stream));
    ASSERT_OK(infinirtFree(g_dev));
    return TEST_OK;
}

/* ------------------------------------------------- fork after init */

static int child_exit_only(void)
{
    return 0;
}

/* A child forked while streams exist (one busy) exits at once, without
 * calling infinirt: exit() must not wait for threads the child lacks. */
static int test_fork_exit(void)
{
    CHECK(setup_busy_runtime());
    child_result r;
    CHECK(run_child(child_exit_only, &r));
    ASSERT_CHILD_OK(r);
    return check_parent_still_works();
}

static int child_calls_infinirt(void)
{
    void *p = NULL;
    infinirtStream_t s = NULL;
    infinirtEvent_t e = NULL;
    int n = -1;
    char buf[16] = {0};
    /* Each of these would use the parent's copied state: streams whose
     * workers do not exist in the child, locks that may be held. */
    ASSERT_STATUS(infinirtMalloc(&p, 64), NOT_INIT);
    ASSERT_PTR_EQ(p, NULL);
    ASSERT_STATUS(infinirtStreamCreate(&s), NOT_INIT);
    ASSERT_PTR_EQ(s, NULL);
    ASSERT_STATUS(infinirtEventCreate(&e), NOT_INIT);
    ASSERT_STATUS(infinirtStreamSynchronize(g_held), NOT_INIT);
    ASSERT_STATUS(infinirtStreamSynchronize(NULL), NOT_INIT);
    ASSERT_STATUS(infinirtDeviceSynchronize(), NOT_INIT);
    ASSERT_STATUS(infinirtMemcpy(buf, g_dev, sizeof buf, INFINIRT_MEMCPY_D2H), NOT_INIT);
    ASSERT_STATUS(infinirtFree(g_dev), NOT_INIT);
    ASSERT_STATUS(infinirtInit(), NOT_INIT);
    ASSERT_STATUS(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n), NOT_INIT);
    ASSERT_EQ(n, -1);
    return 0;
}

/* A child forked after init that calls infinirt gets DEVICE_NOT_INITIALIZED
 * with a log line naming fork as the reason, then exits cleanly. */
static int test_fork_child_calls(void)
{
    CHECK(setup_busy_runtime());
    child_result r;
    CHECK(run_child(child_calls_infinirt, &r));
    ASSERT_CHILD_OK(r);
    ASSERT_STR_CONTAINS(r.err, "forked after infinirt initialised");
    ASSERT_STR_CONTAINS(r.err, "DEVICE_NOT_INITIALIZED");
    return check_parent_still_works();
}

/* ------------------------------------------------ fork before init */

static int use_runtime(void)
{
    CHECK(tc_use_device(0));
    enum { N = 1 << 16 };
    static unsigned char in[N], out[N];
    tc_pattern(in, N, 7);
    void *p = NULL;
    infinirtStream_t s = NULL;
    ASSERT_OK(infinirtMalloc(&p, N));
    ASSERT_OK(infinirtMemcpy(p, in, N, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMemsetAsync(p, 0x3c, 8, s));
    ASSERT_OK(infinirtMemcpyAsync(out, p, N, INFINIRT_MEMCPY_D2H, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_EQ(out[7], 0x3c);
    ASSERT_MEM_EQ(out + 8, in + 8, N - 8);
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

/* A process that forks before its first infinirt call: the child
 * initialises on its own and works, and so does the parent afterwards. */
static int test_fork_before_init(void)
{
    child_result r;
    CHECK(run_child(use_runtime, &r));
    ASSERT_CHILD_OK(r);
    return use_runtime();
}

/* ------------------------------------------------------ after exit */

/* Registered before infinirt's first call, so it runs after infinirt's own
 * exit handler.  Every call must be refused cleanly (the CUDA plugin used to
 * run on a device table its shutdown had freed).  Exits 3 on a wrong status,
 * so the parent sees it. */
static infinirtStream_t g_exit_stream;
static void *g_exit_ptr;

static int late_calls(void)
{
    void *p = NULL;
    int n = -1;
    int counts[INFINI_DEVICE_TYPE_COUNT];
    infinirtEvent_t e = NULL;
    infinirtStream_t s = NULL;
    size_t fb = 0, tb = 0;
    /* Calls that reach the plugin first: a torn-down plugin crashes here. */
    ASSERT_STATUS(infinirtStreamSynchronize(NULL), NOT_INIT);
    ASSERT_STATUS(infinirtStreamSynchronize(g_exit_stream), NOT_INIT);
    ASSERT_STATUS(infinirtGetMemInfo(tc_device_type(), 0, &fb, &tb), NOT_INIT);
    ASSERT_STATUS(infinirtMalloc(&p, 64), NOT_INIT);
    ASSERT_STATUS(infinirtMallocHost(&p, 64), NOT_INIT);
    ASSERT_PTR_EQ(p, NULL);
    ASSERT_STATUS(infinirtStreamCreate(&s), NOT_INIT);
    ASSERT_STATUS(infinirtStreamDestroy(g_exit_stream), NOT_INIT);
    ASSERT_STATUS(infinirtEventCreate(&e), NOT_INIT);
    ASSERT_STATUS(infinirtMemsetAsync(g_exit_ptr, 0, 64, g_exit_stream), NOT_INIT);
    ASSERT_STATUS(infinirtFree(g_exit_ptr), NOT_INIT);
    ASSERT_STATUS(infinirtDeviceSynchronize(), NOT_INIT);
    ASSERT_STATUS(infinirtGetDeviceCount(tc_device_type(), &n), NOT_INIT);
    ASSERT_STATUS(infinirtGetAllDeviceCount(counts), NOT_INIT);
    ASSERT_STATUS(infinirtSetDevice(tc_device_type(), 0), NOT_INIT);
    ASSERT_STATUS(infinirtInit(), NOT_INIT);
    ASSERT_EQ(n, -1);
    return TEST_OK;
}

static void late_exit_handler(void)
{
    if (late_calls() != TEST_OK)
        _exit(3);
    fprintf(stderr, "late exit handler: every call refused\n");
}

static int child_with_late_handler(void)
{
    if (atexit(late_exit_handler) != 0)
        return 2;
    /* Live objects at exit: a stream with queued work, a device block. */
    CHECK(tc_use_device(0));
    ASSERT_OK(infinirtMalloc(&g_exit_ptr, 64));
    ASSERT_OK(infinirtStreamCreate(&g_exit_stream));
    ASSERT_OK(infinirtMemsetAsync(g_exit_ptr, 0x22, 64, g_exit_stream));
    ASSERT_OK(infinirtStreamSynchronize(g_exit_stream));
    return 0;
}

static int test_after_exit(void)
{
    child_result r;
    CHECK(run_child(child_with_late_handler, &r));
    ASSERT_CHILD_OK(r);
    ASSERT_STR_CONTAINS(r.err, "late exit handler: every call refused");
    ASSERT_STR_CONTAINS(r.err, "after infinirt shut down at process exit");
    return TEST_OK;
}

/* ------------------------------------------------------------ main */

/* After each test: a failed one may leave a stream held. */
static int finish(int rc)
{
    tc_open_all_gates();
    return rc;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {LIFECYCLE_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), finish, tc_open_all_gates, NULL};
    return test_main(argc, argv, &suite);
}
