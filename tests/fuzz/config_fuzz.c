/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_fuzz.c - libFuzzer harness over the config reader (loader/ini.c)
 * and the size parser every section uses (infinirtPluginParseSize).
 *
 * Built only with clang and -DINFINIRT_FUZZ=ON (tests/fuzz/CMakeLists.txt),
 * with -fsanitize=fuzzer,address,undefined.  Seeds: tests/fuzz/corpus/config
 * (real configs).  ./dev test runs it for a bounded time; by hand:
 *   build-fuzz/bin/infinirt-config-fuzz -max_total_time=600 CORPUS_COPY tests/fuzz/corpus/config
 *
 * Beside the sanitizers' checks, the sink checks what the reader promises:
 * line numbers only grow, section names and keys are non-empty and trimmed,
 * values are trimmed and hold no comment, nothing holds a newline.
 */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    infinirt__ini_sink sink;
    int last_line;
} fuzz_sink;

static void check_line(fuzz_sink *f, int line)
{
    if (line < f->last_line || line < 1)
        abort();
    f->last_line = line;
}

static void check_trimmed(const char *s, int may_be_empty)
{
    size_t n = strlen(s);
    if (n == 0) {
        if (!may_be_empty)
            abort();
        return;
    }
    if (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')
        abort();
    if (strchr(s, '\n') != NULL)
        abort();
}

static void on_section(infinirt__ini_sink *sink, const char *name, int line)
{
    check_line((fuzz_sink *)sink, line);
    check_trimmed(name, 0);
    if (strchr(name, ']') != NULL)
        abort();
}

static void on_key(infinirt__ini_sink *sink, const char *section, const char *key, const char *value, int line)
{
    check_line((fuzz_sink *)sink, line);
    check_trimmed(section, 0);
    check_trimmed(key, 0);
    check_trimmed(value, 1);
    if (strchr(key, '=') != NULL)
        abort();
    for (const char *p = strpbrk(value, ";#"); p != NULL; p = strpbrk(p + 1, ";#"))
        if (p == value || p[-1] == ' ' || p[-1] == '\t')
            abort(); /* a comment was left in the value */
    size_t v = 12345;
    if (infinirtPluginParseSize(value, &v) != 0 && v != 12345)
        abort(); /* a failed parse changed its output */
}

static void on_problem(infinirt__ini_sink *sink, int line, const char *what)
{
    check_line((fuzz_sink *)sink, line);
    if (what == NULL || what[0] == '\0')
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_sink f = {.sink = {.section = on_section, .key = on_key, .problem = on_problem}};
    infinirt__ini_parse((const char *)data, size, &f.sink);
    return 0;
}
