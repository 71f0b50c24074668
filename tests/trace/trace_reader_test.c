/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_reader_test.c - the reader of infinirt-trace (tools/trace), in
 * process: the JSON reader's values and errors (with their byte offsets),
 * the model of the fixture tests/trace/fixtures/small.json, every prefix
 * of it (a trace cut short anywhere is read, never refused), and every
 * byte of it replaced by a troublesome one (an error or a trace, never a
 * crash: the ASan build runs this too).  The printed figures are checked
 * by trace_tool_test.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include "json.h"
#include "test.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CMake registers each as tools.trace_reader.NAME. */
#define TRACE_READER_LIST(X) \
    X(json_values)           \
    X(json_errors)           \
    X(fixture_model)         \
    X(string_track_ids)      \
    X(every_prefix)          \
    X(every_byte_replaced)
TRACE_READER_LIST(TEST_DECLARE)

static const json_value *parse_one(json_reader *r, const char *text)
{
    json_init(r, text, strlen(text));
    json_value *v = NULL;
    if (json_parse(r, &v) != 0)
        TEST_FAILED_("parsing %s failed at byte %zu: %s", text, r->err_offset, r->err_msg);
    return v;
}

int test_json_values(void)
{
    json_reader r;
    const json_value *v = parse_one(&r, "\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude80\\ud800x\"");
    ASSERT_EQ(v->type, JSON_STRING);
    /* 9 ASCII bytes, é as C3 A9, U+1F680 as F0 9F 9A 80, a lone surrogate
     * as U+FFFD EF BF BD, x: 19 bytes. */
    ASSERT_EQ(v->u.str.len, 19);
    ASSERT_MEM_EQ(v->u.str.s, "a\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x9a\x80\xef\xbf\xbdx", 20);
    json_free(&r);

    v = parse_one(&r, " -9007199254740993 ");
    ASSERT(v->u.num.is_int);
    ASSERT_EQ(v->u.num.i, -9007199254740993LL); /* exact, beyond a double's 53 bits */
    json_free(&r);
    v = parse_one(&r, "99999999999999999999"); /* past int64_t: a double only */
    ASSERT(!v->u.num.is_int);
    double d;
    ASSERT(json_num(v, &d) && d > 9.9e19);
    json_free(&r);
    v = parse_one(&r, "1e999"); /* overflows: not a usable number */
    ASSERT_EQ(v->type, JSON_NUMBER);
    ASSERT(!json_num(v, &d));
    json_free(&r);
    v = parse_one(&r, "12.5e-1");
    ASSERT(!v->u.num.is_int && json_num(v, &d) && d == 1.25);
    json_free(&r);

    v = parse_one(&r, "{\"a\":[1,{\"b\":null}],\"a\":2,\"c\":true}");
    ASSERT_EQ(v->type, JSON_OBJECT);
    ASSERT_EQ(v->u.obj.n, 3);
    const json_value *a = json_get(v, "a"); /* the first of a repeated key */
    ASSERT(a != NULL && a->type == JSON_ARRAY && a->u.arr.n == 2);
    ASSERT_EQ(json_get(a->u.arr.items[1], "b")->type, JSON_NULL);
    ASSERT_EQ(json_get(v, "c")->type, JSON_TRUE);
    ASSERT(json_get(v, "d") == NULL);
    ASSERT(json_get(a, "b") == NULL); /* not an object */
    json_free(&r);
    return TEST_OK;
}

