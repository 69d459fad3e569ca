/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "rc_varuna.h"
#include "rc_varuna_impl.h"

#include <uct/ib/base/ib_device.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/vfs/base/vfs_cb.h>
#include <ucs/vfs/base/vfs_obj.h>

#include <inttypes.h>


/* ------------------------------------------------------------------------
 * A new operation: admission, its record, its post (the posting path of
 * rc_varuna_impl.h)
 * ------------------------------------------------------------------------ */

/*
 * Every record of the ring is taken by an operation not completed yet. Send
 * credits keep this from happening in steady state (each operation holds
 * one), but not right after a failover: an operation the failover settled
 * gives its credit back when its lane's flush comes, and keeps its record
 * until everything before it has completed (a READ read again, a message
 * sent again). New operations, admitted on those credits, then overwrote
 * records still pending (the review of 0aa6934, finding 1).
 */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_ep_ring_full(const uct_rc_varuna_ep_t *ep)
{
    return (ep->tx.sn - ep->tx.done_sn) > ep->tx.ring_mask;
}

/* No record for another operation: the ring is full and cannot grow
 * (uct_rc_varuna_ep_ring_grow: at one record per credit, or no memory) */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_ep_no_record(uct_rc_varuna_iface_t *iface,
                           uct_rc_varuna_ep_t *ep)
{
    return uct_rc_varuna_ep_ring_full(ep) &&
           (uct_rc_varuna_ep_ring_grow(iface, ep) != UCS_OK);
}

/*
 * Room for one more operation: its work request on the QP, a CQ entry for
 * it (every one completes, with an error, if the QP fails), and READ
 * credits (none left blocks everything, as in rc_verbs, so that nothing
 * overtakes a READ waiting in the pending queue). Its log write, when it
 * is to have one, needs one more of each: without them it goes unlogged
 * (uct_rc_varuna_ep_new_op_logs). One unit, as rc/base counts: its pending
 * queue takes a request only when rc/base sees no send resources, so an
 * operation refused with resources that rc/base counts as enough would be
 * retried forever.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_rc_varuna_ep_check_res(uct_rc_varuna_iface_t *iface,
                           uct_rc_varuna_ep_t *ep)
{
    ucs_assert(ep->super.flags & UCT_RC_EP_FLAG_CONNECTED);

    /* near the end of the CQ credits (with room for an operation and its
     * log write), completions must be asked for to get them back */
    if (ucs_unlikely(iface->super.tx.cq_available <=
                     (signed)iface->super.config.tx_moderation + 2)) {
        if (iface->super.tx.cq_available < 1) {
            UCS_STATS_UPDATE_COUNTER(iface->super.stats,
                                     UCT_RC_IFACE_STAT_NO_CQE, 1);
            return UCS_ERR_NO_RESOURCE;
        }
        /* signal the next one to get the credits back */
        ep->super.txqp.unsignaled = RC_UNSIGNALED_INF;
    }

    if (ucs_unlikely((uct_rc_txqp_available(&ep->super.txqp) < 1) ||
                     (iface->super.tx.reads_available <= 0) ||
                     uct_rc_varuna_ep_no_record(iface, ep))) {
        UCS_STATS_UPDATE_COUNTER(ep->super.super.stats, UCT_EP_STAT_NO_RES,
                                 1);
        return UCS_ERR_NO_RESOURCE;
    }

    /* The endpoint's pending requests go first. rc/base only asserts it
     * (uct_rc_iface_check_pending): its credits come back in the progress
     * that dispatches the queue. A failover's promote gives the parked
     * credits back and the queue runs at the end of that progress, so an
     * operation posted before then from a receive callback (UCP's reply to
     * an atomic request) overtook the queue: the assertion ended an Open
     * MPI rank during a failback under flapping links. It waits behind
     * them instead (uct_rc_varuna_ep_pending_add). */
    if (ucs_unlikely(!iface->super.tx.in_pending &&
                     !ucs_arbiter_group_is_empty(&ep->super.arb_group))) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* Flow control of active messages (rc/base): the window and the request
 * and grant bits that ride on the AM id. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_rc_varuna_ep_check_fc(uct_rc_varuna_iface_t *iface,
                          uct_rc_varuna_ep_t *ep, uint8_t *am_id_p)
{
    uct_rc_fc_t *fc = &ep->super.fc;

    if (ucs_unlikely(fc->fc_wnd <= iface->super.config.fc_soft_thresh)) {
        if (iface->super.config.fc_enabled) {
            if (fc->fc_wnd <= 0) {
                UCS_STATS_UPDATE_COUNTER(ep->super.super.stats,
                                         UCT_EP_STAT_NO_RES, 1);
                return UCS_ERR_NO_RESOURCE;
            }
            *am_id_p |= uct_rc_fc_req_moderation(fc, &iface->super);
        } else {
            fc->fc_wnd = INT16_MAX;
        }
    }
    *am_id_p |= uct_rc_fc_get_fc_hdr(ep->super.flags);
    return UCS_OK;
}

static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_ep_fc_sent(uct_rc_varuna_ep_t *ep)
{
    ep->super.flags &= ~UCT_RC_EP_FC_MASK;
    ep->super.fc.fc_wnd--;
}

/* A descriptor from mp for an operation's payload, header or result, if
 * it needs one (mp not NULL) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_rc_varuna_ep_desc_get(ucs_mpool_t *mp, uct_rc_varuna_desc_t **desc_p)
{
    if (mp == NULL) {
        return UCS_OK;
    }
    *desc_p = ucs_mpool_get_inline(mp);
    return ucs_likely(*desc_p != NULL) ? UCS_OK : UCS_ERR_NO_RESOURCE;
}

/*
 * Admission of a new operation, the function form of rc/base's
 * UCT_RC_CHECK_RES: room for it (uct_rc_varuna_ep_check_res), then its
 * descriptor (uct_rc_varuna_ep_desc_get). UCS_ERR_NO_RESOURCE when either
 * is missing; the caller returns the status as it is.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_rc_varuna_ep_admit(uct_rc_varuna_iface_t *iface, uct_rc_varuna_ep_t *ep,
                       ucs_mpool_t *mp, uct_rc_varuna_desc_t **desc_p)
{
    ucs_status_t status;

    status = uct_rc_varuna_ep_check_res(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    return uct_rc_varuna_ep_desc_get(mp, desc_p);
}

/*
 * Admission of an active message, the function form of rc/base's
 * UCT_RC_CHECK_RES_AND_FC: room for it, the FC window (its bits go into
 * *am_id_p), and, as there, the assertion that it overtakes no request of
 * the endpoint's pending queue (uct_rc_iface_check_pending); then its
 * descriptor.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_rc_varuna_ep_am_admit(uct_rc_varuna_iface_t *iface, uct_rc_varuna_ep_t *ep,
                          uint8_t *am_id_p, ucs_mpool_t *mp,
                          uct_rc_varuna_desc_t **desc_p)
{
    ucs_status_t status;

    status = uct_rc_varuna_ep_check_res(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = uct_rc_varuna_ep_check_fc(iface, ep, am_id_p);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    uct_rc_iface_check_pending(&iface->super, &ep->super.arb_group);
    return uct_rc_varuna_ep_desc_get(mp, desc_p);
}

/* The record of the next operation; filled by the caller, then posted. */
static UCS_F_ALWAYS_INLINE uct_rc_varuna_op_t *
uct_rc_varuna_ep_op_start(uct_rc_varuna_ep_t *ep, uct_rc_varuna_op_type_t type,
                          enum ibv_wr_opcode ib_opcode)
{
    uct_rc_varuna_op_t *op = uct_rc_varuna_ep_op(ep, ep->tx.sn + 1);

