/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin.c - load plugins: dlopen, handshake, init, device discovery, and
 * the report that says why a plugin is or is not serving devices.
 *
 * One bad plugin never hides the others: every failure disables that plugin
 * only, logs one warning and is recorded in its report entry.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The most devices one plugin may declare.  A count beyond it is a broken
 * plugin, not a machine (the largest nodes have a few dozen devices); each
 * device costs the loader a device entry and an allocator pool, so a bogus
 * count of 100,000 would cost gigabytes before anything failed. */
#define INFINIRT__MAX_PLUGIN_DEVICES 4096

static void plugin_log(int level, const char *plugin_name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char prefix[80];
    snprintf(prefix, sizeof prefix, "plugin %s", plugin_name ? plugin_name : "?");
    infinirt__vlog(level, prefix, fmt, ap);
    va_end(ap);
}

/* The init arguments with what config_warnv needs to name the key's line. */
typedef struct {
    infinirtPluginInitArgs args; /* first: the plugin hands &args back */
    const infinirt__plugin_conf *pc;
    const infinirt__config *cfg;
} init_args;

static void config_warnv(const infinirtPluginInitArgs *args, size_t index, const char *fmt, va_list ap)
{
    const init_args *x = (const init_args *)args;
    infinirt__config_warn_key(x->cfg, x->pc, index, fmt, ap);
}

static void set_status(infinirt__plugin *p, infinirtPluginStatus_t st, const char *fmt, ...) INFINIRT__PRINTF(3, 4);

static void set_status(infinirt__plugin *p, infinirtPluginStatus_t st, const char *fmt, ...)
{
    p->status = st;
    if (fmt != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->message, sizeof p->message, fmt, ap);
        va_end(ap);
    }
    /* The file could not be used as a plugin: name the line that named it,
     * which is what the operator has to fix. */
    bool file_bad = st == INFINIRT_PLUGIN_NOT_FOUND || st == INFINIRT_PLUGIN_DLOPEN_ERROR ||
                    st == INFINIRT_PLUGIN_ENTRY_MISSING || st == INFINIRT_PLUGIN_ABI_MISMATCH;
    if (file_bad && p->conf != NULL && p->conf->library_file != NULL) {
        size_t n = strlen(p->message);
        snprintf(p->message + n, sizeof p->message - n, "; library = set at %s:%d", p->conf->library_file,
                 p->conf->library_line);
    }
    if (st == INFINIRT_PLUGIN_DISABLED)
        INFINIRT__INFO("plugin %s (%s): disabled in the config", p->name, p->path);
    else if (st == INFINIRT_PLUGIN_NO_DEVICES)
        /* Not a failure (a CUDA plugin on a machine without a GPU): the
         * report says why, without a warning at every program start. */
        INFINIRT__INFO("plugin %s (%s): zero devices: %s", p->name, p->path, p->message);
    else if (st != INFINIRT_PLUGIN_LOADED)
        INFINIRT__WARN("plugin %s (%s): %s: %s", p->name, p->path, infinirtGetPluginStatusString(st), p->message);
}

static void unload(infinirt__plugin *p)
{
    /* Only plugins that never ran init are closed: code of an initialised
     * plugin may still be referenced (threads, atexit handlers). */
    if (p->dl != NULL)
        dlclose(p->dl);
    p->dl = NULL;
    p->ops = NULL;
}

/* What a path that is not a regular file is, for the report. */
static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "a special file";
}

/* Why a file or folder others could change is unsafe to load code from, or
 * NULL: writable by everyone (a folder with the sticky bit only lets owners
 * replace their files), or owned by a user other than root and us. */
static const char *unsafe_why(const struct stat *sb, bool folder, char *buf, size_t n)
{
    if ((sb->st_mode & S_IWOTH) && !(folder && (sb->st_mode & S_ISVTX)))
        return "is world-writable";
    if (sb->st_uid != 0 && sb->st_uid != geteuid()) {
        snprintf(buf, n, "is owned by uid %u (neither root nor this process's %u)", (unsigned)sb->st_uid,
                 (unsigned)geteuid());
        return buf;
    }
    return NULL;
}

