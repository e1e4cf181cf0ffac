/*
 * shm_seg.c - making, mapping and unmapping the node's shared-memory
 * segment (shm_seg.h says what it holds and how it is named).
 *
 * Runs on the engine thread during tc_init, over the node's local
 * communicator: local rank 0 creates the memory and broadcasts how to open
 * it; the others open and map it; all agree (MPI_Allreduce) whether every
 * rank has it before anyone uses it or a posix name is unlinked. Must never
 * leave a named object behind: the posix name is unlinked by local rank 0
 * on every path once the others have had their chance to open it.
 */
#define _GNU_SOURCE
#include "transport/shm_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"

#define SEG_MAGIC UINT64_C(0x6d68736c6c6f6374) /* "tcollshm", little-endian */

typedef struct {
    uint64_t magic;
    uint64_t bytes;
    uint64_t slot_bytes;
    int32_t n, nslots;
} seg_hdr_t;

/* What local rank 0 tells the others: how to open the memory, or why not. */
typedef struct {
    int32_t ok;
    int32_t posix; /* 1: name; 0: /proc/pid/fd/fd */
    int32_t pid, fd;
    char name[64];
    char why[256];
} seg_info_t;

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

size_t tc__shm_seg_layout(int n, const tc_shm_params_t *p, tc_shm_seg_t *seg)
{
    size_t ctl_off = round_up(sizeof(seg_hdr_t), TC_SHM_LINE);
    size_t stage_off = round_up(ctl_off + (size_t)n * sizeof(tc_shm_ctl_t), 4096);
    size_t per_rank = (size_t)p->nslots * p->slot_bytes, verdict_off, box_off, box_bytes, boxes;
    size_t lbox_off, lbox_bytes, lboxes, large_bytes, mbox_off, cell, cell_bytes, mbox_bytes;
    int large_names;

    if (per_rank / (size_t)p->nslots != p->slot_bytes ||
        per_rank > (SIZE_MAX / 2 - stage_off) / (size_t)n || p->fast_bytes > (1u << 30) ||
        p->large_bytes > (1u << 30)) {
        return 0;
    }
    /* every rank reduces every rank's input on that path: the large boxes
     * shrink as the node's ranks grow (and go when no larger than small) */
    large_bytes = p->large_bytes < TC_SHM_FAST_WORK / (size_t)n
                      ? p->large_bytes
                      : TC_SHM_FAST_WORK / (size_t)n / 64 * 64;
    large_names = large_bytes > p->fast_bytes ? p->large_names : 0;
    large_bytes = large_names > 0 ? large_bytes : 0;
    verdict_off = round_up(stage_off + per_rank * (size_t)n, 4096);
    box_off = round_up(
        verdict_off + ((size_t)p->fast_names + (size_t)large_names) * TC_SHM_VERDICT_STRIDE, 4096);
    box_bytes = round_up(TC_SHM_BOX_DATA + p->fast_bytes, TC_SHM_LINE);
    boxes = (size_t)p->fast_names * (size_t)n * 2;
    if (p->fast_names > 0 && box_bytes > (SIZE_MAX / 4 - box_off) / boxes) {
        return 0;
    }
    lbox_off = round_up(box_off + boxes * box_bytes, 4096);
    lbox_bytes = round_up(TC_SHM_BOX_DATA + large_bytes, TC_SHM_LINE);
    lboxes = (size_t)large_names * (size_t)n * 2;
    if (large_names > 0 && lbox_bytes > (SIZE_MAX / 4 - lbox_off) / lboxes) {
        return 0;
    }
    mbox_off = round_up(lbox_off + lboxes * lbox_bytes, 4096);
    /* cells are capped so that the mailboxes (n * n of them) take at most
     * TC_SHM_P2P_MAX_BYTES, with at least TC_SHM_P2P_MIN_CELL of data each */
    cell = TC_SHM_P2P_MAX_BYTES / ((size_t)n * (size_t)n * TC_SHM_P2P_CELLS);
    cell = cell < TC_SHM_P2P_MIN_CELL ? TC_SHM_P2P_MIN_CELL : cell / 64 * 64;
    cell = p->cell_bytes < cell ? p->cell_bytes : cell;
    cell_bytes = p->cell_bytes > 0 ? round_up(TC_SHM_CELL_HDR + cell, TC_SHM_LINE) : 0;
    mbox_bytes = cell_bytes > 0 ? sizeof(tc_shm_mbox_t) + TC_SHM_P2P_CELLS * cell_bytes : 0;
    if (p->cell_bytes > (1u << 30) ||
        (mbox_bytes > 0 && mbox_bytes > (SIZE_MAX / 2 - mbox_off) / ((size_t)n * (size_t)n))) {
        return 0;
    }
    seg->ctl_off = ctl_off;
    seg->stage_off = stage_off;
    seg->verdict_off = verdict_off;
    seg->box_off = box_off;
    seg->box_bytes = box_bytes;
    seg->fast_names = p->fast_names;
    seg->fast_bytes = p->fast_bytes;
    seg->lbox_off = lbox_off;
    seg->lbox_bytes = lbox_bytes;
    seg->large_names = large_names;
    seg->large_bytes = large_bytes;
    seg->cell_bytes = cell_bytes;
    seg->mbox_off = mbox_off;
    seg->mbox_bytes = mbox_bytes;
    return mbox_off + (size_t)n * (size_t)n * mbox_bytes;
}

