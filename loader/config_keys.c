/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_keys.c - what the config's keys mean: the INI reader's sink for
 * the [loader], [allocator] and [plugin.NAME] sections, and [loader]
 * plugins = LIST applied once the file is read.  Finding and reading the
 * file is config.c's; turning bytes into sections and keys is ini.c's.
 *
 * One policy for every section: a bad value or an unknown key is logged
 * with file:line, the key, the value and what is used instead, and the
 * rest of the file still counts.  A key set twice (in one file, or in the
 * file and a drop-in) is reported with both places, and the value read
 * last counts; so is a section header repeated within one file.
 */
#define _GNU_SOURCE
#include "config_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "64", "512K", "2M", "1G": bytes into *out; -1 if malformed. */
static int infinirt__parse_size(const char *text, size_t *out)
{
    return infinirtPluginParseSize(text, out);
}

/* "true/false/yes/no/on/off/1/0": 1/0, or -1. */
static int infinirt__parse_bool(const char *text)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    if (text == NULL)
        return -1;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return 1;
        if (strcasecmp(text, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* Line problems reported per file: a file that is not INI at all would
 * otherwise print one warning per line. */
#define CONFIG_MAX_PROBLEMS 20

typedef enum { SEC_IGNORED, SEC_LOADER, SEC_ALLOCATOR, SEC_PLUGIN } section_kind;

typedef struct {
    infinirt__ini_sink sink; /* first: the sink pointer is the reader's */
    infinirt__config *cfg;
    const char *path; /* the file read (a name in cfg->files) */
    const char *dir;  /* its folder: relative paths start there */
    section_kind kind;
    infinirt__plugin_conf *plugin; /* SEC_PLUGIN: its entry */
    int problems;
} reader;

char *infinirt__config_strdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (d == NULL) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    return d;
}

void *infinirt__config_grow(void *p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return p;
    size_t nc = *cap ? *cap * 2 : 8;
    void *q = realloc(p, nc * elem);
    if (q == NULL) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    *cap = nc;
    return q;
}

/* ------------------------------------------------ keys seen before */

/* Where each section header and key was last seen, to report one set
 * twice: a hash table of "S\x1fSECTION" and "K\x1fSECTION\x1fKEY", so a
 * file of many keys is still read in linear time. */
typedef struct {
    char *name;
    const char *file;
    int line;
} seen_slot;

struct infinirt__seen {
    seen_slot *slots;
    size_t cap, used; /* cap: a power of two */
};

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static seen_slot *seen_find(struct infinirt__seen *t, const char *name)
{
    size_t mask = t->cap - 1;
    for (size_t i = (size_t)hash_text(name) & mask;; i = (i + 1) & mask)
        if (t->slots[i].name == NULL || strcmp(t->slots[i].name, name) == 0)
            return &t->slots[i];
}

/* Record that name was seen at file:line; the place it was seen before
 * into *prev (prev->file NULL when never). */
static void seen_note(infinirt__config *cfg, const char *name, const char *file, int line, seen_slot *prev)
{
    struct infinirt__seen *t = cfg->seen;
    if (t == NULL) {
        t = cfg->seen = calloc(1, sizeof *t);
        if (t == NULL) {
            INFINIRT__ERROR("out of memory reading the config");
            abort();
        }
    }
    if (2 * (t->used + 1) > t->cap) { /* keep it at most half full */
        struct infinirt__seen grown = {calloc(t->cap ? 2 * t->cap : 64, sizeof(seen_slot)), t->cap ? 2 * t->cap : 64,
                                       t->used};
        if (grown.slots == NULL) {
            INFINIRT__ERROR("out of memory reading the config");
            abort();
        }
        for (size_t i = 0; i < t->cap; i++)
            if (t->slots[i].name != NULL)
                *seen_find(&grown, t->slots[i].name) = t->slots[i];
        free(t->slots);
        *t = grown;
    }
    seen_slot *s = seen_find(t, name);
    *prev = *s;
    if (s->name == NULL) {
        s->name = infinirt__config_strdup(name);
        t->used++;
    }
    s->file = file;
    s->line = line;
}

void infinirt__config_parse_done(infinirt__config *cfg)
{
    struct infinirt__seen *t = cfg->seen;
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i].name);
    free(t->slots);
    free(t);
    cfg->seen = NULL;
}

static char *seen_name(char kind, const char *section, const char *key)
{
    size_t a = strlen(section), b = key ? strlen(key) : 0;
    char *n = malloc(a + b + 4);
    if (n == NULL) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    n[0] = kind;
    n[1] = '\x1f';
    memcpy(n + 2, section, a);
    if (key != NULL) {
        n[2 + a] = '\x1f';
        memcpy(n + 3 + a, key, b + 1);
    } else {
        n[2 + a] = '\0';
    }
    return n;
}

