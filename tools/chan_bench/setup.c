/*
 * setup.c - the two sides' memory and channels for tcoll-chan-bench
 * (cb_state_t in chan_bench.h says what lies where): the channel context,
 * the registered regions and their handles, the semaphores, the memory and
 * port channels, the MPI window locked for the whole run and rank 0's
 * memcpy buffers; their teardown; which rows and columns the run has
 * (across nodes: no memory channel, no memcpy reference); and the MPI
 * notification (an MPI_Accumulate into the peer's counter, polled with
 * MPI_Fetch_and_op) that the Put rows use as their signal. cb_setup and
 * cb_teardown are collective.
 */
#include "chan_bench.h"

#include <stdlib.h>
#include <string.h>

#define SPAN_CAP (64ull << 20) /* receive region: a window of messages fits, up to this */

cb_state_t cb_st;

void cb_setup(const cb_opts_t *o)
{
    tc_chan_opts_t co = TC_CHAN_OPTS_INIT;
    MPI_Aint wbytes;

    /* Room for a whole window of the largest size, up to 64 MiB (so W
     * shrinks only for sizes above 64 MiB / W), and at least that size. */
    cb_st.span = (uint64_t)o->window * o->max_bytes;
    cb_st.span = cb_st.span < SPAN_CAP ? cb_st.span : SPAN_CAP;
    cb_st.span = cb_st.span > o->max_bytes ? cb_st.span : o->max_bytes;
    cb_st.span = (cb_st.span + CB_PAGE - 1) / CB_PAGE * CB_PAGE;
    co.spin_ns = o->spin_ns;
    cb_chk(tc_chan_ctx_create(&co, &cb_st.ctx), "tc_chan_ctx_create");
    cb_chk(tc_mem_alloc(2 * cb_st.span, (void **)&cb_st.buf), "tc_mem_alloc");
    memset(cb_st.buf, 0, 2 * cb_st.span);
    cb_chk(tc_mem_register(cb_st.ctx, cb_st.buf, 2 * cb_st.span, &cb_st.mem), "tc_mem_register");
    cb_chk(tc_mem_exchange(cb_st.ctx, "chan-bench", cb_st.mem, cb_st.rmems), "tc_mem_exchange");
    cb_chk(tc_sem_create(cb_st.ctx, cb_peer, 1, &cb_st.psem), "tc_sem_create");
    if (!cb_nodes) { /* the peer's memory is mapped only within a node */
        cb_chk(tc_sem_create(cb_st.ctx, cb_peer, 0, &cb_st.msem), "tc_sem_create");
        cb_chk(tc_memchan_create(cb_st.msem, cb_st.mem, cb_st.rmems[cb_peer], &cb_st.mch),
               "tc_memchan_create");
    }
    cb_chk(tc_portchan_create(cb_st.psem, cb_st.mem, cb_st.rmems[cb_peer], &cb_st.pch),
           "tc_portchan_create");

    wbytes = (MPI_Aint)(CB_WIN_DATA + 2 * cb_st.span);
    if (MPI_Win_allocate(wbytes, 1, MPI_INFO_NULL, cb_comm, &cb_st.wbase, &cb_st.win) !=
        MPI_SUCCESS) {
        cb_die("MPI_Win_allocate of %lld bytes failed", (long long)wbytes);
    }
    memset(cb_st.wbase, 0, (size_t)wbytes);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, cb_st.win);
    MPI_Win_sync(cb_st.win);
    cb_st.reqs = cb_alloc(sizeof(MPI_Request) * 2 * CB_MAX_WINDOW, "MPI requests");
    if (cb_rank == 0 && cb_memcpy_on()) {
        cb_st.cpy_src = cb_alloc(cb_st.span, "the memcpy source");
        cb_st.cpy_dst = cb_alloc(cb_st.span, "the memcpy destination");
        memset(cb_st.cpy_src, 1, cb_st.span);
        memset(cb_st.cpy_dst, 2, cb_st.span);
    }
    MPI_Barrier(cb_comm);
}

void cb_teardown(void)
{
    MPI_Barrier(cb_comm); /* nobody reaches into the other's memory any more */
    MPI_Win_unlock_all(cb_st.win);
    MPI_Win_free(&cb_st.win);
    tc_memchan_destroy(cb_st.mch); /* NULL across nodes: ignored, as msem's */
    cb_chk(tc_portchan_destroy(cb_st.pch), "tc_portchan_destroy");
    tc_sem_destroy(cb_st.msem);
    tc_sem_destroy(cb_st.psem);
    tc_mem_close(cb_st.rmems[0]);
    tc_mem_close(cb_st.rmems[1]);
    tc_mem_deregister(cb_st.mem);
    cb_chk(tc_chan_ctx_destroy(cb_st.ctx), "tc_chan_ctx_destroy");
    cb_chk(tc_mem_free(cb_st.buf), "tc_mem_free");
    free(cb_st.reqs);
    free(cb_st.cpy_src);
    free(cb_st.cpy_dst);
}

void cb_portchan_check(void)
{
    cb_chk(tc_portchan_flush(cb_st.pch, CB_WAIT_NS), "tc_portchan_flush");
}

int cb_lat_on(int k)
{
    return !cb_nodes || (k != CB_L_MEM_SIG && k != CB_L_MEM_PUT);
}

int cb_xport_on(int t)
{
    return !cb_nodes || t != CB_T_MEMCHAN;
}

int cb_memcpy_on(void)
{
    return !cb_nodes;
}

void cb_put_notify(void)
{
    int64_t one = 1;

    MPI_Accumulate(&one, 1, MPI_INT64_T, cb_peer, 0, 1, MPI_INT64_T, MPI_SUM, cb_st.win);
    MPI_Win_flush(cb_peer, cb_st.win);
}

void cb_put_await(void)
{
    int64_t v = 0, dummy = 0;

    cb_st.notified++;
    do {
        MPI_Fetch_and_op(&dummy, &v, MPI_INT64_T, cb_rank, 0, MPI_NO_OP, cb_st.win);
        MPI_Win_flush(cb_rank, cb_st.win);
    } while (v < cb_st.notified);
    MPI_Win_sync(cb_st.win);
}