/* A plugin file or folder that another user could have changed is loaded
 * with a warning (kept in the report), and refused in a setuid or setgid
 * process, whose caller must not choose the code it runs.  Returns 0 when
 * the plugin may be opened. */
static int check_ownership(infinirt__plugin *p, const struct stat *file)
{
    char owner[96], what[1200] = "";
    const char *why = unsafe_why(file, false, owner, sizeof owner);
    if (why != NULL) {
        snprintf(what, sizeof what, "the file %s", why);
    } else {
        /* The folder the file really lives in: who may replace the file. */
        char real[4096];
        if (realpath(p->path, real) != NULL) {
            char *slash = strrchr(real, '/');
            if (slash == real)
                slash[1] = '\0';
            else if (slash != NULL)
                *slash = '\0';
            struct stat db;
            if (stat(real, &db) == 0 && (why = unsafe_why(&db, true, owner, sizeof owner)) != NULL)
                snprintf(what, sizeof what, "its folder %s %s", real, why);
        }
    }
    if (why == NULL)
        return 0;
    if (getauxval(AT_SECURE)) {
        set_status(p, INFINIRT_PLUGIN_DLOPEN_ERROR, "%s: refused in a setuid/setgid process", what);
        return -1;
    }
    char warning[sizeof what + 96];
    snprintf(warning, sizeof warning, "warning: %s; anyone who can change it controls this process", what);
    free(p->warning);
    p->warning = strdup(warning); /* NULL without memory: the log line below still says it */
    INFINIRT__WARN("plugin %s (%s): %s", p->name, p->path, warning);
    return 0;
}

/* dlopen, find the entry, check the table.  Returns 0 when the plugin may be
 * initialised. */
static int open_and_handshake(infinirt__plugin *p)
{
    struct stat sb;
    /* dlopen of a missing path falls back to the library search path and
     * would report "cannot open shared object"; checking first gives the
     * operator the plain answer. */
    if (stat(p->path, &sb) != 0) {
        set_status(p, INFINIRT_PLUGIN_NOT_FOUND, "%s", strerror(errno));
        return -1;
    }
    /* dlopen of a FIFO blocks until a writer comes, of a device reads it:
     * only a regular file is opened. */
    if (!S_ISREG(sb.st_mode)) {
        set_status(p, INFINIRT_PLUGIN_DLOPEN_ERROR, "%s, not a regular file: not opened", file_kind(sb.st_mode));
        return -1;
    }
    if (check_ownership(p, &sb) != 0)
        return -1;
    dlerror();
    p->dl = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
    if (p->dl == NULL) {
        const char *e = dlerror();
        set_status(p, INFINIRT_PLUGIN_DLOPEN_ERROR, "%s", e ? e : "unknown dlopen error");
        return -1;
    }
    infinirtPluginEntryFn entry;
    void *sym = dlsym(p->dl, INFINIRT_PLUGIN_ENTRY_NAME);
    memcpy(&entry, &sym, sizeof entry); /* ISO C forbids casting void* to a function pointer */
    if (sym == NULL) {
        set_status(p, INFINIRT_PLUGIN_ENTRY_MISSING, "no symbol %s in the library", INFINIRT_PLUGIN_ENTRY_NAME);
        unload(p);
        return -1;
    }
    const infinirtPluginOps *ops = NULL;
    infiniStatus_t st = entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, &ops);
    if (st != INFINI_STATUS_SUCCESS || ops == NULL) {
        set_status(p, INFINIRT_PLUGIN_ABI_MISMATCH, "entry refused loader ABI %d.%d (status %s)",
                   INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, infinirtGetErrorName(st));
        unload(p);
        return -1;
    }
    p->abi_major = ops->abi_major;
    p->abi_minor = ops->abi_minor;
    if (ops->abi_major != INFINIRT_PLUGIN_ABI_MAJOR) {
        set_status(p, INFINIRT_PLUGIN_ABI_MISMATCH, "plugin ABI %u.%u, loader wants major %d", ops->abi_major,
                   ops->abi_minor, INFINIRT_PLUGIN_ABI_MAJOR);
        unload(p);
        return -1;
    }
    /* A table must hold every entry of the minor it claims (later minors
     * than the loader's are read up to what the loader knows). */
    uint32_t known = ops->abi_minor < INFINIRT_PLUGIN_ABI_MINOR ? ops->abi_minor : INFINIRT_PLUGIN_ABI_MINOR;
    size_t need = infinirt__dispatch_table_size(known);
    if (ops->struct_size < need) {
        set_status(p, INFINIRT_PLUGIN_ABI_MISMATCH, "ops table is %u bytes, ABI %d.%u needs at least %zu",
                   ops->struct_size, INFINIRT_PLUGIN_ABI_MAJOR, known, need);
        unload(p);
        return -1;
    }
    if (infinirt__type_slot(ops->device_type) < 0) {
        set_status(p, INFINIRT_PLUGIN_ABI_MISMATCH, "device type %d is not an infiniDevice_t", (int)ops->device_type);
        unload(p);
        return -1;
    }
    char why[256];
    if (infinirt__dispatch_build(p, ops, why, sizeof why) != 0) {
        set_status(p, INFINIRT_PLUGIN_ABI_MISMATCH, "%s", why);
        unload(p);
        return -1;
    }
    p->type = ops->device_type;
    return 0;
}

