/*
 * bandwidth.c - tcoll-chan-bench's bandwidth rows. A round moves W
 * messages of one size to W distinct places of the peer's receive region
 * and then says "they are there" with the transport's own signal; one-way,
 * rank 0 sends and rank 1 answers with a signal, two-way both send at
 * once. A cell is the median of -r timed runs, and the runs of one size
 * interleave the columns (memcpy, memory channel, port channel, Send/Recv,
 * Put) so a slow spell of a shared machine hits every column alike; each
 * ratio is the median over the runs of that run's ratio. After the runs,
 * one more round per column with fresh data into poisoned destinations has
 * every byte checked. Across nodes (cb_nodes) the memory channel and
 * memcpy columns are not run.
 */
#include "chan_bench.h"

#include <string.h>

#define BW_BUDGET (256ull << 20) /* bytes one direction moves per run, by default */

const cb_xport_info_t cb_xport_info[CB_NXPORT] = {
#define XPORT_INFO(id, col, key, what) {col, key, what},
    CB_XPORT_LIST(XPORT_INFO)
#undef XPORT_INFO
};

const cb_x_info_t cb_x_info[CB_NX] = {
#define X_INFO(id, a, b, col, key) {CB_T_##a, CB_T_##b, col, key},
    CB_X_LIST(X_INFO)
#undef X_INFO
};

static char *send_region(cb_xport_t t)
{
    return t == CB_T_PUT ? cb_st.wbase + CB_WIN_DATA : cb_st.buf;
}

static char *recv_region(cb_xport_t t)
{
    return t == CB_T_PUT ? cb_st.wbase + CB_WIN_DATA + cb_st.span : cb_st.buf + cb_st.span;
}

/* The sending half of a round: W messages of size bytes from the start of
 * the send region to w distinct places of the peer's receive region, then
 * "they are there". Does not wait for the peer. */
static void post_window(cb_xport_t t, uint64_t size, int w)
{
    int j;

    switch (t) {
    case CB_T_MEMCHAN:
        for (j = 0; j < w; j++) {
            cb_chk(tc_memchan_put(cb_st.mch, cb_st.span + (uint64_t)j * size, 0, size),
                   "tc_memchan_put");
        }
        cb_chk(tc_memchan_signal(cb_st.mch), "tc_memchan_signal");
        break;
    case CB_T_PORTCHAN:
        for (j = 0; j < w; j++) {
            cb_chk(tc_portchan_put(cb_st.pch, cb_st.span + (uint64_t)j * size, 0, size),
                   "tc_portchan_put");
        }
        cb_chk(tc_portchan_signal(cb_st.pch), "tc_portchan_signal");
        break;
    case CB_T_SEND:
        for (j = 0; j < w; j++) {
            MPI_Isend(cb_st.buf, (int)size, MPI_BYTE, cb_peer, CB_TAG_DATA, cb_comm,
                      &cb_st.reqs[j]);
        }
        MPI_Waitall(w, cb_st.reqs, MPI_STATUSES_IGNORE);
        break;
    case CB_T_PUT:
        for (j = 0; j < w; j++) {
            MPI_Put(cb_st.wbase + CB_WIN_DATA, (int)size, MPI_BYTE, cb_peer,
                    (MPI_Aint)(CB_WIN_DATA + cb_st.span + (uint64_t)j * size), (int)size, MPI_BYTE,
                    cb_st.win);
        }
        MPI_Win_flush(cb_peer, cb_st.win);
        cb_put_notify();
        break;
    case CB_NXPORT: break;
    }
}

/* The receiving half: returns when the peer's window is in this rank's
 * receive region. */
static void await_window(cb_xport_t t, uint64_t size, int w)
{
    int j;

    switch (t) {
    case CB_T_MEMCHAN: cb_chk(tc_memchan_wait(cb_st.mch, CB_WAIT_NS), "tc_memchan_wait"); break;
    case CB_T_PORTCHAN: cb_chk(tc_portchan_wait(cb_st.pch, CB_WAIT_NS), "tc_portchan_wait"); break;
    case CB_T_SEND:
        for (j = 0; j < w; j++) {
            MPI_Irecv(cb_st.buf + cb_st.span + (uint64_t)j * size, (int)size, MPI_BYTE, cb_peer,
                      CB_TAG_DATA, cb_comm, &cb_st.reqs[j]);
        }
        MPI_Waitall(w, cb_st.reqs, MPI_STATUSES_IGNORE);
        break;
    case CB_T_PUT: cb_put_await(); break;
    case CB_NXPORT: break;
    }
}

