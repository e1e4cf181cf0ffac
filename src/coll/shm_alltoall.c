/*
 * shm_alltoall.c - alltoall among the ranks of one node, without MPI:
 * every rank sends a block of its own size to every rank. Blocks are laid
 * out in rank order on both sides, as the engine lays them out:
 * matrix[p x n + q] units of `unit` bytes go from local rank p to q; rank
 * p's block for q starts at the sum of its blocks for 0..q-1 in its send
 * buffer, and the block from p lands at the sum of the blocks from 0..p-1
 * in the receiver's recv. Every rank holds the whole matrix, so each can
 * find any block in any rank's buffer without asking.
 *
 * The matrix (tc__shm_alltoall_counts), one slot step (shm_steps.h):
 *
 *   step  rank r                                           then stores
 *   1     waits until no one reads its slot for this step  -
 *   2     copies its n counts (row r) into its slot        arrived = g
 *   3     waits for every rank's arrived >= g
 *   4     copies every rank's row into the matrix          done = g
 *
 * Direct (tc__cma_alltoall: where process_vm_readv works between the local
 * ranks, tc_shm_seg_t.cma), one step g for the blocks:
 *
 *   step  rank r                                           then stores
 *   1     writes the address of its send buffer into its   arrived = g
 *         control block
 *   2     waits for every rank's arrived >= g
 *   3     reads its block from rank p's send buffer        done = g
 *         straight into recv, for p = r+1, ..., r-1, and
 *         copies its own block
 *   4     waits for every rank's done >= g (its send
 *         buffer may change as soon as it returns)
 *
 * Through the slots (tc__shm_alltoall: without process_vm_readv, or for
 * small buffers), each slot is cut into n parts of P bytes (part q at
 * q x P), and step k moves bytes [k x P, (k+1) x P) of every block between
 * two ranks (none of a shorter block), one slot step each, for k below
 * ceil(largest such block / P):
 *
 *   step  rank r                                           then stores
 *   1     waits until no one reads its slot for this step  -
 *   2     copies piece k of its block for each q != r      arrived = g
 *         into part q of its slot
 *   3     waits for every rank's arrived >= g
 *   4     copies part r of every other rank p's slot       done = g
 *         into its block from p in recv
 *
 * Its own block it copies once, before the steps. Every rank computes the
 * same P and step count from the same matrix. Either way the result is the
 * bytes themselves: the pairwise exchange's. Must never read a rank's
 * slot or buffer before its arrived says the data is there.
 */
#define _GNU_SOURCE
#include "coll/shm_steps.h"

#include <string.h>

#define PART_ALIGN 64 /* whole cache lines per part where the slot allows */

tc_status_t tc__shm_alltoall_counts(tc_shm_coll_t *c, const uint64_t *send_counts, uint64_t *matrix)
{
    const int n = c->seg->n, me = c->seg->me;
    const size_t row = (size_t)n * sizeof(uint64_t); /* <= slot (tc__shm_kinds_fit) */
    tc_status_t st;
    uint64_t g;
    char *mine;
    int p;

    if ((st = tc__shm_slot_open(c, &g, &mine)) != TC_OK) {
        return st;
    }
    memcpy(mine, send_counts, row);
    if ((st = tc__shm_slot_ready(c, g)) != TC_OK) {
        return st;
    }
    for (p = 0; p < n; p++) {
        memcpy(matrix + (size_t)p * (size_t)n,
               p == me ? (const void *)send_counts : (const void *)tc__shm_slot_of(c, p, g), row);
    }
    tc__shm_slot_close(c, g);
    return TC_OK;
}

/* Byte offset of the block from p to q in p's send buffer (from_p = 1) or
 * q's recv (from_p = 0). */
static size_t block_at(const uint64_t *matrix, int n, int p, int q, size_t unit, int from_p)
{
    size_t units = 0;
    int i;

    for (i = 0; i < (from_p ? q : p); i++) {
        units += from_p ? matrix[(size_t)p * (size_t)n + (size_t)i]
                        : matrix[(size_t)i * (size_t)n + (size_t)q];
    }
    return units * unit;
}

