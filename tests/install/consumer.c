/*
 * consumer.c - a program built against an installed tcoll (CMake package or
 * pkg-config), knowing nothing of MPI: one allreduce and a clean shutdown.
 * Every public header is included, so each must be installed and compile
 * as a strict C11 user's.
 */
#include <stdio.h>
#include <tcoll.h>
#include <tcoll_channel.h>
#include <tcoll_channel_device.h>
#include <tcoll_fifo_device.h>
#include <tcoll_trigger.h>

int main(void)
{
    double x = 1.0;
    tc_tensor_t t = {&x, TC_FLOAT64, 0, {0}};
    tc_request_t *req;
    tc_status_t st;

    if ((st = tc_init()) != TC_OK) {
        fprintf(stderr, "tc_init: %s: %s\n", tc_status_string(st), tc_last_error());
        return 1;
    }
    if ((st = tc_allreduce("x", &t, &x, TC_SUM, &req)) != TC_OK || (st = tc_wait(req)) != TC_OK) {
        fprintf(stderr, "allreduce: %s: %s\n", tc_status_string(st), tc_last_error());
        return 1;
    }
    tc_request_free(req);
    if (x != (double)tc_size()) {
        fprintf(stderr, "rank %d: got %g, want %d\n", tc_rank(), x, tc_size());
        return 1;
    }
    if (tc_rank() == 0) {
        printf("consumer: tcoll %s, %d ranks, allreduce ok\n", tc_version(), tc_size());
    }
    return tc_shutdown() == TC_OK ? 0 : 1;
}
