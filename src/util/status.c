/*
 * status.c - status strings, dtype/op names and the per-thread last error.
 *
 * The status strings and the dtype names and sizes each come from one X-macro
 * list so they cannot drift from the enum order; static assertions check the
 * counts. Never allocates.
 */
#define _GNU_SOURCE
#include "util/status.h"

#include <stdarg.h>
#include <stdio.h>

#define TC_STATUS_MAP(X)                                                                           \
    X(TC_OK, "success")                                                                            \
    X(TC_ERR_ARG, "invalid argument")                                                              \
    X(TC_ERR_STATE, "invalid state")                                                               \
    X(TC_ERR_MISMATCH, "ranks disagree on the tensor")                                             \
    X(TC_ERR_DUPLICATE, "name already in flight")                                                  \
    X(TC_ERR_SHUTDOWN, "tcoll was shut down")                                                      \
    X(TC_ERR_TRANSPORT, "transport failure")                                                       \
    X(TC_ERR_NOMEM, "out of memory")                                                               \
    X(TC_ERR_TIMEOUT, "timed out")

#define TC_STATUS_STR(code, text) [code] = text,
static const char *const status_strings[] = {TC_STATUS_MAP(TC_STATUS_STR)};
#define TC_STATUS_ONE(code, text) +1
_Static_assert(sizeof(status_strings) / sizeof(status_strings[0]) == 0 TC_STATUS_MAP(TC_STATUS_ONE),
               "status map has a gap");
_Static_assert(TC_ERR_TIMEOUT + 1 == 0 TC_STATUS_MAP(TC_STATUS_ONE), "status map out of date");

const char *tc_status_string(tc_status_t status)
{
    if ((unsigned)status >= sizeof(status_strings) / sizeof(status_strings[0])) {
        return "unknown status";
    }
    return status_strings[status];
}

#define TC_DTYPE_MAP(X)                                                                            \
    X(TC_UINT8, "uint8", 1)                                                                        \
    X(TC_INT8, "int8", 1)                                                                          \
    X(TC_INT32, "int32", 4)                                                                        \
    X(TC_INT64, "int64", 8)                                                                        \
    X(TC_FLOAT16, "float16", 2)                                                                    \
    X(TC_BFLOAT16, "bfloat16", 2)                                                                  \
    X(TC_FLOAT32, "float32", 4)                                                                    \
    X(TC_FLOAT64, "float64", 8)                                                                    \
    X(TC_INT16, "int16", 2)                                                                        \
    X(TC_UINT16, "uint16", 2)

#define TC_DTYPE_NAME(code, text, size) [code] = text,
#define TC_DTYPE_SIZE(code, text, size) [code] = size,
static const char *const dtype_names[] = {TC_DTYPE_MAP(TC_DTYPE_NAME)};
static const size_t dtype_sizes[] = {TC_DTYPE_MAP(TC_DTYPE_SIZE)};
#define TC_DTYPE_ONE(code, text, size) +1
_Static_assert(sizeof(dtype_sizes) / sizeof(dtype_sizes[0]) == 0 TC_DTYPE_MAP(TC_DTYPE_ONE),
               "dtype map has a gap");
_Static_assert(TC_UINT16 + 1 == 0 TC_DTYPE_MAP(TC_DTYPE_ONE), "dtype map out of date");

int tc__dtype_valid(int dtype)
{
    return dtype >= 0 && dtype < (int)(sizeof(dtype_sizes) / sizeof(dtype_sizes[0]));
}

int tc__dtype_is_float(int dtype)
{
    return dtype == TC_FLOAT16 || dtype == TC_BFLOAT16 || dtype == TC_FLOAT32 ||
           dtype == TC_FLOAT64;
}

size_t tc_dtype_size(tc_dtype_t dtype)
{
    return tc__dtype_valid((int)dtype) ? dtype_sizes[dtype] : 0;
}

const char *tc_dtype_name(tc_dtype_t dtype)
{
    return tc__dtype_valid((int)dtype) ? dtype_names[dtype] : "?";
}

static const char *const op_names[] = {
    [TC_SUM] = "sum", [TC_AVG] = "avg", [TC_MIN] = "min", [TC_MAX] = "max", [TC_PROD] = "prod",
};

int tc__op_valid(int op)
{
    return op >= 0 && op < (int)(sizeof(op_names) / sizeof(op_names[0]));
}

const char *tc_op_name(tc_op_t op)
{
    return tc__op_valid((int)op) ? op_names[op] : "?";
}

/* One message per thread; tc_last_error() returns it. */
static _Thread_local char last_error[TC_ERRMSG_MAX];

const char *tc_last_error(void)
{
    return last_error;
}

void tc__clear_error(void)
{
    last_error[0] = '\0';
}

tc_status_t tc__set_error(tc_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return status;
}

#define TC_STR2(x) #x
#define TC_STR(x) TC_STR2(x)
const char *tc_version(void)
{
    return TC_STR(TCOLL_VERSION_MAJOR) "." TC_STR(TCOLL_VERSION_MINOR) "." TC_STR(
        TCOLL_VERSION_PATCH);
}
