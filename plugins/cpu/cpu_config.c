/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_config.c - the [plugin.cpu] keys, read once by init.
 *
 *   devices = N          logical CPU devices to expose (default 1, max 64)
 *   memory_limit = SIZE  per device; raw allocations beyond it fail with
 *                        OUT_OF_MEMORY (suffixes K, M, G, T, KiB ... TiB).  Lets tests drive
 *                        multi-device routing and out-of-memory without
 *                        hardware.
 *   streams = MODE       inline (default): every operation is done on the
 *                        caller's thread before the call returns, as in
 *                        InfiniCore's CPU runtime; async: streams run on a
 *                        pool of worker threads (see cpu_internal.h, cpu_pool.c).
 *   workers = N          async: the pool's threads (default: online CPUs,
 *                        at most 64), started as work needs them.
 *   max_workers = N      async: the most threads while every worker sits in
 *                        a host function (default 4 x workers, at least 16).
 * A value that cannot be used is reported (file:line, through the loader)
 * and the default kept; an unknown key is reported and ignored.
 *
 * Template: a vendor's <p>_config.c reads its own keys the same way (one
 * loop, infinirtPluginConfigWarn for what it cannot use, the parsers of
 * infinirt_plugin.h) into one struct, which init keeps as the settings in
 * use (cpu__settings): no other file holds a setting of its own.
 */
#include "cpu_internal.h"

#include <string.h>
#include <unistd.h>

#define CPU_MAX_WORKERS 1024

/* What the defaults would give (1 device, inline), until init parses. */
cpu__config cpu__settings = {.devices = 1, .inline_mode = true, .workers = 1, .max_workers = 16};

/* A whole number from lo to hi (devices, workers, max_workers); *out is
 * left alone otherwise. */
static int parse_int(const char *v, long lo, long hi, int *out)
{
    long n;
    if (infinirtPluginParseCount(v, lo, hi, &n) != 0)
        return -1;
    *out = (int)n;
    return 0;
}

void cpu__config_parse(const infinirtPluginInitArgs *args, cpu__config *cfg)
{
    int count = 1;
    size_t limit = 0;
    bool inline_mode = true;
    int workers = 0, max_workers = 0; /* 0: the default */
    size_t max_workers_key = 0;
    for (size_t i = 0; i < args->config_count; i++) {
        const char *k = args->config[i].key, *v = args->config[i].value;
        /* A bad value is reported with its file and line and the default
         * stays: one typo must not take the backend down. */
        if (strcmp(k, "devices") == 0) {
            if (parse_int(v, 0, CPU__MAX_DEVICES, &count) != 0)
                infinirtPluginConfigWarn(args, "cpu", i, "not a number from 0 to %d; using %d", CPU__MAX_DEVICES,
                                         count);
        } else if (strcmp(k, "streams") == 0) {
            if (strcmp(v, "inline") == 0)
                inline_mode = true;
            else if (strcmp(v, "async") == 0)
                inline_mode = false;
            else
                infinirtPluginConfigWarn(args, "cpu", i, "not inline or async; using %s",
                                         inline_mode ? "inline" : "async");
        } else if (strcmp(k, "workers") == 0) {
            if (parse_int(v, 1, CPU_MAX_WORKERS, &workers) != 0)
                infinirtPluginConfigWarn(args, "cpu", i, "not a number from 1 to %d; using the default",
                                         CPU_MAX_WORKERS);
        } else if (strcmp(k, "max_workers") == 0) {
            if (parse_int(v, 1, CPU_MAX_WORKERS, &max_workers) != 0)
                infinirtPluginConfigWarn(args, "cpu", i, "not a number from 1 to %d; using the default",
                                         CPU_MAX_WORKERS);
            else
                max_workers_key = i;
        } else if (strcmp(k, "memory_limit") == 0) {
            if (infinirtPluginParseSize(v, &limit) != 0)
                infinirtPluginConfigWarn(args, "cpu", i, "not a size (e.g. 64M, 2GiB, 1T); using %zu", limit);
        } else {
            infinirtPluginConfigWarn(
                args, "cpu", i, "unknown key ignored (known: devices, max_workers, memory_limit, streams, workers)");
        }
    }
    if (workers == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        workers = cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus;
    }
    if (max_workers == 0) {
        max_workers = 4 * workers < 16 ? 16 : 4 * workers;
        if (max_workers > CPU_MAX_WORKERS)
            max_workers = CPU_MAX_WORKERS;
    } else if (max_workers < workers) {
        infinirtPluginConfigWarn(args, "cpu", max_workers_key, "less than workers = %d; using %d", workers, workers);
        max_workers = workers;
    }
    cfg->devices = count;
    cfg->memory_limit = limit;
    cfg->inline_mode = inline_mode;
    cfg->workers = workers;
    cfg->max_workers = max_workers;
}
