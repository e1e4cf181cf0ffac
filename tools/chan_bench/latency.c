/*
 * latency.c - tcoll-chan-bench's ping-pong rows: rank 0 sends, rank 1
 * answers, rank 0 times each round trip; one-way is half of it. Each round
 * carries 8 bytes that only the round and the sender make (rows with a 0 B
 * payload carry none), and the receiver checks them: a wrong round is told
 * on stderr and counted, never timed away. The rows, their names and
 * payloads come from CB_LAT_LIST (chan_bench.h).
 */
#include "chan_bench.h"

#include <string.h>

const cb_lat_info_t cb_lat_info[CB_NLAT] = {
#define LAT_INFO(id, name, bytes, mpi) {name, bytes, mpi},
    CB_LAT_LIST(LAT_INFO)
#undef LAT_INFO
};

/* The 8 bytes rank r sends in round i. */
static uint64_t lat_key(int i, int r)
{
    return cb_mix64(((uint64_t)(unsigned)i << 1) | (uint64_t)r);
}

static void lat_send(cb_lat_t k, uint64_t v)
{
    char *wsend = cb_st.wbase + CB_WIN_DATA;

    switch (k) {
    case CB_L_MEM_SIG: cb_chk(tc_memchan_signal(cb_st.mch), "tc_memchan_signal"); break;
    case CB_L_MEM_PUT:
        memcpy(cb_st.buf, &v, 8);
        cb_chk(tc_memchan_put_with_signal(cb_st.mch, cb_st.span, 0, 8),
               "tc_memchan_put_with_signal");
        break;
    case CB_L_PORT_SIG: cb_chk(tc_portchan_signal(cb_st.pch), "tc_portchan_signal"); break;
    case CB_L_PORT_PUT:
        /* The source may be rewritten: the peer's answer to the previous
         * round came after it saw that round's put complete. */
        memcpy(cb_st.buf, &v, 8);
        cb_chk(tc_portchan_put_with_signal(cb_st.pch, cb_st.span, 0, 8),
               "tc_portchan_put_with_signal");
        break;
    case CB_L_SEND0: MPI_Send(cb_st.buf, 0, MPI_BYTE, cb_peer, CB_TAG_LAT, cb_comm); break;
    case CB_L_SEND8:
        memcpy(cb_st.buf, &v, 8);
        MPI_Send(cb_st.buf, 8, MPI_BYTE, cb_peer, CB_TAG_LAT, cb_comm);
        break;
    case CB_L_NOTIFY: cb_put_notify(); break;
    case CB_L_PUT8:
        memcpy(wsend, &v, 8);
        MPI_Put(wsend, 8, MPI_BYTE, cb_peer, (MPI_Aint)(CB_WIN_DATA + cb_st.span), 8, MPI_BYTE,
                cb_st.win);
        MPI_Win_flush(cb_peer, cb_st.win);
        cb_put_notify();
        break;
    case CB_NLAT: break;
    }
}

/* Waits for the peer's round; 1 when its 8 bytes are not want (the first
 * such round of a row is told on stderr). */
static int lat_recv(cb_lat_t k, uint64_t want, int round, int *told)
{
    uint64_t got = want;

    switch (k) {
    case CB_L_MEM_SIG: cb_chk(tc_memchan_wait(cb_st.mch, CB_WAIT_NS), "tc_memchan_wait"); break;
    case CB_L_MEM_PUT:
        cb_chk(tc_memchan_wait(cb_st.mch, CB_WAIT_NS), "tc_memchan_wait");
        memcpy(&got, cb_st.buf + cb_st.span, 8);
        break;
    case CB_L_PORT_SIG: cb_chk(tc_portchan_wait(cb_st.pch, CB_WAIT_NS), "tc_portchan_wait"); break;
    case CB_L_PORT_PUT:
        cb_chk(tc_portchan_wait(cb_st.pch, CB_WAIT_NS), "tc_portchan_wait");
        memcpy(&got, cb_st.buf + cb_st.span, 8);
        break;
    case CB_L_SEND0:
        MPI_Recv(cb_st.buf + cb_st.span, 0, MPI_BYTE, cb_peer, CB_TAG_LAT, cb_comm,
                 MPI_STATUS_IGNORE);
        break;
    case CB_L_SEND8:
        MPI_Recv(cb_st.buf + cb_st.span, 8, MPI_BYTE, cb_peer, CB_TAG_LAT, cb_comm,
                 MPI_STATUS_IGNORE);
        memcpy(&got, cb_st.buf + cb_st.span, 8);
        break;
    case CB_L_NOTIFY: cb_put_await(); break;
    case CB_L_PUT8:
        cb_put_await();
        memcpy(&got, cb_st.wbase + CB_WIN_DATA + cb_st.span, 8);
        break;
    case CB_NLAT: break;
    }
    if (got != want && !*told) {
        *told = 1;
        fprintf(stderr,
                "tcoll-chan-bench: rank %d: %s, round %d: received 0x%016llx, sent "
                "0x%016llx\n",
                cb_rank, cb_lat_info[k].name, round, (unsigned long long)got,
                (unsigned long long)want);
    }
    return got != want;
}

cb_lat_row_t cb_run_latency(const cb_opts_t *o, cb_lat_t k, uint64_t *rtt)
{
    int i, n = o->lat_warmup + o->lat_iters, told = 0;
    long long bad = 0;
    cb_lat_row_t row;
    uint64_t t0;

    memset(&row, 0, sizeof(row));
    MPI_Barrier(cb_comm);
    for (i = 0; i < n; i++) {
        if (cb_rank == 0) {
            t0 = cb_now_ns();
            lat_send(k, lat_key(i, 0));
            bad += lat_recv(k, lat_key(i, 1), i, &told);
            if (i >= o->lat_warmup) {
                rtt[i - o->lat_warmup] = cb_now_ns() - t0;
            }
        } else {
            bad += lat_recv(k, lat_key(i, 0), i, &told);
            lat_send(k, lat_key(i, 1));
        }
    }
    if (k == CB_L_PORT_SIG || k == CB_L_PORT_PUT) {
        cb_portchan_check();
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, cb_comm);
    row.wrong = bad;
    if (cb_rank == 0) {
        row.p50_us = (double)cb_quantile_u64(rtt, (size_t)o->lat_iters, 0.50) / 2e3;
        row.p99_us = (double)cb_quantile_u64(rtt, (size_t)o->lat_iters, 0.99) / 2e3;
    }
    return row;
}
