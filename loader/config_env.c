/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_env.c - the environment variables the loader reads (the README's
 * table, "Configuration"), each read with secure_getenv and each given an
 * entry in the config report; INFINIRT_PLUGINS over [loader] plugins; and
 * INFINIRT_VISIBLE_DEVICES, which chooses and renumbers the devices of
 * each type on top of what the config and the plugins expose.
 *
 * A variable that is set wins over the files, and where it contradicts
 * one a warning names both.  In a setuid or setgid process a variable
 * that is set is ignored and reported so: the caller must not steer what a
 * privileged program loads or uses.
 */
#define _GNU_SOURCE
#include "config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The README's environment table, in its order. */
static const char *const k_vars[] = {
    "INFINIRT_CONFIG", "INFINIRT_PLUGINS",  "INFINIRT_PLUGIN_PATH", "INFINIRT_VISIBLE_DEVICES",
    "INFINIRT_LOG",    "INFINIRT_LOG_FILE", "XDG_CONFIG_HOME",      "HOME",
    "INFINIRT_TRACE",
};
#define NVARS (sizeof k_vars / sizeof k_vars[0])

void infinirt__config_env_begin(infinirt__config *cfg)
{
    for (size_t i = 0; i < NVARS; i++)
        infinirt__config_add_entry(cfg, INFINIRT_CONFIG_ENTRY_ENVIRONMENT, k_vars[i], "", 0, "unset");
}

infinirt__config_entry *infinirt__config_env_entry(infinirt__config *cfg, const char *name)
{
    for (size_t i = 0; i < NVARS && i < cfg->nentries; i++)
        if (strcmp(cfg->entries[i].name, name) == 0)
            return &cfg->entries[i];
    abort(); /* a variable missing from k_vars: a bug in this file */
}

const char *infinirt__config_getenv(infinirt__config *cfg, const char *name)
{
    infinirt__config_entry *e = infinirt__config_env_entry(cfg, name);
    const char *v = secure_getenv(name);
    if (v == NULL && getenv(name) != NULL) {
        /* Its value is not even shown: it came from the caller. */
        infinirt__config_entry_say(e, 1,
                                   "set, but ignored: a setuid or setgid process does not obey its caller's "
                                   "environment");
        INFINIRT__CONFIG_WARN(cfg,
                              "%s is set but ignored: a setuid or setgid process does not obey its caller's "
                              "environment",
                              name);
        return NULL;
    }
    if (v == NULL || v[0] == '\0') {
        infinirt__config_entry_say(e, 0, v == NULL ? "unset" : "empty: as if unset");
        return NULL;
    }
    free(e->value);
    e->value = infinirt__config_strdup(v);
    infinirt__config_entry_say(e, 0, "used");
    return v;
}

/* ------------------------------------------------ INFINIRT_PLUGINS */

/* The list with blanks around its names removed, for comparing two lists. */
static void normalise_list(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = in; *p != '\0' && o + 1 < n; p++)
        if (*p != ' ' && *p != '\t')
            out[o++] = *p;
    out[o] = '\0';
}

void infinirt__config_env_plugins(infinirt__config *cfg)
{
    const char *v = infinirt__config_getenv(cfg, "INFINIRT_PLUGINS");
    if (v == NULL)
        return;
    infinirt__config_entry *e = infinirt__config_env_entry(cfg, "INFINIRT_PLUGINS");
    if (cfg->only != NULL) {
        char a[1024], b[1024];
        normalise_list(cfg->only, a, sizeof a);
        normalise_list(v, b, sizeof b);
        if (strcmp(a, b) != 0) {
            INFINIRT__CONFIG_WARN(cfg,
                                  "INFINIRT_PLUGINS=%.200s overrides [loader] plugins = %.200s (%s:%d): the "
                                  "environment wins",
                                  v, cfg->only, cfg->only_file, cfg->only_line);
            infinirt__config_entry_say(e, 0, "only these plugins load; overrides [loader] plugins = %.200s (%s:%d)",
                                       cfg->only, cfg->only_file, cfg->only_line);
        } else {
            infinirt__config_entry_say(e, 0, "only these plugins load (as [loader] plugins at %s:%d says too)",
                                       cfg->only_file, cfg->only_line);
        }
    } else {
        infinirt__config_entry_say(e, 0, "only these plugins load");
    }
    free(cfg->only);
    cfg->only = infinirt__config_strdup(v);
    cfg->only_file = NULL;
    cfg->only_line = 0;
}

