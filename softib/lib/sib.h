/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Objects of the software RDMA device. Each embeds the libibverbs object it
 * implements as its first member; to_sxxx() converts back.
 *
 * Locking (see sib_engine.c for the engine itself):
 * - eng->lock ("the engine lock") protects all protocol state: every QP's
 *   send queue and requester/completer/responder state, the MR and QP
 *   tables, the engine's lists and timers. Verbs that change such state
 *   take it; the packet engines run under it.
 * - cq->lock protects a CQ ring: the engine produces under the engine lock,
 *   the application consumes in poll_cq without it.
 * - rq->lock protects a receive queue (QP RQ or SRQ): the application
 *   produces in post_recv, the responder consumes under the engine lock.
 * Order: engine lock, then a queue lock; never the reverse.
 */
#ifndef SIB_H
#define SIB_H

#include "sib_hdr.h"
#include "sib_list.h"
#include "sib_registry.h"

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>


#define SIB_VENDOR_ID           0x5349      /* not a registered OUI */
#define SIB_VENDOR_PART_ID      0x1b01
#define SIB_HW_VER              1
#define SIB_FW_VER              "1.0.0"
#define SIB_MAX_QP_WR           16384
#define SIB_MAX_SGE             32
#define SIB_MAX_INLINE          512
#define SIB_MAX_CQE             (1 << 20)
#define SIB_MAX_SRQ_WR          16384
#define SIB_MAX_RD_ATOMIC       16
#define SIB_MAX_MSG_SIZE        (1u << 31)
#define SIB_MAX_MR_SIZE         (1ull << 40)
#define SIB_MAX_MTU             IBV_MTU_4096
#define SIB_UD_GRH_SIZE         40
#define SIB_DEFAULT_PKEY        0xffff
#define SIB_MAX_HDR             128   /* LRH + GRH + BTH + ext headers */

/* The requester keeps at most this many PSNs unacknowledged per QP, as
 * rxe does; it bounds what a socket buffer must absorb. */
#define SIB_MAX_UNACKED_PSNS    128
/* ... and asks for an ACK at least every this many packets. */
#define SIB_ACKREQ_INTERVAL     16

#define container_of(_ptr, _type, _member) \
    ((_type*)((char*)(_ptr) - offsetof(_type, _member)))


struct sib_engine;
struct sib_qp;
struct sib_wr_ex;

struct sib_device {
    struct ibv_device ibdev;
    unsigned          index;         /* in the registry */
    unsigned          num_ports;
};

struct sib_port_cache {
    uint32_t state;                  /* last state reported to the user */
};

struct sib_context {
    struct verbs_context   vctx;
    struct sib_device     *dev;
    struct sib_engine     *eng;
    unsigned               slot;     /* registry slot: owns QPNs slot<<12 | i */
    struct sib_reg_slot   *reg_slot;
    int                    async_wr_fd; /* write end of the async event pipe */
    struct sib_port_cache  port[SIB_MAX_PORTS];
    struct sib_list        link;     /* in eng->contexts */

    /* Taken inside the engine lock by whoever changes qp_table, and alone
     * by ibv_get_async_event: UCX's async thread reads a QP's event
     * (LAST_WQE_REACHED, raised by every failover's fence) without waiting
     * for the engine, and, preempted on a busy machine, without keeping a
     * post or a poll waiting for it (sib_async_qp) */
    pthread_mutex_t        qp_table_lock;

    /* engine lock (qp_table: and qp_table_lock to change it) */
    struct sib_qp         *qp_table[SIB_QPS_PER_SLOT];
    unsigned               qp_next;
    struct sib_mr        **mr_table;
    uint32_t               mr_table_size;
    uint32_t               mr_next;
    uint32_t               mr_key_seq;
};

struct sib_pd {
    struct ibv_pd ibpd;
};

struct sib_mr {
    struct ibv_mr  ibmr;
    struct sib_pd *pd;
    uint64_t       iova;             /* what remote and local keys address */
    uint8_t       *addr;             /* where it is in this process */
    uint64_t       length;
    unsigned       access;
    uint32_t       index;            /* in ctx->mr_table */
};

struct sib_ah {
    struct ibv_ah      ibah;
    struct ibv_ah_attr attr;
};

struct sib_comp_channel {
    struct ibv_comp_channel ibch;
    int                     wr_fd;   /* write end; ibch.fd is the read end */
};

struct sib_cq {
    struct ibv_cq      ibcq;
    pthread_spinlock_t lock;
    struct ibv_wc     *ring;
    uint32_t           size;         /* power of two */
    uint32_t           head;         /* produced */
    uint32_t           tail;         /* consumed */
    int                armed;        /* 0, or IBV_WC-solicited flag + 1 */
    int                overflow;
    struct sib_comp_channel *chan;
};

/* A posted receive; the scatter list follows it. */
struct sib_recv_wqe {
    uint64_t      wr_id;
    uint32_t      num_sge;
    uint32_t      length;            /* sum of the SGE lengths */
    struct ibv_sge sge[];
};

