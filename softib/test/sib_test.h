/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * A small harness for softib's own tests: endpoints (context, PD, CQ, QP,
 * one registered buffer), RC connection, posting helpers, completion
 * polling with a deadline, and checks that print TAP-style results.
 * Tests use only the public verbs API and libsoftib.
 */
#ifndef SIB_TEST_H
#define SIB_TEST_H

#include "softib/ctl.h"

#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>


struct st_ep {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *cq;       /* send and receive completions */
    struct ibv_srq     *srq;      /* NULL unless asked for */
    struct ibv_qp      *qp;
    struct ibv_mr      *mr;
    uint8_t            *buf;
    size_t              len;
    char                dev[32];
    int                 port;
    uint16_t            lid;
};

struct st_opts {
    uint8_t      timeout;         /* IBA encoding: 4.096 us << timeout */
    uint8_t      retry_cnt;
    uint8_t      rnr_retry;
    uint8_t      min_rnr_timer;
    uint8_t      max_rd_atomic;
    uint32_t     psn_a;           /* a's send PSN = b's expected PSN */
    uint32_t     psn_b;
    enum ibv_mtu mtu;
};

/* What another process needs to connect to an endpoint. */
struct st_addr {
    uint16_t lid;
    uint32_t qpn;
    uint32_t psn;
    uint64_t addr;
    uint32_t rkey;
};

extern softib_ctl_t *st_ctl;
extern int st_failures;

#define ST_CHECK(_cond, ...) \
    st_check(!!(_cond), __FILE__, __LINE__, #_cond, __VA_ARGS__)

void st_check(int ok, const char *file, int line, const char *expr,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Runs each test in turn with a fresh device state; returns the exit code
 * (0 if everything passed). */
struct st_test {
    const char *name;
    void      (*func)(void);
};
int  st_main(const struct st_test *tests, int ntests);

struct st_opts st_default_opts(void);

int  st_ep_open(struct st_ep *ep, const char *dev, int port, size_t len,
                enum ibv_qp_type type, int use_srq);
void st_ep_close(struct st_ep *ep);
void st_ep_addr(const struct st_ep *ep, uint32_t psn, struct st_addr *addr);
/* RESET -> RTS towards the remote address (RC) */
int  st_ep_connect(struct st_ep *ep, const struct st_addr *remote,
                   uint32_t my_psn, const struct st_opts *o);
/* connect a <-> b in this process */
int  st_connect(struct st_ep *a, struct st_ep *b, const struct st_opts *o);

int  st_post_rdma(struct st_ep *ep, enum ibv_wr_opcode op, size_t loff,
                  uint64_t raddr, uint32_t rkey, size_t len, uint64_t wr_id,
                  int signaled);
int  st_write(struct st_ep *a, struct st_ep *b, size_t loff, size_t roff,
              size_t len, uint64_t wr_id);
int  st_read(struct st_ep *a, struct st_ep *b, size_t loff, size_t roff,
             size_t len, uint64_t wr_id);
int  st_send(struct st_ep *a, size_t loff, size_t len, uint64_t wr_id);
int  st_recv(struct st_ep *b, size_t loff, size_t len, uint64_t wr_id);
int  st_atomic(struct st_ep *a, struct st_ep *b, enum ibv_wr_opcode op,
               size_t loff, size_t roff, uint64_t compare_add, uint64_t swap,
               uint64_t wr_id);

/* Poll until n completions arrived or timeout_ms passed; returns count. */
int  st_poll(struct st_ep *ep, struct ibv_wc *wc, int n, int timeout_ms);
/* The next async event within timeout_ms, or -1. */
int  st_async_event(struct st_ep *ep, struct ibv_async_event *ev,
                    int timeout_ms);
enum ibv_qp_state st_qp_state(struct st_ep *ep);

void st_fill(uint8_t *buf, size_t len, uint32_t seed);
int  st_check_fill(const uint8_t *buf, size_t len, uint32_t seed);

int64_t st_counter(const char *dev, const char *name);
uint32_t st_drop(const char *dev, int port, unsigned dir, unsigned classes,
                 uint32_t qpn, uint64_t skip, uint64_t count);

#endif