    ucs_assertv(!uct_rc_varuna_ep_ring_full(ep), "ep %p: sn %" PRIu64
                " would take the record of %" PRIu64 ", not completed", ep,
                ep->tx.sn + 1, ep->tx.done_sn + 1);
    op->sn         = ep->tx.sn + 1;
    op->type       = type;
    op->ib_opcode  = ib_opcode;
    op->flags      = 0;
    op->num_sge    = 0;
    op->send_flags = 0;
    op->length     = 0;
    op->desc_len   = 0;
    op->comp       = NULL;
    op->flush_comp = NULL;
    op->desc       = NULL;
    return op;
}

/* Gather entries of user buffers; their memory handles give the keys on
 * both devices. Returns the total length. */
static UCS_F_ALWAYS_INLINE size_t
uct_rc_varuna_op_add_iov(uct_rc_varuna_op_t *op, const uct_iov_t *iov,
                         size_t iovcnt)
{
    uct_rc_varuna_memh_t *memh;
    uct_rc_varuna_sge_t *sge;
    size_t i, total = 0;

    for (i = 0; i < iovcnt; i++) {
        if (iov[i].length == 0) {
            continue;
        }
        memh          = iov[i].memh;
        sge           = &op->sge[op->num_sge++];
        sge->addr     = (uintptr_t)iov[i].buffer;
        sge->length   = (uint32_t)iov[i].length;
        sge->memh     = memh;
        total        += iov[i].length;
    }
    return total;
}

/*
 * Post an operation with its log write (uct_rc_varuna_op_prepare) on a
 * lane, in one doorbell. Returns UCS_ERR_IO_ERROR when the QP refused the
 * operation's request (it is marked never sent) or its log write (the
 * request went, unlogged).
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_rc_varuna_ep_post_op(uct_rc_varuna_iface_t *iface, uct_rc_varuna_ep_t *ep,
                         uct_rc_varuna_op_t *op, unsigned lane_index,
                         int signal, int with_log)
{
    struct ibv_sge sge[UCT_IB_MAX_IOV + 1], log_sge;
    struct ibv_send_wr wr[2], *refused;
    uct_rc_varuna_post_pos_t pos;

    uct_rc_varuna_post_pos_init(ep, lane_index, &pos);
    signal  = uct_rc_varuna_op_prepare(iface, ep, op, lane_index, &pos,
                                       signal, with_log, wr, sge, &log_sge);
    refused = uct_rc_varuna_lane_post(iface, &ep->lane[lane_index], &wr[0],
                                      (wr[0].opcode == IBV_WR_SEND_WITH_IMM) ?
                                      uct_rc_ep_packet_dump : NULL);
    if (ucs_unlikely(refused == &wr[0])) {
        uct_rc_varuna_op_never_sent(op);
        return UCS_ERR_IO_ERROR;
    }

    uct_rc_varuna_op_taken(iface, ep, op, signal, refused != NULL);
    return (refused == NULL) ? UCS_OK : UCS_ERR_IO_ERROR;
}

/* A new operation writes the log when LOG_INTERVAL operations have gone
 * on the active lane since its last log write, and the send queue and the
 * CQ have room for the second work request (else the next one does: a log
 * write later proves as much). */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_ep_new_op_logs(uct_rc_varuna_iface_t *iface,
                             uct_rc_varuna_ep_t *ep, uint64_t sn)
{
    return iface->config.log_enable &&
           ((sn - ep->lane[ep->active].log_sn) >=
            iface->config.log_interval) &&
           ucs_likely((uct_rc_txqp_available(&ep->super.txqp) >= 2) &&
                      (iface->super.tx.cq_available >= 2));
}

/*
 * Post a new operation on the active lane and make its number taken. One
 * posted while everything before it has completed is signaled: a flush
 * right behind a lone operation (MPI_Win_flush after a put, shmem_quiet)
 * then waits for its completion instead of posting an empty WRITE of its
 * own, which took such a put and flush from two packets to four (rc_verbs
 * signals every short put). A stream of operations still signals one in
 * tx_moderation.
 */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_ep_post_new(uct_rc_varuna_iface_t *iface, uct_rc_varuna_ep_t *ep,
                          uct_rc_varuna_op_t *op, int signal)
{
    ucs_status_t status;

    signal = signal || (ep->tx.done_sn == ep->tx.sn);

    if (op->ib_opcode == IBV_WR_SEND_WITH_IMM) {
        /* numbered when it surely goes out: a gap would stall the peer */
        op->am_seq = ++ep->tx.am_seq;
    }
    status    = uct_rc_varuna_ep_post_op(iface, ep, op, ep->active, signal,
                                         uct_rc_varuna_ep_new_op_logs(iface,
                                                                      ep,
                                                                      op->sn));
    ep->tx.sn = op->sn;
    if (ucs_unlikely(status != UCS_OK)) {
        uct_rc_varuna_ep_post_refused(ep);
    }
}


/* ------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------ */

/* Pending requests: while a failover holds new operations back, the
 * endpoint has no send resources, so a request is always queued (rc/base
 * would ask the caller to retry). */
ucs_status_t uct_rc_varuna_ep_pending_add(uct_ep_h tl_ep,
                                          uct_pending_req_t *req,
                                          unsigned flags)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);

    /* rc/base queues a request only when its credits are out: a failover
     * holds them back, a full ring that cannot grow is out of records,
     * not credits, and requests queued already go first. A ring that can
     * grow is no reason to queue: the request would wait for a completion
     * that may never come (all unsignaled) */
    if (ucs_unlikely(uct_rc_varuna_ep_tx_held(ep) ||
                     uct_rc_varuna_ep_no_record(iface, ep) ||
                     !ucs_arbiter_group_is_empty(&ep->super.arb_group))) {
        /* behind the requests already queued too (check_res refused it
         * for them), whatever the credits: the queue is scheduled */
        uct_pending_req_arb_group_push(&ep->super.arb_group, req);
        UCT_TL_EP_STAT_PEND(&ep->super.super);
        return UCS_OK;
    }
    return uct_rc_ep_pending_add(tl_ep, req, flags);
}


