/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common.c - what every part of the loader uses to name things and report
 * failures: the status, device-type and plugin-status names, the device
 * type table, and the failure helpers that log a call's error.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

/* ---------------------------------------------------------------- names */

INFINIRT_API const char *infinirtGetErrorString(infiniStatus_t status)
{
    switch ((int)status) {
#define INFINIRT__STR_CASE(name, value, text) \
    case value:                               \
        return text;
        INFINI_STATUS_MAP(INFINIRT__STR_CASE)
#undef INFINIRT__STR_CASE
    }
    return "unknown status";
}

INFINIRT_API const char *infinirtGetErrorName(infiniStatus_t status)
{
    switch ((int)status) {
#define INFINIRT__NAME_CASE(name, value, text) \
    case value:                                \
        return #name;
        INFINI_STATUS_MAP(INFINIRT__NAME_CASE)
#undef INFINIRT__NAME_CASE
    }
    return "UNKNOWN_STATUS";
}

/* By type slot (infinirt__type_slot). */
static const char *const k_type_names[INFINIRT__TYPE_SLOTS] = {
    "cpu", "nvidia", "cambricon", "ascend", "metax", "moore", "iluvatar", "kunlun", "hygon", "qy", "ali", "opencl",
};

infiniDevice_t infinirt__slot_type(int slot)
{
    return slot < INFINI_DEVICE_TYPE_COUNT ? (infiniDevice_t)slot : INFINI_DEVICE_OPENCL;
}

int infinirt__parse_device_type(const char *name)
{
    if (name == NULL)
        return -1;
    for (int i = 0; i < INFINIRT__TYPE_SLOTS; i++)
        if (strcasecmp(name, k_type_names[i]) == 0)
            return (int)infinirt__slot_type(i);
    if (strcasecmp(name, "cuda") == 0)
        return INFINI_DEVICE_NVIDIA;
    return -1;
}

INFINIRT_API const char *infinirtGetDeviceTypeName(infiniDevice_t device)
{
    int slot = infinirt__type_slot(device);
    return slot < 0 ? "unknown" : k_type_names[slot];
}

INFINIRT_API const char *infinirtGetPluginStatusString(infinirtPluginStatus_t status)
{
    switch (status) {
    case INFINIRT_PLUGIN_LOADED:
        return "loaded";
    case INFINIRT_PLUGIN_DISABLED:
        return "disabled";
    case INFINIRT_PLUGIN_NOT_FOUND:
        return "file not found";
    case INFINIRT_PLUGIN_DLOPEN_ERROR:
        return "dlopen error";
    case INFINIRT_PLUGIN_ENTRY_MISSING:
        return "entry missing";
    case INFINIRT_PLUGIN_ABI_MISMATCH:
        return "ABI mismatch";
    case INFINIRT_PLUGIN_INIT_FAILED:
        return "init failed";
    case INFINIRT_PLUGIN_NO_DEVICES:
        return "zero devices";
    case INFINIRT_PLUGIN_DUPLICATE_TYPE:
        return "duplicate device type";
    case INFINIRT_PLUGIN_NOT_STARTED:
        return "not started";
    case INFINIRT_PLUGIN_STARTING:
        return "starting";
    }
    return "unknown";
}

/* ------------------------------------------------------------- failures */

infiniStatus_t infinirt__fail(infiniStatus_t st, const char *fn, const char *fmt, ...)
{
    /* NOT_READY is an answer ("not yet"), not a failure: a program that
     * polls must not flood the log. */
    int level = st == INFINI_STATUS_NOT_READY ? INFINIRT__LOG_DEBUG : INFINIRT__LOG_WARN;
    if (infinirt__log_enabled(level)) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        infinirt__log(level, "%s: %s (%s)", fn, msg, infinirtGetErrorName(st));
    }
    return st;
}

infiniStatus_t infinirt__plugin_failed(infiniStatus_t st, const infinirt__device *dev, const char *entry)
{
    if (st == INFINI_STATUS_NOT_IMPLEMENTED) {
        /* The loader's stub for an entry the plugin does not have. */
        INFINIRT__WARN("%s:%d (plugin %s): %s is not supported by this plugin",
                       infinirtGetDeviceTypeName(dev->plugin->type), dev->id, dev->plugin->name, entry);
        return st;
    }
    if (st == INFINI_STATUS_NOT_READY) { /* an answer, not a failure (see infinirt__fail) */
        INFINIRT__DEBUG("%s:%d (plugin %s): %s: not ready", infinirtGetDeviceTypeName(dev->plugin->type), dev->id,
                        dev->plugin->name, entry);
        return st;
    }
    INFINIRT__WARN("%s:%d (plugin %s): %s failed: %s", infinirtGetDeviceTypeName(dev->plugin->type), dev->id,
                   dev->plugin->name, entry, infinirtGetErrorName(st));
    return st;
}

infiniStatus_t infinirt__plugin_gave_null(const infinirt__device *dev, const char *entry, const char *what)
{
    INFINIRT__WARN("%s:%d (plugin %s): %s answered SUCCESS with a NULL %s: the creation fails (%s)",
                   infinirtGetDeviceTypeName(dev->plugin->type), dev->index, dev->plugin->name, entry, what,
                   infinirtGetErrorName(INFINI_STATUS_INTERNAL_ERROR));
    return INFINI_STATUS_INTERNAL_ERROR;
}
