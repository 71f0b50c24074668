/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_report.c - the config report: what the configuration came from
 * (environment variables, files, plugin folders) and every problem found
 * reading it, for infinirt-info and infinirtGetConfigEntry.  The entries
 * are written while the config is loaded (once, under the loader's
 * pthread_once) and only read afterwards.
 */
#define _GNU_SOURCE
#include "config_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Problems kept in the report: every one is logged, but a file that is
 * not a config at all must not grow the report without bound. */
#define CONFIG_MAX_REPORTED_PROBLEMS 64

static char *vformat(const char *fmt, va_list ap)
{
    char buf[1024];
    if (fmt == NULL)
        return infinirt__config_strdup("");
    vsnprintf(buf, sizeof buf, fmt, ap);
    return infinirt__config_strdup(buf);
}

infinirt__config_entry *infinirt__config_add_entry(infinirt__config *cfg, int kind, const char *name,
                                                   const char *value, int problem, const char *fmt, ...)
{
    cfg->entries = infinirt__config_grow(cfg->entries, &cfg->capentries, cfg->nentries, sizeof *cfg->entries);
    infinirt__config_entry *e = &cfg->entries[cfg->nentries++];
    va_list ap;
    va_start(ap, fmt);
    *e = (infinirt__config_entry){kind, infinirt__config_strdup(name), infinirt__config_strdup(value),
                                  vformat(fmt, ap), problem};
    va_end(ap);
    return e;
}

void infinirt__config_entry_say(infinirt__config_entry *e, int problem, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(e->message);
    e->message = vformat(fmt, ap);
    va_end(ap);
    e->problem = problem;
}

void infinirt__config_problem(infinirt__config *cfg, int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    infinirt__log(level, "%s", buf);
    size_t kept = cfg->nproblems++;
    if (kept < CONFIG_MAX_REPORTED_PROBLEMS)
        infinirt__config_add_entry(cfg, INFINIRT_CONFIG_ENTRY_WARNING, "", "", 1, "%s", buf);
    else if (kept == CONFIG_MAX_REPORTED_PROBLEMS)
        infinirt__config_add_entry(cfg, INFINIRT_CONFIG_ENTRY_WARNING, "", "", 1,
                                   "more problems than the report keeps (%d): the others are in the log",
                                   CONFIG_MAX_REPORTED_PROBLEMS);
}

INFINIRT_API infiniStatus_t infinirtGetConfigEntryCount(int *count)
{
    INFINIRT__TRACE_ENTRY(infinirtGetConfigEntryCount, (count));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (count == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "count is NULL");
    *count = (int)infinirt__rt.cfg.nentries;
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtGetConfigEntry(int index, infinirtConfigEntry_t *entry)
{
    INFINIRT__TRACE_ENTRY(infinirtGetConfigEntry, (index, entry));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (entry == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "entry is NULL");
    const infinirt__config *cfg = &infinirt__rt.cfg;
    if (index < 0 || (size_t)index >= cfg->nentries)
        return infinirt__fail(INFINI_STATUS_BAD_PARAM, __func__, "entry index %d outside [0, %zu)", index,
                              cfg->nentries);
    const infinirt__config_entry *e = &cfg->entries[index];
    memset(entry, 0, sizeof *entry);
    entry->kind = (infinirtConfigEntryKind_t)e->kind;
    snprintf(entry->name, sizeof entry->name, "%s", e->name);
    snprintf(entry->value, sizeof entry->value, "%s", e->value);
    snprintf(entry->message, sizeof entry->message, "%s", e->message);
    entry->problem = e->problem;
    return INFINI_STATUS_SUCCESS;
}
