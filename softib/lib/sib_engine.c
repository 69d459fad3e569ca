/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * The packet engine: one per process, shared by every open device context.
 *
 * A NIC works while the host does other things; here "the NIC" is whichever
 * thread holds the engine lock and runs sib_engine_progress():
 * - an application that busy-polls its CQs drives the engine from poll_cq
 *   (lowest latency, no thread wake-ups);
 * - otherwise the engine's own thread does, woken by the sockets, by timers
 *   and by the wake eventfd.
 * While the application polls (it called poll_cq within the grace period)
 * the thread waits on the wake eventfd only, so two busy-polling processes
 * on two cores do not also pay a thread wake-up per packet.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#  if __has_include(<valgrind/valgrind.h>)
#    include <valgrind/valgrind.h>
#    define SIB_ON_VALGRIND() RUNNING_ON_VALGRIND
#  endif
#endif
#ifndef SIB_ON_VALGRIND
#  define SIB_ON_VALGRIND() 0
#endif


/* How long after the application's last poll_cq the thread keeps off the
 * sockets. Longer saves wake-ups; shorter hands over faster when the
 * application stops polling without arming a completion channel. */
#define SIB_POLL_GRACE_NS   (1000 * 1000)
#define SIB_SOCK_BUF_BYTES  (16 * 1024 * 1024)
#define SIB_POLL_GAP_NS     2000
#define SIB_LOCK_SPIN_NS    (50 * 1000)

static struct sib_engine *sib_engine_global;
static pthread_mutex_t sib_engine_global_lock = PTHREAD_MUTEX_INITIALIZER;


uint64_t sib_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sib_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* A verb, or the engine's thread, that must have the lock: busy pollers,
 * which only try it, leave it alone meanwhile (sib_engine_poll_due()). A
 * mutex hands nothing over: a thread polling in a loop took the lock again
 * before the woken waiter ran, and a verb (the move of a QP to ERR, a
 * post_send) waited for tens of microseconds behind passes nobody needed,
 * where an HCA takes a verb beside any polling. */
void sib_engine_lock(struct sib_engine *eng)
{
    uint64_t start;
    unsigned spins;

    __atomic_add_fetch(&eng->lock_waiters, 1, __ATOMIC_RELAXED);
    if (pthread_mutex_trylock(&eng->lock) == 0) {
        goto out;
    }

    /* A thread asleep on the mutex leaves its CPU idle, and waking an idle
     * CPU (an interrupt; in a virtual machine, an exit to the hypervisor)
     * took 20 to 50 us on the 2-core VMs we measure on: longer than the
     * holder keeps the lock (a pass, a post and its sendmsg). While
     * another CPU runs the holder, spinning a while costs less. */
    if (eng->lock_spin_ns > 0) {
        start = sib_now_ns();
        for (spins = 1;; spins++) {
            sib_cpu_relax();
            if (((spins % 8) == 0) &&
                (pthread_mutex_trylock(&eng->lock) == 0)) {
                goto out;
            }
            if (((spins % 256) == 0) &&
                ((sib_now_ns() - start) >= eng->lock_spin_ns)) {
                break;
            }
        }
    }
    pthread_mutex_lock(&eng->lock);
out:
    __atomic_sub_fetch(&eng->lock_waiters, 1, __ATOMIC_RELAXED);
}

int sib_engine_trylock(struct sib_engine *eng)
{
    return pthread_mutex_trylock(&eng->lock) == 0;
}

void sib_engine_unlock(struct sib_engine *eng)
{
    pthread_mutex_unlock(&eng->lock);
}

struct sib_registry *sib_engine_registry(struct sib_engine *eng)
{
    return eng->reg;
}

static void sib_engine_kick(struct sib_engine *eng)
{
    uint64_t one = 1;

    if (write(eng->wake_fd, &one, sizeof(one)) < 0) {
        /* the counter is saturated: the thread is awake anyway */
    }
}

static void sib_engine_drain_wake(struct sib_engine *eng)
{
    uint64_t value;

    if (read(eng->wake_fd, &value, sizeof(value)) < 0) {
        /* EAGAIN: nothing was pending */
    }
}

/* Engine lock held. Make sure the QP's send work runs in this or the next
 * engine pass. */
void sib_engine_schedule(struct sib_qp *qp)
{
    struct sib_engine *eng = qp->ctx->eng;

    if (!qp->in_tx_list) {
        qp->in_tx_list = 1;
        sib_list_add_tail(&eng->tx_list, &qp->tx_link);
        __atomic_store_n(&eng->tx_scheduled, 1, __ATOMIC_RELAXED);
    }
}

