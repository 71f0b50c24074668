/* SPDX-License-Identifier: Apache-2.0 */
/*
 * infinirt-info - what the loader sees: devices with names and memory, every
 * plugin it considered and why it is or is not serving, the config file
 * used, the default device (the one every thread starts on), the
 * allocator's settings and statistics, and what the configuration came from
 * (environment variables, files, plugin folders) with its problems.
 *
 *   infinirt-info            human-readable
 *   infinirt-info --json     one JSON object, for scripts
 *   infinirt-info -l|--list  one line per device (see list_devices)
 *   infinirt-info --wait=S   wait at most S seconds for the plugins to start
 *   infinirt-info --help     the usage, on stdout
 *   infinirt-info --version  "infinirt-info infinirt X.Y.Z"
 *
 * Exits 1, saying so on stderr, when no plugin reports any device: there is
 * nothing a program could run on.  Exits 3, naming it, when a plugin was
 * still starting when the wait ended (a driver whose start-up hangs): the
 * report shows it "starting", and the other types' devices.  A wrong
 * option: the usage on stderr, exit 2.  The manual is man/infinirt-info.1.
 */
#define _POSIX_C_SOURCE 200809L
#include "infinirt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* Every device type the library knows (InfiniCore's and ours). */
#define MAX_TYPES 32
static int device_types(infiniDevice_t *types)
{
    int n = 0;
    if (infinirtGetDeviceTypes(types, MAX_TYPES, &n) != INFINI_STATUS_SUCCESS)
        return 0;
    return n < MAX_TYPES ? n : MAX_TYPES;
}

/* ------------------------------------------------ starting the plugins */

/* Each device type starts (its plugin's init: a driver's start-up) in a
 * thread of its own, and the default device is asked for in another: the
 * report waits for them at most --wait seconds, so a driver whose start-up
 * hangs is reported as starting instead of hanging the tool.  A thread
 * still starting then is left behind (the process exits around it). */
typedef struct {
    infiniDevice_t type;
    int count;       /* written before done */
    atomic_int done; /* its start ended: count is final */
} type_probe;

static type_probe g_types[MAX_TYPES];
static int g_ntypes;
static struct {
    infiniDevice_t type;
    int id, present;
    atomic_int done;
} g_default;
static double g_wait = 30; /* --wait */

static void *probe_type(void *arg)
{
    type_probe *t = arg;
    int count = 0;
    t->count = infinirtGetDeviceCount(t->type, &count) == INFINI_STATUS_SUCCESS && count > 0 ? count : 0;
    atomic_store(&t->done, 1);
    return NULL;
}

/* The device this thread starts on, asked before any infinirtSetDevice:
 * the config's [loader] default_device where that device exists, else cpu:0
 * (asking starts the default's type). */
static void *probe_default(void *arg)
{
    (void)arg;
    infiniDevice_t type = INFINI_DEVICE_CPU;
    int id = 0, count = 0;
    infinirtGetDevice(&type, &id);
    g_default.present = infinirtGetDeviceCount(type, &count) == INFINI_STATUS_SUCCESS && id < count;
    g_default.type = type;
    g_default.id = id;
    atomic_store(&g_default.done, 1);
    return NULL;
}

/* Start every type and the default device, each in its own thread; wait
 * for them, --wait seconds at most.  Returns whether all ended. */
static int start_all(void)
{
    infiniDevice_t types[MAX_TYPES];
    g_ntypes = device_types(types);
    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    for (int k = 0; k <= g_ntypes; k++) {
        pthread_t t;
        void *(*fn)(void *) = k < g_ntypes ? probe_type : probe_default;
        if (k < g_ntypes)
            g_types[k].type = types[k];
        if (pthread_create(&t, &detached, fn, k < g_ntypes ? (void *)&g_types[k] : NULL) != 0)
            fn(k < g_ntypes ? (void *)&g_types[k] : NULL); /* no thread: in this one, without a limit */
    }
    pthread_attr_destroy(&detached);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int all = atomic_load(&g_default.done);
        for (int k = 0; k < g_ntypes; k++)
            all &= atomic_load(&g_types[k].done);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (all || (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >= g_wait)
            return all;
        nanosleep(&(struct timespec){0, 5000000L}, NULL);
    }
}

/* The devices of type k: its count, or -1 while its plugin is starting. */
static int type_count(int k)
{
    return atomic_load(&g_types[k].done) ? g_types[k].count : -1;
}