/* ------------------------------------------------ the sink */

static void on_problem(infinirt__ini_sink *sink, int line, const char *what)
{
    reader *r = (reader *)sink;
    if (++r->problems <= CONFIG_MAX_PROBLEMS)
        INFINIRT__CONFIG_WARN(r->cfg, "%s:%d: %s", r->path, line, what);
    else if (r->problems == CONFIG_MAX_PROBLEMS + 1)
        INFINIRT__CONFIG_WARN(r->cfg, "%s:%d: more than %d malformed lines; the others are not reported", r->path,
                              line, CONFIG_MAX_PROBLEMS);
}

/* The one format of every bad value: where, which key, the value, what is
 * wrong and what is used instead. */
static void bad_value(reader *r, int line, const char *section, const char *key, const char *value, const char *why,
                      const char *used)
{
    INFINIRT__CONFIG_WARN(r->cfg, "%s:%d: [%s] %s = '%s': %s; using %s", r->path, line, section, key, value, why,
                          used);
}

static void unknown_key(reader *r, int line, const char *section, const char *key, const char *known)
{
    INFINIRT__CONFIG_WARN(r->cfg, "%s:%d: [%s] unknown key '%s' ignored (known: %s)", r->path, line, section, key,
                          known);
}

/* A path in a file is relative to that file's folder. */
static void resolve_path(const reader *r, const char *value, char *out, size_t outsz)
{
    if (value[0] == '/' || r->dir == NULL || r->dir[0] == '\0')
        snprintf(out, outsz, "%s", value);
    else
        snprintf(out, outsz, "%s/%s", r->dir, value);
}

/* The plugins by name: a hash table of indices into cfg->plugins (which
 * moves as it grows), so that each [plugin.NAME] section, plugin file and
 * listed name is found in constant time and a config of many sections is
 * read in linear time. */
struct infinirt__plugin_names {
    size_t *slots;    /* index + 1; 0 = empty */
    size_t cap, used; /* cap: a power of two */
};

/* The slot of name: its entry, or the empty one where it would go. */
static size_t *names_find(const infinirt__config *cfg, const struct infinirt__plugin_names *t, const char *name)
{
    size_t mask = t->cap - 1;
    for (size_t i = (size_t)hash_text(name) & mask;; i = (i + 1) & mask)
        if (t->slots[i] == 0 || strcmp(cfg->plugins[t->slots[i] - 1].name, name) == 0)
            return &t->slots[i];
}

infinirt__plugin_conf *infinirt__config_find_plugin(infinirt__config *cfg, const char *name)
{
    const struct infinirt__plugin_names *t = cfg->plugin_names;
    if (t == NULL)
        return NULL;
    size_t *s = names_find(cfg, t, name);
    return *s != 0 ? &cfg->plugins[*s - 1] : NULL;
}

/* Record that cfg->plugins[index] is named name (not there yet). */
static void names_add(infinirt__config *cfg, const char *name, size_t index)
{
    struct infinirt__plugin_names *t = cfg->plugin_names;
    if (t == NULL)
        t = cfg->plugin_names = calloc(1, sizeof *t);
    if (t != NULL && 2 * (t->used + 1) > t->cap) { /* keep it at most half full */
        struct infinirt__plugin_names grown = {calloc(t->cap ? 2 * t->cap : 64, sizeof(size_t)),
                                               t->cap ? 2 * t->cap : 64, t->used};
        if (grown.slots == NULL) {
            t = NULL;
        } else {
            for (size_t i = 0; i < t->cap; i++)
                if (t->slots[i] != 0)
                    *names_find(cfg, &grown, cfg->plugins[t->slots[i] - 1].name) = t->slots[i];
            free(t->slots);
            *t = grown;
        }
    }
    if (t == NULL) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    *names_find(cfg, t, name) = index + 1;
    t->used++;
}

infinirt__plugin_conf *infinirt__config_add_plugin(infinirt__config *cfg, const char *name)
{
    infinirt__plugin_conf *pc = infinirt__config_find_plugin(cfg, name);
    if (pc != NULL)
        return pc;
    cfg->plugins = infinirt__config_grow(cfg->plugins, &cfg->capplugins, cfg->nplugins, sizeof *cfg->plugins);
    pc = &cfg->plugins[cfg->nplugins];
    memset(pc, 0, sizeof *pc);
    snprintf(pc->name, sizeof pc->name, "%s", name);
    pc->enabled = true;
    names_add(cfg, pc->name, cfg->nplugins++);
    return pc;
}