/* Engine lock held. */
void sib_engine_unschedule(struct sib_qp *qp)
{
    if (qp->in_tx_list) {
        qp->in_tx_list = 0;
        sib_list_del(&qp->tx_link);
    }
    if (qp->comp.in_timer_list) {
        qp->comp.in_timer_list = 0;
        sib_list_del(&qp->timer_link);
    }
}

static uint64_t sib_qp_next_deadline(const struct sib_qp *qp)
{
    uint64_t t = UINT64_MAX;

    if (qp->comp.timer_ns != 0) {
        t = qp->comp.timer_ns;
    }
    if ((qp->comp.rnr_ns != 0) && (qp->comp.rnr_ns < t)) {
        t = qp->comp.rnr_ns;
    }
    return t;
}

/* Engine lock held. Called whenever a QP's timers changed. */
void sib_engine_timer_update(struct sib_qp *qp)
{
    struct sib_engine *eng = qp->ctx->eng;
    uint64_t deadline      = sib_qp_next_deadline(qp);

    if (deadline == UINT64_MAX) {
        return; /* left in the list; dropped at the next timer scan */
    }

    if (!qp->comp.in_timer_list) {
        qp->comp.in_timer_list = 1;
        sib_list_add_tail(&eng->timer_list, &qp->timer_link);
    }
    if (deadline < eng->next_timer_ns) {
        eng->next_timer_ns = deadline;
    }
    /* A thread asleep on the sockets with a later deadline must wake to
     * run this timer; one waiting on the wake fd only leaves timers to the
     * polling application. */
    if (!__atomic_load_n(&eng->thread_light, __ATOMIC_ACQUIRE) &&
        (deadline < __atomic_load_n(&eng->thread_deadline_ns,
                                    __ATOMIC_ACQUIRE))) {
        sib_engine_kick(eng);
    }
}

static void sib_engine_run_timers(struct sib_engine *eng, uint64_t now)
{
    struct sib_list *node, *next;
    struct sib_qp *qp;
    uint64_t deadline, earliest = UINT64_MAX;

    for (node = eng->timer_list.next; node != &eng->timer_list; node = next) {
        next = node->next;
        qp   = sib_list_entry(node, struct sib_qp, timer_link);

        sib_comp_timers(qp, now);

        deadline = sib_qp_next_deadline(qp);
        if (deadline == UINT64_MAX) {
            qp->comp.in_timer_list = 0;
            sib_list_del(&qp->timer_link);
        } else if (deadline < earliest) {
            earliest = deadline;
        }
    }
    eng->next_timer_ns = earliest;
}

static void sib_engine_run_tx(struct sib_engine *eng)
{
    struct sib_list batch;
    struct sib_qp *qp;

    if (sib_list_empty(&eng->tx_list)) {
        return;
    }

    /* Work on a snapshot: a QP that still has work when its turn is over
     * schedules itself again and runs in the next pass, so one busy QP
     * cannot hold the engine forever. */
    batch       = eng->tx_list;
    batch.next->prev = &batch;
    batch.prev->next = &batch;
    sib_list_init(&eng->tx_list);

    while (!sib_list_empty(&batch)) {
        qp = sib_list_entry(batch.next, struct sib_qp, tx_link);
        sib_list_del(&qp->tx_link);
        qp->in_tx_list = 0;
        sib_resp_send_pending(qp);
        sib_req_run(qp);
    }
}

static void sib_engine_sync_registry(struct sib_engine *eng)
{
    uint64_t gen = __atomic_load_n(&eng->reg->generation, __ATOMIC_ACQUIRE);
    struct sib_list *node;

    if (gen == eng->reg_generation) {
        return;
    }

    eng->reg_generation = gen;
    for (node = eng->contexts.next; node != &eng->contexts;
         node = node->next) {
        sib_ctx_sync_ports(sib_list_entry(node, struct sib_context, link));
    }
}

/* Engine lock held. One pass of the NIC: receive, send, timers. */
void sib_engine_progress(struct sib_engine *eng)
{
    uint64_t now;
    unsigned i;

    sib_engine_sync_registry(eng);

    for (i = 0; i < eng->nsock; i++) {
        sib_net_poll(eng, eng->sock[i].fd, SIB_RX_BUDGET);
    }

    sib_engine_run_tx(eng);

    now = sib_now_ns();
    if (now >= eng->next_timer_ns) {
        sib_engine_run_timers(eng, now);
        sib_engine_run_tx(eng);
    }

    if (!sib_list_empty(&eng->delayed)) {
        sib_net_run_delayed(eng, now);
    }
    sib_net_flush(eng);
    __atomic_store_n(&eng->tx_scheduled, !sib_list_empty(&eng->tx_list),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&eng->last_pass_ns, sib_now_ns(), __ATOMIC_RELAXED);
}

