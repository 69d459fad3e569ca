/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_IMPL_H
#define UCT_RC_VARUNA_IMPL_H

#include "rc_varuna.h"

#include <uct/ib/base/ib_log.h>

/*
 * Inline code the transport's files share (as rc_verbs_impl.h is for
 * rc_verbs): accessors, the send credits a failover holds back, what the
 * classifier needs of a replay record, and the posting path every work
 * request goes through: the one function that gives requests to a QP
 * (uct_rc_varuna_lane_post) and the prepare/taken pair that accounts only
 * what the QP took. The endpoint's own steps of a new operation (admission,
 * its record, its post) are in rc_varuna_ep.c; the failover's resend
 * (rc_varuna_failover.c) and the control requests (rc_varuna_ctrl.c) post
 * through the same path. Not for tests: they include rc_varuna.h alone.
 */


/* ------------------------------------------------------------------------
 * Accessors
 * ------------------------------------------------------------------------ */

/* The lane that is not this one */
static UCS_F_ALWAYS_INLINE unsigned uct_rc_varuna_other_lane(unsigned lane)
{
    return UCT_RC_VARUNA_NUM_SIDES - 1 - lane;
}

static UCS_F_ALWAYS_INLINE uct_rc_varuna_iface_t *
uct_rc_varuna_ep_iface(uct_rc_varuna_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.super.iface, uct_rc_varuna_iface_t);
}

static UCS_F_ALWAYS_INLINE uct_rc_varuna_md_t *
uct_rc_varuna_iface_md(uct_rc_varuna_iface_t *iface)
{
    return ucs_derived_of(iface->super.super.super.md, uct_rc_varuna_md_t);
}

/*
 * The lane of a completion polled from a side's CQ. A standby on another
 * device has CQs of its own, and there the side is the lane: QP numbers of
 * two devices are allocated independently and may be equal (a server with
 * two interfaces, each the other's standby, met it on rxe). A standby port
 * of the same device shares the CQs, where QP numbers are unique.
 */
static UCS_F_ALWAYS_INLINE unsigned
uct_rc_varuna_iface_wc_lane(uct_rc_varuna_iface_t *iface, unsigned side,
                            uct_rc_varuna_ep_t *ep, uint32_t qp_num)
{
    if (iface->side[UCT_RC_VARUNA_SIDE_STANDBY].separate) {
        return side;
    }
    return ((ep->lane[0].qp != NULL) && (ep->lane[0].qp->qp_num == qp_num)) ?
           UCT_RC_VARUNA_SIDE_PRIMARY : UCT_RC_VARUNA_SIDE_STANDBY;
}

/* A port event UCX's async thread recorded that the progress has not
 * handled yet */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_iface_port_events_new(uct_rc_varuna_iface_t *iface)
{
    return iface->fo.port_events != uct_rc_varuna_iface_md(iface)->port_events;
}

/* An event (a port, a control message, a completion, a lane to re-protect)
 * may have changed what the endpoints waiting for re-protection wait for:
 * count them as waiting for time until the next periodic check says
 * (uct_rc_varuna_iface_periodic) */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_iface_reprotect_recheck(uct_rc_varuna_iface_t *iface)
{
    iface->fo.reprotect_timed = 1;
}

/* The inline payload of a record sits after its gather list. */
static UCS_F_ALWAYS_INLINE void *
uct_rc_varuna_op_inl(uct_rc_varuna_iface_t *iface, uct_rc_varuna_op_t *op)
{
    return &op->sge[iface->config.max_send_sge];
}

static UCS_F_ALWAYS_INLINE void *
uct_rc_varuna_desc_data(uct_rc_varuna_desc_t *desc)
{
    return desc + 1;
}

/* A failover is between detection and promotion: new operations wait */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_ep_fo_fencing(const uct_rc_varuna_ep_t *ep)
{
    return (unsigned)(ep->fo.state - UCT_RC_VARUNA_FO_DRAIN) <=
           (UCT_RC_VARUNA_FO_RESEND - UCT_RC_VARUNA_FO_DRAIN);
}

/* New operations wait (their send credits are parked in fo.parked): a
 * failover fences the lane they were on, or a grow drains the old QP before
 * the new one takes them (rc_varuna_grow.c) */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_ep_tx_held(const uct_rc_varuna_ep_t *ep)
{
    return uct_rc_varuna_ep_fo_fencing(ep) || ep->gr.hold;
}

