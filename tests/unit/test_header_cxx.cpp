// test_header_cxx.cpp - the public header compiles as C++ and its C linkage
// works from C++ code.
#include "tcoll.h"

#include <cstdio>
#include <cstring>

int main()
{
    float x = 1.0f;
    tc_tensor_t t = {};
    t.data = &x;
    t.dtype = TC_FLOAT32;
    tc_request_t *req = nullptr;
    // before tc_init every collective fails with TC_ERR_STATE
    if (tc_allreduce("x", &t, &x, TC_SUM, &req) != TC_ERR_STATE || req != nullptr) {
        std::printf("unexpected status\n");
        return 1;
    }
    tc_opts_t o = TC_OPTS_INIT; // the options initializer is valid C++ too
    o.postscale = 0.5;
    if (o.size != sizeof(tc_opts_t) || o.prescale != 1.0 ||
        tc_allreduce_ex("x", &t, &x, TC_SUM, &o, &req) != TC_ERR_STATE || req != nullptr) {
        return 1;
    }
    if (std::strcmp(tc_status_string(TC_OK), "success") != 0 || tc_dtype_size(TC_FLOAT64) != 8) {
        return 1;
    }
    tc_trigger_t trig = {0, 0};
    (void)trig;
    std::printf("test_header_cxx: ok (tcoll %s)\n", tc_version());
    return 0;
}