/* Local rank 0: an anonymous memory file of bytes, reserved; fd or -1. */
static int make_memfd(size_t bytes, char *why, size_t len)
{
    int fd = memfd_create("tcoll-shm", MFD_CLOEXEC), rc;

    if (fd < 0) {
        snprintf(why, len, "memfd_create failed: %s", strerror(errno));
        return -1;
    }
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)bytes) != 0) {
        snprintf(why, len, "sizing a %zu-byte memfd failed: %s", bytes, strerror(errno));
        close(fd);
        return -1;
    }
    if ((rc = posix_fallocate(fd, 0, (off_t)bytes)) != 0) {
        snprintf(why, len, "reserving %zu bytes of memory failed: %s", bytes, strerror(rc));
        close(fd);
        return -1;
    }
    return fd;
}

/* Local rank 0: a new /dev/shm object of bytes, reserved, its name in
 * name; fd or -1 (nothing left behind). */
static int make_posix(size_t bytes, char *name, size_t namelen, char *why, size_t len)
{
    unsigned char rnd[16];
    char hex[33];
    int fd, rc, i;

    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        snprintf(why, len, "getrandom failed: %s", strerror(errno));
        return -1;
    }
    for (i = 0; i < 16; i++) {
        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
    }
    snprintf(name, namelen, "/tcoll-%u-%d-%s", (unsigned)getuid(), (int)getpid(), hex);
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, len, "shm_open(%s) failed: %s", name, strerror(errno));
        return -1;
    }
    if (ftruncate(fd, (off_t)bytes) != 0) {
        snprintf(why, len, "sizing %zu bytes in /dev/shm failed: %s", bytes, strerror(errno));
        goto err_unlink;
    }
    if ((rc = posix_fallocate(fd, 0, (off_t)bytes)) != 0) {
        snprintf(why, len, "reserving %zu bytes in /dev/shm failed: %s (is /dev/shm too small?)",
                 bytes, strerror(rc));
        goto err_unlink;
    }
    return fd;

err_unlink:
    shm_unlink(name);
    close(fd);
    return -1;
}

/* The others: opens what local rank 0 made; fd or -1. */
static int open_peer(const seg_info_t *info, char *why, size_t len)
{
    char path[64];
    int fd;

    if (info->posix) {
        fd = shm_open(info->name, O_RDWR | O_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(why, len, "shm_open(%s) failed: %s", info->name, strerror(errno));
        }
        return fd;
    }
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)info->pid, (int)info->fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, len, "opening local rank 0's memfd at %s failed: %s", path, strerror(errno));
    }
    return fd;
}

/* Maps fd (bytes long, checked); the mapping or NULL. */
static char *map_fd(int fd, size_t bytes, char *why, size_t len)
{
    struct stat st;
    void *p;

    if (fstat(fd, &st) != 0 || (size_t)st.st_size < bytes) {
        snprintf(why, len, "the segment is %lld bytes, not %zu",
                 (long long)(fstat(fd, &st) == 0 ? st.st_size : -1), bytes);
        return NULL;
    }
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(why, len, "mmap of %zu bytes failed: %s", bytes, strerror(errno));
        return NULL;
    }
    return p;
}

/* Every local rank's verdict: TC_OK when all have the segment, else
 * TC_ERR_TRANSPORT with the lowest failing rank's reason in why. */
