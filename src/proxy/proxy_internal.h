/*
 * proxy_internal.h - what tcoll's own layers (channels) may ask of a proxy
 * beyond tcoll.h: a progress hook, for a proxy that also drives a transport
 * (MPI requests) between triggers; and, shared by the proxy's files, where
 * its thread is bound (proxy_bind.c).
 */
#ifndef TC_PROXY_INTERNAL_H
#define TC_PROXY_INTERNAL_H

#include "tcoll.h"

#include <stddef.h>

/* Runs on the proxy thread; returns 1 when it did something (the thread
 * then polls again at once), 0 when there was nothing to do. */
typedef int (*tc__proxy_progress_t)(void *arg);

/* Before tc_proxy_start (else TC_ERR_STATE): fn(arg) runs on the proxy
 * thread whenever its FIFO is empty. An idle proxy with a progress hook
 * parks with a time limit, as in device mode (proxy.c), so fn runs at least
 * about every millisecond even when no trigger comes; a handler may call fn
 * itself while it waits. */
tc_status_t tc__proxy_set_progress(tc_proxy_t *p, tc__proxy_progress_t fn, void *arg);

/* Any thread: someone waits for what the progress hook will bring (a
 * message from another node). For the next for_ns the idle proxy polls its
 * FIFO and its hook with a sched_yield between rounds instead of parking,
 * and a parked proxy is woken now. */
void tc__proxy_kick(tc_proxy_t *p, uint64_t for_ns);

/* proxy_bind.c, on the thread to bind. tc__proxy_bind_knob: to the CPUs of
 * TCOLL_PROXY_CPUS when it is set (a bad value warns). tc__proxy_bind_pci:
 * to the CPUs this process may use of the NUMA node nearest PCI device
 * busid ("0000:3b:00.0"); 1 when bound (where, when where_len > 0, then
 * lists the CPUs), 0 with a warning when not. */
void tc__proxy_bind_knob(void);
int tc__proxy_bind_pci(const char *busid, char *where, size_t where_len);

#endif