/* A put spends a pending fence without IBV_SEND_FENCE, as rc_verbs' puts do
 * on a device without an atomic key (uct_rc_ep_fence_put: UCX's weak fence).
 * Left pending, the fence went to the next READ or atomic, which rc_verbs
 * posts without it; and on Linux rxe (6.1) a fenced READ or atomic that
 * meets a retransmission timeout stops its QP for good
 * (contrib/rxe-vm/README.md, "How the backends differ"), so Open MPI
 * programs with MPI_Win_sync stalled over
 * rc_varuna and not over rc_verbs. */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_ep_fence_put(uct_rc_varuna_iface_t *iface,
                           uct_rc_varuna_ep_t *ep)
{
    (void)uct_rc_ep_fm(&iface->super, &ep->fi, 0);
}

ucs_status_t uct_rc_varuna_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_op_t *op;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->config.max_inline, "put_short");
    status = uct_rc_varuna_ep_admit(iface, ep, NULL, NULL);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    uct_rc_varuna_ep_fence_put(iface, ep);
    op              = uct_rc_varuna_ep_op_start(ep, UCT_RC_VARUNA_OP_PUT_SHORT,
                                                IBV_WR_RDMA_WRITE);
    op->send_flags  = IBV_SEND_INLINE;
    op->length      = length;
    op->remote_addr = remote_addr;
    op->rkey        = rkey;
    memcpy(uct_rc_varuna_op_inl(iface, op), buffer, length);

    UCT_TL_EP_STAT_OP(&ep->super.super, PUT, SHORT, length);
    uct_rc_varuna_ep_post_new(iface, ep, op, 0);
    return UCS_OK;
}

ssize_t uct_rc_varuna_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr,
                                   uct_rkey_t rkey)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_desc_t *desc;
    uct_rc_varuna_op_t *op;
    ucs_status_t status;
    size_t length;

    status = uct_rc_varuna_ep_admit(iface, ep, &iface->tx_mp, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    length = pack_cb(uct_rc_varuna_desc_data(desc), arg);
    if (ucs_unlikely(length == 0)) {
        ucs_mpool_put_inline(desc);
        return 0;
    }

    uct_rc_varuna_ep_fence_put(iface, ep);
    op              = uct_rc_varuna_ep_op_start(ep, UCT_RC_VARUNA_OP_PUT_BCOPY,
                                                IBV_WR_RDMA_WRITE);
    op->desc        = desc;
    op->desc_len    = (uint32_t)length;
    op->length      = (uint32_t)length;
    op->remote_addr = remote_addr;
    op->rkey        = rkey;

    UCT_TL_EP_STAT_OP(&ep->super.super, PUT, BCOPY, length);
    uct_rc_varuna_ep_post_new(iface, ep, op, 0);
    return length;
}

static ucs_status_t
uct_rc_varuna_ep_rdma_zcopy(uct_rc_varuna_iface_t *iface,
                            uct_rc_varuna_ep_t *ep, uint8_t type,
                            enum ibv_wr_opcode ib_opcode, const uct_iov_t *iov,
                            size_t iovcnt, uint64_t remote_addr,
                            uct_rkey_t rkey, uct_completion_t *comp,
                            size_t *length_p)
{
    uct_rc_varuna_op_t *op;
    ucs_status_t status;
    size_t length;

    status = uct_rc_varuna_ep_admit(iface, ep, NULL, NULL);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    op     = uct_rc_varuna_ep_op_start(ep, type, ib_opcode);
    length = uct_rc_varuna_op_add_iov(op, iov, iovcnt);
    if (ucs_unlikely(op->num_sge == 0)) {
        return UCS_OK; /* nothing to move; the record is not taken */
    }

    op->length      = (uint32_t)length;
    op->remote_addr = remote_addr;
    op->rkey        = rkey;
    op->comp        = comp;
    if (ib_opcode == IBV_WR_RDMA_READ) {
        op->send_flags |= uct_rc_ep_fm(&iface->super, &ep->fi, IBV_SEND_FENCE);
    } else {
        uct_rc_varuna_ep_fence_put(iface, ep);
    }

    *length_p = length;
    uct_rc_varuna_ep_post_new(iface, ep, op, comp != NULL);
    return UCS_INPROGRESS;
}

ucs_status_t uct_rc_varuna_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    size_t length                = 0;
    ucs_status_t status;

    UCT_CHECK_IOV_SIZE(iovcnt, iface->config.max_send_sge,
                       "uct_rc_varuna_ep_put_zcopy");
    UCT_CHECK_LENGTH(uct_iov_total_length(iov, iovcnt), 0,
                     iface->config.max_zcopy, "put_zcopy");
    status = uct_rc_varuna_ep_rdma_zcopy(iface, ep, UCT_RC_VARUNA_OP_PUT_ZCOPY,
                                         IBV_WR_RDMA_WRITE, iov, iovcnt,
                                         remote_addr, rkey, comp, &length);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super.super, PUT, ZCOPY, length);
    return status;
}

ucs_status_t uct_rc_varuna_ep_get_bcopy(uct_ep_h tl_ep,
                                        uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_desc_t *desc;
    uct_rc_varuna_op_t *op;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->super.super.config.seg_size,
                     "get_bcopy");
    status = uct_rc_varuna_ep_admit(iface, ep, &iface->tx_mp, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    op              = uct_rc_varuna_ep_op_start(ep, UCT_RC_VARUNA_OP_GET_BCOPY,
                                                IBV_WR_RDMA_READ);
    op->desc        = desc;
    op->desc_len    = (uint32_t)length;
    op->length      = (uint32_t)length;
    op->remote_addr = remote_addr;
    op->rkey        = rkey;
    op->comp        = comp;
    op->unpack_cb   = unpack_cb;
    op->unpack_arg  = arg;
    op->send_flags  = uct_rc_ep_fm(&iface->super, &ep->fi, IBV_SEND_FENCE);

    UCT_TL_EP_STAT_OP(&ep->super.super, GET, BCOPY, length);
    uct_rc_varuna_ep_post_new(iface, ep, op, 1);
    UCT_RC_RDMA_READ_POSTED(&iface->super, length);
    return UCS_INPROGRESS;
}

ucs_status_t uct_rc_varuna_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    size_t length                = 0;
    ucs_status_t status;

    UCT_CHECK_IOV_SIZE(iovcnt, iface->config.max_send_sge,
                       "uct_rc_varuna_ep_get_zcopy");
    UCT_CHECK_LENGTH(uct_iov_total_length(iov, iovcnt),
                     iface->super.super.config.max_inl_cqe[UCT_IB_DIR_TX] + 1,
                     iface->super.config.max_get_zcopy, "get_zcopy");

    status = uct_rc_varuna_ep_rdma_zcopy(iface, ep, UCT_RC_VARUNA_OP_GET_ZCOPY,
                                         IBV_WR_RDMA_READ, iov, iovcnt,
                                         remote_addr, rkey, comp, &length);
    if (status == UCS_INPROGRESS) {
        UCT_RC_RDMA_READ_POSTED(&iface->super, length);
        UCT_TL_EP_STAT_OP(&ep->super.super, GET, ZCOPY, length);
    }
    return status;
}