/* Every device of every type that has started, counted. */
static int total_devices(void)
{
    int total = 0;
    for (int k = 0; k < g_ntypes; k++)
        total += type_count(k) > 0 ? type_count(k) : 0;
    return total;
}

/* The plugin of `type` whose start has not ended, into *pi: 1, or 0. */
static int starting_plugin(infiniDevice_t type, infinirtPluginInfo_t *pi)
{
    int n = 0;
    infinirtGetPluginCount(&n);
    for (int i = 0; i < n; i++)
        if (infinirtPeekPluginInfo(i, pi) == INFINI_STATUS_SUCCESS && pi->device_type == type &&
            pi->status == INFINIRT_PLUGIN_STARTING)
            return 1;
    return 0;
}

/* The default device, once asked; *present -1 while its plugin starts. */
static void default_device(infiniDevice_t *type, int *id, int *present)
{
    int done = atomic_load(&g_default.done);
    *type = done ? g_default.type : INFINI_DEVICE_CPU;
    *id = done ? g_default.id : 0;
    *present = done ? g_default.present : -1;
}

static double mib(size_t b)
{
    return (double)b / (1024.0 * 1024.0);
}

/* ------------------------------------------------ the config report */

/* What the configuration came from: the environment variables the loader
 * reads (every one of the README's table, set or not), the files read, the
 * plugin folders scanned, and every problem found (infinirtGetConfigEntry). */
static void print_config_text(void)
{
    static const char *const titles[] = {"Environment", "Config files read", "Plugin folders", "Config problems"};
    int n = 0;
    infinirtGetConfigEntryCount(&n);
    for (int kind = INFINIRT_CONFIG_ENTRY_ENVIRONMENT; kind <= INFINIRT_CONFIG_ENTRY_WARNING; kind++) {
        int shown = 0;
        for (int i = 0; i < n; i++) {
            infinirtConfigEntry_t e;
            if (infinirtGetConfigEntry(i, &e) != INFINI_STATUS_SUCCESS || (int)e.kind != kind)
                continue;
            if (shown++ == 0)
                printf("\n%s:\n", titles[kind]);
            if (kind == INFINIRT_CONFIG_ENTRY_ENVIRONMENT)
                printf("  %-24s %s%s%s\n", e.name, e.value[0] ? e.value : "-", e.message[0] ? "  " : "", e.message);
            else if (kind == INFINIRT_CONFIG_ENTRY_WARNING)
                printf("  %s\n", e.message);
            else
                printf("  %s (%s)%s%s\n", e.value, e.name, e.message[0] ? ": " : "", e.message);
        }
        if (shown == 0 && kind == INFINIRT_CONFIG_ENTRY_WARNING)
            printf("\nConfig problems: none\n");
    }
}

static void print_config_json(void)
{
    static const char *const keys[] = {"environment", "config_files", "plugin_dirs", "config_problems"};
    int n = 0;
    infinirtGetConfigEntryCount(&n);
    for (int kind = INFINIRT_CONFIG_ENTRY_ENVIRONMENT; kind <= INFINIRT_CONFIG_ENTRY_WARNING; kind++) {
        printf(",\"%s\":[", keys[kind]);
        int first = 1;
        for (int i = 0; i < n; i++) {
            infinirtConfigEntry_t e;
            if (infinirtGetConfigEntry(i, &e) != INFINI_STATUS_SUCCESS || (int)e.kind != kind)
                continue;
            printf("%s", first ? "" : ",");
            first = 0;
            if (kind == INFINIRT_CONFIG_ENTRY_WARNING) {
                json_string(e.message);
                continue;
            }
            printf("{\"%s\":", kind == INFINIRT_CONFIG_ENTRY_ENVIRONMENT ? "name" : "path");
            json_string(kind == INFINIRT_CONFIG_ENTRY_ENVIRONMENT ? e.name : e.value);
            if (kind == INFINIRT_CONFIG_ENTRY_ENVIRONMENT) {
                printf(",\"value\":");
                json_string(e.value);
            } else {
                printf(",\"%s\":", kind == INFINIRT_CONFIG_ENTRY_FILE ? "kind" : "from");
                json_string(e.name);
            }
            printf(",\"problem\":%s,\"message\":", e.problem ? "true" : "false");
            json_string(e.message);
            printf("}");
        }
        printf("]");
    }
}