/* The device's UUID, if the plugin gives one; "" otherwise.  Text that is
 * not printable ASCII, or not terminated within the buffer, is dropped with
 * a warning rather than shown to the application. */
static void read_uuid(infinirt__plugin *p, infinirt__device *d, int index)
{
    char buf[sizeof d->uuid];
    memset(buf, 0, sizeof buf);
    d->uuid[0] = '\0';
    infiniStatus_t st = p->ops->get_device_uuid(index, buf, sizeof buf);
    if (st == INFINI_STATUS_NOT_IMPLEMENTED)
        return;
    if (st != INFINI_STATUS_SUCCESS) {
        INFINIRT__WARN("plugin %s: get_device_uuid(%d) failed: %s", p->name, index, infinirtGetErrorName(st));
        return;
    }
    size_t n = strnlen(buf, sizeof buf);
    bool printable = n < sizeof buf;
    for (size_t i = 0; printable && i < n; i++)
        printable = buf[i] > ' ' && buf[i] < 0x7f;
    if (!printable) {
        INFINIRT__WARN("plugin %s: get_device_uuid(%d) gave no printable, terminated text: device %d has no UUID",
                       p->name, index, d->id);
        return;
    }
    memcpy(d->uuid, buf, n + 1);
}

static int setup_device(infinirt__plugin *p, infinirt__device *d, int id, int index)
{
    memset(d, 0, sizeof *d);
    d->plugin = p;
    d->id = id;
    d->index = index;
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->event_lock, NULL);
    infiniStatus_t st = p->ops->get_device_info(index, &d->info);
    if (st != INFINI_STATUS_SUCCESS) {
        snprintf(d->info.name, sizeof d->info.name, "%s device %d", p->name, id);
        INFINIRT__WARN("plugin %s: get_device_info(%d) failed: %s", p->name, index, infinirtGetErrorName(st));
    }
    d->info.name[sizeof d->info.name - 1] = '\0';
    d->info.description[sizeof d->info.description - 1] = '\0';
    read_uuid(p, d, index);
    uint32_t flags = 0;
    d->done_at_return = p->ops->get_device_flags(index, &flags) == INFINI_STATUS_SUCCESS &&
                        (flags & INFINIRT_PLUGIN_DEVICE_DONE_AT_RETURN);
    d->native_work = INFINIRT__NATIVE_WORK(p);
    d->counts_work = !d->done_at_return && !d->native_work;
    d->trace_reports = infinirt__trace_enabled() && (p->trace.plugin_flags & INFINIRT_PLUGIN_TRACE_REPORTS) != 0;
    d->default_stream = calloc(1, sizeof *d->default_stream);
    if (d->default_stream == NULL)
        return -1;
    d->default_stream->dev = d;
    d->default_stream->is_default = true;
    atomic_init(&d->pool, NULL); /* infinirt__device_pool creates it */
    return 0;
}