/* ------------------------------------------------ INFINIRT_VISIBLE_DEVICES */

/* A plugin may serve at most this many devices (plugin.c): a larger index
 * names no device anywhere. */
#define VISIBLE_MAX_INDEX 4095

struct infinirt__visible {
    bool bad;                         /* malformed: no device of any type is shown */
    bool named[INFINIRT__TYPE_SLOTS]; /* the type has an entry */
    int *ids[INFINIRT__TYPE_SLOTS];   /* its plugin indices, in the order given */
    int nids[INFINIRT__TYPE_SLOTS];
};

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* [*b, *e) without blanks at either end. */
static void trim(const char **b, const char **e)
{
    while (*b < *e && is_blank(**b))
        (*b)++;
    while (*e > *b && is_blank((*e)[-1]))
        (*e)--;
}

/* One TYPE:LIST entry, [b, e), trimmed and not empty.  Returns false with
 * the bad part described in why. */
static bool parse_entry(infinirt__visible *v, const char *b, const char *e, unsigned char *seen, char *why, size_t n)
{
    const char *colon = memchr(b, ':', (size_t)(e - b));
    if (colon == NULL) {
        snprintf(why, n, "'%.*s' has no ':' (write TYPE:LIST, e.g. cpu:0,1, or TYPE: for none of its devices)",
                 (int)(e - b > 80 ? 80 : e - b), b);
        return false;
    }
    const char *tb = b, *te = colon;
    trim(&tb, &te);
    char type[32];
    int t = -1;
    if (te - tb > 0 && (size_t)(te - tb) < sizeof type) {
        snprintf(type, sizeof type, "%.*s", (int)(te - tb), tb);
        t = infinirt__parse_device_type(type);
    }
    if (t < 0) {
        snprintf(why, n,
                 "'%.*s' is not a device type (cpu, nvidia, opencl, ...: as infinirtGetDeviceTypeName spells them)",
                 (int)(te - tb > 80 ? 80 : te - tb), tb);
        return false;
    }
    int slot = infinirt__type_slot((infiniDevice_t)t);
    if (v->named[slot]) {
        snprintf(why, n, "type %s is named twice", infinirtGetDeviceTypeName((infiniDevice_t)t));
        return false;
    }
    v->named[slot] = true;
    const char *lb = colon + 1, *le = e;
    trim(&lb, &le);
    if (lb == le)
        return true; /* TYPE: none of its devices */
    /* The list syntax of the plugins' `devices =` keys (CUDA, OpenCL). */
    char *list = malloc((size_t)(le - lb) + 1);
    if (list == NULL) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    snprintf(list, (size_t)(le - lb) + 1, "%.*s", (int)(le - lb), lb);
    const char *bad = list;
    size_t count = 0;
    int r = infinirtPluginParseIndexList(list, VISIBLE_MAX_INDEX, &v->ids[slot], &count, &bad);
    if (r == -2) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    if (r != 0) {
        size_t len = strcspn(bad, ",");
        while (len > 0 && is_blank(bad[len - 1]))
            len--;
        if (len == 0)
            snprintf(why, n, "'%.*s' has an empty item (a list is device numbers separated by commas)",
                     (int)(e - b > 80 ? 80 : e - b), b);
        else
            snprintf(why, n, "'%.*s' in '%.*s' is not a device number (0 to %d)", (int)(len > 40 ? 40 : len), bad,
                     (int)(e - b > 80 ? 80 : e - b), b, VISIBLE_MAX_INDEX);
        free(list);
        return false;
    }
    free(list);
    v->nids[slot] = (int)count;
    memset(seen, 0, (VISIBLE_MAX_INDEX + 8) / 8);
    for (size_t i = 0; i < count; i++) {
        int id = v->ids[slot][i];
        if (seen[id / 8] & (1u << (id % 8))) {
            snprintf(why, n, "device %d is listed twice for %s", id, infinirtGetDeviceTypeName((infiniDevice_t)t));
            return false;
        }
        seen[id / 8] |= (unsigned char)(1u << (id % 8));
    }
    return true;
}

/* Parse text into v.  Returns false with the bad part described in why. */
static bool parse_visible(infinirt__visible *v, const char *text, char *why, size_t n)
{
    unsigned char seen[(VISIBLE_MAX_INDEX + 8) / 8];
    for (const char *p = text;;) {
        const char *semi = strchr(p, ';');
        const char *b = p, *e = semi ? semi : p + strlen(p);
        trim(&b, &e);
        if (b < e && !parse_entry(v, b, e, seen, why, n))
            return false;
        if (semi == NULL)
            return true;
        p = semi + 1;
    }
}