/* An empty poll_cq runs a pass unless one ended within SIB_POLL_GAP_NS and
 * nothing waits to be sent: a NIC works on its own, and polling an empty
 * CQ is a memory read. Without this, a transport that polls several CQs
 * in one progress call paid a pass (a system call per socket) for each. */
int sib_engine_poll_due(struct sib_engine *eng)
{
    uint64_t now = sib_now_ns();

    __atomic_store_n(&eng->last_app_poll_ns, now, __ATOMIC_RELAXED);
    if (__atomic_load_n(&eng->lock_waiters, __ATOMIC_RELAXED) > 0) {
        return 0; /* let the thread that waits for the lock have it */
    }
    return __atomic_load_n(&eng->tx_scheduled, __ATOMIC_RELAXED) ||
           ((now - __atomic_load_n(&eng->last_pass_ns, __ATOMIC_RELAXED)) >=
            SIB_POLL_GAP_NS);
}

/* The application is about to block on a completion channel: the thread
 * must take over the sockets now, not after the grace period. */
void sib_engine_app_sleeps(struct sib_engine *eng)
{
    __atomic_store_n(&eng->last_app_poll_ns, 0, __ATOMIC_RELAXED);
    if (__atomic_load_n(&eng->thread_light, __ATOMIC_ACQUIRE)) {
        sib_engine_kick(eng);
    }
}

static int sib_engine_wait(int epfd, uint64_t timeout_ns)
{
    static int no_pwait2;
    struct epoll_event ev[SIB_MAX_SOCKS + 1];
    struct timespec ts, *tsp = NULL;
    uint64_t timeout_ms;
    int ret;

    if (!__atomic_load_n(&no_pwait2, __ATOMIC_RELAXED)) {
        if (timeout_ns != UINT64_MAX) {
            ts.tv_sec  = (time_t)(timeout_ns / 1000000000ull);
            ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
            tsp        = &ts;
        }
        ret = epoll_pwait2(epfd, ev, SIB_MAX_SOCKS + 1, tsp, NULL);
        if ((ret >= 0) || (errno != ENOSYS)) {
            return ret;
        }
        /* older kernels and valgrind lack it: without this fallback the
         * engine thread would spin */
        __atomic_store_n(&no_pwait2, 1, __ATOMIC_RELAXED);
    }

    /* millisecond resolution, rounded up so that a deadline is not missed */
    timeout_ms = (timeout_ns == UINT64_MAX) ? UINT64_MAX :
                 (timeout_ns + 999999ull) / 1000000ull;
    return epoll_wait(epfd, ev, SIB_MAX_SOCKS + 1,
                      (timeout_ms > INT_MAX) ? -1 : (int)timeout_ms);
}

static uint64_t sib_engine_deadline(struct sib_engine *eng)
{
    uint64_t deadline, delayed;

    sib_engine_lock(eng);
    deadline = sib_list_empty(&eng->tx_list) ? eng->next_timer_ns : 0;
    delayed  = sib_net_next_delayed(eng);
    sib_engine_unlock(eng);

    return (delayed < deadline) ? delayed : deadline;
}

static void *sib_engine_thread(void *arg)
{
    struct sib_engine *eng = arg;
    uint64_t now, polled, deadline;
    int light;

    while (!__atomic_load_n(&eng->stop, __ATOMIC_ACQUIRE)) {
        now    = sib_now_ns();
        polled = __atomic_load_n(&eng->last_app_poll_ns, __ATOMIC_RELAXED);
        light  = (now - polled) < SIB_POLL_GRACE_NS;

        if (light) {
            __atomic_store_n(&eng->thread_light, 1, __ATOMIC_RELEASE);
            if (sib_engine_wait(eng->epfd_wake,
                                SIB_POLL_GRACE_NS - (now - polled)) == 0) {
                /* grace period over: decide again who drives */
                __atomic_store_n(&eng->thread_light, 0, __ATOMIC_RELEASE);
                continue;
            }
            __atomic_store_n(&eng->thread_light, 0, __ATOMIC_RELEASE);
        } else {
            deadline = sib_engine_deadline(eng);
            __atomic_store_n(&eng->thread_deadline_ns, deadline,
                             __ATOMIC_RELEASE);
            now = sib_now_ns();
            sib_engine_wait(eng->epfd_all, (deadline == UINT64_MAX) ?
                            UINT64_MAX :
                            (deadline > now) ? deadline - now : 0);
            __atomic_store_n(&eng->thread_deadline_ns, 0, __ATOMIC_RELEASE);
        }

        sib_engine_drain_wake(eng);
        sib_engine_lock(eng);
        sib_engine_progress(eng);
        sib_engine_unlock(eng);
    }
    return NULL;
}

