/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_plugin.c - the CPU reference plugin: the entry, the ops table, init
 * and shutdown, and device info.  The CPU plugin is the skeleton a new
 * backend starts from (plugins/README.md); each of its files says at the
 * top what it holds and what a vendor replaces.
 *
 * Template: keep this file's shape.  init reads the config (cpu_config.c),
 * finds the devices and says how many; get_device_info fills the name and
 * memory; the table at the bottom names every entry the backend has, in
 * the order of infinirtPluginOps, and NULL (left out) means "not
 * supported".  The entries themselves live in the files named after their
 * group: <p>_device.c, <p>_stream.c, <p>_event.c, <p>_memory.c.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"

#include <stdio.h>
#include <string.h>

void (*cpu__log)(int level, const char *plugin, const char *fmt, ...);
const infinirtPluginTrace *cpu__trace;
/* Set by init, before any entry that uses it can be called. */
const cpu__queue_ops *cpu__queue = &cpu__queue_inline;

static char g_cpu_model[128];

/* The init args this plugin reads end with message_size (ABI 1.0); what
 * came later (config_warnv) is read only by infinirtPluginConfigWarn, which
 * checks struct_size itself.  Smaller args are refused with BAD_PARAM, and
 * as the message buffer is among the missing fields, the log says why
 * (plugins/README.md, "ABI fields"). */
#define INIT_ARGS_SIZE (offsetof(infinirtPluginInitArgs, message_size) + sizeof(size_t))

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

static infiniStatus_t plugin_init(const infinirtPluginInitArgs *args, int *device_count)
{
    if (args->struct_size < INIT_ARGS_SIZE) {
        if (args->struct_size >= offsetof(infinirtPluginInitArgs, message) && args->log != NULL)
            args->log(INFINIRT_PLUGIN_LOG_ERROR, "cpu", "init args of %u bytes: ABI 1.0's are %zu", args->struct_size,
                      INIT_ARGS_SIZE);
        return INFINI_STATUS_BAD_PARAM;
    }
    cpu__log = args->log;
    cpu__config cfg;
    cpu__config_parse(args, &cfg);
    int count = cfg.devices;
    if (count == 0) {
        snprintf(args->message, args->message_size, "devices = 0 in the config");
        *device_count = 0;
        return INFINI_STATUS_SUCCESS;
    }
    /* Chosen once: no entry asks the mode again. */
    cpu__queue = cfg.inline_mode ? &cpu__queue_inline : &cpu__queue_async;
    cpu__settings = cfg;
    /* Tracing (ABI 1.7): async streams report when each command ran;
     * inline work is done within its entry, which the loader times. */
    infinirtPluginTrace *trace = infinirtPluginTraceOf(args);
    if (trace != NULL && !cfg.inline_mode) {
        trace->plugin_flags |= INFINIRT_PLUGIN_TRACE_REPORTS;
        cpu__trace = trace;
    }
    read_cpu_model();
    cpu__devices_init(count);
    *device_count = count;
    return INFINI_STATUS_SUCCESS;
}

static void plugin_shutdown(void)
{
    cpu__queue->shutdown();
}

static infiniStatus_t get_device_info(int dev, infinirtPluginDeviceInfo *info)
{
    cpu_device *d = cpu__device(dev);
    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "CPU %d (%s)", dev, g_cpu_model);
    size_t total = cpu__machine_total();
    size_t limit = cpu__settings.memory_limit;
    if (limit != 0 && limit < total)
        total = limit;
    info->total_memory = total;
    snprintf(info->description, sizeof info->description,
             "logical device %d of %d on host memory; memory_limit %zu bytes%s", dev, cpu__device_count(), limit,
             limit ? "" : " (none)");
    return INFINI_STATUS_SUCCESS;
}

static const infinirtPluginOps ops = {
    .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
    .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(infinirtPluginOps),
    .name = "cpu",
    .device_type = INFINI_DEVICE_CPU,
    .init = plugin_init,
    .shutdown = plugin_shutdown,
    .get_device_info = get_device_info,
    .get_mem_info = cpu__get_mem_info,
    .device_synchronize = cpu__device_synchronize,
    .stream_create = cpu__stream_create,
    .stream_destroy = cpu__stream_destroy,
    .stream_synchronize = cpu__stream_synchronize,
    .stream_wait_event = cpu__stream_wait_event,
    .launch_host_func = cpu__launch_host_func,
    .event_create = cpu__event_create,
    .event_destroy = cpu__event_destroy,
    .event_record = cpu__event_record,
    .event_query = cpu__event_query,
    .event_synchronize = cpu__event_synchronize,
    .event_elapsed_time = cpu__event_elapsed_time,
    .malloc_device = cpu__malloc_device,
    .free_device = cpu__free_device,
    .malloc_host = cpu__malloc_host,
    .free_host = cpu__free_host,
    .memcpy = cpu__memcpy,
    .memcpy_async = cpu__memcpy_async,
    .memset = cpu__memset,
    .memset_async = cpu__memset_async,
    /* ABI 1.1.  No stream_get_native / event_get_native: the handles are
     * the plugin's objects, a stream beginning with its public table
     * (infinirt_cpu.h). */
    .stream_create_with_flags = cpu__stream_create_with_flags,
    .stream_query = cpu__stream_query,
    .device_get_native = cpu__device_get_native,
    /* ABI 1.5 */
    .get_device_flags = cpu__get_device_flags,
    /* ABI 1.6 */
    .device_query = cpu__device_query,
};

INFINIRT_PLUGIN_DEFINE_ENTRY(ops)