void infinirt__config_set_library(infinirt__plugin_conf *pc, const char *path)
{
    char *copy = infinirt__config_strdup(path);
    free(pc->library);
    pc->library = copy;
}

/* Set pc's why_off (formatted). */
static void set_why_off(infinirt__plugin_conf *pc, const char *fmt, ...) INFINIRT__PRINTF(2, 3);
static void set_why_off(infinirt__plugin_conf *pc, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(pc->why_off);
    pc->why_off = infinirt__config_strdup(buf);
}

/* A plugin name becomes part of a file name (libinfinirt_NAME.so). */
bool infinirt__config_plugin_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof(((infinirt__plugin_conf *)0)->name))
        return false;
    for (const char *p = name; *p != '\0'; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return false;
    return true;
}

static void on_section(infinirt__ini_sink *sink, const char *name, int line)
{
    reader *r = (reader *)sink;
    r->plugin = NULL;
    r->kind = SEC_IGNORED;
    if (strcmp(name, "loader") == 0) {
        r->kind = SEC_LOADER;
    } else if (strcmp(name, "allocator") == 0) {
        r->kind = SEC_ALLOCATOR;
    } else if (strncmp(name, "plugin.", 7) == 0) {
        if (!infinirt__config_plugin_name_ok(name + 7)) {
            INFINIRT__CONFIG_WARN(r->cfg,
                                  "%s:%d: [%.80s%s]: a plugin name is 1 to 63 letters, digits, '_' or '-'; section "
                                  "ignored",
                                  r->path, line, name, strlen(name) > 80 ? "..." : "");
            return;
        }
        r->kind = SEC_PLUGIN;
        /* "[plugin.cpu]" alone means "load cpu with its defaults". */
        r->plugin = infinirt__config_add_plugin(r->cfg, name + 7);
    } else {
        INFINIRT__CONFIG_WARN(r->cfg,
                              "%s:%d: unknown section [%.80s%s]: its keys are ignored (known: [loader], "
                              "[allocator], [plugin.NAME])",
                              r->path, line, name, strlen(name) > 80 ? "..." : "");
        return;
    }
    /* A section repeated within a file is likely a mistake (two halves of
     * one section); across files it is how a drop-in adds to a section. */
    char *key = seen_name('S', name, NULL);
    seen_slot prev;
    seen_note(r->cfg, key, r->path, line, &prev);
    free(key);
    if (prev.file == r->path)
        INFINIRT__CONFIG_WARN(r->cfg,
                              "%s:%d: section [%.80s%s] again (also at %s:%d): its keys add to the earlier one's",
                              r->path, line, name, strlen(name) > 80 ? "..." : "", prev.file, prev.line);
}

