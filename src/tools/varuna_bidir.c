/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

/*
 * varuna_bidir: traffic in both directions at the moment a link fails, the
 * shape of an MPI job (pml and osc on two UCP workers), checked so that a
 * loss, a duplicate or a hang shows.
 *
 *   varuna_bidir server PORT [OPTIONS]
 *   varuna_bidir client HOST PORT [OPTIONS]
 *
 *   -i ITERS    iterations (default 4000)
 *   -e EPS      endpoints per worker to the peer (default 2)
 *   -s SIZE     tag message bytes (default 64); every 8th iteration sends
 *               -S bytes instead (default 65536: rendezvous)
 *   -f LIST     fail points: comma-separated iterations; at the k-th
 *               (k = 1, 2, ...) print "varuna_bidir: fail point k" and
 *               create FILE.k (-m), for the runner to take a link down
 *   -m FILE     the marker file prefix for -f
 *   -p          pause at each fail point, progressing, until FILE.k.done
 *               exists (the runner creates it once the link is back): the
 *               link then fails with everything acknowledged, the state
 *               between two rounds of an MPI job
 *   -E MODE     UCP error handling mode of the endpoints: peer (default)
 *               or none (what Open MPI's pml ucx uses by default)
 *   -w SEC      after the last fail point, progress SEC seconds with no
 *               traffic before going on: timers of the failed port
 *               (keepalive, the aux lane) have their chance to fail the
 *               endpoints, which the checks at the end would show
 *   -W          wakeup mode: when progress finds nothing, arm the workers
 *               and sleep on their event fds (poll); a sleep that ends by
 *               its 2 s timeout while a request is pending is a missed
 *               wakeup, reported and counted as wrong
 *   -n COUNT    (server) serve COUNT clients, one after the other, with
 *               the same workers: a client that connects after another
 *               one's link failed must get working endpoints (the
 *               server's verdict for the k-th is "server k" from k = 2)
 *   -K SEC      the peer is killed after the last fail point: wait up to
 *               SEC seconds for every endpoint's error callback, print how
 *               long it took, exit 0 if each fired exactly once
 *
 * After connecting, both sides run the same loop. Per iteration and per
 * endpoint:
 *   tag worker   a tagged message each way (receive posted first), with a
 *                pattern of (sender, iteration, endpoint)
 *   rma worker   a 64-bit fetch-and-add of 1 on the peer's counter of this
 *                endpoint, a put of a pattern into its slot there, then a
 *                flush of the endpoint
 * Waiting progresses both workers, as an MPI library does. At the end:
 * every message arrived once with its pattern (a duplicate would stay
 * unexpected: a probe after the last barrier finds it), every fetch-add
 * returned exactly 0, 1, 2, ... (one adder per counter: a lost add, a
 * repeated add or a made-up result all break the sequence), every counter
 * here equals ITERS, every slot holds the peer's last pattern. One verdict
 * line per side, also to the file VARUNA_VERDICT_FILE names
 * (varuna_verdict.h); exit status 0 only when all holds.
 *
 * Nothing here knows about rc_varuna: it runs over whatever UCX_TLS says.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BIDIR_MAX_EPS     64
#define BIDIR_MAX_FAILS   64
#define BIDIR_SLOT_WORDS  8
#define BIDIR_RNDV_EVERY  8
#define BIDIR_TAG_DONE    UINT64_C(0xffffffff00000000)
#define BIDIR_TAG_DATA    UINT64_C(0xffffff0000000000) /* zero in data tags */

enum {
    BIDIR_TAG_WORKER,
    BIDIR_RMA_WORKER,
    BIDIR_NUM_WORKERS
};

/* What the peer needs: where our counters and slots are, the key */
typedef struct {
    uint64_t    base;
    uint32_t    rkey_len;
    uint32_t    addr_len[BIDIR_NUM_WORKERS];
} bidir_hello_t;

typedef struct {
    int         done;
    ucs_status_t status;
} bidir_req_t;

