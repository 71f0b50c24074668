/* SPDX-License-Identifier: Apache-2.0 */
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
/* The program's tests: the suite's own, then its rows (none when NULL). */
static const test_suite *g_suite;
static const test_rows *g_rows;
static const test_cli *g_cli; /* what the program adds (test_set_cli) */

void test_set_cli(const test_cli *cli)
{
    g_cli = cli;
}

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

static size_t test_count(void)
{
    return g_suite->count + (g_rows != NULL ? g_rows->count : 0);
}

static const char *test_name(size_t i)
{
    return i < g_suite->count ? g_suite->tests[i].name : g_rows->name(i - g_suite->count);
}

static int quick_exit_on(void)
{
    return g_rows != NULL && g_rows->quick_exit;
}

/* Run test i here; its verdict after the suite's finish hook. */
static int run_here(size_t i)
{
    g_current = test_name(i);
    int rc = i < g_suite->count ? g_suite->tests[i].fn() : g_rows->run(i - g_suite->count);
    if (g_suite->finish != NULL)
        rc = g_suite->finish(rc);
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
    if (n <= 0 && g_rows != NULL)
        n = g_rows->timeout;
    return n > 0 ? n : 120;
}

/* Wait for `pid` until `deadline`, with SIGCHLD (`chld`) blocked: 0 when
 * it ended (its wait status in *status), -1 when it ran past the deadline
 * and was killed with its process group, TEST_FAIL when waiting failed. */
static int wait_until(pid_t pid, double deadline, int *status, const sigset_t *chld)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR) {
            perror("waitpid");
            return TEST_FAIL;
        }
        double left = deadline - now_s();
        if (left <= 0) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            return -1;
        }
        /* Wakes on a SIGCHLD (this child's, or one another child of the
         * test left pending) or when the time is up; then look again. */
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        sigtimedwait(chld, NULL, &ts);
    }
}

/* Run test i in a child process of its own (its own process group, so that
 * what it forked goes with it), its stdout and stderr sent to `capture`
 * when that is not -1; its exit code, or -1 when it ran past `limit`
 * seconds and was killed. */
static int run_child(size_t i, int limit, int tap, int capture)
{
    /* SIGCHLD held back, so that the wait below sleeps until the child ends
     * or the time is up (a test, a bad-input row, often ends within a
     * millisecond). */
    sigset_t chld, mask;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &mask);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        sigprocmask(SIG_SETMASK, &mask, NULL);
        return TEST_FAIL;
    }
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &mask, NULL);
        setpgid(0, 0);
        /* Out of the runner's process group, the test must still end with
         * the runner (CTest's own time limit kills the runner). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(TEST_FAIL);
        if (capture >= 0) {
            dup2(capture, STDOUT_FILENO);
            dup2(capture, STDERR_FILENO);
        } else if (tap) { /* the TAP stream is the parent's stdout alone */
            dup2(STDERR_FILENO, STDOUT_FILENO);
        }
        int rc = run_here(i);
        fflush(NULL);
        if (quick_exit_on())
            _exit(rc);
        /* exit, as a test run alone ends: its atexit handlers and the
         * leak checker run; the time limit catches an exit that hangs. */
        exit(rc);
    }
    setpgid(pid, pid); /* also here: no race with the child's own call */
    int status = 0, rc = wait_until(pid, now_s() + limit, &status, &chld);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    if (rc != 0)
        return rc;
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "%s: killed by signal %d (%s)\n", test_name(i), WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

/* What a failed test wrote to `capture`, on stdout: as it is, or as TAP
 * diagnostics. */
static void show_captured(FILE *capture, int tap)
{
    char line[4096];
    rewind(capture);
    while (fgets(line, sizeof line, capture) != NULL) {
        if (tap)
            fputs("# ", stdout);
        fputs(line, stdout);
    }
}

static int run_all(int tap)
{
    size_t n = test_count();
    int passed = 0, failed = 0, skipped = 0, limit = timeout_s();
    size_t *failures = calloc(n + 1, sizeof *failures);
    if (failures == NULL) {
        perror("calloc");
        return TEST_FAIL;
    }
    if (tap)
        printf("TAP version 13\n1..%zu\n", n);
    for (size_t i = 0; i < n; i++) {
        const char *name = test_name(i);
        FILE *capture = NULL;
        if (g_rows != NULL && g_rows->quiet && (capture = tmpfile()) == NULL)
            perror("tmpfile"); /* then the test's output is not held back */
        int rc = run_child(i, limit, tap, capture != NULL ? fileno(capture) : -1);
        if (rc < 0)
            fprintf(stderr, "%s: timed out after %d s (INFINIRT_TEST_TIMEOUT)\n", name, limit);
        if (tap && rc == TEST_OK)
            printf("ok %zu %s\n", i + 1, name);
        else if (tap && rc == TEST_SKIP)
            printf("ok %zu %s # SKIP\n", i + 1, name);
        else if (tap)
            printf("not ok %zu %s%s\n", i + 1, name, rc < 0 ? " (timed out)" : "");
        else if (rc < 0)
            printf("%-40s FAILED (timed out after %d s)\n", name, limit);
        else
            printf("%-40s %s\n", name, verdict_word(rc));
        if (capture != NULL && rc != TEST_OK && rc != TEST_SKIP)
            show_captured(capture, tap);
        if (capture != NULL)
            fclose(capture);
        fflush(stdout);
        passed += rc == TEST_OK;
        skipped += rc == TEST_SKIP;
        if (rc != TEST_OK && rc != TEST_SKIP)
            failures[failed++] = i;
    }
    printf("%s%d passed, %d failed, %d skipped\n", tap ? "# " : "", passed, failed, skipped);
    /* The failures again, so that the end of a long run names every one. */
    for (int k = 0; k < failed && !tap; k++)
        printf("  failed: %s\n", test_name(failures[k]));
    fflush(stdout);
    free(failures);
    if (g_suite->after_all != NULL)
        return g_suite->after_all(passed, failed, skipped);
    return failed ? TEST_FAIL : TEST_OK;
}

