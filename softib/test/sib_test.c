/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */
#include "sib_test.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


softib_ctl_t *st_ctl;
int st_failures;

static int st_test_failures;

void st_check(int ok, const char *file, int line, const char *expr,
              const char *fmt, ...)
{
    va_list ap;

    if (ok) {
        return;
    }
    st_failures++;
    st_test_failures++;
    fprintf(stderr, "# %s:%d: check failed: %s: ", file, line, expr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

int st_main(const struct st_test *tests, int ntests)
{
    char registry[64];
    int i, failed = 0, ret;

    setvbuf(stdout, NULL, _IOLBF, 0);

    /* A registry of our own: the tests take links down and reset rules,
     * which must not disturb anything else using softib on this machine
     * (or another test program running in parallel). */
    snprintf(registry, sizeof(registry), "/dev/shm/softib-test.%d",
             (int)getpid());
    setenv("SOFTIB_REGISTRY", registry, 1);

    ret = softib_ctl_open(&st_ctl);
    if (ret < 0) {
        fprintf(stderr, "cannot open the softib registry: %s\n",
                strerror(-ret));
        return 99;
    }

    printf("1..%d\n", ntests);
    for (i = 0; i < ntests; i++) {
        softib_ctl_reset(st_ctl);
        st_test_failures = 0;
        tests[i].func();
        if (st_test_failures) {
            failed++;
        }
        printf("%s %d - %s\n", st_test_failures ? "not ok" : "ok", i + 1,
               tests[i].name);
    }
    softib_ctl_reset(st_ctl);
    softib_ctl_close(st_ctl);
    unlink(registry);

    printf("# %d tests, %d passed, %d failed\n", ntests, ntests - failed,
           failed);
    return failed ? 1 : 0;
}

struct st_opts st_default_opts(void)
{
    struct st_opts o;

    memset(&o, 0, sizeof(o));
    o.timeout       = 14;   /* 67 ms */
    o.retry_cnt     = 7;
    o.rnr_retry     = 7;
    o.min_rnr_timer = 1;
    o.max_rd_atomic = 16;
    o.psn_a         = 0x100;
    o.psn_b         = 0x200;
    o.mtu           = IBV_MTU_4096;
    return o;
}

static struct ibv_device *st_find_dev(const char *name)
{
    static struct ibv_device **list;
    int i, n;

    if (list == NULL) {
        list = ibv_get_device_list(&n);
    }
    for (i = 0; (list != NULL) && (list[i] != NULL); i++) {
        if (!strcmp(ibv_get_device_name(list[i]), name)) {
            return list[i];
        }
    }
    return NULL;
}

static int st_qp_init(struct st_ep *ep, enum ibv_qp_type type)
{
    struct ibv_qp_attr attr;
    int mask;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state   = IBV_QPS_INIT;
    attr.port_num   = (uint8_t)ep->port;
    attr.pkey_index = 0;
    if (type == IBV_QPT_RC) {
        attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_ATOMIC;
        mask = IBV_QP_ACCESS_FLAGS;
    } else {
        attr.qkey = 0x11111111;
        mask      = IBV_QP_QKEY;
    }
    return ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_PORT |
                         IBV_QP_PKEY_INDEX | mask);
}

int st_ep_open(struct st_ep *ep, const char *dev, int port, size_t len,
               enum ibv_qp_type type, int use_srq)
{
    struct ibv_srq_init_attr srq_attr;
    struct ibv_qp_init_attr qp_attr;
    struct ibv_port_attr port_attr;
    struct ibv_device *device;

    memset(ep, 0, sizeof(*ep));
    snprintf(ep->dev, sizeof(ep->dev), "%s", dev);
    ep->port = port;
    ep->len  = len;

    device = st_find_dev(dev);
    if (device == NULL) {
        return -ENODEV;
    }
    ep->ctx = ibv_open_device(device);
    if (ep->ctx == NULL) {
        return -errno;
    }
    if (ibv_query_port(ep->ctx, (uint8_t)port, &port_attr)) {
        return -EINVAL;
    }
    ep->lid = port_attr.lid;

    ep->pd  = ibv_alloc_pd(ep->ctx);
    ep->cq  = ibv_create_cq(ep->ctx, 4096, NULL, NULL, 0);
    ep->buf = aligned_alloc(4096, len);
    if ((ep->pd == NULL) || (ep->cq == NULL) || (ep->buf == NULL)) {
        return -ENOMEM;
    }
    memset(ep->buf, 0, len);
    ep->mr = ibv_reg_mr(ep->pd, ep->buf, len, IBV_ACCESS_LOCAL_WRITE |
                        IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC);
    if (ep->mr == NULL) {
        return -errno;
    }

    if (use_srq) {
        memset(&srq_attr, 0, sizeof(srq_attr));
        srq_attr.attr.max_wr  = 1024;
        srq_attr.attr.max_sge = 4;
        ep->srq = ibv_create_srq(ep->pd, &srq_attr);
        if (ep->srq == NULL) {
            return -errno;
        }
    }

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.send_cq          = ep->cq;
    qp_attr.recv_cq          = ep->cq;
    qp_attr.srq              = ep->srq;
    qp_attr.qp_type          = type;
    qp_attr.cap.max_send_wr  = 1024;
    qp_attr.cap.max_recv_wr  = 1024;
    qp_attr.cap.max_send_sge = 4;
    qp_attr.cap.max_recv_sge = 4;
    qp_attr.cap.max_inline_data = 64;
    ep->qp = ibv_create_qp(ep->pd, &qp_attr);
    if (ep->qp == NULL) {
        return -errno;
    }
    return st_qp_init(ep, type) ? -EINVAL : 0;
}

void st_ep_close(struct st_ep *ep)
{
    if (ep->qp != NULL) {
        ibv_destroy_qp(ep->qp);
    }
    if (ep->srq != NULL) {
        ibv_destroy_srq(ep->srq);
    }
    if (ep->mr != NULL) {
        ibv_dereg_mr(ep->mr);
    }
    if (ep->cq != NULL) {
        ibv_destroy_cq(ep->cq);
    }
    if (ep->pd != NULL) {
        ibv_dealloc_pd(ep->pd);
    }
    if (ep->ctx != NULL) {
        ibv_close_device(ep->ctx);
    }
    free(ep->buf);
    memset(ep, 0, sizeof(*ep));
}

void st_ep_addr(const struct st_ep *ep, uint32_t psn, struct st_addr *addr)
{
    addr->lid  = ep->lid;
    addr->qpn  = ep->qp->qp_num;
    addr->psn  = psn;
    addr->addr = (uintptr_t)ep->buf;
    addr->rkey = ep->mr->rkey;
}

int st_ep_connect(struct st_ep *ep, const struct st_addr *remote,
                  uint32_t my_psn, const struct st_opts *o)
{
    struct ibv_qp_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state           = IBV_QPS_RTR;
    attr.path_mtu           = o->mtu;
    attr.dest_qp_num        = remote->qpn;
    attr.rq_psn             = remote->psn;
    attr.max_dest_rd_atomic = o->max_rd_atomic;
    attr.min_rnr_timer      = o->min_rnr_timer;
    attr.ah_attr.dlid       = remote->lid;
    attr.ah_attr.port_num   = (uint8_t)ep->port;
    if (ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_AV |
                      IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        return -EINVAL;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state      = IBV_QPS_RTS;
    attr.timeout       = o->timeout;
    attr.retry_cnt     = o->retry_cnt;
    attr.rnr_retry     = o->rnr_retry;
    attr.sq_psn        = my_psn;
    attr.max_rd_atomic = o->max_rd_atomic;
    return ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
                         IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) ?
           -EINVAL : 0;
}

int st_connect(struct st_ep *a, struct st_ep *b, const struct st_opts *o)
{
    struct st_addr aa, ba;

    st_ep_addr(a, o->psn_a, &aa);
    st_ep_addr(b, o->psn_b, &ba);
    if (st_ep_connect(a, &ba, o->psn_a, o) ||
        st_ep_connect(b, &aa, o->psn_b, o)) {
        return -EINVAL;
    }
    return 0;
}

int st_post_rdma(struct st_ep *ep, enum ibv_wr_opcode op, size_t loff,
                 uint64_t raddr, uint32_t rkey, size_t len, uint64_t wr_id,
                 int signaled)
{
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)ep->buf + loff;
    sge.length = (uint32_t)len;
    sge.lkey   = ep->mr->lkey;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id               = wr_id;
    wr.opcode              = op;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.send_flags          = signaled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey        = rkey;
    return ibv_post_send(ep->qp, &wr, &bad);
}