static struct {
    unsigned    iters;
    unsigned    eps;
    size_t      size;
    size_t      rndv_size;
    long        fail_at[BIDIR_MAX_FAILS];
    unsigned    num_fails;
    const char  *marker;
    int         pause;
    double      idle;
    double      expect_death;
    unsigned    clients;
    int         wakeup;
    ucp_err_handling_mode_t err_mode;
} bidir_opt = {4000, 2, 64, 65536, {0}, 0, NULL, 0, 0, 0, 1, 0,
                UCP_ERR_HANDLING_MODE_PEER};

static ucp_context_h bidir_context;
static ucp_worker_h  bidir_worker[BIDIR_NUM_WORKERS];
static ucp_ep_h      bidir_ep[BIDIR_NUM_WORKERS][BIDIR_MAX_EPS];
static ucp_rkey_h    bidir_rkey[BIDIR_MAX_EPS];
static ucp_mem_h     bidir_memh;
static uint64_t     *bidir_mem;        /* counters, then slots */
static uint64_t      bidir_peer_base;
static int           bidir_side;       /* 0 server, 1 client */
static unsigned      bidir_client;     /* the server's client, from 0 */
static unsigned long bidir_ep_errors;
static unsigned      bidir_ep_error_count[BIDIR_NUM_WORKERS][BIDIR_MAX_EPS];

static void bidir_die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "varuna_bidir: %s: %s\n", what,
            ucs_status_string(status));
    exit(2);
}

static uint64_t bidir_pattern(int side, unsigned iter, unsigned ep,
                              unsigned word)
{
    return ((uint64_t)side << 60) ^ ((uint64_t)iter * 0x9e3779b97f4a7c15ull) ^
           ((uint64_t)ep << 48) ^ (word * 0x100000001b3ull) ^ 1;
}

static size_t bidir_mem_len(void)
{
    return bidir_opt.eps * (1 + BIDIR_SLOT_WORDS) * sizeof(uint64_t);
}

static uint64_t *bidir_counter(unsigned ep)
{
    return &bidir_mem[ep];
}

static uint64_t *bidir_slot(unsigned ep)
{
    return &bidir_mem[bidir_opt.eps + ep * BIDIR_SLOT_WORDS];
}

static uint64_t bidir_remote(const void *local)
{
    return bidir_peer_base + ((const char*)local - (const char*)bidir_mem);
}

static void bidir_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send(fd, p, len, 0);
        if (n <= 0) {
            perror("varuna_bidir: send");
            exit(2);
        }
        p   += n;
        len -= n;
    }
}

static void bidir_recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = recv(fd, p, len, 0);
        if (n <= 0) {
            fprintf(stderr, "varuna_bidir: connection closed\n");
            exit(2);
        }
        p   += n;
        len -= n;
    }
}

static unsigned long bidir_sleeps, bidir_missed_wakeups;
static int           bidir_waiting;    /* a request is pending */

#define BIDIR_SLEEP_MS    2000

/* With -W, sleep on the workers' event fds once progress finds nothing. */
static void bidir_sleep(void)
{
    struct pollfd pfd[BIDIR_NUM_WORKERS];
    ucs_status_t status;
    unsigned w;
    int ret;

    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        status = ucp_worker_arm(bidir_worker[w]);
        if (status == UCS_ERR_BUSY) {
            return; /* more to progress first */
        } else if (status != UCS_OK) {
            bidir_die("ucp_worker_arm", status);
        }
        status = ucp_worker_get_efd(bidir_worker[w], &pfd[w].fd);
        if (status != UCS_OK) {
            bidir_die("ucp_worker_get_efd", status);
        }
        pfd[w].events = POLLIN;
    }

    ++bidir_sleeps;
    ret = poll(pfd, BIDIR_NUM_WORKERS, BIDIR_SLEEP_MS);
    if ((ret == 0) && bidir_waiting) {
        ++bidir_missed_wakeups;
        fprintf(stderr, "varuna_bidir: no wakeup in %d ms with a request "
                "pending\n", BIDIR_SLEEP_MS);
    }
}

static void bidir_progress(void)
{
    unsigned w, count = 0;

    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        count += ucp_worker_progress(bidir_worker[w]);
    }
    if (bidir_opt.wakeup && (count == 0)) {
        bidir_sleep();
    }
}