static tc_status_t agree(MPI_Comm local, int me, int ok, char *why, size_t len)
{
    int first_bad = ok ? INT_MAX : me, any_bad;
    char text[256];

    if (MPI_Allreduce(&first_bad, &any_bad, 1, MPI_INT, MPI_MIN, local) != MPI_SUCCESS) {
        snprintf(why, len, "MPI_Allreduce over the node's ranks failed");
        return TC_ERR_TRANSPORT;
    }
    if (any_bad == INT_MAX) {
        return TC_OK;
    }
    snprintf(text, sizeof(text), "%s", me == any_bad ? why : "");
    if (MPI_Bcast(text, (int)sizeof(text), MPI_CHAR, any_bad, local) == MPI_SUCCESS) {
        text[sizeof(text) - 1] = '\0';
        snprintf(why, len, "local rank %d: %s", any_bad, text);
    }
    return TC_ERR_TRANSPORT;
}

/* The word each rank's peers read to find out whether process_vm_readv
 * works between them: private memory, its value known to all. */
static volatile uint64_t cma_word;

/* Whether every local rank can read the next one's memory (collective over
 * local; every rank gets the same answer). */
static int cma_probe(tc_shm_seg_t *seg, MPI_Comm local)
{
    int me = seg->me, n = seg->n, next = (me + 1) % n, ok, all = 0;
    uint64_t got = 0;

    cma_word = SEG_MAGIC ^ (uint64_t)getpid();
    tc__shm_ctl(seg, me)->in_addr = (uint64_t)(uintptr_t)&cma_word;
    MPI_Barrier(local); /* every address stored */
    ok = tc__shm_peer_read(seg, next, &got, tc__shm_ctl(seg, next)->in_addr, sizeof(got)) == 0 &&
         got == (SEG_MAGIC ^ (uint64_t)(uint32_t)tc__shm_ctl(seg, next)->pid);
    if (!ok) {
        TC_DEBUG("shm", "process_vm_readv from local rank %d: %s", next,
                 got != 0 ? "wrong value" : strerror(errno));
    }
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, local) != MPI_SUCCESS) {
        all = 0;
    }
    MPI_Barrier(local); /* every read done before the words are used again */
    tc__shm_ctl(seg, me)->in_addr = 0;
    return all;
}

int tc__shm_peer_read(const tc_shm_seg_t *s, int r, void *to, uint64_t from, size_t bytes)
{
    pid_t pid = (pid_t)tc__shm_ctl(s, r)->pid;

    while (bytes > 0) {
        struct iovec local = {to, bytes}, remote = {(void *)(uintptr_t)from, bytes};
        ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (got <= 0) {
            if (got == 0) {
                errno = EFAULT;
            }
            return -1;
        }
        to = (char *)to + got;
        from += (uint64_t)got;
        bytes -= (size_t)got;
    }
    return 0;
}