/* Off the watchdog's list (iface->fo.watched) */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_ep_unwatch(uct_rc_varuna_ep_t *ep)
{
    if (ep->tx.watched) {
        ucs_list_del(&ep->tx.watch);
        ep->tx.watched = 0;
    }
}


/* ------------------------------------------------------------------------
 * Send credits
 * ------------------------------------------------------------------------ */

/* Of count send credits coming back, those the endpoint keeps: after a
 * failover onto a smaller send queue, the credits it holds beyond that
 * queue's share are retired as they come back */
static UCS_F_ALWAYS_INLINE unsigned
uct_rc_varuna_ep_tx_repay(uct_rc_varuna_ep_t *ep, unsigned count)
{
    unsigned retired;

    if (ucs_likely(ep->tx.wr_owned <= ep->tx.wr_limit)) {
        return count;
    }
    retired          = ucs_min(count, ep->tx.wr_owned - ep->tx.wr_limit);
    ep->tx.wr_owned -= retired;
    return count - retired;
}

/* Send credits come back to the endpoint, unless new operations are held
 * back: then they wait until the failover has resent what was lost, or the
 * grow has moved to its new QP. */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_ep_tx_credits_add(uct_rc_varuna_ep_t *ep, unsigned count)
{
    count = uct_rc_varuna_ep_tx_repay(ep, count);
    if (ucs_unlikely(uct_rc_varuna_ep_tx_held(ep))) {
        ep->fo.parked += count;
    } else {
        uct_rc_txqp_available_add(&ep->super.txqp, count);
    }
}


/* ------------------------------------------------------------------------
 * What the classifier needs of a replay record
 * ------------------------------------------------------------------------ */

static UCS_F_ALWAYS_INLINE uct_rc_varuna_kind_t
uct_rc_varuna_op_kind(const uct_rc_varuna_op_t *op)
{
    switch (op->ib_opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return UCT_RC_VARUNA_KIND_SEND;
    case IBV_WR_RDMA_READ:
        return UCT_RC_VARUNA_KIND_READ;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return UCT_RC_VARUNA_KIND_ATOMIC;
    default:
        return UCT_RC_VARUNA_KIND_WRITE;
    }
}

/* What the classifier needs of an operation in flight (a failover's
 * decision and a dead endpoint's purge take it from the same record) */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_op_cls_input(const uct_rc_varuna_op_t *op,
                           uct_rc_varuna_cls_op_t *cls)
{
    cls->sn         = op->sn;
    cls->log_before = op->log_before;
    cls->last_psn   = op->last_psn;
    cls->kind       = (uint8_t)uct_rc_varuna_op_kind(op);
    cls->never_sent = !!(op->flags & UCT_RC_VARUNA_OP_FLAG_NEVER_SENT);
    cls->numbered   = (op->ib_opcode == IBV_WR_SEND_WITH_IMM);
    cls->am_seq     = op->am_seq;
}


/* ------------------------------------------------------------------------
 * Posting: every work request goes to its QP here
 * ------------------------------------------------------------------------ */

/* The work request of an operation on a lane: where the data is (inline
 * copy, descriptor, user buffers), with the keys of the lane's device. */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_op_fill_wr(uct_rc_varuna_iface_t *iface, uct_rc_varuna_ep_t *ep,
                         uct_rc_varuna_op_t *op, unsigned lane,
                         struct ibv_send_wr *wr, struct ibv_sge *sge)
{
    unsigned i, n = 0;

    if (op->send_flags & IBV_SEND_INLINE) {
        if (op->length > 0) {
            sge[0].addr   = (uintptr_t)uct_rc_varuna_op_inl(iface, op);
            sge[0].length = op->length;
            sge[0].lkey   = 0;
            n             = 1;
        }
    } else {
        if (op->desc != NULL) {
            sge[0].addr   = (uintptr_t)uct_rc_varuna_desc_data(op->desc);
            sge[0].length = op->desc_len;
            sge[0].lkey   = op->desc->lkey[lane];
            n             = 1;
        }
        for (i = 0; i < op->num_sge; i++, n++) {
            sge[n].addr   = op->sge[i].addr;
            sge[n].length = op->sge[i].length;
            sge[n].lkey   = op->sge[i].memh->lkey[lane];
        }
    }

    wr->opcode     = (enum ibv_wr_opcode)op->ib_opcode;
    wr->send_flags = op->send_flags;
    wr->sg_list    = (n > 0) ? sge : NULL;
    wr->num_sge    = (int)n;
    wr->next       = NULL;

