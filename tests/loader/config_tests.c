/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_tests.c - what the loader makes of a config file: which plugins
 * load, files that are not configs, the line syntax, and bad values.  Each
 * test runs in its own process (the runner forks), so each initialises the
 * loader afresh from its own INFINIRT_CONFIG.
 */
#define _GNU_SOURCE
#include "common.h"

#include "infinirt_plugin.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *log_path(void)
{
    static char p[600];
    snprintf(p, sizeof p, "%s/infinirt.log", tc_temp_dir());
    return p;
}

static void log_to_file(void)
{
    tc_setenv("INFINIRT_LOG_FILE", log_path());
    tc_setenv("INFINIRT_LOG", "info");
}

/* Write text (len bytes) as the config and point INFINIRT_CONFIG at it. */
static const char *use_bytes(const char *text, size_t len)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/infinirt.ini", tc_temp_dir());
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(text, 1, len, f) != len || fclose(f) != 0)
        abort();
    tc_setenv("INFINIRT_CONFIG", path);
    log_to_file();
    return path;
}

static const char *use_text(const char *text)
{
    return use_bytes(text, strlen(text));
}

/* "<resolved config path>:<line>: <rest>" is in the log. */
static int log_has_at(int line, const char *rest)
{
    char resolved[PATH_MAX], want[PATH_MAX + 512];
    ASSERT(realpath(getenv("INFINIRT_CONFIG"), resolved) != NULL);
    snprintf(want, sizeof want, "%s:%d: %s", resolved, line, rest);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    return TEST_OK;
}

static int find_plugin(const char *name, infinirtPluginInfo_t *out)
{
    int n = 0;
    if (infinirtGetPluginCount(&n) != INFINI_STATUS_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++)
        if (infinirtGetPluginInfo(i, out) == INFINI_STATUS_SUCCESS && strcmp(out->name, name) == 0)
            return i;
    return -1;
}

static int cpu_count(void)
{
    int n = -1;
    if (infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n) != INFINI_STATUS_SUCCESS)
        return -1;
    return n;
}

/* The plugin folder of this build: where CPU_PLUGIN lives. */
static const char *plugin_folder(void)
{
    static char dir[PATH_MAX];
    if (realpath(CPU_PLUGIN, dir) == NULL)
        abort();
    *strrchr(dir, '/') = '\0';
    return dir;
}

/* ------------------------------------------------ which plugins load */

/* A file that sets one plugin's keys does not hide the others: every
 * plugin in the folder is in the report, loaded with its defaults. */
int test_config_unnamed_plugins_load(void)
{
    use_text("[plugin.cpu]\ndevices = 2\n");
    ASSERT_EQ(cpu_count(), 2);
    DIR *d = opendir(plugin_folder());
    ASSERT(d != NULL);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "libinfinirt_", 12) != 0 || n < 16 || strcmp(e->d_name + n - 3, ".so") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 15), e->d_name + 12);
        infinirtPluginInfo_t pi;
        ASSERT_GE(find_plugin(name, &pi), 0);
        ASSERT(pi.status != INFINIRT_PLUGIN_DISABLED && pi.status != INFINIRT_PLUGIN_NOT_FOUND);
        files++;
    }
    closedir(d);
    ASSERT_GE(files, 1);
    int n = 0;
    ASSERT_OK(infinirtGetPluginCount(&n));
    ASSERT_EQ(n, files);
    return TEST_OK;
}

/* enabled = false keeps a plugin out, and the report says where. */
int test_config_enabled_false(void)
{
    use_text("[plugin.cpu]\nenabled = false\n");
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_DISABLED);
    ASSERT_STR_CONTAINS(pi.message, "enabled = false (");
    ASSERT_STR_CONTAINS(pi.message, "infinirt.ini:2)");
    ASSERT_EQ(cpu_count(), 0);
    return TEST_OK;
}

/* [loader] plugins = LIST: only those load; a listed name that is nowhere
 * is reported as not found. */
int test_config_plugins_list(void)
{
    use_text("[loader]\nplugins = cpu , nosuch  # only these\n[plugin.cpu]\ndevices = 3\n");
    ASSERT_EQ(cpu_count(), 3);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("nosuch", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_NOT_FOUND);
    int n = 0;
    ASSERT_OK(infinirtGetPluginCount(&n));
    for (int i = 0; i < n; i++) {
        ASSERT_OK(infinirtGetPluginInfo(i, &pi));
        if (strcmp(pi.name, "cpu") != 0 && strcmp(pi.name, "nosuch") != 0) {
            ASSERT_EQ(pi.status, INFINIRT_PLUGIN_DISABLED);
            ASSERT_STR_CONTAINS(pi.message, "not in [loader] plugins = cpu , nosuch");
        }
    }
    return TEST_OK;
}

