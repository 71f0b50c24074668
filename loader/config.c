/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - find and read the INI config, its drop-ins and the plugin
 * folders.
 *
 * Search order (README, "Configuration"): INFINIRT_CONFIG, then
 * $XDG_CONFIG_HOME/infinirt/infinirt.ini (~/.config when unset), then the
 * installed config: <prefix>/etc/infinirt/infinirt.ini found relative to
 * the loader, or the absolute folder an FHS install (/usr: /etc) was built
 * with.  After it, every *.ini of the plugins.d folders beside it and in the
 * installed config's folder, in name order.  Every plugin in the plugin
 * folders (INFINIRT_PLUGIN_PATH's, then plugin_dir) is considered whether a
 * file names it or not; [loader] plugins = LIST, INFINIRT_PLUGINS or a
 * section's enabled = false keep one unloaded, and the report says which
 * did.  The lines are read by ini.c and given their meaning by
 * config_keys.c; the environment is config_env.c's.
 */
#define _GNU_SOURCE
#include "config_int.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The installed config's folder: absolute (an FHS install: /etc/infinirt),
 * or relative to the loader's folder (a relocatable prefix:
 * ../etc/infinirt).  CMake sets it (loader/CMakeLists.txt). */
#ifndef INFINIRT_SYSCONF_DIR
#define INFINIRT_SYSCONF_DIR "../etc/infinirt"
#endif
#ifndef INFINIRT_PLUGIN_SUBDIR
#define INFINIRT_PLUGIN_SUBDIR "infinirt"
#endif

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

/* The folder holding libinfinirt.so, without trailing slash. */
static const char *infinirt__loader_dir(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, find_loader_dir);
    return g_loader_dir;
}

/* The installed config's folder, as a path. */
static void sysconf_dir(char *out, size_t n)
{
    if (INFINIRT_SYSCONF_DIR[0] == '/')
        snprintf(out, n, "%s", INFINIRT_SYSCONF_DIR);
    else
        snprintf(out, n, "%s/%s", infinirt__loader_dir(), INFINIRT_SYSCONF_DIR);
}

/* ------------------------------------------------------------ reading */

/* A config file is a few kilobytes; anything near this is not one. */
#define CONFIG_MAX_BYTES ((size_t)1 << 20)

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

/* The folder of path, into out ("." when it has none). */
static void folder_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

/* Read one file into cfg.  The config (dropin false) becomes cfg->path and
 * must hold something; a drop-in may be empty (it then sets nothing, and
 * hides a system drop-in of its name).  Returns 0, or -1 with the reason
 * in why (what is wrong with the file: "is a directory", "is empty", ...). */
static int read_file(infinirt__config *cfg, const char *path, bool dropin, char *why, size_t why_size)
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
    if (skip + blank == len && !dropin) {
        snprintf(why, why_size, "is empty");
        goto out;
    }
    char real[PATH_MAX], resolved[PATH_MAX], dir[PATH_MAX];
    snprintf(resolved, sizeof resolved, "%s", realpath(path, real) ? real : path);
    folder_of(resolved, dir, sizeof dir);
    /* Keys point at the file's name for their messages: kept for good. */
    cfg->files = infinirt__config_grow(cfg->files, &cfg->capfiles, cfg->nfiles, sizeof *cfg->files);
    const char *file = cfg->files[cfg->nfiles++] = infinirt__config_strdup(resolved);
    int problems = 0;
    size_t found = infinirt__config_parse(cfg, file, dir, text, len, &problems);
    if (found == 0 && problems > 0) {
        /* Nothing but malformed lines: not a config at all (a file that is
         * only comments is a config that sets nothing, and is fine). */
        snprintf(why, why_size, "has no [section] header or KEY = VALUE line: not an INI file");
        goto out;
    }
    if (!dropin) {
        snprintf(cfg->path, sizeof cfg->path, "%s", resolved);
        snprintf(cfg->dir, sizeof cfg->dir, "%s", dir);
    }
    rc = 0;
out:
    free(text);
    return rc;
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

/* The names in dir that pass keep(), sorted (readdir order is arbitrary:
 * sorted, the report and the reading order are stable).  Returns how many
 * (*out NULL when none), or -1 with errno when dir cannot be opened. */