static int print_text(void)
{
    int major, minor, patch;
    const char *cfg = "";
    infinirtGetVersion(&major, &minor, &patch);
    infinirtGetConfigPath(&cfg);
    printf("infinirt %d.%d.%d\n", major, minor, patch);
    printf("config: %s\n", cfg[0] ? cfg : "(none found: embedded default, every plugin beside the loader)");
    infiniDevice_t dt;
    int did, dpresent;
    default_device(&dt, &did, &dpresent);
    if (dpresent < 0)
        printf("default device: not known yet (its plugin is still starting)\n");
    else
        printf("default device: %s:%d%s\n", infinirtGetDeviceTypeName(dt), did,
               dpresent ? " (every thread starts on it; [loader] default_device)" : " (not present)");
    infinirtAllocatorSettings_t as;
    if (infinirtGetAllocatorSettings(&as) == INFINI_STATUS_SUCCESS)
        printf("allocator: %s, granularity %zu B, max_cached %zu B%s, max_split_size %zu B%s, release_on_free %s\n\n",
               as.enabled ? "caching" : "off (pass-through)", as.granularity, as.max_cached_bytes,
               as.max_cached_bytes ? "" : " (no cap)", as.max_split_size, as.max_split_size ? "" : " (no limit)",
               as.release_on_free ? "true" : "false");

    printf("Devices:\n");
    int any = 0;
    for (int k = 0; k < g_ntypes; k++) {
        infiniDevice_t t = g_types[k].type;
        int count = type_count(k);
        infinirtPluginInfo_t sp;
        if (count < 0 && starting_plugin(t, &sp)) {
            printf("  %s: plugin %s is still starting (%s): its devices are not listed\n",
                   infinirtGetDeviceTypeName(t), sp.name, sp.message);
            any = 1;
        }
        for (int i = 0; i < count; i++) {
            infinirtDeviceProperties_t p;
            size_t f = 0, tot = 0;
            if (infinirtGetDeviceProperties(t, i, &p) != INFINI_STATUS_SUCCESS)
                continue;
            infinirtGetMemInfo(t, i, &f, &tot);
            printf("  %s:%d  %s\n", infinirtGetDeviceTypeName(t), i, p.name);
            printf("        memory %.0f MiB total, %.0f MiB free; largest allocation %s", mib(tot), mib(f),
                   p.max_alloc_size ? "" : "unlimited");
            if (p.max_alloc_size)
                printf("%.0f MiB", mib(p.max_alloc_size));
            printf("\n        plugin %s; %s\n", p.plugin, p.description);
            if (p.uuid[0] != '\0')
                printf("        uuid %s\n", p.uuid);
            infinirtAllocatorStats_t st;
            if (infinirtGetAllocatorStats(t, i, &st) == INFINI_STATUS_SUCCESS)
                printf("        allocator: %zu B allocated (peak %zu), %zu B reserved in %zu segments, "
                       "%zu raw allocs, %zu retries, %zu OOM\n",
                       st.allocated_bytes, st.peak_allocated_bytes, st.reserved_bytes, st.segments, st.raw_allocs,
                       st.retries, st.oom_count);
            any = 1;
        }
    }
    if (!any)
        printf("  (none)\n");

    int n = 0;
    infinirtGetPluginCount(&n);
    printf("\nPlugins considered (%d):\n", n);
    for (int i = 0; i < n; i++) {
        infinirtPluginInfo_t pi; /* as it stands: a plugin still starting is not waited for */
        if (infinirtPeekPluginInfo(i, &pi) != INFINI_STATUS_SUCCESS)
            continue;
        printf("  %-8s %s", pi.name, infinirtGetPluginStatusString(pi.status));
        if (pi.status == INFINIRT_PLUGIN_LOADED)
            printf(" (%d %s device%s)", pi.device_count, infinirtGetDeviceTypeName(pi.device_type),
                   pi.device_count == 1 ? "" : "s");
        printf("\n           %s\n", pi.path);
        if (pi.message[0])
            printf("           %s\n", pi.message);
    }
    print_config_text();
    return 0;
}

