/*
 * proxy.c - the proxy: one service thread per tc_proxy_t that takes
 * triggers out of its FIFO, in position order, and runs the handler on each.
 * It needs neither MPI nor tc_init, and must never burn a core while idle,
 * lose a trigger pushed before a stop, or crash because binding failed.
 *
 * The thread's life:
 *
 *   step  who                        does
 *   ----  -------------------------  -------------------------------------------------
 *    1    tc_proxy_start             creates the thread (and, if blocking, waits for 4)
 *    2    proxy thread               runs the init hook (default: bind to TCOLL_PROXY_CPUS);
 *                                    a device proxy first makes its device current and
 *                                    binds near it (proxy_bind.c), then runs the hook
 *    3    proxy thread               marks itself ready, wakes a blocking start
 *    4    proxy thread               loop: poll -> handler -> pop; when empty spin
 *                                    for PROXY_SPIN_NS (on one CPU: see
 *                                    PROXY_SINGLE_POLLS), then park on the
 *                                    FIFO's doorbell until a push (or a stop)
 *                                    rings it; in device mode (below) for a
 *                                    limited time
 *    5    tc_proxy_stop              records stop_pos = head (every position pushed
 *                                    before the call is below it), rings the doorbell
 *    6    proxy thread               leaves the loop once tail >= stop_pos, or after a
 *                                    handler returns TC_PROXY_STOP (that trigger popped)
 *    7    tc_proxy_stop / _start /   join the thread; a stopped proxy can be started
 *         _destroy                   again and goes on with what is left in its FIFO
 *
 * start, stop and destroy are serialized by a mutex, so they may be called
 * from any threads; none of them may be called from the handler or the init
 * hook (the proxy thread itself): that is refused with TC_ERR_STATE.
 *
 * Device mode. Once tc_fifo_device_view has handed out a view of the FIFO,
 * producers that cannot ring the doorbell (a GPU) may push, so in step 4 the
 * thread parks for PROXY_PARK_MIN_NS, then, while each park ends with nothing
 * to do, for twice as long, up to PROXY_PARK_MAX_NS; between two such parks
 * it polls once and does not spin again. A device push is thus handled
 * within about PROXY_PARK_MAX_NS even by a sleeping proxy, which wakes about
 * a thousand times a second to look (on 2 KVM vCPUs: ~20 us of CPU each, so
 * under 2% of one core while idle; 0 outside device mode). A ring
 * (a host push, a stop) still wakes it at once, and the stop of step 5 still
 * drains: head counts the device positions too, and the thread polls until
 * tail reaches it.
 *
 * Progress hook (proxy_internal.h, for tcoll's channels across nodes): in
 * step 4 the thread runs it whenever the FIFO is empty, and goes on at once
 * when it did something; idle, it parks with a time limit as in device mode,
 * because the hook's work (MPI messages arriving) rings no doorbell. While
 * a thread waits for such a message it kicks the proxy (tc__proxy_kick):
 * for a while the idle thread then polls with sched_yield between rounds
 * instead of parking, so the message is not left waiting for a timed park
 * to end.
 */
#define _GNU_SOURCE
#include "util/futex.h"

#include "proxy/fifo_internal.h"
#include "proxy/proxy_internal.h"
#include "util/backoff.h"
#include "cuda/cuda.h"
#include "tcoll_fifo_device.h"
#include "util/config.h"
#include "util/log.h"
#include "util/status.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define TC_PROXY_DEFAULT_FIFO_SIZE 512u

/* How long an idle proxy spins on its FIFO before it parks. Long enough
 * that a steady stream of triggers (anything above ~20 k/s) never sees a
 * parked proxy; short enough that idle costs nothing. No sched_yield phase:
 * a parked proxy is woken by the push itself, while a yielding one waits for
 * the scheduler, which on a loaded machine means a time slice (see fifo.c). */
#define PROXY_SPIN_NS 50000u