static void bidir_req_cb(void *request, ucs_status_t status, void *user_data)
{
    bidir_req_t *req = user_data;

    req->status = status;
    req->done   = 1;
}

static void bidir_recv_cb(void *request, ucs_status_t status,
                          const ucp_tag_recv_info_t *info, void *user_data)
{
    bidir_req_cb(request, status, user_data);
}

/* A non-blocking call's outcome into req: done now, or when its callback
 * fires. */
static void bidir_track(void *ptr, bidir_req_t *req, const char *what)
{
    if (ptr == NULL) {
        req->done   = 1;
        req->status = UCS_OK;
    } else if (UCS_PTR_IS_ERR(ptr)) {
        bidir_die(what, UCS_PTR_STATUS(ptr));
    }
}

static void bidir_free(void *ptr)
{
    if ((ptr != NULL) && !UCS_PTR_IS_ERR(ptr)) {
        ucp_request_free(ptr);
    }
}

static void bidir_wait(bidir_req_t *reqs, unsigned count, const char *what)
{
    unsigned i;

    for (i = 0; i < count; i++) {
        bidir_waiting = 1;
        while (!reqs[i].done) {
            bidir_progress();
        }
        bidir_waiting = 0;
        if (reqs[i].status != UCS_OK) {
            bidir_die(what, reqs[i].status);
        }
    }
}

static void bidir_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ++bidir_ep_errors;
    ++*(unsigned*)arg;
    fprintf(stderr, "varuna_bidir: endpoint error: %s\n",
            ucs_status_string(status));
}

static void bidir_init(void)
{
    ucp_worker_params_t worker_params;
    ucp_mem_map_params_t map_params;
    ucp_params_t params;
    ucs_status_t status;
    unsigned w;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA |
                        UCP_FEATURE_AMO64 |
                        (bidir_opt.wakeup ? UCP_FEATURE_WAKEUP : 0);
    status = ucp_init(&params, NULL, &bidir_context);
    if (status != UCS_OK) {
        bidir_die("ucp_init", status);
    }

    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        status = ucp_worker_create(bidir_context, &worker_params,
                                   &bidir_worker[w]);
        if (status != UCS_OK) {
            bidir_die("ucp_worker_create", status);
        }
    }

    memset(&map_params, 0, sizeof(map_params));
    map_params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                            UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                            UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    map_params.address    = NULL;
    map_params.length     = bidir_mem_len();
    map_params.flags      = UCP_MEM_MAP_ALLOCATE;
    status = ucp_mem_map(bidir_context, &map_params, &bidir_memh);
    if (status != UCS_OK) {
        bidir_die("ucp_mem_map", status);
    }
    {
        ucp_mem_attr_t attr;

        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        ucp_mem_query(bidir_memh, &attr);
        bidir_mem = attr.address;
    }
    memset(bidir_mem, 0, bidir_mem_len());
}

