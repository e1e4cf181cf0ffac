/*
 * test_proxy_bind.c - the default init hook binds the proxy thread to
 * TCOLL_PROXY_CPUS, and a bad value only warns. The knob is read once per
 * process, so each case needs a process of its own: the CTests name one
 * each (test_proxy_bind --case NAME), and a run of several cases runs each
 * in a child process.
 *
 *   first    the first CPU this process may use: bound to it
 *   numa     "numa:0": bound within the allowed CPUs
 *   garbage  not a CPU list: a warning, not bound
 *   absent   a CPU that does not exist: a warning, not bound
 *   unset    no knob: not bound, no warning
 *   pci      near a PCI device of this machine (sysfs lists it): bound to
 *            the CPUs sysfs says are local to it (those this process may
 *            use); a bus id that is not there: a warning, not bound
 *   device   tc_proxy_create_device: without a usable GPU it is refused
 *            (TC_ERR_STATE, saying why) and makes nothing; bad arguments
 *            are TC_ERR_ARG; a host proxy has no device and no device view.
 *            With a GPU: a proxy for the current device, its FIFO mapped
 *
 * In the knob's cases a proxy with its own init hook is not bound either.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "tcoll.h"

#include "proxy/proxy_internal.h"
#include "tcoll_fifo_device.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    cpu_set_t set; /* the proxy thread's affinity, seen from the handler */
    int ok;
} seen_t;

static tc_proxy_result_t record_affinity(tc_trigger_t t, void *arg)
{
    seen_t *s = arg;

    CHECK_EQ(pthread_getaffinity_np(pthread_self(), sizeof(s->set), &s->set), 0);
    s->ok = 1;
    return TC_PROXY_CONTINUE;
}

static void own_init(void *arg)
{
    (void)arg;
}

/* Runs a proxy (default init unless init given) for one trigger; returns what
 * it wrote to stderr in buf. */
