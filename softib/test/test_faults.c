/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * softib under faults: lost requests, ACKs and responses, RNR, retry
 * exhaustion, link failures, a killed peer, garbage on the sockets. The
 * responder's memory and every completion are checked: a fault must never
 * make the device execute something twice or lose it silently.
 */
#include "sib_test.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define BUF_LEN  (1 << 20)

static struct st_ep a, b;

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int open_pair(const char *dev_a, int port_a, const char *dev_b,
                     int port_b, const struct st_opts *o, int srq)
{
    int ret;

    ret = st_ep_open(&a, dev_a, port_a, BUF_LEN, IBV_QPT_RC, 0);
    if (ret == 0) {
        ret = st_ep_open(&b, dev_b, port_b, BUF_LEN, IBV_QPT_RC, srq);
    }
    if (ret == 0) {
        ret = st_connect(&a, &b, o);
    }
    ST_CHECK(ret == 0, "opening the pair: %d", ret);
    return ret;
}

static void close_pair(void)
{
    st_ep_close(&a);
    st_ep_close(&b);
}

/* Short timers so failures show up in milliseconds: 4.096 us << 8 = 1 ms.
 * Seven retries, so that a test process descheduled for a few ms on a
 * loaded machine does not exhaust them; a dead path still fails in 8 ms. */
static struct st_opts fast_opts(void)
{
    struct st_opts o = st_default_opts();

    o.timeout   = 8;
    o.retry_cnt = 7;
    return o;
}

static void expect_ok(struct st_ep *ep, uint64_t wr_id, int timeout_ms)
{
    struct ibv_wc wc;

    if (st_poll(ep, &wc, 1, timeout_ms) != 1) {
        ST_CHECK(0, "no completion for wr_id %llu",
                 (unsigned long long)wr_id);
        return;
    }
    ST_CHECK((wc.status == IBV_WC_SUCCESS) && (wc.wr_id == wr_id),
             "wr_id %llu (expected %llu): %s", (unsigned long long)wc.wr_id,
             (unsigned long long)wr_id, ibv_wc_status_str(wc.status));
}

/* The responder never answers: after retry_cnt + 1 timeouts the oldest WR
 * fails with RETRY_EXC_ERR, the rest are flushed, the QP is in ERR. */
static void t_retry_exceeded_then_flush(void)
{
    struct st_opts o = fast_opts();
    int64_t timeouts = st_counter("softib0", "retransmit_timeout");
    struct ibv_wc wc[3];
    uint64_t start, took;

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    st_drop("softib0", 1, SOFTIB_DIR_TX, SOFTIB_CLASS_REQ, 0, 0,
            SOFTIB_FOREVER);
    st_fill(a.buf, 3 * 4096, 1);
    start = now_us();
    ST_CHECK(!st_write(&a, &b, 0, 0, 4096, 1), "post");
    ST_CHECK(!st_write(&a, &b, 4096, 4096, 4096, 2), "post");
    ST_CHECK(!st_write(&a, &b, 8192, 8192, 4096, 3), "post");
    ST_CHECK(st_poll(&a, wc, 3, 5000) == 3, "three completions");
    took = now_us() - start;

    ST_CHECK((wc[0].wr_id == 1) && (wc[0].status == IBV_WC_RETRY_EXC_ERR),
             "first: wr_id %llu %s", (unsigned long long)wc[0].wr_id,
             ibv_wc_status_str(wc[0].status));
    ST_CHECK((wc[1].wr_id == 2) && (wc[1].status == IBV_WC_WR_FLUSH_ERR) &&
             (wc[2].wr_id == 3) && (wc[2].status == IBV_WC_WR_FLUSH_ERR),
             "then flushed in order");
    /* Like libibverbs over hardware: ibv_qp.state changes only through
     * ibv_modify_qp and ibv_query_qp, not when the device fails the QP. */
    ST_CHECK(a.qp->state == IBV_QPS_RTS, "ibv_qp.state %d before a query",
             a.qp->state);
    ST_CHECK(st_qp_state(&a) == IBV_QPS_ERR, "QP in ERR");
    ST_CHECK(a.qp->state == IBV_QPS_ERR, "ibv_qp.state %d after a query",
             a.qp->state);
    /* 8 timeouts of 1 ms at least; far less than a second */
    ST_CHECK((took >= 8000) && (took < 1000000), "took %llu us",
             (unsigned long long)took);
    ST_CHECK(st_counter("softib0", "retransmit_timeout") - timeouts ==
             o.retry_cnt,
             "retransmit_timeout went up by %lld",
             (long long)(st_counter("softib0", "retransmit_timeout") -
                         timeouts));
    ST_CHECK(b.buf[0] == 0, "nothing reached the responder");

    /* posting to a QP in ERR completes with a flush (IBA 10.8.3.4) */
    ST_CHECK(!st_write(&a, &b, 0, 0, 64, 4), "post to ERR");
    ST_CHECK((st_poll(&a, wc, 1, 1000) == 1) && (wc[0].wr_id == 4) &&
             (wc[0].status == IBV_WC_WR_FLUSH_ERR), "flushed on post");
    close_pair();
}