/* A proxy thread that may run on one CPU only, a CPU that the thread that
 * started it may also run on (read once, after the init hook's binding:
 * shares_cpu), does not spin:
 * a producer that shares that CPU (the rank's own thread, when mpiexec
 * binds the rank to a core) cannot push while the proxy spins, so the spin
 * only delays the next trigger until the scheduler preempts the proxy. It
 * polls PROXY_SINGLE_POLLS times (with the pauses below), then parks; the
 * push rings it awake, and the producer's own wait (which yields or parks
 * on one CPU) lets it run. Measured on 2 KVM vCPUs, 2 ranks bound to a core
 * each, semaphore waits yielding (semaphore.c): port channel ping-pong
 * 27 -> 1.3 us one way (41 us with both spinning). Yielding polls for
 * PROXY_SPIN_NS did as well there, but a producer that busy-polls for the
 * handler's effect (tcoll-proxy-bench's latency loop under taskset -c 0)
 * then waited a scheduler tick per trigger (p50 4 ms, 0.9 us with parking):
 * a runnable proxy is not run at once, a woken one is.
 *
 * In device mode it polls with sched_yield for PROXY_SPIN_NS instead: a
 * device push cannot ring, so a proxy parked early would find it only when
 * a timed park ends (50 us or more), while a yield still lets a thread that
 * shares the CPU run (test_fifo_device under taskset -c 0: 7.5 s parking
 * after 4 polls, 3.8 s yielding, 3.6 s spinning).
 *
 * A proxy bound to a CPU of its own, one its starter may not run on
 * (TCOLL_PROXY_CPUS naming a core set aside for it), spins as usual: the
 * threads that push into it run elsewhere. */
#define PROXY_SINGLE_POLLS 4u

/* Polls between two clock reads while spinning (up to ~13 us apart). */
#define PROXY_CLOCK_EVERY 16u

/* At most 2^PROXY_PAUSE_LOG2 CPU pauses between two polls of an empty FIFO. */
#define PROXY_PAUSE_LOG2 4u

/* Device mode: the first timed park, and the longest (see the top). */
#define PROXY_PARK_MIN_NS 50000u
#define PROXY_PARK_MAX_NS 1000000u

struct tc_proxy {
    tc_fifo_t *fifo;
    tc_proxy_handler_t handler;
    void *handler_arg;
    tc_proxy_init_t init;
    void *init_arg;
    tc__proxy_progress_t progress; /* proxy_internal.h; NULL: none */
    _Atomic uint64_t hot_until;    /* tc__proxy_kick: yield-poll until then */
    cpu_set_t starter;             /* the CPUs tc_proxy_start's caller may run on */
    int starter_known;
    int shares_cpu; /* proxy thread: see PROXY_SINGLE_POLLS */
    void *progress_arg;

    pthread_mutex_t lock; /* serializes start/stop/destroy; guards started, thread */
    int started;          /* a thread was created and not yet joined */
    pthread_t thread;

    /* The thread's "init done" handshake. A lock of its own: stop joins the
     * thread while holding lock, and the thread must still get here. */
    pthread_mutex_t ready_lock;
    pthread_cond_t ready_cond; /* ready became 1 */
    int ready;                 /* the init hook ran and the thread polls */

    /* UINT64_MAX while running; else the thread leaves once tail >= stop_pos. */
    _Atomic uint64_t stop_pos;
    /* 1 once the thread has left its loop (stop or handler TC_PROXY_STOP). */
    _Atomic int exited;

    /* A proxy for a GPU (tc_proxy_create_device); device -1: a host proxy. */
    int device;
    tc_fifo_device_t dev_view; /* the FIFO as the device sees it (mapped pages) */
};

/* The proxy whose thread this is, so calls from its own handler are refused. */
static _Thread_local tc_proxy_t *proxy_self;

/* ------------------------------------------------------------------------ */
/* The service thread                                                        */
/* ------------------------------------------------------------------------ */

/* How the service thread waits for a trigger before it parks. */
typedef enum {
    PROXY_WAIT_SPIN,  /* spin for PROXY_SPIN_NS */
    PROXY_WAIT_POLLS, /* one CPU: PROXY_SINGLE_POLLS polls */
    PROXY_WAIT_YIELD  /* one CPU, device mode: sched_yield polls for PROXY_SPIN_NS */
} proxy_wait_t;

