/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sem_main.c - infinirt-semantics: random programs of stream operations,
 * played on the backend that INFINIRT_TEST_DEVICE and INFINIRT_CONFIG
 * name, checked against the model of the ordering rules
 * (docs/semantics.md).  A failing program is shrunk to a small one and
 * printed as C with its seed.
 *
 *   infinirt-semantics [--seconds S] [--programs N] [--seed N] [--ops N]
 *                      [--without FEATURE]... [--no-shrink] [--race-free]
 *                      [--config NAME]
 *
 * Exit 0 when every program passed, 1 on a failure, 77 when the device
 * type has no device here, 2 on a usage error.
 */
#define _GNU_SOURCE
#include "sem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool device_type(infiniDevice_t *out)
{
    const char *d = getenv("INFINIRT_TEST_DEVICE");
    if (d == NULL || d[0] == '\0') {
        *out = INFINI_DEVICE_CPU;
        return true;
    }
    if (strcmp(d, "cuda") == 0)
        d = "nvidia";
    for (int t = 0; t <= INFINI_DEVICE_TYPE_COUNT; t++) {
        infiniDevice_t type = t < INFINI_DEVICE_TYPE_COUNT ? (infiniDevice_t)t : INFINI_DEVICE_OPENCL;
        if (strcmp(d, infinirtGetDeviceTypeName(type)) == 0) {
            *out = type;
            return true;
        }
    }
    fprintf(stderr, "infinirt-semantics: INFINIRT_TEST_DEVICE=%s is not a device type name\n", d);
    return false;
}

static void noop_fn(void *p)
{
    (void)p;
}

/* What the backend offers, each probed with the call that uses it. */
static void probe(infiniDevice_t type, int count, sem_caps *caps)
{
    infinirtStream_t s = NULL, nb = NULL;
    infinirtSetDevice(type, 0);
    caps->ndevices = count > SEM_MAX_DEVICES ? SEM_MAX_DEVICES : count;
    caps->peer = caps->ndevices > 1;
    if (infinirtStreamCreate(&s) != INFINI_STATUS_SUCCESS)
        return;
    caps->nonblocking = infinirtStreamCreateWithFlags(&nb, INFINIRT_STREAM_NON_BLOCKING) == INFINI_STATUS_SUCCESS;
    if (caps->nonblocking)
        infinirtStreamDestroy(nb);
    caps->host_fn = infinirtLaunchHostFunc(s, noop_fn, NULL) == INFINI_STATUS_SUCCESS;
    infinirtEvent_t e = NULL;
    caps->events = infinirtEventCreate(&e) == INFINI_STATUS_SUCCESS;
    if (caps->events)
        infinirtEventDestroy(e);
    void *p = NULL;
    caps->async_alloc = infinirtMallocAsync(&p, 64, s) == INFINI_STATUS_SUCCESS;
    if (caps->async_alloc)
        infinirtFreeAsync(p, s);
    if (infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL) == INFINI_STATUS_SUCCESS) {
        infinirtGraph_t g = NULL;
        infinirtMemsetAsync(NULL, 0, 0, s);
        caps->graphs = true;
        if (infinirtStreamEndCapture(s, &g) == INFINI_STATUS_SUCCESS && g != NULL)
            infinirtGraphDestroy(g);
    }
    infinirtStreamSynchronize(s);
    infinirtStreamDestroy(s);
}

static bool without(sem_caps *caps, const char *f)
{
    if (strcmp(f, "nonblocking") == 0)
        caps->nonblocking = false;
    else if (strcmp(f, "host_functions") == 0)
        caps->host_fn = false;
    else if (strcmp(f, "events") == 0)
        caps->events = false;
    else if (strcmp(f, "graphs") == 0)
        caps->graphs = false;
    else if (strcmp(f, "async_alloc") == 0)
        caps->async_alloc = false;
    else if (strcmp(f, "peer") == 0)
        caps->peer = false;
    else if (strcmp(f, "second_device") == 0)
        caps->ndevices = 1, caps->peer = false;
    else
        return false;
    return true;
}

static bool fails(const sem_program *p, const sem_caps *caps, infiniDevice_t type, int tries, sem_result *res)
{
    for (int t = 0; t < tries; t++)
        if (sem_run(p, caps, type, res) && res->failures > 0)
            return true;
    return false;
}

/* Remove chunks of operations, halving the chunk when nothing more can go,
 * keeping each removal after which the program (made legal again) still
 * fails; within a budget of runs and time. */