/* An active message through the posting path: SEND with the sequence
 * number as immediate data, solicited for event-driven receivers. */
static UCS_F_ALWAYS_INLINE uct_rc_varuna_op_t *
uct_rc_varuna_ep_am_start(uct_rc_varuna_ep_t *ep, uint8_t type, uint8_t am_id)
{
    uct_rc_varuna_op_t *op = uct_rc_varuna_ep_op_start(ep, type,
                                                       IBV_WR_SEND_WITH_IMM);

    op->send_flags = IBV_SEND_SOLICITED;
    op->am_id      = am_id;
    return op;
}

ucs_status_t uct_rc_varuna_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                       uint64_t hdr, const void *buffer,
                                       unsigned length)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_am_short_hdr_t *am;
    uct_rc_varuna_op_t *op;
    ucs_status_t status;

    UCT_RC_CHECK_AM_SHORT(id, length, uct_rc_am_short_hdr_t,
                          iface->config.max_inline);
    status = uct_rc_varuna_ep_am_admit(iface, ep, &id, NULL, NULL);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    op               = uct_rc_varuna_ep_am_start(ep, UCT_RC_VARUNA_OP_AM_SHORT,
                                                 id);
    op->send_flags  |= IBV_SEND_INLINE;
    op->length       = sizeof(*am) + length;
    am               = uct_rc_varuna_op_inl(iface, op);
    am->rc_hdr.am_id = id;
    am->am_hdr       = hdr;
    memcpy(am + 1, buffer, length);

    UCT_TL_EP_STAT_OP(&ep->super.super, AM, SHORT, sizeof(hdr) + length);
    uct_rc_varuna_ep_post_new(iface, ep, op, 0);
    uct_rc_varuna_ep_fc_sent(ep);
    return UCS_OK;
}

ucs_status_t uct_rc_varuna_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                           const uct_iov_t *iov, size_t iovcnt)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    size_t length                = uct_iov_total_length(iov, iovcnt);
    uct_rc_varuna_op_t *op;
    ucs_iov_iter_t iov_iter;
    uct_rc_hdr_t *rch;
    ucs_status_t status;

    UCT_RC_CHECK_AM_SHORT(id, length, uct_rc_hdr_t, iface->config.max_inline);
    status = uct_rc_varuna_ep_am_admit(iface, ep, &id, NULL, NULL);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    op              = uct_rc_varuna_ep_am_start(ep, UCT_RC_VARUNA_OP_AM_SHORT,
                                                id);
    op->send_flags |= IBV_SEND_INLINE;
    op->length      = (uint32_t)(sizeof(*rch) + length);
    rch             = uct_rc_varuna_op_inl(iface, op);
    rch->am_id      = id;
    ucs_iov_iter_init(&iov_iter);
    uct_iov_to_buffer(iov, iovcnt, &iov_iter, rch + 1, length);

    UCT_TL_EP_STAT_OP(&ep->super.super, AM, SHORT, length);
    uct_rc_varuna_ep_post_new(iface, ep, op, 0);
    uct_rc_varuna_ep_fc_sent(ep);
    return UCS_OK;
}

ssize_t uct_rc_varuna_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                  uct_pack_callback_t pack_cb, void *arg,
                                  unsigned flags)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_desc_t *desc;
    uct_rc_varuna_op_t *op;
    uct_rc_hdr_t *rch;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);
    status = uct_rc_varuna_ep_am_admit(iface, ep, &id, &iface->tx_mp, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    rch        = uct_rc_varuna_desc_data(desc);
    rch->am_id = id;
    length     = pack_cb(rch + 1, arg);

    op           = uct_rc_varuna_ep_am_start(ep, UCT_RC_VARUNA_OP_AM_BCOPY, id);
    op->desc     = desc;
    op->desc_len = (uint32_t)(sizeof(*rch) + length);
    op->length   = op->desc_len;

    UCT_TL_EP_STAT_OP(&ep->super.super, AM, BCOPY, length);
    uct_rc_varuna_ep_post_new(iface, ep, op, 0);
    uct_rc_varuna_ep_fc_sent(ep);
    return length;
}

ucs_status_t uct_rc_varuna_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                       const void *header,
                                       unsigned header_length,
                                       const uct_iov_t *iov, size_t iovcnt,
                                       unsigned flags, uct_completion_t *comp)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_desc_t *desc;
    uct_rc_varuna_op_t *op;
    uct_rc_hdr_t *rch;
    ucs_status_t status;
    size_t length;

    /* one gather entry carries the AM header */
    UCT_CHECK_IOV_SIZE(iovcnt, iface->config.max_send_sge - 1,
                       "uct_rc_varuna_ep_am_zcopy");
    UCT_RC_CHECK_AM_ZCOPY(id, header_length, uct_iov_total_length(iov, iovcnt),
                          iface->config.short_desc_size,
                          iface->super.super.config.seg_size);
    status = uct_rc_varuna_ep_am_admit(iface, ep, &id, &iface->short_desc_mp,
                                       &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    rch        = uct_rc_varuna_desc_data(desc);
    rch->am_id = id;
    memcpy(rch + 1, header, header_length);

    op           = uct_rc_varuna_ep_am_start(ep, UCT_RC_VARUNA_OP_AM_ZCOPY, id);
    op->desc     = desc;
    op->desc_len = sizeof(*rch) + header_length;
    length       = uct_rc_varuna_op_add_iov(op, iov, iovcnt);
    op->length   = (uint32_t)(op->desc_len + length);
    op->comp     = comp;

    UCT_TL_EP_STAT_OP(&ep->super.super, AM, ZCOPY, header_length + length);
    uct_rc_varuna_ep_post_new(iface, ep, op, comp != NULL);
    uct_rc_varuna_ep_fc_sent(ep);
    return UCS_INPROGRESS;
}

