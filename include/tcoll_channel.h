/*
 * tcoll_channel.h - one-sided communication between ranks: registered
 * memory, semaphores, memory channels (loads and stores through shared
 * memory, same node) and port channels (requests encoded as 128-bit triggers
 * that a proxy thread carries out). docs/channels.md has the semantics and
 * examples; tcoll_trigger.h the trigger encoding.
 *
 * Everything hangs off a context (tc_chan_ctx_t), made collectively after
 * tc_init. Calls return a tc_status_t and write their outputs only on
 * success (tc_last_error() says why otherwise); a refused call changes
 * nothing. "Any thread" means any thread of the process, several at once;
 * "one thread at a time" means the caller serializes calls on that object.
 *
 * Who touches what: the calling thread does the memory channel's copies
 * and every semaphore signal and wait on this node; the context's proxy
 * thread, and only it, carries out port channel operations, and sends and
 * receives everything that goes to or comes from another node (port
 * channel operations, semaphore signals, handles sent pairwise): it is the
 * only thread that calls MPI for channels. Contexts are made, and handles
 * exchanged collectively, through tcoll's own collectives (the engine
 * thread). So a job on one node needs no MPI thread level beyond
 * tc_init's; a job across nodes needs MPI_THREAD_MULTIPLE (the proxy and
 * the engine thread both call MPI): set TCOLL_MPI_THREAD=multiple, or ask
 * MPI_Init_thread for it when the application initializes MPI.
 *
 * This header is C11 and also compiles as C++.
 */
#ifndef TCOLL_CHANNEL_H
#define TCOLL_CHANNEL_H

#include "tcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_chan_ctx tc_chan_ctx_t; /* a context: proxy, semaphores, peers */
typedef struct tc_mem tc_mem_t;           /* this rank's registered memory */
typedef struct tc_rmem tc_rmem_t;         /* a rank's registered memory, from its handle */
typedef struct tc_sem tc_sem_t;           /* a semaphore between this rank and a peer */
typedef struct tc_memchan tc_memchan_t;   /* memory channel (same node) */
typedef struct tc_portchan tc_portchan_t; /* port channel (through the proxy) */

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    size_t size;        /* sizeof(tc_chan_opts_t) where the caller was compiled */
    uint32_t fifo_size; /* the proxy's FIFO slots, a power of two (0: 512) */
    uint32_t sem_ids;   /* semaphore ids per peer, 1..4096 (0: 64); must agree */
    int64_t spin_ns;    /* waits poll this long before parking (< 0: 20000) */
    uint32_t flags;     /* TC_CHAN_* below (0: a context for host threads) */
    int32_t device;     /* with TC_CHAN_CUDA: a CUDA device, or TC_PROXY_CURRENT_DEVICE */
} tc_chan_opts_t;

/* flags: a context for GPU kernels of device opts.device. Its proxy is a
 * device proxy (tc_proxy_create_device: the device's NUMA node, a FIFO
 * mapped for the device) and this rank's semaphores and those of its node
 * are mapped for the device, so that the handles of tcoll_channel_device.h
 * hold device addresses. Without it those handles hold host addresses. */
#define TC_CHAN_CUDA 1u

#define TC_CHAN_OPTS_INIT                                                                          \
    {                                                                                              \
        sizeof(tc_chan_opts_t), 0, 0, -1, 0, 0                                                     \
    }

/* Collective over every rank (same order of calls everywhere), after
 * tc_init; any one thread per rank. Makes a context: exchanges each rank's
 * process, node and semaphore area, maps those of the ranks on this node,
 * and starts the context's proxy thread. opts NULL: defaults. Fails on
 * every rank alike: TC_ERR_ARG (bad options, sem_ids differing between
 * ranks), TC_ERR_STATE (tcoll not running; or the job spans nodes and a
 * rank's MPI does not run at MPI_THREAD_MULTIPLE: the message says which
 * and what to set), TC_ERR_NOMEM, TC_ERR_TRANSPORT (a rank could not map a
 * peer's memory, or, with TC_CHAN_CUDA, had no such CUDA device or could
 * not map its semaphores for it: that rank's tc_last_error says why). */