/* No receive posted: RNR NAKs, then RNR_RETRY_EXC_ERR with a finite
 * rnr_retry; with rnr_retry 7 the SEND waits until a receive appears. */
static void t_rnr(void)
{
    struct st_opts o = fast_opts();
    int64_t naks = st_counter("softib1", "rnr_nak_sent");
    struct ibv_wc wc;
    uint64_t start;

    o.rnr_retry     = 2;
    o.min_rnr_timer = 1; /* 10 us */
    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    ST_CHECK(!st_send(&a, 0, 100, 1), "post");
    ST_CHECK(st_poll(&a, &wc, 1, 5000) == 1, "completion");
    ST_CHECK((wc.wr_id == 1) && (wc.status == IBV_WC_RNR_RETRY_EXC_ERR),
             "status %s", ibv_wc_status_str(wc.status));
    ST_CHECK(st_counter("softib1", "rnr_nak_sent") - naks == 3,
             "rnr_nak_sent went up by %lld",
             (long long)(st_counter("softib1", "rnr_nak_sent") - naks));
    close_pair();

    o.rnr_retry     = 7; /* forever */
    o.min_rnr_timer = 12; /* 0.64 ms */
    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    st_fill(a.buf, 5000, 4);
    ST_CHECK(!st_send(&a, 0, 5000, 2), "post");
    start = now_us();
    while (now_us() - start < 20000) {
        ST_CHECK(st_poll(&a, &wc, 1, 0) == 0, "completed with no receive");
    }
    ST_CHECK(!st_recv(&b, 0, 8192, 3), "post recv");
    expect_ok(&a, 2, 5000);
    ST_CHECK((st_poll(&b, &wc, 1, 5000) == 1) &&
             (wc.status == IBV_WC_SUCCESS) && (wc.byte_len == 5000),
             "receive: status %d len %u", wc.status, wc.byte_len);
    ST_CHECK(st_check_fill(b.buf, 5000, 4), "data");
    close_pair();
}

/* The atomic ACK carrying the result is lost: the requester retries, the
 * responder answers from its resources, the target changes once. */
static void t_atomic_ack_lost(void)
{
    struct st_opts o = fast_opts();
    int64_t dups = st_counter("softib1", "duplicate_atomic");
    uint64_t *target, *result;

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    target = (uint64_t*)(b.buf + 64);
    result = (uint64_t*)a.buf;

    *target = 5;
    st_drop("softib1", 1, SOFTIB_DIR_TX, SOFTIB_CLASS_ATOMIC_RESP, 0, 0, 1);
    ST_CHECK(!st_atomic(&a, &b, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 64, 1, 0, 1),
             "post");
    expect_ok(&a, 1, 5000);
    ST_CHECK(*result == 5, "fetch-add returned %llu",
             (unsigned long long)*result);
    ST_CHECK(*target == 6, "target %llu: executed more than once",
             (unsigned long long)*target);

    /* a compare-and-swap run twice would return the swapped value */
    st_drop("softib1", 1, SOFTIB_DIR_TX, SOFTIB_CLASS_ATOMIC_RESP, 0, 0, 1);
    ST_CHECK(!st_atomic(&a, &b, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 64, 6, 9, 2),
             "post");
    expect_ok(&a, 2, 5000);
    ST_CHECK(result[1] == 6, "cswap returned %llu",
             (unsigned long long)result[1]);
    ST_CHECK(*target == 9, "target %llu", (unsigned long long)*target);
    /* At least one duplicate per lost response; a timer that fires early
     * on a loaded machine adds more, each answered from the cache, as the
     * targets show. */
    ST_CHECK(st_counter("softib1", "duplicate_atomic") - dups >= 2,
             "duplicate_atomic went up by %lld",
             (long long)(st_counter("softib1", "duplicate_atomic") - dups));
    close_pair();
}

