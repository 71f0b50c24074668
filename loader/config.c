/*
 * config.c - find and read the INI config.
 *
 * Search order (ARCHITECTURE §3): INFINIRT_CONFIG, then
 * $XDG_CONFIG_HOME/infinirt/infinirt.ini (~/.config when unset), then the
 * installed <prefix>/etc/infinirt/infinirt.ini found relative to the loader,
 * then an embedded default that loads every plugin beside the loader.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#ifndef INFINIRT_SYSCONF_FROM_LIBDIR
#define INFINIRT_SYSCONF_FROM_LIBDIR "../etc"
#endif
#ifndef INFINIRT_PLUGIN_SUBDIR
#define INFINIRT_PLUGIN_SUBDIR "infinirt"
#endif

/* By type slot (infinirt__type_slot). */
static const char *const k_type_names[INFINIRT__TYPE_SLOTS] = {
    "cpu", "nvidia", "cambricon", "ascend", "metax", "moore",
    "iluvatar", "kunlun", "hygon", "qy", "ali", "opencl",
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

int infinirt__parse_size(const char *text, size_t *out)
{
    if (text == NULL || !isdigit((unsigned char)*text))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0)
        return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: return -1;
    }
    if (shift && (toupper((unsigned char)*end) == 'B' || toupper((unsigned char)*end) == 'I')) {
        if (toupper((unsigned char)*end) == 'I')
            end++; /* KiB, MiB, GiB */
        if (toupper((unsigned char)*end) == 'B')
            end++;
    }
    if (*end != '\0')
        return -1;
    if (shift && v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
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

typedef struct {
    infinirt__config *cfg;
    FILE *f;
    const char *path;
    int line;                 /* line number of the line inih is parsing */
    bool prev_was_key;        /* for inih's indented continuation lines */
    infinirt__plugin_conf *cur_plugin;
    char cur_section[128];
} reader_state;

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

static bool is_blank_or_comment(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    return *s == '\0' || *s == ';' || *s == '#';
}

/* Cut an inline comment: ';' or '#' after a space or tab ends the value.
 * inih cuts ';' only, and only when built with inline comments, so a
 * "key = 4M  # note" used to reach the plugin as the value "4M  # note". */
static void cut_inline_comment(char *line)
{
    for (char *p = line; *p != '\0'; p++) {
        if ((*p == ';' || *p == '#') && p > line && (p[-1] == ' ' || p[-1] == '\t')) {
            p[0] = '\n';
            p[1] = '\0';
            return;
        }
    }
}

/* inih does not tell its handler the line number, and reports only the first
 * malformed line.  Feeding it through this reader lets us count lines and
 * warn about every malformed one ourselves, with file and line. */
static char *counting_reader(char *str, int num, void *stream)
{
    reader_state *st = stream;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, st->f);
    if (n < 0) {
        free(line);
        return NULL;
    }
    st->line++;
    const char *s = line;
    while (*s == ' ' || *s == '\t')
        s++;
    bool indented = s != line;
    bool ok;
    if ((size_t)n >= (size_t)num) {
        INFINIRT__WARN("%s:%d: line longer than %d characters ignored", st->path, st->line, num - 1);
        ok = false;
    } else if (is_blank_or_comment(s)) {
        ok = true;
    } else if (*s == '[') {
        ok = strchr(s, ']') != NULL;
        if (!ok)
            INFINIRT__WARN("%s:%d: malformed section header (no closing ']'): ignored", st->path, st->line);
        st->prev_was_key = false;
    } else if (indented && st->prev_was_key) {
        ok = true; /* continuation of the previous value */
        cut_inline_comment(line);
    } else {
        cut_inline_comment(line);
        ok = strchr(s, '=') != NULL || strchr(s, ':') != NULL;
        if (!ok)
            INFINIRT__WARN("%s:%d: malformed line (expected key = value): ignored", st->path, st->line);
        st->prev_was_key = ok;
    }
    /* A rejected line is replaced by an empty one so inih neither errors on
     * it nor loses its own line count. */
    snprintf(str, (size_t)num, "%s", ok ? line : "\n");
    free(line);
    return str;
}

static void resolve_path(const infinirt__config *cfg, const char *value, char *out, size_t outsz)
{
    if (value[0] == '/' || cfg->dir[0] == '\0')
        snprintf(out, outsz, "%s", value);
    else
        snprintf(out, outsz, "%s/%s", cfg->dir, value);
}

