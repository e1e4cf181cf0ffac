/*
 * channel_internal.h - the channel layer's objects (tcoll_channel.h): a
 * context per group of channels (its proxy, its semaphore area, what it
 * knows of every rank), registered memory, semaphores, memory and port
 * channels. Shared by the files of src/channel/; nothing here touches MPI or
 * the engine's internals (only engine_info.h and the public collectives).
 *
 * The files call downward only, top first: context.c (a context's life) >
 * portchan.c > remote.c (operations to other nodes) > remote_recv.c (what
 * comes from them) > remote_send.c; mailbox.c > memchan.c, regmem.c >
 * semaphore.c; and at the bottom device.c (handles for GPU
 * kernels, and what they map), portchan_err.c and peers.c
 * (whether a peer is gone; the context's collectives). The shared
 * allocator (tc_mem_alloc) is the transport layer's (transport/shmem.h).
 */
#ifndef TC_CHANNEL_INTERNAL_H
#define TC_CHANNEL_INTERNAL_H

#include "cuda/cuda.h"
#include "transport/shmem.h"
#include "tcoll.h"
#include "tcoll_channel.h"
#include "tcoll_trigger.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TC_CHAN_LINE 64
#define TC_CHAN_DEFAULT_SEM_IDS 64u
#define TC_CHAN_MAX_SEM_IDS 4096u
#define TC_CHAN_DEFAULT_SPIN_NS 20000
#define TC_CHAN_NCHANS (TC_TRIG_MAX_CHAN + 1u)
/* tc__chan_device_setup: a context without TC_CHAN_CUDA. */
#define TC_CHAN_NO_DEVICE (-2)
/* How long a wait for a message from another node keeps the proxy polling
 * (tc__proxy_kick) before it parks with a time limit again. */
#define TC_CHAN_KICK_NS 10000000ull
/* How often a parked waiter looks whether its peer still runs. */
#define TC_CHAN_PEER_CHECK_NS 100000000ull

/* ------------------------------------------------------------------------ */
/* A semaphore's counter: one line of a rank's semaphore area                */
/* ------------------------------------------------------------------------ */

/* Written by the peer (signals), read by the owner (waits). */
typedef struct {
    _Atomic uint64_t value;   /* signals received */
    _Atomic uint32_t seq;     /* futex word: moves when a signal finds waiters */
    _Atomic uint32_t waiters; /* threads parked (or about to park) on seq */
    _Atomic uint32_t device;  /* 1: a device handle may signal it (no futex wake) */
    char pad[TC_CHAN_LINE - 20];
} tc_sem_line_t;

_Static_assert(sizeof(tc_sem_line_t) == TC_CHAN_LINE, "a semaphore line is one cache line");

/* Adds 1 to a counter and wakes its parked waiters (any process). */
void tc__sem_line_signal(tc_sem_line_t *line);

/* ------------------------------------------------------------------------ */
/* Mailboxes for handles sent pairwise (mailbox.c)                           */
/* ------------------------------------------------------------------------ */

#define TC_CHAN_MBOX_SLOTS 16u

enum { TC_MBOX_FREE = 0, TC_MBOX_WRITING = 1, TC_MBOX_FULL = 2, TC_MBOX_READING = 3 };

/* One handle on its way: written by the sender (same node) or this rank's
 * proxy (another node), taken by the receiver. */
typedef struct {
    _Atomic uint32_t state; /* TC_MBOX_* */
    uint32_t tag;
    uint64_t seq; /* the sender's count: equal tags are taken in sending order */
    unsigned char bytes[TC_MEM_HANDLE_BYTES];
    char pad[256 - 16 - TC_MEM_HANDLE_BYTES];
} tc_mbox_slot_t;

/* A rank's mailbox for one sender, after its semaphore lines in its area. */
typedef struct {
    tc_sem_line_t bell; /* signalled once per handle put in */
    tc_mbox_slot_t slot[TC_CHAN_MBOX_SLOTS];
} tc_mbox_t;

_Static_assert(sizeof(tc_mbox_slot_t) == 256, "a mailbox slot is four cache lines");

/* A handle held in this process: to send to another node, or received from one. */
typedef struct tc_mbox_msg {
    struct tc_mbox_msg *next;
    int peer;
    uint32_t tag;
    unsigned char bytes[TC_MEM_HANDLE_BYTES];
} tc_mbox_msg_t;

