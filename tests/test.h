/*
 * test.h - the infinirt test harness: assertion macros that print both
 * values, and the skip convention.
 *
 * A test is `int test_NAME(void)` returning TEST_OK, or TEST_SKIP (exit code
 * 77, registered as CTest's SKIP_RETURN_CODE) where the hardware it needs is
 * absent.  A failed assertion prints file:line, the expression and both
 * values, and returns TEST_FAIL from the test function.
 */
#ifndef INFINIRT_TEST_H_
#define INFINIRT_TEST_H_

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_OK 0
#define TEST_FAIL 1
#define TEST_SKIP 77

#define TEST_FAILED_(fmt, ...)                                                      \
    do {                                                                            \
        fprintf(stderr, "%s:%d: FAIL: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__); \
        return TEST_FAIL;                                                           \
    } while (0)

#define ASSERT(expr)                                     \
    do {                                                 \
        if (!(expr))                                     \
            TEST_FAILED_("%s", "assertion `" #expr "'"); \
    } while (0)

/* Integer comparisons: both operands are evaluated once, as intmax_t. */
#define ASSERT_CMP_(a, op, b)                                           \
    do {                                                                \
        intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);                \
        if (!(a_ op b_))                                                \
            TEST_FAILED_("%s %s %s (%jd vs %jd)", #a, #op, #b, a_, b_); \
    } while (0)
#define ASSERT_EQ(a, b) ASSERT_CMP_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_CMP_(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_CMP_(a, <, b)
#define ASSERT_LE(a, b) ASSERT_CMP_(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_CMP_(a, >, b)
#define ASSERT_GE(a, b) ASSERT_CMP_(a, >=, b)

#define ASSERT_PTR_EQ(a, b)                                          \
    do {                                                             \
        const void *a_ = (const void *)(a), *b_ = (const void *)(b); \
        if (a_ != b_)                                                \
            TEST_FAILED_("%s == %s (%p vs %p)", #a, #b, a_, b_);     \
    } while (0)
#define ASSERT_PTR_NE(a, b)                                          \
    do {                                                             \
        const void *a_ = (const void *)(a), *b_ = (const void *)(b); \
        if (a_ == b_)                                                \
            TEST_FAILED_("%s != %s (both %p)", #a, #b, a_);          \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                                              \
    do {                                                                                                 \
        const char *a_ = (a), *b_ = (b);                                                                 \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                                             \
            TEST_FAILED_("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)
#define ASSERT_STR_CONTAINS(hay, needle)                                                     \
    do {                                                                                     \
        const char *h_ = (hay), *n_ = (needle);                                              \
        if (h_ == NULL || strstr(h_, n_) == NULL)                                            \
            TEST_FAILED_("%s contains \"%s\" (it is \"%s\")", #hay, n_, h_ ? h_ : "(null)"); \
    } while (0)

/* Byte-compare two buffers; on mismatch print the first differing offset. */
#define ASSERT_MEM_EQ(a, b, n)                                                                                 \
    do {                                                                                                       \
        const unsigned char *a_ = (const unsigned char *)(a), *b_ = (const unsigned char *)(b);                \
        size_t n_ = (n);                                                                                       \
        for (size_t i_ = 0; i_ < n_; i_++)                                                                     \
            if (a_[i_] != b_[i_])                                                                              \
                TEST_FAILED_("%s and %s differ at byte %zu of %zu (0x%02x vs 0x%02x)", #a, #b, i_, n_, a_[i_], \
                             b_[i_]);                                                                          \
    } while (0)

/* An infinirt call that must succeed; prints the status name if not. */
#define ASSERT_OK(call)                                                                                 \
    do {                                                                                                \
        int st_ = (int)(call);                                                                          \
        if (st_ != 0)                                                                                   \
            TEST_FAILED_("%s returned %d (%s)", #call, st_, infinirtGetErrorName((infiniStatus_t)st_)); \
    } while (0)
/* An infinirt call that must return a given status. */
#define ASSERT_STATUS(call, want)                                                                                    \
    do {                                                                                                             \
        int st_ = (int)(call), w_ = (int)(want);                                                                     \
        if (st_ != w_)                                                                                               \
            TEST_FAILED_("%s returned %d (%s), want %d (%s)", #call, st_, infinirtGetErrorName((infiniStatus_t)st_), \
                         w_, infinirtGetErrorName((infiniStatus_t)w_));                                              \
    } while (0)

/* Propagate a sub-check's failure or skip. */
#define CHECK(call)        \
    do {                   \
        int r_ = (call);   \
        if (r_ != TEST_OK) \
            return r_;     \
    } while (0)

#endif /* INFINIRT_TEST_H_ */
