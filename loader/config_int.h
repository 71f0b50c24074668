/*
 * config_int.h - what config.c (finding and reading the file, scanning the
 * plugin folder) uses of config_keys.c (what the keys mean).
 */
#ifndef INFINIRT_LOADER_CONFIG_INT_H_
#define INFINIRT_LOADER_CONFIG_INT_H_

#include "internal.h"

/* Give the sections and keys of text (len bytes, a file's contents) their
 * meaning in cfg; messages name cfg->path.  Returns how many section
 * headers and keys were found; *problems: how many lines were malformed. */
size_t infinirt__config_parse(infinirt__config *cfg, const char *text, size_t len, int *problems);
/* [loader] plugins = LIST, once the file and the folder are read: every
 * plugin not listed is disabled, with the reason; a listed name found
 * nowhere is added, so the report says its file was not found. */
void infinirt__config_apply_only(infinirt__config *cfg);

/* The plugin entry named name, or NULL. */
infinirt__plugin_conf *infinirt__config_find_plugin(infinirt__config *cfg, const char *name);
/* The plugin entry named name, added (enabled) when there is none. */
infinirt__plugin_conf *infinirt__config_add_plugin(infinirt__config *cfg, const char *name);
/* 1 to 63 letters, digits, '_' or '-'. */
bool infinirt__config_plugin_name_ok(const char *name);

/* strdup and array growth for the config; out of memory while reading it
 * is fatal (logged, then abort). */
char *infinirt__config_strdup(const char *s);
void *infinirt__config_grow(void *p, size_t *cap, size_t n, size_t elem);

#endif /* INFINIRT_LOADER_CONFIG_INT_H_ */