/* A pool is some 80 KiB of bins: made when a device is first used, so a
 * plugin with many devices costs little until they are. */
infinirt__pool *infinirt__device_pool_slow(infinirt__device *d)
{
    infinirt__pool_backend be;
    infinirt__fence_backend_device(&be, d);
    infinirt__pool *made = NULL, *none = NULL;
    if (infinirt__pool_create(&be, &infinirt__rt.cfg.alloc, &made) != INFINI_STATUS_SUCCESS) {
        INFINIRT__ERROR("%s:%d: out of memory creating the device's allocator",
                        infinirtGetDeviceTypeName(d->plugin->type), d->id);
        return infinirt__device_pool_peek(d);
    }
    if (!atomic_compare_exchange_strong(&d->pool, &none, made)) {
        infinirt__pool_destroy(made); /* another thread's came first; this one holds nothing */
        return none;
    }
    return made;
}

/* Handshake only: whether p may serve.  Its device type is decided on
 * first use (resolve_slot). */
static void claim_one(infinirt__plugin *p, const infinirt__plugin_conf *pc)
{
    if (!pc->enabled) {
        set_status(p, INFINIRT_PLUGIN_DISABLED, "%s", pc->why_off ? pc->why_off : "enabled = false");
        return;
    }
    if (open_and_handshake(p) != 0)
        return;
    atomic_store_explicit(&p->started, 0, memory_order_relaxed);
}

