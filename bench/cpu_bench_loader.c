/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_bench_loader.c - infinirt-cpu-bench's loader rows (docs/performance.md,
 * issue 34): the cost of reading a large config, and of a first CPU call
 * made while another device type's plugin is still starting, each as a
 * ratio against a baseline measured in the same run:
 *
 *   config of 20000 sections   infinirtInit on a config of 20000 [plugin.NAME]
 *                              sections, against 20 times one of 1000: the
 *                              reader must be linear (goal <= 1.5x), and
 *                              fast (goal <= 500 ms).  CPU time: on a busy
 *                              machine the wall time is mostly waiting
 *                              for a CPU, and reading is one thread's work
 *   first CPU call, another    SetDevice(CPU) + Malloc in a process whose
 *   type starting              other thread is starting a plugin whose init
 *                              sleeps (slow_plugin.c: a driver's start-up),
 *                              against the same call with nothing starting:
 *                              a type's start never waits for another's
 *                              (goal <= 1.5x; one start lock for all types
 *                              made it the whole init)
 *
 * Each figure is taken in fresh processes (this program, run again with
 * --loader-...), the least of a few (noise only adds to a time; waiting
 * for another type's start would add its whole init to every one).
 */
#define _GNU_SOURCE
#include "bench_util.h"
#include "infinirt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CPU_PLUGIN
#define CPU_PLUGIN ""
#endif
#ifndef SLOW_PLUGIN
#define SLOW_PLUGIN ""
#endif

int cpu_bench_loader_child(int argc, char **argv);
int cpu_bench_loader_rows(const char *self, int quick);

#define MUST(call) BENCH_MUST("cpu-bench", call)

/* ------------------------------------------------------------ children */

static void *start_ascend(void *arg)
{
    int n = 0;
    (void)arg;
    infinirtGetDeviceCount(INFINI_DEVICE_ASCEND, &n);
    return NULL;
}

/* --loader-init: infinirtInit's CPU time, ns.
 * --loader-first-cpu [STARTED]: the time of SetDevice(CPU) + Malloc 64 B,
 * ns, after infinirtInit; with STARTED, while another thread starts the
 * ascend plugin (timed once its init has created the file STARTED). */
int cpu_bench_loader_child(int argc, char **argv)
{
    if (strcmp(argv[1], "--loader-init") == 0) {
        struct timespec a, b;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        MUST(infinirtInit());
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        printf("%.0f\n", (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec));
        return 0;
    }
    MUST(infinirtInit());
    if (argc > 2) {
        pthread_t t;
        if (pthread_create(&t, NULL, start_ascend, NULL) != 0)
            return 1;
        pthread_detach(t);
        while (access(argv[2], F_OK) != 0)
            nanosleep(&(struct timespec){0, 1000000L}, NULL);
    }
    void *p;
    double t0 = now_ns();
    MUST(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    MUST(infinirtMalloc(&p, 64));
    double t1 = now_ns();
    MUST(infinirtFree(p));
    printf("%.0f\n", t1 - t0);
    return 0;
}

/* ------------------------------------------------------------ the rows */

/* `self` with args under config cfg: the number it prints, or -1. */
static double child_value(const char *self, const char *cfg, char *const args[])
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("INFINIRT_CONFIG", cfg, 1);
        setenv("INFINIRT_LOG", "error", 1);
        execv(self, args);
        _exit(127);
    }
    close(fd[1]);
    char out[64];
    size_t len = 0;
    for (ssize_t r; len + 1 < sizeof out && (r = read(fd[0], out + len, sizeof out - 1 - len)) > 0;)
        len += (size_t)r;
    out[len] = '\0';
    close(fd[0]);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || len == 0) {
        fprintf(stderr, "cpu-bench: %s under %s failed\n", args[1], cfg);
        return -1;
    }
    return strtod(out, NULL);
}