static void shrink(sem_program *best, const sem_caps *caps, infiniDevice_t type, sem_result *res)
{
    static sem_program cand;
    sem_result r;
    double deadline = now_s() + 90.0;
    int runs = 0, before = best->nops;
    for (int chunk = best->nops / 2; chunk >= 1 && runs < 400 && now_s() < deadline;) {
        bool progress = false;
        for (int start = 0; start < best->nops && runs < 400 && now_s() < deadline;) {
            cand = *best;
            int end = start + chunk < cand.nops ? start + chunk : cand.nops;
            memmove(&cand.ops[start], &cand.ops[end], (size_t)(cand.nops - end) * sizeof cand.ops[0]);
            cand.nops -= end - start;
            sem_program_legalize(&cand, caps);
            runs++;
            if (cand.nops < best->nops && fails(&cand, caps, type, 3, &r)) {
                *best = cand;
                *res = r;
                progress = true;
            } else {
                start += chunk;
            }
        }
        if (!progress)
            chunk /= 2;
    }
    fprintf(stderr, "shrunk from %d to %d operations (%d runs)\n", before, best->nops, runs);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: infinirt-semantics [--seconds S] [--programs N] [--seed N] [--ops N]\n"
               "                          [--without FEATURE]... [--no-shrink] [--race-free]\n"
               "                          [--config NAME]\n"
               "Random programs of stream operations on the device type INFINIRT_TEST_DEVICE\n"
               "(cpu when unset) of the config INFINIRT_CONFIG, each checked against the model\n"
               "of the ordering rules (docs/semantics.md).  A failing program is shrunk and\n"
               "printed as C with its seed; --seed N --programs 1 replays it.\n"
               "  --seconds S    stop after S seconds (default 20)\n"
               "  --programs N   stop after N programs (default: no limit)\n"
               "  --seed N       seed of the first program (default: from the clock)\n"
               "  --ops N        operations per program (default 60, at most 240)\n"
               "  --without F    do not use F: nonblocking, host_functions, events, graphs,\n"
               "                 async_alloc, peer, second_device\n"
               "  --no-shrink    print a failing program as it was generated\n"
               "  --race-free    only programs whose accesses of a buffer are all ordered\n"
               "                 (for ThreadSanitizer; the others race on purpose)\n"
               "  --config NAME  the configuration's name, for the printed program\n"
               "Exit: 0 all passed, 1 a program failed, 77 no device of the type, 2 usage.\n");
}

int main(int argc, char **argv)
{
    double seconds = 20;
    long programs = -1;
    int nops = 60;
    bool shrink_on = true, seeded = false, race_free = false;
    uint64_t seed = 0;
    const char *config = "unnamed";
    const char *off[16];
    int noff = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--no-shrink") == 0) {
            shrink_on = false;
        } else if (strcmp(a, "--race-free") == 0) {
            race_free = true;
        } else if (v != NULL && strcmp(a, "--seconds") == 0) {
            seconds = atof(v), i++;
        } else if (v != NULL && strcmp(a, "--programs") == 0) {
            programs = atol(v), i++;
        } else if (v != NULL && strcmp(a, "--seed") == 0) {
            seed = strtoull(v, NULL, 0), seeded = true, i++;
        } else if (v != NULL && strcmp(a, "--ops") == 0) {
            nops = atoi(v), i++;
        } else if (v != NULL && strcmp(a, "--config") == 0) {
            config = v, i++;
        } else if (v != NULL && strcmp(a, "--without") == 0 && noff < 16) {
            off[noff++] = v, i++;
        } else {
            fprintf(stderr, "infinirt-semantics: unknown or incomplete option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (nops < 4 || nops > SEM_MAX_OPS - 16 || seconds <= 0) {
        fprintf(stderr, "infinirt-semantics: --ops takes 4 to %d, --seconds a positive number\n", SEM_MAX_OPS - 16);
        return 2;
    }
    infiniDevice_t type;
    if (!device_type(&type))
        return 2;
    int count = 0;
    if (infinirtGetDeviceCount(type, &count) != INFINI_STATUS_SUCCESS || count == 0) {
        printf("skip: no %s device here\n", infinirtGetDeviceTypeName(type));
        return 77;
    }
    sem_caps caps = {0};
    probe(type, count, &caps);
    caps.race_free = race_free;
    for (int i = 0; i < noff; i++)
        if (!without(&caps, off[i])) {
            fprintf(stderr, "infinirt-semantics: --without %s: not a feature name\n", off[i]);
            return 2;
        }
    if (!seeded)
        seed = (uint64_t)time(NULL) % 1000000 * 1000;
    printf("infinirt-semantics: %s (%s), %d device(s); non-blocking streams %s, host functions %s, events %s, "
           "stream-ordered memory %s, graphs %s, peer %s; first seed %llu\n",
           infinirtGetDeviceTypeName(type), config, caps.ndevices, caps.nonblocking ? "yes" : "no",
           caps.host_fn ? "yes" : "no", caps.events ? "yes" : "no", caps.async_alloc ? "yes" : "no",
           caps.graphs ? "yes" : "no", caps.peer ? "yes" : "no", (unsigned long long)seed);
    fflush(stdout);

    static sem_program prog;
    sem_result res;
    long passed = 0, failed = 0, total_ops = 0, reads = 0, determined = 0;
    double start = now_s();
    for (long k = 0; (programs < 0 || k < programs) && now_s() - start < seconds; k++) {
        sem_generate(&prog, &caps, seed + (uint64_t)k, nops);
        if (!sem_run(&prog, &caps, type, &res)) {
            fprintf(stderr, "infinirt-semantics: %s\n", res.first);
            return 1;
        }
        total_ops += prog.nops;
        reads += res.reads;
        determined += res.determined;
        if (res.failures == 0) {
            passed++;
            continue;
        }
        failed++;
        printf("FAIL seed %llu: %s\n", (unsigned long long)prog.seed, res.first);
        fflush(stdout);
        if (shrink_on)
            shrink(&prog, &caps, type, &res);
        sem_print_c(&prog, &caps, type, &res, config);
        fflush(stdout);
        break; /* one failure is enough to act on; its seed replays it */
    }
    printf("infinirt-semantics: %ld programs, %ld operations, %ld reads (%ld determined by the rules) in %.1f s\n",
           passed + failed, total_ops, reads, determined, now_s() - start);
    printf("semantics: %ld passed, %ld failed\n", passed, failed);
    if (passed + failed == 0 || determined == 0) {
        printf("infinirt-semantics: nothing was checked\n");
        return 1;
    }
    return failed ? 1 : 0;
}
