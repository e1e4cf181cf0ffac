/*
 * status.h - internal helpers around tc_status_t: the per-thread last error
 * that tc_last_error() reports, and dtype/op validity checks.
 */
#ifndef TC_UTIL_STATUS_H
#define TC_UTIL_STATUS_H

#include "tcoll.h"

#define TC_ERRMSG_MAX 512

/* Records a formatted message for tc_last_error() in this thread; returns status. */
tc_status_t tc__set_error(tc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tc__clear_error(void);

int tc__dtype_valid(int dtype);
int tc__dtype_is_float(int dtype);
int tc__op_valid(int op);

#endif