/* ------------------------------------------------ files that are not configs */

/* INFINIRT_CONFIG names a file the operator asked for: when it cannot be
 * used, infinirt does not start, and the error names the file and what is
 * wrong with it. */
static int refused(const char *path, const char *why)
{
    tc_setenv("INFINIRT_CONFIG", path);
    log_to_file();
    int n = -1;
    ASSERT_STATUS(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n), INFINI_STATUS_DEVICE_NOT_INITIALIZED);
    ASSERT_EQ(n, -1);
    char want[1024];
    snprintf(want, sizeof want, "error: INFINIRT_CONFIG=%s %s", path, why);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    return TEST_OK;
}

int test_config_empty_file(void)
{
    return refused(use_text(" \n\t\n"), "is empty");
}

int test_config_binary_file(void)
{
    static const char bin[] = "\x7f"
                              "ELF\x02\x01\x01\0\0\0[plugin.cpu]\n";
    return refused(use_bytes(bin, sizeof bin - 1), "is a binary file (a NUL byte at offset 7)");
}

int test_config_not_ini(void)
{
    const char *path = use_text("This is a README.\nIt says nothing a loader could use.\n");
    CHECK(refused(path, "has no [section] header or KEY = VALUE line: not an INI file"));
    return log_has_at(1, "not a [section] header, a KEY = VALUE line or a comment");
}

int test_config_directory(void)
{
    return refused(tc_temp_dir(), "is a directory, not a file");
}

int test_config_dev_zero(void)
{
    return refused("/dev/zero", "is a character device, not a regular file");
}

/* A FIFO with no writer: opening it must not wait, reading must not start. */
int test_config_fifo(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/fifo.ini", tc_temp_dir());
    ASSERT_EQ(mkfifo(path, 0600), 0);
    return refused(path, "is a FIFO (named pipe), not a regular file");
}

/* A file only of comments sets nothing, and is fine. */
int test_config_comments_only(void)
{
    use_text("; nothing set here\n# nor here\n");
    ASSERT_GE(cpu_count(), 1);
    return TEST_OK;
}

/* A user config in the usual place that cannot be used is reported and
 * skipped, as if it were not there. */
int test_config_user_file_bad(void)
{
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/infinirt", tc_temp_dir());
    ASSERT_EQ(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/infinirt.ini", dir);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fclose(f);
    unsetenv("INFINIRT_CONFIG");
    tc_setenv("XDG_CONFIG_HOME", tc_temp_dir());
    log_to_file();
    ASSERT_GE(cpu_count(), 1);
    char want[800];
    snprintf(want, sizeof want, "config: user config %s is empty; ignored", path);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    return TEST_OK;
}

/* ------------------------------------------------ line syntax */

/* A UTF-8 byte-order mark is not part of the first section's name. */
int test_config_bom(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "\xEF\xBB\xBF[plugin.cpu]\nlibrary = %s\ndevices = 3\n", CPU_PLUGIN);
    use_text(cfg);
    ASSERT_EQ(cpu_count(), 3);
    return TEST_OK;
}

/* Long lines are read whole: a long library path is the file used, a long
 * comment is a comment, a long section name is one (reported) name. */
int test_config_long_lines(void)
{
    char dir[PATH_MAX], link[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/", tc_temp_dir());
    size_t len = strlen(dir);
    memset(dir + len, 'd', 240);
    dir[len + 240] = '\0';
    ASSERT_EQ(mkdir(dir, 0755), 0);
    snprintf(link, sizeof link, "%s/libinfinirt_cpu.so", dir);
    ASSERT_EQ(symlink(CPU_PLUGIN, link), 0);
    static char cfg[8192];
    char comment[600], section[600];
    memset(comment, 'c', 400);
    snprintf(comment + 400, sizeof comment - 400, " [plugin.phantom]");
    memset(section, 's', 300);
    section[300] = '\0';
    snprintf(cfg, sizeof cfg,
             "; %s\n"         /* 1: a long comment */
             "[plugin.%s]\n"  /* 2: a long plugin name */
             "devices = 9\n"  /* 3: in the ignored section */
             "[plugin.cpu]\n" /* 4 */
             "library = %s\n" /* 5: longer than 199 characters */
             "devices = 2\n", /* 6 */
             comment, section, link);
    use_text(cfg);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_STR_EQ(pi.path, link);
    ASSERT_EQ(cpu_count(), 2);
    ASSERT_EQ(find_plugin("phantom", &pi), -1);
    ASSERT_EQ(find_plugin("ssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss", &pi), -1);
    return log_has_at(2, "[plugin.sss");
}

/* An indented line is an error with file:line, never a continuation that
 * silently replaces the value above it. */
int test_config_indented_line(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\n    /not/the/library.so\n  devices = 5\ndevices = 2\n",
             CPU_PLUGIN);
    use_text(cfg);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_STR_EQ(pi.path, CPU_PLUGIN);
    ASSERT_EQ(cpu_count(), 2);
    CHECK(log_has_at(3, "indented line: continuation lines are not supported"));
    return log_has_at(4, "indented line");
}