/* The service thread's idle state, reset whenever it handles a trigger. */
typedef struct {
    uint64_t since;    /* when the spin began */
    uint32_t polls;    /* empty polls in a row, while spinning */
    uint32_t park_ns;  /* device mode: the next timed park's length; 0 while spinning */
    proxy_wait_t wait; /* chosen when the spin begins */
} proxy_idle_t;

static inline void proxy_idle_reset(proxy_idle_t *idle)
{
    idle->polls = 0;
    idle->park_ns = 0;
}

/* Waits for work with no trigger ready: spin, then park. Returns when a
 * trigger may be ready or a stop may have been requested. While spinning, the
 * pause between two polls grows 1, 2, 4, ... up to 2^PROXY_PAUSE_LOG2 pauses:
 * each poll of the slot a producer is filling pulls its cache line away from
 * that producer: with one producer, polling after every pause gave ~30 M
 * triggers/s on 2 EPYC vCPUs, this ~40 M (and a cap of 32, ~60 M, but a
 * p50 latency of 400 ns instead of 100). The first quick polls keep the
 * latency of a lone trigger low. In device mode a park that ran out of time
 * is followed by one poll (the caller's) and the next, longer, park. */
static void proxy_idle(tc_proxy_t *p, proxy_idle_t *idle)
{
    tc_fifo_t *f = p->fifo;
    uint32_t polls, ticket, i, n;

    if (p->progress != NULL &&
        tc__now_ns() < atomic_load_explicit(&p->hot_until, memory_order_relaxed)) {
        /* Kicked: a thread waits for a message the hook will bring. */
        proxy_idle_reset(idle);
        sched_yield();
        return;
    }
    if (idle->park_ns != 0) {
        goto park; /* device mode, between two timed parks */
    }
    polls = idle->polls++;
    if (polls == 0) {
        idle->since = tc__now_ns();
        idle->wait = !p->shares_cpu            ? PROXY_WAIT_SPIN
                     : tc__fifo_device_mode(f) ? PROXY_WAIT_YIELD
                                               : PROXY_WAIT_POLLS;
    } else if (idle->wait == PROXY_WAIT_POLLS
                   ? polls >= PROXY_SINGLE_POLLS
                   : (idle->wait == PROXY_WAIT_YIELD || polls % PROXY_CLOCK_EVERY == 0) &&
                         tc__now_ns() - idle->since >= PROXY_SPIN_NS) {
        goto park;
    }
    if (idle->wait == PROXY_WAIT_YIELD) {
        sched_yield();
        return;
    }
    n = polls < PROXY_PAUSE_LOG2 ? 1u << polls : 1u << PROXY_PAUSE_LOG2;
    for (i = 0; i < n; i++) {
        tc__cpu_relax();
    }
    return;

park:
    ticket = tc__fifo_park_prepare(f);
    /* acquire (stop_pos): the store in proxy_join is followed by a release
     * ring; if our ticket (acquire) counts that ring we see the store, and
     * if it predates the ring, the futex refuses to sleep or the ring wakes
     * us. */
    if (tc__fifo_ready(f) ||
        tc__fifo_tail(f) >= atomic_load_explicit(&p->stop_pos, memory_order_acquire)) {
        tc__fifo_park_cancel(f);
        proxy_idle_reset(idle);
        return;
    }
    /* The mode is read after the ticket: see tc__fifo_device_mode. A
     * progress hook has work that no ring announces either. */
    if (!tc__fifo_device_mode(f) && p->progress == NULL) {
        tc__fifo_park(f, ticket);
        proxy_idle_reset(idle);
        return;
    }
    if (idle->park_ns == 0) {
        idle->park_ns = PROXY_PARK_MIN_NS;
    }
    if (tc__fifo_park_timed(f, ticket, idle->park_ns)) {
        proxy_idle_reset(idle); /* rung: a host push or a stop, as above */
    } else if (idle->park_ns < PROXY_PARK_MAX_NS) {
        /* Ran out of time: a device push may be waiting (no ring tells). */
        idle->park_ns =
            idle->park_ns * 2u < PROXY_PARK_MAX_NS ? idle->park_ns * 2u : PROXY_PARK_MAX_NS;
    }
}

