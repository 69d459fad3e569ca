/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Packets in flight and the prototypes of the device's internal files,
 * grouped by file. Nothing here is exported from the library.
 */
#ifndef SIB_LOC_H
#define SIB_LOC_H

#include "sib.h"
#include "sib_opcode.h"

#include <sys/uio.h>


/* A received packet, parsed once by sib_recv.c */
struct sib_pkt {
    uint8_t            *buf;
    uint32_t            len;          /* datagram bytes */
    struct sib_grh     *grh;          /* NULL without GRH */
    struct sib_bth     *bth;
    uint32_t            mask;         /* sib_opcode[opcode].mask */
    uint8_t             opcode;
    uint32_t            psn;
    uint32_t            qpn;          /* destination */
    uint16_t            slid;
    uint16_t            dlid;
    unsigned            dev;          /* receiving device and port */
    unsigned            port;
    uint8_t            *payload;
    uint32_t            paylen;       /* without pad */
    struct sib_context *ctx;
    struct sib_qp      *qp;
};

#define sib_pkt_hdr(_pkt, _type, _hdr) \
    ((struct _type*)((uint8_t*)(_pkt)->bth + \
                     sib_opcode[(_pkt)->opcode].offset[_hdr]))

/* Ring sizes (CQ, SQ, RQ): the power of two at or above n */
static inline uint32_t sib_roundup_pow2(uint32_t n)
{
    uint32_t p = 1;

    while (p < n) {
        p <<= 1;
    }
    return p;
}

static inline uint64_t reth_va(const struct sib_pkt *pkt)
{
    return __reth_va(sib_pkt_hdr(pkt, sib_reth, SIB_RETH));
}

static inline uint32_t reth_rkey(const struct sib_pkt *pkt)
{
    return __reth_rkey(sib_pkt_hdr(pkt, sib_reth, SIB_RETH));
}

static inline uint32_t reth_len(const struct sib_pkt *pkt)
{
    return __reth_len(sib_pkt_hdr(pkt, sib_reth, SIB_RETH));
}

static inline uint64_t atmeth_va(const struct sib_pkt *pkt)
{
    return __atmeth_va(sib_pkt_hdr(pkt, sib_atmeth, SIB_ATMETH));
}

static inline uint32_t atmeth_rkey(const struct sib_pkt *pkt)
{
    return __atmeth_rkey(sib_pkt_hdr(pkt, sib_atmeth, SIB_ATMETH));
}

static inline uint64_t atmeth_swap_add(const struct sib_pkt *pkt)
{
    return __atmeth_swap_add(sib_pkt_hdr(pkt, sib_atmeth, SIB_ATMETH));
}

static inline uint64_t atmeth_comp(const struct sib_pkt *pkt)
{
    return __atmeth_comp(sib_pkt_hdr(pkt, sib_atmeth, SIB_ATMETH));
}

static inline uint8_t aeth_syn(const struct sib_pkt *pkt)
{
    return __aeth_syn(sib_pkt_hdr(pkt, sib_aeth, SIB_AETH));
}

static inline uint32_t aeth_msn(const struct sib_pkt *pkt)
{
    return __aeth_msn(sib_pkt_hdr(pkt, sib_aeth, SIB_AETH));
}

static inline uint64_t atmack_orig(const struct sib_pkt *pkt)
{
    return __atmack_orig(sib_pkt_hdr(pkt, sib_atmack, SIB_ATMACK));
}

static inline uint32_t immdt_imm(const struct sib_pkt *pkt)
{
    return __immdt_imm(sib_pkt_hdr(pkt, sib_immdt, SIB_IMMDT));
}

static inline uint32_t ieth_rkey(const struct sib_pkt *pkt)
{
    return __ieth_rkey(sib_pkt_hdr(pkt, sib_ieth, SIB_IETH));
}

static inline uint32_t deth_qkey(const struct sib_pkt *pkt)
{
    return __deth_qkey(sib_pkt_hdr(pkt, sib_deth, SIB_DETH));
}