/* '#' and ';' comments after a value, and size suffixes, in every section. */
int test_config_inline_comments(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[loader]\n"
             "default_device = cpu:1 # the second\n" /* 2 */
             "[allocator]\n"
             "max_split_size = 1MiB ; one mebibyte\n" /* 4 */
             "[plugin.cpu]\n"
             "library = %s # the build's\n"   /* 6 */
             "devices = 2 # two\n"            /* 7 */
             "memory_limit = 1GiB ; a cap\n", /* 8 */
             CPU_PLUGIN);
    use_text(cfg);
    ASSERT_EQ(cpu_count(), 2);
    infiniDevice_t t;
    int id = -1;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(id, 1);
    ASSERT(strstr(tc_read_file(log_path()), "warn") == NULL);
    return TEST_OK;
}

/* ------------------------------------------------ bad values */

/* One policy everywhere: file:line, section, key, value, what is used
 * instead; the plugin stays. */
int test_config_bad_values(void)
{
    use_text("[loader]\n"
             "log_level = loud\n" /* 2 */
             "colour = blue\n"    /* 3 */
             "[allocator]\n"
             "max_cached = 12Q\n" /* 5 */
             "[plugin.cpu]\n"
             "devices = abc\n"      /* 7 */
             "memory_limit = 12Q\n" /* 8 */
             "devics = 2\n");       /* 9 */
    ASSERT_EQ(cpu_count(), 1);
    CHECK(log_has_at(2, "[loader] log_level = 'loud': not error, warn, info or debug; using the default"));
    CHECK(log_has_at(3, "[loader] unknown key 'colour' ignored"));
    CHECK(log_has_at(5, "[allocator] max_cached = '12Q': not a size (e.g. 512, 64K, 2M, 1GiB); using 0"));
    CHECK(log_has_at(7, "[plugin.cpu] devices = 'abc': not a number from 0 to 64; using 1"));
    CHECK(log_has_at(8, "[plugin.cpu] memory_limit = '12Q': not a size (e.g. 64M, 2GiB, 1T); using 0"));
    return log_has_at(9, "[plugin.cpu] devics = '2': unknown key ignored");
}

/* The one size parser: the same spellings for the loader and plugins. */
int test_config_size_suffixes(void)
{
    static const struct {
        const char *text;
        size_t value;
    } ok[] = {
        {"0", 0},
        {"512", 512},
        {"4K", 4096},
        {"4k", 4096},
        {"4KB", 4096},
        {"4KiB", 4096},
        {"2M", 2u << 20},
        {"2MiB", 2u << 20},
        {"1G", (size_t)1 << 30},
        {"1GiB", (size_t)1 << 30},
        {"1T", (size_t)1 << 40},
        {"1TiB", (size_t)1 << 40},
        {"3mb", 3u << 20},
    };
    static const char *const bad[] = {
        "", "K", "-1", "12Q", "1Ki", "1 K", "1KiBB", "1.5M", "0x10", "99999999999999999999", "17179869184T"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t v = 7;
        ASSERT_EQ(infinirtPluginParseSize(ok[i].text, &v), 0);
        ASSERT_EQ(v, ok[i].value);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 7;
        ASSERT_EQ(infinirtPluginParseSize(bad[i], &v), -1);
        ASSERT_EQ(v, 7);
    }
    return TEST_OK;
}

