/*
 * runner.c - the runner every infinirt test program shares (see test.h):
 * one test by name in this process, or every test each in a child process
 * with a time limit, reported as text or as TAP.
 */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include "infinirt.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void (*g_failure_hook)(void);
static const char *g_current; /* the test running in this process */

void test_set_failure_hook(void (*hook)(void))
{
    g_failure_hook = hook;
}

/* Generated from the public header's map, so it cannot drift; a table of
 * its own because the plugin tests and the allocator's do not link the
 * loader. */
static const struct {
    int value;
    const char *name;
} k_status_names[] = {
#define TEST_STATUS_ROW_(name, value, text) {value, #name},
    INFINI_STATUS_MAP(TEST_STATUS_ROW_)
#undef TEST_STATUS_ROW_
};

const char *test_status_name(int status)
{
    for (size_t i = 0; i < sizeof k_status_names / sizeof k_status_names[0]; i++)
        if (k_status_names[i].value == status)
            return k_status_names[i].name;
    return "UNKNOWN_STATUS";
}

void test_fail_(const char *file, int line, const char *fmt, ...)
{
    /* Two threads failing at once: the first reports and ends the process,
     * the second waits for that. */
    static atomic_flag failing = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&failing))
        for (;;)
            pause();
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: FAIL: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (g_failure_hook != NULL)
        g_failure_hook();
    if (g_current != NULL)
        fprintf(stderr, "%s: FAILED\n", g_current);
    fflush(NULL);
    /* _exit, not exit: an atexit handler or a library destructor could wait
     * on work the failed test left queued. */
    _exit(TEST_FAIL);
}

static const char *verdict_word(int rc)
{
    return rc == TEST_OK ? "ok" : rc == TEST_SKIP ? "skipped" : "FAILED";
}

/* Run t here; its verdict after the suite's finish hook. */
static int run_here(const test_suite *suite, const test_case *t)
{
    g_current = t->name;
    int rc = t->fn();
    if (suite->finish != NULL)
        rc = suite->finish(rc);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int timeout_s(void)
{
    const char *v = getenv("INFINIRT_TEST_TIMEOUT");
    int n = v != NULL ? atoi(v) : 0;
    return n > 0 ? n : 120;
}

/* Run t in a child process of its own (its own process group, so that what
 * it forked goes with it); its exit code, or -1 when it ran past `limit`
 * seconds and was killed. */
static int run_child(const test_suite *suite, const test_case *t, int limit, int tap)
{
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return TEST_FAIL;
    }
    if (pid == 0) {
        setpgid(0, 0);
        /* Out of the runner's process group, the test must still end with
         * the runner (CTest's own time limit kills the runner). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(TEST_FAIL);
        if (tap) /* the TAP stream is the parent's stdout alone */
            dup2(STDERR_FILENO, STDOUT_FILENO);
        /* exit, as a test run alone ends: its atexit handlers and the
         * leak checker run; the time limit catches an exit that hangs. */
        exit(run_here(suite, t));
    }
    setpgid(pid, pid); /* also here: no race with the child's own call */
    double deadline = now_s() + limit;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            perror("waitpid");
            return TEST_FAIL;
        }
        if (now_s() >= deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "%s: killed by signal %d\n", t->name, WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

static int run_all(const test_suite *suite, int tap)
{
    int passed = 0, failed = 0, skipped = 0, limit = timeout_s();
    if (tap)
        printf("TAP version 13\n1..%zu\n", suite->count);
    for (size_t i = 0; i < suite->count; i++) {
        const test_case *t = &suite->tests[i];
        int rc = run_child(suite, t, limit, tap);
        if (rc < 0)
            fprintf(stderr, "%s: timed out after %d s (INFINIRT_TEST_TIMEOUT)\n", t->name, limit);
        if (tap && rc == TEST_OK)
            printf("ok %zu %s\n", i + 1, t->name);
        else if (tap && rc == TEST_SKIP)
            printf("ok %zu %s # SKIP\n", i + 1, t->name);
        else if (tap)
            printf("not ok %zu %s%s\n", i + 1, t->name, rc < 0 ? " (timed out)" : "");
        else if (rc < 0)
            printf("%-40s FAILED (timed out after %d s)\n", t->name, limit);
        else
            printf("%-40s %s\n", t->name, verdict_word(rc));
        fflush(stdout);
        passed += rc == TEST_OK;
        skipped += rc == TEST_SKIP;
        failed += rc != TEST_OK && rc != TEST_SKIP;
    }
    printf("%s%d passed, %d failed, %d skipped\n", tap ? "# " : "", passed, failed, skipped);
    fflush(stdout);
    if (suite->after_all != NULL)
        return suite->after_all(passed, failed, skipped);
    return failed ? TEST_FAIL : TEST_OK;
}

int test_main(int argc, char **argv, const test_suite *suite)
{
    g_failure_hook = suite->on_failure;
    if (argc == 1)
        return run_all(suite, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: %s [TEST | --list | --all | --tap]\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "--all") == 0 || strcmp(argv[1], "--tap") == 0)
        return run_all(suite, argv[1][2] == 't');
    if (strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < suite->count; i++)
            printf("%s\n", suite->tests[i].name);
        return 0;
    }
    for (size_t i = 0; i < suite->count; i++) {
        if (strcmp(argv[1], suite->tests[i].name) == 0) {
            int rc = run_here(suite, &suite->tests[i]);
            fprintf(stderr, "%s: %s\n", suite->tests[i].name, verdict_word(rc));
            return rc;
        }
    }
    fprintf(stderr, "no test named %s (%s --list names them)\n", argv[1], argv[0]);
    return 2;
}