tc_status_t tc__shm_seg_open(MPI_Comm local, const tc_shm_params_t *p, tc_shm_seg_t *seg, char *why,
                             size_t len)
{
    const int mode = p->mode, nslots = p->nslots;
    const size_t slot_bytes = p->slot_bytes;
    tc_shm_seg_t lay;
    seg_info_t info;
    size_t bytes;
    char *base = NULL;
    int me, n, fd = -1, r;
    tc_status_t st;
    seg_hdr_t *hdr;

    memset(seg, 0, sizeof(*seg));
    MPI_Comm_rank(local, &me);
    MPI_Comm_size(local, &n);
    memset(&lay, 0, sizeof(lay));
    bytes = tc__shm_seg_layout(n, p, &lay);
    memset(&info, 0, sizeof(info));
    if (me == 0) {
        if (bytes == 0) {
            snprintf(info.why, sizeof(info.why), "%d ranks x %d slots x %zu bytes is too large", n,
                     nslots, slot_bytes);
        } else {
            if (mode != TC_SHM_POSIX) {
                fd = make_memfd(bytes, info.why, sizeof(info.why));
            }
            if (fd < 0 && mode != TC_SHM_MEMFD) {
                if (mode == TC_SHM_AUTO) {
                    TC_DEBUG("shm", "no memfd (%s): trying /dev/shm", info.why);
                }
                info.posix = 1;
                fd = make_posix(bytes, info.name, sizeof(info.name), info.why, sizeof(info.why));
            }
        }
        info.ok = fd >= 0;
        info.pid = (int32_t)getpid();
        info.fd = fd;
    }
    if (MPI_Bcast(&info, (int)sizeof(info), MPI_BYTE, 0, local) != MPI_SUCCESS) {
        snprintf(why, len, "MPI_Bcast over the node's ranks failed");
        st = TC_ERR_TRANSPORT;
        goto err_unlink;
    }
    if (!info.ok) {
        snprintf(why, len, "local rank 0: %s", info.why);
        return TC_ERR_TRANSPORT; /* the same on every local rank: nothing was made */
    }
    why[0] = '\0';
    if (me != 0) {
        fd = open_peer(&info, why, len);
    }
    if (fd >= 0) {
        base = map_fd(fd, bytes, why, len);
    }
    st = agree(local, me, base != NULL, why, len);
    /* Every rank has opened it or given up: the name can go. */
err_unlink:
    if (me == 0 && info.posix && info.ok) {
        shm_unlink(info.name);
    }
    if (fd >= 0) {
        close(fd); /* the mapping keeps the memory */
    }
    if (st != TC_OK) {
        if (base != NULL) {
            munmap(base, bytes);
        }
        return st;
    }
    *seg = lay;
    seg->base = base;
    seg->bytes = bytes;
    seg->n = n;
    seg->me = me;
    seg->nslots = nslots;
    seg->slot_bytes = slot_bytes;
    seg->method = info.posix ? "posix" : "memfd";
    /* Each rank touches its own control block and slots (pre-faulted,
     * NUMA-local to it); the barrier orders these stores before any use. */
    if (me == 0) {
        hdr = (seg_hdr_t *)base;
        hdr->magic = SEG_MAGIC;
        hdr->bytes = bytes;
        hdr->slot_bytes = slot_bytes;
        hdr->n = n;
        hdr->nslots = nslots;
    }
    memset(tc__shm_ctl(seg, me), 0, sizeof(tc_shm_ctl_t));
    tc__shm_ctl(seg, me)->pid = (int32_t)getpid();
    memset(tc__shm_slot(seg, me, 0), 0, (size_t)nslots * slot_bytes);
    for (r = 0; r < seg->fast_names + seg->large_names; r++) {
        /* this rank's boxes (the verdicts stay 0) */
        size_t bytes1 = r < seg->fast_names ? seg->box_bytes : seg->lbox_bytes;
        memset(tc__shm_box(seg, r, me, 0), 0, bytes1);
        memset(tc__shm_box(seg, r, me, 1), 0, bytes1);
    }
    for (r = 0; r < n && seg->mbox_bytes > 0; r++) { /* the mailboxes to this rank */
        memset(tc__shm_mbox(seg, r, me), 0, seg->mbox_bytes);
    }
    if (MPI_Barrier(local) != MPI_SUCCESS) {
        snprintf(why, len, "MPI_Barrier over the node's ranks failed");
        tc__shm_seg_close(seg);
        return TC_ERR_TRANSPORT;
    }
    seg->pids_visible = 1;
    for (r = 0; r < n; r++) {
        pid_t pid = (pid_t)tc__shm_ctl(seg, r)->pid;
        if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) {
            seg->pids_visible = 0; /* another pid namespace: rely on the probes */
        }
    }
    seg->cma = cma_probe(seg, local);
    return TC_OK;
}

tc_shm_params_t tc__shm_params(const tc_config_t *cfg)
{
    int small = cfg->shm_fast_bytes > 0;
    int large = cfg->shm_fast_large_bytes > cfg->shm_fast_bytes && small;
    tc_shm_params_t p = {cfg->shm,
                         (size_t)cfg->shm_slot_kb * 1024,
                         cfg->shm_slots,
                         small ? cfg->shm_fast_names : 0,
                         (size_t)cfg->shm_fast_bytes,
                         (size_t)cfg->shm_p2p_cell_kb * 1024,
                         large ? cfg->shm_fast_large_names : 0,
                         large ? (size_t)cfg->shm_fast_large_bytes : 0};
    return p;
}

void tc__shm_seg_close(tc_shm_seg_t *seg)
{
    if (seg->base != NULL) {
        munmap(seg->base, seg->bytes);
    }
    memset(seg, 0, sizeof(*seg));
}

int tc__shm_peer_dead(const tc_shm_seg_t *s, int r)
{
    pid_t pid;

    if (!s->pids_visible || r == s->me) {
        return 0;
    }
    pid = (pid_t)tc__shm_ctl(s, r)->pid;
    return kill(pid, 0) != 0 && errno == ESRCH;
}
