/*
 * router.h - a transport over a few child transports, one per kind of path
 * (shared memory within a node, MPI across nodes): each peer is routed to
 * one child, which carries every transfer to and from that peer.
 *
 * The children number the group as the router does (same rank, same size).
 * The router owns its route table only: the children are the opener's, who
 * opens them before the router, closes them after it, and does not use them
 * directly while the router is open. Waits happen in the router's blocking
 * exchange under the router's wait policy (t->wait); the children's own
 * policies are not used through it.
 */
#ifndef TC_TRANSPORT_ROUTER_H
#define TC_TRANSPORT_ROUTER_H

#include "transport/transport.h"

#define TC_ROUTER_MAX_CHILDREN 4

typedef struct {
    tc_transport_t *child[TC_ROUTER_MAX_CHILDREN];
    int nchildren;
    signed char *route; /* [size]: peer -> index in child[], -1: unreachable */
} tc_router_t;

/*
 * Opens t over children[0..n-1] (1 <= n <= TC_ROUTER_MAX_CHILDREN, all open,
 * all of the same rank and size). route[p] is the child that carries peer p
 * (-1: none); route NULL: the first child that reaches p. A route to a child
 * that does not reach its peer is refused. The wait policy backs off with
 * spin polls then sleeps up to backoff_max_us and has no hooks (the owner
 * sets t->wait's). impl must live until t is closed; close frees the route
 * table and leaves the children open. TC_OK, TC_ERR_ARG (children or route
 * do not fit) or TC_ERR_NOMEM, with the reason in t->err and t not open.
 * Called by the thread that owns the children.
 */
tc_status_t tc__router_open(tc_transport_t *t, tc_router_t *impl, tc_transport_t *const *children,
                            int n, const int *route, uint32_t spin, uint32_t backoff_max_us);

/* The index of the child that carries peer, or -1 (no such peer, or no
 * route to it). */
int tc__router_child(const tc_transport_t *t, int peer);

#endif