/* init, then the device table: p->status says how it ended. */
static void start_one(infinirt__plugin *p, const infinirt__plugin_conf *pc, const infinirt__config *cfg)
{
    infinirtPluginKeyValue *kv = calloc(pc->nkeys ? pc->nkeys : 1, sizeof *kv);
    if (kv == NULL) {
        set_status(p, INFINIRT_PLUGIN_INIT_FAILED, "out of memory");
        return;
    }
    for (size_t i = 0; i < pc->nkeys; i++)
        kv[i] = (infinirtPluginKeyValue){pc->keys[i].key, pc->keys[i].value};
    char msg[512] = "";
    init_args x = {.pc = pc, .cfg = cfg};
    infinirtPluginInitArgs *args_p = &x.args;
    x.args = (infinirtPluginInitArgs){
        .struct_size = sizeof x.args,
        .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
        .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
        .config = kv,
        .config_count = pc->nkeys,
        .plugin_path = p->path,
        .log = plugin_log,
        .message = msg,
        .message_size = sizeof msg,
        .config_warnv = config_warnv,
    };
    if (infinirt__trace_enabled()) {
        infinirt__trace_plugin_hooks(&p->trace);
        x.args.trace = &p->trace;
    }
    int count = 0;
    infiniStatus_t st = p->ops->init(args_p, &count);
    free(kv);
    msg[sizeof msg - 1] = '\0';
    if (st != INFINI_STATUS_SUCCESS) {
        set_status(p, INFINIRT_PLUGIN_INIT_FAILED, "%s (%s)", msg[0] ? msg : "init failed", infinirtGetErrorName(st));
        p->ops = NULL; /* initialised code stays mapped; never called again */
        return;
    }
    if (count <= 0) {
        set_status(p, INFINIRT_PLUGIN_NO_DEVICES, "%s%s%s", msg[0] ? msg : "the plugin found no device",
                   p->warning ? "; " : "", p->warning ? p->warning : "");
        return;
    }
    if (count > INFINIRT__MAX_PLUGIN_DEVICES) {
        /* Refused rather than clamped: a count like this is a bug in the
         * plugin, and its other answers are no more to be trusted.  Its
         * init succeeded, so it is shut down before it is dropped. */
        set_status(p, INFINIRT_PLUGIN_INIT_FAILED, "the plugin declared %d devices; a plugin may serve at most %d",
                   count, INFINIRT__MAX_PLUGIN_DEVICES);
        p->ops->shutdown();
        p->ops = NULL;
        return;
    }
    /* INFINIRT_VISIBLE_DEVICES: which of them the loader serves, as ids
     * 0, 1, ...; every plugin call still gets the plugin's own index. */
    int *map = calloc((size_t)count, sizeof *map);
    char visible[512];
    if (map == NULL) {
        set_status(p, INFINIRT_PLUGIN_INIT_FAILED, "out of memory for %d devices", count);
        return;
    }
    int shown = infinirt__config_visible(cfg, p->type, count, map, visible, sizeof visible);
    p->declared_count = count;
    if (shown == 0) {
        free(map);
        set_status(p, INFINIRT_PLUGIN_NO_DEVICES, "%s", visible);
        return;
    }
    p->devices = calloc((size_t)shown, sizeof *p->devices);
    if (p->devices == NULL) {
        free(map);
        set_status(p, INFINIRT_PLUGIN_INIT_FAILED, "out of memory for %d devices", count);
        return;
    }
    for (int i = 0; i < shown; i++) {
        if (setup_device(p, &p->devices[i], i, map[i]) != 0) {
            free(map);
            set_status(p, INFINIRT_PLUGIN_INIT_FAILED, "out of memory setting up device %d", i);
            return; /* devices stay allocated: harmless, and nothing else points at them */
        }
    }
    free(map);
    infinirt__pool_backend be;
    infinirt__fence_backend_host(&be, p);
    if (infinirt__pool_create(&be, &cfg->alloc, &p->host_pool) != INFINI_STATUS_SUCCESS) {
        set_status(p, INFINIRT_PLUGIN_INIT_FAILED, "out of memory creating the host pool");
        return;
    }
    p->device_count = shown;
    const char *warning = p->warning ? p->warning : "";
    snprintf(p->message, sizeof p->message, "%s%s%s%s%s", msg, msg[0] && warning[0] ? "; " : "", warning,
             (msg[0] || warning[0]) && visible[0] ? "; " : "", visible);
    p->status = INFINIRT_PLUGIN_LOADED;
    INFINIRT__INFO("plugin %s (%s): loaded, %d %s device(s)%s%s", p->name, p->path, shown,
                   infinirtGetDeviceTypeName(p->type), visible[0] ? "; " : "", visible);
}

/*
 * Each device type starts on its own: its plugins, in config order, until
 * one serves.  Starting is rare and may take long (a driver's init scans
 * its devices; PoCL takes 80-190 ms, a GPU driver seconds, a broken one
 * for ever), so each type has its own lock, held while its plugins start:
 * a call that needs the CPU never waits for OpenCL's start, and a hung
 * init holds up only the calls that need its type.  `ready` is read
 * without the lock on every look-up.  A plugin's init must not call back
 * into infinirt for another type (two such plugins starting at once could
 * wait for each other).
 */
typedef struct {
    pthread_mutex_t lock;
    atomic_int ready;          /* serving is final */
    infinirt__plugin *serving; /* loaded, with devices; or NULL.  Written under lock before ready. */
    /* The plugin whose init runs now (NULL: none), and since when
     * (CLOCK_MONOTONIC ns): what infinirtPeekPluginInfo reports. */
    _Atomic(infinirt__plugin *) running;
    atomic_uint_fast64_t since_ns;
} type_start;

static type_start g_types[INFINIRT__TYPE_SLOTS];

