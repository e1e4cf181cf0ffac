/*
 * remote_internal.h - the messages of port channels and semaphores between
 * nodes (remote.c sends, remote_recv.c receives; both on the proxy thread)
 * and a context's MPI state for them.
 */
#ifndef TC_CHANNEL_REMOTE_INTERNAL_H
#define TC_CHANNEL_REMOTE_INTERNAL_H

#include "channel/channel_internal.h"

#include <mpi.h>
#include <stddef.h>

#define NET_MAGIC 0x4843544eu /* "NTCH" */
#define NET_INLINE 8192u      /* puts up to this size ride in the header message */
#define NET_RING 8            /* header receives kept posted */
#define NET_CHUNK (1u << 30)  /* bytes per data message */
#define NET_MAX_CHUNKS 4      /* a trigger's size is below 2^32 */
#define NET_MAX_SENDS 4096    /* sends in flight before the proxy waits for some */
#define NET_MSG_MAX 200       /* an acknowledgement's failure text */
#define NET_CHECK_NS 100000000ull

enum { NET_OP = 1, NET_SEM = 2, NET_ACK = 3, NET_HANDLE = 4 };

typedef struct {
    uint32_t magic;
    uint16_t kind;   /* NET_OP, NET_SEM, NET_ACK */
    uint16_t type;   /* NET_OP: TC_TRIG_* bits */
    uint32_t chan;   /* the sender's channel (NET_ACK: the channel acknowledged) */
    uint32_t sem_id; /* NET_OP with SIGNAL, NET_SEM; NET_HANDLE: the tag */
    uint64_t mem_id; /* NET_OP with PUT: the destination's registration */
    uint64_t dst_off;
    uint64_t size;
    uint64_t seq;     /* NET_OP with FLUSH, NET_ACK: the flush's number */
    int32_t status;   /* NET_ACK: TC_OK or the first failure (text follows) */
    uint32_t nfailed; /* NET_ACK: operations that failed */
} net_hdr_t;

#define NET_BUF (sizeof(net_hdr_t) + NET_INLINE)

/* An operation received from a sender, waiting for the ones before it. */
typedef struct net_item {
    struct net_item *next;
    MPI_Request req[NET_MAX_CHUNKS];
    int nreq;
    char *scratch;    /* data received to be thrown away */
    char *copy, *dst; /* inline bytes to copy at completion */
    uint64_t len;
    int to_device;       /* dst is CUDA device memory: copy (or data) goes there at completion */
    tc_sem_line_t *line; /* to signal at completion */
    int ack;             /* acknowledge flush seq of channel chan */
    uint32_t chan;
    uint64_t seq;
} net_item_t;

/* What this rank knows of one sender. */
typedef struct {
    net_item_t *head, *tail;
    tc_status_t err; /* the first failure since the last acknowledgement */
    uint32_t err_chan;
    uint32_t nfailed;
    char err_msg[NET_MSG_MAX];
} net_src_t;

struct tc_chan_net {
    MPI_Comm comm;
    int tag_ctrl, tag_data;
    int posted;
    MPI_Request hreq[NET_RING];
    char *hbuf[NET_RING];
    int hnext;
    net_src_t *src; /* [size] */
    int queued;     /* items in the queues */
    /* sends in flight */
    MPI_Request *sreq;
    void **sbuf;
    int *speer;
    int *sidx; /* for MPI_Testsome */
    int ns, cap;
    int *out_to; /* [size]: sends in flight to each rank */
    int counted; /* tc__engine_chan_use(1) was called */
};

/* remote_send.c: sends hdr and payload (len bytes, may be 0) as one CTRL
 * message to peer. 0, or an MPI error code (-1: out of memory). */
int tc__net_send_ctrl(tc_chan_net_t *n, int peer, const net_hdr_t *hdr, const void *payload,
                      size_t len);
/* remote_send.c: completes the sends that are done (their buffers freed):
 * how many, or -1 when MPI fails to test them. */
int tc__net_sends_test(tc_chan_net_t *n);
/* remote_send.c: keeps send req to peer (buf freed at its completion). 0. */
int tc__net_sends_add(tc_chan_net_t *n, MPI_Request req, void *buf, int peer);
/* remote_send.c: what tc__net_send_ctrl's error code means. */
void tc__net_describe(int rc, char *buf, size_t len);
/* remote_recv.c: frees a received operation (not its requests). */
void tc__net_item_free(net_item_t *it);

#endif