    switch (op->ib_opcode) {
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        wr->wr.atomic.remote_addr = op->remote_addr;
        wr->wr.atomic.rkey        = uct_rc_varuna_rkey(op->rkey, lane);
        wr->wr.atomic.compare_add = op->compare_add;
        wr->wr.atomic.swap        = op->swap;
        break;
    case IBV_WR_SEND_WITH_IMM:
        /* the receiver delivers SENDs in this order, whichever lane they
         * come on, and drops one it already delivered (section 5.3) */
        wr->imm_data = htobe32(op->am_seq);
        break;
    default:
        wr->wr.rdma.remote_addr = op->remote_addr;
        wr->wr.rdma.rkey        = uct_rc_varuna_rkey(op->rkey, lane);
        break;
    }
}

/*
 * The one place a work request goes to a lane's QP: operations with their
 * log writes, and control requests. A QP that refuses a request
 * (ibv_post_send fails) took nothing of it and of what follows it in the
 * chain, so its caller accounts (PSNs, credits) only what was taken, and
 * still has the rest: an operation goes to the failover as never sent
 * (uct_rc_varuna_ep_post_refused), a control request waits for its next
 * chance (rc_varuna_ctrl.c). Returns the first request refused, NULL
 * when the QP took them all.
 */
static UCS_F_ALWAYS_INLINE struct ibv_send_wr *
uct_rc_varuna_lane_post(uct_rc_varuna_iface_t *iface,
                        uct_rc_varuna_lane_t *lane, struct ibv_send_wr *wr,
                        uct_log_data_dump_func_t packet_dump_cb)
{
    struct ibv_send_wr *bad_wr;
    int ret;

    uct_ib_log_post_send(&iface->super.super, lane->qp, wr, INT_MAX,
                         packet_dump_cb);
    ret = ibv_post_send(lane->qp, wr, &bad_wr);
    if (ucs_likely(ret == 0)) {
        return NULL;
    }

    ucs_diag("rc_varuna: ibv_post_send(qp 0x%x) refused wr_id 0x%" PRIx64
             ": %s", lane->qp->qp_num, bad_wr->wr_id, strerror(ret));
    return bad_wr;
}

/*
 * Where a lane's send queue stands for the next request of a chain posted
 * with one ibv_post_send: its PSN, the last log write and the signaling
 * state, as the requests before it in the chain leave them once taken.
 * uct_rc_varuna_op_prepare() reads and advances it; the lane and the
 * endpoint change only for what the QP took (uct_rc_varuna_op_taken).
 */
typedef struct uct_rc_varuna_post_pos {
    uint32_t sq_psn;
    uint64_t log_sn;
    uint16_t unsignaled;
    size_t   unsig_bytes;
} uct_rc_varuna_post_pos_t;

static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_post_pos_init(uct_rc_varuna_ep_t *ep, unsigned lane_index,
                            uct_rc_varuna_post_pos_t *pos)
{
    pos->sq_psn      = ep->lane[lane_index].sq_psn;
    pos->log_sn      = ep->lane[lane_index].log_sn;
    pos->unsignaled  = uct_rc_txqp_unsignaled(&ep->super.txqp);
    pos->unsig_bytes = ep->tx.unsig_bytes;
}