static long list_folder(const char *dir, int (*keep)(const char *), char ***out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (keep(e->d_name)) {
            names = infinirt__config_grow(names, &cap, n, sizeof *names);
            names[n++] = infinirt__config_strdup(e->d_name);
        }
    }
    closedir(d);
    if (n > 1) /* names is NULL when none was found, which qsort must not be given */
        qsort(names, n, sizeof *names, cmp_names);
    *out = names;
    return (long)n;
}

static int is_plugin_file(const char *name)
{
    return strncmp(name, "libinfinirt_", 12) == 0 && has_suffix(name, ".so");
}

static int is_dropin_file(const char *name)
{
    return name[0] != '.' && strlen(name) > 4 && has_suffix(name, ".ini");
}

/* Scan dir for libinfinirt_NAME.so.  A name no file names becomes a plugin
 * with its defaults; one a file names without `library` gets this file.
 * Folders are scanned in order and the first that holds a name wins, but
 * an INFINIRT_PLUGIN_PATH folder (from_env) also wins over a file's
 * `library =`, with a warning naming both.  named_by says what named dir
 * (the report's PLUGIN_DIR name), where says it in words. */
static void scan_plugins(infinirt__config *cfg, const char *dir, const char *named_by, bool from_env,
                         const char *where)
{
    char **names;
    long n = list_folder(dir, is_plugin_file, &names);
    if (n < 0) {
        int err = errno;
        char what[300];
        snprintf(what, sizeof what, "%s",
                 err == ENOENT    ? "does not exist"
                 : err == ENOTDIR ? "is not a folder"
                                  : strerror(err));
        infinirt__config_add_entry(cfg, INFINIRT_CONFIG_ENTRY_PLUGIN_DIR, named_by, dir, 1, "%s", what);
        INFINIRT__CONFIG_WARN(cfg, "plugin folder %s (%s) %s%s: no plugin is loaded from it", dir, where,
                              err == ENOENT || err == ENOTDIR ? "" : "cannot be read: ", what);
        return;
    }
    if (n == 0) {
        infinirt__config_add_entry(cfg, INFINIRT_CONFIG_ENTRY_PLUGIN_DIR, named_by, dir, 1,
                                   "holds no plugin (no libinfinirt_NAME.so)");
        INFINIRT__CONFIG_WARN(cfg, "plugin folder %s (%s) holds no plugin (no libinfinirt_NAME.so)", dir, where);
        return;
    }
    int used = 0;
    for (long i = 0; i < n; i++) {
        char name[256], path[PATH_MAX + 256];
        size_t len = strlen(names[i]) - 12 - 3;
        snprintf(name, sizeof name, "%.*s", (int)len, names[i] + 12);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        infinirt__plugin_conf *pc =
            infinirt__config_plugin_name_ok(name) ? infinirt__config_find_plugin(cfg, name) : NULL;
        if (!infinirt__config_plugin_name_ok(name)) {
            INFINIRT__INFO("plugin folder %s: %s skipped (not a plugin name)", dir, names[i]);
        } else if (pc == NULL) {
            /* Found and not named in a file: loaded with its defaults. */
            pc = infinirt__config_add_plugin(cfg, name);
            infinirt__config_set_library(pc, path);
            used++;
        } else if (pc->library == NULL) {
            /* Named in a file without `library`: this is its file. */
            infinirt__config_set_library(pc, path);
            used++;
        } else if (from_env && pc->library_file != NULL) {
            INFINIRT__CONFIG_WARN(cfg,
                                  "INFINIRT_PLUGIN_PATH: plugin %s is loaded from %s, not from the file "
                                  "%s:%d's [plugin.%s] library = %s (the environment wins)",
                                  name, path, pc->library_file, pc->library_line, name, pc->library);
            infinirt__config_set_library(pc, path);
            pc->library_file = NULL;
            pc->library_line = 0;
            used++;
        } else {
            INFINIRT__INFO("plugin folder %s: %s not used: plugin %s is %s", dir, names[i], name, pc->library);
        }
        free(names[i]);
    }
    free(names);
    infinirt__config_add_entry(cfg, INFINIRT_CONFIG_ENTRY_PLUGIN_DIR, named_by, dir, 0, "%d plugin%s taken from it",
                               used, used == 1 ? "" : "s");
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
    if (read_file(cfg, path, false, why, why_size) != 0)
        return -1;
    INFINIRT__INFO("config: read %s %s", what, cfg->path);
    return 1;
}

