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
 *
 * In every case a proxy with its own init hook is not bound either.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "tcoll.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
    return tc_test_main(argc, argv, &(tc_test_opts_t){.one_case_per_run = 1});
}
