/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - the loader's logger (internal).
 *
 * INFINIRT_LOG=error|warn|info|debug sets the level (default warn);
 * INFINIRT_LOG_FILE=PATH appends to a file instead of stderr.  The config's
 * [loader] log_level applies when INFINIRT_LOG is unset.  Each message is one
 * line "infinirt: <level>: <text>", written with a single write so lines from
 * several threads never interleave.
 */
#ifndef INFINIRT_LOADER_LOG_H_
#define INFINIRT_LOADER_LOG_H_

#include <stdarg.h>

enum {
    INFINIRT__LOG_ERROR = 0,
    INFINIRT__LOG_WARN = 1,
    INFINIRT__LOG_INFO = 2,
    INFINIRT__LOG_DEBUG = 3,
};

#if defined(__GNUC__)
#define INFINIRT__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define INFINIRT__PRINTF(f, a)
#endif

/* Read INFINIRT_LOG / INFINIRT_LOG_FILE.  Called once at loader start; safe
 * to call again. */
void infinirt__log_init(void);
/* Parse "error".."debug" (case-insensitive); -1 if not a level. */
int infinirt__log_parse_level(const char *text);
/* Set the level unless INFINIRT_LOG fixed it. */
void infinirt__log_set_default_level(int level);
int infinirt__log_enabled(int level);
void infinirt__log(int level, const char *fmt, ...) INFINIRT__PRINTF(2, 3);
void infinirt__vlog(int level, const char *prefix, const char *fmt, va_list ap);

#define INFINIRT__ERROR(...) infinirt__log(INFINIRT__LOG_ERROR, __VA_ARGS__)
#define INFINIRT__WARN(...) infinirt__log(INFINIRT__LOG_WARN, __VA_ARGS__)
#define INFINIRT__INFO(...) infinirt__log(INFINIRT__LOG_INFO, __VA_ARGS__)
#define INFINIRT__DEBUG(...)                                 \
    do {                                                     \
        if (infinirt__log_enabled(INFINIRT__LOG_DEBUG))      \
            infinirt__log(INFINIRT__LOG_DEBUG, __VA_ARGS__); \
    } while (0)

#endif /* INFINIRT_LOADER_LOG_H_ */