static ucs_status_t
uct_rc_varuna_ep_atomic(uct_rc_varuna_ep_t *ep, uint8_t type,
                        enum ibv_wr_opcode ib_opcode, uint64_t compare_add,
                        uint64_t swap, uint64_t remote_addr, uct_rkey_t rkey,
                        uint64_t *result, uct_completion_t *comp)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    uct_rc_varuna_desc_t *desc;
    uct_rc_varuna_op_t *op;
    ucs_status_t status;

    /* the responder's reply lands in the descriptor: the result of a
     * fetching atomic, or a value nobody reads */
    status = uct_rc_varuna_ep_admit(iface, ep, &iface->short_desc_mp, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    op              = uct_rc_varuna_ep_op_start(ep, type, ib_opcode);
    op->desc        = desc;
    op->desc_len    = sizeof(uint64_t);
    op->length      = sizeof(uint64_t);
    op->remote_addr = remote_addr;
    op->rkey        = rkey;
    op->compare_add = compare_add;
    op->swap        = swap;
    op->result      = result;
    op->comp        = comp;
    if (type == UCT_RC_VARUNA_OP_ATOMIC_FETCH) {
        op->send_flags = uct_rc_ep_fm(&iface->super, &ep->fi, IBV_SEND_FENCE);
    }

    UCT_TL_EP_STAT_ATOMIC(&ep->super.super);
    uct_rc_varuna_ep_post_new(iface, ep, op,
                              type == UCT_RC_VARUNA_OP_ATOMIC_FETCH);
    return (type == UCT_RC_VARUNA_OP_ATOMIC_FETCH) ? UCS_INPROGRESS : UCS_OK;
}

ucs_status_t uct_rc_varuna_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                            uint64_t value,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey)
{
    if (opcode != UCT_ATOMIC_OP_ADD) {
        return UCS_ERR_UNSUPPORTED;
    }
    return uct_rc_varuna_ep_atomic(ucs_derived_of(tl_ep, uct_rc_varuna_ep_t),
                                   UCT_RC_VARUNA_OP_ATOMIC_POST,
                                   IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                                   remote_addr, rkey, NULL, NULL);
}

ucs_status_t uct_rc_varuna_ep_atomic64_fetch(uct_ep_h tl_ep,
                                             uct_atomic_op_t opcode,
                                             uint64_t value, uint64_t *result,
                                             uint64_t remote_addr,
                                             uct_rkey_t rkey,
                                             uct_completion_t *comp)
{
    if (opcode != UCT_ATOMIC_OP_ADD) {
        return UCS_ERR_UNSUPPORTED;
    }
    return uct_rc_varuna_ep_atomic(ucs_derived_of(tl_ep, uct_rc_varuna_ep_t),
                                   UCT_RC_VARUNA_OP_ATOMIC_FETCH,
                                   IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                                   remote_addr, rkey, result, comp);
}

ucs_status_t uct_rc_varuna_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                             uint64_t swap,
                                             uint64_t remote_addr,
                                             uct_rkey_t rkey, uint64_t *result,
                                             uct_completion_t *comp)
{
    return uct_rc_varuna_ep_atomic(ucs_derived_of(tl_ep, uct_rc_varuna_ep_t),
                                   UCT_RC_VARUNA_OP_ATOMIC_FETCH,
                                   IBV_WR_ATOMIC_CMP_AND_SWP, compare, swap,
                                   remote_addr, rkey, result, comp);
}

/* An empty WRITE through the posting path: keeps the sequence numbering
 * uniform and, signaled, completes everything before it. */
static void uct_rc_varuna_ep_post_empty(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, uint8_t type,
                                        uct_completion_t *comp)
{
    uct_rc_varuna_op_t *op;

    op              = uct_rc_varuna_ep_op_start(ep, type, IBV_WR_RDMA_WRITE);
    op->send_flags  = IBV_SEND_INLINE;
    op->remote_addr = 0;
    op->rkey        = 0;
    op->comp        = comp;
    uct_rc_varuna_ep_post_new(iface, ep, op, type == UCT_RC_VARUNA_OP_FLUSH);
}

/*
 * Everything posted completes in order, so a flush needs a signaled request
 * behind the last operation, and only if that one went out unsignaled or a
 * completion is to be reported. When the last one went out signaled, the
 * completion is reported with it instead (op->flush_comp), as rc/base's
 * flush completions are: a put and a flush (MPI_Win_flush, shmem_quiet)
 * then take one WRITE, not two. Callers poll uct_ep_flush() until UCS_OK:
 * posting on every call would keep the queue from ever draining.
 */
ucs_status_t uct_rc_varuna_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    int cancel                   = !!(flags & UCT_FLUSH_FLAG_CANCEL);
    uct_rc_varuna_op_t *last;
    unsigned side;
    ucs_status_t status;

    if (ep->tx.done_sn == ep->tx.sn) {
        if (ucs_unlikely(!cancel && uct_rc_varuna_ep_tx_held(ep) &&
                         !ucs_arbiter_group_is_empty(&ep->super.arb_group))) {
            /* nothing in flight, but a failover (or a grow's drain)
             * holds back what the caller posted meanwhile (no send
             * credits: it went to the pending queue). Done is not done
             * yet: the flush waits there behind it
             * (uct_rc_varuna_ep_pending_add takes it). Said
             * done, a GET queued before the flush would be read by the
             * caller before its data came (MPI_Get, the accumulates of
             * osc ucx, through a link failure). A cancelling flush does
             * not wait (rc/base ignores flow control for it too): the
             * caller gives the endpoint up and purges what is pending. */
            return UCS_ERR_NO_RESOURCE;
        }
        UCT_TL_EP_STAT_FLUSH(&ep->super.super);
        return UCS_OK;
    }

    if (ucs_unlikely(ep->fo.state == UCT_RC_VARUNA_FO_DEAD)) {
        /* the error handler flushes the endpoint it was told about to
         * discard it, or the caller gives up what it took over */
        if (cancel && (ep->dead.owner == UCT_RC_VARUNA_OWNER_CALLER)) {
            ep->dead.owner = UCT_RC_VARUNA_OWNER_TRANSPORT;
        }
        uct_rc_varuna_ep_dead_complete(ep);
        if (ep->tx.done_sn != ep->tx.sn) {
            /* taken over: only purge or destroy end it. Until then its
             * operations are in flight, not failed: an interface flush
             * (UCP's worker flush, MPI_Win_flush_all, shmem_quiet) waits
             * for the purge instead of failing while UCP's lane failover
             * recovers them (the review of 0aa6934, finding 3) */
            return (comp == NULL) ? UCS_INPROGRESS :
                   (ucs_status_t)ep->dead.status;
        }
        UCT_TL_EP_STAT_FLUSH(&ep->super.super);
        return UCS_OK;
    }

    if (ucs_unlikely(cancel) &&
        !(ep->super.flags & UCT_RC_EP_FLAG_FLUSH_CANCEL)) {
        /* the QPs' flushes complete everything, a flush request included */
        ep->super.flags |= UCT_RC_EP_FLAG_FLUSH_CANCEL;
        if (ep->fo.state != UCT_RC_VARUNA_FO_IDLE) {
            /* a failover in progress has nothing left to recover */
            uct_rc_varuna_ep_fail(ep, UCS_ERR_CANCELED);
            return UCS_OK;
        }
        for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
            if (ep->lane[side].qp != NULL) {
                uct_ib_modify_qp(ep->lane[side].qp, IBV_QPS_ERR);
            }
        }
    }

    if ((comp != NULL) ||
        (uct_rc_txqp_unsignaled(&ep->super.txqp) != 0)) {
        if (!cancel && !uct_rc_fc_has_resources(&iface->super,
                                                &ep->super.fc)) {
            return UCS_ERR_NO_RESOURCE;
        }
        status = uct_rc_varuna_ep_check_res(iface, ep);
        if (status != UCS_OK) {
            return status;
        }
        if ((comp != NULL) && !cancel && (ep->tx.sig_sn == ep->tx.sn) &&
            (ep->fo.state == UCT_RC_VARUNA_FO_IDLE) &&
            ucs_arbiter_group_is_empty(&ep->super.arb_group)) {
            /* nothing waits to be posted before this flush: the last
             * operation posted is the last it waits for */
            last = uct_rc_varuna_ep_op(ep, ep->tx.sn);
            if (last->flush_comp == NULL) {
                last->flush_comp = comp;
                UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super.super);
                return UCS_INPROGRESS;
            }
        }
        uct_rc_varuna_ep_post_empty(iface, ep, UCT_RC_VARUNA_OP_FLUSH, comp);
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super.super);
    return UCS_INPROGRESS;
}