/* A READ response packet in the middle is lost: the READ completes with
 * the right data after the responder answers the repeated request. */
static void t_read_response_lost(void)
{
    struct st_opts o = fast_opts();
    int64_t dups = st_counter("softib1", "duplicate_read");

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    st_fill(b.buf, 10 * 4096, 11);
    st_drop("softib1", 1, SOFTIB_DIR_TX, SOFTIB_CLASS_READ_RESP, 0, 3, 1);
    ST_CHECK(!st_read(&a, &b, 0, 0, 10 * 4096, 1), "post");
    expect_ok(&a, 1, 5000);
    ST_CHECK(st_check_fill(a.buf, 10 * 4096, 11), "READ data");
    ST_CHECK(st_counter("softib1", "duplicate_read") - dups >= 1,
             "no duplicate READ was answered");
    close_pair();
}

/* ACKs are lost: the requester resends, the responder re-ACKs duplicates
 * without writing again, all WRITEs complete once, in order. Each WRITE
 * asks for an ACK and the responder may coalesce them, so the first pass
 * draws at most five: dropping five loses all of them whatever the
 * timing, and the retransmission must reach the responder. */
static void t_ack_lost(void)
{
    struct st_opts o = fast_opts();
    int64_t dups = st_counter("softib1", "duplicate_request");
    int i;

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    st_drop("softib1", 1, SOFTIB_DIR_TX, SOFTIB_CLASS_ACK, 0, 0, 5);
    for (i = 0; i < 5; i++) {
        st_fill(a.buf + 8192 * i, 8192, 20 + i);
        ST_CHECK(!st_write(&a, &b, 8192 * i, 8192 * i, 8192, i), "post");
    }
    for (i = 0; i < 5; i++) {
        expect_ok(&a, i, 5000);
        ST_CHECK(st_check_fill(b.buf + 8192 * i, 8192, 20 + i), "write %d", i);
    }
    ST_CHECK(st_counter("softib1", "duplicate_request") - dups >= 1,
             "no duplicate reached the responder");
    close_pair();
}

/* One request packet is lost mid-message: the next one draws a sequence
 * NAK and the requester resends at once, without waiting for a timeout. */
static void t_request_lost_seq_nak(void)
{
    struct st_opts o = st_default_opts(); /* 67 ms timer: must not be used */
    int64_t naks     = st_counter("softib1", "seq_nak_sent");
    int64_t timeouts = st_counter("softib0", "retransmit_timeout");
    uint64_t start;

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    st_fill(a.buf, 10 * 4096, 31);
    st_drop("softib0", 1, SOFTIB_DIR_TX, SOFTIB_CLASS_REQ, 0, 2, 1);
    start = now_us();
    ST_CHECK(!st_write(&a, &b, 0, 0, 10 * 4096, 1), "post");
    expect_ok(&a, 1, 5000);
    ST_CHECK(now_us() - start < 60000, "recovery took %llu us",
             (unsigned long long)(now_us() - start));
    ST_CHECK(st_check_fill(b.buf, 10 * 4096, 31), "data");
    ST_CHECK(st_counter("softib1", "seq_nak_sent") - naks == 1,
             "seq_nak_sent went up by %lld",
             (long long)(st_counter("softib1", "seq_nak_sent") - naks));
    ST_CHECK(st_counter("softib0", "retransmit_timeout") == timeouts,
             "a timeout fired");
    close_pair();
}

/* Link down and up: events on every context of the device, port state,
 * nothing on the other device. */