static void run_proxy(tc_proxy_init_t init, seen_t *s, char *buf, size_t len)
{
    char path[] = "/tmp/tcoll_test_bind_XXXXXX";
    tc_trigger_t t = {0, 0};
    tc_proxy_t *p;
    ssize_t n;
    int fd, saved;

    memset(s, 0, sizeof(*s));
    fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    CHECK(saved >= 0 && dup2(fd, 2) == 2);
    CHECK_OK(tc_proxy_create(record_affinity, s, init, NULL, 0, &p));
    CHECK_OK(tc_proxy_start(p, 1));
    CHECK_OK(tc_fifo_sync(tc_proxy_fifo(p), tc_fifo_push(tc_proxy_fifo(p), t), -1));
    CHECK_OK(tc_proxy_stop(p));
    tc_proxy_destroy(p);
    fflush(stderr);
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    n = pread(fd, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    CHECK(s->ok);
    if (buf[0] != '\0') {
        fprintf(stderr, "(captured) %s", buf);
    }
}

static void bind_case(const char *mode)
{
    cpu_set_t allowed;
    char spec[64], out[4096];
    seen_t s;
    int first = -1, i;

    CHECK_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
    for (i = 0; i < CPU_SETSIZE && first < 0; i++) {
        if (CPU_ISSET(i, &allowed)) {
            first = i;
        }
    }
    CHECK_GE(first, 0);

    if (strcmp(mode, "first") == 0) {
        snprintf(spec, sizeof(spec), "%d", first);
    } else if (strcmp(mode, "numa") == 0) {
        snprintf(spec, sizeof(spec), "numa:0");
    } else if (strcmp(mode, "garbage") == 0) {
        snprintf(spec, sizeof(spec), "zero-three");
    } else if (strcmp(mode, "absent") == 0) {
        snprintf(spec, sizeof(spec), "%d", CPU_SETSIZE + 7);
    } else if (strcmp(mode, "unset") == 0) {
        spec[0] = '\0';
    } else {
        TC_CHECK_FAIL("no binding case '%s'", mode);
    }
    if (spec[0] != '\0') {
        CHECK_EQ(setenv("TCOLL_PROXY_CPUS", spec, 1), 0);
    } else {
        CHECK_EQ(unsetenv("TCOLL_PROXY_CPUS"), 0);
    }

    run_proxy(NULL, &s, out, sizeof(out));
    if (strcmp(mode, "first") == 0) {
        CHECK_EQ(CPU_COUNT(&s.set), 1);
        CHECK(CPU_ISSET(first, &s.set));
        CHECK(strstr(out, "proxy WARN") == NULL);
    } else if (strcmp(mode, "numa") == 0) {
        cpu_set_t both;
        CPU_AND(&both, &s.set, &allowed);
        CHECK(CPU_EQUAL(&both, &s.set)); /* a subset of the allowed CPUs */
        CHECK_GE(CPU_COUNT(&s.set), 1);
    } else if (strcmp(mode, "garbage") == 0) {
        CHECK(CPU_EQUAL(&s.set, &allowed));
        CHECK_STR_CONTAINS(out, "TCOLL_PROXY_CPUS=\"zero-three\" is not a list");
        CHECK_STR_CONTAINS(out, "not bound");
    } else if (strcmp(mode, "absent") == 0) {
        CHECK(CPU_EQUAL(&s.set, &allowed));
        CHECK_STR_CONTAINS(out, "names no CPU");
    } else {
        CHECK(CPU_EQUAL(&s.set, &allowed));
        CHECK(strstr(out, "proxy WARN") == NULL);
    }

    /* A proxy with its own init hook ignores the knob. */
    run_proxy(own_init, &s, out, sizeof(out));
    CHECK(CPU_EQUAL(&s.set, &allowed));
    CHECK(strstr(out, "proxy WARN") == NULL);

    printf("test_proxy_bind %s (TCOLL_PROXY_CPUS=\"%s\"): passed\n", mode, spec);
}

TC_CASE(first)
{
    bind_case("first");
}

TC_CASE(numa)
{
    bind_case("numa");
}

TC_CASE(garbage)
{
    bind_case("garbage");
}

TC_CASE(absent)
{
    bind_case("absent");
}

TC_CASE(unset)
{
    bind_case("unset");
}

/* Parses a sysfs CPU list ("0-3,8") into set; 1 on success. */
static int parse_cpulist(const char *text, cpu_set_t *set)
{
    const char *p = text;

    CPU_ZERO(set);
    while (*p != '\0' && *p != '\n') {
        char *end;
        long a = strtol(p, &end, 10), b;
        if (end == p) {
            return 0;
        }
        b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            p = end;
        }
        for (; a <= b && a < CPU_SETSIZE; a++) {
            CPU_SET((int)a, set);
        }
        if (*p == ',') {
            p++;
        }
    }
    return 1;
}

typedef struct {
    const char *busid;
    int bound;
    cpu_set_t set;
    char where[256];
} pci_seen_t;

static void *bind_pci_thread(void *arg)
{
    pci_seen_t *s = arg;

    s->bound = tc__proxy_bind_pci(s->busid, s->where, sizeof(s->where));
    CHECK_EQ(pthread_getaffinity_np(pthread_self(), sizeof(s->set), &s->set), 0);
    return NULL;
}