static infinirt__plugin_conf *find_or_add_plugin(infinirt__config *cfg, const char *name, int line)
{
    for (size_t i = 0; i < cfg->nplugins; i++)
        if (strcmp(cfg->plugins[i].name, name) == 0)
            return &cfg->plugins[i];
    cfg->plugins = xgrow(cfg->plugins, &cfg->capplugins, cfg->nplugins, sizeof *cfg->plugins);
    infinirt__plugin_conf *pc = &cfg->plugins[cfg->nplugins++];
    memset(pc, 0, sizeof *pc);
    snprintf(pc->name, sizeof pc->name, "%s", name);
    pc->enabled = true;
    pc->line = line;
    return pc;
}

static void handle_loader_key(reader_state *st, const char *name, const char *value)
{
    infinirt__config *cfg = st->cfg;
    if (strcmp(name, "log_level") == 0) {
        int l = infinirt__log_parse_level(value);
        if (l < 0)
            INFINIRT__WARN("%s:%d: log_level '%s' is not error, warn, info or debug", st->path, st->line, value);
        else
            cfg->log_level = l;
    } else if (strcmp(name, "plugin_dir") == 0) {
        resolve_path(cfg, value, cfg->plugin_dir, sizeof cfg->plugin_dir);
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
            long v = strtol(colon + 1, &end, 10);
            id = (int)v;
            if (end == colon + 1 || *end != '\0' || v < 0 || v > INT_MAX)
                t = -1;
        }
        if (t < 0) {
            INFINIRT__WARN("%s:%d: default_device '%s' is not TYPE[:ID] (e.g. cpu:0, nvidia:1)", st->path,
                           st->line, value);
        } else {
            cfg->default_type = (infiniDevice_t)t;
            cfg->default_id = id;
        }
    } else {
        INFINIRT__WARN("%s:%d: unknown key '%s' in [loader]: ignored", st->path, st->line, name);
    }
}

static void handle_allocator_key(reader_state *st, const char *name, const char *value)
{
    infinirt__alloc_config *a = &st->cfg->alloc;
    size_t sz;
    int b;
    if (strcmp(name, "enabled") == 0 || strcmp(name, "release_on_free") == 0) {
        if ((b = infinirt__parse_bool(value)) < 0) {
            INFINIRT__WARN("%s:%d: %s = '%s' is not true or false", st->path, st->line, name, value);
            return;
        }
        if (name[0] == 'e')
            a->enabled = b;
        else
            a->release_on_free = b;
    } else if (strcmp(name, "max_cached") == 0 || strcmp(name, "granularity") == 0 ||
               strcmp(name, "max_split_size") == 0) {
        if (infinirt__parse_size(value, &sz) < 0) {
            INFINIRT__WARN("%s:%d: %s = '%s' is not a size (e.g. 512, 64K, 2M, 1G)", st->path, st->line, name,
                           value);
            return;
        }
        if (name[0] == 'g') {
            if (sz == 0 || (sz & (sz - 1)) != 0 || sz > (1u << 30)) {
                INFINIRT__WARN("%s:%d: granularity must be a power of two up to 1G, not %zu", st->path,
                               st->line, sz);
                return;
            }
            a->granularity = sz;
        } else if (name[4] == 'c') {
            a->max_cached_bytes = sz;
        } else {
            a->max_split_size = sz;
        }
    } else {
        INFINIRT__WARN("%s:%d: unknown key '%s' in [allocator]: ignored", st->path, st->line, name);
    }
}

static int on_ini_key(void *user, const char *section, const char *name, const char *value)
{
    reader_state *st = user;
    infinirt__config *cfg = st->cfg;
    if (name == NULL)
        return 1; /* section start (INI_CALL_HANDLER_ON_NEW_SECTION builds only) */
    if (strcmp(section, "loader") == 0) {
        handle_loader_key(st, name, value);
    } else if (strcmp(section, "allocator") == 0) {
        handle_allocator_key(st, name, value);
    } else if (strncmp(section, "plugin.", 7) == 0 && section[7] != '\0') {
        infinirt__plugin_conf *pc = find_or_add_plugin(cfg, section + 7, st->line);
        if (strcmp(name, "library") == 0) {
            resolve_path(cfg, value, pc->library, sizeof pc->library);
        } else if (strcmp(name, "enabled") == 0) {
            int b = infinirt__parse_bool(value);
            if (b < 0)
                INFINIRT__WARN("%s:%d: enabled = '%s' is not true or false; plugin left enabled", st->path,
                               st->line, value);
            else
                pc->enabled = b;
        } else {
            pc->keys = xgrow(pc->keys, &pc->capkeys, pc->nkeys, sizeof *pc->keys);
            pc->keys[pc->nkeys++] = (infinirt__kv){xstrdup(name), xstrdup(value), st->line};
        }
    } else {
        INFINIRT__WARN("%s:%d: unknown section [%s]: key '%s' ignored", st->path, st->line, section, name);
    }
    return 1;
}