int test_main(int argc, char **argv, const test_suite *suite)
{
    return test_main_rows(argc, argv, suite, NULL);
}

/* The runner's part of --help, then the suite's. */
static void usage(FILE *out, const char *prog)
{
    fprintf(out,
            "usage: %s [TEST | --all | --tap | --list | --help | --version%s]\n"
            "  TEST       run the test named TEST in this process: exit 0 passed, 1 failed,\n"
            "             77 skipped (what the machine or the backend lacks)\n"
            "  --all      run every test, each in a child process with a time limit, one line\n"
            "             each, then \"N passed, N failed, N skipped\" (also with no argument)\n"
            "  --tap      the same run, reported as TAP version 13\n"
            "  --list     print the name of every test\n"
            "  --help     print this help\n"
            "  --version  print the infinirt version this program was built with\n"
            "%s"
            "environment:\n"
            "  INFINIRT_TEST_TIMEOUT  seconds one test may run under --all and --tap before it\n"
            "             is killed and counted failed (default %d)\n"
            "%s"
            "exit status: 0 every test run passed or skipped, 1 a test failed, 2 a usage error\n"
            "or a bad environment, 77 the one test run skipped\n",
            prog, g_cli != NULL && g_cli->option != NULL ? " | ..." : "",
            g_cli != NULL && g_cli->help_options != NULL ? g_cli->help_options : "", timeout_s(),
            g_cli != NULL && g_cli->help_environment != NULL ? g_cli->help_environment : "");
}

/* The suite's check of its environment, before a test runs. */
static int check_first(void)
{
    return g_cli != NULL && g_cli->check != NULL ? g_cli->check() : 0;
}

int test_main_rows(int argc, char **argv, const test_suite *suite, const test_rows *rows)
{
    g_suite = suite;
    g_rows = rows;
    g_failure_hook = suite->on_failure;
    int rc;
    if (argc == 1)
        return (rc = check_first()) != 0 ? rc : run_all(0);
    if (argc != 2) {
        fprintf(stderr, "usage: %s [TEST | --all | --tap | --list | --help | --version%s]\n", argv[0],
                g_cli != NULL && g_cli->option != NULL ? " | ..." : "");
        return 2;
    }
    const char *arg = argv[1];
    if (arg[0] == '-' && g_cli != NULL && g_cli->option != NULL && (rc = g_cli->option(arg)) >= 0)
        return rc;
    if (strcmp(arg, "--all") == 0 || strcmp(arg, "--tap") == 0)
        return (rc = check_first()) != 0 ? rc : run_all(arg[2] == 't');
    if (strcmp(arg, "--list") == 0) {
        for (size_t i = 0; i < test_count(); i++)
            printf("%s\n", test_name(i));
        return 0;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        usage(stdout, argv[0]);
        return 0;
    }
    if (strcmp(arg, "--version") == 0) {
        const char *base = strrchr(argv[0], '/');
        printf("%s (infinirt) %d.%d.%d\n", base != NULL ? base + 1 : argv[0], INFINIRT_VERSION_MAJOR,
               INFINIRT_VERSION_MINOR, INFINIRT_VERSION_PATCH);
        return 0;
    }
    if (arg[0] == '-') {
        fprintf(stderr, "%s: unknown option %s (%s --help lists them)\n", argv[0], arg, argv[0]);
        return 2;
    }
    for (size_t i = 0; i < test_count(); i++) {
        if (strcmp(arg, test_name(i)) == 0) {
            if ((rc = check_first()) != 0)
                return rc;
            rc = run_here(i);
            fprintf(stderr, "%s: %s\n", test_name(i), verdict_word(rc));
            if (quick_exit_on()) {
                fflush(NULL);
                _exit(rc);
            }
            return rc;
        }
    }
    fprintf(stderr, "no test named %s (%s --list names them)\n", arg, argv[0]);
    return 2;
}