int st_write(struct st_ep *a, struct st_ep *b, size_t loff, size_t roff,
             size_t len, uint64_t wr_id)
{
    return st_post_rdma(a, IBV_WR_RDMA_WRITE, loff,
                        (uintptr_t)b->buf + roff, b->mr->rkey, len, wr_id, 1);
}

int st_read(struct st_ep *a, struct st_ep *b, size_t loff, size_t roff,
            size_t len, uint64_t wr_id)
{
    return st_post_rdma(a, IBV_WR_RDMA_READ, loff, (uintptr_t)b->buf + roff,
                        b->mr->rkey, len, wr_id, 1);
}

int st_send(struct st_ep *a, size_t loff, size_t len, uint64_t wr_id)
{
    return st_post_rdma(a, IBV_WR_SEND, loff, 0, 0, len, wr_id, 1);
}

int st_recv(struct st_ep *b, size_t loff, size_t len, uint64_t wr_id)
{
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)b->buf + loff;
    sge.length = (uint32_t)len;
    sge.lkey   = b->mr->lkey;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return (b->srq != NULL) ? ibv_post_srq_recv(b->srq, &wr, &bad) :
                              ibv_post_recv(b->qp, &wr, &bad);
}

int st_atomic(struct st_ep *a, struct st_ep *b, enum ibv_wr_opcode op,
              size_t loff, size_t roff, uint64_t compare_add, uint64_t swap,
              uint64_t wr_id)
{
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)a->buf + loff;
    sge.length = sizeof(uint64_t);
    sge.lkey   = a->mr->lkey;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id                 = wr_id;
    wr.opcode                = op;
    wr.sg_list               = &sge;
    wr.num_sge               = 1;
    wr.send_flags            = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = (uintptr_t)b->buf + roff;
    wr.wr.atomic.rkey        = b->mr->rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap        = swap;
    return ibv_post_send(a->qp, &wr, &bad);
}