int infinirt__config_read_file(infinirt__config *cfg, const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    char resolved[PATH_MAX];
    snprintf(cfg->path, sizeof cfg->path, "%s", realpath(path, resolved) ? resolved : path);
    snprintf(cfg->dir, sizeof cfg->dir, "%s", cfg->path);
    char *slash = strrchr(cfg->dir, '/');
    if (slash != NULL)
        *slash = '\0';
    else
        snprintf(cfg->dir, sizeof cfg->dir, ".");
    reader_state st = {.cfg = cfg, .f = f, .path = cfg->path};
    /* Sections seen before any [plugin.X] key still create the plugin entry:
     * "[plugin.cpu]" alone means "load cpu with defaults".  inih only reports
     * keys, so section headers are picked up by a first pass. */
    char buf[2048];
    int line = 0;
    while (fgets(buf, sizeof buf, f) != NULL) {
        line++;
        char *s = buf;
        while (*s == ' ' || *s == '\t')
            s++;
        char *close;
        if (strncmp(s, "[plugin.", 8) == 0 && (close = strchr(s, ']')) != NULL && close > s + 8) {
            *close = '\0';
            find_or_add_plugin(cfg, s + 8, line);
        }
    }
    rewind(f);
    ini_parse_stream(counting_reader, &st, on_ini_key, &st);
    fclose(f);
    return 0;
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
        char name[64];
        size_t len = strlen(names[i]) - 12 - 3;
        snprintf(name, sizeof name, "%.*s", (int)len, names[i] + 12);
        infinirt__plugin_conf *pc = find_or_add_plugin(cfg, name, 0);
        snprintf(pc->library, sizeof pc->library, "%s/%s", dir, names[i]);
        free(names[i]);
    }
    free(names);
}

static int try_file(infinirt__config *cfg, const char *path, const char *what)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        INFINIRT__DEBUG("config: no %s at %s", what, path);
        return -1;
    }
    if (infinirt__config_read_file(cfg, path) != 0) {
        INFINIRT__WARN("config: %s %s cannot be read: %s", what, path, strerror(errno));
        return -1;
    }
    INFINIRT__INFO("config: read %s %s", what, cfg->path);
    return 0;
}

void infinirt__config_load(infinirt__config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->log_level = -1;
    cfg->default_type = INFINI_DEVICE_CPU;
    cfg->default_id = 0;
    infinirt__alloc_config_default(&cfg->alloc);

    char path[PATH_MAX];
    int found = -1;
    const char *env = secure_getenv("INFINIRT_CONFIG");
    if (env != NULL && env[0] != '\0') {
        found = try_file(cfg, env, "INFINIRT_CONFIG file");
        if (found != 0)
            INFINIRT__WARN("INFINIRT_CONFIG=%s cannot be read (%s); searching the usual places", env,
                           strerror(errno));
    }
    if (found != 0) {
        const char *xdg = secure_getenv("XDG_CONFIG_HOME");
        const char *home = secure_getenv("HOME");
        if (xdg != NULL && xdg[0] == '/')
            snprintf(path, sizeof path, "%s/infinirt/infinirt.ini", xdg);
        else if (home != NULL && home[0] != '\0')
            snprintf(path, sizeof path, "%s/.config/infinirt/infinirt.ini", home);
        else
            path[0] = '\0';
        if (path[0] != '\0')
            found = try_file(cfg, path, "user config");
    }
    if (found != 0) {
        snprintf(path, sizeof path, "%s/%s/infinirt/infinirt.ini", infinirt__loader_dir(),
                 INFINIRT_SYSCONF_FROM_LIBDIR);
        found = try_file(cfg, path, "installed config");
    }
    if (cfg->plugin_dir[0] == '\0')
        snprintf(cfg->plugin_dir, sizeof cfg->plugin_dir, "%s/%s", infinirt__loader_dir(),
                 INFINIRT_PLUGIN_SUBDIR);
    if (found != 0) {
        INFINIRT__INFO("config: no file found; loading every plugin in %s", cfg->plugin_dir);
        cfg->path[0] = '\0';
        infinirt__config_scan_plugins(cfg, cfg->plugin_dir);
    }
    /* A plugin named in the file without `library` lives in plugin_dir. */
    for (size_t i = 0; i < cfg->nplugins; i++) {
        infinirt__plugin_conf *pc = &cfg->plugins[i];
        if (pc->library[0] == '\0')
            snprintf(pc->library, sizeof pc->library, "%s/libinfinirt_%s.so", cfg->plugin_dir, pc->name);
    }
}