/* The types and their lists, for the report: "cpu devices 3,1 shown as
 * cpu:0,1; no nvidia device". */
static void describe_visible(const infinirt__visible *v, char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (int s = 0; s < INFINIRT__TYPE_SLOTS && o < n; s++) {
        if (!v->named[s])
            continue;
        const char *tn = infinirtGetDeviceTypeName(infinirt__slot_type(s));
        if (v->nids[s] == 0) {
            o += (size_t)snprintf(out + o, n - o, "%sno %s device", o ? "; " : "", tn);
            continue;
        }
        o += (size_t)snprintf(out + o, n - o, "%s%s device%s ", o ? "; " : "", tn, v->nids[s] == 1 ? "" : "s");
        for (int i = 0; i < v->nids[s] && o < n; i++)
            o += (size_t)snprintf(out + o, n - o, "%s%d", i ? "," : "", v->ids[s][i]);
        if (o < n)
            o += (size_t)snprintf(out + o, n - o, " as %s:", tn);
        for (int i = 0; i < v->nids[s] && o < n; i++)
            o += (size_t)snprintf(out + o, n - o, "%s%d", i ? "," : "", i);
    }
}

void infinirt__config_env_visible(infinirt__config *cfg)
{
    const char *text = infinirt__config_getenv(cfg, "INFINIRT_VISIBLE_DEVICES");
    if (text == NULL)
        return;
    infinirt__config_entry *e = infinirt__config_env_entry(cfg, "INFINIRT_VISIBLE_DEVICES");
    infinirt__visible *v = calloc(1, sizeof *v);
    if (v == NULL) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    cfg->visible = v;
    char why[300];
    if (!parse_visible(v, text, why, sizeof why)) {
        /* Fail closed: the variable is how a job is kept to its devices,
         * and a typo must not give it every device of the machine. */
        for (int s = 0; s < INFINIRT__TYPE_SLOTS; s++)
            free(v->ids[s]);
        memset(v, 0, sizeof *v);
        v->bad = true;
        infinirt__config_problem(cfg, INFINIRT__LOG_ERROR,
                                 "INFINIRT_VISIBLE_DEVICES='%.200s': %s; no device of any type is shown (fix the "
                                 "value, or unset it)",
                                 text, why);
        infinirt__config_entry_say(e, 1, "malformed: %s; no device of any type is shown", why);
        return;
    }
    char list[400];
    describe_visible(v, list, sizeof list);
    infinirt__config_entry_say(e, 0, "%s%severy device of the other types", list, list[0] ? "; " : "");
}

int infinirt__config_visible(const infinirt__config *cfg, infiniDevice_t type, int count, int *map, char *why,
                             size_t why_size)
{
    const infinirt__visible *v = cfg->visible;
    int slot = infinirt__type_slot(type);
    why[0] = '\0';
    if (v == NULL || slot < 0 || (!v->bad && !v->named[slot])) {
        for (int i = 0; i < count; i++)
            map[i] = i;
        return count;
    }
    if (v->bad) {
        snprintf(why, why_size,
                 "INFINIRT_VISIBLE_DEVICES is malformed (see the log): none of its %d device%s is shown", count,
                 count == 1 ? "" : "s");
        return 0;
    }
    const char *tn = infinirtGetDeviceTypeName(type);
    int shown = 0;
    char skipped[200] = "";
    int nskipped = 0;
    size_t o = 0;
    for (int i = 0; i < v->nids[slot]; i++) {
        int id = v->ids[slot][i];
        if (id < count) {
            map[shown++] = id;
        } else {
            INFINIRT__WARN("INFINIRT_VISIBLE_DEVICES: %s device %d skipped: the plugin serving %s has %d device%s",
                           tn, id, tn, count, count == 1 ? "" : "s");
            if (o < sizeof skipped)
                o += (size_t)snprintf(skipped + o, sizeof skipped - o, "%s%d", o ? "," : "", id);
            nskipped++;
        }
    }
    if (shown == 0) {
        snprintf(why, why_size, "INFINIRT_VISIBLE_DEVICES shows none of its %d device%s%s%s%s", count,
                 count == 1 ? "" : "s",
                 nskipped ? (nskipped == 1 ? " (it has no device " : " (it has no devices ") : "", skipped,
                 nskipped ? ")" : "");
        return 0;
    }
    o = (size_t)snprintf(why, why_size, "INFINIRT_VISIBLE_DEVICES shows %d of its %d device%s:", shown, count,
                         count == 1 ? "" : "s");
    for (int i = 0; i < shown && o < why_size; i++)
        o += (size_t)snprintf(why + o, why_size - o, "%s %s:%d is its %d", i ? "," : "", tn, i, map[i]);
    if (skipped[0] && o < why_size)
        snprintf(why + o, why_size - o, " (it has no device%s %s)", nskipped == 1 ? "" : "s", skipped);
    return shown;
}