/* Exchange worker addresses and the key over a TCP socket; then the eps. */
static void bidir_connect(int fd)
{
    ucp_address_t *addr[BIDIR_NUM_WORKERS];
    void *peer_addr[BIDIR_NUM_WORKERS];
    size_t addr_len[BIDIR_NUM_WORKERS];
    ucp_ep_params_t ep_params;
    bidir_hello_t hello, peer;
    void *rkey_buf, *peer_rkey;
    size_t rkey_len;
    ucs_status_t status;
    unsigned w, e;

    status = ucp_rkey_pack(bidir_context, bidir_memh, &rkey_buf, &rkey_len);
    if (status != UCS_OK) {
        bidir_die("ucp_rkey_pack", status);
    }

    hello.base     = (uintptr_t)bidir_mem;
    hello.rkey_len = (uint32_t)rkey_len;
    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        status = ucp_worker_get_address(bidir_worker[w], &addr[w],
                                        &addr_len[w]);
        if (status != UCS_OK) {
            bidir_die("ucp_worker_get_address", status);
        }
        hello.addr_len[w] = (uint32_t)addr_len[w];
    }

    bidir_send_all(fd, &hello, sizeof(hello));
    bidir_send_all(fd, rkey_buf, rkey_len);
    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        bidir_send_all(fd, addr[w], addr_len[w]);
    }

    bidir_recv_all(fd, &peer, sizeof(peer));
    peer_rkey = malloc(peer.rkey_len);
    bidir_recv_all(fd, peer_rkey, peer.rkey_len);
    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        peer_addr[w] = malloc(peer.addr_len[w]);
        bidir_recv_all(fd, peer_addr[w], peer.addr_len[w]);
    }
    bidir_peer_base = peer.base;

    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        for (e = 0; e < bidir_opt.eps; e++) {
            memset(&ep_params, 0, sizeof(ep_params));
            ep_params.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep_params.address         = peer_addr[w];
            ep_params.err_mode        = bidir_opt.err_mode;
            ep_params.err_handler.cb  = bidir_ep_error;
            ep_params.err_handler.arg = &bidir_ep_error_count[w][e];
            status = ucp_ep_create(bidir_worker[w], &ep_params,
                                   &bidir_ep[w][e]);
            if (status != UCS_OK) {
                bidir_die("ucp_ep_create", status);
            }
            if (w == BIDIR_RMA_WORKER) {
                status = ucp_ep_rkey_unpack(bidir_ep[w][e], peer_rkey,
                                            &bidir_rkey[e]);
                if (status != UCS_OK) {
                    bidir_die("ucp_ep_rkey_unpack", status);
                }
            }
        }
        ucp_worker_release_address(bidir_worker[w], addr[w]);
        free(peer_addr[w]);
    }
    ucp_rkey_buffer_release(rkey_buf);
    free(peer_rkey);
}

static ucp_tag_t bidir_tag(int sender, unsigned iter, unsigned ep)
{
    return ((ucp_tag_t)ep << 33) | ((ucp_tag_t)sender << 32) | iter;
}

static size_t bidir_msg_len(unsigned iter)
{
    return ((iter % BIDIR_RNDV_EVERY) == BIDIR_RNDV_EVERY - 1) ?
           bidir_opt.rndv_size : bidir_opt.size;
}

static void bidir_fill(uint64_t *buf, size_t len, int side, unsigned iter,
                       unsigned ep)
{
    size_t i;

    for (i = 0; i < len / sizeof(uint64_t); i++) {
        buf[i] = bidir_pattern(side, iter, ep, (unsigned)i);
    }
}

/* One iteration of the tag worker: a message each way on every ep. */
static unsigned bidir_tag_round(unsigned iter, uint64_t **sbuf,
                                uint64_t **rbuf)
{
    bidir_req_t reqs[2 * BIDIR_MAX_EPS];
    void *ptrs[2 * BIDIR_MAX_EPS];
    ucp_request_param_t param;
    size_t len = bidir_msg_len(iter);
    unsigned e, bad = 0;

    memset(reqs, 0, sizeof(reqs));
    for (e = 0; e < bidir_opt.eps; e++) {
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.recv      = bidir_recv_cb;
        param.user_data    = &reqs[2 * e];
        memset(rbuf[e], 0, len);
        ptrs[2 * e] = ucp_tag_recv_nbx(bidir_worker[BIDIR_TAG_WORKER],
                                       rbuf[e], len,
                                       bidir_tag(!bidir_side, iter, e),
                                       UINT64_MAX, &param);
        bidir_track(ptrs[2 * e], &reqs[2 * e], "ucp_tag_recv_nbx");

        bidir_fill(sbuf[e], len, bidir_side, iter, e);
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send      = bidir_req_cb;
        param.user_data    = &reqs[2 * e + 1];
        ptrs[2 * e + 1] = ucp_tag_send_nbx(bidir_ep[BIDIR_TAG_WORKER][e],
                                           sbuf[e], len,
                                           bidir_tag(bidir_side, iter, e),
                                           &param);
        bidir_track(ptrs[2 * e + 1], &reqs[2 * e + 1], "ucp_tag_send_nbx");
    }

    bidir_wait(reqs, 2 * bidir_opt.eps, "tag message");
    for (e = 0; e < bidir_opt.eps; e++) {
        bidir_free(ptrs[2 * e]);
        bidir_free(ptrs[2 * e + 1]);
        bidir_fill(sbuf[e], len, !bidir_side, iter, e);
        if (memcmp(sbuf[e], rbuf[e], len) != 0) {
            ++bad;
        }
    }
    return bad;
}

