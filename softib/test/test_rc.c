/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * softib data path: every RC operation, multi-packet messages, PSN wrap,
 * UD, and the attributes UCX and the failover design rely on. Each test
 * checks the bytes in memory and every completion.
 */
#include "sib_test.h"

#include <stdlib.h>
#include <string.h>


#define BUF_LEN  (4 << 20)

static struct st_ep a, b;

static int open_pair(const char *dev_a, int port_a, const char *dev_b,
                     int port_b, const struct st_opts *o)
{
    int ret;

    ret = st_ep_open(&a, dev_a, port_a, BUF_LEN, IBV_QPT_RC, 0);
    if (ret == 0) {
        ret = st_ep_open(&b, dev_b, port_b, BUF_LEN, IBV_QPT_RC, 0);
    }
    if (ret == 0) {
        ret = st_connect(&a, &b, o);
    }
    ST_CHECK(ret == 0, "opening %s:%d <-> %s:%d: %d", dev_a, port_a, dev_b,
             port_b, ret);
    return ret;
}

static void close_pair(void)
{
    st_ep_close(&a);
    st_ep_close(&b);
}

static void expect_wc(struct st_ep *ep, uint64_t wr_id, enum ibv_wc_opcode op,
                      uint32_t byte_len)
{
    struct ibv_wc wc;

    if (st_poll(ep, &wc, 1, 5000) != 1) {
        ST_CHECK(0, "no completion for wr_id %llu",
                 (unsigned long long)wr_id);
        return;
    }
    ST_CHECK(wc.status == IBV_WC_SUCCESS, "wr_id %llu: %s",
             (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
    ST_CHECK(wc.wr_id == wr_id, "wr_id %llu, expected %llu",
             (unsigned long long)wc.wr_id, (unsigned long long)wr_id);
    ST_CHECK(wc.opcode == op, "opcode %d, expected %d", wc.opcode, op);
    if (byte_len != (uint32_t)-1) {
        ST_CHECK(wc.byte_len == byte_len, "byte_len %u, expected %u",
                 wc.byte_len, byte_len);
    }
}

/* WRITE and READ of 1 MiB (256 packets at 4 KiB MTU) and a few sizes that
 * end exactly on and just past packet boundaries. */
static void test_write_read_sizes(const char *dev_a, int port_a,
                                  const char *dev_b, int port_b)
{
    static const size_t sizes[] = { 1, 4095, 4096, 4097, 8192, 65536,
                                    1 << 20 };
    struct st_opts o = st_default_opts();
    unsigned i;

    if (open_pair(dev_a, port_a, dev_b, port_b, &o)) {
        return;
    }
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        st_fill(a.buf, sizes[i], 100 + i);
        memset(b.buf + (1 << 20), 0, sizes[i] + 1);
        ST_CHECK(!st_write(&a, &b, 0, 1 << 20, sizes[i], i), "post");
        expect_wc(&a, i, IBV_WC_RDMA_WRITE, (uint32_t)-1);
        ST_CHECK(st_check_fill(b.buf + (1 << 20), sizes[i], 100 + i),
                 "WRITE of %zu bytes landed wrong", sizes[i]);
        ST_CHECK(b.buf[(1 << 20) + sizes[i]] == 0, "WRITE overran");

        st_fill(b.buf + (2 << 20), sizes[i], 200 + i);
        memset(a.buf + (2 << 20), 0, sizes[i] + 1);
        ST_CHECK(!st_read(&a, &b, 2 << 20, 2 << 20, sizes[i], 100 + i),
                 "post");
        expect_wc(&a, 100 + i, IBV_WC_RDMA_READ, (uint32_t)sizes[i]);
        ST_CHECK(st_check_fill(a.buf + (2 << 20), sizes[i], 200 + i),
                 "READ of %zu bytes returned wrong data", sizes[i]);
        ST_CHECK(a.buf[(2 << 20) + sizes[i]] == 0, "READ overran");
    }
    close_pair();
}

static void t_same_port(void)
{
    test_write_read_sizes("softib0", 1, "softib0", 1);
}

static void t_port_to_port(void)
{
    test_write_read_sizes("softib0", 1, "softib0", 2);
}

static void t_dev_to_dev(void)
{
    test_write_read_sizes("softib0", 2, "softib1", 1);
}

/* Multi-packet SENDs into posted receives, with immediate data. */
static void t_send_recv(void)
{
    struct st_opts o = st_default_opts();
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;
    struct ibv_wc wc;
    size_t len = 3 * 4096 + 100;

    if (open_pair("softib0", 1, "softib1", 1, &o)) {
        return;
    }

    ST_CHECK(!st_recv(&b, 0, 65536, 7), "post recv");
    st_fill(a.buf, len, 7);
    ST_CHECK(!st_send(&a, 0, len, 1), "post send");
    expect_wc(&a, 1, IBV_WC_SEND, (uint32_t)-1);
    expect_wc(&b, 7, IBV_WC_RECV, (uint32_t)len);
    ST_CHECK(st_check_fill(b.buf, len, 7), "SEND data wrong");

    ST_CHECK(!st_recv(&b, 0, 64, 8), "post recv");
    sge.addr   = (uintptr_t)a.buf;
    sge.length = 16;
    sge.lkey   = a.mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id      = 2;
    wr.opcode     = IBV_WR_SEND_WITH_IMM;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    wr.imm_data   = htobe32(0xabcd1234);
    ST_CHECK(!ibv_post_send(a.qp, &wr, &bad), "post send imm");
    expect_wc(&a, 2, IBV_WC_SEND, (uint32_t)-1);
    ST_CHECK(st_poll(&b, &wc, 1, 5000) == 1, "no receive completion");
    ST_CHECK((wc.status == IBV_WC_SUCCESS) && (wc.wc_flags & IBV_WC_WITH_IMM) &&
             (be32toh(wc.imm_data) == 0xabcd1234) && (wc.byte_len == 16) &&
             (wc.src_qp == a.qp->qp_num),
             "imm receive: status %d flags 0x%x imm 0x%x len %u src 0x%x",
             wc.status, wc.wc_flags, be32toh(wc.imm_data), wc.byte_len,
             wc.src_qp);
    close_pair();
}

/* WRITE with immediate consumes a receive and reports the length. */
static void t_write_imm(void)
{
    struct st_opts o = st_default_opts();
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;
    struct ibv_wc wc;

    if (open_pair("softib0", 1, "softib0", 2, &o)) {
        return;
    }
    ST_CHECK(!st_recv(&b, 0, 16, 9), "post recv");
    st_fill(a.buf, 10000, 3);
    sge.addr   = (uintptr_t)a.buf;
    sge.length = 10000;
    sge.lkey   = a.mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id               = 3;
    wr.opcode              = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.send_flags          = IBV_SEND_SIGNALED;
    wr.imm_data            = htobe32(77);
    wr.wr.rdma.remote_addr = (uintptr_t)b.buf + 4096;
    wr.wr.rdma.rkey        = b.mr->rkey;
    ST_CHECK(!ibv_post_send(a.qp, &wr, &bad), "post");
    expect_wc(&a, 3, IBV_WC_RDMA_WRITE, (uint32_t)-1);
    ST_CHECK(st_poll(&b, &wc, 1, 5000) == 1, "no receive completion");
    ST_CHECK((wc.status == IBV_WC_SUCCESS) && (wc.wr_id == 9) &&
             (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) &&
             (be32toh(wc.imm_data) == 77) && (wc.byte_len == 10000),
             "status %d opcode %d imm %u len %u", wc.status, wc.opcode,
             be32toh(wc.imm_data), wc.byte_len);
    ST_CHECK(st_check_fill(b.buf + 4096, 10000, 3), "data wrong");
    close_pair();
}

/* Fetch-and-add and compare-and-swap: results and target memory. */
static void t_atomics(void)
{
    struct st_opts o = st_default_opts();
    uint64_t *target = NULL, *result;
    struct ibv_wc wc;
    int i;

    if (open_pair("softib0", 1, "softib1", 2, &o)) {
        return;
    }
    target  = (uint64_t*)(b.buf + 64);
    result  = (uint64_t*)(a.buf + 128);
    *target = 1000;
    for (i = 0; i < 100; i++) {
        ST_CHECK(!st_atomic(&a, &b, IBV_WR_ATOMIC_FETCH_AND_ADD, 128 + 8 * i,
                            64, 3, 0, i), "post");
    }
    for (i = 0; i < 100; i++) {
        ST_CHECK(st_poll(&a, &wc, 1, 5000) == 1, "missing completion");
        ST_CHECK((wc.status == IBV_WC_SUCCESS) && (wc.wr_id == (uint64_t)i) &&
                 (wc.opcode == IBV_WC_FETCH_ADD),
                 "wc %d: status %d wr_id %llu", i, wc.status,
                 (unsigned long long)wc.wr_id);
        ST_CHECK(result[i] == 1000 + 3 * (uint64_t)i,
                 "fetch-add %d returned %llu", i,
                 (unsigned long long)result[i]);
    }
    ST_CHECK(*target == 1300, "target %llu after 100 adds of 3",
             (unsigned long long)*target);

    ST_CHECK(!st_atomic(&a, &b, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 64, 1300, 42,
                        200), "post");
    expect_wc(&a, 200, IBV_WC_COMP_SWAP, 8);
    ST_CHECK((*(uint64_t*)a.buf == 1300) && (*target == 42),
             "cswap hit: returned %llu, target %llu",
             (unsigned long long)*(uint64_t*)a.buf,
             (unsigned long long)*target);
    ST_CHECK(!st_atomic(&a, &b, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 64, 1300, 7,
                        201), "post");
    expect_wc(&a, 201, IBV_WC_COMP_SWAP, 8);
    ST_CHECK((*(uint64_t*)a.buf == 42) && (*target == 42),
             "cswap miss: returned %llu, target %llu",
             (unsigned long long)*(uint64_t*)a.buf,
             (unsigned long long)*target);
    close_pair();
}

/* PSNs wrap from 0xffffff to 0 in the middle of multi-packet messages. */
static void t_psn_wrap(void)
{
    struct st_opts o = st_default_opts();
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;
    int i;

    o.psn_a = 0xfffffa;
    o.psn_b = 0xfffffe;
    if (open_pair("softib0", 1, "softib1", 1, &o)) {
        return;
    }
    for (i = 0; i < 4; i++) {
        st_fill(a.buf, 5 * 4096, 50 + i);
        ST_CHECK(!st_write(&a, &b, 0, 8192 * i, 5 * 4096, i), "post");
        expect_wc(&a, i, IBV_WC_RDMA_WRITE, (uint32_t)-1);
        ST_CHECK(st_check_fill(b.buf + 8192 * i, 5 * 4096, 50 + i),
                 "write %d across the wrap", i);
        ST_CHECK(!st_read(&a, &b, 1 << 20, 8192 * i, 5 * 4096, 10 + i),
                 "post");
        expect_wc(&a, 10 + i, IBV_WC_RDMA_READ, 5 * 4096);
        ST_CHECK(st_check_fill(a.buf + (1 << 20), 5 * 4096, 50 + i),
                 "read %d across the wrap", i);
    }
    /* 4 writes of 5 packets and 4 reads of 5 responses from 0xfffffa */
    ibv_query_qp(a.qp, &attr, IBV_QP_SQ_PSN, &init);
    ST_CHECK(attr.sq_psn == ((0xfffffau + 40) & 0xffffff),
             "requester sq_psn 0x%x", attr.sq_psn);
    ibv_query_qp(b.qp, &attr, IBV_QP_RQ_PSN, &init);
    ST_CHECK(attr.rq_psn == ((0xfffffau + 40) & 0xffffff),
             "responder rq_psn 0x%x", attr.rq_psn);
    close_pair();
}

/* Unsignaled WRs complete silently; a zero-length WRITE needs no key. */
static void t_unsignaled_and_zero_length(void)
{
    struct st_opts o = st_default_opts();
    struct ibv_wc wc[4];
    int i;

    if (open_pair("softib0", 2, "softib1", 2, &o)) {
        return;
    }
    for (i = 0; i < 10; i++) {
        st_fill(a.buf + 100 * i, 100, i);
        ST_CHECK(!st_post_rdma(&a, IBV_WR_RDMA_WRITE, 100 * i,
                               (uintptr_t)b.buf + 100 * i, b.mr->rkey, 100,
                               i, 0), "post");
    }
    ST_CHECK(!st_post_rdma(&a, IBV_WR_RDMA_WRITE, 0, 0, 0, 0, 99, 1),
             "post zero-length");
    ST_CHECK(st_poll(&a, wc, 4, 1000) == 1, "exactly one completion");
    ST_CHECK((wc[0].wr_id == 99) && (wc[0].status == IBV_WC_SUCCESS),
             "wr_id %llu status %d", (unsigned long long)wc[0].wr_id,
             wc[0].status);
    for (i = 0; i < 10; i++) {
        ST_CHECK(st_check_fill(b.buf + 100 * i, 100, i), "write %d", i);
    }
    close_pair();
}

/* tx_responses counts the packets a responder sends (ACKs, READ
 * responses), tx_packets all: what contrib/bench tells requests by. Each
 * side on a device of its own, so each device's counters are one side's. */
static void t_responses_counted(void)
{
    struct st_opts o = st_default_opts();
    int64_t a_pkts, a_resp, b_pkts, b_resp;
    struct ibv_wc wc;
    int i;

    if (open_pair("softib0", 2, "softib1", 2, &o)) {
        return;
    }
    a_pkts = st_counter("softib0", "tx_packets");
    a_resp = st_counter("softib0", "tx_responses");
    b_pkts = st_counter("softib1", "tx_packets");
    b_resp = st_counter("softib1", "tx_responses");
    for (i = 0; i < 10; i++) {
        ST_CHECK(!st_post_rdma(&a, IBV_WR_RDMA_WRITE, 100 * i,
                               (uintptr_t)b.buf + 100 * i, b.mr->rkey, 100,
                               i, 0), "post");
    }
    ST_CHECK(!st_post_rdma(&a, IBV_WR_RDMA_READ, 4096,
                           (uintptr_t)b.buf, b.mr->rkey, 100, 10, 1),
             "post READ");
    ST_CHECK(st_poll(&a, &wc, 1, 5000) == 1, "the READ completes");
    a_pkts = st_counter("softib0", "tx_packets") - a_pkts;
    a_resp = st_counter("softib0", "tx_responses") - a_resp;
    b_pkts = st_counter("softib1", "tx_packets") - b_pkts;
    b_resp = st_counter("softib1", "tx_responses") - b_resp;
    ST_CHECK(a_pkts >= 11, "the requester sent %lld packets, 11 requests",
             (long long)a_pkts);
    ST_CHECK(a_resp == 0, "the requester sent %lld responses",
             (long long)a_resp);
    ST_CHECK((b_resp >= 1) && (b_resp == b_pkts),
             "the responder sent %lld packets, %lld of them responses",
             (long long)b_pkts, (long long)b_resp);
    close_pair();
}

/* A smaller path MTU segments accordingly. */
static void t_mtu_1024(void)
{
    struct st_opts o = st_default_opts();
    int64_t before;

    o.mtu = IBV_MTU_1024;
    if (open_pair("softib0", 1, "softib1", 1, &o)) {
        return;
    }
    before = st_counter("softib1", "rx_packets");
    st_fill(a.buf, 10 * 1024, 9);
    ST_CHECK(!st_write(&a, &b, 0, 0, 10 * 1024, 1), "post");
    expect_wc(&a, 1, IBV_WC_RDMA_WRITE, (uint32_t)-1);
    ST_CHECK(st_check_fill(b.buf, 10 * 1024, 9), "data");
    ST_CHECK(st_counter("softib1", "rx_packets") - before == 10,
             "%lld packets for 10 KiB at MTU 1024",
             (long long)(st_counter("softib1", "rx_packets") - before));
    close_pair();
}

/* A bad rkey: REM_ACCESS_ERR, the rest flushed, both QPs in error. */
static void t_remote_access_error(void)
{
    struct st_opts o = st_default_opts();
    int64_t naks     = st_counter("softib1", "remote_access_nak");
    struct ibv_wc wc[3];

    if (open_pair("softib0", 1, "softib1", 1, &o)) {
        return;
    }
    ST_CHECK(!st_post_rdma(&a, IBV_WR_RDMA_WRITE, 0, (uintptr_t)b.buf,
                           b.mr->rkey ^ 0x100, 64, 1, 1), "post");
    ST_CHECK(!st_write(&a, &b, 0, 0, 64, 2), "post");
    ST_CHECK(!st_write(&a, &b, 0, 0, 64, 3), "post");
    ST_CHECK(st_poll(&a, wc, 3, 5000) == 3, "three completions");
    ST_CHECK((wc[0].wr_id == 1) && (wc[0].status == IBV_WC_REM_ACCESS_ERR),
             "first: wr_id %llu %s", (unsigned long long)wc[0].wr_id,
             ibv_wc_status_str(wc[0].status));
    ST_CHECK((wc[1].status == IBV_WC_WR_FLUSH_ERR) &&
             (wc[2].status == IBV_WC_WR_FLUSH_ERR), "then flushes");
    ST_CHECK(st_qp_state(&a) == IBV_QPS_ERR, "requester in ERR");
    ST_CHECK(st_qp_state(&b) == IBV_QPS_ERR, "responder in ERR");
    ST_CHECK(st_counter("softib1", "remote_access_nak") - naks == 1,
             "remote_access_nak went up by %lld",
             (long long)(st_counter("softib1", "remote_access_nak") - naks));
    close_pair();
}

/* UD: datagrams with 40 bytes of GRH space, source QP and LID reported. */
static void t_ud(void)
{
    struct ibv_send_wr wr, *bad;
    struct ibv_ah_attr ah_attr;
    struct ibv_qp_attr attr;
    struct ibv_sge sge;
    struct ibv_ah *ah;
    struct ibv_wc wc;
    int ret, i;

    ret = st_ep_open(&a, "softib0", 1, 1 << 20, IBV_QPT_UD, 0);
    ST_CHECK(ret == 0, "open a: %d", ret);
    ret = st_ep_open(&b, "softib1", 2, 1 << 20, IBV_QPT_UD, 0);
    ST_CHECK(ret == 0, "open b: %d", ret);
    if (ret) {
        return;
    }
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    ST_CHECK(!ibv_modify_qp(a.qp, &attr, IBV_QP_STATE) &&
             !ibv_modify_qp(b.qp, &attr, IBV_QP_STATE), "RTR");
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = 1;
    ST_CHECK(!ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) &&
             !ibv_modify_qp(b.qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN),
             "RTS");

    memset(&ah_attr, 0, sizeof(ah_attr));
    ah_attr.dlid     = b.lid;
    ah_attr.port_num = 1;
    ah = ibv_create_ah(a.pd, &ah_attr);
    ST_CHECK(ah != NULL, "create ah");

    for (i = 0; i < 8; i++) {
        ST_CHECK(!st_recv(&b, 8192 * i, 4096 + 40, i), "post recv");
    }
    for (i = 0; i < 8; i++) {
        st_fill(a.buf + 4096 * i, 4096, 300 + i);
        sge.addr   = (uintptr_t)a.buf + 4096 * i;
        sge.length = 4096;
        sge.lkey   = a.mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id             = i;
        wr.opcode            = IBV_WR_SEND;
        wr.sg_list           = &sge;
        wr.num_sge           = 1;
        wr.send_flags        = IBV_SEND_SIGNALED;
        wr.wr.ud.ah          = ah;
        wr.wr.ud.remote_qpn  = b.qp->qp_num;
        wr.wr.ud.remote_qkey = 0x11111111;
        ST_CHECK(!ibv_post_send(a.qp, &wr, &bad), "post send");
        expect_wc(&a, i, IBV_WC_SEND, (uint32_t)-1);
    }
    for (i = 0; i < 8; i++) {
        ST_CHECK(st_poll(&b, &wc, 1, 5000) == 1, "receive %d", i);
        ST_CHECK((wc.status == IBV_WC_SUCCESS) && (wc.wr_id == (uint64_t)i) &&
                 (wc.byte_len == 4096 + 40) && (wc.src_qp == a.qp->qp_num) &&
                 (wc.slid == a.lid),
                 "ud wc %d: status %d len %u src 0x%x slid 0x%x", i,
                 wc.status, wc.byte_len, wc.src_qp, wc.slid);
        ST_CHECK(st_check_fill(b.buf + 8192 * i + 40, 4096, 300 + i),
                 "datagram %d payload", i);
    }
    ibv_destroy_ah(ah);
    close_pair();
}

