/*
 * config.c - find and read the INI config.
 *
 * Search order (README, "Configuration"): INFINIRT_CONFIG, then
 * $XDG_CONFIG_HOME/infinirt/infinirt.ini (~/.config when unset), then the
 * installed <prefix>/etc/infinirt/infinirt.ini found relative to the loader.
 * Every plugin in the plugin folder is considered whether the file names it
 * or not; the file's [loader] plugins = LIST or a section's enabled = false
 * keep one unloaded, and the report says which did.  The lines are read by
 * ini.c; this file gives the keys their meaning, with one policy for every
 * section: a bad value or an unknown key is logged with file:line, the key,
 * the value and what is used instead, and the rest of the file still counts.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef INFINIRT_SYSCONF_FROM_LIBDIR
#define INFINIRT_SYSCONF_FROM_LIBDIR "../etc"
#endif
#ifndef INFINIRT_PLUGIN_SUBDIR
#define INFINIRT_PLUGIN_SUBDIR "infinirt"
#endif

int infinirt__parse_size(const char *text, size_t *out)
{
    return infinirtPluginParseSize(text, out);
}

int infinirt__parse_bool(const char *text)
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

static char g_loader_dir[PATH_MAX];

/* dladdr on one of our own functions names the file the loader was loaded
 * from, wherever the prefix was moved: this is what makes installs
 * relocatable without environment variables. */
static void find_loader_dir(void)
{
    Dl_info info;
    snprintf(g_loader_dir, sizeof g_loader_dir, ".");
    if (dladdr((void *)&find_loader_dir, &info) == 0 || info.dli_fname == NULL)
        return;
    char resolved[PATH_MAX];
    const char *p = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
    const char *slash = strrchr(p, '/');
    if (slash != NULL && slash != p)
        snprintf(g_loader_dir, sizeof g_loader_dir, "%.*s", (int)(slash - p), p);
}

const char *infinirt__loader_dir(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, find_loader_dir);
    return g_loader_dir;
}

/* ------------------------------------------------------------ reading */

/* A config file is a few kilobytes; anything near this is not one. */
#define CONFIG_MAX_BYTES ((size_t)1 << 20)
/* Line problems reported per file: a file that is not INI at all would
 * otherwise print one warning per line. */
#define CONFIG_MAX_PROBLEMS 20

typedef enum { SEC_IGNORED, SEC_LOADER, SEC_ALLOCATOR, SEC_PLUGIN } section_kind;

typedef struct {
    infinirt__ini_sink sink; /* first: the sink pointer is the reader's */
    infinirt__config *cfg;
    const char *path;
    section_kind kind;
    infinirt__plugin_conf *plugin; /* SEC_PLUGIN: its entry */
    int problems;
} reader;

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (d == NULL) {
        INFINIRT__ERROR("out of memory reading the config");
        abort();
    }
    return d;
}

static void *xgrow(void *p, size_t *cap, size_t n, size_t elem)
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

static void on_problem(infinirt__ini_sink *sink, int line, const char *what)
{
    reader *r = (reader *)sink;
    if (++r->problems <= CONFIG_MAX_PROBLEMS)
        INFINIRT__WARN("%s:%d: %s", r->path, line, what);
    else if (r->problems == CONFIG_MAX_PROBLEMS + 1)
        INFINIRT__WARN("%s:%d: more than %d malformed lines; the others are not reported", r->path, line,
                       CONFIG_MAX_PROBLEMS);
}

/* The one format of every bad value: where, which key, the value, what is
 * wrong and what is used instead. */
static void bad_value(reader *r, int line, const char *section, const char *key, const char *value, const char *why,
                      const char *used)
{
    INFINIRT__WARN("%s:%d: [%s] %s = '%s': %s; using %s", r->path, line, section, key, value, why, used);
}

static void unknown_key(reader *r, int line, const char *section, const char *key, const char *known)
{
    INFINIRT__WARN("%s:%d: [%s] unknown key '%s' ignored (known: %s)", r->path, line, section, key, known);
}

static void resolve_path(const infinirt__config *cfg, const char *value, char *out, size_t outsz)
{
    if (value[0] == '/' || cfg->dir[0] == '\0')
        snprintf(out, outsz, "%s", value);
    else
        snprintf(out, outsz, "%s/%s", cfg->dir, value);
}

static infinirt__plugin_conf *find_plugin(infinirt__config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nplugins; i++)
        if (strcmp(cfg->plugins[i].name, name) == 0)
            return &cfg->plugins[i];
    return NULL;
}