/* Bytes of the block from p to q. */
static size_t block_len(const uint64_t *matrix, int n, int p, int q, size_t unit)
{
    return (size_t)matrix[(size_t)p * (size_t)n + (size_t)q] * unit;
}

/* Copies this rank's block for itself (send and recv do not overlap). */
static void own_block(const tc_shm_coll_t *c, const void *send, void *recv, const uint64_t *matrix,
                      size_t unit)
{
    const int n = c->seg->n, me = c->seg->me;
    const size_t len = block_len(matrix, n, me, me, unit);

    if (len > 0) {
        memcpy((char *)recv + block_at(matrix, n, me, me, unit, 0),
               (const char *)send + block_at(matrix, n, me, me, unit, 1), len);
    }
}

/* The largest block between two different ranks, in bytes. */
static size_t largest_exchange(const uint64_t *matrix, int n, size_t unit)
{
    size_t most = 0, len;
    int p, q;

    for (p = 0; p < n; p++) {
        for (q = 0; q < n; q++) {
            len = p != q ? block_len(matrix, n, p, q, unit) : 0;
            most = len > most ? len : most;
        }
    }
    return most;
}

tc_status_t tc__cma_alltoall(tc_shm_coll_t *c, const void *send, void *recv, const uint64_t *matrix,
                             size_t unit)
{
    const int n = c->seg->n, me = c->seg->me;
    char *base = recv;
    tc_status_t st;
    uint64_t g;
    int j, p;

    own_block(c, send, recv, matrix, unit);
    if (largest_exchange(matrix, n, unit) == 0) {
        return TC_OK; /* nothing crosses: the same on every rank */
    }
    if ((st = tc__shm_direct_open(c, send, NULL, &g)) != TC_OK) {
        return st;
    }
    for (j = 1; j < n; j++) {
        p = (me + j) % n;
        st = tc__shm_direct_read(c, p, g, base + block_at(matrix, n, p, me, unit, 0),
                                 tc__shm_direct_addr(c, p, 0) + block_at(matrix, n, p, me, unit, 1),
                                 block_len(matrix, n, p, me, unit), "alltoall");
        if (st != TC_OK) {
            return st;
        }
    }
    return tc__shm_direct_close(c, g);
}

tc_status_t tc__shm_alltoall(tc_shm_coll_t *c, const void *send, void *recv, const uint64_t *matrix,
                             size_t unit)
{
    const int n = c->seg->n, me = c->seg->me;
    const size_t even = c->seg->slot_bytes / (size_t)n;
    const size_t part = even >= PART_ALIGN ? even / PART_ALIGN * PART_ALIGN : even; /* P >= 8 */
    const size_t most = largest_exchange(matrix, n, unit);
    const char *in = send;
    char *base = recv, *mine;
    size_t at, len;
    tc_status_t st;
    uint64_t g;
    int p, q;

    own_block(c, send, recv, matrix, unit);
    for (at = 0; at < most; at += part) {
        if ((st = tc__shm_slot_open(c, &g, &mine)) != TC_OK) {
            return st;
        }
        for (q = 0; q < n; q++) {
            len = block_len(matrix, n, me, q, unit);
            if (q != me && at < len) {
                memcpy(mine + (size_t)q * part, in + block_at(matrix, n, me, q, unit, 1) + at,
                       len - at < part ? len - at : part);
            }
        }
        if ((st = tc__shm_slot_ready(c, g)) != TC_OK) {
            return st;
        }
        for (p = 0; p < n; p++) {
            len = block_len(matrix, n, p, me, unit);
            if (p != me && at < len) {
                memcpy(base + block_at(matrix, n, p, me, unit, 0) + at,
                       tc__shm_slot_of(c, p, g) + (size_t)me * part,
                       len - at < part ? len - at : part);
            }
        }
        tc__shm_slot_close(c, g);
    }
    return TC_OK;
}
