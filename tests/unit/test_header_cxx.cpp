// test_header_cxx.cpp - the public headers compile as C++ and their C linkage
// works from C++ code.
#include "tcoll.h"
#include "tcoll_channel.h"
#include "tcoll_channel_device.h"
#include "tcoll_fifo_device.h"
#include "tcoll_trigger.h"

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
    // the trigger encoding, and the device push's host path, as C++
    tc_trigger_t enc = {0, 0}, got = {0, 0};
    tc_trigger_fields_t dec = {};
    if (tc_trigger_encode(TC_TRIG_PUT | TC_TRIG_SIGNAL, 7, 1ull << 39, 5, 4096, &enc) != 0 ||
        tc_trigger_decode(enc, &dec) != 0 || dec.type != 3 || dec.chan != 7 ||
        dec.dst_offset != 1ull << 39 || dec.src_offset != 5 || dec.size != 4096) {
        return 1;
    }
    tc_fifo_t *fifo = nullptr;
    tc_fifo_device_t view;
    if (tc_fifo_create(2, &fifo) != TC_OK || tc_fifo_device_view(fifo, &view) != TC_OK ||
        tc_fifo_device_push(&view, enc) != 0 || tc_fifo_poll(fifo, &got) != 1 ||
        got.fst != enc.fst || got.snd != enc.snd) {
        return 1;
    }
    tc_fifo_pop(fifo);
    tc_fifo_destroy(fifo);
    std::printf("test_header_cxx: ok (tcoll %s)\n", tc_version());
    return 0;
}