/* A drop-in: its name (what orders it) and its path. */
typedef struct {
    char *name, *path;
    int folder; /* 0: beside the config in use; 1: the installed config's folder */
} dropin;

static int cmp_dropins(const void *a, const void *b)
{
    const dropin *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : x->folder - y->folder;
}

/* Every *.ini of the plugins.d folders of folders[0..nfolders), read in
 * name order; of two files of one name the first folder's is read (the
 * folder beside the config in use before the installed config's). */
static void read_dropins(infinirt__config *cfg, const char *const *folders, int nfolders)
{
    dropin *all = NULL;
    size_t n = 0, cap = 0;
    for (int f = 0; f < nfolders; f++) {
        char dir[PATH_MAX + 16], **names;
        snprintf(dir, sizeof dir, "%s/plugins.d", folders[f]);
        long k = list_folder(dir, is_dropin_file, &names);
        if (k < 0) {
            if (errno == ENOENT)
                INFINIRT__DEBUG("config: no drop-in folder %s", dir);
            else
                INFINIRT__CONFIG_WARN(cfg, "config: drop-in folder %s cannot be read: %s; its files are ignored", dir,
                                      strerror(errno));
            continue;
        }
        for (long i = 0; i < k; i++) {
            char path[sizeof dir + 256];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            all = infinirt__config_grow(all, &cap, n, sizeof *all);
            all[n++] = (dropin){names[i], infinirt__config_strdup(path), f};
        }
        free(names);
    }
    if (n > 1)
        qsort(all, n, sizeof *all, cmp_dropins);
    for (size_t i = 0; i < n; i++) {
        char why[256];
        if (i > 0 && strcmp(all[i].name, all[i - 1].name) == 0) {
            INFINIRT__INFO("config: drop-in %s not read: %s has its name", all[i].path, all[i - 1].path);
        } else if (read_file(cfg, all[i].path, true, why, sizeof why) != 0) {
            INFINIRT__CONFIG_WARN(cfg, "config: drop-in %s %s; ignored", all[i].path, why);
        } else {
            INFINIRT__INFO("config: read drop-in %s", cfg->files[cfg->nfiles - 1]);
            infinirt__config_add_entry(cfg, INFINIRT_CONFIG_ENTRY_FILE, "drop-in", cfg->files[cfg->nfiles - 1], 0,
                                       NULL);
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(all[i].name);
        free(all[i].path);
    }
    free(all);
}

/* Whether two paths name one folder. */
static bool same_folder(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int infinirt__config_load(infinirt__config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->log_level = -1;
    cfg->default_type = INFINI_DEVICE_CPU;
    cfg->default_id = 0;
    cfg->trace_max_mb = 256;
    infinirt__alloc_config_default(&cfg->alloc);
    infinirt__config_env_begin(cfg);

    char path[PATH_MAX], why[256], sysdir[PATH_MAX];
    sysconf_dir(sysdir, sizeof sysdir);
    int found = 0;
    const char *env = infinirt__config_getenv(cfg, "INFINIRT_CONFIG");
    if (env != NULL) {
        /* The operator named this file: using another one instead would
         * run with settings nobody asked for. */
        if (try_file(cfg, env, "INFINIRT_CONFIG file", why, sizeof why) != 1) {
            INFINIRT__ERROR("INFINIRT_CONFIG=%s %s; infinirt does not start (fix the file, or unset "
                            "INFINIRT_CONFIG to use the usual search)",
                            env, why);
            return -1;
        }
        found = 1;
        infinirt__config_entry_say(infinirt__config_env_entry(cfg, "INFINIRT_CONFIG"), 0,
                                   "the config file read (instead of the search)");
    }
    /* A file in a usual place that cannot be used is reported and skipped,
     * as if it were not there. */
    if (!found) {
        const char *xdg = infinirt__config_getenv(cfg, "XDG_CONFIG_HOME");
        const char *home = infinirt__config_getenv(cfg, "HOME");
        if (xdg != NULL && xdg[0] == '/')
            snprintf(path, sizeof path, "%s/infinirt/infinirt.ini", xdg);
        else if (home != NULL)
            snprintf(path, sizeof path, "%s/.config/infinirt/infinirt.ini", home);
        else
            path[0] = '\0';
        if (path[0] != '\0' && (found = try_file(cfg, path, "user config", why, sizeof why)) < 0)
            INFINIRT__CONFIG_WARN(cfg, "config: user config %s %s; ignored", path, why);
    }
    if (found != 1) {
        snprintf(path, sizeof path, "%s/infinirt.ini", sysdir);
        if ((found = try_file(cfg, path, "installed config", why, sizeof why)) < 0)
            INFINIRT__CONFIG_WARN(cfg, "config: installed config %s %s; ignored", path, why);
    }
    if (found == 1) {
        infinirt__config_add_entry(cfg, INFINIRT_CONFIG_ENTRY_FILE, "config", cfg->path, 0, NULL);
    } else {
        INFINIRT__INFO("config: no file found; default settings");
        cfg->path[0] = '\0';
    }
    /* Drop-ins beside the file in use, and those of the installed config's
     * folder (a package's plugin adds itself there), even with no file. */
    const char *folders[2];
    int nfolders = 0;
    if (found == 1)
        folders[nfolders++] = cfg->dir;
    if (nfolders == 0 || !same_folder(cfg->dir, sysdir))
        folders[nfolders++] = sysdir;
    read_dropins(cfg, folders, nfolders);
    infinirt__config_parse_done(cfg);

    infinirt__config_env_plugins(cfg);
    char where[1200];
    if (cfg->plugin_dir[0] == '\0') {
        snprintf(cfg->plugin_dir, sizeof cfg->plugin_dir, "%s/%s", infinirt__loader_dir(), INFINIRT_PLUGIN_SUBDIR);
        snprintf(where, sizeof where, "the default, beside libinfinirt.so");
    } else {
        snprintf(where, sizeof where, "plugin_dir at %s:%d", cfg->plugin_dir_file, cfg->plugin_dir_line);
    }
    /* INFINIRT_PLUGIN_PATH's folders first, in order, then plugin_dir.
     * Every plugin in them is considered, named in a file or not: a file
     * that sets one plugin's keys does not hide the others. */
    const char *pp = infinirt__config_getenv(cfg, "INFINIRT_PLUGIN_PATH");
    for (const char *p = pp; p != NULL && *p != '\0';) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len > 0 && len < sizeof path) {
            snprintf(path, sizeof path, "%.*s", (int)len, p);
            scan_plugins(cfg, path, "INFINIRT_PLUGIN_PATH", true, "INFINIRT_PLUGIN_PATH");
        } else if (len > 0) {
            INFINIRT__CONFIG_WARN(cfg, "INFINIRT_PLUGIN_PATH: a folder name of %zu bytes is too long; skipped", len);
        }
        p += len + (colon != NULL);
    }
    if (pp != NULL)
        infinirt__config_entry_say(infinirt__config_env_entry(cfg, "INFINIRT_PLUGIN_PATH"), 0,
                                   "folders scanned for plugins before %s", cfg->plugin_dir);
    scan_plugins(cfg, cfg->plugin_dir, cfg->plugin_dir_file ? "plugin_dir" : "default", false, where);
    infinirt__config_apply_only(cfg);
    /* A plugin named without `library` and found in no folder: the report
     * says its file in plugin_dir was not found. */
    for (size_t i = 0; i < cfg->nplugins; i++) {
        infinirt__plugin_conf *pc = &cfg->plugins[i];
        if (pc->library == NULL) {
            char lib[sizeof cfg->plugin_dir + 96];
            snprintf(lib, sizeof lib, "%s/libinfinirt_%s.so", cfg->plugin_dir, pc->name);
            infinirt__config_set_library(pc, lib);
        }
    }
    infinirt__config_env_visible(cfg);
    infinirt__config_env_rest(cfg);
    return 0;
}