static void loader_key(reader *r, int line, const char *name, const char *value)
{
    infinirt__config *cfg = r->cfg;
    if (strcmp(name, "log_level") == 0) {
        int l = infinirt__log_parse_level(value);
        if (l < 0)
            bad_value(r, line, "loader", name, value, "not error, warn, info or debug",
                      cfg->log_level < 0 ? "the default (warn, or INFINIRT_LOG)" : "the earlier value");
        else
            cfg->log_level = l;
    } else if (strcmp(name, "plugin_dir") == 0) {
        if (value[0] == '\0')
            bad_value(r, line, "loader", name, value, "empty", "the folder beside libinfinirt.so");
        else {
            resolve_path(r, value, cfg->plugin_dir, sizeof cfg->plugin_dir);
            cfg->plugin_dir_file = r->path;
            cfg->plugin_dir_line = line;
        }
    } else if (strcmp(name, "plugins") == 0) {
        if (value[0] == '\0') {
            bad_value(r, line, "loader", name, value,
                      "empty (to load no plugin, set enabled = false in its "
                      "section)",
                      "every plugin found");
            return;
        }
        free(cfg->only);
        cfg->only = infinirt__config_strdup(value);
        cfg->only_file = r->path;
        cfg->only_line = line;
    } else if (strcmp(name, "default_device") == 0) {
        char type[32];
        int id = 0;
        const char *colon = strchr(value, ':');
        size_t tl = colon ? (size_t)(colon - value) : strlen(value);
        int t = -1;
        if (tl < sizeof type) {
            memcpy(type, value, tl);
            type[tl] = '\0';
            t = infinirt__parse_device_type(type);
        }
        char *end = NULL;
        if (colon != NULL) {
            errno = 0;
            long v = strtol(colon + 1, &end, 10);
            id = (int)v;
            if (end == colon + 1 || *end != '\0' || errno != 0 || v < 0 || v > INT_MAX)
                t = -1;
        }
        if (t < 0) {
            char used[64];
            snprintf(used, sizeof used, "%s:%d", infinirtGetDeviceTypeName(cfg->default_type), cfg->default_id);
            bad_value(r, line, "loader", name, value, "not TYPE[:ID] (e.g. cpu:0, nvidia:1)", used);
        } else {
            cfg->default_type = (infiniDevice_t)t;
            cfg->default_id = id;
        }
    } else if (strcmp(name, "trace") == 0) {
        /* An output file: relative to the working directory, as
         * INFINIRT_TRACE is (docs/tracing.md). */
        if (value[0] == '\0' || strlen(value) >= sizeof cfg->trace) {
            bad_value(r, line, "loader", name, value, value[0] ? "longer than 1023 bytes" : "empty",
                      cfg->trace[0] ? "the earlier value" : "no trace");
            return;
        }
        snprintf(cfg->trace, sizeof cfg->trace, "%s", value);
        cfg->trace_file = r->path;
        cfg->trace_line = line;
    } else if (strcmp(name, "trace_max_mb") == 0) {
        long mb = 0;
        char used[64];
        snprintf(used, sizeof used, "%zu", cfg->trace_max_mb);
        if (infinirtPluginParseCount(value, 1, 1048576, &mb) != 0)
            bad_value(r, line, "loader", name, value, "not a whole number of MiB from 1 to 1048576", used);
        else
            cfg->trace_max_mb = (size_t)mb;
    } else {
        unknown_key(r, line, "loader", name, "log_level, plugin_dir, plugins, default_device, trace, trace_max_mb");
    }
}

static void allocator_key(reader *r, int line, const char *name, const char *value)
{
    infinirt__alloc_config *a = &r->cfg->alloc;
    char used[64];
    size_t sz;
    /* The field each key sets, by name. */
    int *flag = strcmp(name, "enabled") == 0           ? &a->enabled
                : strcmp(name, "release_on_free") == 0 ? &a->release_on_free
                                                       : NULL;
    size_t *size = strcmp(name, "granularity") == 0      ? &a->granularity
                   : strcmp(name, "max_cached") == 0     ? &a->max_cached_bytes
                   : strcmp(name, "max_split_size") == 0 ? &a->max_split_size
                                                         : NULL;
    if (flag != NULL) {
        int *dst = flag;
        int b = infinirt__parse_bool(value);
        if (b < 0)
            bad_value(r, line, "allocator", name, value, "not true or false", *dst ? "true" : "false");
        else
            *dst = b;
    } else if (size != NULL) {
        size_t *dst = size;
        snprintf(used, sizeof used, "%zu", *dst);
        if (infinirt__parse_size(value, &sz) < 0)
            bad_value(r, line, "allocator", name, value, "not a size (e.g. 512, 64K, 2M, 1GiB)", used);
        else if (dst == &a->granularity && (sz == 0 || (sz & (sz - 1)) != 0 || sz > ((size_t)1 << 30)))
            bad_value(r, line, "allocator", name, value, "granularity must be a power of two up to 1G", used);
        else
            *dst = sz;
    } else {
        unknown_key(r, line, "allocator", name,
                    "enabled, granularity, max_cached, max_split_size, "
                    "release_on_free");
    }
}

static void plugin_key(reader *r, int line, const char *name, const char *value)
{
    infinirt__plugin_conf *pc = r->plugin;
    char section[80];
    snprintf(section, sizeof section, "plugin.%s", pc->name);
    if (strcmp(name, "library") == 0) {
        if (value[0] == '\0')
            bad_value(r, line, section, name, value, "empty", "<plugin_dir>/libinfinirt_NAME.so");
        else {
            char path[PATH_MAX];
            resolve_path(r, value, path, sizeof path);
            infinirt__config_set_library(pc, path);
            pc->library_file = r->path;
            pc->library_line = line;
        }
    } else if (strcmp(name, "enabled") == 0) {
        int b = infinirt__parse_bool(value);
        if (b < 0) {
            bad_value(r, line, section, name, value, "not true or false", pc->enabled ? "true" : "false");
        } else {
            pc->enabled = b;
            set_why_off(pc, "enabled = %s (%s:%d)", value, r->path, line);
        }
    } else {
        /* The plugin's own key: the plugin checks it, and reports problems
         * through config_warnv with this line (infinirt__config_warn_key). */
        pc->keys = infinirt__config_grow(pc->keys, &pc->capkeys, pc->nkeys, sizeof *pc->keys);
        pc->keys[pc->nkeys++] =
            (infinirt__kv){infinirt__config_strdup(name), infinirt__config_strdup(value), line, r->path};
    }
}