static int sib_engine_set_sockbuf(int fd, int force_opt, int opt)
{
    int size = SIB_SOCK_BUF_BYTES;

    /* The FORCE variants ignore rmem_max/wmem_max but need CAP_NET_ADMIN;
     * without it the kernel caps the size and bursts may be dropped (the
     * requester then retransmits, as on a lossy link). */
    if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof(size)) == 0) {
        return 0;
    }
    return setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
}

/* Engine lock held. The UDP port on which this process receives packets
 * addressed to ports with this IP; opens the socket on first use. */
int sib_engine_udp_port(struct sib_engine *eng, uint32_t ip, uint16_t *port_p)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    struct epoll_event ev;
    struct sib_sock *sock;
    unsigned i;
    int fd, ret;

    for (i = 0; i < eng->nsock; i++) {
        if (eng->sock[i].ip == ip) {
            *port_p = eng->sock[i].port;
            return 0;
        }
    }
    if (eng->nsock == SIB_MAX_SOCKS) {
        return -ENOSPC;
    }

    fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = ip;
    if ((bind(fd, (struct sockaddr*)&sin, sizeof(sin)) < 0) ||
        (getsockname(fd, (struct sockaddr*)&sin, &len) < 0)) {
        ret = -errno;
        sib_log_error("cannot bind a UDP socket to the port address: %m");
        goto err_close;
    }

    sib_engine_set_sockbuf(fd, SO_RCVBUFFORCE, SO_RCVBUF);
    sib_engine_set_sockbuf(fd, SO_SNDBUFFORCE, SO_SNDBUF);

    memset(&ev, 0, sizeof(ev));
    ev.events  = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(eng->epfd_all, EPOLL_CTL_ADD, fd, &ev) < 0) {
        ret = -errno;
        goto err_close;
    }

    sock       = &eng->sock[eng->nsock++];
    sock->fd   = fd;
    sock->ip   = ip;
    sock->port = ntohs(sin.sin_port);
    *port_p    = sock->port;
    sib_log_debug("engine socket %d on udp port %u", fd, sock->port);
    return 0;

err_close:
    close(fd);
    return ret;
}

static int sib_engine_add_wake(int epfd, int fd)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events  = EPOLLIN;
    ev.data.fd = fd;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void sib_engine_destroy(struct sib_engine *eng)
{
    unsigned i;

    if (eng->thread_running) {
        __atomic_store_n(&eng->stop, 1, __ATOMIC_RELEASE);
        sib_engine_kick(eng);
        pthread_join(eng->thread, NULL);
    }
    sib_net_free_delayed(eng);
    for (i = 0; i < eng->nsock; i++) {
        close(eng->sock[i].fd);
    }
    if (eng->wake_fd >= 0) {
        close(eng->wake_fd);
    }
    if (eng->epfd_wake >= 0) {
        close(eng->epfd_wake);
    }
    if (eng->epfd_all >= 0) {
        close(eng->epfd_all);
    }
    if (eng->reg != NULL) {
        sib_registry_detach(eng->reg);
    }
    free(eng->rx_buf);
    free(eng->tx_copy);
    pthread_mutex_destroy(&eng->lock);
    free(eng);
}

/* SOFTIB_LOCK_SPIN_US: how long a verb spins for the engine lock before
 * it sleeps on it; 0 where the holder cannot run meanwhile: on a single
 * CPU, and under valgrind, which runs one thread at a time */
static uint64_t sib_engine_lock_spin_ns(void)
{
    const char *env = getenv("SOFTIB_LOCK_SPIN_US");

    if (env != NULL) {
        return strtoull(env, NULL, 10) * 1000ull;
    }
    return ((sysconf(_SC_NPROCESSORS_ONLN) > 1) && !SIB_ON_VALGRIND()) ?
           SIB_LOCK_SPIN_NS : 0;
}