/* ------------------------------------------------ the rest */

/* INFINIRT_TRACE over [loader] trace: it wins, and a different file in a
 * config file is reported naming both. */
static void env_trace(infinirt__config *cfg)
{
    const char *v = infinirt__config_getenv(cfg, "INFINIRT_TRACE");
    if (v == NULL)
        return;
    infinirt__config_entry *e = infinirt__config_env_entry(cfg, "INFINIRT_TRACE");
    if (strlen(v) >= sizeof cfg->trace) {
        infinirt__config_entry_say(e, 1, "longer than 1023 bytes: ignored");
        INFINIRT__CONFIG_WARN(cfg, "INFINIRT_TRACE is longer than 1023 bytes; ignored");
        return;
    }
    if (cfg->trace_file != NULL && strcmp(cfg->trace, v) != 0) {
        INFINIRT__CONFIG_WARN(cfg,
                              "INFINIRT_TRACE=%.200s overrides [loader] trace = %.200s (%s:%d): the "
                              "environment wins",
                              v, cfg->trace, cfg->trace_file, cfg->trace_line);
        infinirt__config_entry_say(e, 0, "the trace file; overrides [loader] trace = %.200s (%s:%d)", cfg->trace,
                                   cfg->trace_file, cfg->trace_line);
    } else {
        infinirt__config_entry_say(e, 0, "the trace file (docs/tracing.md)");
    }
    snprintf(cfg->trace, sizeof cfg->trace, "%s", v);
    cfg->trace_file = NULL;
    cfg->trace_line = 0;
}

void infinirt__config_env_rest(infinirt__config *cfg)
{
    env_trace(cfg);
    const char *lv = infinirt__config_getenv(cfg, "INFINIRT_LOG");
    if (lv != NULL) {
        if (infinirt__log_parse_level(lv) < 0)
            infinirt__config_entry_say(infinirt__config_env_entry(cfg, "INFINIRT_LOG"), 1,
                                       "not error, warn, info or debug: warn is used");
        else
            infinirt__config_entry_say(infinirt__config_env_entry(cfg, "INFINIRT_LOG"), 0,
                                       "the log level (over [loader] log_level)");
    }
    if (infinirt__config_getenv(cfg, "INFINIRT_LOG_FILE") != NULL)
        infinirt__config_entry_say(infinirt__config_env_entry(cfg, "INFINIRT_LOG_FILE"), 0,
                                   "log lines are appended to this file");
    /* XDG_CONFIG_HOME and HOME were read by the search unless
     * INFINIRT_CONFIG named the file. */
    infinirt__config_entry *x = infinirt__config_env_entry(cfg, "XDG_CONFIG_HOME");
    infinirt__config_entry *h = infinirt__config_env_entry(cfg, "HOME");
    if (infinirt__config_env_entry(cfg, "INFINIRT_CONFIG")->value[0] != '\0') {
        if (x->value[0] == '\0' && strcmp(x->message, "unset") == 0)
            (void)infinirt__config_getenv(cfg, "XDG_CONFIG_HOME");
        if (h->value[0] == '\0' && strcmp(h->message, "unset") == 0)
            (void)infinirt__config_getenv(cfg, "HOME");
        if (x->value[0] != '\0')
            infinirt__config_entry_say(x, 0, "not used: INFINIRT_CONFIG names the file");
        if (h->value[0] != '\0')
            infinirt__config_entry_say(h, 0, "not used: INFINIRT_CONFIG names the file");
        return;
    }
    if (x->value[0] != '\0')
        infinirt__config_entry_say(x, 0, "%s",
                                   x->value[0] == '/' ? "the user config is looked for in $XDG_CONFIG_HOME/infinirt"
                                                      : "not an absolute path: ignored (the XDG rule)");
    if (h->value[0] != '\0')
        infinirt__config_entry_say(h, 0, "%s",
                                   x->value[0] == '/' ? "not used: XDG_CONFIG_HOME is set"
                                                      : "the user config is looked for in ~/.config/infinirt");
}