struct sib_rq {
    pthread_spinlock_t lock;
    uint8_t           *ring;
    uint32_t           size;         /* power of two */
    uint32_t           max_wr;
    uint32_t           max_sge;
    uint32_t           wqe_size;
    uint32_t           head;         /* posted */
    uint32_t           tail;         /* consumed */
};

struct sib_srq {
    struct ibv_srq ibsrq;
    struct sib_rq  rq;
    uint32_t       limit;            /* SRQ_LIMIT_REACHED below this; 0 off */
};

enum sib_wqe_state {
    SIB_WQE_POSTED,                  /* not yet touched by the requester */
    SIB_WQE_PROCESSING,              /* some packets sent */
    SIB_WQE_PENDING,                 /* all sent, awaiting ACK/response */
    SIB_WQE_DONE
};

/* A posted send; inline data or the gather list follows it. */
struct sib_send_wqe {
    uint64_t           wr_id;
    uint32_t           opcode;       /* enum ibv_wr_opcode */
    uint32_t           send_flags;
    uint32_t           imm_data;     /* big-endian, or invalidate rkey */
    uint32_t           state;        /* enum sib_wqe_state */
    uint64_t           remote_addr;
    uint32_t           rkey;
    uint32_t           num_sge;      /* 0 for inline */
    uint64_t           compare_add;
    uint64_t           swap;
    struct ibv_ah_attr ud_av;        /* UD: copied at post time */
    uint32_t           ud_qpn;
    uint32_t           ud_qkey;
    uint32_t           length;       /* payload bytes */
    uint32_t           first_psn;
    uint32_t           last_psn;     /* READ: PSN of the last response */
    uint32_t           sent;         /* bytes packetized so far */
    uint32_t           rcvd;         /* READ: response bytes placed */
    uint32_t           status;       /* enum ibv_wc_status when done */
    union {
        struct ibv_sge sge[0];
        uint8_t        inline_data[0];
    };
};

struct sib_sq {
    uint8_t  *ring;
    uint32_t  size;                  /* power of two */
    uint32_t  max_wr;
    uint32_t  max_sge;
    uint32_t  max_inline;
    uint32_t  wqe_size;
    uint32_t  head;                  /* posted */
    uint32_t  req;                   /* next WQE the requester works on */
    uint32_t  tail;                  /* oldest not yet completed */
};

/* Requester: turns WQEs into request packets (sib_req.c) */
struct sib_req_state {
    uint32_t psn;                    /* next PSN to assign */
    uint32_t rd_atomic;              /* READ/atomic WQEs in flight */
    uint32_t noack_pkts;             /* since the last AckReq */
    int      need_retry;             /* rewind to sq.tail before sending */
};

/* Completer: matches ACKs and responses to WQEs (sib_comp.c) */
struct sib_comp_state {
    uint32_t psn;                    /* oldest PSN not yet acknowledged */
    uint32_t retry_cnt;              /* retries left after a timeout */
    uint32_t rnr_retry;              /* RNR retries left (7: infinite) */
    uint64_t timer_ns;               /* retransmit deadline, 0 if idle */
    uint64_t rnr_ns;                 /* RNR wait deadline, 0 if none */
    int      in_timer_list;
};

enum sib_res_type {
    SIB_RES_NONE,
    SIB_RES_READ,
    SIB_RES_ATOMIC
};

/* Responder resource: a READ or atomic the responder executed, kept so a
 * duplicate request is answered without executing again (IBA 9.7.5.1.2,
 * rxe_resp.c duplicate_request). */
struct sib_resource {
    uint32_t type;                   /* enum sib_res_type */
    uint32_t first_psn;
    uint32_t last_psn;
    uint32_t rkey;
    uint64_t va;
    uint32_t length;
    uint32_t cur_psn;                /* READ: next response to send */
    uint64_t orig;                   /* ATOMIC: value before execution */
    uint32_t msn;
    int      pending;                /* responses still to send */
};

/* Responder: executes requests, sends ACKs and responses (sib_resp.c) */
struct sib_resp_state {
    uint32_t epsn;                   /* next expected request PSN */
    uint32_t msn;
    int      nak_sent;               /* one sequence NAK per gap, C9-110 */
    uint32_t msg_kind;               /* SIB_SEND_MASK/SIB_WRITE_MASK in a
                                        multi-packet message, else 0 */
    /* multi-packet SEND: the receive WQE being filled */
    int      have_wqe;
    uint32_t wqe_off;
    /* multi-packet WRITE: where the next payload goes */
    struct sib_mr *mr;
    uint64_t va;
    uint32_t resid;
    /* The ACK or NAK to send after any pending READ/atomic responses, at
     * the end of an engine pass; a newer one replaces an older one. */
    int      ack_pending;
    uint8_t  ack_syn;
    uint32_t ack_psn;
    /* READ/atomic resources, a ring of max_dest_rd_atomic entries;
     * res_head counts allocations, res[seq % res_num] */
    struct sib_resource res[SIB_MAX_RD_ATOMIC];
    uint32_t res_num;
    uint32_t res_head;
    /* a message in progress at the responder */
    uint32_t msg_len;                /* WRITE: bytes so far */
    uint32_t write_len;              /* WRITE: RETH length */
    /* SEND scatter list, copied out of the receive queue */
    struct sib_recv_wqe *wqe;
};