/*
 * The requests of an operation (DESIGN.md section 4) at pos of a lane:
 * its request and, with_log, behind it in the same chain, an inline 8-byte
 * WRITE of its sequence number into the peer's log word. The operation
 * keeps the sn of the last log write before it on the lane, which decides
 * it at a failover when that write is missing from the log, and the PSN of
 * its last packet, so the responder's expected PSN can later tell what
 * executed. The completion comes from the last WR of the operation: the
 * log write's implies the operation's own (RC completes in order). Fills
 * wr[0..op->num_wr - 1], the last with next = NULL; returns whether the
 * operation is signaled.
 */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_op_prepare(uct_rc_varuna_iface_t *iface, uct_rc_varuna_ep_t *ep,
                         uct_rc_varuna_op_t *op, unsigned lane_index,
                         uct_rc_varuna_post_pos_t *pos, int signal,
                         int with_log, struct ibv_send_wr *wr,
                         struct ibv_sge *sge, struct ibv_sge *log_sge)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[lane_index];
    uint32_t npsn;

    /* a QP in error still takes requests and flushes them (a cancelling
     * flush posts its request after moving the QPs to error) */
    ucs_assertv((lane->qp->state == IBV_QPS_RTS) ||
                (lane->qp->state == IBV_QPS_ERR), "QP 0x%x state is %d",
                lane->qp->qp_num, lane->qp->state);

    uct_rc_varuna_op_fill_wr(iface, ep, op, lane_index, &wr[0], sge);

    npsn           = uct_rc_varuna_psn_count(uct_rc_varuna_op_kind(op),
                                             op->length, lane->path_mtu);
    op->last_psn   = uct_rc_varuna_psn_add(pos->sq_psn, npsn - 1);
    op->lane       = (uint8_t)lane_index;
    op->log_before = pos->log_sn;
    op->flags     &= ~UCT_RC_VARUNA_OP_FLAG_NEVER_SENT;
    pos->sq_psn    = uct_rc_varuna_psn_add(pos->sq_psn, npsn);

    /* signaled every tx_moderation requests, and every max_zcopy bytes so
     * that a healthy endpoint completes something well within the
     * watchdog's interval */
    signal = signal ||
             (pos->unsignaled >= lane->moderation) ||
             ((pos->unsig_bytes + op->length) > iface->config.max_zcopy);

    wr[0].wr_id = op->sn | UCT_RC_VARUNA_WRID_OP;
    if (with_log) {
        log_sge->addr             = (uintptr_t)&op->sn;
        log_sge->length           = sizeof(op->sn);
        log_sge->lkey             = 0;
        wr[1].wr_id               = op->sn;
        wr[1].opcode              = IBV_WR_RDMA_WRITE;
        wr[1].sg_list             = log_sge;
        wr[1].num_sge             = 1;
        wr[1].send_flags          = IBV_SEND_INLINE |
                                    (signal ? IBV_SEND_SIGNALED : 0);
        wr[1].wr.rdma.remote_addr = ep->peer_log.addr;
        wr[1].wr.rdma.rkey        = ep->peer_log.rkey[lane_index];
        wr[1].next                = NULL;
        wr[0].next                = &wr[1];
        op->num_wr                = 2;
        pos->sq_psn               = uct_rc_varuna_psn_add(pos->sq_psn, 1);
        pos->log_sn               = op->sn;
    } else {
        wr[0].send_flags         |= signal ? IBV_SEND_SIGNALED : 0;
        op->num_wr                = 1;
    }

    if (signal) {
        pos->unsignaled  = 0;
        pos->unsig_bytes = 0;
    } else {
        pos->unsignaled++;
        pos->unsig_bytes += op->length;
    }
    return signal;
}

/* The QP refused the operation's request: nothing of it went */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_op_never_sent(uct_rc_varuna_op_t *op)
{
    op->num_wr  = 0;
    op->flags  |= UCT_RC_VARUNA_OP_FLAG_NEVER_SENT;
}

/*
 * The QP took the operation prepared by uct_rc_varuna_op_prepare(), with
 * its log write unless log_refused: account its PSNs, its log write, its
 * signal and its send queue and CQ entries.
 */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_op_taken(uct_rc_varuna_iface_t *iface, uct_rc_varuna_ep_t *ep,
                       uct_rc_varuna_op_t *op, int signal, int log_refused)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[op->lane];

    lane->sq_psn = uct_rc_varuna_psn_add(op->last_psn, 1);
    if (ucs_unlikely(log_refused)) {
        /* the request went without its log write, and without the signal
         * the log write was to carry: the failover that follows drains the
         * lane (its flushed completion or none, which means it completed)
         * and decides it by the PSN */
        op->num_wr = 1;
        signal     = 0;
    } else if (op->num_wr == 2) {
        lane->sq_psn = uct_rc_varuna_psn_add(lane->sq_psn, 1);
        lane->log_sn = op->sn;
    }

    if (signal) {
        if (ep->tx.done_sn >= ep->tx.sig_sn) {
            /* the watchdog counts from the first completion awaited, and
             * looks at the endpoint from now on */
            ep->tx.last_progress = ucs_get_time();
            if (!ep->tx.watched) {
                ucs_list_add_tail(&iface->fo.watched, &ep->tx.watch);
                ep->tx.watched = 1;
            }
        }
        ep->tx.sig_sn      = op->sn;
        ep->tx.unsig_bytes = 0;
    } else {
        ep->tx.unsig_bytes += op->length;
    }
    uct_rc_txqp_posted(&ep->super.txqp, &iface->super, op->num_wr, signal);
}

#endif