static void on_key(infinirt__ini_sink *sink, const char *section, const char *name, const char *value, int line)
{
    reader *r = (reader *)sink;
    if (r->kind != SEC_IGNORED) {
        char *key = seen_name('K', section, name);
        seen_slot prev;
        seen_note(r->cfg, key, r->path, line, &prev);
        free(key);
        if (prev.file != NULL)
            INFINIRT__CONFIG_WARN(r->cfg,
                                  "%s:%d: [%.80s] %.80s is set again (also at %s:%d): the value read last counts",
                                  r->path, line, section, name, prev.file, prev.line);
    }
    switch (r->kind) {
    case SEC_LOADER:
        loader_key(r, line, name, value);
        break;
    case SEC_ALLOCATOR:
        allocator_key(r, line, name, value);
        break;
    case SEC_PLUGIN:
        plugin_key(r, line, name, value);
        break;
    case SEC_IGNORED:
        break; /* reported at the section header */
    }
}

void infinirt__config_warn_key(const infinirt__config *cfg, const infinirt__plugin_conf *pc, size_t index,
                               const char *fmt, va_list ap)
{
    char what[512];
    vsnprintf(what, sizeof what, fmt, ap);
    if (index >= pc->nkeys) {
        INFINIRT__WARN("plugin %s: %s (config entry %zu of %zu)", pc->name, what, index, pc->nkeys);
        return;
    }
    const infinirt__kv *kv = &pc->keys[index];
    INFINIRT__WARN("%s:%d: [plugin.%s] %s = '%s': %s", kv->file ? kv->file : "(no file)", kv->line, pc->name, kv->key,
                   kv->value, what);
}

/* [loader] plugins = LIST: only these load; every other plugin found is
 * reported as not loaded, with the reason.  A listed name that is nowhere
 * is added, so the report says its file was not found.  One pass over the
 * list, each name looked up by hash, then one over the plugins: linear in
 * both, however long either is. */
void infinirt__config_apply_only(infinirt__config *cfg)
{
    if (cfg->only == NULL)
        return;
    char where[1200];
    if (cfg->only_file != NULL)
        snprintf(where, sizeof where, "[loader] plugins = %.120s (%s:%d)", cfg->only, cfg->only_file, cfg->only_line);
    else
        snprintf(where, sizeof where, "INFINIRT_PLUGINS=%.120s", cfg->only);
    size_t found = cfg->nplugins; /* the plugins found before the list is applied */
    bool *listed = calloc(found ? found : 1, sizeof *listed);
    if (listed == NULL) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    char *list = infinirt__config_strdup(cfg->only), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t')
            tok++;
        size_t n = strlen(tok);
        while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
            tok[--n] = '\0';
        if (n == 0)
            continue;
        infinirt__plugin_conf *pc = NULL;
        if (!infinirt__config_plugin_name_ok(tok) && cfg->only_file != NULL)
            INFINIRT__CONFIG_WARN(cfg, "%s:%d: [loader] plugins: '%.80s' is not a plugin name; ignored",
                                  cfg->only_file, cfg->only_line, tok);
        else if (!infinirt__config_plugin_name_ok(tok))
            INFINIRT__CONFIG_WARN(cfg, "INFINIRT_PLUGINS: '%.80s' is not a plugin name; ignored", tok);
        else if ((pc = infinirt__config_find_plugin(cfg, tok)) == NULL)
            infinirt__config_add_plugin(cfg, tok); /* listed: enabled */
        else if ((size_t)(pc - cfg->plugins) < found)
            listed[pc - cfg->plugins] = true;
    }
    free(list);
    for (size_t i = 0; i < found; i++) {
        infinirt__plugin_conf *pc = &cfg->plugins[i];
        if (pc->enabled && !listed[i]) {
            pc->enabled = false;
            set_why_off(pc, "not in %s", where);
        }
    }
    free(listed);
}

size_t infinirt__config_parse(infinirt__config *cfg, const char *file, const char *dir, const char *text, size_t len,
                              int *problems)
{
    reader r = {
        .sink = {.section = on_section, .key = on_key, .problem = on_problem},
        .cfg = cfg,
        .path = file,
        .dir = dir,
    };
    size_t found = infinirt__ini_parse(text, len, &r.sink);
    *problems = r.problems;
    return found;
}
