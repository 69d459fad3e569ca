/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

/*
 * varuna_demo: a UCP program with a workload that cannot tolerate a
 * duplicate or a loss, for the failover demo (contrib/demo).
 *
 *   varuna_demo server PORT
 *   varuna_demo client HOST PORT [ROUNDS]
 *
 * The client, in a pipeline of WINDOW rounds in flight, does per round:
 * a put of a pattern into its own slot of the server's memory, a 64-bit
 * fetch-and-add of 1 on a counter there, and an active message carrying
 * the round number. At the end it checks, reading the server's memory
 * back: every slot holds its pattern, the counter equals the number of
 * fetch-adds, and the fetch-add results are all distinct (each add seen
 * exactly once). The server checks that the active messages arrived
 * exactly once each, in order. Each side prints a verdict line, also to
 * the file VARUNA_VERDICT_FILE names (varuna_verdict.h); the exit status
 * is 0 only when everything holds.
 *
 * Nothing here knows about rc_varuna: it runs over whatever UCX_TLS says.
 *
 * VARUNA_DEMO_PACE_US=N makes the client start at most one round every N
 * microseconds (progressing meanwhile), so that one endpoint pair lives
 * through many link failures and repairs (contrib/faults/scenarios.sh).
 *
 * VARUNA_DEMO_WAKEUP=MS puts both sides in UCP's wakeup mode, as an
 * application that sleeps when there is nothing to do: whenever a
 * progress call finds nothing, ucp_worker_arm() and poll() on the worker's
 * event fd, for at most MS milliseconds (-1: until an event).
 *
 * VARUNA_DEMO_EPS=K spreads the rounds over K endpoints to the same server
 * (round r on endpoint r % K), the shape of a job with many peers on one
 * interface, and VARUNA_DEMO_WINDOW=W keeps W rounds in flight (default
 * 16): every endpoint fails over, and is re-protected, with the link. The
 * server then checks each active message once, and in order per endpoint.
 *
 * VARUNA_DEMO_BUSY_EPS=N (with VARUNA_DEMO_EPS=K) sends the rounds over the
 * first N of the K endpoints only; the others are connected (every endpoint
 * is flushed before the rounds start) and stay idle: what K open endpoints
 * cost the traffic of one (contrib/scale-bench -i).
 *
 * VARUNA_DEMO_STOP=FILE makes the client stop starting rounds once FILE
 * exists (looked at every 1024 rounds): ROUNDS is then an upper bound, and
 * an unpaced client runs exactly as long as the fault script needs. It
 * says its round every 4096 rounds then, for the script to follow.
 *
 * VARUNA_DEMO_IDLE=S (with VARUNA_DEMO_WAKEUP) makes the client, once its
 * rounds are done and flushed, wait S seconds for events with nothing to
 * do, and say how much CPU the process (every thread of it: UCX's, the
 * device's) spent meanwhile and how often the worker slept: an idle
 * program must not spin, whatever the state of its links (issue 28).
 */

#include "varuna_verdict.h"

#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEMO_WINDOW      16          /* rounds in flight, by default */
#define DEMO_MAX_EPS     1024
#define DEMO_SLOT        64          /* bytes of server memory per round */
#define DEMO_SLOTS_LEN   (1ul << 22) /* the slots; round r writes slot
                                        r % DEMO_NUM_SLOTS, a round long
                                        retired before it */
#define DEMO_NUM_SLOTS   (DEMO_SLOTS_LEN / DEMO_SLOT)
#define DEMO_AM_ID       11
#define DEMO_AM_DONE     12

typedef struct {
    uint64_t    slots_addr;
    uint64_t    counter_addr;
    uint32_t    rkey_len;
    uint32_t    worker_addr_len;
    uint32_t    eps;                /* client: its endpoints to the server */
} demo_hello_t;

static const uint64_t demo_one = 1;
static int demo_wakeup_ms = -2;     /* -2: no wakeup mode */
static int demo_efd = -1;           /* the worker's event fd (wakeup) */
static unsigned long demo_sleeps;   /* wakeup: arms that let it sleep */
static unsigned long demo_arm_busy; /* ... and arms refused (BUSY) */
static ucp_context_h demo_context;
static ucp_worker_h  demo_worker;

/* server state */
static uint64_t *demo_am_next;      /* per client endpoint: the round
                                       number expected next */
