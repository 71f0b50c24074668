/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - one-line, thread-safe logging to stderr or INFINIRT_LOG_FILE. */
#define _GNU_SOURCE
#include "log.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

static atomic_int g_level = INFINIRT__LOG_WARN;
static atomic_int g_level_from_env = 0;
static atomic_int g_fd = 2;

static const char *const k_level_names[] = {"error", "warn", "info", "debug"};

int infinirt__log_parse_level(const char *text)
{
    if (text == NULL)
        return -1;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(text, k_level_names[i]) == 0)
            return i;
    if (strcasecmp(text, "warning") == 0)
        return INFINIRT__LOG_WARN;
    return -1;
}

void infinirt__log_init(void)
{
    /* secure_getenv: a setuid program must not be steered by its caller. */
    const char *lv = secure_getenv("INFINIRT_LOG");
    const char *file = secure_getenv("INFINIRT_LOG_FILE");
    if (file != NULL && file[0] != '\0') {
        int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
            atomic_store(&g_fd, fd);
        else
            infinirt__log(INFINIRT__LOG_WARN, "cannot open INFINIRT_LOG_FILE '%s'; logging to stderr", file);
    }
    if (lv != NULL && lv[0] != '\0') {
        int l = infinirt__log_parse_level(lv);
        if (l < 0) {
            infinirt__log(INFINIRT__LOG_WARN, "INFINIRT_LOG='%s' is not one of error, warn, info, debug; using warn",
                          lv);
        } else {
            atomic_store(&g_level, l);
            atomic_store(&g_level_from_env, 1);
        }
    }
}

void infinirt__log_set_default_level(int level)
{
    if (level >= 0 && !atomic_load(&g_level_from_env))
        atomic_store(&g_level, level);
}

int infinirt__log_enabled(int level)
{
    return level <= atomic_load_explicit(&g_level, memory_order_relaxed);
}

void infinirt__vlog(int level, const char *prefix, const char *fmt, va_list ap)
{
    if (!infinirt__log_enabled(level))
        return;
    char buf[2048];
    int n = snprintf(buf, sizeof buf, "infinirt: %s: %s%s",
                     k_level_names[level < 0   ? 0
                                   : level > 3 ? 3
                                               : level],
                     prefix ? prefix : "", prefix ? ": " : "");
    if (n < 0)
        return;
    if ((size_t)n < sizeof buf) {
        int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
        if (m > 0)
            n += m;
    }
    if ((size_t)n >= sizeof buf - 1)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* One write per line keeps lines from concurrent threads whole. */
    ssize_t w = write(atomic_load(&g_fd), buf, (size_t)n);
    (void)w;
}

void infinirt__log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    infinirt__vlog(level, NULL, fmt, ap);
    va_end(ap);
}
