/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_sweep.c - every plugin call of a fixed workload made to fail in
 * turn: the N-th call once, or every call of one entry.  Each run is a
 * process of its own (the loader initialises once per process), with a time
 * limit; in it every public call must answer SUCCESS or the injected status
 * (a few have documented others), and once the faults are off and
 * everything is given back, nothing may stay allocated.  Built with ASan,
 * a leak in a run fails it too (each run ends with exit()).
 */
#define _GNU_SOURCE
#include "fault_tests.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the workload holds, so it can be given back whatever failed. */
typedef struct {
    void *dev[4];
    void *host;
    infinirtStream_t stream[2];
    infinirtEvent_t event[2];
} held;

static atomic_int g_host_fn_runs;
static void count_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_host_fn_runs, 1);
}

/* A call of the workload: SUCCESS or the injected status are the only
 * answers allowed (a few calls have documented others, passed as `also`). */
#define STEP(call, also)                                                                                  \
    do {                                                                                                  \
        infiniStatus_t st_ = (call);                                                                      \
        if (st_ != INFINI_STATUS_SUCCESS && st_ != FAIL_ST && st_ != (also) && st_ != NOT_READY_OK(also)) \
            TEST_FAILED_("%s returned %s", #call, infinirtGetErrorName(st_));                             \
        last = st_;                                                                                       \
    } while (0)
#define NONE INFINI_STATUS_SUCCESS
/* An elapsed time whose record failed is INVALID_STATE; one whose event
 * could not be waited for may be NOT_READY. */
#define NOT_READY_OK(also) ((also) == INFINI_STATUS_INVALID_STATE ? INFINI_STATUS_NOT_READY : INFINI_STATUS_SUCCESS)

/* Every entry of the plugin, through the public API.  A handle or pointer
 * whose creation failed is left NULL and skipped; a free that failed leaves
 * the pointer held. */
static int workload(held *h)
{
    enum { N = 16 << 10 };
    static unsigned char buf[N], back[N];
    infiniStatus_t last = INFINI_STATUS_SUCCESS;
    size_t fr, tot;
    STEP(infinirtGetMemInfo(DEV, 0, &fr, &tot), NONE);
    for (int i = 0; i < 2; i++) {
        STEP(infinirtStreamCreate(&h->stream[i]), NONE);
        if (last != INFINI_STATUS_SUCCESS)
            h->stream[i] = NULL;
    }
    for (int i = 0; i < 3; i++) {
        STEP(infinirtMalloc(&h->dev[i], N), NONE);
        if (last != INFINI_STATUS_SUCCESS)
            h->dev[i] = NULL;
    }
    STEP(infinirtMallocHost(&h->host, N), NONE);
    if (last != INFINI_STATUS_SUCCESS)
        h->host = NULL;
    void *d0 = h->dev[0], *d1 = h->dev[1], *d2 = h->dev[2], *hp = h->host;
    infinirtStream_t s0 = h->stream[0], s1 = h->stream[1];
    if (d0 != NULL) {
        STEP(infinirtMemcpy(d0, buf, N, INFINIRT_MEMCPY_H2D), NONE);
        STEP(infinirtMemset(d0, 3, N), NONE);
    }
    if (d0 != NULL && d1 != NULL)
        STEP(infinirtMemcpy(d1, d0, N, INFINIRT_MEMCPY_D2D), NONE);
    if (d1 != NULL)
        STEP(infinirtMemcpy(back, d1, N, INFINIRT_MEMCPY_D2H), NONE);
    if (hp != NULL)
        STEP(infinirtMemcpy(hp, buf, N, INFINIRT_MEMCPY_H2H), NONE);
    infinirtEvent_t e0 = NULL, e1 = NULL;
    STEP(infinirtEventCreate(&h->event[0]), NONE);
    if (last == INFINI_STATUS_SUCCESS)
        e0 = h->event[0];
    STEP(infinirtEventCreateWithFlags(&h->event[1], INFINIRT_EVENT_DEFAULT), NONE);
    if (last == INFINI_STATUS_SUCCESS)
        e1 = h->event[1];
    if (s0 != NULL) {
        if (e0 != NULL)
            STEP(infinirtEventRecord(e0, s0), NONE);
        STEP(infinirtLaunchHostFunc(s0, count_run, NULL), NONE);
        if (d0 != NULL && d1 != NULL) {
            STEP(infinirtMemcpyAsync(d0, buf, N, INFINIRT_MEMCPY_H2D, s0), NONE);
            STEP(infinirtMemcpyAsync(d1, d0, N, INFINIRT_MEMCPY_D2D, s0), NONE);
            STEP(infinirtMemcpyAsync(back, d1, N, INFINIRT_MEMCPY_D2H, s0), NONE);
            STEP(infinirtMemsetAsync(d0, 5, N, s0), NONE);
        }
        if (hp != NULL)
            STEP(infinirtMemcpyAsync(back, hp, N, INFINIRT_MEMCPY_H2H, s0), NONE);
        if (e1 != NULL)
            STEP(infinirtEventRecord(e1, s0), NONE);
    }
    if (e0 != NULL) {
        infinirtEventStatus_t es;
        STEP(infinirtEventQuery(e0, &es), NONE);
    }
    if (s1 != NULL && e1 != NULL)
        STEP(infinirtStreamWaitEvent(s1, e1), NONE);
    if (e1 != NULL)
        STEP(infinirtEventSynchronize(e1), NONE);
    if (e0 != NULL && e1 != NULL) {
        float ms;
        /* A record that failed leaves its event never recorded. */
        STEP(infinirtEventElapsedTime(&ms, e0, e1), INFINI_STATUS_INVALID_STATE);
    }
    if (s1 != NULL) {
        STEP(infinirtMallocAsync(&h->dev[3], N, s1), NONE);
        if (last != INFINI_STATUS_SUCCESS)
            h->dev[3] = NULL;
        if (h->dev[3] != NULL) {
            STEP(infinirtMemsetAsync(h->dev[3], 1, N, s1), NONE);
            STEP(infinirtFreeAsync(h->dev[3], s1), NONE);
            if (last == INFINI_STATUS_SUCCESS)
                h->dev[3] = NULL;
        }
    }
    /* Frees behind queued work: fences. */
    if (d0 != NULL) {
        STEP(infinirtFree(d0), NONE);
        if (last == INFINI_STATUS_SUCCESS)
            h->dev[0] = NULL;
    }
    if (hp != NULL) {
        STEP(infinirtFreeHost(hp), NONE);
        if (last == INFINI_STATUS_SUCCESS)
            h->host = NULL;
    }
    if (s0 != NULL)
        STEP(infinirtStreamSynchronize(s0), NONE);
    STEP(infinirtDeviceSynchronize(), NONE);
    STEP(infinirtTrimCache(DEV, 0), NONE); /* free_device */
    for (int i = 0; i < 2; i++) {
        if (h->event[i] != NULL) {
            STEP(infinirtEventDestroy(h->event[i]), NONE);
            h->event[i] = NULL; /* the handle is gone whatever the plugin said */
        }
    }
    for (int i = 0; i < 2; i++) {
        if (h->stream[i] != NULL) {
            STEP(infinirtStreamDestroy(h->stream[i]), NONE);
            h->stream[i] = NULL; /* likewise */
        }
    }
    if (d1 != NULL) {
        STEP(infinirtFree(d1), NONE);
        if (last == INFINI_STATUS_SUCCESS)
            h->dev[1] = NULL;
    }
    (void)d2; /* still held: the cleanup frees it */
    return TEST_OK;
}

/* With faults off: wait, give back what the workload holds, trim; nothing
 * may stay allocated. */
static int cleanup_balances(held *h)
{
    ASSERT_OK(infinirtDeviceSynchronize());
    for (int i = 0; i < 2; i++) {
        if (h->event[i] != NULL)
            ASSERT_OK(infinirtEventDestroy(h->event[i]));
        if (h->stream[i] != NULL)
            ASSERT_OK(infinirtStreamDestroy(h->stream[i]));
    }
    for (int i = 0; i < 4; i++)
        if (h->dev[i] != NULL)
            ASSERT_OK(infinirtFree(h->dev[i]));
    if (h->host != NULL)
        ASSERT_OK(infinirtFreeHost(h->host));
    ASSERT_OK(infinirtTrimCache(DEV, 0));
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(DEV, 0, &st));
    if (st.allocated_bytes != 0 || st.active_blocks != 0)
        TEST_FAILED_("device pool: %zu bytes in %zu blocks still allocated", st.allocated_bytes, st.active_blocks);
    ASSERT_OK(infinirtGetHostAllocatorStats(DEV, &st));
    if (st.allocated_bytes != 0 || st.active_blocks != 0)
        TEST_FAILED_("host pool: %zu bytes in %zu blocks still allocated", st.allocated_bytes, st.active_blocks);
    infinirtPluginInfo_t pi;
    ASSERT_GE(ft_find_plugin("fault", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    return TEST_OK;
}

static const char *const k_ops[] = {
#define X(op) #op,
    FAULT_OPS(X)
#undef X
};
#define NOPS ((long)(sizeof k_ops / sizeof k_ops[0]))

/* One run in this (fresh) process: n > 0: the n-th plugin call of the
 * workload fails; n < 0: every call of entry k_ops[-n - 1] fails; n = 0:
 * nothing fails.  *calls: the plugin calls the workload made. */
static int sweep_one(long n, long *calls, const char *extra)
{
    ft_config(NULL, extra);
    fault_api api;
    CHECK(ft_start(&api));
    long before = api.calls(NULL);
    if (n > 0)
        api.nth_any(n, FAIL_ST);
    else if (n < 0)
        ASSERT_EQ(api.set(k_ops[-n - 1], FAULT_ALWAYS, 0, FAIL_ST), 0);
    held h = {0};
    int rc = workload(&h);
    api.reset();
    *calls = api.calls(NULL) - before;
    if (rc != TEST_OK)
        return rc;
    return cleanup_balances(&h);
}

/* Run sweep_one(n) in a child with a time limit; its exit status, and the
 * call count through a pipe. */
static int sweep_child(long n, long *calls, const char *extra)
{
    int fd[2];
    if (pipe(fd) != 0)
        return TEST_FAIL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return TEST_FAIL;
    if (pid == 0) {
        close(fd[0]);
        long c = 0;
        int rc = sweep_one(n, &c, extra);
        if (write(fd[1], &c, sizeof c) != (ssize_t)sizeof c)
            rc = TEST_FAIL;
        tc_open_all_gates();
        fflush(NULL);
        exit(rc); /* exit, not _exit: the leak checker runs in the child */
    }
    close(fd[1]);
    int status = 0;
    for (int ms = 0;; ms += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (ms >= 60000) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "fault sweep: %s%ld failing: the child hung\n", n < 0 ? "entry " : "call ", n);
            close(fd[0]);
            return TEST_FAIL;
        }
        tc_sleep_ms(10);
    }
    if (read(fd[0], calls, sizeof *calls) != (ssize_t)sizeof *calls)
        *calls = -1;
    close(fd[0]);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "fault sweep: %s%ld failing: the child died of signal %d\n", n < 0 ? "entry " : "call ", n,
                WTERMSIG(status));
        return TEST_FAIL;
    }
    int rc = WEXITSTATUS(status);
    if (rc != TEST_OK)
        fprintf(stderr, "fault sweep: %s%ld failing: the child exited %d\n", n < 0 ? "entry " : "call ", n, rc);
    return rc;
}