static void proxy_loop(tc_proxy_t *p)
{
    tc_fifo_t *f = p->fifo;
    tc_proxy_handler_t handler = p->handler;
    void *arg = p->handler_arg;
    proxy_idle_t idle = {0, 0, 0, PROXY_WAIT_SPIN};
    tc_trigger_t t;

    for (;;) {
        /* relaxed: stop_pos is only a number; proxy_idle re-reads it with
         * acquire before parking, and the stopper rings after storing it. */
        if (tc__fifo_tail(f) >= atomic_load_explicit(&p->stop_pos, memory_order_relaxed)) {
            return;
        }
        if (tc__fifo_poll(f, &t)) {
            tc_proxy_result_t r = handler(t, arg);
            tc__fifo_pop(f);
            if (r == TC_PROXY_STOP) {
                TC_DEBUG("proxy", "handler returned TC_PROXY_STOP at position %llu",
                         (unsigned long long)(tc__fifo_tail(f) - 1));
                return;
            }
            proxy_idle_reset(&idle);
            continue;
        }
        if (p->progress != NULL && p->progress(p->progress_arg)) {
            proxy_idle_reset(&idle);
            continue;
        }
        proxy_idle(p, &idle);
    }
}

/* Proxy thread, after its init hook: 1 when it may run on one CPU only and
 * the thread that started it may run there too (PROXY_SINGLE_POLLS). */
static int proxy_shares_cpu(const tc_proxy_t *p)
{
    cpu_set_t mine, both;

    if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || CPU_COUNT(&mine) != 1) {
        return 0;
    }
    if (!p->starter_known) {
        return 1;
    }
    CPU_AND(&both, &mine, &p->starter);
    return CPU_COUNT(&both) > 0;
}

/* Proxy thread of a device proxy, first thing: the device becomes current
 * (the thread's copies and launches go to it), then the thread binds to the
 * device's NUMA node, unless TCOLL_PROXY_CPUS names CPUs (then to those). */
static void proxy_device_setup(tc_proxy_t *p)
{
    char why[256], bus[32];

    if (tc__cuda_set_current(p->device, why, sizeof(why)) != TC_OK) {
        TC_WARN("proxy", "device proxy: making CUDA device %d current failed: %s", p->device, why);
    }
    if (tc__config()->proxy_cpus[0] != '\0') {
        tc__proxy_bind_knob();
    } else if (tc__cuda_pci_bus_id(p->device, bus, sizeof(bus), why, sizeof(why)) != TC_OK) {
        TC_WARN("proxy", "device proxy: CUDA device %d: %s; proxy thread not bound", p->device,
                why);
    } else {
        (void)tc__proxy_bind_pci(bus, NULL, 0);
    }
}