/* ------------------------------------------------------------------------ */
/* The context                                                               */
/* ------------------------------------------------------------------------ */

typedef struct {
    pid_t pid;
    int node_first;      /* engine_info.h; equal values: the same node */
    int same_node;       /* with this rank */
    int same_host;       /* the same machine (a pretend node may not be) */
    int pidfd;           /* to see it exit (same machine; -1: none) */
    tc_sem_line_t *area; /* its semaphore area, mapped (same node), else NULL */
    uint64_t area_len;
    char *area_dev;  /* that area in the device's address space (TC_CHAN_CUDA), else NULL */
    tc_mbox_t *mbox; /* the mailboxes in that area (same node), else NULL */
} tc_chan_peer_t;

struct tc_chan_ctx {
    int rank, size;
    uint32_t index;   /* this process's index-th context: the same on every rank */
    uint64_t key;     /* rank 0's random key: handles of another context are refused */
    uint32_t sem_ids; /* semaphore ids per peer */
    int64_t spin_ns;
    tc_chan_peer_t *peers;
    tc_sem_line_t *area; /* this rank's semaphore area: [peer * sem_ids + id], */
    uint64_t area_len;   /* then its mailboxes: [sender] */
    tc_mbox_t *mbox;
    _Atomic uint64_t *mbox_seq; /* [size]: handles sent to each rank */
    tc_proxy_t *proxy;
    tc_fifo_t *fifo;
    struct tc_chan_net *net; /* remote.c: MPI, when the job spans nodes; else NULL */

    pthread_mutex_t mu;       /* the tables below */
    unsigned char *sem_taken; /* [size * sem_ids]: a semaphore holds (peer, id) */
    uint64_t *sem_consumed;   /* [size * sem_ids]: signals its waits consumed */
    uint64_t next_mem_id;
    struct tc_portchan *_Atomic chans[TC_CHAN_NCHANS]; /* by id: NULL = free */
    struct tc_mem *mems;                               /* registrations, a list */
    tc_mbox_msg_t *outbox, *inbox; /* handles to other nodes / from them (oldest first) */
    _Atomic uint64_t bad_triggers; /* for no open channel */

    /* Device side (device.c). device: the CUDA device of a TC_CHAN_CUDA
     * context, else -1 (device handles then hold host addresses). */
    int device;
    _Atomic uint64_t *fails;     /* [TC_CHAN_NCHANS]: failed operations per channel id */
    uint64_t *fails_dev;         /* the same, as the device sees it */
    struct tc_chan_devmap *maps; /* this rank's memory mapped for the device (under mu) */
    tc_cuda_copier_t *copier;    /* the proxy thread's copies of device memory */
    char *bounce;                /* the proxy thread's staging buffer (TC_CHAN_BOUNCE bytes) */
    int bounce_pinned;           /* from tc__cuda_host_alloc (else malloc) */
};

/* peers.c: collectives of every rank through the engine, under reserved names; on
 * failure why holds the reason. tc__chan_gather: len bytes from each rank,
 * *out_p a malloc'd copy of size * len bytes. tc__chan_all_ok: *all_p 1
 * when every rank passed ok != 0. */
tc_status_t tc__chan_gather(const char *name, const void *mine, size_t len, void **out_p, char *why,
                            size_t why_len);
tc_status_t tc__chan_all_ok(const char *name, int ok, int *all_p, char *why, size_t why_len);

/* peers.c: whether rank r is lost: its process has exited (seen on this machine),
 * or, for a rank on another machine, tcoll has stopped on a failure. 0 if
 * not known to be. */
int tc__chan_peer_gone(const tc_chan_ctx_t *ctx, int r);
/* Why tc__chan_peer_gone said so, for messages: "has exited", ... */
const char *tc__chan_gone_why(const tc_chan_ctx_t *ctx, int r);

/* Triggers of tcoll's own, with the reserved bit set (tcoll_trigger.h's
 * decoder refuses them): fst holds the bit, the operation (bits 56-62) and
 * a rank (bits 0-31); snd an id (bits 0-31) and the low 32 bits of the
 * context's key (bits 32-63), so that a stray trigger a producer pushed
 * into the FIFO (tc_chan_ctx_proxy) does not pass for one. */