int test_json_errors(void)
{
    static const struct {
        const char *text;
        json_status status;
        size_t offset;
        const char *msg;
    } rows[] = {
        {"[1,]", JSON_ERR_SYNTAX, 3, "expected a value, found ']'"},
        {"{\"a\" 1}", JSON_ERR_SYNTAX, 5, "expected ':' after a member name, found '1'"},
        {"{\"a\":1,}", JSON_ERR_SYNTAX, 7, "expected a member name (a string), found '}'"},
        {"[01]", JSON_ERR_SYNTAX, 2, "expected ',' or ']', found '1'"},
        {"[1.]", JSON_ERR_SYNTAX, 3, "expected a digit after '.', found ']'"},
        {"[-]", JSON_ERR_SYNTAX, 2, "expected a digit, found ']'"},
        {"[1e+]", JSON_ERR_SYNTAX, 4, "expected an exponent's digits, found ']'"},
        {"\"\\x\"", JSON_ERR_SYNTAX, 2, "expected an escape"},
        {"\"\\u12g4\"", JSON_ERR_SYNTAX, 5, "expected a hex digit after \\u, found 'g'"},
        {"\"a\nb\"", JSON_ERR_SYNTAX, 2, "a control character (0x0a) in a string"},
        {"[nul]", JSON_ERR_SYNTAX, 4, "expected null, found ']'"},
        {"\x01", JSON_ERR_SYNTAX, 0, "expected a value, found byte 0x01"},
        {"[1", JSON_ERR_EOF, 2, "the input ends where ',' or ']' was expected"},
        {"{\"a\":", JSON_ERR_EOF, 5, "the input ends where a value was expected"},
        {"\"abc", JSON_ERR_EOF, 4, "the input ends where a string's closing quote was expected"},
        {"\"\\u12", JSON_ERR_EOF, 5, "the input ends where four hex digits after \\u was expected"},
        {"tr", JSON_ERR_EOF, 2, "the input ends where the rest of a literal was expected"},
        {"-", JSON_ERR_EOF, 1, "the input ends where a digit was expected"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_reader r;
        json_init(&r, rows[i].text, strlen(rows[i].text));
        json_value *v;
        ASSERT_EQ(json_parse(&r, &v), -1);
        if (r.status != rows[i].status || r.err_offset != rows[i].offset || strstr(r.err_msg, rows[i].msg) == NULL)
            TEST_FAILED_("row %zu (%s): status %d at byte %zu, \"%s\"; expected status %d at byte %zu, \"%s\"", i,
                         rows[i].text, (int)r.status, r.err_offset, r.err_msg, (int)rows[i].status, rows[i].offset,
                         rows[i].msg);
        json_free(&r);
    }
    /* Nesting: 64 levels are read, the 65th is refused where it opens. */
    char deep[2 * JSON_MAX_DEPTH + 4];
    for (int levels = JSON_MAX_DEPTH; levels <= JSON_MAX_DEPTH + 1; levels++) {
        memset(deep, '[', (size_t)levels);
        memset(deep + levels, ']', (size_t)levels);
        json_reader r;
        json_init(&r, deep, 2 * (size_t)levels);
        json_value *v;
        int rc = json_parse(&r, &v);
        if (levels == JSON_MAX_DEPTH) {
            ASSERT_EQ(rc, 0);
        } else {
            ASSERT_EQ(rc, -1);
            ASSERT_EQ(r.err_offset, JSON_MAX_DEPTH);
            ASSERT_STR_CONTAINS(r.err_msg, "nesting deeper than 64 levels");
        }
        json_free(&r);
    }
    return TEST_OK;
}

static char *read_fixture(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", TRACE_FIXTURES, name);
    char *data;
    trace_error err;
    if (trace_read_file(path, &data, len, &err) != 0)
        TEST_FAILED_("%s: %s", path, err.msg);
    return data;
}

static const trace_lane *find_lane(const trace_model *m, int64_t tid)
{
    for (size_t i = 0; i < m->lanes.n; i++)
        if (m->lanes.items[i].tid == tid)
            return &m->lanes.items[i];
    TEST_FAILED_("no lane of tid %lld", (long long)tid);
}

int test_fixture_model(void)
{
    size_t len;
    char *data = read_fixture("small.json", &len);
    trace_model m;
    trace_error err;
    ASSERT_EQ(trace_load(&m, data, len, &err), 0);
    ASSERT(trace_check_model(&m, len) == NULL);
    ASSERT(!m.truncated);
    ASSERT_STR_EQ(m.version, "0.1.0");
    /* 42 events: 7 calls, 5 stream ops, 4 flow events, 9 allocator events,
     * 7 counters, 1 start-up span, 1 note, 5 metadata; 2 of kinds this tool
     * does not read (a "gc" instant, phase "Z"), 1 call without "dur". */
    ASSERT_EQ(m.events, 42);
    ASSERT_EQ(m.calls, 7);
    ASSERT_EQ(m.work, 5);
    ASSERT_EQ(m.flows, 4);
    ASSERT_EQ(m.alloc_events, 9);
    ASSERT_EQ(m.counters, 7);
    ASSERT_EQ(m.startups, 1);
    ASSERT_EQ(m.notes, 1);
    ASSERT_EQ(m.metadata, 5);
    ASSERT_EQ(m.unknown, 2);
    ASSERT_EQ(m.incomplete, 1);
    ASSERT_EQ(m.dropped_other, 3);
    ASSERT_EQ(m.dropped_instants, 3);
    /* From the start-up span at 0 to infinirtFree's end, 100 + 1.25 µs. */
    ASSERT_EQ(m.t_min, 0);
    ASSERT_EQ(m.t_max, 101250);
    /* Lanes: threads 1 and 2, the two streams (read in any order). */
    ASSERT_EQ(m.lanes.n, 4);
    const trace_lane *s = find_lane(&m, 1001);
    ASSERT_STR_EQ(s->name, "stream cpu:0 0x5a1");
    ASSERT_EQ(s->work.n, 4);
    ASSERT_EQ(s->work.items[0].start, 22000); /* sorted: the file has the host function first */
    ASSERT_EQ(s->work.items[3].start, 60000);
    ASSERT_EQ(s->work.items[3].dur, 30000);
    ASSERT_STR_EQ(find_lane(&m, 2)->name, "thread 2"); /* from "thread \u0032" */
    ASSERT_EQ(find_lane(&m, 1)->calls.n, 6);           /* Malloc, 3 MemcpyAsync, StreamSynchronize, Free */
    ASSERT_EQ(find_lane(&m, 1)->calls.items[5].dur, 1250);
    /* Devices: cpu:0 from its events and counters, cpu:1. */
    ASSERT_EQ(m.devices.n, 2);
    const trace_device *d = &m.devices.items[0];
    ASSERT_STR_EQ(d->name, "cpu:0");
    ASSERT_EQ(d->points.n, 6);
    ASSERT_EQ(d->points.items[3].allocated, 12288);
    ASSERT_EQ(d->points.items[5].reserved, 0);
    ASSERT_EQ(d->mallocs, 2);
    ASSERT_EQ(d->frees, 2);
    ASSERT_EQ(d->oom_retries, 1);
    trace_free(&m);
    free(data);
    return TEST_OK;
}

/* A writer may name tracks by strings: each string is a track of its own. */
int test_string_track_ids(void)
{
    static const char text[] =
        "[{\"ph\":\"X\",\"cat\":\"stream\",\"name\":\"fill\",\"ts\":0,\"dur\":1,\"pid\":1,\"tid\":\"q1\"},"
        "{\"ph\":\"X\",\"cat\":\"stream\",\"name\":\"fill\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":\"q2\"},"
        "{\"ph\":\"X\",\"cat\":\"stream\",\"name\":\"fill\",\"ts\":2,\"dur\":1,\"pid\":1,\"tid\":\"q1\"},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":\"q2\",\"args\":{\"name\":\"stream two\"}}]";
    trace_model m;
    trace_error err;
    ASSERT_EQ(trace_load(&m, text, sizeof(text) - 1, &err), 0);
    ASSERT_EQ(m.lanes.n, 2);
    ASSERT_EQ(m.lanes.items[0].work.n, 2);
    ASSERT_EQ(m.lanes.items[1].work.n, 1);
    ASSERT_STR_EQ(m.lanes.items[1].name, "stream two");
    trace_free(&m);
    return TEST_OK;
}

/* Every prefix of a trace is that trace cut short: read, with a warning
 * and the events before the cut, never refused. */
int test_every_prefix(void)
{
    size_t len;
    char *data = read_fixture("small.json", &len);
    uint64_t last_events = 0;
    FILE *null = fopen("/dev/null", "w");
    ASSERT(null != NULL);
    for (size_t n = 1; n <= len; n++) {
        char *copy = malloc(n); /* exactly n bytes: ASan sees a read past the cut */
        ASSERT(copy != NULL);
        memcpy(copy, data, n);
        trace_model m;
        trace_error err;
        if (trace_load(&m, copy, n, &err) != 0)
            TEST_FAILED_("the first %zu bytes are refused: %s", n, err.msg);
        /* The whole file and the file less its last newline are complete. */
        if (m.truncated != (n < len - 1))
            TEST_FAILED_("the first %zu of %zu bytes: truncated is %d", n, len, m.truncated);
        const char *broken = trace_check_model(&m, n);
        if (broken != NULL)
            TEST_FAILED_("the first %zu bytes: %s", n, broken);
        ASSERT_GE(m.events, last_events);
        last_events = m.events;
        ASSERT_EQ(trace_print_summary(null, &m, "prefix"), 0);
        ASSERT_EQ(trace_write_html(null, &m, "prefix"), 0);
        trace_free(&m);
        free(copy);
    }
    ASSERT_EQ(last_events, 42);
    fclose(null);
    free(data);
    return TEST_OK;
}

/* Each byte replaced by each of these: an error with a message, or a
 * trace; the summary and page written for every trace. */
int test_every_byte_replaced(void)
{
    static const char subst[] = {'"', '\\', '{', '}', '[', ']', ',', ':', '0', '-', 'e', '\0', '\n', (char)0xff};
    size_t len;
    char *data = read_fixture("small.json", &len);
    FILE *null = fopen("/dev/null", "w");
    ASSERT(null != NULL);
    size_t refused = 0, read_ok = 0;
    char *copy = malloc(len);
    ASSERT(copy != NULL);
    for (size_t i = 0; i < len; i++) {
        for (size_t k = 0; k < sizeof(subst); k++) {
            if (data[i] == subst[k])
                continue;
            memcpy(copy, data, len);
            copy[i] = subst[k];
            trace_model m;
            trace_error err;
            if (trace_load(&m, copy, len, &err) != 0) {
                if (err.msg[0] == '\0')
                    TEST_FAILED_("byte %zu replaced by 0x%02x: refused without a message", i,
                                 (unsigned char)subst[k]);
                refused++;
            } else {
                const char *broken = trace_check_model(&m, len);
                if (broken != NULL)
                    TEST_FAILED_("byte %zu replaced by 0x%02x: %s", i, (unsigned char)subst[k], broken);
                ASSERT_EQ(trace_print_summary(null, &m, "mutant"), 0);
                ASSERT_EQ(trace_write_html(null, &m, "mutant"), 0);
                read_ok++;
            }
            trace_free(&m);
        }
    }
    printf("%zu mutants refused with a message, %zu read\n", refused, read_ok);
    ASSERT_GT(refused, 0);
    ASSERT_GT(read_ok, 0);
    free(copy);
    fclose(null);
    free(data);
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {TRACE_READER_LIST(TEST_ENTRY)};
    static const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