static void *proxy_main(void *arg)
{
    tc_proxy_t *p = arg;

    proxy_self = p;
    if (p->device >= 0) {
        proxy_device_setup(p);
        if (p->init != NULL) {
            p->init(p->init_arg);
        }
    } else if (p->init != NULL) {
        p->init(p->init_arg);
    } else {
        tc__proxy_bind_knob();
    }
    p->shares_cpu = proxy_shares_cpu(p); /* after the hook's binding: see PROXY_SINGLE_POLLS */
    pthread_mutex_lock(&p->ready_lock);
    p->ready = 1;
    pthread_cond_broadcast(&p->ready_cond);
    pthread_mutex_unlock(&p->ready_lock);

    proxy_loop(p);
    tc__fifo_flush(p->fifo); /* no producer may stay parked on a wake we owe */

    /* release: pairs with the acquire load in tc_proxy_start; only a hint
     * there (pthread_join does the real synchronization). */
    atomic_store_explicit(&p->exited, 1, memory_order_release);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                */
/* ------------------------------------------------------------------------ */

tc_status_t tc_proxy_create(tc_proxy_handler_t handler, void *handler_arg, tc_proxy_init_t init,
                            void *init_arg, uint32_t fifo_size, tc_proxy_t **proxy_p)
{
    tc_proxy_t *p;
    tc_status_t st;
    int rc;

    if (handler == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_proxy_create: handler is NULL");
    }
    if (proxy_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_proxy_create: proxy_p is NULL");
    }
    if (fifo_size == 0) {
        fifo_size = TC_PROXY_DEFAULT_FIFO_SIZE;
    }
    if (fifo_size > TC_FIFO_MAX_SIZE || (fifo_size & (fifo_size - 1)) != 0) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_proxy_create: fifo_size %u is not 0 or a power of two in 1..%u",
                             fifo_size, TC_FIFO_MAX_SIZE);
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        st = tc__set_error(TC_ERR_NOMEM, "tc_proxy_create: out of memory");
        goto err;
    }
    p->handler = handler;
    p->handler_arg = handler_arg;
    p->device = -1;
    p->init = init;
    p->init_arg = init_arg;
    /* relaxed: the proxy is not shared yet. */
    atomic_store_explicit(&p->stop_pos, UINT64_MAX, memory_order_relaxed);
    atomic_store_explicit(&p->exited, 0, memory_order_relaxed);
    st = tc_fifo_create(fifo_size, &p->fifo);
    if (st != TC_OK) {
        goto err_free;
    }
    rc = pthread_mutex_init(&p->lock, NULL);
    if (rc != 0) {
        st = tc__set_error(TC_ERR_NOMEM, "tc_proxy_create: pthread_mutex_init: %s", strerror(rc));
        goto err_fifo;
    }
    rc = pthread_mutex_init(&p->ready_lock, NULL);
    if (rc != 0) {
        st = tc__set_error(TC_ERR_NOMEM, "tc_proxy_create: pthread_mutex_init: %s", strerror(rc));
        goto err_lock;
    }
    rc = pthread_cond_init(&p->ready_cond, NULL);
    if (rc != 0) {
        st = tc__set_error(TC_ERR_NOMEM, "tc_proxy_create: pthread_cond_init: %s", strerror(rc));
        goto err_ready_lock;
    }
    *proxy_p = p;
    return TC_OK;

err_ready_lock:
    pthread_mutex_destroy(&p->ready_lock);
err_lock:
    pthread_mutex_destroy(&p->lock);
err_fifo:
    tc_fifo_destroy(p->fifo);
err_free:
    free(p);
err:
    return st;
}

/* Waits until the thread is ready, warning every second. */
static void proxy_wait_ready(tc_proxy_t *p)
{
    struct timespec deadline;
    uint64_t t0 = tc__now_ns();

    pthread_mutex_lock(&p->ready_lock);
    while (!p->ready) {
        deadline = tc__deadline_after_ns(1000000000ull);
        if (pthread_cond_timedwait(&p->ready_cond, &p->ready_lock, &deadline) == ETIMEDOUT &&
            !p->ready) {
            TC_WARN("proxy", "tc_proxy_start: still waiting for the proxy's init hook after %.0f s",
                    (double)(tc__now_ns() - t0) / 1e9);
        }
    }
    pthread_mutex_unlock(&p->ready_lock);
}

/* Joins the thread (lock held): drains up to the current head first unless
 * the thread already left on its own. */
static void proxy_join(tc_proxy_t *p)
{
    /* relaxed: head is only a number here; every push that returned before
     * this call made its fetch_add earlier, so coherence gives a head above
     * its position. */
    uint64_t head = atomic_load_explicit(&p->fifo->head, memory_order_relaxed);

    /* relaxed: the ring right after is a release RMW that publishes this to
     * a parked proxy (its acquire of bell, see proxy_idle); a running proxy
     * only needs to see it eventually. */
    atomic_store_explicit(&p->stop_pos, head, memory_order_relaxed);
    tc__fifo_ring(p->fifo);
    pthread_join(p->thread, NULL);
    p->started = 0;
    /* relaxed: no thread runs; the next start publishes it through pthread_create. */
    atomic_store_explicit(&p->stop_pos, UINT64_MAX, memory_order_relaxed);
    atomic_store_explicit(&p->exited, 0, memory_order_relaxed);
}

