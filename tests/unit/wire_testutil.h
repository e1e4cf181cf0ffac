/*
 * wire_testutil.h - building requests (wire/wire.h) by hand, for the unit
 * tests of the structures that take them: the coordinator's table and the
 * response cache.
 */
#ifndef TC_TEST_WIRE_TESTUTIL_H
#define TC_TEST_WIRE_TESTUTIL_H

#include <stdint.h>
#include <string.h>

#include "wire/wire.h"

/* A request for the first name_len bytes of name (which need not end
 * there, like a decoded name), with shape [d0, d1] cut to ndim dims. */
static inline tc_wire_request_t mk_n(const char *name, uint32_t name_len, int kind, int dtype,
                                     int op, int root, int ndim, int64_t d0, int64_t d1)
{
    tc_wire_request_t r;
    memset(&r, 0, sizeof(r));
    r.name = name;
    r.name_len = name_len;
    r.kind = (uint8_t)kind;
    r.dtype = (uint8_t)dtype;
    r.op = (uint8_t)op;
    r.root = root;
    r.ndim = (uint8_t)ndim;
    r.shape[0] = d0;
    r.shape[1] = d1;
    return r;
}

/* The same for a whole NUL-terminated name. */
static inline tc_wire_request_t mk(const char *name, int kind, int dtype, int op, int root,
                                   int ndim, int64_t d0, int64_t d1)
{
    return mk_n(name, (uint32_t)strlen(name), kind, dtype, op, root, ndim, d0, d1);
}

#endif
