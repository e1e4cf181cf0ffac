/*
 * check.h - assertion macros for tcoll's tests.
 *
 * Each failed check prints both sides, the rank (when known) and file:line,
 * then aborts the process: under mpirun that ends the whole job, so one
 * failing rank cannot leave the others hanging.
 */
#ifndef TC_TEST_CHECK_H
#define TC_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcoll.h"

/* This process's rank: tc_rank() where the program links the engine, else
 * -1 (tc_test.c: the tests of the layers below the engine link none). */
int tc_test_rank(void);

#define TC_CHECK_FAIL(...)                                                                         \
    do {                                                                                           \
        fprintf(stderr, "[rank %d] %s:%d: CHECK FAILED: ", tc_test_rank(), __FILE__, __LINE__);    \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        fflush(stderr);                                                                            \
        abort();                                                                                   \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            TC_CHECK_FAIL("%s", #cond);                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            TC_CHECK_FAIL(__VA_ARGS__);                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_INT_OP(a, op, b)                                                                     \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (!(check_a_ op check_b_)) {                                                             \
            TC_CHECK_FAIL("%s %s %s (%lld vs %lld)", #a, #op, #b, check_a_, check_b_);             \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(a, b) CHECK_INT_OP(a, ==, b)
#define CHECK_NE(a, b) CHECK_INT_OP(a, !=, b)
#define CHECK_LT(a, b) CHECK_INT_OP(a, <, b)
#define CHECK_LE(a, b) CHECK_INT_OP(a, <=, b)
#define CHECK_GT(a, b) CHECK_INT_OP(a, >, b)
#define CHECK_GE(a, b) CHECK_INT_OP(a, >=, b)

/* Checks a tc_status_t and prints both names and tc_last_error(). */
#define CHECK_STATUS(expr, want)                                                                   \
    do {                                                                                           \
        tc_status_t check_s_ = (expr);                                                             \
        tc_status_t check_w_ = (want);                                                             \
        if (check_s_ != check_w_) {                                                                \
            TC_CHECK_FAIL("%s returned %d (%s), want %d (%s); last error: %s", #expr,              \
                          (int)check_s_, tc_status_string(check_s_), (int)check_w_,                \
                          tc_status_string(check_w_), tc_last_error());                            \
        }                                                                                          \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, TC_OK)

#define CHECK_STR_CONTAINS(hay, needle)                                                            \
    do {                                                                                           \
        const char *check_h_ = (hay), *check_n_ = (needle);                                        \
        if (check_h_ == NULL || strstr(check_h_, check_n_) == NULL) {                              \
            TC_CHECK_FAIL("\"%s\" does not contain \"%s\"", check_h_ ? check_h_ : "(null)",        \
                          check_n_);                                                               \
        }                                                                                          \
    } while (0)

/* TEST_TSAN is 1 in a ThreadSanitizer build (tests shrink their loops there). */
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#ifndef TEST_TSAN
#define TEST_TSAN 0
#endif

#endif