/* For every N up to the workload's call count: the N-th plugin call fails,
 * each run in a fresh process (the loader initialises once per process).
 * `extra`: config lines that choose the allocator's free paths. */
static int sweep_nth(const char *extra)
{
    long k = 0;
    int rc = sweep_child(0, &k, extra);
    if (rc != TEST_OK)
        return rc;
    ASSERT_GT(k, 30);
    int failed = 0;
    /* A few more than K: fences may add calls when one fails. */
    for (long n = 1; n <= k + 4; n++) {
        long c = 0;
        if (sweep_child(n, &c, extra) != TEST_OK)
            failed++;
    }
    fprintf(stderr, "fault sweep: %ld plugin calls, each failed once: %d run(s) failed\n", k, failed);
    ASSERT_EQ(failed, 0);
    return TEST_OK;
}

int test_fault_sweep(void)
{
    return sweep_nth(NULL);
}

/* Segments given back at every free: free_device and free_host fail too. */
int test_fault_sweep_release(void)
{
    return sweep_nth("[allocator]\nrelease_on_free = true\n");
}

/* No cache: every free waits for its fence and gives the memory back. */
int test_fault_sweep_noalloc(void)
{
    return sweep_nth("[allocator]\nenabled = false\n");
}

/* The plugin has stream_query and device_query (FAULT_NATIVE_QUERIES=1):
 * the fences ask it instead of trusting the loader's counts, and those
 * queries fail too. */
int test_fault_sweep_native(void)
{
    tc_setenv("FAULT_NATIVE_QUERIES", "1");
    return sweep_nth(NULL);
}

/* Each entry failing at every call of the workload, in turn. */
int test_fault_sweep_always(void)
{
    int failed = 0;
    for (long i = 0; i < NOPS; i++) {
        long c = 0;
        if (sweep_child(-i - 1, &c, NULL) != TEST_OK) {
            fprintf(stderr, "fault sweep: with %s failing always\n", k_ops[i]);
            failed++;
        }
    }
    ASSERT_EQ(failed, 0);
    return TEST_OK;
}