tc_status_t tc_chan_ctx_create(const tc_chan_opts_t *opts, tc_chan_ctx_t **ctx_p);

/* Any one thread, once nothing else uses the context. Within one node it
 * is local: it stops the proxy after it has carried out every trigger
 * pushed so far (operations towards a rank that has exited fail), then
 * frees the context with the port channels and registrations still open;
 * peers may still be using this rank's memory, so call it after a barrier.
 * When the job spans nodes it is collective (every rank, same order): each
 * rank flushes its port channels to other nodes, then waits for every
 * rank to get there (its proxy still receiving) before its proxy stops;
 * a rank that never comes (lost) makes it return TC_ERR_TRANSPORT, after
 * freeing everything all the same. Memory channels, semaphores and opened
 * handles must be destroyed or closed before. Returns TC_OK, or the first
 * failure of a port channel operation not yet reported by a flush. NULL:
 * TC_ERR_ARG. */
tc_status_t tc_chan_ctx_destroy(tc_chan_ctx_t *ctx);

/* The context's proxy (to push triggers made by tc_portchan_trigger, e.g.
 * from a GPU through tcoll_fifo_device.h). Any thread. NULL ctx: NULL. */
tc_proxy_t *tc_chan_ctx_proxy(tc_chan_ctx_t *ctx);

/* ------------------------------------------------------------------------ */
/* Registered memory                                                         */
/* ------------------------------------------------------------------------ */

/* Local; any thread. size bytes (> 0) of memory that ranks on this node can
 * map: an anonymous memory file, zeroed and reserved at once (a full
 * /dev/shm fails here, not later). Page aligned. TC_ERR_ARG: size 0 or
 * ptr_p NULL; TC_ERR_NOMEM. Free with tc_mem_free. */
tc_status_t tc_mem_alloc(size_t size, void **ptr_p);
/* Local; any thread. ptr must be what tc_mem_alloc returned (else
 * TC_ERR_ARG); registrations inside it must be gone. NULL: TC_OK. */
tc_status_t tc_mem_free(void *ptr);

/* Local; any thread. Registers [ptr, ptr + size) with ctx (size may be 0
 * only with ptr non-NULL). Memory from tc_mem_alloc can be used by memory
 * channels and written by port channels with plain stores; any other host
 * memory can be the source of a port channel, or its destination (written
 * with process_vm_writev). CUDA device memory (from cudaMalloc, any device)
 * in a context made with TC_CHAN_CUDA: its handle carries a CUDA IPC
 * handle, ranks of this node map it when they open the handle, port
 * channels copy into and out of it on the proxy's stream, and memory
 * channels' device handles reach it from kernels. TC_ERR_ARG: NULL
 * arguments; device memory in a context for host threads or for another
 * device, or without an IPC handle (memory of a stream-ordered pool), or
 * running past its allocation. */
tc_status_t tc_mem_register(tc_chan_ctx_t *ctx, void *ptr, size_t size, tc_mem_t **mem_p);
/* Local; any thread, once no channel uses it. NULL: ignored. */
void tc_mem_deregister(tc_mem_t *mem);

/* A registration's handle: bytes that name it to another rank. */
#define TC_MEM_HANDLE_BYTES 192
typedef struct {
    unsigned char bytes[TC_MEM_HANDLE_BYTES];
} tc_mem_handle_t;

/* Local; any thread. Serializes mem into *handle_p (send the bytes to a peer
 * any way you like, or use tc_mem_handle_send below). */
tc_status_t tc_mem_handle(const tc_mem_t *mem, tc_mem_handle_t *handle_p);
/* Local; any thread. Opens a handle received from a rank (len must be
 * TC_MEM_HANDLE_BYTES). Checked on arrival: TC_ERR_ARG when the bytes are
 * not a handle (magic, version), are damaged (checksum), come from another
 * context or job (key), or name an impossible rank; TC_ERR_TRANSPORT when
 * the memory is on this node and cannot be mapped (device memory: opened
 * with CUDA IPC on the context's device, in a TC_CHAN_CUDA context; in
 * another, operations towards it fail at the proxy, saying so). Close
 * with tc_mem_close. */