tc_status_t tc_proxy_start(tc_proxy_t *proxy, int blocking)
{
    pthread_attr_t attr;
    int rc;

    if (proxy == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_proxy_start: proxy is NULL");
    }
    if (proxy_self == proxy) {
        return tc__set_error(
            TC_ERR_STATE, "tc_proxy_start: called from the proxy's own thread (handler or init)");
    }
    pthread_mutex_lock(&proxy->lock);
    if (proxy->started) {
        /* acquire: pairs with the release store at the end of proxy_main. */
        if (!atomic_load_explicit(&proxy->exited, memory_order_acquire)) {
            pthread_mutex_unlock(&proxy->lock);
            return tc__set_error(TC_ERR_STATE, "tc_proxy_start: the proxy is already running");
        }
        /* The handler stopped it: reap the old thread, then start afresh. */
        proxy_join(proxy);
    }
    /* No thread runs: ready needs no lock here; pthread_create publishes it. */
    proxy->ready = 0;
    proxy->starter_known = sched_getaffinity(0, sizeof(proxy->starter), &proxy->starter) == 0;
    rc = pthread_attr_init(&attr);
    if (rc == 0) {
        rc = pthread_create(&proxy->thread, &attr, proxy_main, proxy);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        pthread_mutex_unlock(&proxy->lock);
        TC_ERROR("proxy", "tc_proxy_start: cannot create the proxy thread: %s", strerror(rc));
        return tc__set_error(rc == EAGAIN ? TC_ERR_NOMEM : TC_ERR_STATE,
                             "tc_proxy_start: cannot create the proxy thread: %s", strerror(rc));
    }
    (void)pthread_setname_np(proxy->thread, "tcoll-proxy");
    proxy->started = 1;
    if (blocking) {
        proxy_wait_ready(proxy);
    }
    pthread_mutex_unlock(&proxy->lock);
    return TC_OK;
}

tc_status_t tc_proxy_stop(tc_proxy_t *proxy)
{
    if (proxy == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_proxy_stop: proxy is NULL");
    }
    if (proxy_self == proxy) {
        return tc__set_error(TC_ERR_STATE,
                             "tc_proxy_stop: called from the proxy's own thread (handler or init); "
                             "return TC_PROXY_STOP from the handler instead");
    }
    pthread_mutex_lock(&proxy->lock);
    if (!proxy->started) {
        pthread_mutex_unlock(&proxy->lock);
        return tc__set_error(TC_ERR_STATE, "tc_proxy_stop: the proxy is not running");
    }
    proxy_join(proxy);
    pthread_mutex_unlock(&proxy->lock);
    return TC_OK;
}

void tc_proxy_destroy(tc_proxy_t *proxy)
{
    if (proxy == NULL) {
        return;
    }
    if (proxy_self == proxy) {
        TC_ERROR("proxy", "tc_proxy_destroy called from the proxy's own thread; ignored");
        tc__set_error(TC_ERR_STATE, "tc_proxy_destroy: called from the proxy's own thread");
        return;
    }
    pthread_mutex_lock(&proxy->lock);
    if (proxy->started) {
        proxy_join(proxy);
    }
    pthread_mutex_unlock(&proxy->lock);
    pthread_cond_destroy(&proxy->ready_cond);
    pthread_mutex_destroy(&proxy->ready_lock);
    pthread_mutex_destroy(&proxy->lock);
    if (proxy->device >= 0) {
        tc__cuda_host_unmap(proxy->fifo); /* the FIFO's pages start at the struct */
    }
    tc_fifo_destroy(proxy->fifo);
    free(proxy);
}