/* The plugins' number and device-list parsers (infinirt_plugin.h). */
int test_config_plugin_parsers(void)
{
    static const struct {
        const char *text;
        long lo, hi, value;
    } ok[] = {{"0", 0, 4, 0}, {"4", 0, 4, 4}, {"16", 1, 64, 16}, {"2147483647", 0, 2147483647L, 2147483647L}};
    static const struct {
        const char *text;
        long lo, hi;
    } bad[] = {{"", 0, 4},    {"5", 0, 4},  {"0", 1, 4},  {"-1", 0, 4},
               {" 1", 0, 4},  {"1 ", 0, 4}, {"1x", 0, 4}, {"99999999999999999999", 0, 2147483647L},
               {"0x1", 0, 4}, {"+1", 0, 4}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        long v = -7;
        ASSERT_EQ(infinirtPluginParseCount(ok[i].text, ok[i].lo, ok[i].hi, &v), 0);
        ASSERT_EQ(v, ok[i].value);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long v = -7;
        ASSERT_EQ(infinirtPluginParseCount(bad[i].text, bad[i].lo, bad[i].hi, &v), -1);
        ASSERT_EQ(v, -7);
    }

    int *list = NULL;
    size_t n = 0;
    const char *at = NULL;
    ASSERT_EQ(infinirtPluginParseIndexList("0, 2,3", 4095, &list, &n, &at), 0);
    ASSERT_EQ(n, 3);
    ASSERT(list[0] == 0 && list[1] == 2 && list[2] == 3);
    free(list);
    ASSERT_EQ(infinirtPluginParseIndexList(" \t7 ", 7, &list, &n, &at), 0);
    ASSERT(n == 1 && list[0] == 7);
    free(list);
    /* Refused, with the offending item. */
    static const struct {
        const char *text;
        int at; /* offset of the item named */
    } refused[] = {{"", 0},  {"  ", 2},  {"1,,2", 2},          {"1,", 2}, {"0,x", 2}, {"-1", 0},
                   {"8", 0}, {"1 2", 0}, {"3, 99999999999", 3}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        int *l = (int *)&n;
        size_t c = 99;
        at = NULL;
        ASSERT_EQ(infinirtPluginParseIndexList(refused[i].text, 7, &l, &c, &at), -1);
        ASSERT_PTR_EQ(at, refused[i].text + refused[i].at);
        ASSERT(l == (int *)&n && c == 99); /* untouched */
    }
    return TEST_OK;
}

/* ------------------------------------------------ plugin_dir */

/* A relative plugin_dir is relative to the config file's folder. */
int test_config_plugin_dir_relative(void)
{
    char path[PATH_MAX];
    const char *tmp = tc_temp_dir();
    snprintf(path, sizeof path, "%s/etc", tmp);
    ASSERT_EQ(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/plugins", tmp);
    ASSERT_EQ(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/plugins/libinfinirt_cpu.so", tmp);
    ASSERT_EQ(symlink(CPU_PLUGIN, path), 0);
    snprintf(path, sizeof path, "%s/etc/infinirt.ini", tmp);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs("[loader]\nplugin_dir = ../plugins\n", f);
    fclose(f);
    tc_setenv("INFINIRT_CONFIG", path);
    log_to_file();
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    snprintf(path, sizeof path, "%s/etc/../plugins/libinfinirt_cpu.so", tmp);
    ASSERT_STR_EQ(pi.path, path);
    int n = 0;
    ASSERT_OK(infinirtGetPluginCount(&n));
    ASSERT_EQ(n, 1); /* only what that folder holds */
    return TEST_OK;
}

/* A plugin_dir that exists and holds no plugin: nothing is loaded, the
 * report is empty and a warning names the folder.  (The scan sorted the names it found: with none, it
 * passed qsort a NULL array, which UBSan's nonnull check refuses.) */
int test_config_plugin_dir_empty(void)
{
    char path[PATH_MAX];
    const char *tmp = tc_temp_dir();
    snprintf(path, sizeof path, "%s/plugins", tmp);
    ASSERT_EQ(mkdir(path, 0755), 0);
    use_text("[loader]\nplugin_dir = plugins\n");
    int n = -1;
    ASSERT_OK(infinirtGetPluginCount(&n));
    ASSERT_EQ(n, 0);
    int count = -1;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &count));
    ASSERT_EQ(count, 0);
    /* Not silent: a warning names the folder. */
    char real[PATH_MAX], want[PATH_MAX + 100];
    ASSERT(realpath(path, real) != NULL);
    snprintf(want, sizeof want, "warn: plugin folder %s (plugin_dir at ", real);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), ":2) holds no plugin (no libinfinirt_NAME.so)");
    return TEST_OK;
}

/* The installed config's commented plugin_dir example, uncommented, names
 * the plugin folder of the installation (the build tree has its layout). */