static unsigned demo_am_eps = 1;    /* the client's endpoints */
static uint64_t demo_am_count, demo_am_dup, demo_am_out_of_order;
static int64_t  demo_done_rounds = -1;

static void demo_die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "varuna_demo: %s: %s\n", what, ucs_status_string(status));
    exit(2);
}

static double demo_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One progress call; in wakeup mode, sleep on the event fd if it found
 * nothing to do, and on fd too unless it is -1. Returns whether fd is
 * readable (looked at without waiting in the busy mode). */
static int demo_progress_fd(int fd)
{
    struct pollfd pfd[2];
    ucs_status_t status;
    nfds_t nfds = 0;
    int timeout = 0;

    if (fd >= 0) {
        pfd[nfds].fd      = fd;
        pfd[nfds].events  = POLLIN;
        pfd[nfds].revents = 0;
        nfds++;
    }
    if (!ucp_worker_progress(demo_worker) && (demo_wakeup_ms != -2)) {
        status = ucp_worker_arm(demo_worker);
        if (status == UCS_ERR_BUSY) {
            demo_arm_busy++;        /* events arrived meanwhile */
        } else if (status != UCS_OK) {
            demo_die("ucp_worker_arm", status);
        } else {
            demo_sleeps++;
            pfd[nfds].fd      = demo_efd;
            pfd[nfds].events  = POLLIN;
            pfd[nfds].revents = 0;
            nfds++;
            timeout = demo_wakeup_ms;
        }
    }
    if (nfds == 0) {
        return 0;
    }
    if ((poll(pfd, nfds, timeout) < 0) && (errno != EINTR)) {
        perror("varuna_demo: poll");
        exit(2);
    }
    return (fd >= 0) && (pfd[0].revents != 0);
}

static void demo_progress(void)
{
    (void)demo_progress_fd(-1);
}

/* CPU seconds of the whole process so far */
static double demo_cpu(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* VARUNA_DEMO_IDLE: wait for events with nothing to do, and say what it
 * cost */
static void demo_idle(double secs)
{
    unsigned long sleeps = demo_sleeps, busy = demo_arm_busy;
    double start         = demo_now();
    double cpu           = demo_cpu();

    while (demo_now() < start + secs) {
        demo_progress();
    }
    secs = demo_now() - start;
    cpu  = demo_cpu() - cpu;
    printf("client: idle %.1f s in wakeup mode: CPU %.2f %% of a core, "
           "%lu sleeps, %lu arms refused\n", secs, 100.0 * cpu / secs,
           demo_sleeps - sleeps, demo_arm_busy - busy);
    fflush(stdout);
}

/* Progress until the given time (demo_now) */
static void demo_progress_until(double until)
{
    while (demo_now() < until) {
        ucp_worker_progress(demo_worker);
    }
}

static uint64_t demo_pattern(uint64_t round, unsigned word)
{
    return (round * 0x9e3779b97f4a7c15ull) ^ (word * 0x100000001b3ull) ^ 1;
}

static void demo_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send(fd, p, len, 0);
        if (n <= 0) {
            perror("varuna_demo: send");
            exit(2);
        }
        p   += n;
        len -= n;
    }
}

static void demo_recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = recv(fd, p, len, 0);
        if (n <= 0) {
            fprintf(stderr, "varuna_demo: connection closed\n");
            exit(2);
        }
        p   += n;
        len -= n;
    }
}

/*
 * demo_recv_all, progressing UCP meanwhile: the peer may still have
 * operations on us (the client reads the server's memory back after the
 * server's last message), and a failover of them may need our side's word.
 * A server blocked in recv() never gave it: on rxe, with a CPU-bound
 * process beside the guest, a retransmission of the read-back stalled, the
 * client's watchdog failed over and waited for the server's notice until
 * the scenario's time ran out (docs/testing.md, "Flakes").
 */
static void demo_recv_progress(int fd, void *buf, size_t len)
{
    while (!demo_progress_fd(fd)) {
    }
    demo_recv_all(fd, buf, len);
}