tc_status_t tc_proxy_create_device(int device, tc_proxy_handler_t handler, void *handler_arg,
                                   tc_proxy_init_t init, void *init_arg, uint32_t fifo_size,
                                   tc_proxy_t **proxy_p)
{
    tc_fifo_device_t host_view;
    tc_proxy_t *p = NULL;
    void *dev_base = NULL;
    char why[256];
    tc_status_t st;
    int n;

    if (handler == NULL || proxy_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_proxy_create_device: %s is NULL",
                             handler == NULL ? "handler" : "proxy_p");
    }
    if (device < TC_PROXY_CURRENT_DEVICE) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_proxy_create_device: device %d is neither a CUDA device nor "
                             "TC_PROXY_CURRENT_DEVICE (-1)",
                             device);
    }
    if (device == TC_PROXY_CURRENT_DEVICE) {
        if ((st = tc__cuda_current(&device, why, sizeof(why))) != TC_OK) {
            return tc__set_error(st, "tc_proxy_create_device: no current CUDA device: %s", why);
        }
    } else if ((n = tc__cuda_device_count()) <= device) {
        const char *no = "";
        if (n == 0) {
            (void)tc__cuda_available(&no);
            return tc__set_error(TC_ERR_STATE, "tc_proxy_create_device: CUDA device %d: %s", device,
                                 no);
        }
        return tc__set_error(TC_ERR_ARG,
                             "tc_proxy_create_device: CUDA device %d does not exist (this "
                             "process sees %d)",
                             device, n);
    }
    if ((st = tc_proxy_create(handler, handler_arg, init, init_arg, fifo_size, &p)) != TC_OK) {
        return st;
    }
    /* The FIFO's pages, head, tail and slots, mapped for the device; the
     * view puts the FIFO in device mode (timed parks: a kernel cannot ring). */
    (void)tc_fifo_device_view(p->fifo, &host_view);
    st = tc__cuda_host_map(device, host_view.map_base, host_view.map_bytes, &dev_base, why,
                           sizeof(why));
    if (st != TC_OK) {
        tc_proxy_destroy(p);
        return tc__set_error(st, "tc_proxy_create_device: mapping the FIFO for CUDA device %d: %s",
                             device, why);
    }
    tc_fifo_device_rebase(&host_view, dev_base, &p->dev_view);
    p->device = device;
    *proxy_p = p;
    return TC_OK;
}

int tc_proxy_device(const tc_proxy_t *proxy)
{
    return proxy != NULL ? proxy->device : -1;
}

tc_status_t tc_proxy_fifo_device(tc_proxy_t *proxy, tc_fifo_device_t *view_p)
{
    if (proxy == NULL || view_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_proxy_fifo_device: %s is NULL",
                             proxy == NULL ? "proxy" : "view_p");
    }
    if (proxy->device < 0) {
        return tc__set_error(TC_ERR_STATE,
                             "tc_proxy_fifo_device: the proxy was not made for a device "
                             "(tc_proxy_create_device)");
    }
    *view_p = proxy->dev_view;
    return TC_OK;
}

tc_status_t tc__proxy_set_progress(tc_proxy_t *p, tc__proxy_progress_t fn, void *arg)
{
    tc_status_t st = TC_OK;

    if (p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc__proxy_set_progress: proxy is NULL");
    }
    pthread_mutex_lock(&p->lock);
    if (p->started) {
        st = tc__set_error(TC_ERR_STATE, "tc__proxy_set_progress: the proxy is running");
    } else {
        p->progress = fn;
        p->progress_arg = arg;
    }
    pthread_mutex_unlock(&p->lock);
    return st;
}

void tc__proxy_kick(tc_proxy_t *p, uint64_t for_ns)
{
    uint64_t until = tc__now_ns() + for_ns;
    uint64_t cur = atomic_load_explicit(&p->hot_until, memory_order_relaxed);

    /* relaxed: a hint; the ring below wakes a parked proxy to read it. */
    while (cur < until &&
           !atomic_compare_exchange_weak_explicit(&p->hot_until, &cur, until, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
    tc__fifo_ring(p->fifo);
}

tc_fifo_t *tc_proxy_fifo(tc_proxy_t *proxy)
{
    if (proxy == NULL) {
        tc__set_error(TC_ERR_ARG, "tc_proxy_fifo: proxy is NULL");
        return NULL;
    }
    return proxy->fifo;
}