int test_config_installed_plugin_dir_example(void)
{
    char conf[PATH_MAX], text[16384];
    snprintf(conf, sizeof conf, "%s/../../etc/infinirt/infinirt.ini", plugin_folder());
    FILE *f = fopen(conf, "r");
    ASSERT(f != NULL);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *line = strstr(text, "\n;plugin_dir = ");
    ASSERT(line != NULL);
    char rel[512];
    ASSERT_EQ(sscanf(line + 15, "%511s", rel), 1);
    char dir[PATH_MAX], joined[PATH_MAX + 600], resolved[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", conf);
    *strrchr(dir, '/') = '\0';
    snprintf(joined, sizeof joined, "%s/%s", dir, rel);
    ASSERT(realpath(joined, resolved) != NULL);
    ASSERT_STR_EQ(resolved, plugin_folder());
    return TEST_OK;
}

/* ------------------------------------------------ the config report */

/* The report entry of kind named name (ENVIRONMENT: the variable; FILE
 * and PLUGIN_DIR: "config", "drop-in", "default", ...) whose value ends
 * with value_end (NULL: any) into *out: its index, or -1. */
static int report_entry(infinirtConfigEntryKind_t kind, const char *name, const char *value_end,
                        infinirtConfigEntry_t *out)
{
    int n = 0;
    if (infinirtGetConfigEntryCount(&n) != INFINI_STATUS_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++) {
        if (infinirtGetConfigEntry(i, out) != INFINI_STATUS_SUCCESS || out->kind != kind ||
            strcmp(out->name, name) != 0)
            continue;
        size_t a = strlen(out->value), b = value_end ? strlen(value_end) : 0;
        if (value_end == NULL || (a >= b && strcmp(out->value + a - b, value_end) == 0))
            return i;
    }
    return -1;
}

/* The report has a WARNING entry holding text. */
static int report_warns(const char *text)
{
    int n = 0;
    ASSERT_OK(infinirtGetConfigEntryCount(&n));
    for (int i = 0; i < n; i++) {
        infinirtConfigEntry_t e;
        ASSERT_OK(infinirtGetConfigEntry(i, &e));
        if (e.kind == INFINIRT_CONFIG_ENTRY_WARNING && strstr(e.message, text) != NULL) {
            ASSERT_EQ(e.problem, 1);
            return TEST_OK;
        }
    }
    TEST_FAILED_("no WARNING entry of the config report holds \"%s\"", text);
}

/* A folder of the temp dir with name, made; its path. */
static const char *temp_folder(const char *name)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", tc_temp_dir(), name);
    if (mkdir(path, 0755) != 0)
        abort();
    return path;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

/* ------------------------------------------------ environment overrides */

/* INFINIRT_PLUGINS is [loader] plugins from the environment: only those
 * load, and where the file says otherwise the environment wins with a
 * warning naming both. */
int test_config_env_plugins(void)
{
    const char *path = use_text("[loader]\nplugins = cpu, opencl\n[plugin.cpu]\ndevices = 2\n");
    tc_setenv("INFINIRT_PLUGINS", "cpu, nosuch");
    ASSERT_EQ(cpu_count(), 2);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("nosuch", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_NOT_FOUND);
    int n = 0;
    ASSERT_OK(infinirtGetPluginCount(&n));
    for (int i = 0; i < n; i++) {
        ASSERT_OK(infinirtGetPluginInfo(i, &pi));
        if (strcmp(pi.name, "cpu") != 0 && strcmp(pi.name, "nosuch") != 0) {
            ASSERT_EQ(pi.status, INFINIRT_PLUGIN_DISABLED);
            ASSERT_STR_CONTAINS(pi.message, "not in INFINIRT_PLUGINS=cpu, nosuch");
        }
    }
    char resolved[PATH_MAX], want[PATH_MAX + 200];
    ASSERT(realpath(path, resolved) != NULL);
    snprintf(want, sizeof want,
             "warn: INFINIRT_PLUGINS=cpu, nosuch overrides [loader] plugins = cpu, opencl (%s:2): the environment "
             "wins",
             resolved);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    CHECK(report_warns("INFINIRT_PLUGINS=cpu, nosuch overrides [loader] plugins"));
    infinirtConfigEntry_t e;
    ASSERT_GE(report_entry(INFINIRT_CONFIG_ENTRY_ENVIRONMENT, "INFINIRT_PLUGINS", NULL, &e), 0);
    ASSERT_STR_EQ(e.value, "cpu, nosuch");
    ASSERT_STR_CONTAINS(e.message, "only these plugins load; overrides [loader] plugins = cpu, opencl");
    return TEST_OK;
}

/* INFINIRT_PLUGIN_PATH's folders are scanned, in order, before plugin_dir:
 * a plugin found there wins over the one beside the loader, a plugin a
 * file names without `library` is found there, and a missing folder is a
 * warning naming it. */
int test_config_env_plugin_path(void)
{
    char a[PATH_MAX], link[PATH_MAX + 64], pp[2 * PATH_MAX];
    snprintf(a, sizeof a, "%s", temp_folder("first"));
    snprintf(link, sizeof link, "%s/libinfinirt_cpu.so", a);
    ASSERT_EQ(symlink(CPU_PLUGIN, link), 0);
    snprintf(link, sizeof link, "%s/libinfinirt_extra.so", a);
    ASSERT_EQ(symlink(FAKE_DIR "/libfake_good.so", link), 0);
    use_text("[loader]\nplugins = cpu, extra\n[plugin.extra]\nanswer = 42\n");
    snprintf(pp, sizeof pp, "%s::%s/missing", a, tc_temp_dir());
    tc_setenv("INFINIRT_PLUGIN_PATH", pp);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    snprintf(link, sizeof link, "%s/libinfinirt_cpu.so", a);
    ASSERT_STR_EQ(pi.path, link);
    ASSERT_GE(find_plugin("extra", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    snprintf(link, sizeof link, "%s/libinfinirt_extra.so", a);
    ASSERT_STR_EQ(pi.path, link);
    /* The folders in the order scanned: the variable's, then the default. */
    infinirtConfigEntry_t e;
    int first = report_entry(INFINIRT_CONFIG_ENTRY_PLUGIN_DIR, "INFINIRT_PLUGIN_PATH", "/first", &e);
    ASSERT_GE(first, 0);
    ASSERT_EQ(e.problem, 0);
    int missing = report_entry(INFINIRT_CONFIG_ENTRY_PLUGIN_DIR, "INFINIRT_PLUGIN_PATH", "/missing", &e);
    ASSERT_GT(missing, first);
    ASSERT_EQ(e.problem, 1);
    ASSERT_STR_EQ(e.message, "does not exist");
    ASSERT_GT(report_entry(INFINIRT_CONFIG_ENTRY_PLUGIN_DIR, "default", NULL, &e), missing);
    char want[PATH_MAX + 200];
    snprintf(want, sizeof want,
             "warn: plugin folder %s/missing (INFINIRT_PLUGIN_PATH) does not exist: no plugin is loaded from it",
             tc_temp_dir());
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    return TEST_OK;
}

/* A plugin in an INFINIRT_PLUGIN_PATH folder wins over a file's `library
 * =` for it too: the environment wins, with a warning naming both. */
int test_config_env_plugin_path_over_library(void)
{
    char a[PATH_MAX], link[PATH_MAX + 64], text[PATH_MAX + 200];
    snprintf(a, sizeof a, "%s", temp_folder("mine"));
    snprintf(link, sizeof link, "%s/libinfinirt_cpu.so", a);
    ASSERT_EQ(symlink(CPU_PLUGIN, link), 0);
    snprintf(text, sizeof text, "[loader]\nplugins = cpu\n[plugin.cpu]\nlibrary = %s\ndevices = 2\n", CPU_PLUGIN);
    const char *path = use_text(text);
    tc_setenv("INFINIRT_PLUGIN_PATH", a);
    ASSERT_EQ(cpu_count(), 2); /* the file's other keys still count */
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("cpu", &pi), 0);
    ASSERT_STR_EQ(pi.path, link);
    char resolved[PATH_MAX], want[3 * PATH_MAX];
    ASSERT(realpath(path, resolved) != NULL);
    snprintf(want, sizeof want,
             "warn: INFINIRT_PLUGIN_PATH: plugin cpu is loaded from %s, not from the file %s:4's [plugin.cpu] "
             "library = %s (the environment wins)",
             link, resolved, CPU_PLUGIN);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    return TEST_OK;
}

/* ------------------------------------------------ drop-ins, repeated keys */

/* Every *.ini of plugins.d beside the config is read after it, in name
 * order: a key set again wins (the later file), with a warning naming both
 * file:lines; a [plugin.NAME] section there adds a plugin, its library
 * relative to the drop-in's own folder; other files are not read. */
int test_config_dropins(void)
{
    char d[PATH_MAX], f[PATH_MAX + 64], lib[PATH_MAX + 64];
    const char *main_path = use_text("[plugin.cpu]\ndevices = 1\n[loader]\nplugins = cpu, extra\n");
    snprintf(d, sizeof d, "%s", temp_folder("plugins.d"));
    snprintf(lib, sizeof lib, "%s/lib", d);
    ASSERT_EQ(mkdir(lib, 0755), 0);
    snprintf(lib, sizeof lib, "%s/lib/libinfinirt_x.so", d);
    ASSERT_EQ(symlink(FAKE_DIR "/libfake_good.so", lib), 0);
    snprintf(f, sizeof f, "%s/20-late.ini", d);
    write_file(f, "[plugin.cpu]\ndevices = 3\n");
    snprintf(f, sizeof f, "%s/10-early.ini", d);
    write_file(f, "[plugin.cpu]\ndevices = 2\n\n[plugin.extra]\nlibrary = lib/libinfinirt_x.so\nanswer = 42\n");
    snprintf(f, sizeof f, "%s/30-notes.txt", d);
    write_file(f, "[plugin.cpu]\ndevices = 9\n");
    ASSERT_EQ(cpu_count(), 3);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("extra", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT_STR_CONTAINS(pi.path, "/plugins.d/lib/libinfinirt_x.so");
    char m[PATH_MAX], early[PATH_MAX], late[PATH_MAX], want[3 * PATH_MAX];
    ASSERT(realpath(main_path, m) != NULL);
    snprintf(f, sizeof f, "%s/10-early.ini", d);
    ASSERT(realpath(f, early) != NULL);
    snprintf(f, sizeof f, "%s/20-late.ini", d);
    ASSERT(realpath(f, late) != NULL);
    const char *log = tc_read_file(log_path());
    snprintf(want, sizeof want,
             "warn: %s:2: [plugin.cpu] devices is set again (also at %s:2): the value read last counts", early, m);
    ASSERT_STR_CONTAINS(log, want);
    snprintf(want, sizeof want, "warn: %s:2: [plugin.cpu] devices is set again (also at %s:2)", late, early);
    ASSERT_STR_CONTAINS(log, want);
    /* A section in a drop-in adds to the file's: no warning for it. */
    ASSERT(strstr(log, "section [plugin.cpu] again") == NULL);
    /* The report lists the files in the order read. */
    infinirtConfigEntry_t e;
    int i0 = report_entry(INFINIRT_CONFIG_ENTRY_FILE, "config", "/infinirt.ini", &e);
    int i1 = report_entry(INFINIRT_CONFIG_ENTRY_FILE, "drop-in", "/10-early.ini", &e);
    int i2 = report_entry(INFINIRT_CONFIG_ENTRY_FILE, "drop-in", "/20-late.ini", &e);
    ASSERT_GE(i0, 0);
    ASSERT_GT(i1, i0);
    ASSERT_GT(i2, i1);
    ASSERT_LT(report_entry(INFINIRT_CONFIG_ENTRY_FILE, "drop-in", "/30-notes.txt", &e), 0);
    return TEST_OK;
}

/* A key or a section repeated in one file: the last value still wins, as
 * it always did, and now a warning names both lines. */
int test_config_repeated_keys(void)
{
    use_text("[loader]\n"                 /* 1 */
             "default_device = cpu:1\n"   /* 2 */
             "plugins = cpu\n"            /* 3 */
             "[plugin.cpu]\n"             /* 4 */
             "devices = 3\n"              /* 5 */
             "[loader]\n"                 /* 6 */
             "default_device = cpu:2\n"); /* 7 */
    infiniDevice_t t;
    int id = -1;
    ASSERT_OK(infinirtGetDevice(&t, &id));
    ASSERT_EQ(id, 2);
    char resolved[PATH_MAX], want[2 * PATH_MAX + 200];
    ASSERT(realpath(getenv("INFINIRT_CONFIG"), resolved) != NULL);
    snprintf(want, sizeof want, "%s:1): its keys add", resolved);
    CHECK(log_has_at(6, "section [loader] again (also at "));
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    snprintf(want, sizeof want, "[loader] default_device is set again (also at %s:2): the value read last counts",
             resolved);
    CHECK(log_has_at(7, want));
    CHECK(report_warns(want));
    return TEST_OK;
}

/* ------------------------------------------------ plugin folders */

/* A plugin_dir that does not exist is a warning naming the folder and the
 * line that set it, and the report says so. */
int test_config_plugin_dir_missing(void)
{
    const char *path = use_text("[loader]\nplugin_dir = nowhere\n");
    int n = -1;
    ASSERT_OK(infinirtGetPluginCount(&n));
    ASSERT_EQ(n, 0);
    char resolved[PATH_MAX], tmp[PATH_MAX], want[3 * PATH_MAX];
    ASSERT(realpath(path, resolved) != NULL);
    ASSERT(realpath(tc_temp_dir(), tmp) != NULL);
    snprintf(want, sizeof want,
             "warn: plugin folder %s/nowhere (plugin_dir at %s:2) does not exist: no plugin is loaded from it", tmp,
             resolved);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    infinirtConfigEntry_t e;
    ASSERT_GE(report_entry(INFINIRT_CONFIG_ENTRY_PLUGIN_DIR, "plugin_dir", "/nowhere", &e), 0);
    ASSERT_EQ(e.problem, 1);
    ASSERT_STR_EQ(e.message, "does not exist");
    CHECK(report_warns("/nowhere (plugin_dir at "));
    return TEST_OK;
}

/* The report's calls: every documented variable is listed, set or not;
 * a bad index or a NULL output changes nothing. */
int test_config_report_calls(void)
{
    use_text("[plugin.cpu]\n");
    tc_setenv("INFINIRT_VISIBLE_DEVICES", "cpu:0");
    int n = -1;
    ASSERT_OK(infinirtGetConfigEntryCount(&n));
    static const char *const vars[] = {
        "INFINIRT_CONFIG", "INFINIRT_PLUGINS",  "INFINIRT_PLUGIN_PATH", "INFINIRT_VISIBLE_DEVICES",
        "INFINIRT_LOG",    "INFINIRT_LOG_FILE", "XDG_CONFIG_HOME",      "HOME",
        "INFINIRT_TRACE"};
    infinirtConfigEntry_t e;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        ASSERT_EQ(report_entry(INFINIRT_CONFIG_ENTRY_ENVIRONMENT, vars[i], NULL, &e), (int)i);
        ASSERT_EQ(e.problem, 0);
    }
    ASSERT_OK(infinirtGetConfigEntry(3, &e));
    ASSERT_STR_EQ(e.value, "cpu:0");
    ASSERT_STR_CONTAINS(e.message, "cpu device 0 as cpu:0");
    ASSERT_OK(infinirtGetConfigEntry(1, &e));
    ASSERT_STR_EQ(e.value, "");
    ASSERT_STR_EQ(e.message, "unset");
    memset(&e, 0x5a, sizeof e);
    ASSERT_STATUS(infinirtGetConfigEntry(n, &e), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGetConfigEntry(-1, &e), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(e.name[0], 0x5a);
    ASSERT_STATUS(infinirtGetConfigEntry(0, NULL), INFINI_STATUS_NULL_POINTER);
    ASSERT_STATUS(infinirtGetConfigEntryCount(NULL), INFINI_STATUS_NULL_POINTER);
    return TEST_OK;
}

/* ------------------------------------------------ size */

/* A config of n [plugin.NAME] sections, each with a key, and a [loader]
 * plugins list naming them all, written to the temp folder. */
static const char *write_sections(const char *name, int n)
{
    static char paths[2][600];
    static int used;
    char *path = paths[used++ % 2];
    snprintf(path, sizeof paths[0], "%s/%s", tc_temp_dir(), name);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        abort();
    fputs("[loader]\nplugins = ", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%sp%d", i ? "," : "", i);
    fputs("\n", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "[plugin.p%d]\nenabled = false\n", i);
    if (fclose(f) != 0)
        abort();
    return path;
}

/* The CPU time (user and system, seconds) of a child process whose
 * infinirtInit reads the config at path: what reading it costs. */
static double init_cpu_seconds(const char *path)
{
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        setenv("INFINIRT_CONFIG", path, 1);
        setenv("INFINIRT_LOG", "error", 1);
        _exit(infinirtInit() == INFINI_STATUS_SUCCESS ? 0 : 1);
    }
    int status = 0;
    struct rusage ru;
    ASSERT_EQ(wait4(pid, &status, 0, &ru), pid);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

/* A config is read in time linear in its size: 4n sections (each a
 * plugin, a key, a name in [loader] plugins) cost about 4 times what n
 * cost.  Each name found by a walk over the plugins read so far made it
 * quadratic: 20000 sections took 2.3 s of CPU, 5000 0.2 s (11-13 times;
 * now 4.2-4.4 times).  CPU time, not wall time, the least of three
 * children each, interleaved: another process's load changes the wall
 * time, not the work; and the bound, 6.5 times, leaves room for noise on
 * either side. */
int test_config_many_sections_linear(void)
{
    enum { N = 5000 };
    const char *small = write_sections("small.ini", N), *large = write_sections("large.ini", 4 * N);
    double t1 = 1e9, t4 = 1e9;
    for (int round = 0; round < 3; round++) {
        double a = init_cpu_seconds(small), b = init_cpu_seconds(large);
        t1 = a < t1 ? a : t1;
        t4 = b < t4 ? b : t4;
    }
    printf("config of %d sections: %.3f s CPU; of %d: %.3f s (%.2f times)\n", N, t1, 4 * N, t4, t4 / t1);
    if (!(t4 < 6.5 * t1))
        TEST_FAILED_("4 times the sections cost %.2f times the CPU time (%.3f s against %.3f s): not linear",
                     t4 / (t1 > 0 ? t1 : 1e-9), t4, t1);
    return TEST_OK;
}