/* The responder's expected PSN is exactly the requester's next PSN once
 * everything completed (DESIGN section 3.4 relies on this). */
static void t_query_psn(void)
{
    struct st_opts o = st_default_opts();
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr qa, qb;

    if (open_pair("softib0", 1, "softib1", 2, &o)) {
        return;
    }
    ST_CHECK(!st_write(&a, &b, 0, 0, 3 * 4096, 1), "post");     /* 3 PSNs */
    ST_CHECK(!st_read(&a, &b, 0, 0, 2 * 4096 + 1, 2), "post");  /* 3 PSNs */
    ST_CHECK(!st_atomic(&a, &b, IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, 8192, 1,
                        0, 3), "post");                           /* 1 PSN */
    expect_wc(&a, 1, IBV_WC_RDMA_WRITE, (uint32_t)-1);
    expect_wc(&a, 2, IBV_WC_RDMA_READ, 2 * 4096 + 1);
    expect_wc(&a, 3, IBV_WC_FETCH_ADD, 8);
    ibv_query_qp(a.qp, &qa, IBV_QP_SQ_PSN, &init);
    ibv_query_qp(b.qp, &qb, IBV_QP_RQ_PSN, &init);
    ST_CHECK(qa.sq_psn == o.psn_a + 7, "sq_psn 0x%x, expected 0x%x",
             qa.sq_psn, o.psn_a + 7);
    ST_CHECK(qb.rq_psn == qa.sq_psn, "rq_psn 0x%x != sq_psn 0x%x", qb.rq_psn,
             qa.sq_psn);
    close_pair();
}

int main(void)
{
    static const struct st_test tests[] = {
        { "write_read_same_port", t_same_port },
        { "write_read_port_to_port", t_port_to_port },
        { "write_read_device_to_device", t_dev_to_dev },
        { "send_recv_multi_packet_and_imm", t_send_recv },
        { "write_with_immediate", t_write_imm },
        { "atomics", t_atomics },
        { "psn_wrap", t_psn_wrap },
        { "unsignaled_and_zero_length", t_unsignaled_and_zero_length },
        { "mtu_1024", t_mtu_1024 },
        { "remote_access_error", t_remote_access_error },
        { "ud", t_ud },
        { "query_psn", t_query_psn },
        { "responses_counted", t_responses_counted },
    };

    return st_main(tests, sizeof(tests) / sizeof(tests[0]));
}