/* One iteration of the rma worker: fetch-add, put, flush on every ep.
 * Returns how many fetch results were not the one expected. */
static unsigned bidir_rma_round(unsigned iter, uint64_t *puts)
{
    bidir_req_t reqs[3 * BIDIR_MAX_EPS];
    void *ptrs[3 * BIDIR_MAX_EPS];
    uint64_t result[BIDIR_MAX_EPS];
    static const uint64_t one = 1;
    ucp_request_param_t param;
    ucp_ep_h ep;
    unsigned e, bad = 0;

    memset(reqs, 0, sizeof(reqs));
    for (e = 0; e < bidir_opt.eps; e++) {
        ep = bidir_ep[BIDIR_RMA_WORKER][e];

        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA |
                             UCP_OP_ATTR_FIELD_REPLY_BUFFER |
                             UCP_OP_ATTR_FIELD_DATATYPE;
        param.cb.send      = bidir_req_cb;
        param.user_data    = &reqs[3 * e];
        param.reply_buffer = &result[e];
        param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
        ptrs[3 * e] = ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &one, 1,
                                        bidir_remote(bidir_counter(e)),
                                        bidir_rkey[e], &param);
        bidir_track(ptrs[3 * e], &reqs[3 * e], "ucp_atomic_op_nbx");

        bidir_fill(&puts[e * BIDIR_SLOT_WORDS],
                   BIDIR_SLOT_WORDS * sizeof(uint64_t), bidir_side, iter, e);
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send      = bidir_req_cb;
        param.user_data    = &reqs[3 * e + 1];
        ptrs[3 * e + 1] = ucp_put_nbx(ep, &puts[e * BIDIR_SLOT_WORDS],
                                      BIDIR_SLOT_WORDS * sizeof(uint64_t),
                                      bidir_remote(bidir_slot(e)),
                                      bidir_rkey[e], &param);
        bidir_track(ptrs[3 * e + 1], &reqs[3 * e + 1], "ucp_put_nbx");

        param.user_data = &reqs[3 * e + 2];
        ptrs[3 * e + 2] = ucp_ep_flush_nbx(ep, &param);
        bidir_track(ptrs[3 * e + 2], &reqs[3 * e + 2], "ucp_ep_flush_nbx");
    }

    bidir_wait(reqs, 3 * bidir_opt.eps, "rma");
    for (e = 0; e < bidir_opt.eps; e++) {
        bidir_free(ptrs[3 * e]);
        bidir_free(ptrs[3 * e + 1]);
        bidir_free(ptrs[3 * e + 2]);
        if (result[e] != iter) {
            if (bad == 0) {
                fprintf(stderr, "varuna_bidir: iteration %u ep %u: "
                        "fetch-add returned %lu\n", iter, e,
                        (unsigned long)result[e]);
            }
            ++bad;
        }
    }
    return bad;
}

/* Both sides have sent and received everything: a last message each way. */
static void bidir_barrier(void)
{
    bidir_req_t reqs[2];
    void *ptrs[2];
    ucp_request_param_t param;
    uint64_t out = 1, in = 0;

    memset(reqs, 0, sizeof(reqs));
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv      = bidir_recv_cb;
    param.user_data    = &reqs[0];
    ptrs[0] = ucp_tag_recv_nbx(bidir_worker[BIDIR_TAG_WORKER], &in,
                               sizeof(in), BIDIR_TAG_DONE, UINT64_MAX,
                               &param);
    bidir_track(ptrs[0], &reqs[0], "ucp_tag_recv_nbx");

    param.cb.send   = bidir_req_cb;
    param.user_data = &reqs[1];
    ptrs[1] = ucp_tag_send_nbx(bidir_ep[BIDIR_TAG_WORKER][0], &out,
                               sizeof(out), BIDIR_TAG_DONE, &param);
    bidir_track(ptrs[1], &reqs[1], "ucp_tag_send_nbx");
    bidir_wait(reqs, 2, "barrier");
    bidir_free(ptrs[0]);
    bidir_free(ptrs[1]);
}