#define TC_CHAN_OWN_BIT (1ull << 63)
#define TC_CHAN_OWN_OP_SHIFT 56
enum {
    TC_CHAN_OWN_SEM = 1,    /* signal semaphore snd of the rank (another node) */
    TC_CHAN_OWN_CLOSE = 2,  /* the context is going: cancel MPI requests, stop */
    TC_CHAN_OWN_HANDLES = 3 /* send the handles in the outbox (other nodes) */
};

static inline tc_trigger_t tc__chan_own_trigger(const struct tc_chan_ctx *ctx, unsigned op,
                                                uint32_t rank, uint32_t id)
{
    tc_trigger_t t;

    t.fst = TC_CHAN_OWN_BIT | ((uint64_t)op << TC_CHAN_OWN_OP_SHIFT) | rank;
    t.snd = ((uint64_t)(uint32_t)ctx->key << 32) | id;
    return t;
}

/* Where a mailbox area starts in a semaphore area of ctx's layout. */
static inline tc_mbox_t *tc__chan_mboxes(const tc_chan_ctx_t *ctx, tc_sem_line_t *area)
{
    return area != NULL ? (tc_mbox_t *)(void *)(area + (size_t)ctx->size * ctx->sem_ids) : NULL;
}

/* ------------------------------------------------------------------------ */
/* Registered memory                                                         */
/* ------------------------------------------------------------------------ */

struct tc_mem {
    tc_chan_ctx_t *ctx;
    uint64_t id;
    char *base;
    uint64_t size;
    int fd;              /* its tc_mem_alloc region's memory file, -1: not in one */
    uint64_t region_off; /* base's offset in that region */
    uint64_t region_len;
    struct tc_chan_devmap *devmap; /* mapped for the device by a handle (device.c), else NULL */
    int device;                    /* CUDA device memory of this device; -1: host memory */
    tc_cuda_ipc_t ipc;             /* device memory: its allocation's IPC handle */
    struct tc_mem *next;
};

struct tc_rmem {
    tc_chan_ctx_t *ctx;
    int rank;
    pid_t pid;
    uint64_t id;
    uint64_t base; /* its address in the owner's process */
    uint64_t size;
    int fd; /* the owner's region file, -1: none */
    uint64_t region_off, region_len;
    char *mapped;     /* same node, in a region: the region mapped here (else NULL) */
    char *local;      /* this rank's own memory (rank == ctx->rank) */
    char *mapped_dev; /* mapped, as the context's device sees it (device.c), else NULL */
    int device;       /* device memory of this CUDA device (in its owner); -1: host memory */
    tc_cuda_ipc_t ipc;
    tc_cuda_ipc_maps_t *ipc_maps; /* device memory of a rank of this node, opened here */
    char *dev_mapped;             /* that memory, as this process sees it */
};

/* Where the memory of r starts in this process, or NULL when it cannot be
 * reached with loads and stores (another node, not in a shared region). */
char *tc__rmem_addr(const tc_rmem_t *r);

/* Whether [off, off + size) fits in len bytes (no overflow). */
static inline int tc__chan_fits(uint64_t off, uint64_t size, uint64_t len)
{
    return off <= len && size <= len - off;
}

/* ------------------------------------------------------------------------ */
/* Semaphores and channels                                                   */
/* ------------------------------------------------------------------------ */

struct tc_sem {
    tc_chan_ctx_t *ctx;
    int peer;
    uint32_t id;
    tc_sem_line_t *in;  /* this rank's line the peer signals */
    tc_sem_line_t *out; /* the peer's line this rank signals */
    uint64_t expected;  /* signals consumed by waits and polls */
};

struct tc_memchan {
    tc_sem_t *sem;
    tc_mem_t *local;
    tc_rmem_t *remote;
    char *dst; /* the peer's memory, mapped */
};

