/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c - the JSON reader of infinirt-trace (json.h): RFC 8259 values,
 * parsed into an arena, one at a time, with the byte offset of every error.
 */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ arena */

struct json_chunk {
    json_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

enum { CHUNK_BYTES = 64 * 1024 };

static void *arena_alloc(json_reader *r, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (n == 0)
        n = sizeof(max_align_t);
    json_chunk *c = r->chunks;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        if (cap > SIZE_MAX - sizeof(json_chunk))
            return NULL;
        c = malloc(sizeof(json_chunk) + cap);
        if (c == NULL)
            return NULL;
        c->next = r->chunks;
        c->used = 0;
        c->cap = cap;
        r->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

void json_init(json_reader *r, const char *data, size_t len)
{
    memset(r, 0, sizeof(*r));
    r->begin = r->p = data;
    r->end = data + len;
}

void json_reset(json_reader *r)
{
    /* Keep one chunk of the usual size: most events fit in it. */
    json_chunk *keep = NULL;
    for (json_chunk *c = r->chunks, *next; c != NULL; c = next) {
        next = c->next;
        if (keep == NULL && c->cap == CHUNK_BYTES) {
            keep = c;
            keep->next = NULL;
            keep->used = 0;
        } else {
            free(c);
        }
    }
    r->chunks = keep;
    r->stack_len = 0;
}

void json_free(json_reader *r)
{
    for (json_chunk *c = r->chunks, *next; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    r->chunks = NULL;
    free(r->stack);
    r->stack = NULL;
    r->stack_len = r->stack_cap = 0;
}

/* ------------------------------------------------------------ errors */

static int fail_at(json_reader *r, json_status status, const char *at, const char *fmt, ...)
{
    if (r->status != JSON_OK)
        return -1; /* the first error is the one reported */
    r->status = status;
    r->err_offset = (size_t)(at - r->begin);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err_msg, sizeof(r->err_msg), fmt, ap);
    va_end(ap);
    return -1;
}

static int nomem(json_reader *r)
{
    return fail_at(r, JSON_ERR_NOMEM, r->p, "out of memory");
}

/* The input ended where WHAT was expected. */
static int eof(json_reader *r, const char *what)
{
    return fail_at(r, JSON_ERR_EOF, r->p, "the input ends where %s was expected", what);
}

/* A byte that cannot start or continue the value: say which, printable. */
static int unexpected(json_reader *r, const char *what)
{
    unsigned char c = (unsigned char)*r->p;
    if (c >= 0x20 && c < 0x7f)
        return fail_at(r, JSON_ERR_SYNTAX, r->p, "expected %s, found '%c'", what, c);
    return fail_at(r, JSON_ERR_SYNTAX, r->p, "expected %s, found byte 0x%02x", what, c);
}

/* ------------------------------------------------------------ lexing */

static void skip_ws(json_reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

int json_peek(json_reader *r)
{
    skip_ws(r);
    return r->p < r->end ? (unsigned char)*r->p : -1;
}

static int push(json_reader *r, void *item)
{
    if (r->stack_len == r->stack_cap) {
        size_t cap = r->stack_cap ? r->stack_cap * 2 : 64;
        void **s = realloc(r->stack, cap * sizeof(*s));
        if (s == NULL)
            return nomem(r);
        r->stack = s;
        r->stack_cap = cap;
    }
    r->stack[r->stack_len++] = item;
    return 0;
}

static json_value *new_value(json_reader *r, json_type type)
{
    json_value *v = arena_alloc(r, sizeof(*v));
    if (v == NULL) {
        nomem(r);
        return NULL;
    }
    memset(v, 0, sizeof(*v));
    v->type = type;
    return v;
}

static int literal(json_reader *r, const char *word, json_type type, json_value **out)
{
    size_t n = strlen(word);
    for (size_t i = 0; i < n; i++) {
        if (r->p + i >= r->end) {
            r->p += i;
            return eof(r, "the rest of a literal");
        }
        if (r->p[i] != word[i]) {
            r->p += i;
            return unexpected(r, word);
        }
    }
    r->p += n;
    *out = new_value(r, type);
    return *out ? 0 : -1;
}

static int is_digit(const char *p, const char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

static int number(json_reader *r, json_value **out)
{
    const char *start = r->p, *p = r->p;
    int integral = 1;
    if (p < r->end && *p == '-')
        p++;
    if (p >= r->end) {
        r->p = p;
        return eof(r, "a digit");
    }
    if (*p == '0') {
        p++;
    } else if (is_digit(p, r->end)) {
        while (is_digit(p, r->end))
            p++;
    } else {
        r->p = p;
        return unexpected(r, "a digit");
    }
    if (p < r->end && *p == '.') {
        integral = 0;
        p++;
        if (!is_digit(p, r->end)) {
            r->p = p;
            return p >= r->end ? eof(r, "a digit after '.'") : unexpected(r, "a digit after '.'");
        }
        while (is_digit(p, r->end))
            p++;
    }
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        integral = 0;
        p++;
        if (p < r->end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit(p, r->end)) {
            r->p = p;
            return p >= r->end ? eof(r, "an exponent") : unexpected(r, "an exponent's digits");
        }
        while (is_digit(p, r->end))
            p++;
    }
    /* strtod and strtoll need a terminated copy; the input is not. */
    size_t len = (size_t)(p - start);
    char small[64], *text = small;
    if (len >= sizeof(small)) {
        text = arena_alloc(r, len + 1);
        if (text == NULL)
            return nomem(r);
    }
    memcpy(text, start, len);
    text[len] = '\0';
    json_value *v = new_value(r, JSON_NUMBER);
    if (v == NULL)
        return -1;
    v->u.num.d = strtod(text, NULL); /* overflow: ±HUGE_VAL, which json_num refuses */
    if (integral) {
        errno = 0;
        long long i = strtoll(text, NULL, 10);
        if (errno == 0) {
            v->u.num.i = i;
            v->u.num.is_int = 1;
        }
    }
    r->p = p;
    *out = v;
    return 0;
}

static int hex4(json_reader *r, const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++, p++) {
        if (p >= r->end) {
            r->p = p;
            return eof(r, "four hex digits after \\u");
        }
        char c = *p;
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else {
            r->p = p;
            return unexpected(r, "a hex digit after \\u");
        }
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string at r->p (its opening quote): decoded into the arena.  The
 * decoded text is never longer than the raw text (an escape of 2, 6 or 12
 * bytes gives at most 1, 3 or 4), so the raw length bounds the buffer. */
static int string(json_reader *r, json_value **out)
{
    const char *p = r->p + 1, *raw_end = p;
    /* Up to the closing quote, or the end where the input is cut short
     * (decoding below says where); never a pointer past the end. */
    while (raw_end < r->end && *raw_end != '"')
        raw_end += *raw_end == '\\' && r->end - raw_end >= 2 ? 2 : 1;
    char *buf = arena_alloc(r, (size_t)(raw_end - p) + 1);
    if (buf == NULL)
        return nomem(r);
    char *o = buf;
    for (;;) {
        if (p >= r->end) {
            r->p = p;
            return eof(r, "a string's closing quote");
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            break;
        if (c < 0x20) {
            r->p = p;
            return fail_at(r, JSON_ERR_SYNTAX, p, "a control character (0x%02x) in a string", c);
        }
        if (c != '\\') {
            *o++ = (char)c;
            p++;
            continue;
        }
        if (p + 1 >= r->end) {
            r->p = p + 1;
            return eof(r, "an escape");
        }
        char e = p[1];
        p += 2;
        switch (e) {
        case '"':
            *o++ = '"';
            break;
        case '\\':
            *o++ = '\\';
            break;
        case '/':
            *o++ = '/';
            break;
        case 'b':
            *o++ = '\b';
            break;
        case 'f':
            *o++ = '\f';
            break;
        case 'n':
            *o++ = '\n';
            break;
        case 'r':
            *o++ = '\r';
            break;
        case 't':
            *o++ = '\t';
            break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(r, p, &cp) != 0)
                return -1;
            p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && p + 6 <= r->end && p[0] == '\\' && p[1] == 'u' &&
                hex4(r, p + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            } else if (cp >= 0xd800 && cp < 0xe000) {
                if (r->status != JSON_OK)
                    return -1; /* the low half was malformed */
                cp = 0xfffd;   /* a lone surrogate: JSON allows it, UTF-8 cannot say it */
            }
            o += put_utf8(o, cp);
            break;
        }
        default:
            r->p = p - 1;
            return unexpected(r, "an escape (one of \"\\/bfnrtu)");
        }
    }
    *o = '\0';
    json_value *v = new_value(r, JSON_STRING);
    if (v == NULL)
        return -1;
    v->u.str.s = buf;
    v->u.str.len = (size_t)(o - buf);
    r->p = p + 1;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ structure */

static int enter(json_reader *r)
{
    if (r->depth >= JSON_MAX_DEPTH)
        return fail_at(r, JSON_ERR_SYNTAX, r->p, "nesting deeper than %d levels", JSON_MAX_DEPTH);
    r->depth++;
    return 0;
}

/* After a value in an array or object: ',' (1), CLOSE (0), else an error. */
static int separator(json_reader *r, char close)
{
    int c = json_peek(r);
    if (c == ',') {
        r->p++;
        return 1;
    }
    if (c == close) {
        r->p++;
        return 0;
    }
    if (c < 0)
        return eof(r, close == ']' ? "',' or ']'" : "',' or '}'");
    return unexpected(r, close == ']' ? "',' or ']'" : "',' or '}'");
}

static int parse_value(json_reader *r, json_value **out);

static int array(json_reader *r, json_value **out)
{
    if (enter(r) != 0)
        return -1;
    r->p++;
    size_t base = r->stack_len;
    if (json_peek(r) == ']') {
        r->p++;
    } else {
        for (;;) {
            json_value *item;
            if (parse_value(r, &item) != 0 || push(r, item) != 0)
                return -1;
            int more = separator(r, ']');
            if (more < 0)
                return -1;
            if (!more)
                break;
        }
    }
    r->depth--;
    json_value *v = new_value(r, JSON_ARRAY);
    if (v == NULL)
        return -1;
    size_t n = r->stack_len - base;
    if (n > 0) {
        v->u.arr.items = arena_alloc(r, n * sizeof(json_value *));
        if (v->u.arr.items == NULL)
            return nomem(r);
        memcpy(v->u.arr.items, r->stack + base, n * sizeof(json_value *));
    }
    v->u.arr.n = n;
    r->stack_len = base;
    *out = v;
    return 0;
}

static int member_key(json_reader *r, json_value **key)
{
    int c = json_peek(r);
    if (c < 0)
        return eof(r, "a member name");
    if (c != '"')
        return unexpected(r, "a member name (a string)");
    if (string(r, key) != 0)
        return -1;
    c = json_peek(r);
    if (c < 0)
        return eof(r, "':'");
    if (c != ':')
        return unexpected(r, "':' after a member name");
    r->p++;
    return 0;
}

static int object(json_reader *r, json_value **out)
{
    if (enter(r) != 0)
        return -1;
    r->p++;
    size_t base = r->stack_len;
    if (json_peek(r) == '}') {
        r->p++;
    } else {
        for (;;) {
            json_value *key, *value;
            if (member_key(r, &key) != 0 || parse_value(r, &value) != 0 || push(r, key) != 0 || push(r, value) != 0)
                return -1;
            int more = separator(r, '}');
            if (more < 0)
                return -1;
            if (!more)
                break;
        }
    }
    r->depth--;
    json_value *v = new_value(r, JSON_OBJECT);
    if (v == NULL)
        return -1;
    size_t n = (r->stack_len - base) / 2;
    if (n > 0) {
        v->u.obj.members = arena_alloc(r, n * sizeof(json_member));
        if (v->u.obj.members == NULL)
            return nomem(r);
        for (size_t i = 0; i < n; i++) {
            json_value *key = r->stack[base + 2 * i];
            v->u.obj.members[i].key = key->u.str.s;
            v->u.obj.members[i].key_len = key->u.str.len;
            v->u.obj.members[i].value = r->stack[base + 2 * i + 1];
        }
    }
    v->u.obj.n = n;
    r->stack_len = base;
    *out = v;
    return 0;
}

static int parse_value(json_reader *r, json_value **out)
{
    int c = json_peek(r);
    switch (c) {
    case -1:
        return eof(r, "a value");
    case '{':
        return object(r, out);
    case '[':
        return array(r, out);
    case '"':
        return string(r, out);
    case 't':
        return literal(r, "true", JSON_TRUE, out);
    case 'f':
        return literal(r, "false", JSON_FALSE, out);
    case 'n':
        return literal(r, "null", JSON_NULL, out);
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return number(r, out);
        return unexpected(r, "a value");
    }
}

int json_parse(json_reader *r, json_value **out)
{
    if (r->status != JSON_OK)
        return -1;
    return parse_value(r, out);
}

/* ------------------------------------------------------------ walking */

int json_open(json_reader *r, char bracket)
{
    if (r->status != JSON_OK)
        return -1;
    int c = json_peek(r);
    const char *what = bracket == '{' ? "an object" : "an array";
    if (c < 0)
        return eof(r, what);
    if (c != bracket)
        return unexpected(r, what);
    if (enter(r) != 0)
        return -1;
    r->p++;
    r->first[r->depth] = 1;
    return 0;
}

/* The next entry of the walk at the current depth: 1 before it, 0 when
 * CLOSE ended the walk. */
static int next_entry(json_reader *r, char close)
{
    if (r->status != JSON_OK)
        return -1;
    if (r->first[r->depth]) {
        int c = json_peek(r);
        if (c < 0)
            return eof(r, close == ']' ? "a value or ']'" : "a member name or '}'");
        r->first[r->depth] = 0;
        if (c == close) {
            r->p++;
            r->depth--;
            return 0;
        }
        return 1;
    }
    int more = separator(r, close);
    if (more < 0)
        return -1;
    if (!more)
        r->depth--;
    return more;
}

int json_next_member(json_reader *r, const char **key, size_t *key_len)
{
    int more = next_entry(r, '}');
    if (more <= 0)
        return more;
    json_value *k;
    if (member_key(r, &k) != 0)
        return -1;
    *key = k->u.str.s;
    *key_len = k->u.str.len;
    return 1;
}

int json_next_item(json_reader *r)
{
    return next_entry(r, ']');
}

/* ------------------------------------------------------------ access */

const json_value *json_get(const json_value *obj, const char *key)
{
    if (obj == NULL || obj->type != JSON_OBJECT)
        return NULL;
    size_t len = strlen(key);
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const json_member *m = &obj->u.obj.members[i];
        if (m->key_len == len && memcmp(m->key, key, len) == 0)
            return m->value;
    }
    return NULL;
}

const char *json_str(const json_value *v)
{
    return v != NULL && v->type == JSON_STRING ? v->u.str.s : NULL;
}

int json_num(const json_value *v, double *out)
{
    if (v == NULL || v->type != JSON_NUMBER || !isfinite(v->u.num.d))
        return 0;
    *out = v->u.num.d;
    return 1;
}