/* One round. One-way: rank 0 posts, rank 1 awaits and answers (each
 * transport with its own signal; a 0-byte message for Send/Recv). Two-way:
 * both post, then await the other's (Send/Recv: receives posted first). */
static void bw_round(cb_xport_t t, uint64_t size, int w, int twoway)
{
    int j;

    if (twoway && t == CB_T_SEND) {
        for (j = 0; j < w; j++) {
            MPI_Irecv(cb_st.buf + cb_st.span + (uint64_t)j * size, (int)size, MPI_BYTE, cb_peer,
                      CB_TAG_DATA, cb_comm, &cb_st.reqs[w + j]);
        }
        for (j = 0; j < w; j++) {
            MPI_Isend(cb_st.buf, (int)size, MPI_BYTE, cb_peer, CB_TAG_DATA, cb_comm,
                      &cb_st.reqs[j]);
        }
        MPI_Waitall(2 * w, cb_st.reqs, MPI_STATUSES_IGNORE);
    } else if (twoway) {
        post_window(t, size, w);
        await_window(t, size, w);
    } else if (cb_rank == 0) {
        post_window(t, size, w);
        switch (t) {
        case CB_T_MEMCHAN: cb_chk(tc_memchan_wait(cb_st.mch, CB_WAIT_NS), "tc_memchan_wait"); break;
        case CB_T_PORTCHAN:
            cb_chk(tc_portchan_wait(cb_st.pch, CB_WAIT_NS), "tc_portchan_wait");
            break;
        case CB_T_SEND:
            MPI_Recv(NULL, 0, MPI_BYTE, cb_peer, CB_TAG_ACK, cb_comm, MPI_STATUS_IGNORE);
            break;
        case CB_T_PUT: cb_put_await(); break;
        case CB_NXPORT: break;
        }
    } else {
        await_window(t, size, w);
        switch (t) {
        case CB_T_MEMCHAN: cb_chk(tc_memchan_signal(cb_st.mch), "tc_memchan_signal"); break;
        case CB_T_PORTCHAN: cb_chk(tc_portchan_signal(cb_st.pch), "tc_portchan_signal"); break;
        case CB_T_SEND: MPI_Send(NULL, 0, MPI_BYTE, cb_peer, CB_TAG_ACK, cb_comm); break;
        case CB_T_PUT: cb_put_notify(); break;
        case CB_NXPORT: break;
        }
    }
}

/* W for a size: at most -W, and W x size within the receive region. */
static int window_for(const cb_opts_t *o, uint64_t size)
{
    uint64_t fit = cb_st.span / size;
    return fit < (uint64_t)o->window ? (int)fit : o->window;
}

static int iters_for(const cb_opts_t *o, uint64_t size, int w)
{
    uint64_t it;

    if (o->bw_iters > 0) {
        return o->bw_iters;
    }
    it = BW_BUDGET / (size * (uint64_t)w);
    return it < 2 ? 2 : it > 1000 ? 1000 : (int)it;
}

/* A warm-up of a tenth of the rounds (at least one), untimed. */
static void bw_warmup(cb_xport_t t, uint64_t size, int w, int iters, int twoway)
{
    int i;

    for (i = 0; i < (iters + 9) / 10; i++) {
        bw_round(t, size, w, twoway);
    }
}

/* One timed run of iters rounds: GB/s (1e9 B/s) from the slower rank's
 * time, from a common barrier to the end of its last round. */
static double bw_run(cb_xport_t t, uint64_t size, int w, int iters, int twoway)
{
    uint64_t t0, dt;
    int i;

    MPI_Barrier(cb_comm);
    t0 = cb_now_ns();
    for (i = 0; i < iters; i++) {
        bw_round(t, size, w, twoway);
    }
    dt = cb_now_ns() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_UINT64_T, MPI_MAX, cb_comm);
    return (double)size * w * iters * (twoway ? 2 : 1) / (double)(dt > 0 ? dt : 1);
}

/* One more round of the same pattern with fresh data into poisoned
 * destinations; every received byte is compared. Returns the wrong bytes of
 * both ranks. */