/* The least of n runs, in ms; -1 if one failed.  `fresh`, when not NULL,
 * is removed before each. */
static double runs_ms(const char *self, const char *cfg, char *const args[], int n, const char *fresh)
{
    double least = -1;
    for (int i = 0; i < n; i++) {
        if (fresh != NULL)
            unlink(fresh);
        double v = child_value(self, cfg, args);
        if (v < 0)
            return -1;
        least = least < 0 || v < least ? v : least;
    }
    return least / 1e6;
}

static const char *temp_path(const char *name)
{
    static char path[4][512];
    static int used;
    char *p = path[used++ % 4];
    snprintf(p, sizeof path[0], "%s/infinirt-cpu-bench-%ld-%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (long)getpid(), name);
    return p;
}

/* A config of n [plugin.NAME] sections (a key each) after the cpu plugin's. */
static const char *write_sections(const char *name, int n)
{
    const char *path = temp_path(name);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return NULL;
    fprintf(f, "[plugin.cpu]\nlibrary = %s\n", CPU_PLUGIN);
    for (int i = 0; i < n; i++)
        fprintf(f, "[plugin.p%d]\nenabled = false\n", i);
    return fclose(f) == 0 ? path : NULL;
}

static int g_missing;

/* A row as cpu_bench.c prints them: figure, ratio to the baseline, goal. */
static void row(const char *what, double fig, double base, const char *base_name, double goal, const char *extra,
                int extra_met)
{
    if (fig < 0 || !(base > 0)) {
        printf("%-46s missing: no run printed it or its baseline\n", what);
        g_missing = 1;
        return;
    }
    double ratio = fig / base;
    printf("%-46s %10.1f %-2s %8.2fx %-19s goal <= %.2fx%s: %s\n", what, fig, "ms", ratio, base_name, goal, extra,
           ratio <= goal && extra_met ? "met" : "MISSED");
}

int cpu_bench_loader_rows(const char *self, int quick)
{
    printf("-- loader (fresh processes: config size, a first call while another type starts)\n");
    char *init_args[] = {(char *)self, "--loader-init", NULL};
    const char *big = write_sections("20000.ini", 20000), *small = write_sections("1000.ini", 1000);
    double t_big = -1, t_small = -1;
    if (big != NULL && small != NULL) {
        int n = quick ? 2 : 5;
        t_small = runs_ms(self, small, init_args, n, NULL);
        t_big = runs_ms(self, big, init_args, n, NULL);
    }
    row("config of 20000 sections (infinirtInit, CPU)", t_big, 20 * t_small, "20 x 1000 sections", 1.5,
        " and <= 500 ms", t_big >= 0 && t_big <= 500);
    if (big != NULL)
        unlink(big);
    if (small != NULL)
        unlink(small);

    /* One config for both: the slow plugin is there, started or not. */
    const char *started = temp_path("started"), *cfg = temp_path("slow.ini");
    FILE *f = fopen(cfg, "w");
    double t_slow = -1, t_alone = -1;
    if (f != NULL) {
        fprintf(f,
                "[loader]\nplugins = cpu, slow\n[plugin.cpu]\nlibrary = %s\n[plugin.slow]\nlibrary = %s\n"
                "init_ms = %d\nstarted = %s\n",
                CPU_PLUGIN, SLOW_PLUGIN, quick ? 300 : 500, started);
        if (fclose(f) == 0) {
            char *alone[] = {(char *)self, "--loader-first-cpu", NULL};
            char *slow[] = {(char *)self, "--loader-first-cpu", (char *)started, NULL};
            int n = quick ? 3 : 5;
            t_alone = runs_ms(self, cfg, alone, n, NULL);
            t_slow = runs_ms(self, cfg, slow, n, started);
        }
        unlink(cfg);
        unlink(started);
    }
    row("first CPU call, another type starting", t_slow, t_alone, "nothing starting", 1.5, "", 1);
    return g_missing;
}