/* Messages nobody asked for: duplicates of ones already received. */
static unsigned bidir_unexpected(void)
{
    ucp_tag_recv_info_t info;
    unsigned count = 0, i;

    for (i = 0; i < 1000; i++) {
        bidir_progress();
    }
    while (ucp_tag_probe_nb(bidir_worker[BIDIR_TAG_WORKER], 0,
                            BIDIR_TAG_DATA, 1, &info) != NULL) {
        ++count;
    }
    return count;
}

static int bidir_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* The k-th fail point: tell the runner, and with -p wait (progressing,
 * so the failover and the re-protection run) until it says the link is
 * back. */
static void bidir_fail_point(unsigned k)
{
    char path[4096];
    FILE *f;

    printf("varuna_bidir: fail point %u\n", k);
    fflush(stdout);
    if (bidir_opt.marker == NULL) {
        return;
    }

    snprintf(path, sizeof(path), "%s.%u", bidir_opt.marker, k);
    f = fopen(path, "w");
    if (f == NULL) {
        perror("varuna_bidir: marker");
        exit(2);
    }
    fclose(f);

    if (bidir_opt.pause) {
        snprintf(path, sizeof(path), "%s.%u.done", bidir_opt.marker, k);
        while (!bidir_exists(path)) {
            bidir_progress();
        }
    }
}

static double bidir_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* No traffic, only progress, for sec seconds */
static void bidir_idle(double sec)
{
    double end = bidir_now() + sec;

    printf("%s: idle for %.1f s\n", bidir_side ? "client" : "server", sec);
    fflush(stdout);
    while (bidir_now() < end) {
        bidir_progress();
    }
}

/* The peer was killed: every endpoint must report it, once. */
static int bidir_await_death(void)
{
    double start = bidir_now(), end = start + bidir_opt.expect_death;
    unsigned w, e, reported, twice;

    for (;;) {
        bidir_progress();
        reported = twice = 0;
        for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
            for (e = 0; e < bidir_opt.eps; e++) {
                reported += bidir_ep_error_count[w][e] > 0;
                twice    += bidir_ep_error_count[w][e] > 1;
            }
        }
        if ((reported == BIDIR_NUM_WORKERS * bidir_opt.eps) ||
            (bidir_now() > end)) {
            break;
        }
    }

    /* a second callback would come right behind */
    end = bidir_now() + 0.5;
    while (bidir_now() < end) {
        bidir_progress();
    }
    twice = 0;
    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        for (e = 0; e < bidir_opt.eps; e++) {
            twice += bidir_ep_error_count[w][e] > 1;
        }
    }

    varuna_verdict("client",
                   (reported == BIDIR_NUM_WORKERS * bidir_opt.eps) && !twice,
                   "%u of %u endpoints reported the dead peer within %.1f s "
                   "(%.2f s), %u more than once", reported,
                   BIDIR_NUM_WORKERS * bidir_opt.eps, bidir_opt.expect_death,
                   bidir_now() - start, twice);
    return ((reported == BIDIR_NUM_WORKERS * bidir_opt.eps) && !twice) ?
           0 : 1;
}