tc_status_t tc_mem_open(tc_chan_ctx_t *ctx, const void *bytes, size_t len, tc_rmem_t **rmem_p);
/* Local; any thread, once no channel uses it. NULL: ignored. Device
 * memory another process opened must stay allocated until that process
 * has closed it (CUDA's rule for IPC memory): free it after a barrier that
 * follows the peers' tc_mem_close. */
void tc_mem_close(tc_rmem_t *rmem);

/* Collective over every rank; one thread per rank. Every rank's handle of
 * its mem to every rank: rmems[r] (an array of tc_size() entries) is rank
 * r's, opened (rmems[tc_rank()] is this rank's own). name names the
 * exchange (a tcoll allgather of the handles; NULL: an automatic name).
 * Fails on every rank when one rank's handle does not open. */
tc_status_t tc_mem_exchange(tc_chan_ctx_t *ctx, const char *name, const tc_mem_t *mem,
                            tc_rmem_t *rmems[]);

/* Pairwise: one rank's handle to one peer, without the rest of the job.
 * tc_mem_handle_send: local; any thread. Sends mem's handle to rank peer
 * (this rank too) under tag, and returns without waiting for the peer: to
 * a rank of this node through its mailbox, where at most 16 handles from
 * this rank may wait to be received (more: TC_ERR_NOMEM, nothing sent); to
 * another node through the context's proxy, over MPI. TC_ERR_ARG: mem
 * NULL, peer not a rank. */
tc_status_t tc_mem_handle_send(const tc_mem_t *mem, int peer, uint32_t tag);
/* Local; any thread. Receives the handle rank peer sent under tag (the
 * oldest one, when it sent several) and opens it (as tc_mem_open, checked
 * on arrival). timeout_ns < 0 waits without limit, 0 only looks.
 * TC_ERR_TIMEOUT: none came in time; TC_ERR_TRANSPORT: the peer is lost;
 * TC_ERR_ARG: bad arguments, or the handle does not open. */
tc_status_t tc_mem_handle_recv(tc_chan_ctx_t *ctx, int peer, uint32_t tag, int64_t timeout_ns,
                               tc_rmem_t **rmem_p);

/* What a handle names. Any thread. */
int tc_rmem_rank(const tc_rmem_t *rmem);
uint64_t tc_rmem_size(const tc_rmem_t *rmem);

/* ------------------------------------------------------------------------ */
/* Semaphores                                                                */
/* ------------------------------------------------------------------------ */

/* Local; any thread. The semaphore (peer, id) of this rank: a 64-bit counter
 * in this rank's memory that the peer's semaphore (this rank, id) signals,
 * and the other way round. id < opts.sem_ids; peer != this rank, on this
 * node or another (then signals travel through the proxies, over MPI,
 * after every port channel operation pushed before them). Each (peer, id)
 * has at most one semaphore at a time per context. TC_ERR_ARG: out of
 * range, or taken. */
tc_status_t tc_sem_create(tc_chan_ctx_t *ctx, int peer, uint32_t id, tc_sem_t **sem_p);
/* Local; once no channel uses it. NULL: ignored. */
void tc_sem_destroy(tc_sem_t *sem);
/* Any thread, several at once: adds 1 to the peer's counter (release:
 * everything this thread stored before is visible to the peer's wait that
 * sees it). A peer on another node: pushed to the proxy, which sends it
 * after every earlier trigger (so after earlier port channel puts); the
 * call may wait while the FIFO is full. */
tc_status_t tc_sem_signal(tc_sem_t *sem);
/* One thread at a time: waits for the next signal from the peer (one wait
 * consumes one signal). timeout_ns < 0 waits without limit, 0 only checks.
 * TC_ERR_TIMEOUT: none came in time (nothing consumed); TC_ERR_TRANSPORT:
 * the peer's process exited with no signal left. */
tc_status_t tc_sem_wait(tc_sem_t *sem, int64_t timeout_ns);
/* One thread at a time: 1 and one signal consumed if one is there, else 0
 * (never waits). NULL: 0. */
int tc_sem_poll(tc_sem_t *sem);

/* ------------------------------------------------------------------------ */
/* Memory channels: the calling thread copies through shared memory          */
/* ------------------------------------------------------------------------ */

