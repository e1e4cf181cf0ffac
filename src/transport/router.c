/*
 * router.c - a transport that hands each transfer to the child transport of
 * its peer (router.h): the route table says which child carries which peer.
 *
 * A post goes to the peer's child and keeps the child's state in the
 * transfer; a test hands every child the transfers posted on it, so one
 * exchange whose send and receive sit on different children progresses
 * both together (a ring where every rank sends right over one child and
 * receives left over another does not deadlock). A child's error text
 * becomes the router's. The router never waits: its blocking exchange is
 * transport.c's, under the router's wait policy. Only the thread that owns
 * the children calls it; it never closes them.
 */
#define _GNU_SOURCE
#include "transport/router.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_BATCH 16 /* transfers handed to a child's test at once */

static tc_transport_t *child_of(tc_transport_t *t, int peer)
{
    const tc_router_t *rt = t->impl;
    int c = tc__router_child(t, peer);

    return c >= 0 ? rt->child[c] : NULL;
}

/* The child's reason for its last error becomes the router's. */
static tc_status_t child_failed(tc_transport_t *t, const tc_transport_t *c, tc_status_t st)
{
    memcpy(t->err, c->err, sizeof(t->err));
    return st;
}

int tc__router_child(const tc_transport_t *t, int peer)
{
    const tc_router_t *rt = t->impl;

    return peer >= 0 && peer < t->size ? rt->route[peer] : -1;
}

static int router_reaches(tc_transport_t *t, int peer)
{
    tc_transport_t *c = child_of(t, peer);

    return c != NULL && c->reaches(c, peer);
}

static tc_status_t router_post(tc_transport_t *t, tc_xfer_t *x)
{
    tc_transport_t *c = child_of(t, x->peer);
    tc_status_t st;

    if (c == NULL) {
        snprintf(t->err, sizeof(t->err), "router: no transport reaches rank %d (group of %d)",
                 x->peer, t->size);
        return TC_ERR_TRANSPORT;
    }
    st = c->post(c, x);
    return st == TC_OK ? TC_OK : child_failed(t, c, st);
}

/* Each child gets the transfers posted on it that are not done, up to
 * TEST_BATCH at a time; every child is tested in every call. */
static tc_status_t router_test(tc_transport_t *t, tc_xfer_t *const *xs, int n)
{
    const tc_router_t *rt = t->impl;
    tc_xfer_t *batch[TEST_BATCH];
    tc_status_t st;
    int c, i, k;

    for (c = 0; c < rt->nchildren; c++) {
        tc_transport_t *child = rt->child[c];
        for (i = 0, k = 0; i < n; i++) {
            if (!xs[i]->done && rt->route[xs[i]->peer] == c) {
                batch[k++] = xs[i];
            }
            if (k > 0 && (k == TEST_BATCH || i == n - 1)) {
                if ((st = child->test(child, batch, k)) != TC_OK) {
                    return child_failed(t, child, st);
                }
                k = 0;
            }
        }
    }
    return TC_OK;
}

static void router_abandon(tc_transport_t *t, tc_xfer_t *x)
{
    tc_transport_t *c = child_of(t, x->peer);

    if (c != NULL && c->abandon != NULL) {
        c->abandon(c, x);
    }
}

/* The children are the opener's: only the table goes. */
static void router_close(tc_transport_t *t)
{
    tc_router_t *rt = t->impl;

    free(rt->route);
    rt->route = NULL;
}

tc_status_t tc__router_open(tc_transport_t *t, tc_router_t *impl, tc_transport_t *const *children,
                            int n, const int *route, uint32_t spin, uint32_t backoff_max_us)
{
    int c, p, rank, size;

    tc__transport_init(t, -1, 0, spin, backoff_max_us);
    if (n < 1 || n > TC_ROUTER_MAX_CHILDREN) {
        snprintf(t->err, sizeof(t->err), "router: %d children (1..%d)", n, TC_ROUTER_MAX_CHILDREN);
        return TC_ERR_ARG;
    }
    rank = children[0]->rank;
    size = children[0]->size;
    for (c = 1; c < n; c++) {
        if (children[c]->rank != rank || children[c]->size != size) {
            snprintf(t->err, sizeof(t->err),
                     "router: child %d is rank %d of %d, child 0 rank "
                     "%d of %d",
                     c, children[c]->rank, children[c]->size, rank, size);
            return TC_ERR_ARG;
        }
    }
    memset(impl, 0, sizeof(*impl));
    impl->route = malloc((size_t)(size > 0 ? size : 1) * sizeof(*impl->route));
    if (impl->route == NULL) {
        snprintf(t->err, sizeof(t->err), "router: out of memory for %d routes", size);
        return TC_ERR_NOMEM;
    }
    for (c = 0; c < n; c++) {
        impl->child[c] = children[c];
    }
    impl->nchildren = n;
    for (p = 0; p < size; p++) {
        int to = -1;
        if (route != NULL) {
            to = route[p];
            if (to < -1 || to >= n || (to >= 0 && !children[to]->reaches(children[to], p))) {
                snprintf(t->err, sizeof(t->err), "router: rank %d routed to child %d, which %s", p,
                         to, to < -1 || to >= n ? "does not exist" : "does not reach it");
                free(impl->route);
                impl->route = NULL;
                return TC_ERR_ARG;
            }
        }
        for (c = 0; route == NULL && c < n && to < 0; c++) {
            to = children[c]->reaches(children[c], p) ? c : -1;
        }
        impl->route[p] = (signed char)to;
    }
    t->rank = rank;
    t->size = size;
    t->reaches = router_reaches;
    t->post = router_post;
    t->test = router_test;
    t->abandon = router_abandon;
    t->close = router_close;
    t->impl = impl;
    return TC_OK;
}
