/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ini.c - the INI reader: turns a config file's bytes into section headers
 * and key = value pairs, each with its line number.  No file access and no
 * meaning here (config_keys.c gives the keys their meaning), so the fuzz harness
 * (tests/fuzz/config_fuzz.c) can drive it on any bytes.
 *
 * The rules (README "Configuration"):
 *  - an optional UTF-8 byte-order mark before the first line is skipped;
 *  - lines end at '\n' ("\r\n" too) and may be of any length;
 *  - a line whose first non-blank character is ';' or '#' is a comment;
 *  - [NAME] opens a section; NAME is trimmed and may be of any length;
 *  - KEY = VALUE sets a key; both sides are trimmed; ';' or '#' after a
 *    space or tab starts a comment, so "size = 4M  # four" is "4M";
 *  - a line that starts with a space or tab is an error: there are no
 *    continuation lines, and a line indented by mistake must not silently
 *    join or replace the value above it;
 *  - every other line is an error.
 * An error is reported through the sink with its line number; the line is
 * skipped and reading goes on.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Cut a comment that starts after a blank, then trailing blanks. */
static void cut_comment_and_trim(char *s)
{
    for (char *p = s; *p != '\0'; p++) {
        if ((*p == ';' || *p == '#') && (p == s || is_blank(p[-1]))) {
            *p = '\0';
            break;
        }
    }
    size_t n = strlen(s);
    while (n > 0 && is_blank(s[n - 1]))
        s[--n] = '\0';
}

static char *skip_blanks(char *s)
{
    while (is_blank(*s))
        s++;
    return s;
}

/* One line, NUL-terminated, without its '\n'.  Returns 1 when it was a
 * section header or a key, 0 otherwise. */
static int parse_line(char *line, int lineno, char **section, infinirt__ini_sink *sink)
{
    char *s = skip_blanks(line);
    if (*s == '\0' || *s == ';' || *s == '#')
        return 0;
    if (s != line) {
        sink->problem(sink, lineno,
                      "indented line: continuation lines are not supported (start the line "
                      "in the first column, or put the whole value on one line); ignored");
        return 0;
    }
    if (*s == '[') {
        char *close = strchr(s, ']');
        if (close == NULL) {
            sink->problem(sink, lineno,
                          "section header without a closing ']'; ignored (keys up to the next "
                          "section are ignored too)");
            free(*section);
            *section = NULL;
            return 0;
        }
        char *rest = skip_blanks(close + 1);
        if (*rest != '\0' && *rest != ';' && *rest != '#') {
            sink->problem(sink, lineno,
                          "text after the section header's ']'; ignored (keys up to the next "
                          "section are ignored too)");
            free(*section);
            *section = NULL;
            return 0;
        }
        *close = '\0';
        char *name = skip_blanks(s + 1);
        size_t n = strlen(name);
        while (n > 0 && is_blank(name[n - 1]))
            name[--n] = '\0';
        free(*section);
        *section = NULL;
        if (n == 0) {
            sink->problem(sink, lineno,
                          "empty section name []; ignored (keys up to the next section are "
                          "ignored too)");
            return 0;
        }
        *section = strdup(name);
        if (*section == NULL)
            return 0;
        sink->section(sink, name, lineno);
        return 1;
    }
    char *eq = strchr(s, '=');
    if (eq == NULL) {
        sink->problem(sink, lineno, "not a [section] header, a KEY = VALUE line or a comment; ignored");
        return 0;
    }
    *eq = '\0';
    char *key = s;
    cut_comment_and_trim(key);
    char *value = skip_blanks(eq + 1);
    cut_comment_and_trim(value);
    if (*key == '\0') {
        sink->problem(sink, lineno, "no key before '='; ignored");
        return 0;
    }
    if (*section == NULL) {
        sink->problem(sink, lineno, "key outside any section (or in one that was ignored); ignored");
        return 0;
    }
    sink->key(sink, *section, key, value, lineno);
    return 1;
}

size_t infinirt__ini_parse(const char *text, size_t len, infinirt__ini_sink *sink)
{
    size_t recognised = 0;
    char *section = NULL;
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    size_t pos = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        pos = 3;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        if (n + 1 > cap) {
            char *grown = realloc(line, n + 1);
            if (grown == NULL) {
                sink->problem(sink, lineno + 1,
                              "out of memory reading this line; the rest of the file is "
                              "ignored");
                break;
            }
            line = grown;
            cap = n + 1;
        }
        memcpy(line, text + pos, n);
        line[n] = '\0';
        lineno = lineno < INT_MAX ? lineno + 1 : lineno;
        /* A NUL inside a line would hide the rest of it; config.c refuses
         * such files, the reader just stops at the NUL. */
        recognised += (size_t)parse_line(line, lineno, &section, sink);
        pos += n + (nl != NULL);
    }
    free(line);
    free(section);
    return recognised;
}