static uint64_t st_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int st_poll(struct st_ep *ep, struct ibv_wc *wc, int n, int timeout_ms)
{
    uint64_t deadline = st_now_ms() + (uint64_t)timeout_ms;
    int got = 0, ret;

    while (got < n) {
        ret = ibv_poll_cq(ep->cq, n - got, wc + got);
        if (ret < 0) {
            return -1;
        }
        got += ret;
        if ((ret == 0) && (st_now_ms() > deadline)) {
            break;
        }
    }
    return got;
}

int st_async_event(struct st_ep *ep, struct ibv_async_event *ev,
                   int timeout_ms)
{
    struct pollfd pfd = { .fd = ep->ctx->async_fd, .events = POLLIN };

    if (poll(&pfd, 1, timeout_ms) != 1) {
        return -1;
    }
    if (ibv_get_async_event(ep->ctx, ev)) {
        return -1;
    }
    ibv_ack_async_event(ev);
    return 0;
}

enum ibv_qp_state st_qp_state(struct st_ep *ep)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;

    ibv_query_qp(ep->qp, &attr, IBV_QP_STATE, &init);
    return attr.qp_state;
}

void st_fill(uint8_t *buf, size_t len, uint32_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = (uint8_t)((seed * 2654435761u) >> 24) ^ (uint8_t)(i * 7) ^
                 (uint8_t)(i >> 8);
    }
}

int st_check_fill(const uint8_t *buf, size_t len, uint32_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (buf[i] != ((uint8_t)((seed * 2654435761u) >> 24) ^
                       (uint8_t)(i * 7) ^ (uint8_t)(i >> 8))) {
            return 0;
        }
    }
    return 1;
}

int64_t st_counter(const char *dev, const char *name)
{
    return softib_ctl_counter(st_ctl, dev, name);
}

uint32_t st_drop(const char *dev, int port, unsigned dir, unsigned classes,
                 uint32_t qpn, uint64_t skip, uint64_t count)
{
    struct softib_rule rule;
    uint32_t id = 0;

    memset(&rule, 0, sizeof(rule));
    rule.kind    = SOFTIB_RULE_DROP;
    rule.dev     = dev;
    rule.port    = (unsigned)port;
    rule.dir     = dir;
    rule.classes = classes;
    rule.qpn     = qpn;
    rule.skip    = skip;
    rule.count   = count;
    if (softib_ctl_rule_add(st_ctl, &rule, &id) < 0) {
        fprintf(stderr, "# cannot add a drop rule\n");
    }
    return id;
}