static int bidir_run(void)
{
    uint64_t *sbuf[BIDIR_MAX_EPS], *rbuf[BIDIR_MAX_EPS], *puts;
    unsigned long bad_msgs = 0, bad_fetch = 0, bad_count = 0, bad_slot = 0;
    unsigned iter, e, w, dup, fail = 0;
    const char *name = bidir_side ? "client" : "server";
    char wakeups[128] = "", who[32];
    int ok;

    for (e = 0; e < bidir_opt.eps; e++) {
        sbuf[e] = calloc(1, bidir_opt.rndv_size);
        rbuf[e] = calloc(1, bidir_opt.rndv_size);
    }
    puts = calloc(bidir_opt.eps * BIDIR_SLOT_WORDS, sizeof(uint64_t));

    for (iter = 0; iter < bidir_opt.iters; iter++) {
        if ((fail < bidir_opt.num_fails) &&
            ((long)iter == bidir_opt.fail_at[fail])) {
            bidir_fail_point(++fail);
            if (fail == bidir_opt.num_fails) {
                if (bidir_opt.expect_death > 0) {
                    exit(bidir_await_death());
                }
                if (bidir_opt.idle > 0) {
                    bidir_idle(bidir_opt.idle);
                }
            }
        }
        bad_msgs  += bidir_tag_round(iter, sbuf, rbuf);
        bad_fetch += bidir_rma_round(iter, puts);
        if ((iter % 500) == 0) {
            printf("%s: iteration %u\n", name, iter);
            fflush(stdout);
        }
    }

    bidir_barrier();
    dup = bidir_unexpected();

    for (e = 0; e < bidir_opt.eps; e++) {
        if (*bidir_counter(e) != bidir_opt.iters) {
            fprintf(stderr, "varuna_bidir: counter %u is %lu after %u "
                    "fetch-adds\n", e, (unsigned long)*bidir_counter(e),
                    bidir_opt.iters);
            ++bad_count;
        }
        bidir_fill(puts, BIDIR_SLOT_WORDS * sizeof(uint64_t), !bidir_side,
                   bidir_opt.iters - 1, e);
        if (memcmp(puts, bidir_slot(e),
                   BIDIR_SLOT_WORDS * sizeof(uint64_t)) != 0) {
            ++bad_slot;
        }
    }

    ok = (bad_msgs == 0) && (bad_fetch == 0) && (bad_count == 0) &&
         (bad_slot == 0) && (dup == 0) && (bidir_ep_errors == 0) &&
         (bidir_missed_wakeups == 0);
    if (bidir_opt.wakeup) {
        snprintf(wakeups, sizeof(wakeups), "; %lu sleeps, %lu missed wakeups",
                 bidir_sleeps, bidir_missed_wakeups);
    }
    /* a server's verdict per client: "server", "server 2", ... */
    if (!bidir_side && (bidir_client > 0)) {
        snprintf(who, sizeof(who), "server %u", bidir_client + 1);
    } else {
        snprintf(who, sizeof(who), "%s", name);
    }
    varuna_verdict(who, ok, "%u iterations x %u endpoints each way: %lu bad "
                   "messages, %u duplicates, %lu wrong fetch results, %lu "
                   "wrong counters, %lu wrong slots, %lu endpoint errors%s",
                   bidir_opt.iters, bidir_opt.eps, bad_msgs, dup, bad_fetch,
                   bad_count, bad_slot, bidir_ep_errors, wakeups);

    /* a last barrier: the peer may still read from us until it is done */
    bidir_barrier();
    for (w = 0; w < BIDIR_NUM_WORKERS; w++) {
        for (e = 0; e < bidir_opt.eps; e++) {
            if (w == BIDIR_RMA_WORKER) {
                ucp_rkey_destroy(bidir_rkey[e]);
            }
            ucp_ep_destroy(bidir_ep[w][e]);
        }
    }
    for (e = 0; e < bidir_opt.eps; e++) {
        free(sbuf[e]);
        free(rbuf[e]);
    }
    free(puts);
    return ok ? 0 : 1;
}

static int bidir_listen(const char *port)
{
    struct sockaddr_in addr;
    int lfd, one = 1;

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&addr, 0, sizeof(addr));
    addr.sin_family      = AF_INET;
    addr.sin_port        = htons(atoi(port));
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if ((bind(lfd, (struct sockaddr*)&addr, sizeof(addr)) != 0) ||
        (listen(lfd, 1) != 0)) {
        perror("varuna_bidir: bind/listen");
        exit(2);
    }
    printf("server: listening on port %s\n", port);
    fflush(stdout);
    return lfd;
}

static int bidir_dial(const char *host, const char *port)
{
    struct addrinfo hints, *res;
    int fd, tries;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        fprintf(stderr, "varuna_bidir: cannot resolve %s\n", host);
        exit(2);
    }
    for (tries = 0; tries < 100; tries++) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
            freeaddrinfo(res);
            return fd;
        }
        close(fd);
        usleep(100000);
    }
    perror("varuna_bidir: connect");
    exit(2);
}

