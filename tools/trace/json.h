/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h - the small JSON reader infinirt-trace reads traces with.
 *
 * A trace can be hundreds of megabytes, so the reader does not build one
 * tree of the whole file: the caller walks the outer object and array with
 * json_next_member / json_next_item and parses one value at a time (one
 * trace event) into an arena it resets before the next.  Every failure
 * leaves a message with the byte offset where the input went wrong, and
 * input that ends early is told apart from input that is wrong (a trace
 * cut short by a crash is still worth reading).  Nesting is limited
 * (JSON_MAX_DEPTH), so no input can exhaust the stack.
 */
#ifndef INFINIRT_TRACE_JSON_H
#define INFINIRT_TRACE_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64

typedef enum {
    JSON_NULL,
    JSON_FALSE,
    JSON_TRUE,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_type;

typedef struct json_value json_value;

typedef struct {
    const char *key; /* NUL-terminated (a \u0000 in it ends it early) */
    size_t key_len;
    json_value *value;
} json_member;

struct json_value {
    json_type type;
    union {
        struct {
            double d;
            int64_t i;  /* the value, when is_int */
            int is_int; /* written without fraction or exponent, and fits int64_t */
        } num;
        struct {
            char *s; /* decoded (escapes resolved, UTF-8), NUL-terminated */
            size_t len;
        } str;
        struct {
            json_value **items;
            size_t n;
        } arr;
        struct {
            json_member *members;
            size_t n;
        } obj;
    } u;
};

/* What went wrong, in json_reader.status. */
typedef enum {
    JSON_OK = 0,
    JSON_ERR_SYNTAX, /* the input is not JSON at err_offset */
    JSON_ERR_EOF,    /* the input ends inside a value: cut short */
    JSON_ERR_NOMEM,
} json_status;

typedef struct json_chunk json_chunk;

typedef struct {
    const char *begin, *p, *end;
    int depth;
    json_status status;
    size_t err_offset;
    char err_msg[160];
    /* The arena values are parsed into (json_reset frees them at once). */
    json_chunk *chunks;
    /* Items and members of the arrays and objects being parsed, before
     * they are copied into the arena when they close. */
    void **stack;
    size_t stack_len, stack_cap;
    /* Per depth, whether a walk (json_open) is before its first entry. */
    unsigned char first[JSON_MAX_DEPTH + 2];
} json_reader;

void json_init(json_reader *r, const char *data, size_t len);
/* Frees the values parsed so far (the reader's position is kept). */
void json_reset(json_reader *r);
void json_free(json_reader *r);

/* Skips white space; the next byte, or -1 at the end of the input. */
int json_peek(json_reader *r);
/* Parses one value at the current position into the arena; 0 on success,
 * -1 with r->status set. */
int json_parse(json_reader *r, json_value **out);

/* Walking an object or array without keeping it: json_open(r, '{') after
 * which json_next_member gives 1 with the member's key (in the arena; the
 * reader is before its value), 0 at the closing brace, -1 on an error;
 * json_next_item likewise for '[' (1: the reader is before the next item).
 * A walk ends at its closing bracket or at the first error. */
int json_open(json_reader *r, char bracket);
int json_next_member(json_reader *r, const char **key, size_t *key_len);
int json_next_item(json_reader *r);

/* The member KEY of OBJ (the first, where a key repeats), or NULL; NULL
 * also where OBJ is NULL or not an object. */
const json_value *json_get(const json_value *obj, const char *key);
/* The string's bytes, or NULL where V is not a string. */
const char *json_str(const json_value *v);
/* V as a number in *out; 0 where V is not a finite number. */
int json_num(const json_value *v, double *out);

#endif
