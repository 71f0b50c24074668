/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_test_util.h - what the CUDA plugin tests share: loading the plugin
 * straight from its file (no loader), initialising it with a config, and
 * capturing what it logs.
 *
 * INFINIRT_CUDA_PLUGIN_PATH is the built plugin ($<TARGET_FILE:infinirt_cuda>).
 */
#ifndef INFINIRT_CUDA_TEST_UTIL_H_
#define INFINIRT_CUDA_TEST_UTIL_H_

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>

#include "infinirt_plugin.h"
#include "test.h"

/* ---- log capture: every line the plugin logs, as "LEVEL message\n" ---- */
static char test_log_buf[16384];
static size_t test_log_len;
static pthread_mutex_t test_log_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((format(printf, 3, 4))) static void test_log(int level, const char *plugin, const char *fmt, ...)
{
    static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] %s: %s\n", level >= 0 && level <= 3 ? names[level] : "?", plugin, line);
    pthread_mutex_lock(&test_log_lock);
    int n = snprintf(test_log_buf + test_log_len, sizeof test_log_buf - test_log_len, "%s %s\n",
                     level >= 0 && level <= 3 ? names[level] : "?", line);
    if (n > 0 && (size_t)n < sizeof test_log_buf - test_log_len)
        test_log_len += (size_t)n;
    pthread_mutex_unlock(&test_log_lock);
}

static inline void test_log_clear(void)
{
    pthread_mutex_lock(&test_log_lock);
    test_log_len = 0;
    test_log_buf[0] = '\0';
    pthread_mutex_unlock(&test_log_lock);
}

/* Number of captured lines containing both `a` and `b` (b may be NULL). */
static inline int test_log_count(const char *a, const char *b)
{
    int n = 0;
    pthread_mutex_lock(&test_log_lock);
    for (const char *line = test_log_buf; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(len < sizeof tmp - 1 ? len : sizeof tmp - 1), line);
        if (strstr(tmp, a) && (b == NULL || strstr(tmp, b)))
            n++;
        line += len + (end != NULL);
    }
    pthread_mutex_unlock(&test_log_lock);
    return n;
}

/* ---- the plugin ---- */
typedef struct {
    void *dl;
    const infinirtPluginOps *ops;
    int count;
    char msg[512];
} cuda_plugin;

static inline int plugin_open(cuda_plugin *p)
{
    infinirtPluginEntryFn entry;
    void *sym;

    memset(p, 0, sizeof *p);
    p->dl = dlopen(INFINIRT_CUDA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (p->dl == NULL)
        TEST_FAILED_("dlopen(%s): %s", INFINIRT_CUDA_PLUGIN_PATH, dlerror());
    sym = dlsym(p->dl, INFINIRT_PLUGIN_ENTRY_NAME);
    ASSERT(sym != NULL);
    memcpy(&entry, &sym, sizeof sym);
    ASSERT_OK(entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, &p->ops));
    ASSERT(p->ops != NULL);
    return TEST_OK;
}

/* Init with key/value pairs (NULL-terminated list of key, value, ...). */
static inline infiniStatus_t plugin_init_kv(cuda_plugin *p, const infinirtPluginKeyValue *kv, size_t n)
{
    infinirtPluginInitArgs args = {
        .struct_size = sizeof args,
        .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
        .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
        .config = kv,
        .config_count = n,
        .plugin_path = INFINIRT_CUDA_PLUGIN_PATH,
        .log = test_log,
        .message = p->msg,
        .message_size = sizeof p->msg,
    };
    p->count = -1;
    return p->ops->init(&args, &p->count);
}

static inline infiniStatus_t plugin_init(cuda_plugin *p)
{
    return plugin_init_kv(p, NULL, 0);
}

/* Bytes 0..n-1 of a recognisable pattern, different for each seed. */
static inline void fill_pattern(void *buf, size_t n, unsigned seed)
{
    unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 8)) & 0xff);
}

#endif /* INFINIRT_CUDA_TEST_UTIL_H_ */
