/*
 * cpu_plugin.c - the CPU reference plugin: configuration, devices, memory,
 * and the ops table.
 *
 * [plugin.cpu] keys:
 *   devices = N          logical CPU devices to expose (default 1, max 64)
 *   memory_limit = SIZE  per device; raw allocations beyond it fail with
 *                        OUT_OF_MEMORY (suffixes K, M, G, T, KiB ... TiB).  Lets tests drive
 *                        multi-device routing and out-of-memory without
 *                        hardware.
 *   streams = MODE       inline (default): every operation is done on the
 *                        caller's thread before the call returns, as in
 *                        InfiniCore's CPU runtime; async: streams run on a
 *                        pool of worker threads (see cpu.h, cpu_pool.c).
 *   workers = N          async: the pool's threads (default: online CPUs,
 *                        at most 64), started as work needs them.
 *   max_workers = N      async: the most threads while every worker sits in
 *                        a host function (default 4 x workers, at least 16).
 * A value that cannot be used is reported (file:line, through the loader)
 * and the default kept; an unknown key is reported and ignored.
 */
#define _GNU_SOURCE
#include "cpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#define CPU_MAX_DEVICES 64
#define CPU_MAX_WORKERS 1024
/* Device memory is 256-byte aligned, as CUDA's is; the size lives in a
 * header before the returned pointer so free can account for it. */
#define CPU_ALIGN 256

void (*cpu__log)(int level, const char *plugin, const char *fmt, ...);

static cpu_device g_devices[CPU_MAX_DEVICES];
static int g_count;
static char g_cpu_model[128];

cpu_device *cpu__device(int dev)
{
    return &g_devices[dev];
}

int cpu__device_count(void)
{
    return g_count;
}

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

static void read_cpu_model(void)
{
    snprintf(g_cpu_model, sizeof g_cpu_model, "host CPU");
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (f == NULL)
        return;
    char line[256];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon != NULL) {
                colon++;
                while (*colon == ' ')
                    colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(g_cpu_model, sizeof g_cpu_model, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

static infiniStatus_t cpu_init(const infinirtPluginInitArgs *args, int *device_count)
{
    cpu__log = args->log;
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
            if (parse_int(v, 0, CPU_MAX_DEVICES, &count) != 0)
                infinirtPluginConfigWarn(args, "cpu", i, "not a number from 0 to %d; using %d", CPU_MAX_DEVICES,
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
    if (count == 0) {
        snprintf(args->message, args->message_size, "devices = 0 in the config");
        *device_count = 0;
        return INFINI_STATUS_SUCCESS;
    }
    cpu__inline = inline_mode;
    cpu__workers = workers;
    cpu__max_workers = max_workers;
    read_cpu_model();
    for (int i = 0; i < count; i++) {
        cpu_device *d = &g_devices[i];
        memset(d, 0, sizeof *d);
        d->index = i;
        d->memory_limit = limit;
        atomic_init(&d->used, 0);
        atomic_init(&d->default_stream, NULL);
        pthread_mutex_init(&d->lock, NULL);
    }
    g_count = count;
    *device_count = count;
    return INFINI_STATUS_SUCCESS;
}

static void cpu_shutdown(void)
{
    cpu__shutdown_streams();
}

static size_t machine_total(void)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0)
        return 0;
    return (size_t)si.totalram * si.mem_unit;
}

static size_t machine_available(void)
{
    /* MemAvailable counts reclaimable cache, which sysinfo's freeram does
     * not: it is the figure a user means by "free". */
    FILE *f = fopen("/proc/meminfo", "re");
    size_t kb = 0;
    if (f != NULL) {
        char line[128];
        while (fgets(line, sizeof line, f) != NULL)
            if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1)
                break;
        fclose(f);
    }
    if (kb == 0) {
        struct sysinfo si;
        if (sysinfo(&si) == 0)
            return (size_t)si.freeram * si.mem_unit;
    }
    return kb * 1024;
}