static long long bw_verify(const cb_opts_t *o, cb_xport_t t, uint64_t size, int twoway, int salt)
{
    int w = window_for(o, size), j;
    int sends = twoway || cb_rank == 0, recvs = twoway || cb_rank == 1;
    uint64_t base = ((uint64_t)salt << 48) ^ (size << 8), first = 0, bad;
    long long wrong = 0;

    if (recvs) {
        memset(recv_region(t), 0xee, (size_t)(size * (uint64_t)w));
    }
    if (sends) {
        cb_fill(send_region(t), size, base ^ ((uint64_t)(cb_rank + 1) << 60));
    }
    MPI_Win_sync(cb_st.win); /* the local stores into the window, before any RMA */
    MPI_Barrier(cb_comm);
    bw_round(t, size, w, twoway);
    if (t == CB_T_PORTCHAN) {
        cb_portchan_check();
    }
    if (recvs) {
        for (j = 0; j < w; j++) {
            bad = cb_count_wrong(recv_region(t) + (uint64_t)j * size, size,
                                 base ^ ((uint64_t)(cb_peer + 1) << 60), &first);
            if (bad > 0) {
                fprintf(stderr,
                        "tcoll-chan-bench: rank %d: %s, %s, %llu bytes, message %d of "
                        "%d: %llu bytes wrong, the first at offset %llu\n",
                        cb_rank, cb_xport_info[t].col, twoway ? "two-way" : "one-way",
                        (unsigned long long)size, j + 1, w, (unsigned long long)bad,
                        (unsigned long long)first);
                wrong += (long long)bad;
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, cb_comm);
    return wrong;
}

/* One run of the same W copies of size bytes, memcpy in one thread on rank 0
 * alone (the other rank waits in a barrier): GB/s; 0 on rank 1. */
static double memcpy_run(uint64_t size, int w, int iters)
{
    uint64_t t0, dt;
    double gbs = 0;
    int i, j;

    if (cb_rank == 0) {
        t0 = cb_now_ns();
        for (i = 0; i < iters; i++) {
            for (j = 0; j < w; j++) {
                memcpy(cb_st.cpy_dst + (uint64_t)j * size, cb_st.cpy_src, (size_t)size);
            }
        }
        dt = cb_now_ns() - t0;
        gbs = (double)size * w * iters / (double)(dt > 0 ? dt : 1);
    }
    MPI_Barrier(cb_comm);
    return gbs;
}

/* The median over n runs of a[r] / b[r]. */
static double median_ratio(const double *a, const double *b, int n)
{
    double q[CB_MAX_RUNS];
    int r;

    for (r = 0; r < n; r++) {
        q[r] = b[r] > 0 ? a[r] / b[r] : 0;
    }
    return cb_median(q, n);
}

/* One row: the runs interleave the columns (memcpy, then each transport, in
 * every run), so a slow spell of the machine hits all of them alike rather
 * than one cell; then each transport's checked round. Columns this run does
 * not have (cb_xport_on, cb_memcpy_on) stay 0. */
void cb_measure_size(const cb_opts_t *o, uint64_t size, int twoway, cb_bw_row_t *row)
{
    double v[CB_NXPORT][CB_MAX_RUNS], m[CB_MAX_RUNS];
    int w = window_for(o, size), iters = iters_for(o, size, w), r, t, k;
    int cpy = !twoway && cb_memcpy_on();

    memset(row, 0, sizeof(*row));
    row->bytes = size;
    row->window = w;
    row->iters = iters;
    for (t = 0; t < CB_NXPORT; t++) {
        if (cb_xport_on(t)) {
            bw_warmup((cb_xport_t)t, size, w, iters, twoway);
        }
    }
    for (r = 0; r < o->runs; r++) {
        m[r] = cpy ? memcpy_run(size, w, iters) : 0;
        for (t = 0; t < CB_NXPORT; t++) {
            v[t][r] = cb_xport_on(t) ? bw_run((cb_xport_t)t, size, w, iters, twoway) : 0;
        }
    }
    cb_portchan_check();
    for (k = 0; k < CB_NX; k++) {
        if (cb_xport_on(cb_x_info[k].a) && cb_xport_on(cb_x_info[k].b)) {
            row->x[k] = median_ratio(v[cb_x_info[k].a], v[cb_x_info[k].b], o->runs);
        }
    }
    if (cpy) { /* the ratios first: the medians below sort v and m */
        row->pct_memcpy = 100.0 * median_ratio(v[CB_T_PORTCHAN], m, o->runs);
        row->memcpy_gbs = cb_median(m, o->runs);
    }
    for (t = 0; t < CB_NXPORT; t++) {
        if (cb_xport_on(t)) {
            row->gbs[t] = cb_median(v[t], o->runs);
            row->wrong[t] = bw_verify(o, (cb_xport_t)t, size, twoway, 1 + t + 8 * twoway);
        }
    }
}