static void t_port_events(void)
{
    struct ibv_async_event ev;
    struct ibv_port_attr pa;
    int ret;

    ret = st_ep_open(&a, "softib0", 1, 4096, IBV_QPT_RC, 0);
    if (ret == 0) {
        ret = st_ep_open(&b, "softib1", 1, 4096, IBV_QPT_RC, 0);
    }
    ST_CHECK(ret == 0, "open: %d", ret);
    if (ret) {
        return;
    }

    ST_CHECK(!softib_ctl_link_set(st_ctl, "softib0", 2, 0), "link down");
    ST_CHECK(!st_async_event(&a, &ev, 2000), "no event on softib0");
    ST_CHECK((ev.event_type == IBV_EVENT_PORT_ERR) &&
             (ev.element.port_num == 2), "event %s port %d",
             ibv_event_type_str(ev.event_type), ev.element.port_num);
    ST_CHECK(!ibv_query_port(a.ctx, 2, &pa) && (pa.state == IBV_PORT_DOWN),
             "port state %d", pa.state);
    ST_CHECK(!ibv_query_port(a.ctx, 1, &pa) && (pa.state == IBV_PORT_ACTIVE),
             "port 1 state %d", pa.state);
    ST_CHECK(st_async_event(&b, &ev, 100) < 0, "event on softib1");

    ST_CHECK(!softib_ctl_link_set(st_ctl, "softib0", 2, 1), "link up");
    ST_CHECK(!st_async_event(&a, &ev, 2000), "no event on softib0");
    ST_CHECK((ev.event_type == IBV_EVENT_PORT_ACTIVE) &&
             (ev.element.port_num == 2), "event %s port %d",
             ibv_event_type_str(ev.event_type), ev.element.port_num);
    ST_CHECK(!ibv_query_port(a.ctx, 2, &pa) && (pa.state == IBV_PORT_ACTIVE),
             "port state %d", pa.state);
    close_pair();
}

/* Traffic through a port that is down fails like a cut cable; the other
 * port of the same device keeps working. */
static void t_port_down_traffic(void)
{
    struct st_opts o = fast_opts();
    int64_t drops = st_counter("softib1", "drop_port_down");
    struct st_ep c, d;
    struct ibv_wc wc;

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    ST_CHECK(!st_ep_open(&c, "softib0", 2, 4096, IBV_QPT_RC, 0) &&
             !st_ep_open(&d, "softib1", 2, 4096, IBV_QPT_RC, 0) &&
             !st_connect(&c, &d, &o), "second pair");

    ST_CHECK(!softib_ctl_link_set(st_ctl, "softib1", 1, 0), "link down");
    ST_CHECK(!st_write(&a, &b, 0, 0, 100, 1), "post");
    ST_CHECK(!st_write(&c, &d, 0, 0, 100, 2), "post");
    ST_CHECK((st_poll(&a, &wc, 1, 5000) == 1) &&
             (wc.status == IBV_WC_RETRY_EXC_ERR),
             "through the dead port: %s", ibv_wc_status_str(wc.status));
    ST_CHECK((st_poll(&c, &wc, 1, 5000) == 1) &&
             (wc.status == IBV_WC_SUCCESS),
             "through the live port: %s", ibv_wc_status_str(wc.status));
    ST_CHECK(st_counter("softib1", "drop_port_down") > drops,
             "no drop counted");
    ST_CHECK(st_qp_state(&b) == IBV_QPS_RTS,
             "the responder's QP stays in RTS when its link dies");
    ST_CHECK(!softib_ctl_link_set(st_ctl, "softib1", 1, 1), "link up");
    st_ep_close(&c);
    st_ep_close(&d);
    close_pair();
}

/* The peer process is killed in the middle of a stream of WRITEs: like
 * hardware, the requester sees retry exhaustion, then flushes. */
