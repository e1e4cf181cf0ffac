/*
 * proxy_bind.c - where a proxy thread runs: on the CPUs TCOLL_PROXY_CPUS
 * names (the default init hook of a host proxy, and a device proxy when the
 * knob is set), or on the CPUs of the NUMA node closest to a PCI device
 * (a device proxy: its GPU). hwloc finds both. Every failure is a warning:
 * the thread then runs wherever the OS puts it, and nothing else changes.
 *
 * Only CPUs are bound, not memory: what the thread allocates then lands on
 * its own node by first touch, and a node short of memory does not make an
 * allocation fail.
 */
#define _GNU_SOURCE
#include "proxy/proxy_internal.h"
#include "util/config.h"
#include "util/log.h"

#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* TCOLL_PROXY_CPUS                                                          */
/* ------------------------------------------------------------------------ */

/*
 * The knob is an hwloc list of OS CPU numbers ("0-3,8"), or "numa:" and an
 * hwloc list of NUMA node numbers ("numa:1") to bind to those nodes' CPUs.
 * Every failure is a warning: the proxy then runs wherever the OS puts it.
 */
void tc__proxy_bind_knob(void)
{
    const char *spec = tc__config()->proxy_cpus;
    hwloc_topology_t topo;
    hwloc_bitmap_t want, set;
    const char *list = spec;
    int numa = 0;
    char *text = NULL;

    if (spec[0] == '\0') {
        return;
    }
    if (strncmp(spec, "numa:", 5) == 0) {
        numa = 1;
        list = spec + 5;
    }
    if (hwloc_topology_init(&topo) != 0) {
        TC_WARN("proxy",
                "TCOLL_PROXY_CPUS=%s: hwloc_topology_init failed: %m; proxy thread not bound",
                spec);
        return;
    }
    if (hwloc_topology_load(topo) != 0) {
        TC_WARN("proxy",
                "TCOLL_PROXY_CPUS=%s: hwloc_topology_load failed: %m; proxy thread not bound",
                spec);
        goto err_topo;
    }
    want = hwloc_bitmap_alloc();
    set = hwloc_bitmap_alloc();
    if (want == NULL || set == NULL) {
        TC_WARN("proxy", "TCOLL_PROXY_CPUS=%s: out of memory; proxy thread not bound", spec);
        goto err_bitmaps;
    }
    if (list[0] == '\0' || hwloc_bitmap_list_sscanf(want, list) != 0 || hwloc_bitmap_iszero(want)) {
        TC_WARN("proxy",
                "TCOLL_PROXY_CPUS=\"%s\" is not a list of %s numbers like \"0-3,8\"%s; proxy "
                "thread not bound",
                spec, numa ? "NUMA node" : "CPU", numa ? "" : " (or numa:<nodes>)");
        goto err_bitmaps;
    }
    if (numa) {
        hwloc_bitmap_and(want, want, hwloc_topology_get_topology_nodeset(topo));
        hwloc_cpuset_from_nodeset(topo, set, want);
    } else {
        hwloc_bitmap_copy(set, want);
    }
    hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(topo));
    if (hwloc_bitmap_iszero(set)) {
        hwloc_bitmap_list_asprintf(&text, hwloc_topology_get_allowed_cpuset(topo));
        TC_WARN("proxy",
                "TCOLL_PROXY_CPUS=%s names no %s this process may use (allowed CPUs: %s); proxy "
                "thread not bound",
                spec, numa ? "NUMA node with CPUs" : "CPU", text ? text : "?");
        goto err_bitmaps;
    }
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0) {
        hwloc_bitmap_list_asprintf(&text, set);
        TC_WARN("proxy",
                "TCOLL_PROXY_CPUS=%s: binding the proxy thread to CPUs %s failed: %m; "
                "proxy thread not bound",
                spec, text ? text : "?");
        goto err_bitmaps;
    }
    hwloc_bitmap_list_asprintf(&text, set);
    TC_INFO("proxy", "proxy thread bound to CPUs %s (TCOLL_PROXY_CPUS=%s)", text ? text : "?",
            spec);

err_bitmaps:
    free(text);
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(want);
err_topo:
    hwloc_topology_destroy(topo);
}

/* ------------------------------------------------------------------------ */
/* The NUMA node of a PCI device                                             */
/* ------------------------------------------------------------------------ */

int tc__proxy_bind_pci(const char *busid, char *where, size_t where_len)
{
    hwloc_topology_t topo;
    hwloc_obj_t dev, near;
    hwloc_bitmap_t set = NULL;
    char *text = NULL;
    int bound = 0;

    if (where_len > 0) {
        where[0] = '\0';
    }
    if (hwloc_topology_init(&topo) != 0) {
        TC_WARN("proxy", "PCI device %s: hwloc_topology_init failed: %m; proxy thread not bound",
                busid);
        return 0;
    }
    /* I/O objects are not in a topology by default. Every PCI device and
     * bridge: hwloc's "important" ones leave some devices out, and the
     * tests bind near whatever device the machine has. */
    (void)hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
#if HWLOC_API_VERSION >= 0x00020100
    /* Linux's own discovery reads the PCI devices and their NUMA locality
     * from sysfs; hwloc's "pci" plugin (libpciaccess) is not needed for
     * that, is slower, and leaves allocations behind when it is unloaded. */
    (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
#endif
    if (hwloc_topology_load(topo) != 0) {
        TC_WARN("proxy", "PCI device %s: hwloc_topology_load failed: %m; proxy thread not bound",
                busid);
        goto out;
    }
    dev = hwloc_get_pcidev_by_busidstring(topo, busid);
    if (dev == NULL) {
        TC_WARN("proxy",
                "PCI device %s is not in this machine's topology (hwloc); proxy thread not bound",
                busid);
        goto out;
    }
    near = hwloc_get_non_io_ancestor_obj(topo, dev);
    set = hwloc_bitmap_alloc();
    if (near == NULL || near->cpuset == NULL || set == NULL) {
        TC_WARN("proxy", "PCI device %s: no CPUs near it (hwloc); proxy thread not bound", busid);
        goto out;
    }
    hwloc_bitmap_and(set, near->cpuset, hwloc_topology_get_allowed_cpuset(topo));
    hwloc_bitmap_list_asprintf(&text, set);
    if (hwloc_bitmap_iszero(set)) {
        TC_WARN("proxy",
                "PCI device %s: this process may use none of the CPUs near it; proxy thread "
                "not bound",
                busid);
        goto out;
    }
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0) {
        TC_WARN("proxy",
                "PCI device %s: binding the proxy thread to CPUs %s failed: %m; proxy thread "
                "not bound",
                busid, text ? text : "?");
        goto out;
    }
    bound = 1;
    if (where_len > 0) {
        snprintf(where, where_len, "%s", text ? text : "?");
    }
    TC_INFO("proxy", "proxy thread bound to CPUs %s, near PCI device %s", text ? text : "?", busid);
out:
    free(text);
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    return bound;
}