/* Local; any thread. A channel from local (this rank's) to remote (the
 * peer's, from tc_mem_alloc, same node: else TC_ERR_ARG), signalling with
 * sem (its peer must be remote's rank). */
tc_status_t tc_memchan_create(tc_sem_t *sem, tc_mem_t *local, tc_rmem_t *remote,
                              tc_memchan_t **ch_p);
void tc_memchan_destroy(tc_memchan_t *ch);
/* Any thread: copies size bytes from local + src_offset to remote +
 * dst_offset and returns when they are written. Ranges outside either
 * memory: TC_ERR_ARG, nothing copied. size 0: TC_OK. */
tc_status_t tc_memchan_put(tc_memchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                           uint64_t size);
/* Any thread: copies size bytes from remote + src_offset to local + dst_offset. */
tc_status_t tc_memchan_get(tc_memchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                           uint64_t size);
/* tc_sem_signal / tc_sem_wait / tc_sem_poll of the channel's semaphore. */
tc_status_t tc_memchan_signal(tc_memchan_t *ch);
tc_status_t tc_memchan_put_with_signal(tc_memchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                                       uint64_t size);
tc_status_t tc_memchan_wait(tc_memchan_t *ch, int64_t timeout_ns);
int tc_memchan_poll(tc_memchan_t *ch);
/* A full fence: this thread's puts are ordered before what it does next. */
tc_status_t tc_memchan_flush(tc_memchan_t *ch);

/* ------------------------------------------------------------------------ */
/* Port channels: the proxy thread carries out triggers                      */
/* ------------------------------------------------------------------------ */

/* Local; any thread. A channel from local to remote (any registered memory
 * of any rank) signalling with sem (peer = remote's rank), with an id
 * 0..4095 in the context's proxy (TC_ERR_NOMEM when all are taken). To a
 * rank on another node its operations travel over MPI (docs/channels.md). */
tc_status_t tc_portchan_create(tc_sem_t *sem, tc_mem_t *local, tc_rmem_t *remote,
                               tc_portchan_t **ch_p);
/* Local; one thread, once no one else pushes to it. Flushes it (waiting
 * without limit: the proxy never blocks on a peer), frees its id, and
 * returns the flush's status. NULL: TC_ERR_ARG. */
tc_status_t tc_portchan_destroy(tc_portchan_t *ch);
/* The channel's id in its proxy (for tc_trigger_encode). */
uint32_t tc_portchan_id(const tc_portchan_t *ch);

/* Any thread, several at once: each pushes one trigger and returns without
 * waiting for it to be carried out (it waits only while the FIFO is full).
 * A range outside either memory, or a field out of the trigger's range, is
 * TC_ERR_ARG and nothing is pushed. Size 0 is legal. The operations of one
 * channel are carried out in push order (docs/channels.md). */
tc_status_t tc_portchan_put(tc_portchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                            uint64_t size);
tc_status_t tc_portchan_signal(tc_portchan_t *ch);
tc_status_t tc_portchan_put_with_signal(tc_portchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                                        uint64_t size);
/* Any thread: pushes a flush and waits until it is carried out: every
 * operation pushed before it on this channel is then complete at the
 * destination and its source may be reused. timeout_ns < 0: no limit.
 * TC_ERR_TIMEOUT: not yet (the flush stays queued; flush again);
 * TC_ERR_TRANSPORT: an earlier operation failed (the message says which
 * rank and why), reported once. */
tc_status_t tc_portchan_flush(tc_portchan_t *ch, int64_t timeout_ns);
/* The receiving side: tc_sem_wait / tc_sem_poll of the channel's semaphore. */
tc_status_t tc_portchan_wait(tc_portchan_t *ch, int64_t timeout_ns);
int tc_portchan_poll(tc_portchan_t *ch);
/* Encodes an operation of this channel as a trigger without pushing it
 * (checked as tc_portchan_put checks), for a producer that pushes it
 * itself, e.g. a GPU kernel. type: TC_TRIG_* bits. */
tc_status_t tc_portchan_trigger(const tc_portchan_t *ch, uint32_t type, uint64_t dst_offset,
                                uint64_t src_offset, uint64_t size, tc_trigger_t *trigger_p);

#ifdef __cplusplus
}
#endif

#endif /* TCOLL_CHANNEL_H */