static void demo_init(void)
{
    ucp_worker_params_t worker_params;
    const char *wakeup_env;
    ucp_params_t params;
    ucs_status_t status;

    wakeup_env = getenv("VARUNA_DEMO_WAKEUP");
    if (wakeup_env != NULL) {
        demo_wakeup_ms = atoi(wakeup_env);
        if (demo_wakeup_ms < -1) {
            fprintf(stderr, "varuna_demo: VARUNA_DEMO_WAKEUP=%s: "
                    "milliseconds, or -1\n", wakeup_env);
            exit(2);
        }
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
    if (demo_wakeup_ms != -2) {
        params.features |= UCP_FEATURE_WAKEUP;
    }
    status = ucp_init(&params, NULL, &demo_context);
    if (status != UCS_OK) {
        demo_die("ucp_init", status);
    }

    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(demo_context, &worker_params, &demo_worker);
    if (status != UCS_OK) {
        demo_die("ucp_worker_create", status);
    }
    if (demo_wakeup_ms != -2) {
        status = ucp_worker_get_efd(demo_worker, &demo_efd);
        if (status != UCS_OK) {
            demo_die("ucp_worker_get_efd", status);
        }
        printf("varuna_demo: wakeup mode, poll timeout %d ms\n",
               demo_wakeup_ms);
    }
}

static ucs_status_t demo_wait(void *request)
{
    ucs_status_t status;

    if (request == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        demo_progress();
    }
    ucp_request_free(request);
    return status;
}

/* What VARUNA_DEMO_TRACE writes (the client's rounds so far): kept here
 * so that an endpoint failure, which ends the process, still writes it */
static struct {
    const double *retired;
    uint64_t     rounds;
    double       start_wall;
} demo_trace;

static void demo_write_trace(void);

static void demo_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    fprintf(stderr, "varuna_demo: the endpoint failed: %s\n",
            ucs_status_string(status));
    demo_write_trace();
    exit(3);
}

static ucp_ep_h demo_connect(const void *worker_addr)
{
    ucp_ep_params_t ep_params;
    ucp_ep_h ep;
    ucs_status_t status;

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.address         = worker_addr;
    ep_params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb  = demo_ep_error;
    ep_params.err_handler.arg = NULL;
    status = ucp_ep_create(demo_worker, &ep_params, &ep);
    if (status != UCS_OK) {
        demo_die("ucp_ep_create", status);
    }
    return ep;
}

/* ------------------------------------------------------------------------
 * Server
 * ------------------------------------------------------------------------ */

static ucs_status_t demo_am_cb(void *arg, const void *header,
                               size_t header_length, void *data,
                               size_t length,
                               const ucp_am_recv_param_t *param)
{
    uint64_t round, *next;

    /* round r came on the client's endpoint r % K, after r - K */
    memcpy(&round, data, sizeof(round));
    next = &demo_am_next[round % demo_am_eps];
    if (round < *next) {
        demo_am_dup++;
    } else if (round > *next) {
        demo_am_out_of_order++;
    } else {
        *next += demo_am_eps;
    }
    demo_am_count++;
    return UCS_OK;
}

static ucs_status_t demo_done_cb(void *arg, const void *header,
                                 size_t header_length, void *data,
                                 size_t length,
                                 const ucp_am_recv_param_t *param)
{
    uint64_t rounds;

    memcpy(&rounds, data, sizeof(rounds));
    demo_done_rounds = (int64_t)rounds;
    return UCS_OK;
}

static void demo_set_am(unsigned id, ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t param;
    ucs_status_t status;

    memset(&param, 0, sizeof(param));
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB;
    param.id         = id;
    param.cb         = cb;
    status = ucp_worker_set_am_recv_handler(demo_worker, &param);
    if (status != UCS_OK) {
        demo_die("ucp_worker_set_am_recv_handler", status);
    }
}