static inline uint32_t deth_sqp(const struct sib_pkt *pkt)
{
    return __deth_sqp(sib_pkt_hdr(pkt, sib_deth, SIB_DETH));
}

/* A packet being built for transmission: headers in hdr[], payload by
 * reference (gathered straight from registered memory by sendmsg). */
#define SIB_OUT_MAX_IOV  (SIB_MAX_SGE + 2)

struct sib_out {
    uint8_t      hdr[SIB_MAX_HDR];
    uint32_t     lrh_len;             /* LRH (+ GRH) */
    uint8_t      opcode;
    struct iovec iov[SIB_OUT_MAX_IOV];
    uint32_t     iovcnt;              /* payload pieces, from iov[1] */
    uint32_t     paylen;
    uint8_t      tail[8];             /* pad + ICRC */
    uint32_t     pkt_class;           /* enum sib_pkt_class */
    uint32_t     src_qpn;             /* for rules: the sending QP */
    uint16_t     dlid;
    uint32_t     dqpn;
};

static inline struct sib_bth *sib_out_bth(struct sib_out *out)
{
    return (struct sib_bth*)(out->hdr + out->lrh_len);
}

#define sib_out_hdr(_out, _type, _hdr) \
    ((struct _type*)((uint8_t*)sib_out_bth(_out) + \
                     sib_opcode[(_out)->opcode].offset[_hdr]))


/* sib_engine.c */
int      sib_engine_get(struct sib_engine **eng_p);
void     sib_engine_put(struct sib_engine *eng);
void     sib_engine_add_context(struct sib_engine *eng,
                                struct sib_context *ctx);
void     sib_engine_del_context(struct sib_engine *eng,
                                struct sib_context *ctx);
int      sib_engine_udp_port(struct sib_engine *eng, uint32_t ip,
                             uint16_t *port_p);
void     sib_engine_progress(struct sib_engine *eng);
void     sib_engine_schedule(struct sib_qp *qp);
void     sib_engine_unschedule(struct sib_qp *qp);
void     sib_engine_timer_update(struct sib_qp *qp);
int      sib_engine_poll_due(struct sib_engine *eng);
void     sib_engine_app_sleeps(struct sib_engine *eng);
void     sib_engine_lock(struct sib_engine *eng);
int      sib_engine_trylock(struct sib_engine *eng);
void     sib_engine_unlock(struct sib_engine *eng);
struct sib_registry *sib_engine_registry(struct sib_engine *eng);
uint64_t sib_now_ns(void);

/* sib_net.c */
void     sib_net_poll(struct sib_engine *eng, int fd, unsigned budget);
void     sib_out_init(struct sib_out *out, struct sib_qp *qp,
                      const struct ibv_ah_attr *av, uint8_t opcode,
                      uint32_t dqpn, uint32_t psn, int ackreq, int se);
void     sib_out_add_payload(struct sib_out *out, const void *addr,
                             uint32_t len);
void     sib_net_xmit(struct sib_qp *qp, struct sib_out *out);
void     sib_net_flush(struct sib_engine *eng);
void     sib_net_run_delayed(struct sib_engine *eng, uint64_t now);
uint64_t sib_net_next_delayed(struct sib_engine *eng);
void     sib_net_free_delayed(struct sib_engine *eng);
uint32_t sib_hcrc(const uint8_t *buf, uint32_t len);
void     sib_count(struct sib_context *ctx, enum sib_counter cnt,
                   uint64_t n);

/* sib_recv.c */
void     sib_recv(struct sib_engine *eng, uint8_t *buf, uint32_t len);
unsigned sib_pkt_class(uint32_t mask);

/* sib_req.c */
void     sib_req_run(struct sib_qp *qp);
void     sib_req_retry(struct sib_qp *qp);
int      sib_wqe_is_rd_atomic(const struct sib_send_wqe *wqe);