static int sib_engine_create(struct sib_engine **eng_p)
{
    struct sib_engine *eng;
    unsigned i;
    int ret;

    eng = calloc(1, sizeof(*eng));
    if (eng == NULL) {
        return -ENOMEM;
    }

    pthread_mutex_init(&eng->lock, NULL);
    sib_list_init(&eng->contexts);
    sib_list_init(&eng->tx_list);
    sib_list_init(&eng->timer_list);
    sib_list_init(&eng->delayed);
    eng->next_timer_ns = UINT64_MAX;
    eng->batching      = (getenv("SOFTIB_BATCH") == NULL) ||
                         strcmp(getenv("SOFTIB_BATCH"), "0");
    eng->last_wqe      = (getenv("SOFTIB_LAST_WQE") == NULL) ||
                         strcmp(getenv("SOFTIB_LAST_WQE"), "0");
    eng->lock_spin_ns  = sib_engine_lock_spin_ns();
    eng->wake_fd       = -1;
    eng->epfd_all      = -1;
    eng->epfd_wake     = -1;

    ret = sib_registry_attach(&eng->reg);
    if (ret < 0) {
        goto err;
    }
    eng->reg_generation = eng->reg->generation;

    eng->rx_buf  = malloc((size_t)SIB_RX_BATCH * SIB_RX_BUF_SIZE);
    eng->tx_copy = malloc(SIB_DGRAM_MAX);
    if ((eng->rx_buf == NULL) || (eng->tx_copy == NULL)) {
        ret = -ENOMEM;
        goto err;
    }
    sib_mem_guard_init();
    for (i = 0; i < SIB_RX_BATCH; i++) {
        eng->rx_iov[i].iov_base = eng->rx_buf + (size_t)i * SIB_RX_BUF_SIZE;
        eng->rx_iov[i].iov_len  = SIB_RX_BUF_SIZE;
    }

    eng->wake_fd   = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    eng->epfd_all  = epoll_create1(EPOLL_CLOEXEC);
    eng->epfd_wake = epoll_create1(EPOLL_CLOEXEC);
    if ((eng->wake_fd < 0) || (eng->epfd_all < 0) || (eng->epfd_wake < 0) ||
        (sib_engine_add_wake(eng->epfd_all, eng->wake_fd) < 0) ||
        (sib_engine_add_wake(eng->epfd_wake, eng->wake_fd) < 0)) {
        ret = -errno;
        goto err;
    }

    ret = pthread_create(&eng->thread, NULL, sib_engine_thread, eng);
    if (ret != 0) {
        ret = -ret;
        goto err;
    }
    eng->thread_running = 1;

    *eng_p = eng;
    return 0;

err:
    sib_engine_destroy(eng);
    return ret;
}

/* A forked child inherits the mappings but not the engine thread; like a
 * real device without fork support, the parent's contexts are unusable
 * there, but the child may open new ones. */
static void sib_engine_atfork_child(void)
{
    sib_engine_global = NULL;
    pthread_mutex_init(&sib_engine_global_lock, NULL);
}

static void sib_engine_atfork_register(void)
{
    pthread_atfork(NULL, NULL, sib_engine_atfork_child);
}

int sib_engine_get(struct sib_engine **eng_p)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    int ret = 0;

    pthread_once(&once, sib_engine_atfork_register);
    pthread_mutex_lock(&sib_engine_global_lock);
    if (sib_engine_global == NULL) {
        ret = sib_engine_create(&sib_engine_global);
    }
    if (ret == 0) {
        sib_engine_global->refcnt++;
        *eng_p = sib_engine_global;
    }
    pthread_mutex_unlock(&sib_engine_global_lock);
    return ret;
}

void sib_engine_put(struct sib_engine *eng)
{
    pthread_mutex_lock(&sib_engine_global_lock);
    if (--eng->refcnt == 0) {
        sib_engine_destroy(eng);
        if (sib_engine_global == eng) {
            sib_engine_global = NULL;
        }
    }
    pthread_mutex_unlock(&sib_engine_global_lock);
}

/* Engine lock held. */
void sib_engine_add_context(struct sib_engine *eng, struct sib_context *ctx)
{
    sib_list_add_tail(&eng->contexts, &ctx->link);
    eng->slot_ctx[ctx->slot] = ctx;
}

/* Engine lock held. */
void sib_engine_del_context(struct sib_engine *eng, struct sib_context *ctx)
{
    eng->slot_ctx[ctx->slot] = NULL;
    sib_list_del(&ctx->link);
}