static int demo_server(int port)
{
    struct sockaddr_in sin;
    ucp_mem_map_params_t mparams;
    ucp_address_t *worker_addr;
    size_t worker_addr_len, rkey_len, mem_len;
    void *rkey_buf, *peer_addr, *mem;
    demo_hello_t hello, peer;
    ucp_mem_h memh;
    ucp_ep_h ep;
    int lfd, fd, one = 1, ok;
    uint8_t ack = 1;
    char eps_str[32];
    double until;
    unsigned i;

    demo_init();
    demo_set_am(DEMO_AM_ID, demo_am_cb);
    demo_set_am(DEMO_AM_DONE, demo_done_cb);

    /* the slots, then the counter */
    mem_len = DEMO_SLOTS_LEN + sizeof(uint64_t);
    mem     = calloc(1, mem_len);
    memset(&mparams, 0, sizeof(mparams));
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = mem;
    mparams.length     = mem_len;
    if (ucp_mem_map(demo_context, &mparams, &memh) != UCS_OK) {
        demo_die("ucp_mem_map", UCS_ERR_NO_MEMORY);
    }
    if (ucp_rkey_pack(demo_context, memh, &rkey_buf, &rkey_len) != UCS_OK) {
        demo_die("ucp_rkey_pack", UCS_ERR_NO_MEMORY);
    }
    if (ucp_worker_get_address(demo_worker, &worker_addr,
                               &worker_addr_len) != UCS_OK) {
        demo_die("ucp_worker_get_address", UCS_ERR_NO_MEMORY);
    }

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_port        = htons(port);
    sin.sin_addr.s_addr = htonl(INADDR_ANY);
    if ((bind(lfd, (struct sockaddr*)&sin, sizeof(sin)) != 0) ||
        (listen(lfd, 1) != 0)) {
        perror("varuna_demo: bind/listen");
        return 2;
    }
    printf("server: listening on port %d\n", port);
    fflush(stdout);
    fd = accept(lfd, NULL, NULL);
    close(lfd);

    hello.slots_addr      = (uintptr_t)mem;
    hello.counter_addr    = (uintptr_t)mem + DEMO_SLOTS_LEN;
    hello.rkey_len        = (uint32_t)rkey_len;
    hello.worker_addr_len = (uint32_t)worker_addr_len;
    hello.eps             = 0;
    demo_send_all(fd, &hello, sizeof(hello));
    demo_send_all(fd, rkey_buf, rkey_len);
    demo_send_all(fd, worker_addr, worker_addr_len);
    demo_recv_all(fd, &peer, sizeof(peer));
    peer_addr = malloc(peer.worker_addr_len);
    demo_recv_all(fd, peer_addr, peer.worker_addr_len);
    if ((peer.eps == 0) || (peer.eps > DEMO_MAX_EPS)) {
        fprintf(stderr, "varuna_demo: the client has %u endpoints\n",
                peer.eps);
        return 2;
    }
    demo_am_eps  = peer.eps;
    demo_am_next = calloc(demo_am_eps, sizeof(*demo_am_next));
    for (i = 0; i < demo_am_eps; i++) {
        demo_am_next[i] = i;
    }
    ep = demo_connect(peer_addr);

    while (demo_done_rounds < 0) {
        demo_progress();
    }
    /* the done message follows the last round's message on its endpoint
     * and comes after the client flushed the others: what is missing now
     * is lost, or only waits behind in a receive queue polled less often
     * (a standby's), which a few seconds let in */
    until = demo_now() + 5;
    while ((demo_am_count < (uint64_t)demo_done_rounds) &&
           (demo_now() < until)) {
        demo_progress();
    }
    ok = (demo_am_dup == 0) && (demo_am_out_of_order == 0) &&
         (demo_am_count == (uint64_t)demo_done_rounds);
    snprintf(eps_str, sizeof(eps_str), " on %u endpoints", demo_am_eps);
    varuna_verdict("server", ok, "%lu active messages for %ld rounds%s, "
                   "%lu duplicates, %lu out of order",
                   (unsigned long)demo_am_count, (long)demo_done_rounds,
                   (demo_am_eps > 1) ? eps_str : "",
                   (unsigned long)demo_am_dup,
                   (unsigned long)demo_am_out_of_order);

    /* let the client read our memory, then part */
    demo_send_all(fd, &ack, 1);
    demo_recv_progress(fd, &ack, 1);
    close(fd);
    demo_wait(ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FORCE));
    ucp_mem_unmap(demo_context, memh);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------
 * Client
 * ------------------------------------------------------------------------ */

typedef struct {
    void     *put_req, *fadd_req, *am_req;
    uint64_t put_value[DEMO_SLOT / sizeof(uint64_t)];
    uint64_t am_value;
    uint64_t fadd_result;
} demo_round_t;

static int demo_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

/* VARUNA_DEMO_TRACE=FILE: when each round retired with all three
 * operations done, in seconds from the first round, after a line with the
 * wall-clock time of the first round (contrib/failover-trace lines it up
 * with the moment the link went down and plots the rounds per interval).
 * Written once the rounds are done, or when the endpoint fails (rc_verbs,
 * whose endpoint does not survive the link). */