ucs_status_t uct_rc_varuna_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_rc_varuna_ep_t *ep = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);

    return uct_rc_ep_fence(tl_ep, &ep->fi, 1);
}

/* keepalive (uct_rc_ep_check): an empty WRITE; a dead peer shows up as an
 * error completion */
void uct_rc_varuna_ep_post_check(uct_ep_h tl_ep)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);

    if (uct_rc_varuna_ep_check_res(iface, ep) != UCS_OK) {
        return; /* operations in flight will show a dead peer anyway */
    }
    uct_rc_varuna_ep_post_empty(iface, ep, UCT_RC_VARUNA_OP_CHECK, NULL);
}

/* A pure flow-control grant; rc/base sends it when the peer asks. */
ucs_status_t uct_rc_varuna_ep_fc_ctrl(uct_ep_t *tl_ep, unsigned op_type,
                                      uct_rc_pending_req_t *req)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_op_t *op;
    uct_rc_hdr_t *rch;
    ucs_status_t status;

    ucs_assert(op_type == UCT_RC_EP_FC_PURE_GRANT);

    /* no FC window check here: a grant must never wait for a grant */
    status = uct_rc_varuna_ep_admit(iface, ep, NULL, NULL);
    if (status != UCS_OK) {
        return status;
    }

    op              = uct_rc_varuna_ep_am_start(ep, UCT_RC_VARUNA_OP_FC_GRANT,
                                                UCT_RC_EP_FC_PURE_GRANT);
    op->send_flags |= IBV_SEND_INLINE;
    op->length      = sizeof(*rch);
    rch             = uct_rc_varuna_op_inl(iface, op);
    rch->am_id      = UCT_RC_EP_FC_PURE_GRANT;
    uct_rc_varuna_ep_post_new(iface, ep, op, 0);
    return UCS_OK;
}

/* ------------------------------------------------------------------------
 * Address and connection
 * ------------------------------------------------------------------------ */

ucs_status_t uct_rc_varuna_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_ep_addr_t *a   = (uct_rc_varuna_ep_addr_t*)addr;
    uct_rc_varuna_side_t *sb     = &iface->side[UCT_RC_VARUNA_SIDE_STANDBY];
    unsigned side;

    memset(a, 0, sizeof(*a));
    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        if (ep->lane[side].qp != NULL) {
            uct_ib_pack_uint24(a->qp_num[side], ep->lane[side].qp->qp_num);
            uct_ib_pack_uint24(a->sq_psn[side], ep->lane[side].init_psn);
        }
        a->log_rkey[side] = uct_rc_varuna_log_rkey(ep, side);
    }
    a->log_addr = (uintptr_t)uct_rc_varuna_log_word(ep);

    if (ep->lane[UCT_RC_VARUNA_SIDE_STANDBY].qp != NULL) {
        a->flags       |= UCT_RC_VARUNA_EP_ADDR_FLAG_STANDBY;
        a->standby_lid  = sb->lid;
        if (sb->is_global) {
            a->flags |= UCT_RC_VARUNA_EP_ADDR_FLAG_GID;
            memcpy(a + 1, &sb->gid, sizeof(sb->gid));
        }
        if (uct_rc_varuna_md_port_down(uct_rc_varuna_iface_md(iface),
                                       UCT_RC_VARUNA_SIDE_STANDBY,
                                       sb->port_num)) {
            a->flags |= UCT_RC_VARUNA_EP_ADDR_FLAG_STANDBY_DOWN;
        }
    }
    return UCS_OK;
}

/*
 * One side of an endpoint pair starts re-protection (section 5.6): the one
 * whose primary port address is the smaller, then the one whose primary QP
 * number is. A total order, so the two sides always disagree. On RoCE the
 * port address is the GID: the local LID is 0 there, and UCX puts 0xC000
 * in the destination LID, so LIDs would make both sides the initiator.
 */
/* Our primary's address against the peer's, by the total order: < 0 makes
 * us the initiator of re-protection, 0 is our own QP (an endpoint
 * connected to itself) */
static int uct_rc_varuna_ep_addr_cmp(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep,
                                     const struct ibv_ah_attr *ah_attr,
                                     uint32_t peer_qpn)
{
    uint32_t qpn = ep->lane[UCT_RC_VARUNA_SIDE_PRIMARY].qp->qp_num;
    uint16_t lid = iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].lid;
    int cmp      = 0;

    if (!uct_ib_iface_is_roce(&iface->super.super)) {
        cmp = (lid > ah_attr->dlid) - (lid < ah_attr->dlid);
    }
    if ((cmp == 0) && ah_attr->is_global) {
        cmp = memcmp(&iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].gid,
                     &ah_attr->grh.dgid, sizeof(ah_attr->grh.dgid));
    }
    if (cmp == 0) {
        cmp = (qpn > peer_qpn) - (qpn < peer_qpn);
    }
    return cmp;
}