static infinirt__plugin_conf *find_or_add_plugin(infinirt__config *cfg, const char *name, int line)
{
    infinirt__plugin_conf *pc = find_plugin(cfg, name);
    if (pc != NULL)
        return pc;
    cfg->plugins = xgrow(cfg->plugins, &cfg->capplugins, cfg->nplugins, sizeof *cfg->plugins);
    pc = &cfg->plugins[cfg->nplugins++];
    memset(pc, 0, sizeof *pc);
    snprintf(pc->name, sizeof pc->name, "%s", name);
    pc->enabled = true;
    pc->line = line;
    return pc;
}

/* A plugin name becomes part of a file name (libinfinirt_NAME.so). */
static bool valid_plugin_name(const char *name)
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
        if (!valid_plugin_name(name + 7)) {
            INFINIRT__WARN("%s:%d: [%.80s%s]: a plugin name is 1 to 63 letters, digits, '_' or '-'; section "
                           "ignored",
                           r->path, line, name, strlen(name) > 80 ? "..." : "");
            return;
        }
        r->kind = SEC_PLUGIN;
        /* "[plugin.cpu]" alone means "load cpu with its defaults". */
        r->plugin = find_or_add_plugin(r->cfg, name + 7, line);
    } else {
        INFINIRT__WARN("%s:%d: unknown section [%.80s%s]: its keys are ignored (known: [loader], [allocator], "
                       "[plugin.NAME])",
                       r->path, line, name, strlen(name) > 80 ? "..." : "");
    }
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
        else
            resolve_path(cfg, value, cfg->plugin_dir, sizeof cfg->plugin_dir);
    } else if (strcmp(name, "plugins") == 0) {
        if (value[0] == '\0') {
            bad_value(r, line, "loader", name, value,
                      "empty (to load no plugin, set enabled = false in its "
                      "section)",
                      "every plugin found");
            return;
        }
        free(cfg->only);
        cfg->only = xstrdup(value);
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
    } else {
        unknown_key(r, line, "loader", name, "log_level, plugin_dir, plugins, default_device");
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
        else
            resolve_path(r->cfg, value, pc->library, sizeof pc->library);
    } else if (strcmp(name, "enabled") == 0) {
        int b = infinirt__parse_bool(value);
        if (b < 0) {
            bad_value(r, line, section, name, value, "not true or false", pc->enabled ? "true" : "false");
        } else {
            pc->enabled = b;
            snprintf(pc->why_off, sizeof pc->why_off, "enabled = %s (%s:%d)", value, r->path, line);
        }
    } else {
        /* The plugin's own key: the plugin checks it, and reports problems
         * through config_warnv with this line (infinirt__config_warn_key). */
        pc->keys = xgrow(pc->keys, &pc->capkeys, pc->nkeys, sizeof *pc->keys);
        pc->keys[pc->nkeys++] = (infinirt__kv){xstrdup(name), xstrdup(value), line};
    }
}

static void on_key(infinirt__ini_sink *sink, const char *section, const char *name, const char *value, int line)
{
    (void)section;
    reader *r = (reader *)sink;
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

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "is a directory, not a file"
           : S_ISFIFO(m) ? "is a FIFO (named pipe), not a regular file"
           : S_ISCHR(m)  ? "is a character device, not a regular file"
           : S_ISBLK(m)  ? "is a block device, not a regular file"
           : S_ISSOCK(m) ? "is a socket, not a regular file"
                         : "is not a regular file";
}

/* Read the whole file into a NUL-terminated buffer.  O_NONBLOCK: opening
 * a FIFO must not wait for a writer; only regular files are then read, so
 * nothing can block or run forever (/dev/zero). */