static void demo_write_trace(void)
{
    const char *path = getenv("VARUNA_DEMO_TRACE");
    uint64_t r;
    FILE *f;

    if ((path == NULL) || (*path == '\0') || (demo_trace.retired == NULL)) {
        return;
    }
    f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "varuna_demo: cannot write %s: %m\n", path);
        return;
    }
    fprintf(f, "# start %.6f\n", demo_trace.start_wall);
    for (r = 0; r < demo_trace.rounds; r++) {
        if (demo_trace.retired[r] >= 0) {
            fprintf(f, "%.6f\n", demo_trace.retired[r]);
        }
    }
    fclose(f);
    demo_trace.retired = NULL;
}

/* A positive number from the environment, at most max; def if unset */
static unsigned demo_env_count(const char *name, unsigned def, unsigned max)
{
    const char *value = getenv(name);
    char *end;
    unsigned long n;

    if ((value == NULL) || (*value == '\0')) {
        return def;
    }
    n = strtoul(value, &end, 0);
    if ((*end != '\0') || (n == 0) || (n > max)) {
        fprintf(stderr, "varuna_demo: %s=%s: a number from 1 to %u\n", name,
                value, max);
        exit(2);
    }
    return (unsigned)n;
}

static int demo_client(const char *host, int port, uint64_t rounds)
{
    unsigned num_eps     = demo_env_count("VARUNA_DEMO_EPS", 1, DEMO_MAX_EPS);
    unsigned busy_eps    = demo_env_count("VARUNA_DEMO_BUSY_EPS", num_eps,
                                          num_eps);
    unsigned window_len  = demo_env_count("VARUNA_DEMO_WINDOW", DEMO_WINDOW,
                                          65536);
    demo_round_t *window = calloc(window_len, sizeof(*window));
    uint64_t *results;
    double *retired;
    struct timespec wall;
    int round_ok;
    uint64_t lost = 0, failed = 0, dups = 0, bad_slots = 0, i, r, w;
    ucp_request_param_t prm;
    struct addrinfo hints, *ai;
    ucp_address_t *worker_addr;
    size_t worker_addr_len;
    const char *idle_env;
    demo_hello_t hello, mine;
    void *rkey_buf, *peer_addr;
    uint64_t counter, *slots, num_slots;
    ucs_status_t status;
    char port_str[16];
    const char *pace_env, *stop_file;
    double start, pace;
    ucp_rkey_h *rkeys    = calloc(num_eps, sizeof(*rkeys));
    ucp_ep_h *eps        = calloc(num_eps, sizeof(*eps));
    ucp_rkey_h rkey;
    ucp_ep_h ep;
    int fd = -1, ok;
    uint8_t ack;

    demo_init();
    snprintf(port_str, sizeof(port_str), "%d", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port_str, &hints, &ai) != 0) {
        fprintf(stderr, "varuna_demo: cannot resolve %s\n", host);
        return 2;
    }
    for (i = 0; i < 100; i++) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            break;
        }
        close(fd);
        fd = -1;
        usleep(100000);
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        fprintf(stderr, "varuna_demo: cannot connect to %s:%d\n", host, port);
        return 2;
    }

    demo_recv_all(fd, &hello, sizeof(hello));
    rkey_buf  = malloc(hello.rkey_len);
    peer_addr = malloc(hello.worker_addr_len);
    demo_recv_all(fd, rkey_buf, hello.rkey_len);
    demo_recv_all(fd, peer_addr, hello.worker_addr_len);
    ucp_worker_get_address(demo_worker, &worker_addr, &worker_addr_len);
    memset(&mine, 0, sizeof(mine));
    mine.worker_addr_len = (uint32_t)worker_addr_len;
    mine.eps             = busy_eps; /* the server checks their order */
    demo_send_all(fd, &mine, sizeof(mine));
    demo_send_all(fd, worker_addr, worker_addr_len);

    for (i = 0; i < num_eps; i++) {
        eps[i] = demo_connect(peer_addr);
        status = ucp_ep_rkey_unpack(eps[i], rkey_buf, &rkeys[i]);
        if (status != UCS_OK) {
            demo_die("ucp_ep_rkey_unpack", status);
        }
    }
    if ((rounds == 0) || (rounds > (1ull << 28))) {
        fprintf(stderr, "varuna_demo: ROUNDS from 1 to 2^28\n");
        return 2;
    }
    if ((rounds > DEMO_NUM_SLOTS) && (window_len > DEMO_NUM_SLOTS / 2)) {
        fprintf(stderr, "varuna_demo: a window of %u rounds is too long "
                "to reuse slots\n", window_len);
        return 2;
    }
    num_slots = (rounds < DEMO_NUM_SLOTS) ? rounds : DEMO_NUM_SLOTS;
    results   = calloc(rounds, sizeof(*results));
    retired   = malloc(rounds * sizeof(*retired));
    if ((results == NULL) || (retired == NULL)) {
        demo_die("rounds", UCS_ERR_NO_MEMORY);
    }

    stop_file = getenv("VARUNA_DEMO_STOP");
    pace_env  = getenv("VARUNA_DEMO_PACE_US");
    pace     = (pace_env != NULL) ? strtod(pace_env, NULL) * 1e-6 : 0;

    if (busy_eps < num_eps) {
        /* every endpoint connected before the clock starts: a READ of
         * the counter over each (it changes nothing the server checks) */
        memset(&prm, 0, sizeof(prm));
        for (i = 0; i < num_eps; i++) {
            if (demo_wait(ucp_get_nbx(eps[i], &counter, sizeof(counter),
                                      hello.counter_addr, rkeys[i],
                                      &prm)) != UCS_OK) {
                demo_die("a READ to connect an idle endpoint",
                         UCS_ERR_IO_ERROR);
            }
        }
        printf("client: %u endpoints connected, %u of them idle\n", num_eps,
               num_eps - busy_eps);
    }
    printf("client: running %lu rounds (put + fetch-add + active message) "
           "on %u endpoint%s, %u in flight\n", (unsigned long)rounds,
           busy_eps, (busy_eps == 1) ? "" : "s", window_len);
    fflush(stdout);
    for (r = 0; r < rounds; r++) {
        retired[r] = -1;
    }
    start = demo_now();
    clock_gettime(CLOCK_REALTIME, &wall);
    demo_trace.retired    = retired;
    demo_trace.rounds     = rounds;
    demo_trace.start_wall = wall.tv_sec + wall.tv_nsec * 1e-9;

    memset(&prm, 0, sizeof(prm));
    for (r = 0; r < rounds + window_len; r++) {
        /* retire the round that used this window entry */
        w = r % window_len;
        if (r >= window_len) {
            demo_round_t *old = &window[w];
            uint64_t done     = r - window_len;

            round_ok = 1;
            if (demo_wait(old->put_req) != UCS_OK) {
                failed++;
                round_ok = 0;
            }
            if (demo_wait(old->am_req) != UCS_OK) {
                failed++;
                round_ok = 0;
            }
            status = demo_wait(old->fadd_req);
            retired[done] = (round_ok && (status == UCS_OK)) ?
                            (demo_now() - start) : -1;
            if (status == UCS_OK) {
                results[done] = old->fadd_result;
            } else {
                /* executed once, its result lost with the link: rc_varuna
                 * says so instead of inventing one or adding again */
                results[done] = UINT64_MAX;
                lost++;
            }
        }
        if (r >= rounds) {
            continue;
        }

        if (pace > 0) {
            demo_progress_until(start + r * pace);
        }
        if ((stop_file != NULL) && ((r % 1024) == 0) && (r > 0) &&
            (access(stop_file, F_OK) == 0)) {
            printf("client: %s exists: stopping after %lu rounds\n",
                   stop_file, (unsigned long)r);
            fflush(stdout);
            rounds    = r;
            num_slots = (rounds < DEMO_NUM_SLOTS) ? rounds : DEMO_NUM_SLOTS;
            continue;
        }

        demo_round_t *cur = &window[w];
        ep   = eps[r % busy_eps];
        rkey = rkeys[r % busy_eps];
        for (i = 0; i < DEMO_SLOT / sizeof(uint64_t); i++) {
            cur->put_value[i] = demo_pattern(r, (unsigned)i);
        }
        cur->am_value = r;

        prm.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        prm.datatype     = ucp_dt_make_contig(1);
        cur->put_req = ucp_put_nbx(ep, cur->put_value, DEMO_SLOT,
                                   hello.slots_addr +
                                   (r % DEMO_NUM_SLOTS) * DEMO_SLOT, rkey,
                                   &prm);

        prm.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
                           UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        prm.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
        prm.reply_buffer = &cur->fadd_result;
        cur->fadd_req = ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &demo_one, 1,
                                          hello.counter_addr, rkey, &prm);

        prm.op_attr_mask = 0;
        cur->am_req = ucp_am_send_nbx(ep, DEMO_AM_ID, NULL, 0, &cur->am_value,
                                      sizeof(cur->am_value), &prm);
        if (((r % (rounds / 10 + 1)) == 0) ||
            ((stop_file != NULL) && ((r % 4096) == 0))) {
            printf("client: round %lu\n", (unsigned long)r);
            fflush(stdout);
        }
    }

    demo_write_trace();
    free(retired);

    /* tell the server how many rounds there were, once the messages of
     * every other endpoint have arrived */
    memset(&prm, 0, sizeof(prm));
    for (i = 1; i < num_eps; i++) {
        demo_wait(ucp_ep_flush_nbx(eps[i], &prm));
    }
    ep   = eps[0];
    rkey = rkeys[0];
    demo_wait(ucp_am_send_nbx(ep, DEMO_AM_DONE, NULL, 0, &rounds,
                              sizeof(rounds), &prm));
    demo_wait(ucp_ep_flush_nbx(ep, &prm));
    printf("client: %lu rounds in %.4f s\n", (unsigned long)rounds,
           demo_now() - start);
    fflush(stdout);
    idle_env = getenv("VARUNA_DEMO_IDLE");
    if ((idle_env != NULL) && (demo_wakeup_ms != -2)) {
        demo_idle(atof(idle_env));
    }

    /* read everything back */
    demo_recv_progress(fd, &ack, 1);
    slots = malloc(num_slots * DEMO_SLOT);
    memset(&prm, 0, sizeof(prm));
    demo_wait(ucp_get_nbx(ep, slots, num_slots * DEMO_SLOT, hello.slots_addr,
                          rkey, &prm));
    demo_wait(ucp_get_nbx(ep, &counter, sizeof(counter), hello.counter_addr,
                          rkey, &prm));
    for (w = 0; w < num_slots; w++) {
        /* the last round that wrote the slot */
        r = w + (rounds - 1 - w) / DEMO_NUM_SLOTS * DEMO_NUM_SLOTS;
        for (i = 0; i < DEMO_SLOT / sizeof(uint64_t); i++) {
            if (slots[w * (DEMO_SLOT / 8) + i] != demo_pattern(r, (unsigned)i)) {
                bad_slots++;
                break;
            }
        }
    }
    qsort(results, rounds, sizeof(*results), demo_cmp_u64);
    for (r = 1; r < rounds; r++) {
        if ((results[r] != UINT64_MAX) && (results[r] == results[r - 1])) {
            dups++;
        }
    }

    ok = (counter == rounds) && (dups == 0) && (bad_slots == 0) &&
         (failed == 0);
    varuna_verdict("client", ok, "counter %lu after %lu fetch-adds (%s), "
                   "%lu duplicate fetch-add results, %lu results lost with "
                   "the link (reported as errors), %lu puts wrong, %lu "
                   "operations failed", (unsigned long)counter,
                   (unsigned long)rounds,
                   (counter == rounds) ? "each executed once" :
                   ((counter > rounds) ? "EXECUTED TWICE" : "LOST"),
                   (unsigned long)dups, (unsigned long)lost,
                   (unsigned long)bad_slots, (unsigned long)failed);

    demo_send_all(fd, &ack, 1);
    close(fd);
    for (i = 0; i < num_eps; i++) {
        ucp_rkey_destroy(rkeys[i]);
        demo_wait(ucp_ep_close_nb(eps[i], UCP_EP_CLOSE_MODE_FORCE));
    }
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    int ret;

    if ((argc >= 3) && !strcmp(argv[1], "server")) {
        ret = demo_server(atoi(argv[2]));
    } else if ((argc >= 4) && !strcmp(argv[1], "client")) {
        ret = demo_client(argv[2], atoi(argv[3]),
                          (argc >= 5) ? strtoull(argv[4], NULL, 0) : 20000);
    } else {
        ret = -1;
    }
    if (ret >= 0) {
        /* the interfaces close: their counters end the failover report
         * (UCX_RC_VARUNA_REPORT's "totals" lines) */
        ucp_worker_destroy(demo_worker);
        ucp_cleanup(demo_context);
        return ret;
    }
    fprintf(stderr, "usage: %s server PORT\n"
                    "       %s client HOST PORT [ROUNDS]\n", argv[0], argv[0]);
    return 2;
}