static uint64_t monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void resolve_slot(int slot)
{
    type_start *ts = &g_types[slot];
    pthread_mutex_t *lock = &ts->lock; /* this type's only */
    pthread_mutex_lock(lock);
    if (!atomic_load_explicit(&ts->ready, memory_order_relaxed)) {
        infinirt__plugin *serving = NULL;
        for (int k = 0; k < infinirt__rt.nplugins; k++) {
            infinirt__plugin *p = &infinirt__rt.plugins[k];
            if (atomic_load_explicit(&p->started, memory_order_relaxed) || infinirt__type_slot(p->type) != slot)
                continue;
            if (serving != NULL) {
                set_status(p, INFINIRT_PLUGIN_DUPLICATE_TYPE, "device type %s is already served by plugin %s (%s)",
                           infinirtGetDeviceTypeName(p->type), serving->name, serving->path);
                unload(p); /* its init never ran */
            } else {
                atomic_store_explicit(&ts->since_ns, monotonic_ns(), memory_order_relaxed);
                atomic_store_explicit(&ts->running, p, memory_order_release);
                uint64_t t0 = infinirt__trace_now();
                start_one(p, p->conf, &infinirt__rt.cfg);
                infinirt__trace_startup(p, t0);
                atomic_store_explicit(&ts->running, NULL, memory_order_release);
                if (p->status == INFINIRT_PLUGIN_LOADED)
                    serving = p;
            }
            atomic_store_explicit(&p->started, 1, memory_order_release);
        }
        ts->serving = serving;
        atomic_store_explicit(&ts->ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(lock);
}

/* Start p's device type: the type's plugins, in config order, until one
 * starts with devices (the rest are duplicates), once (any thread; later
 * callers wait for the first; another type's start never waits for this
 * one).  Afterwards p->status is final. */
static void infinirt__plugin_start(infinirt__plugin *p)
{
    if (!atomic_load_explicit(&p->started, memory_order_acquire))
        resolve_slot(infinirt__type_slot(p->type));
}

infinirt__plugin *infinirt__plugin_of_slot(int slot)
{
    if (!atomic_load_explicit(&g_types[slot].ready, memory_order_acquire))
        resolve_slot(slot);
    return g_types[slot].serving;
}

infinirt__plugin *infinirt__plugin_of_slot_if_started(int slot)
{
    return atomic_load_explicit(&g_types[slot].ready, memory_order_acquire) ? g_types[slot].serving : NULL;
}

int infinirt__plugins_load(const infinirt__config *cfg, infinirt__plugin **plugins)
{
    /* Once, before any type can start (infinirtInit's once). */
    for (int s = 0; s < INFINIRT__TYPE_SLOTS; s++)
        pthread_mutex_init(&g_types[s].lock, NULL);
    infinirt__plugin *all = calloc(cfg->nplugins ? cfg->nplugins : 1, sizeof *all);
    *plugins = all;
    if (all == NULL) {
        INFINIRT__ERROR("out of memory loading plugins");
        return 0;
    }
    for (size_t i = 0; i < cfg->nplugins; i++) {
        infinirt__plugin *p = &all[i];
        snprintf(p->name, sizeof p->name, "%s", cfg->plugins[i].name);
        p->path = cfg->plugins[i].library; /* set for every plugin once the config is read */
        p->type = INFINI_DEVICE_TYPE_COUNT;
        p->conf = &cfg->plugins[i];
        atomic_init(&p->started, 1); /* claim_one clears it for a plugin to start */
        claim_one(p, &cfg->plugins[i]);
    }
    return (int)cfg->nplugins;
}

/* ------------------------------------------------------------ report API */

INFINIRT_API infiniStatus_t infinirtGetPluginCount(int *count)
{
    INFINIRT__TRACE_ENTRY(infinirtGetPluginCount, (count));
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (count == NULL)
        return infinirt__fail(INFINI_STATUS_NULL_POINTER, __func__, "count is NULL");
    /* Known once the config is read: no plugin is started for it (each
     * entry is, by infinirtGetPluginInfo). */
    *count = infinirt__rt.nplugins;
    return INFINI_STATUS_SUCCESS;
}

/* p's entry, p started (its status final). */
static void report_final(const infinirt__plugin *p, infinirtPluginInfo_t *info)
{
    snprintf(info->message, sizeof info->message, "%s", p->message);
    info->status = p->status;
    info->device_count = p->status == INFINIRT_PLUGIN_LOADED ? p->device_count : 0;
}

/* The report call's checks; the plugin, or NULL with *st set. */
static infinirt__plugin *report_entry(int index, infinirtPluginInfo_t *info, const char *fn, infiniStatus_t *st)
{
    if ((*st = infinirt__ensure_init()) != INFINI_STATUS_SUCCESS)
        return NULL;
    if (info == NULL) {
        *st = infinirt__fail(INFINI_STATUS_NULL_POINTER, fn, "info is NULL");
        return NULL;
    }
    if (index < 0 || index >= infinirt__rt.nplugins) {
        *st = infinirt__fail(INFINI_STATUS_BAD_PARAM, fn, "plugin index %d outside [0, %d)", index,
                             infinirt__rt.nplugins);
        return NULL;
    }
    infinirt__plugin *p = &infinirt__rt.plugins[index];
    /* What never changes once the handshake is done. */
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", p->name);
    snprintf(info->path, sizeof info->path, "%s", p->path);
    info->device_type = p->type;
    info->abi_major = p->abi_major;
    info->abi_minor = p->abi_minor;
    return p;
}

INFINIRT_API infiniStatus_t infinirtGetPluginInfo(int index, infinirtPluginInfo_t *info)
{
    INFINIRT__TRACE_ENTRY(infinirtGetPluginInfo, (index, info));
    infiniStatus_t st;
    infinirt__plugin *p = report_entry(index, info, __func__, &st);
    if (p == NULL)
        return st;
    infinirt__plugin_start(p); /* its status is final */
    report_final(p, info);
    return INFINI_STATUS_SUCCESS;
}

INFINIRT_API infiniStatus_t infinirtPeekPluginInfo(int index, infinirtPluginInfo_t *info)
{
    INFINIRT__TRACE_ENTRY(infinirtPeekPluginInfo, (index, info));
    infiniStatus_t st;
    infinirt__plugin *p = report_entry(index, info, __func__, &st);
    if (p == NULL)
        return st;
    if (atomic_load_explicit(&p->started, memory_order_acquire)) {
        report_final(p, info);
        return INFINI_STATUS_SUCCESS;
    }
    /* Its handshake passed (else it would count as started): its type is
     * known.  Which plugin of the type is starting, if any. */
    type_start *ts = &g_types[infinirt__type_slot(p->type)];
    infinirt__plugin *run = atomic_load_explicit(&ts->running, memory_order_acquire);
    double secs = (double)(monotonic_ns() - atomic_load_explicit(&ts->since_ns, memory_order_relaxed)) / 1e9;
    if (run == NULL && atomic_load_explicit(&p->started, memory_order_acquire)) {
        report_final(p, info); /* it finished meanwhile */
        return INFINI_STATUS_SUCCESS;
    }
    const char *type = infinirtGetDeviceTypeName(p->type);
    if (run == p) {
        info->status = INFINIRT_PLUGIN_STARTING;
        snprintf(info->message, sizeof info->message, "its init has been running for %.1f s", secs);
    } else if (run != NULL) {
        info->status = INFINIRT_PLUGIN_STARTING;
        snprintf(info->message, sizeof info->message,
                 "waits for plugin %s (also %s), whose init has been running for %.1f s", run->name, type, secs);
    } else {
        info->status = INFINIRT_PLUGIN_NOT_STARTED;
        snprintf(info->message, sizeof info->message, "not started: no call has needed %s devices yet", type);
    }
    return INFINI_STATUS_SUCCESS;
}