static char *slurp(const char *path, size_t *len, char *why, size_t why_size)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, why_size, "cannot be opened: %s", strerror(errno));
        return NULL;
    }
    struct stat sb;
    char *buf = NULL;
    if (fstat(fd, &sb) != 0) {
        snprintf(why, why_size, "cannot be examined: %s", strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(why, why_size, "%s", file_kind(sb.st_mode));
        goto fail;
    }
    if ((unsigned long long)sb.st_size > CONFIG_MAX_BYTES) {
        snprintf(why, why_size, "is %lld bytes; a config file may have at most %zu", (long long)sb.st_size,
                 CONFIG_MAX_BYTES);
        goto fail;
    }
    buf = malloc(CONFIG_MAX_BYTES + 1);
    if (buf == NULL) {
        snprintf(why, why_size, "cannot be read: out of memory");
        goto fail;
    }
    size_t n = 0;
    for (;;) {
        ssize_t got = read(fd, buf + n, CONFIG_MAX_BYTES + 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(why, why_size, "cannot be read: %s", strerror(errno));
            goto fail;
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n > CONFIG_MAX_BYTES) { /* it grew while we read it */
            snprintf(why, why_size, "has more than %zu bytes", CONFIG_MAX_BYTES);
            goto fail;
        }
    }
    close(fd);
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    free(buf);
    close(fd);
    return NULL;
}

int infinirt__config_read_file(infinirt__config *cfg, const char *path, char *why, size_t why_size)
{
    size_t len = 0;
    char *text = slurp(path, &len, why, why_size);
    if (text == NULL)
        return -1;
    const char *nul = memchr(text, '\0', len);
    size_t skip = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    size_t blank = strspn(text + skip, " \t\r\n\v\f");
    int rc = -1;
    if (nul != NULL) {
        snprintf(why, why_size, "is a binary file (a NUL byte at offset %zu), not an INI text file",
                 (size_t)(nul - text));
        goto out;
    }
    if (skip + blank == len) {
        snprintf(why, why_size, "is empty");
        goto out;
    }
    char resolved[PATH_MAX];
    snprintf(cfg->path, sizeof cfg->path, "%s", realpath(path, resolved) ? resolved : path);
    snprintf(cfg->dir, sizeof cfg->dir, "%s", cfg->path);
    char *slash = strrchr(cfg->dir, '/');
    if (slash != NULL)
        slash == cfg->dir ? (void)snprintf(cfg->dir, sizeof cfg->dir, "/") : (void)(*slash = '\0');
    else
        snprintf(cfg->dir, sizeof cfg->dir, ".");
    reader r = {
        .sink = {.section = on_section, .key = on_key, .problem = on_problem},
        .cfg = cfg,
        .path = cfg->path,
    };
    size_t found = infinirt__ini_parse(text, len, &r.sink);
    if (found == 0 && r.problems > 0) {
        /* Nothing but malformed lines: not a config at all (a file that is
         * only comments is a config that sets nothing, and is fine). */
        snprintf(why, why_size, "has no [section] header or KEY = VALUE line: not an INI file");
        cfg->path[0] = cfg->dir[0] = '\0';
        goto out;
    }
    rc = 0;
out:
    free(text);
    return rc;
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
    INFINIRT__WARN("%s:%d: [plugin.%s] %s = '%s': %s", cfg->path[0] ? cfg->path : "(no file)", kv->line, pc->name,
                   kv->key, kv->value, what);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void infinirt__config_scan_plugins(infinirt__config *cfg, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        INFINIRT__INFO("no plugin folder %s: no plugins to scan", dir);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "libinfinirt_", 12) == 0 && has_suffix(e->d_name, ".so")) {
            names = xgrow(names, &cap, n, sizeof *names);
            names[n++] = xstrdup(e->d_name);
        }
    }
    closedir(d);
    /* readdir order is arbitrary; sort so the report is stable. */
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char name[256];
        size_t len = strlen(names[i]) - 12 - 3;
        snprintf(name, sizeof name, "%.*s", (int)len, names[i] + 12);
        if (!valid_plugin_name(name)) {
            INFINIRT__INFO("plugin folder %s: %s skipped (not a plugin name)", dir, names[i]);
        } else if (find_plugin(cfg, name) == NULL) {
            /* Found and not named in the file: loaded with its defaults. */
            infinirt__plugin_conf *pc = find_or_add_plugin(cfg, name, 0);
            snprintf(pc->library, sizeof pc->library, "%s/%s", dir, names[i]);
        }
        free(names[i]);
    }
    free(names);
}

/* Whether name is in the comma list. */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p != '\0';) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e != '\0' && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if ((size_t)(t - p) == n && strncmp(p, name, n) == 0)
            return true;
        p = e;
    }
    return false;
}

/* [loader] plugins = LIST: only these load; every other plugin found is
 * reported as not loaded, with the reason.  A listed name that is nowhere
 * is added, so the report says its file was not found. */