static void t_peer_killed(void)
{
    struct st_opts o = st_default_opts();
    struct st_addr mine, theirs;
    int to_child[2], to_parent[2], posted = 0, done = 0, errs = 0, i, n;
    struct ibv_wc wc[32];
    uint64_t start;
    pid_t pid;

    /* Two processes share two cores with whatever else runs: a peer that
     * is merely descheduled must not look dead. 4.096 us << 12 = 17 ms,
     * and 7 retries ride out a stall of 130 ms; the dead peer is still
     * detected in about 8 x 17 ms. */
    o.timeout   = 12;
    o.retry_cnt = 7;

    ST_CHECK(!pipe(to_child) && !pipe(to_parent), "pipes");
    pid = fork();
    if (pid == 0) {
        struct st_ep peer;

        if (st_ep_open(&peer, "softib1", 1, BUF_LEN, IBV_QPT_RC, 0) ||
            (read(to_child[0], &theirs, sizeof(theirs)) != sizeof(theirs))) {
            _exit(1);
        }
        st_ep_addr(&peer, o.psn_b, &mine);
        if ((st_ep_connect(&peer, &theirs, o.psn_b, &o) != 0) ||
            (write(to_parent[1], &mine, sizeof(mine)) != sizeof(mine))) {
            _exit(1);
        }
        for (;;) {
            pause();
        }
    }

    ST_CHECK(!st_ep_open(&a, "softib0", 1, BUF_LEN, IBV_QPT_RC, 0), "open");
    st_ep_addr(&a, o.psn_a, &mine);
    ST_CHECK((write(to_child[1], &mine, sizeof(mine)) == sizeof(mine)) &&
             (read(to_parent[0], &theirs, sizeof(theirs)) ==
              sizeof(theirs)), "exchange");
    ST_CHECK(!st_ep_connect(&a, &theirs, o.psn_a, &o), "connect");

    /* Every completion in order: successes, one RETRY_EXC_ERR after the
     * kill, then only flushes. */
    start = now_us();
    while ((done < posted || !errs) && (now_us() - start < 10000000)) {
        while (!errs && (posted - done < 64)) {
            ST_CHECK(!st_post_rdma(&a, IBV_WR_RDMA_WRITE, 0, theirs.addr,
                                   theirs.rkey, 16384, posted, 1), "post");
            posted++;
        }
        if ((pid > 0) && (done >= 200)) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            pid = -1;
        }
        n = ibv_poll_cq(a.cq, 32, wc);
        for (i = 0; i < n; i++, done++) {
            ST_CHECK(wc[i].wr_id == (uint64_t)done, "wr_id %llu, expected %d",
                     (unsigned long long)wc[i].wr_id, done);
            if (errs) {
                ST_CHECK(wc[i].status == IBV_WC_WR_FLUSH_ERR,
                         "after the error: %s",
                         ibv_wc_status_str(wc[i].status));
            } else if (wc[i].status != IBV_WC_SUCCESS) {
                ST_CHECK(pid == -1, "failed before the kill: %s",
                         ibv_wc_status_str(wc[i].status));
                ST_CHECK(wc[i].status == IBV_WC_RETRY_EXC_ERR,
                         "first error %s", ibv_wc_status_str(wc[i].status));
                errs = 1;
            }
        }
    }
    ST_CHECK(errs, "no error after the peer died");
    ST_CHECK(done == posted, "%d completions missing", posted - done);
    ST_CHECK(st_qp_state(&a) == IBV_QPS_ERR, "QP in ERR");
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    st_ep_close(&a);
}

/* Bytes shaped like our packets and bytes that are not: every datagram is
 * counted and dropped, and the device keeps working. */
static uint32_t test_crc32(const uint8_t *buf, size_t len)
{
    uint32_t c = 0xffffffffu;
    int k;

    while (len--) {
        c ^= *buf++;
        for (k = 0; k < 8; k++) {
            c = (c & 1) ? (0xedb88320u ^ (c >> 1)) : (c >> 1);
        }
    }
    return c ^ 0xffffffffu;
}