ucs_status_t uct_rc_varuna_ep_connect_to_ep(uct_ep_h tl_ep,
                                            const uct_device_addr_t *dev_addr,
                                            const uct_ep_addr_t *ep_addr)
{
    uct_rc_varuna_iface_t *iface     = ucs_derived_of(tl_ep->iface,
                                                      uct_rc_varuna_iface_t);
    uct_rc_varuna_ep_t *ep           = ucs_derived_of(tl_ep,
                                                      uct_rc_varuna_ep_t);
    const uct_rc_varuna_ep_addr_t *a = (const uct_rc_varuna_ep_addr_t*)ep_addr;
    uct_rc_varuna_lane_t *standby    = &ep->lane[UCT_RC_VARUNA_SIDE_STANDBY];
    uct_rc_varuna_side_t *sb         = &iface->side[UCT_RC_VARUNA_SIDE_STANDBY];
    struct ibv_ah_attr ah_attr;
    struct ibv_ah_attr ah_attr_primary;
    union ibv_gid peer_gid;
    int standby_down;
    enum ibv_mtu path_mtu;
    ucs_status_t status;
    unsigned side;
    int cmp;

    uct_ib_iface_fill_ah_attr_from_addr(&iface->super.super,
                                        (const uct_ib_address_t*)dev_addr,
                                        ep->super.path_index, &ah_attr,
                                        &path_mtu);
    status = uct_rc_varuna_lane_connect(iface, ep, UCT_RC_VARUNA_SIDE_PRIMARY,
                                        uct_ib_unpack_uint24(a->qp_num[0]),
                                        uct_ib_unpack_uint24(a->sq_psn[0]),
                                        &ah_attr, path_mtu);
    if (status != UCS_OK) {
        return status;
    }
    uct_rc_varuna_lane_set_state(ep, UCT_RC_VARUNA_SIDE_PRIMARY,
                                 UCT_RC_VARUNA_LANE_ACTIVE);
    ah_attr_primary = ah_attr;
    iface->fo.qp_connected++;

    ep->peer_log.addr = a->log_addr;
    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        ep->peer_log.rkey[side] = a->log_rkey[side];
    }

    cmp              = uct_rc_varuna_ep_addr_cmp(
                           iface, ep, &ah_attr_primary,
                           uct_ib_unpack_uint24(a->qp_num[0]));
    /* an endpoint connected to itself is both sides: it re-protects
     * alone (issue 48: with neither side the initiator, it never did) */
    ep->rp.self      = (cmp == 0);
    ep->rp.initiator = (cmp <= 0);
    ep->rp.connected = ucs_get_time();

    if ((standby->qp != NULL) &&
        (a->flags & UCT_RC_VARUNA_EP_ADDR_FLAG_STANDBY)) {
        standby_down = (a->flags & UCT_RC_VARUNA_EP_ADDR_FLAG_STANDBY_DOWN) ||
                       uct_rc_varuna_md_port_down(uct_rc_varuna_iface_md(iface),
                                                  UCT_RC_VARUNA_SIDE_STANDBY,
                                                  sb->port_num);
        if (a->flags & UCT_RC_VARUNA_EP_ADDR_FLAG_GID) {
            memcpy(&peer_gid, a + 1, sizeof(peer_gid));
        }
        uct_rc_varuna_lane_ah(iface, ep, UCT_RC_VARUNA_SIDE_STANDBY,
                              a->standby_lid,
                              (a->flags & UCT_RC_VARUNA_EP_ADDR_FLAG_GID) ?
                              &peer_gid : NULL, &ah_attr);
        /* what re-protection connects the lane to if it cannot be
         * connected now (uct_rc_varuna_lane_connect records it too) */
        ep->peer.qpn[UCT_RC_VARUNA_SIDE_STANDBY] =
                uct_ib_unpack_uint24(a->qp_num[1]);
        ep->peer.ah[UCT_RC_VARUNA_SIDE_STANDBY] = ah_attr;
        if (standby_down) {
            /* a port of the standby lane is down (a process started, or
             * an endpoint created, during a link failure): re-protection
             * connects the lane once both ports are up */
            uct_rc_varuna_ep_standby_later(ep, "standby port down");
        } else if (uct_rc_varuna_lane_connect(iface, ep,
                                              UCT_RC_VARUNA_SIDE_STANDBY,
                                              uct_ib_unpack_uint24(a->qp_num[1]),
                                              uct_ib_unpack_uint24(a->sq_psn[1]),
                                              &ah_attr, path_mtu) != UCS_OK) {
            /* its QP refused a transition (above): the endpoint works
             * without a standby for now, as when its port is down. It
             * used to fail the whole endpoint (the review of 0aa6934,
             * risk 11). Re-protection resets the QP and tries again; when
             * the peer starts it, it is told (REPROTECT_ASK). */
            ep->rp.ask = 1; /* the peer's side may be connected */
            uct_rc_varuna_ep_standby_later(ep, "the standby lane could not "
                                           "be connected");
        } else {
            uct_rc_varuna_lane_set_state(ep, UCT_RC_VARUNA_SIDE_STANDBY,
                                         UCT_RC_VARUNA_LANE_STANDBY);
            iface->fo.qp_connected++;
        }
    } else if (standby->qp != NULL) {
        ucs_diag("rc_varuna: ep %p: the peer has no standby lane, failover "
                 "is off for this endpoint", ep);
    }

    ep->active       = UCT_RC_VARUNA_SIDE_PRIMARY;
    ep->super.flags |= UCT_RC_EP_FLAG_CONNECTED;
    return UCS_OK;
}

/* Both lanes to the error state: the endpoint is dead, nothing fails over
 * (the UCT fault-injection hook used by UCX's peer-failure tests). */
ucs_status_t uct_rc_varuna_ep_invalidate(uct_ep_h tl_ep, unsigned flags)
{
    uct_rc_varuna_ep_t *ep = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    unsigned side;

    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        if (ep->lane[side].qp != NULL) {
            uct_ib_modify_qp(ep->lane[side].qp, IBV_QPS_ERR);
        }
    }
    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        if (ep->lane[side].state == UCT_RC_VARUNA_LANE_STANDBY) {
            uct_rc_varuna_lane_set_state(ep, side, UCT_RC_VARUNA_LANE_FAILED);
        }
    }
    return UCS_OK;
}

void uct_rc_varuna_ep_vfs_populate(uct_rc_ep_t *rc_ep)
{
    uct_rc_iface_t *rc_iface = ucs_derived_of(rc_ep->super.super.iface,
                                              uct_rc_iface_t);
    uct_rc_varuna_ep_t *ep   = ucs_derived_of(rc_ep, uct_rc_varuna_ep_t);

    ucs_vfs_obj_add_dir(rc_iface, ep, "ep/%p", ep);
    ucs_vfs_obj_add_ro_file(ep, ucs_vfs_show_primitive,
                            &ep->lane[UCT_RC_VARUNA_SIDE_PRIMARY].qp->qp_num,
                            UCS_VFS_TYPE_U32_HEX, "qp_num");
    if (ep->lane[UCT_RC_VARUNA_SIDE_STANDBY].qp != NULL) {
        ucs_vfs_obj_add_ro_file(ep, ucs_vfs_show_primitive,
                                &ep->lane[UCT_RC_VARUNA_SIDE_STANDBY].qp->qp_num,
                                UCS_VFS_TYPE_U32_HEX, "standby_qp_num");
    }
    ucs_vfs_obj_add_ro_file(ep, ucs_vfs_show_primitive, &ep->tx.sn,
                            UCS_VFS_TYPE_ULONG, "sn");
    uct_rc_txqp_vfs_populate(&ep->super.txqp, ep);
}