static infiniStatus_t cpu_get_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    cpu_device *d = cpu__device(dev);
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "CPU %d (%s)", dev, g_cpu_model);
    size_t total = machine_total();
    if (d->memory_limit != 0 && d->memory_limit < total)
        total = d->memory_limit;
    info->total_memory = total;
    snprintf(info->description, sizeof info->description,
             "logical device %d of %d on host memory; memory_limit %zu bytes%s", dev, g_count, d->memory_limit,
             d->memory_limit ? "" : " (none)");
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_get_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    cpu_device *d = cpu__device(dev);
    size_t total = machine_total(), avail = machine_available();
    if (d->memory_limit != 0) {
        size_t used = atomic_load(&d->used);
        size_t left = d->memory_limit > used ? d->memory_limit - used : 0;
        total = d->memory_limit < total ? d->memory_limit : total;
        avail = left < avail ? left : avail;
    }
    *free_bytes = avail;
    *total_bytes = total;
    return INFINI_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- memory */

static infiniStatus_t raw_alloc(void **ptr, size_t size)
{
    if (size > SIZE_MAX - CPU_ALIGN)
        return INFINI_STATUS_OUT_OF_MEMORY;
    void *base = NULL;
    if (posix_memalign(&base, CPU_ALIGN, size + CPU_ALIGN) != 0)
        return INFINI_STATUS_OUT_OF_MEMORY;
    *(size_t *)base = size;
    *ptr = (char *)base + CPU_ALIGN;
    return INFINI_STATUS_SUCCESS;
}

static size_t raw_size(void *ptr)
{
    return *(size_t *)((char *)ptr - CPU_ALIGN);
}

static void raw_free(void *ptr)
{
    free((char *)ptr - CPU_ALIGN);
}

static infiniStatus_t cpu_malloc_device(int dev, void **ptr, size_t size)
{
    cpu_device *d = cpu__device(dev);
    if (d->memory_limit != 0) {
        /* Reserve first, so concurrent allocations never overshoot. */
        size_t before = atomic_fetch_add(&d->used, size);
        if (before + size > d->memory_limit || before + size < before) {
            atomic_fetch_sub(&d->used, size);
            return INFINI_STATUS_OUT_OF_MEMORY;
        }
    }
    infiniStatus_t st = raw_alloc(ptr, size);
    if (st != INFINI_STATUS_SUCCESS && d->memory_limit != 0)
        atomic_fetch_sub(&d->used, size);
    return st;
}

