/*
 * config.c - find and read the INI config.
 *
 * Search order (README, "Configuration"): INFINIRT_CONFIG, then
 * $XDG_CONFIG_HOME/infinirt/infinirt.ini (~/.config when unset), then the
 * installed config: <prefix>/etc/infinirt/infinirt.ini found relative to
 * the loader, or the absolute folder an FHS install (/usr: /etc) was built
 * with.
 * Every plugin in the plugin folder is considered whether the file names it
 * or not; the file's [loader] plugins = LIST or a section's enabled = false
 * keep one unloaded, and the report says which did.  The lines are read by
 * ini.c and given their meaning by config_keys.c.
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

const char *infinirt__loader_dir(void)
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
    int problems = 0;
    size_t found = infinirt__config_parse(cfg, text, len, &problems);
    if (found == 0 && problems > 0) {
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
            names = infinirt__config_grow(names, &cap, n, sizeof *names);
            names[n++] = infinirt__config_strdup(e->d_name);
        }
    }
    closedir(d);
    /* readdir order is arbitrary; sort so the report is stable (names is
     * NULL when none was found, which qsort must not be given). */
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char name[256];
        size_t len = strlen(names[i]) - 12 - 3;
        snprintf(name, sizeof name, "%.*s", (int)len, names[i] + 12);
        if (!infinirt__config_plugin_name_ok(name)) {
            INFINIRT__INFO("plugin folder %s: %s skipped (not a plugin name)", dir, names[i]);
        } else if (infinirt__config_find_plugin(cfg, name) == NULL) {
            /* Found and not named in the file: loaded with its defaults. */
            infinirt__plugin_conf *pc = infinirt__config_add_plugin(cfg, name);
            snprintf(pc->library, sizeof pc->library, "%s/%s", dir, names[i]);
        }
        free(names[i]);
    }
    free(names);
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
        char sysdir[PATH_MAX];
        sysconf_dir(sysdir, sizeof sysdir);
        snprintf(path, sizeof path, "%s/infinirt.ini", sysdir);
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
    infinirt__config_apply_only(cfg);
    /* A plugin named in the file without `library` lives in plugin_dir. */
    for (size_t i = 0; i < cfg->nplugins; i++) {
        infinirt__plugin_conf *pc = &cfg->plugins[i];
        if (pc->library[0] == '\0')
            snprintf(pc->library, sizeof pc->library, "%s/libinfinirt_%s.so", cfg->plugin_dir, pc->name);
    }
    return 0;
}