static void bind_pci_on_thread(pci_seen_t *s)
{
    pthread_t th;

    CHECK_EQ(pthread_create(&th, NULL, bind_pci_thread, s), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
}

TC_CASE(pci)
{
    cpu_set_t allowed, local, want;
    char path[512], text[1024], busid[256] = "";
    struct dirent *e;
    DIR *d = opendir("/sys/bus/pci/devices");
    pci_seen_t s;
    FILE *f;
    size_t n;

    CHECK_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
    /* A bus id that is not there: a warning, the thread left alone. */
    memset(&s, 0, sizeof(s));
    s.busid = "ffff:ff:1f.7";
    bind_pci_on_thread(&s);
    CHECK_EQ(s.bound, 0);
    CHECK(CPU_EQUAL(&s.set, &allowed));

    while (d != NULL && (e = readdir(d)) != NULL && busid[0] == '\0') {
        if (e->d_name[0] != '.') {
            snprintf(busid, sizeof(busid), "%.200s", e->d_name);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    if (busid[0] == '\0') {
        printf("test_proxy_bind pci: this machine lists no PCI device; only the missing one "
               "was tried\n");
        return;
    }
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/local_cpulist", busid);
    f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    CHECK(parse_cpulist(text, &local));
    CPU_AND(&want, &local, &allowed);

    memset(&s, 0, sizeof(s));
    s.busid = busid;
    bind_pci_on_thread(&s);
    CHECK_MSG(s.bound == !!CPU_COUNT(&want), "PCI device %s: bound %d, local CPUs %s", busid,
              s.bound, text);
    if (s.bound) {
        CHECK_MSG(CPU_EQUAL(&s.set, &want), "PCI device %s: bound to %s, its local CPUs are %s",
                  busid, s.where, text);
    }
    text[strcspn(text, "\n")] = '\0';
    printf("test_proxy_bind pci: a thread near %s runs on CPUs %s (sysfs: %s)\n", busid, s.where,
           text);
}

static tc_proxy_result_t count_trigger(tc_trigger_t t, void *arg)
{
    (void)t;
    (*(int *)arg)++;
    return TC_PROXY_CONTINUE;
}

TC_CASE(device)
{
    tc_fifo_device_t v;
    tc_proxy_t *p = (tc_proxy_t *)&v, *host;
    int count = 0;

    CHECK_EQ(tc_proxy_create_device(0, NULL, NULL, NULL, NULL, 0, &p), TC_ERR_ARG);
    CHECK_EQ(tc_proxy_create_device(0, count_trigger, &count, NULL, NULL, 0, NULL), TC_ERR_ARG);
    CHECK_EQ(tc_proxy_create_device(-2, count_trigger, &count, NULL, NULL, 0, &p), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "TC_PROXY_CURRENT_DEVICE");
    CHECK(p == (tc_proxy_t *)&v); /* untouched */
    CHECK_EQ(tc_proxy_device(NULL), -1);
    CHECK_EQ(tc_proxy_fifo_device(NULL, &v), TC_ERR_ARG);

    CHECK_OK(tc_proxy_create(count_trigger, &count, NULL, NULL, 0, &host));
    CHECK_EQ(tc_proxy_device(host), -1);
    CHECK_EQ(tc_proxy_fifo_device(host, &v), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "tc_proxy_create_device");
    tc_proxy_destroy(host);

    if (!tc_cuda_available()) {
        CHECK_EQ(tc_proxy_create_device(TC_PROXY_CURRENT_DEVICE, count_trigger, &count, NULL, NULL,
                                        0, &p),
                 TC_ERR_STATE);
        CHECK(p == (tc_proxy_t *)&v);
        CHECK_EQ(tc_proxy_create_device(0, count_trigger, &count, NULL, NULL, 0, &p), TC_ERR_STATE);
        CHECK(p == (tc_proxy_t *)&v);
        printf("test_proxy_bind device: refused without a GPU: %s\n", tc_last_error());
        return;
    }
    CHECK_EQ(tc_proxy_create_device(4096, count_trigger, &count, NULL, NULL, 0, &p), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "does not exist");
    CHECK_OK(
        tc_proxy_create_device(TC_PROXY_CURRENT_DEVICE, count_trigger, &count, NULL, NULL, 64, &p));
    CHECK_GE(tc_proxy_device(p), 0);
    CHECK_OK(tc_proxy_fifo_device(p, &v));
    CHECK(v.size == 64 && v.head != NULL && v.map_base != NULL && v.slots != NULL);
    CHECK_OK(tc_proxy_start(p, 1));
    {
        tc_trigger_t t = {1, 2};
        CHECK_OK(tc_fifo_sync(tc_proxy_fifo(p), tc_fifo_push(tc_proxy_fifo(p), t), -1));
    }
    CHECK_OK(tc_proxy_stop(p));
    tc_proxy_destroy(p);
    CHECK_EQ(count, 1);
    printf("test_proxy_bind device: a proxy for CUDA device %s\n", tc_cuda_info());
}

int main(int argc, char **argv)
{
    return tc_test_main(argc, argv, &(tc_test_opts_t){.one_case_per_run = 1});
}