struct tc_portchan {
    tc_chan_ctx_t *ctx;
    uint32_t id;
    tc_sem_t *sem;
    tc_mem_t *local;
    tc_rmem_t *remote;
    char *dst; /* the peer's memory mapped here, or NULL: written with process_vm_writev */
    _Atomic int peer_gone; /* the proxy saw the peer's process exit */
    uint64_t done;         /* operations carried out (proxy thread only) */
    int remote_node;       /* the peer is on another node: over MPI (remote.c) */
    uint64_t net_seq;      /* remote: flushes sent (proxy thread only) */
    uint64_t net_acked;    /* remote: the last flush acknowledged (proxy thread) */
    pthread_mutex_t mu;    /* the first failure, set by the proxy, taken by a flush */
    tc_status_t err;
    char err_msg[256];
    uint64_t failed; /* operations that failed since the last report */
};

/* ------------------------------------------------------------------------ */
/* device.c: the context's device side                                       */
/* ------------------------------------------------------------------------ */

/* At context creation, before the ranks agree: the failure counters, and
 * for device >= 0 the semaphore areas (this rank's and the mapped peers')
 * mapped for it. 1, or 0 with why written. */
int tc__chan_device_setup(tc_chan_ctx_t *ctx, int device, char *why, size_t len);
/* At context destruction, after the proxy stopped: undoes the above and
 * every mapping of this rank's memory still there. */
void tc__chan_device_teardown(tc_chan_ctx_t *ctx);
/* Proxy thread: copies size bytes between any memories, host or CUDA
 * device memory (on the proxy's own stream), and returns once they are in
 * place. TC_ERR_TRANSPORT (why) when CUDA fails. */
tc_status_t tc__chan_copy(tc_chan_ctx_t *ctx, void *dst, const void *src, uint64_t size, char *why,
                          size_t len);
/* Proxy thread: the staging buffer of TC_CHAN_BOUNCE bytes (page-locked
 * when it can be), made on first use; NULL when out of memory. */
#define TC_CHAN_BOUNCE (4u << 20)
char *tc__chan_bounce(tc_chan_ctx_t *ctx);
/* tc_mem_deregister / tc_mem_close: drops what device handles mapped. */
void tc__chan_device_forget_mem(tc_mem_t *mem);
void tc__chan_device_forget_rmem(tc_rmem_t *rmem);

/* The proxy handler of a context (portchan.c). */
tc_proxy_result_t tc__portchan_handle(tc_trigger_t t, void *arg);
/* portchan_err.c, proxy thread: records a failed operation of ch (the
 * first one's reason is kept for the next flush). */
void tc__portchan_fail(tc_portchan_t *ch, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------------------ */
/* remote.c, remote_recv.c: port channels and semaphores between nodes      */
/* ------------------------------------------------------------------------ */

typedef struct tc_chan_net tc_chan_net_t;
/* Set-up (ctx->net), no MPI call: TC_ERR_STATE when MPI does not run at
 * MPI_THREAD_MULTIPLE. */
tc_status_t tc__net_create(tc_chan_ctx_t *ctx, char *why, size_t len);
/* The proxy's progress hook (arg: the context); 1 when it did something. */
int tc__net_progress(void *arg);
/* Proxy thread: carries out a port channel's operation towards another
 * node; a flush returns when acknowledged (or the peer is lost). */
void tc__net_op(tc_portchan_t *ch, const tc_trigger_fields_t *f);
/* Proxy thread: a semaphore signal to rank peer on another node. */
void tc__net_sem_signal(tc_chan_ctx_t *ctx, int peer, uint32_t id);
/* Proxy thread: sends the handles of ctx->outbox. */
void tc__net_send_handles(tc_chan_ctx_t *ctx);
/* mailbox.c: frees a list of held handles. */
void tc__mbox_free_list(tc_mbox_msg_t *m);
/* mailbox.c, proxy thread: a handle from rank peer (another node) came. */
void tc__mbox_deliver(tc_chan_ctx_t *ctx, int peer, uint32_t tag, const unsigned char *bytes);
/* Proxy thread, last: cancels what is posted, lets sends end. */
void tc__net_close(tc_chan_ctx_t *ctx);
/* Any thread, once the proxy has stopped: frees ctx->net. */
void tc__net_free(tc_chan_ctx_t *ctx);

/* Waits until line->value >= target (spinning spin_ns first), or the peer
 * exits, or timeout_ns passes (< 0: no limit). */
tc_status_t tc__sem_line_wait(tc_chan_ctx_t *ctx, int peer, tc_sem_line_t *line, uint64_t target,
                              int64_t timeout_ns, const char *who);

#endif