static void apply_only(infinirt__config *cfg)
{
    if (cfg->only == NULL)
        return;
    for (size_t i = 0; i < cfg->nplugins; i++) {
        infinirt__plugin_conf *pc = &cfg->plugins[i];
        if (pc->enabled && !in_list(cfg->only, pc->name)) {
            pc->enabled = false;
            snprintf(pc->why_off, sizeof pc->why_off, "not in [loader] plugins = %.120s (%s:%d)", cfg->only,
                     cfg->path, cfg->only_line);
        }
    }
    char *list = xstrdup(cfg->only), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t')
            tok++;
        size_t n = strlen(tok);
        while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
            tok[--n] = '\0';
        if (n == 0)
            continue;
        if (!valid_plugin_name(tok))
            INFINIRT__WARN("%s:%d: [loader] plugins: '%s' is not a plugin name; ignored", cfg->path, cfg->only_line,
                           tok);
        else if (find_plugin(cfg, tok) == NULL)
            find_or_add_plugin(cfg, tok, cfg->only_line);
    }
    free(list);
}

/* 1: read; 0: no file there; -1: a file that cannot be used (reported). */
static int try_file(infinirt__config *cfg, const char *path, const char *what, char *why, size_t why_size)
{
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT) {
        snprintf(why, why_size, "does not exist");
        INFINIRT__DEBUG("config: no %s at %s", what, path);
        return 0;
    }
    if (infinirt__config_read_file(cfg, path, why, why_size) != 0)
        return -1;
    INFINIRT__INFO("config: read %s %s", what, cfg->path);
    return 1;
}

int infinirt__config_load(infinirt__config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->log_level = -1;
    cfg->default_type = INFINI_DEVICE_CPU;
    cfg->default_id = 0;
    infinirt__alloc_config_default(&cfg->alloc);

    char path[PATH_MAX], why[256];
    int found = 0;
    const char *env = secure_getenv("INFINIRT_CONFIG");
    if (env != NULL && env[0] != '\0') {
        /* The operator named this file: using another one instead would
         * run with settings nobody asked for. */
        if (try_file(cfg, env, "INFINIRT_CONFIG file", why, sizeof why) != 1) {
            INFINIRT__ERROR("INFINIRT_CONFIG=%s %s; infinirt does not start (fix the file, or unset "
                            "INFINIRT_CONFIG to use the usual search)",
                            env, why);
            return -1;
        }
        found = 1;
    }
    /* A file in a usual place that cannot be used is reported and skipped,
     * as if it were not there. */
    if (!found) {
        const char *xdg = secure_getenv("XDG_CONFIG_HOME");
        const char *home = secure_getenv("HOME");
        if (xdg != NULL && xdg[0] == '/')
            snprintf(path, sizeof path, "%s/infinirt/infinirt.ini", xdg);
        else if (home != NULL && home[0] != '\0')
            snprintf(path, sizeof path, "%s/.config/infinirt/infinirt.ini", home);
        else
            path[0] = '\0';
        if (path[0] != '\0' && (found = try_file(cfg, path, "user config", why, sizeof why)) < 0)
            INFINIRT__WARN("config: user config %s %s; ignored", path, why);
    }
    if (found != 1) {
        snprintf(path, sizeof path, "%s/%s/infinirt/infinirt.ini", infinirt__loader_dir(),
                 INFINIRT_SYSCONF_FROM_LIBDIR);
        if ((found = try_file(cfg, path, "installed config", why, sizeof why)) < 0)
            INFINIRT__WARN("config: installed config %s %s; ignored", path, why);
    }
    if (cfg->plugin_dir[0] == '\0')
        snprintf(cfg->plugin_dir, sizeof cfg->plugin_dir, "%s/%s", infinirt__loader_dir(), INFINIRT_PLUGIN_SUBDIR);
    if (found != 1) {
        INFINIRT__INFO("config: no file found; loading every plugin in %s", cfg->plugin_dir);
        cfg->path[0] = '\0';
    }
    /* Every plugin in the folder is considered, named in the file or not:
     * a file that sets one plugin's keys does not hide the others. */
    infinirt__config_scan_plugins(cfg, cfg->plugin_dir);
    apply_only(cfg);
    /* A plugin named in the file without `library` lives in plugin_dir. */
    for (size_t i = 0; i < cfg->nplugins; i++) {
        infinirt__plugin_conf *pc = &cfg->plugins[i];
        if (pc->library[0] == '\0')
            snprintf(pc->library, sizeof pc->library, "%s/libinfinirt_%s.so", cfg->plugin_dir, pc->name);
    }
    return 0;
}