static void bidir_usage(void)
{
    fprintf(stderr, "usage: varuna_bidir server PORT [OPTIONS]\n"
                    "       varuna_bidir client HOST PORT [OPTIONS]\n"
                    "  -i ITERS  -e EPS  -s SIZE  -S RNDV_SIZE  "
                    "-f ITER[,ITER...]  -m FILE  -p  -E peer|none  -w SEC  "
                    "-K SEC  -n CLIENTS  -W\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int fd = -1, lfd = -1, argi, opt, ret;
    unsigned client;
    char sync = 0, *p;

    if ((argc >= 3) && !strcmp(argv[1], "server")) {
        bidir_side = 0;
        argi       = 3;
    } else if ((argc >= 4) && !strcmp(argv[1], "client")) {
        bidir_side = 1;
        argi       = 4;
    } else {
        bidir_usage();
    }

    optind = argi;
    while ((opt = getopt(argc, argv, "i:e:s:S:f:m:pE:w:K:n:W")) != -1) {
        switch (opt) {
        case 'i':
            bidir_opt.iters = (unsigned)atoi(optarg);
            break;
        case 'e':
            bidir_opt.eps = (unsigned)atoi(optarg);
            break;
        case 's':
            bidir_opt.size = (size_t)atol(optarg);
            break;
        case 'S':
            bidir_opt.rndv_size = (size_t)atol(optarg);
            break;
        case 'f':
            for (p = strtok(optarg, ","); p != NULL; p = strtok(NULL, ",")) {
                if (bidir_opt.num_fails == BIDIR_MAX_FAILS) {
                    bidir_usage();
                }
                bidir_opt.fail_at[bidir_opt.num_fails++] = atol(p);
            }
            break;
        case 'p':
            bidir_opt.pause = 1;
            break;
        case 'w':
            bidir_opt.idle = atof(optarg);
            break;
        case 'K':
            bidir_opt.expect_death = atof(optarg);
            break;
        case 'n':
            bidir_opt.clients = (unsigned)atoi(optarg);
            break;
        case 'W':
            bidir_opt.wakeup = 1;
            break;
        case 'm':
            bidir_opt.marker = optarg;
            break;
        case 'E':
            if (!strcmp(optarg, "none")) {
                bidir_opt.err_mode = UCP_ERR_HANDLING_MODE_NONE;
            } else if (strcmp(optarg, "peer")) {
                bidir_usage();
            }
            break;
        default:
            bidir_usage();
        }
    }
    if ((bidir_opt.eps == 0) || (bidir_opt.eps > BIDIR_MAX_EPS) ||
        (bidir_opt.size < sizeof(uint64_t)) ||
        (bidir_opt.rndv_size < bidir_opt.size) || (bidir_opt.iters == 0) ||
        (bidir_opt.clients == 0)) {
        bidir_usage();
    }
    bidir_opt.size      &= ~(sizeof(uint64_t) - 1);
    bidir_opt.rndv_size &= ~(sizeof(uint64_t) - 1);

    bidir_init();
    if (bidir_side) {
        bidir_opt.clients = 1;
        fd = bidir_dial(argv[2], argv[3]);
    } else {
        lfd = bidir_listen(argv[2]);
    }

    ret = 0;
    for (client = 0; client < bidir_opt.clients; client++) {
        bidir_client = client;
        if (!bidir_side) {
            fd = accept(lfd, NULL, NULL);
            if (client > 0) {
                printf("server: client %u\n", client + 1);
                fflush(stdout);
            }
            memset(bidir_mem, 0, bidir_mem_len());
            memset(bidir_ep_error_count, 0, sizeof(bidir_ep_error_count));
            bidir_ep_errors = 0;
        }
        bidir_connect(fd);
        ret |= bidir_run();

        /* stay until the peer has finished with us too */
        bidir_send_all(fd, &sync, 1);
        bidir_recv_all(fd, &sync, 1);
        close(fd);
    }
    if (!bidir_side) {
        close(lfd);
    }
    ucp_mem_unmap(bidir_context, bidir_memh);
    ucp_worker_destroy(bidir_worker[BIDIR_RMA_WORKER]);
    ucp_worker_destroy(bidir_worker[BIDIR_TAG_WORKER]);
    ucp_cleanup(bidir_context);
    printf("%s: exit %d\n", bidir_side ? "client" : "server", ret);
    return ret;
}