/* sib_comp.c */
void     sib_comp_pkt(struct sib_qp *qp, struct sib_pkt *pkt);
void     sib_comp_timers(struct sib_qp *qp, uint64_t now);
void     sib_comp_arm_timer(struct sib_qp *qp);
void     sib_comp_complete(struct sib_qp *qp, struct sib_send_wqe *wqe,
                           enum ibv_wc_status status);
void     sib_comp_flush_sq(struct sib_qp *qp);
uint64_t sib_qp_timeout_ns(const struct sib_qp *qp);

/* sib_resp.c */
void     sib_resp_pkt(struct sib_qp *qp, struct sib_pkt *pkt);
void     sib_resp_send_pending(struct sib_qp *qp);
int      sib_resp_has_pending(const struct sib_qp *qp);
void     sib_resp_flush(struct sib_qp *qp);
void     sib_resp_reset(struct sib_qp *qp);

/* sib_cq.c */
void     sib_cq_push(struct sib_cq *cq, const struct ibv_wc *wc,
                     int solicited);
int      sib_cq_pop(struct sib_cq *cq, int num, struct ibv_wc *wc);

/* sib_mr.c */
struct sib_mr *sib_mr_lookup(struct sib_context *ctx, uint32_t key);
int      sib_mr_check(struct sib_mr *mr, struct sib_pd *pd, uint64_t iova,
                      uint64_t len, unsigned access);
int      sib_sge_copy_to(struct sib_context *ctx, struct sib_pd *pd,
                         const struct ibv_sge *sge, uint32_t num_sge,
                         uint32_t offset, const void *src, uint32_t len);
void     sib_mem_guard_init(void);
int      sib_mem_copy(struct sib_context *ctx, void *dst, const void *src,
                      size_t len, const void *addr);
uint64_t sib_mem_atomic(struct sib_context *ctx, uint64_t *target, int cswap,
                        uint64_t compare, uint64_t swap_add);

/* sib_qp.c */
int      sib_rq_init(struct sib_rq *rq, uint32_t max_wr, uint32_t max_sge);
void     sib_rq_cleanup(struct sib_rq *rq);
int      sib_rq_post(struct sib_rq *rq, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad_wr);
int      sib_qp_check_caps(enum ibv_qp_type type, struct ibv_qp_cap *cap);
int      sib_qp_alloc_queues(struct sib_qp *qp, struct ibv_qp_cap *cap);
void     sib_qp_free(struct sib_qp *qp);
int      sib_qp_register(struct sib_context *ctx, struct sib_qp *qp);
int      sib_qp_required(enum ibv_qp_type type, enum ibv_qp_state cur,
                         enum ibv_qp_state next);
int      sib_qp_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state next);
int      sib_qp_apply_attrs(struct sib_qp *qp, struct ibv_qp_attr *attr,
                            int mask);
void     sib_qp_reset(struct sib_qp *qp);
void     sib_qp_enter_error(struct sib_qp *qp);

/* verbs_qp.c */
int      sib_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                       struct ibv_send_wr **bad_wr);
int      sib_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
                       struct ibv_recv_wr **bad_wr);
int      sib_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                           struct ibv_recv_wr **bad_wr);
struct ibv_qp *sib_create_qp_ex(struct ibv_context *context,
                                struct ibv_qp_init_attr_ex *attr);

/* verbs_qp_ex.c */
int      sib_qp_ex_init(struct sib_qp *qp, uint64_t send_ops_flags);

/* verbs_cq.c */
int      sib_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc);
int      sib_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);

/* sib_async.c */
void     sib_async_event(struct sib_context *ctx, enum ibv_event_type type,
                         void *element);
void     sib_ctx_sync_ports(struct sib_context *ctx);
int      sib_async_is_qp_event(enum ibv_event_type type);
int      sib_async_read(struct ibv_context *context,
                        struct ibv_async_event *event);
void     sib_async_ack(struct ibv_async_event *event);

#endif