/*
 * The replay ring is full: twice as many records, up to one per send
 * credit. An endpoint keeps a record per operation until the operation
 * completes, so its ring is as large as what it has had in flight at
 * once; a job's many endpoints that each have a few operations in flight
 * keep a few records each (a ring of every credit was 80 to 150 KB per
 * endpoint). Records hold no pointers into the ring, and nothing outside
 * holds one across calls, so the live ones are copied to the same
 * sequence numbers' places in the new ring.
 */
ucs_status_t uct_rc_varuna_ep_ring_grow(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep)
{
    unsigned size     = ep->tx.ring_mask + 1;
    unsigned new_mask = (2 * size) - 1;
    uint8_t *ring;
    uint64_t sn;

    if (size >= ucs_roundup_pow2(iface->config.tx_max_wr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    ring = ucs_malloc((size_t)(new_mask + 1) * iface->config.op_size,
                      "rc_varuna_ops");
    if (ring == NULL) {
        return UCS_ERR_NO_RESOURCE; /* its operations wait, as when full */
    }
    for (sn = ep->tx.done_sn + 1; sn <= ep->tx.sn; sn++) {
        memcpy(ring + ((sn & new_mask) * iface->config.op_size),
               uct_rc_varuna_ep_op(ep, sn), iface->config.op_size);
    }
    ucs_free(ep->tx.ring);
    ep->tx.ring      = ring;
    ep->tx.ring_mask = new_mask;
    return UCS_OK;
}

/* ------------------------------------------------------------------------
 * Class
 * ------------------------------------------------------------------------ */

UCS_CLASS_INIT_FUNC(uct_rc_varuna_ep_t, const uct_ep_params_t *params)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(params->iface,
                                                  uct_rc_varuna_iface_t);
    ucs_status_t status;

    /* rc/base only names statistics with the QP number */
    UCS_CLASS_CALL_SUPER_INIT(uct_rc_ep_t, &iface->super, 0, params);

    /* the class allocator does not zero: every field starts here */
    memset(self->lane, 0, sizeof(self->lane));
    memset(&self->tx, 0, sizeof(self->tx));
    memset(&self->fo, 0, sizeof(self->fo));
    memset(&self->rp, 0, sizeof(self->rp));
    memset(&self->fb, 0, sizeof(self->fb));
    memset(&self->gr, 0, sizeof(self->gr));
    memset(&self->ctrl, 0, sizeof(self->ctrl));
    memset(&self->peer, 0, sizeof(self->peer));
    memset(&self->peer_log, 0, sizeof(self->peer_log));
    self->log           = NULL;
    self->dead.owner    = UCT_RC_VARUNA_OWNER_TRANSPORT;
    self->dead.status   = UCS_OK;
    self->dead.callers  = 0;
    self->active        = UCT_RC_VARUNA_SIDE_PRIMARY;
    self->rx.am_seq     = 0;
    ucs_list_head_init(&self->rx.held);
    self->fo.state      = UCT_RC_VARUNA_FO_IDLE;
    ucs_list_head_init(&self->fo.list);
    ucs_list_head_init(&self->rp.list);
    self->tx.ring_mask = ucs_min(UCT_RC_VARUNA_RING_INIT,
                                 ucs_roundup_pow2(iface->config.tx_max_wr)) -
                         1;
    self->tx.ring      = ucs_calloc(self->tx.ring_mask + 1,
                                    iface->config.op_size, "rc_varuna_ops");
    if (self->tx.ring == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    status = uct_rc_varuna_log_alloc(iface, self);
    if (status != UCS_OK) {
        goto err_free_ring;
    }

    status = uct_rc_varuna_lane_create(iface, self, UCT_RC_VARUNA_SIDE_PRIMARY);
    if (status != UCS_OK) {
        goto err_free_log;
    }

    if (iface->has_standby) {
        status = uct_rc_varuna_lane_create(iface, self,
                                           UCT_RC_VARUNA_SIDE_STANDBY);
        if (status != UCS_OK) {
            goto err_destroy_primary;
        }
    }

    self->tx.wr_limit = iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].tx_max_wr;
    self->tx.wr_owned = self->tx.wr_limit;
    uct_rc_txqp_available_set(&self->super.txqp, self->tx.wr_limit);
    uct_ib_fence_info_init(&self->fi);
    self->active = UCT_RC_VARUNA_SIDE_PRIMARY;
    return UCS_OK;

err_destroy_primary:
    /* nothing was posted on it: no cleanup to wait for. rc/base's table
     * and the endpoint list are left as before this endpoint (the class
     * framework runs uct_rc_ep_t's cleanup, which leaves both alone) */
    uct_rc_iface_remove_qp(&iface->super, self->lane[0].qp->qp_num);
    uct_ib_device_async_event_unregister(uct_ib_iface_device(&iface->super.super),
                                         IBV_EVENT_QP_LAST_WQE_REACHED,
                                         self->lane[0].qp->qp_num);
    uct_ib_destroy_qp(self->lane[0].qp);
    self->lane[0].qp = NULL;
err_free_log:
    uct_rc_varuna_log_free(iface, self);
err_free_ring:
    ucs_free(self->tx.ring);
err:
    ucs_list_del(&self->super.list);
    return status;
}

UCS_CLASS_CLEANUP_FUNC(uct_rc_varuna_ep_t)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(self);
    uint16_t outstanding;

    /* gives back held credits; control requests still posted hold CQ
     * entries too */
    uct_rc_varuna_ep_failover_cleanup(self, UCT_RC_VARUNA_FO_IDLE);
    uct_rc_varuna_ep_fail_cancel(self);
    uct_rc_varuna_ep_unwatch(self);
    outstanding = self->tx.wr_owned -
                  uct_rc_txqp_available(&self->super.txqp) +
                  self->ctrl.inflight[0] + self->ctrl.inflight[1];
    /* the control requests' entries come back with the operations' (when
     * the QP is gone): the control share is whole again now, the
     * operations' share that much smaller until then */
    iface->fo.ctrl_cq_available  += self->ctrl.inflight[0] +
                                    self->ctrl.inflight[1];
    iface->super.tx.cq_available -= self->ctrl.inflight[0] +
                                    self->ctrl.inflight[1];
    uct_rc_varuna_ep_rx_held_release(self);
    uct_rc_varuna_ep_purge(self, UCS_ERR_CANCELED);
    /* the primary lane's cleanup returns the CQ credits of everything
     * still posted on either lane: those CQEs vanish with the QPs */
    uct_rc_varuna_lane_destroy(iface, self, UCT_RC_VARUNA_SIDE_STANDBY, 0);
    uct_rc_varuna_lane_destroy(iface, self, UCT_RC_VARUNA_SIDE_PRIMARY,
                               outstanding);
    uct_rc_varuna_log_free(iface, self);
    ucs_free(self->tx.ring);
}

UCS_CLASS_DEFINE(uct_rc_varuna_ep_t, uct_rc_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_rc_varuna_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_rc_varuna_ep_t, uct_ep_t);