static void t_malformed_packets(void)
{
    struct st_opts o = st_default_opts();
    int64_t foreign   = st_counter(NULL, "drop_foreign");
    int64_t malformed = st_counter(NULL, "drop_malformed");
    int64_t noqp      = st_counter(NULL, "drop_no_qp");
    struct softib_ctx_info info[64];
    struct sockaddr_in sin;
    uint8_t pkt[64], junk[9000];
    uint32_t crc;
    int fd, i, n, port = 0;

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    n = softib_ctl_contexts(st_ctl, info, 64);
    for (i = 0; i < n && i < 64; i++) {
        if ((info[i].pid == getpid()) && !strcmp(info[i].dev, "softib1")) {
            port = info[i].udp_port[0];
        }
    }
    ST_CHECK(port != 0, "our context is not in the registry");

    fd = socket(AF_INET, SOCK_DGRAM, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_port        = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    /* random datagrams of random sizes, some larger than any packet */
    srand(7);
    for (i = 0; i < 1000; i++) {
        size_t len = (size_t)(rand() % (int)sizeof(junk));
        size_t k;

        for (k = 0; k < len; k++) {
            junk[k] = (uint8_t)rand();
        }
        sendto(fd, junk, len, 0, (struct sockaddr*)&sin, sizeof(sin));
    }

    /* a well-formed SEND_ONLY (LRH, BTH, ICRC) with a bad header CRC, then
     * with a good one but to a QP that does not exist */
    memset(pkt, 0, sizeof(pkt));
    pkt[1] = 0x02;                          /* LNH: IBA local */
    pkt[2] = 0;
    pkt[3] = (uint8_t)b.lid;                /* DLID */
    pkt[5] = 24 / 4;                        /* packet length in words */
    pkt[7] = (uint8_t)a.lid;                /* SLID */
    pkt[8] = 0x04;                          /* RC SEND_ONLY */
    pkt[10] = 0xff;
    pkt[11] = 0xff;
    pkt[13] = (uint8_t)(b.qp->qp_num >> 16);
    pkt[14] = 0x0f;                         /* low bits of a QPN not ours */
    pkt[15] = 0xff;
    crc = htonl(test_crc32(pkt, 20) ^ 1);
    memcpy(pkt + 20, &crc, 4);
    sendto(fd, pkt, 24, 0, (struct sockaddr*)&sin, sizeof(sin));
    crc = htonl(test_crc32(pkt, 20));
    memcpy(pkt + 20, &crc, 4);
    sendto(fd, pkt, 24, 0, (struct sockaddr*)&sin, sizeof(sin));
    close(fd);

    /* the engine drains the socket while we use the device */
    st_fill(a.buf, 8192, 5);
    ST_CHECK(!st_write(&a, &b, 0, 0, 8192, 1), "post");
    expect_ok(&a, 1, 5000);
    ST_CHECK(st_check_fill(b.buf, 8192, 5), "data");

    ST_CHECK(st_counter(NULL, "drop_foreign") - foreign +
             st_counter(NULL, "drop_malformed") - malformed >= 1001,
             "foreign %lld malformed %lld",
             (long long)(st_counter(NULL, "drop_foreign") - foreign),
             (long long)(st_counter(NULL, "drop_malformed") - malformed));
    ST_CHECK(st_counter(NULL, "drop_no_qp") - noqp == 1, "drop_no_qp %lld",
             (long long)(st_counter(NULL, "drop_no_qp") - noqp));
    close_pair();
}

/* A pair whose responder QP, attached to an SRQ, is moved to ERR: the
 * QP's LAST_WQE_REACHED event is due. Nonzero if the pair did not open. */
static int open_pair_b_in_error(void)
{
    struct st_opts o = st_default_opts();
    struct ibv_qp_attr attr;

    if (open_pair("softib0", 1, "softib1", 1, &o, 1)) {
        return -1;
    }
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_ERR;
    ST_CHECK(!ibv_modify_qp(b.qp, &attr, IBV_QP_STATE), "to ERR");
    return 0;
}

/* An SRQ-attached QP in ERR reports LAST_WQE_REACHED (UCX waits for it
 * before destroying the QP). */
static void t_last_wqe_reached(void)
{
    struct ibv_async_event ev;

    if (open_pair_b_in_error()) {
        return;
    }
    ST_CHECK(!st_async_event(&b, &ev, 2000), "no event");
    ST_CHECK((ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) &&
             (ev.element.qp == b.qp), "event %s",
             ibv_event_type_str(ev.event_type));
    close_pair();
}

/* A QP destroyed before its event is read takes the event with it (uverbs
 * drops the unread events of a destroyed object): a reader must never get
 * a pointer to a freed QP. */
static void t_event_of_destroyed_qp(void)
{
    struct ibv_async_event ev;

    if (open_pair_b_in_error()) {
        return;
    }
    ST_CHECK(!ibv_destroy_qp(b.qp), "destroy");
    b.qp = NULL;
    ST_CHECK(st_async_event(&b, &ev, 200) != 0, "got %s of a destroyed QP",
             ibv_event_type_str(ev.event_type));
    close_pair();
}

/* The responder's application unmaps memory whose registration is still
 * alive (UCX's registration cache does this routinely), and a late WRITE,
 * READ and atomic arrive. An HCA works on the pinned pages: nothing fails,
 * and nothing the application can see changes. The device must neither
 * crash nor fail the QP; it counts the accesses and reads zeros. */
static void t_unmapped_mr(void)
{
    struct st_opts o   = st_default_opts();
    int64_t unmapped   = st_counter("softib1", "unmapped_mr_access");
    const size_t len   = 3 * 4096;
    struct ibv_mr *mr  = NULL;
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;
    uint64_t *result;
    uint8_t *mem;
    size_t i;
    int zeros;

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    ST_CHECK(mem != MAP_FAILED, "mmap");
    if (mem == MAP_FAILED) {
        close_pair();
        return;
    }
    memset(mem, 0x5a, len);
    mr = ibv_reg_mr(b.pd, mem, len, IBV_ACCESS_LOCAL_WRITE |
                    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                    IBV_ACCESS_REMOTE_ATOMIC);
    ST_CHECK(mr != NULL, "reg_mr");
    munmap(mem, len);
    if (mr == NULL) {
        close_pair();
        return;
    }

    /* a two-packet WRITE into it */
    st_fill(a.buf, 8192, 31);
    ST_CHECK(!st_post_rdma(&a, IBV_WR_RDMA_WRITE, 0, (uintptr_t)mem,
                           mr->rkey, 8192, 1, 1), "post write");
    expect_ok(&a, 1, 5000);

    /* a two-packet READ of it reads zeros */
    memset(a.buf, 0xff, 8192);
    ST_CHECK(!st_post_rdma(&a, IBV_WR_RDMA_READ, 0, (uintptr_t)mem + 4096,
                           mr->rkey, 8192, 2, 1), "post read");
    expect_ok(&a, 2, 5000);
    for (i = 0, zeros = 1; i < 8192; i++) {
        zeros = zeros && (a.buf[i] == 0);
    }
    ST_CHECK(zeros, "READ of unmapped memory returned non-zero data");

    /* an atomic on it returns 0 */
    result  = (uint64_t*)(a.buf + 16384);
    *result = 77;
    memset(&sge, 0, sizeof(sge));
    sge.addr   = (uintptr_t)result;
    sge.length = sizeof(*result);
    sge.lkey   = a.mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id                 = 3;
    wr.sg_list               = &sge;
    wr.num_sge               = 1;
    wr.opcode                = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.send_flags            = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = (uintptr_t)mem + 64;
    wr.wr.atomic.rkey        = mr->rkey;
    wr.wr.atomic.compare_add = 1;
    ST_CHECK(!ibv_post_send(a.qp, &wr, &bad), "post fetch-add");
    expect_ok(&a, 3, 5000);
    ST_CHECK(*result == 0, "fetch-add returned %llu",
             (unsigned long long)*result);

    /* 2 WRITE packets, at least one READ response batch, 1 atomic */
    ST_CHECK(st_counter("softib1", "unmapped_mr_access") - unmapped >= 4,
             "unmapped_mr_access went up by %lld",
             (long long)(st_counter("softib1", "unmapped_mr_access") -
                         unmapped));

    /* the QPs are still fine */
    st_fill(a.buf, 4096, 32);
    ST_CHECK(!st_write(&a, &b, 0, 0, 4096, 4), "post write");
    expect_ok(&a, 4, 5000);
    ST_CHECK(st_check_fill(b.buf, 4096, 32), "data after the faults");

    ibv_dereg_mr(mr);
    close_pair();
}

/* A delay rule holds packets back without losing them. */
static void t_delay_rule(void)
{
    struct st_opts o = st_default_opts();
    struct softib_rule rule;
    uint64_t start, took;
    uint32_t id;

    o.timeout = 18; /* 1 s: the delay must not look like a loss */
    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    memset(&rule, 0, sizeof(rule));
    rule.kind     = SOFTIB_RULE_DELAY;
    rule.dev      = "softib0";
    rule.port     = 1;
    rule.dir      = SOFTIB_DIR_TX;
    rule.classes  = SOFTIB_CLASS_REQ;
    rule.count    = SOFTIB_FOREVER;
    rule.delay_us = 20000;
    ST_CHECK(!softib_ctl_rule_add(st_ctl, &rule, &id), "add rule");

    st_fill(a.buf, 100, 8);
    start = now_us();
    ST_CHECK(!st_write(&a, &b, 0, 0, 100, 1), "post");
    expect_ok(&a, 1, 5000);
    took = now_us() - start;
    ST_CHECK((took >= 20000) && (took < 500000), "took %llu us",
             (unsigned long long)took);
    ST_CHECK(st_check_fill(b.buf, 100, 8), "data");
    close_pair();
}

/* A SOFTIB_RULE_FAIL rule: the named verbs of one QP fail with its errno,
 * after skip calls, count times; other QPs and verbs are untouched; a rule
 * with no verb or a packet class is refused. */
static void t_fail_rule(void)
{
    struct st_opts o = fast_opts();
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;
    struct softib_rule rule;
    uint64_t matched, acted;
    uint32_t id, bad_id;

    if (open_pair("softib0", 1, "softib1", 1, &o, 0)) {
        return;
    }
    memset(&rule, 0, sizeof(rule));
    rule.kind  = SOFTIB_RULE_FAIL;
    rule.dev   = "softib0";
    rule.verbs = SOFTIB_VERB_QUERY_QP | SOFTIB_VERB_POST_READ;
    rule.qpn   = a.qp->qp_num;
    rule.skip  = 1;
    rule.count = 2;
    rule.err   = ENOMEM;
    ST_CHECK(!softib_ctl_rule_add(st_ctl, &rule, &id), "add rule");

    /* the first call passes (skip), the next two fail, then they pass */
    ST_CHECK(!ibv_query_qp(a.qp, &attr, IBV_QP_STATE, &init_attr),
             "query 1");
    ST_CHECK(ibv_query_qp(a.qp, &attr, IBV_QP_STATE, &init_attr) == ENOMEM,
             "query 2 fails");
    /* a WRITE is no READ: not matched */
    st_fill(a.buf, 64, 3);
    ST_CHECK(!st_write(&a, &b, 0, 0, 64, 1), "write posts");
    expect_ok(&a, 1, 5000);
    ST_CHECK(st_read(&a, &b, 128, 0, 64, 2) != 0, "read fails");
    ST_CHECK(!st_read(&a, &b, 128, 0, 64, 3), "read posts after count");
    expect_ok(&a, 3, 5000);
    ST_CHECK(st_check_fill(a.buf + 128, 64, 3), "read data");
    /* other QPs are untouched */
    ST_CHECK(!ibv_query_qp(b.qp, &attr, IBV_QP_STATE, &init_attr),
             "query of another QP");
    ST_CHECK(!softib_ctl_rule_stats(st_ctl, id, &matched, &acted) &&
             (acted == 2) && (matched == 4), "stats %llu/%llu",
             (unsigned long long)matched, (unsigned long long)acted);

    /* a fail rule needs verbs; a drop rule takes none */
    rule.verbs = 0;
    ST_CHECK(softib_ctl_rule_add(st_ctl, &rule, &bad_id) != 0,
             "fail rule without verbs refused");
    rule.kind    = SOFTIB_RULE_DROP;
    rule.verbs   = SOFTIB_VERB_POST_SEND;
    rule.dir     = SOFTIB_DIR_TX;
    rule.classes = SOFTIB_CLASS_ALL;
    ST_CHECK(softib_ctl_rule_add(st_ctl, &rule, &bad_id) != 0,
             "drop rule with verbs refused");
    softib_ctl_rule_del(st_ctl, id);
    close_pair();
}

int main(void)
{
    static const struct st_test tests[] = {
        { "retry_exceeded_then_flush", t_retry_exceeded_then_flush },
        { "rnr", t_rnr },
        { "atomic_ack_lost", t_atomic_ack_lost },
        { "read_response_lost", t_read_response_lost },
        { "ack_lost", t_ack_lost },
        { "request_lost_seq_nak", t_request_lost_seq_nak },
        { "port_events", t_port_events },
        { "port_down_traffic", t_port_down_traffic },
        { "peer_killed", t_peer_killed },
        { "malformed_packets", t_malformed_packets },
        { "last_wqe_reached", t_last_wqe_reached },
        { "event_of_destroyed_qp", t_event_of_destroyed_qp },
        { "delay_rule", t_delay_rule },
        { "unmapped_mr", t_unmapped_mr },
        { "fail_rule", t_fail_rule },
    };

    return st_main(tests, sizeof(tests) / sizeof(tests[0]));
}
