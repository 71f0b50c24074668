/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_int.h - what the config's files share: config.c (finding and
 * reading the files, scanning the plugin folders), config_keys.c (what the
 * keys mean), config_env.c (the environment variables) and config_report.c
 * (the config report and its public calls).
 */
#ifndef INFINIRT_LOADER_CONFIG_INT_H_
#define INFINIRT_LOADER_CONFIG_INT_H_

#include "internal.h"

/* Give the sections and keys of text (len bytes, the contents of `file`,
 * a name held by cfg->files) their meaning in cfg; messages name file and
 * relative paths are relative to dir, the file's folder.  A key or a
 * section header seen before (in this file or an earlier one) is reported
 * with both places; the value read last counts.  Returns how many section
 * headers and keys were found; *problems: how many lines were malformed. */
size_t infinirt__config_parse(infinirt__config *cfg, const char *file, const char *dir, const char *text, size_t len,
                              int *problems);
/* Forget what infinirt__config_parse remembers to report repeated keys
 * (once every file is read). */
void infinirt__config_parse_done(infinirt__config *cfg);
/* [loader] plugins = LIST or INFINIRT_PLUGINS, once the files and the
 * folders are read: every plugin not listed is disabled, with the reason;
 * a listed name found nowhere is added, so the report says its file was
 * not found. */
void infinirt__config_apply_only(infinirt__config *cfg);

/* The plugin entry named name, or NULL. */
infinirt__plugin_conf *infinirt__config_find_plugin(infinirt__config *cfg, const char *name);
/* The plugin entry named name, added (enabled) when there is none. */
infinirt__plugin_conf *infinirt__config_add_plugin(infinirt__config *cfg, const char *name);
/* Set pc's library (a copy of path). */
void infinirt__config_set_library(infinirt__plugin_conf *pc, const char *path);
/* 1 to 63 letters, digits, '_' or '-'. */
bool infinirt__config_plugin_name_ok(const char *name);

/* strdup and array growth for the config; out of memory while reading it
 * is fatal (logged, then abort). */
char *infinirt__config_strdup(const char *s);
void *infinirt__config_grow(void *p, size_t *cap, size_t n, size_t elem);

/* ------------------------------------------------ the report (config_report.c) */

/* Log a problem with the config at warn (error: level) and add it to the
 * report as a WARNING entry. */
void infinirt__config_problem(infinirt__config *cfg, int level, const char *fmt, ...) INFINIRT__PRINTF(3, 4);
#define INFINIRT__CONFIG_WARN(cfg, ...) infinirt__config_problem((cfg), INFINIRT__LOG_WARN, __VA_ARGS__)
/* Add an entry of kind (infinirtConfigEntryKind_t) to the report; message
 * is a format (NULL: ""); returns it, for a later message. */
infinirt__config_entry *infinirt__config_add_entry(infinirt__config *cfg, int kind, const char *name,
                                                   const char *value, int problem, const char *fmt, ...)
    INFINIRT__PRINTF(6, 7);
/* Replace an entry's message. */
void infinirt__config_entry_say(infinirt__config_entry *e, int problem, const char *fmt, ...) INFINIRT__PRINTF(3, 4);

/* ------------------------------------------------ the environment (config_env.c) */

/* One ENVIRONMENT entry per variable of the README's table, in its order,
 * each with its value and what the loader makes of it: made first, so the
 * report lists them all whatever happens later. */
void infinirt__config_env_begin(infinirt__config *cfg);
/* The value of the variable `name` (one of the table's), read with
 * secure_getenv: NULL when unset or empty, and in a setuid or setgid
 * process, where a variable that is set is reported ignored (the caller
 * must not steer a privileged program).  Its report entry is the one
 * infinirt__config_env_entry returns. */
const char *infinirt__config_getenv(infinirt__config *cfg, const char *name);
infinirt__config_entry *infinirt__config_env_entry(infinirt__config *cfg, const char *name);
/* INFINIRT_PLUGINS over [loader] plugins: it wins, and a different list in
 * a file is reported naming both. */
void infinirt__config_env_plugins(infinirt__config *cfg);
/* INFINIRT_VISIBLE_DEVICES: parsed into cfg->visible, a malformed value
 * reported (it then shows no device of any type). */
void infinirt__config_env_visible(infinirt__config *cfg);
/* INFINIRT_TRACE over [loader] trace; the report entries of
 * INFINIRT_LOG, INFINIRT_LOG_FILE (log.c obeys them), XDG_CONFIG_HOME and
 * HOME. */
void infinirt__config_env_rest(infinirt__config *cfg);

#endif /* INFINIRT_LOADER_CONFIG_INT_H_ */