static infiniStatus_t cpu_free_device(int dev, void *ptr)
{
    cpu_device *d = cpu__device(dev);
    if (d->memory_limit != 0)
        atomic_fetch_sub(&d->used, raw_size(ptr));
    raw_free(ptr);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_malloc_host(int dev, void **ptr, size_t size)
{
    return raw_alloc(ptr, size);
}

static infiniStatus_t cpu_free_host(int dev, void *ptr)
{
    raw_free(ptr);
    return INFINI_STATUS_SUCCESS;
}

/* A synchronous copy or fill comes after the work queued on the default
 * stream and the blocking streams, as a legacy-stream cudaMemcpy does (in
 * inline mode there is none). */
static infiniStatus_t cpu_memcpy(int dev, void *dst, const void *src, size_t size, int kind)
{
    if (cpu__inline && cpu__in_host_fn == 0) { /* nothing to wait for, no call */
        memmove(dst, src, size);
        return INFINI_STATUS_SUCCESS;
    }
    infiniStatus_t st = cpu__sync_point(dev, "memcpy");
    if (st == INFINI_STATUS_SUCCESS)
        memmove(dst, src, size);
    return st;
}

static infiniStatus_t cpu_memset(int dev, void *ptr, int value, size_t size)
{
    if (cpu__inline && cpu__in_host_fn == 0) { /* nothing to wait for, no call */
        memset(ptr, value, size);
        return INFINI_STATUS_SUCCESS;
    }
    infiniStatus_t st = cpu__sync_point(dev, "memset");
    if (st == INFINI_STATUS_SUCCESS)
        memset(ptr, value, size);
    return st;
}

/* --------------------------------------------------------------- streams */

static infiniStatus_t cpu_stream_create_with_flags(int dev, uint32_t flags, void **stream)
{
    if (flags & ~INFINIRT_PLUGIN_STREAM_NON_BLOCKING)
        return INFINI_STATUS_BAD_PARAM;
    return cpu__stream_new(dev, flags, stream);
}

static infiniStatus_t cpu_stream_create(int dev, void **stream)
{
    return cpu__stream_new(dev, 0, stream);
}

static infiniStatus_t cpu_stream_destroy(int dev, void *stream)
{
    cpu__stream_free(stream);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_stream_synchronize(int dev, void *stream)
{
    return cpu__stream_sync(dev, stream);
}

/* With streams = inline every operation, native ones included, is done
 * before the call that queued it returns: the loader then counts nothing
 * and fences nothing on the device. */
static infiniStatus_t cpu_get_device_flags(int dev, uint32_t *flags)
{
    (void)dev;
    *flags = cpu__inline ? INFINIRT_PLUGIN_DEVICE_DONE_AT_RETURN : 0;
    return INFINI_STATUS_SUCCESS;
}

/* Also counts what was queued natively (infinirt_cpu.h), which the loader
 * does not see. */
static infiniStatus_t cpu_stream_query(int dev, void *stream, int *idle)
{
    cpu__stream_query(dev, stream, idle);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_device_synchronize(int dev)
{
    return cpu__device_sync(dev);
}

static infiniStatus_t cpu_device_get_native(int dev, void **device, void **context)
{
    *device = NULL; /* host memory and threads: no native device object */
    *context = NULL;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_stream_wait_event(int dev, void *stream, void *event)
{
    return cpu__wait_event(dev, stream, event);
}

static infiniStatus_t cpu_launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data)
{
    return cpu__host_fn(dev, stream, fn, user_data);
}

static infiniStatus_t cpu_memcpy_async(int dev, void *dst, const void *src, size_t size, int kind, void *stream)
{
    return cpu__copy(dev, stream, dst, src, size);
}

static infiniStatus_t cpu_memset_async(int dev, void *ptr, int value, size_t size, void *stream)
{
    return cpu__fill(dev, stream, ptr, value, size);
}

/* ---------------------------------------------------------------- events */

static infiniStatus_t cpu_event_create(int dev, uint32_t flags, void **event)
{
    cpu_event *e = cpu__event_new(dev, flags);
    if (e == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    *event = e;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_event_destroy(int dev, void *event)
{
    cpu__event_put(event); /* queued records keep their own reference */
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_event_record(int dev, void *event, void *stream)
{
    return cpu__record(dev, stream, event);
}

static infiniStatus_t cpu_event_query(int dev, void *event, int *complete)
{
    *complete = cpu__event_pending_gen(event) == 0;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_event_synchronize(int dev, void *event)
{
    CPU__REFUSE_IN_HOST_FN("event_synchronize");
    uint64_t gen = cpu__event_pending_gen(event);
    if (gen != 0)
        cpu__event_wait_gen(event, gen);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t cpu_event_elapsed_time(int dev, float *ms, void *start, void *end)
{
    cpu_event *a = start, *b = end;
    double ta = 0, tb = 0;
    int rec = 1, done = 1;
    pthread_mutex_lock(&a->mu);
    rec &= a->recorded > 0;
    done &= a->completed >= a->recorded;
    ta = a->completed_at_ms;
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_lock(&b->mu);
    rec &= b->recorded > 0;
    done &= b->completed >= b->recorded;
    tb = b->completed_at_ms;
    pthread_mutex_unlock(&b->mu);
    if (!rec || ((a->flags | b->flags) & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING))
        return INFINI_STATUS_INVALID_STATE;
    if (!done)
        return INFINI_STATUS_NOT_READY;
    *ms = (float)(tb - ta);
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps cpu_ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = "cpu",
    .device_type = INFINI_DEVICE_CPU,
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .get_device_info = cpu_get_device_info,
    .get_mem_info = cpu_get_mem_info,
    .device_synchronize = cpu_device_synchronize,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .stream_wait_event = cpu_stream_wait_event,
    .launch_host_func = cpu_launch_host_func,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_query = cpu_event_query,
    .event_synchronize = cpu_event_synchronize,
    .event_elapsed_time = cpu_event_elapsed_time,
    .malloc_device = cpu_malloc_device,
    .free_device = cpu_free_device,
    .malloc_host = cpu_malloc_host,
    .free_host = cpu_free_host,
    .memcpy = cpu_memcpy,
    .memcpy_async = cpu_memcpy_async,
    .memset = cpu_memset,
    .memset_async = cpu_memset_async,
    /* ABI 1.1.  No stream_get_native / event_get_native: the handles are
     * the plugin's objects, a stream beginning with its public table
     * (infinirt_cpu.h). */
    .stream_create_with_flags = cpu_stream_create_with_flags,
    .stream_query = cpu_stream_query,
    .device_get_native = cpu_device_get_native,
    /* ABI 1.5 */
    .get_device_flags = cpu_get_device_flags,
};

INFINIRT_PLUGIN_DEFINE_ENTRY(cpu_ops)