static int print_json(void)
{
    int major, minor, patch;
    const char *cfg = "";
    infinirtGetVersion(&major, &minor, &patch);
    infinirtGetConfigPath(&cfg);
    printf("{\"version\":\"%d.%d.%d\",\"config\":", major, minor, patch);
    json_string(cfg);
    infiniDevice_t dt;
    int did, dpresent;
    default_device(&dt, &did, &dpresent);
    if (dpresent < 0) /* its plugin still starting */
        printf(",\"default_device\":null");
    else
        printf(",\"default_device\":{\"type\":\"%s\",\"id\":%d,\"present\":%s}", infinirtGetDeviceTypeName(dt), did,
               dpresent ? "true" : "false");
    infinirtAllocatorSettings_t as;
    memset(&as, 0, sizeof as);
    infinirtGetAllocatorSettings(&as);
    printf(",\"allocator\":{\"enabled\":%s,\"granularity\":%zu,\"max_cached\":%zu,\"max_split_size\":%zu,"
           "\"release_on_free\":%s}",
           as.enabled ? "true" : "false", as.granularity, as.max_cached_bytes, as.max_split_size,
           as.release_on_free ? "true" : "false");
    printf(",\"devices\":[");
    int first = 1;
    for (int k = 0; k < g_ntypes; k++) {
        infiniDevice_t t = g_types[k].type;
        int count = type_count(k); /* -1: still starting, not listed */
        for (int i = 0; i < count; i++) {
            infinirtDeviceProperties_t p;
            size_t f = 0, tot = 0;
            infinirtAllocatorStats_t st;
            memset(&st, 0, sizeof st);
            if (infinirtGetDeviceProperties(t, i, &p) != INFINI_STATUS_SUCCESS)
                continue;
            infinirtGetMemInfo(t, i, &f, &tot);
            infinirtGetAllocatorStats(t, i, &st);
            printf("%s{\"type\":\"%s\",\"type_id\":%d,\"id\":%d,\"name\":", first ? "" : ",",
                   infinirtGetDeviceTypeName(t), (int)t, i);
            json_string(p.name);
            printf(",\"description\":");
            json_string(p.description);
            printf(",\"plugin\":");
            json_string(p.plugin);
            printf(",\"uuid\":"); /* "" where the backend has none */
            json_string(p.uuid);
            printf(",\"total_memory\":%zu,\"free_memory\":%zu,\"max_alloc_size\":%zu,"
                   "\"allocator\":{\"allocated_bytes\":%zu,\"peak_allocated_bytes\":%zu,\"reserved_bytes\":%zu,"
                   "\"segments\":%zu,\"raw_allocs\":%zu,\"retries\":%zu,\"oom_count\":%zu}}",
                   tot, f, p.max_alloc_size, st.allocated_bytes, st.peak_allocated_bytes, st.reserved_bytes,
                   st.segments, st.raw_allocs, st.retries, st.oom_count);
            first = 0;
        }
    }
    printf("],\"plugins\":[");
    int n = 0;
    infinirtGetPluginCount(&n);
    for (int i = 0; i < n; i++) {
        infinirtPluginInfo_t pi;
        if (infinirtPeekPluginInfo(i, &pi) != INFINI_STATUS_SUCCESS)
            continue;
        printf("%s{\"name\":", i ? "," : "");
        json_string(pi.name);
        printf(",\"path\":");
        json_string(pi.path);
        printf(",\"status\":");
        json_string(infinirtGetPluginStatusString(pi.status));
        printf(",\"loaded\":%s,\"device_type\":", pi.status == INFINIRT_PLUGIN_LOADED ? "true" : "false");
        json_string(infinirtGetDeviceTypeName(pi.device_type));
        printf(",\"device_count\":%d,\"abi\":\"%u.%u\",\"message\":", pi.device_count, pi.abi_major, pi.abi_minor);
        json_string(pi.message);
        printf("}");
    }
    printf("]");
    print_config_json();
    printf("}\n");
    return 0;
}

/* One line per device, the way `nvidia-smi -L` and `clinfo -l` list them:
 *
 *   TYPE:ID: NAME [plugin PLUGIN]
 *   TYPE:ID: NAME [plugin PLUGIN] (UUID: UUID)     where the backend has one
 *
 * TYPE:ID is the form every other interface takes ([loader] default_device,
 * INFINIRT_VISIBLE_DEVICES, the demo's argument); types in the order
 * infinirtGetDeviceTypes gives them, ids from 0.  Nothing else is printed
 * on stdout, so `infinirt-info -l | wc -l` counts the devices. */
static int print_list(void)
{
    for (int k = 0; k < g_ntypes; k++) {
        infiniDevice_t t = g_types[k].type;
        int count = type_count(k); /* -1: still starting, not listed */
        for (int i = 0; i < count; i++) {
            infinirtDeviceProperties_t p;
            if (infinirtGetDeviceProperties(t, i, &p) != INFINI_STATUS_SUCCESS)
                continue;
            printf("%s:%d: %s [plugin %s]", infinirtGetDeviceTypeName(t), i, p.name, p.plugin);
            if (p.uuid[0] != '\0')
                printf(" (UUID: %s)", p.uuid);
            putchar('\n');
        }
    }
    return 0;
}