struct sib_qp {
    struct ibv_qp_ex       ibqpx;    /* ibqpx.qp_base is the ibv_qp */
    struct sib_context    *ctx;
    struct sib_pd         *pd;
    struct sib_cq         *scq;
    struct sib_cq         *rcq;
    struct sib_srq        *srq;
    enum ibv_qp_type       type;
    int                    sq_sig_all;
    uint32_t               events_reported; /* async events handed out;
                                               engine lock */

    /* The QP's real state. ibv_qp.state is only what the application last
     * set or queried: libibverbs updates it in ibv_modify_qp and
     * ibv_query_qp, never when the device moves the QP to ERR on its own,
     * and UCX relies on that (it asserts RTS while flushing a failed QP).
     * Written under the engine lock. */
    enum ibv_qp_state      state;

    /* attributes (engine lock) */
    uint8_t                port_num;
    uint16_t               pkey_index;
    uint32_t               qkey;
    unsigned               access;
    enum ibv_mtu           path_mtu;
    uint32_t               mtu;      /* bytes */
    uint32_t               dest_qpn;
    struct ibv_ah_attr     av;
    uint8_t                timeout;
    uint8_t                retry_cnt;
    uint8_t                rnr_retry;
    uint8_t                min_rnr_timer;
    uint8_t                max_rd_atomic;
    uint8_t                max_dest_rd_atomic;
    int                    last_wqe_sent; /* LAST_WQE_REACHED delivered */

    struct sib_sq          sq;
    struct sib_rq          rq;       /* unused with an SRQ */
    struct sib_req_state   req;
    struct sib_comp_state  comp;
    struct sib_resp_state  resp;

    struct sib_list        tx_link;    /* in eng->tx_list: has work to send */
    struct sib_list        timer_link; /* in eng->timer_list */
    int                    in_tx_list;

    /* extended post API (verbs_qp_ex.c): WRs built between wr_start and
     * wr_complete, then posted as one list */
    struct sib_wr_ex      *wr_pool;
    uint32_t               wr_pool_size;
    uint32_t               wr_used;
    int                    wr_err;
};

static inline struct sib_device *to_sdev(struct ibv_device *ibdev)
{
    return container_of(ibdev, struct sib_device, ibdev);
}

static inline struct sib_context *to_sctx(struct ibv_context *ibctx)
{
    return container_of(ibctx, struct sib_context, vctx.context);
}

static inline struct sib_pd *to_spd(struct ibv_pd *ibpd)
{
    return container_of(ibpd, struct sib_pd, ibpd);
}

static inline struct sib_mr *to_smr(struct ibv_mr *ibmr)
{
    return container_of(ibmr, struct sib_mr, ibmr);
}

static inline struct sib_ah *to_sah(struct ibv_ah *ibah)
{
    return container_of(ibah, struct sib_ah, ibah);
}

static inline struct sib_cq *to_scq(struct ibv_cq *ibcq)
{
    return container_of(ibcq, struct sib_cq, ibcq);
}

static inline struct sib_srq *to_ssrq(struct ibv_srq *ibsrq)
{
    return container_of(ibsrq, struct sib_srq, ibsrq);
}

static inline struct sib_qp *to_sqp(struct ibv_qp *ibqp)
{
    return container_of(ibqp, struct sib_qp, ibqpx.qp_base);
}

static inline struct sib_qp *qpx_to_sqp(struct ibv_qp_ex *ibqpx)
{
    return container_of(ibqpx, struct sib_qp, ibqpx);
}

static inline struct sib_comp_channel *
to_schan(struct ibv_comp_channel *ibch)
{
    return container_of(ibch, struct sib_comp_channel, ibch);
}

static inline struct ibv_qp *sib_qp_ib(struct sib_qp *qp)
{
    return &qp->ibqpx.qp_base;
}

static inline uint32_t sib_qp_num(const struct sib_qp *qp)
{
    return qp->ibqpx.qp_base.qp_num;
}

/* Under the engine lock, or as a hint without it. */
static inline enum ibv_qp_state sib_qp_state(const struct sib_qp *qp)
{
    return __atomic_load_n(&qp->state, __ATOMIC_RELAXED);
}

static inline struct sib_send_wqe *sib_sq_wqe(struct sib_sq *sq, uint32_t idx)
{
    return (struct sib_send_wqe*)(sq->ring +
                                  (size_t)(idx & (sq->size - 1)) *
                                  sq->wqe_size);
}

static inline struct sib_recv_wqe *sib_rq_wqe(struct sib_rq *rq, uint32_t idx)
{
    return (struct sib_recv_wqe*)(rq->ring +
                                  (size_t)(idx & (rq->size - 1)) *
                                  rq->wqe_size);
}

static inline uint32_t sib_mtu_bytes(enum ibv_mtu mtu)
{
    return 128u << (mtu - IBV_MTU_256 + 1);
}

#endif