static void usage(FILE *to, const char *prog)
{
    fprintf(to,
            "usage: %s [--json | -l | --list] [--wait=SECONDS]\n"
            "       %s --help | --version\n"
            "What the infinirt loader sees: devices, plugins and why each is or is not\n"
            "serving, the config file read, the default device, the allocator.\n"
            "  (no option)     the report, for people\n"
            "  --json          the same report as one JSON object\n"
            "  -l, --list      one line per device: TYPE:ID: NAME [plugin P] (UUID: U)\n"
            "  --wait=SECONDS  wait at most this long for the plugins to start (30);\n"
            "                  one still starting then is reported as starting\n"
            "  -h, --help      this text\n"
            "  -V, --version   the name and the library's version\n"
            "Exit status: 0; 1 when no device is found or infinirt does not start;\n"
            "2 for a wrong option; 3 when a plugin was still starting.\n"
            "See infinirt-info(1), infinirt.ini(5).\n",
            prog, prog);
}

/* The library's version; the header's too where the program was built
 * against another one. */
static void print_version(void)
{
    int major = 0, minor = 0, patch = 0;
    infinirtGetVersion(&major, &minor, &patch);
    printf("infinirt-info infinirt %d.%d.%d", major, minor, patch);
    if (major != INFINIRT_VERSION_MAJOR || minor != INFINIRT_VERSION_MINOR || patch != INFINIRT_VERSION_PATCH)
        printf(" (built with %d.%d.%d)", INFINIRT_VERSION_MAJOR, INFINIRT_VERSION_MINOR, INFINIRT_VERSION_PATCH);
    putchar('\n');
}

int main(int argc, char **argv)
{
    enum { TEXT, JSON, LIST };
    int mode = TEXT;
    const char *prog = "infinirt-info";
    /* The options in order, as getopt takes them.  --help and --version
     * answer before the library starts: they work with a broken config
     * too, and load no plugin. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int want = -1;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout, prog);
            return 0;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            print_version();
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            want = JSON;
        } else if (strcmp(a, "-l") == 0 || strcmp(a, "--list") == 0) {
            want = LIST;
        } else if (strncmp(a, "--wait=", 7) == 0 || (strcmp(a, "--wait") == 0 && i + 1 < argc)) {
            const char *v = a[6] == '=' ? a + 7 : argv[++i];
            char *end = NULL;
            g_wait = strtod(v, &end);
            if (end == v || *end != '\0' || !(g_wait >= 0 && g_wait <= 1e6)) {
                fprintf(stderr, "%s: --wait takes a number of seconds, not '%s'\n", prog, v);
                usage(stderr, prog);
                return 2;
            }
            continue;
        } else {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
            usage(stderr, prog);
            return 2;
        }
        if (mode != TEXT && mode != want) {
            fprintf(stderr, "%s: --json and --list cannot be combined\n", prog);
            usage(stderr, prog);
            return 2;
        }
        mode = want;
    }
    if (infinirtInit() != INFINI_STATUS_SUCCESS) {
        fprintf(stderr, "infinirt failed to initialise\n");
        return 1;
    }
    int complete = start_all();
    int rc = mode == JSON ? print_json() : mode == LIST ? print_list() : print_text();
    fflush(stdout);
    if (!complete) {
        int n = 0;
        infinirtGetPluginCount(&n);
        for (int i = 0; i < n; i++) {
            infinirtPluginInfo_t pi;
            if (infinirtPeekPluginInfo(i, &pi) == INFINI_STATUS_SUCCESS && pi.status == INFINIRT_PLUGIN_STARTING)
                fprintf(stderr,
                        "infinirt-info: plugin %s (%s devices) is still starting after %g s (%s): its devices are "
                        "not listed (--wait=SECONDS waits longer)\n",
                        pi.name, infinirtGetDeviceTypeName(pi.device_type), g_wait, pi.message);
        }
        return 3;
    }
    if (rc == 0 && total_devices() == 0) {
        fflush(stdout);
        fprintf(stderr, "infinirt-info: no device found: no loaded plugin reports a device (see each plugin's "
                        "status and message in the report)\n");
        rc = 1;
    }
    return rc;
}
