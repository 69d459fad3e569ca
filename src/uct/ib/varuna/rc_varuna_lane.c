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
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>


/*
 * Lanes: the two RC QPs of an endpoint (DESIGN.md section 3), one on the
 * primary port and one on the standby port. Here a lane's QP is created,
 * connected, fenced (moved to ERR when it fails), reset for re-protection
 * and destroyed; what a lane carries and when it changes role is decided
 * by the failover (rc_varuna_failover.c) and re-protection
 * (rc_varuna_reprotect.c).
 */


/* Cleanup of a lane's QP once the device says it has left the SRQ */
typedef struct {
    uct_rc_iface_qp_cleanup_ctx_t super;
    struct ibv_qp                 *qp;
    uct_ib_device_t               *dev;       /* the QP's device */
    unsigned                      side;
} uct_rc_varuna_qp_cleanup_ctx_t;

/* The QP is gone: so are the LAST_WQE_REACHED events counted for it */
static void uct_rc_varuna_qp_cleanup_forget(uct_rc_varuna_qp_cleanup_ctx_t *ctx)
{
    uct_rc_varuna_md_t *md = ucs_derived_of(ctx->super.iface->super.super.md,
                                            uct_rc_varuna_md_t);

    uct_rc_varuna_md_last_wqe_forget(md, ctx->side, ctx->super.qp_num);
}


/* ------------------------------------------------------------------------
 * Lanes
 * ------------------------------------------------------------------------ */

/*
 * The only place a lane's state changes (idle, active, standby, failed,
 * reconnecting: uct_rc_varuna_lane_state_t), as uct_rc_varuna_ep_fo_enter()
 * is for the failover's. The lane state is a state machine of its own,
 * moved by the endpoint's connection, the failover, re-protection and the
 * endpoint's end; each change is logged by name at debug level
 * ("lane 1 failed -> reconnecting"). Setting the state a lane already has
 * (fencing a lane that failed before) is not a transition and logs
 * nothing.
 */
void uct_rc_varuna_lane_set_state(uct_rc_varuna_ep_t *ep, unsigned side,
                                  uct_rc_varuna_lane_state_t state)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[side];

    if (lane->state != state) {
        ucs_debug("rc_varuna: ep %p: lane %u %s -> %s", ep, side,
                  uct_rc_varuna_lane_state_str(
                          (uct_rc_varuna_lane_state_t)lane->state),
                  uct_rc_varuna_lane_state_str(state));
    }
    lane->state = (uint8_t)state;
}

/* rc_varuna chooses the initial PSNs of its QPs (section 3.4); random ones
 * also exercise the 24-bit wrap. A new connection has no log write yet: one
 * of the old connection, which may have been lost with it, must not mark
 * the operations of the new one lost. */
uint32_t uct_rc_varuna_lane_new_psn(uct_rc_varuna_lane_t *lane)
{
    lane->sq_psn   = (uint32_t)ucs_generate_uuid((uintptr_t)lane) &
                     UCT_RC_VARUNA_PSN_MASK;
    lane->init_psn = lane->sq_psn;
    lane->log_sn   = 0;
    return lane->sq_psn;
}

static ucs_status_t uct_rc_varuna_qp_init(uct_rc_varuna_iface_t *iface,
                                          struct ibv_qp *qp, unsigned side)
{
    uct_rc_varuna_side_t *s = &iface->side[side];
    struct ibv_qp_attr qp_attr;

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state        = IBV_QPS_INIT;
    qp_attr.pkey_index      = s->pkey_index;
    qp_attr.port_num        = s->port_num;
    qp_attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
                              IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp, &qp_attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        ucs_error("rc_varuna: failed to move QP 0x%x to INIT: %m",
                  qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static uct_ib_device_t *uct_rc_varuna_side_dev(uct_rc_varuna_iface_t *iface,
                                               unsigned side)
{
    uct_rc_varuna_md_t *md = ucs_derived_of(iface->super.super.super.md,
                                            uct_rc_varuna_md_t);

    return iface->side[side].separate ? &md->standby_md->dev : &md->super.dev;
}

/*
 * May the QP of a failed lane go back to RESET, so that no completion of
 * its old incarnation can be taken for one of the new (which keeps the QP
 * number, so the CQs cannot tell them apart)?
 * - Send queue: every WR posted on the lane has completed. A QP in ERR
 *   completes each one, flushed, in order (IBA 10.7.3.1, 11.2.4.4); the
 *   failover's drain marker (active lane) or the control WR count
 *   (standby lane) tells when the last one is in.
 * - Receive side: the QP takes its receives from the SRQ, which is not
 *   flushed per QP. LAST_WQE_REACHED says the QP has taken its last one
 *   (IBA 11.6.3), but Linux rxe (kernel 6.1) never raises it, so it is
 *   awaited for at most UCX_RC_VARUNA_LAST_WQE_TIMEOUT after the move to
 *   ERR: a QP in ERR accepts no request, so only a receive it was in the
 *   middle of can still end, and its completion (success or flush) goes to
 *   the same endpoint and lane either way: an active message is dropped as
 *   a duplicate by its sequence number, a flushed receive only returns its
 *   buffer (uct_rc_varuna_iface_poll_rx).
 * An event given up on is kept from UCX when it comes late, or UCX would
 * take it for the event of the QP's destruction.
 */
static ucs_status_t uct_rc_varuna_lane_quiesced(uct_rc_varuna_iface_t *iface,
                                                uct_rc_varuna_ep_t *ep,
                                                unsigned side)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[side];
    uct_rc_varuna_md_t *md     = uct_rc_varuna_iface_md(iface);
    uint32_t seen;

    if ((ep->ctrl.inflight[side] != 0) ||
        ((ep->fo.state != UCT_RC_VARUNA_FO_IDLE) &&
         (ep->fo.failed_lane == side))) {
        return UCS_ERR_BUSY;
    }

    seen = uct_rc_varuna_md_last_wqe_count(md, side, lane->qp->qp_num) +
           lane->lwr_given_up;
    if (seen >= lane->err_count) {
        return UCS_OK;
    }

    if (ucs_get_time() < lane->err_time + iface->config.last_wqe_timeout) {
        return UCS_ERR_BUSY;
    }

    ucs_debug("rc_varuna: ep %p: qp 0x%x: no LAST_WQE_REACHED %.0f ms after "
              "its move to the error state, resetting it anyway", ep,
              lane->qp->qp_num,
              ucs_time_to_msec(iface->config.last_wqe_timeout));
    uct_rc_varuna_md_last_wqe_skip(md, side, lane->qp->qp_num,
                                   lane->err_count - seen);
    lane->lwr_given_up += lane->err_count - seen;
    return UCS_OK;
}

/*
 * Re-protection (section 5.6): the QP of a failed lane goes back to RESET
 * and INIT with a new initial PSN, keeping its number, so the peer's
 * address of it stays valid. Off the critical path: the endpoint runs on
 * its other lane meanwhile. The QP left the SRQ when it failed; a new
 * LAST_WQE_REACHED must be awaited when it is destroyed, so its record is
 * made anew.
 */
ucs_status_t uct_rc_varuna_lane_reset(uct_rc_varuna_iface_t *iface,
                                      uct_rc_varuna_ep_t *ep, unsigned side)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[side];
    uct_ib_device_t *dev       = uct_rc_varuna_side_dev(iface, side);
    struct ibv_qp_attr qp_attr;
    ucs_status_t status;

    status = uct_rc_varuna_lane_quiesced(iface, ep, side);
    if (status != UCS_OK) {
        return status;
    }

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state = IBV_QPS_RESET;
    if (ibv_modify_qp(lane->qp, &qp_attr, IBV_QP_STATE)) {
        ucs_error("rc_varuna: failed to reset QP 0x%x: %m", lane->qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }

    uct_ib_device_async_event_unregister(dev, IBV_EVENT_QP_LAST_WQE_REACHED,
                                         lane->qp->qp_num);
    status = uct_ib_device_async_event_register(dev,
                                                IBV_EVENT_QP_LAST_WQE_REACHED,
                                                lane->qp->qp_num);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_rc_varuna_qp_init(iface, lane->qp, side);
    if (status != UCS_OK) {
        return status;
    }

    uct_rc_varuna_lane_new_psn(lane);
    uct_rc_varuna_lane_set_state(ep, side, UCT_RC_VARUNA_LANE_RECONNECTING);
    return UCS_OK;
}

/*
 * The same for a lane whose QP is longer than its side's (a grow gave it
 * the primary's length, and a failback left it the standby): a queue
 * cannot shrink, so a new QP of the side's length takes its place, in INIT
 * with a new first PSN as a reset leaves it. The old QP, in the error
 * state since the lane failed, is handed back to the caller, who destroys
 * it once the peer has the new number (rc_varuna_grow.c).
 */
ucs_status_t uct_rc_varuna_lane_renew(uct_rc_varuna_iface_t *iface,
                                      uct_rc_varuna_ep_t *ep, unsigned side,
                                      struct ibv_qp **old_qp_p)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[side];
    struct ibv_qp *qp;
    ucs_status_t status;

    ucs_assert(side != UCT_RC_VARUNA_SIDE_PRIMARY);
    status = uct_rc_varuna_lane_quiesced(iface, ep, side);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_rc_varuna_qp_create(iface, ep, side,
                                     iface->side[side].tx_qp_len, &qp);
    if (status != UCS_OK) {
        return status;
    }

    *old_qp_p          = lane->qp;
    lane->qp           = qp;
    lane->err_count    = 0;
    lane->lwr_given_up = 0;
    uct_rc_varuna_lane_set_len(lane, &iface->side[side]);
    uct_rc_varuna_lane_new_psn(lane);
    uct_rc_varuna_lane_set_state(ep, side, UCT_RC_VARUNA_LANE_RECONNECTING);
    return UCS_OK;
}

/* The send queue a lane's QP has: its side's, or the primary's once the
 * standby's short queue was replaced (rc_varuna_grow.c) */
void uct_rc_varuna_lane_set_len(uct_rc_varuna_lane_t *lane,
                                const uct_rc_varuna_side_t *len)
{
    lane->max_wr     = len->tx_max_wr;
    lane->moderation = len->tx_moderation;
}

/*
 * A QP of an endpoint on a side's port, in INIT, known to the side's QP
 * table and awaited for its LAST_WQE_REACHED: a lane's, or the full-length
 * one that replaces a short queue (rc_varuna_grow.c).
 */
ucs_status_t uct_rc_varuna_qp_create(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep, unsigned side,
                                     unsigned qp_len, struct ibv_qp **qp_p)
{
    uct_rc_varuna_side_t *s = &iface->side[side];
    uct_ib_device_t *dev    = uct_rc_varuna_side_dev(iface, side);
    struct ibv_qp_init_attr qp_init_attr;
    struct ibv_qp *qp;
    ucs_status_t status;

    memset(&qp_init_attr, 0, sizeof(qp_init_attr));
    qp_init_attr.send_cq             = s->cq[UCT_IB_DIR_TX];
    qp_init_attr.recv_cq             = s->cq[UCT_IB_DIR_RX];
    qp_init_attr.srq                 = s->srq;
    qp_init_attr.qp_type             = IBV_QPT_RC;
    qp_init_attr.sq_sig_all          = 0;
    qp_init_attr.cap.max_send_wr     = qp_len;
    qp_init_attr.cap.max_recv_wr     = 0;
    qp_init_attr.cap.max_send_sge    = iface->super.config.tx_min_sge;
    qp_init_attr.cap.max_recv_sge    = 1;
    qp_init_attr.cap.max_inline_data = iface->super.config.tx_min_inline;

    qp = ibv_create_qp(s->pd, &qp_init_attr);
    if (qp == NULL) {
        ucs_error("rc_varuna: failed to create a QP on %s:%d: %m",
                  uct_ib_device_name(dev), s->port_num);
        return UCS_ERR_IO_ERROR;
    }
    iface->fo.qp_created++;

    status = uct_rc_varuna_qp_init(iface, qp, side);
    if (status != UCS_OK) {
        goto err_destroy;
    }

    status = uct_ib_device_async_event_register(dev,
                                                IBV_EVENT_QP_LAST_WQE_REACHED,
                                                qp->qp_num);
    if (status != UCS_OK) {
        goto err_destroy;
    }

    status = uct_rc_varuna_iface_add_qp(iface, ep, side, qp->qp_num);
    if (status != UCS_OK) {
        goto err_unregister;
    }

    *qp_p = qp;
    return UCS_OK;

err_unregister:
    uct_ib_device_async_event_unregister(dev, IBV_EVENT_QP_LAST_WQE_REACHED,
                                         qp->qp_num);
err_destroy:
    ibv_destroy_qp(qp);
    return status;
}

ucs_status_t uct_rc_varuna_lane_create(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep,
                                       unsigned side)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[side];
    ucs_status_t status;

    status = uct_rc_varuna_qp_create(iface, ep, side,
                                     iface->side[side].tx_qp_len, &lane->qp);
    if (status != UCS_OK) {
        lane->qp = NULL;
        return status;
    }

    uct_rc_varuna_lane_set_len(lane, &iface->side[side]);
    uct_rc_varuna_lane_new_psn(lane);
    uct_rc_varuna_lane_set_state(ep, side, UCT_RC_VARUNA_LANE_IDLE);
    return UCS_OK;
}

/* A QP to RTR and RTS toward the peer's QP dest_qpn */
ucs_status_t uct_rc_varuna_qp_connect(uct_rc_varuna_iface_t *iface,
                                      struct ibv_qp *qp, uint32_t dest_qpn,
                                      uint32_t rq_psn, uint32_t sq_psn,
                                      struct ibv_ah_attr *ah_attr,
                                      enum ibv_mtu path_mtu)
{
    struct ibv_qp_attr qp_attr;
    char buf[128];

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state           = IBV_QPS_RTR;
    qp_attr.dest_qp_num        = dest_qpn;
    qp_attr.rq_psn             = rq_psn;
    qp_attr.path_mtu           = path_mtu;
    qp_attr.max_dest_rd_atomic = iface->super.config.max_rd_atomic;
    qp_attr.min_rnr_timer      = iface->super.config.min_rnr_timer;
    qp_attr.ah_attr            = *ah_attr;
    if (ibv_modify_qp(qp, &qp_attr, IBV_QP_STATE | IBV_QP_AV |
                      IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        ucs_error("rc_varuna: failed to move QP 0x%x to RTR: %m",
                  qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state      = IBV_QPS_RTS;
    qp_attr.sq_psn        = sq_psn;
    qp_attr.timeout       = iface->super.config.timeout;
    qp_attr.rnr_retry     = iface->super.config.rnr_retry;
    qp_attr.retry_cnt     = iface->super.config.retry_cnt;
    qp_attr.max_rd_atomic = iface->super.config.max_rd_atomic;
    if (ibv_modify_qp(qp, &qp_attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
                      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC)) {
        ucs_error("rc_varuna: failed to move QP 0x%x to RTS: %m",
                  qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }

    ucs_debug("rc_varuna: connected qp 0x%x port %d to qp 0x%x %s psn 0x%x/0x%x",
              qp->qp_num, ah_attr->port_num, dest_qpn,
              uct_ib_ah_attr_str(buf, sizeof(buf), ah_attr), sq_psn, rq_psn);
    return UCS_OK;
}

ucs_status_t uct_rc_varuna_lane_connect(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, unsigned side,
                                        uint32_t dest_qpn, uint32_t rq_psn,
                                        struct ibv_ah_attr *ah_attr,
                                        enum ibv_mtu path_mtu)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[side];
    ucs_status_t status;

    status = uct_rc_varuna_qp_connect(iface, lane->qp, dest_qpn, rq_psn,
                                      lane->sq_psn, ah_attr, path_mtu);
    if (status != UCS_OK) {
        return status;
    }

    lane->path_mtu          = (uint32_t)uct_ib_mtu_value(path_mtu);
    /* what re-protection needs to connect this lane again */
    ep->peer.qpn[side]      = dest_qpn;
    ep->peer.ah[side]       = *ah_attr;
    ep->peer.path_mtu       = path_mtu;
    return UCS_OK;
}

static unsigned uct_rc_varuna_standby_qp_cleanup_progress(void *arg)
{
    uct_rc_varuna_qp_cleanup_ctx_t *ctx = arg;

    uct_ib_device_async_event_unregister(ctx->dev,
                                         IBV_EVENT_QP_LAST_WQE_REACHED,
                                         ctx->super.qp_num);
    uct_ib_destroy_qp(ctx->qp);
    uct_rc_varuna_qp_cleanup_forget(ctx);
    ucs_list_del(&ctx->super.list);
    ucs_free(ctx);
    return 1;
}

/*
 * Move a QP of the standby side (a lane's, or one a grow replaced or gave
 * up) to the error state and destroy it once its device says it will take
 * nothing more from the SRQ (LAST_WQE_REACHED).
 */
void uct_rc_varuna_qp_destroy(uct_rc_varuna_iface_t *iface,
                              uct_rc_varuna_ep_t *ep, unsigned side,
                              struct ibv_qp *qp)
{
    uct_rc_varuna_qp_cleanup_ctx_t *ctx;
    ucs_status_t status;

    ucs_assert(side != UCT_RC_VARUNA_SIDE_PRIMARY);
    uct_ib_modify_qp(qp, IBV_QPS_ERR);
    uct_rc_varuna_iface_remove_qp(iface, side, qp->qp_num);

    ctx = ucs_malloc(sizeof(*ctx), "rc_varuna_qp_cleanup_ctx");
    if (ctx == NULL) {
        /* out of memory: no waiting for LAST_WQE_REACHED, the QP goes now
         * (a receive buffer it still held is lost with it) */
        ucs_warn("rc_varuna: out of memory, qp 0x%x destroyed without "
                 "waiting for its last WQE", qp->qp_num);
        uct_ib_device_async_event_unregister(uct_rc_varuna_side_dev(iface,
                                                                    side),
                                             IBV_EVENT_QP_LAST_WQE_REACHED,
                                             qp->qp_num);
        uct_ib_destroy_qp(qp);
        return;
    }
    ctx->qp               = qp;
    ctx->side             = side;
    ctx->dev              = uct_rc_varuna_side_dev(iface, side);
    ctx->super.super.cbq  = &iface->super.super.super.worker->super.progress_q;
    ctx->super.super.cb   = uct_rc_varuna_standby_qp_cleanup_progress;
    ctx->super.iface      = &iface->super;
    ctx->super.qp_num     = qp->qp_num;
    ctx->super.cq_credits = 0; /* rc/base's, of the primary lane only */
    ucs_list_add_tail(&iface->standby_gc_list, &ctx->super.list);
    status = uct_ib_device_async_event_wait(ctx->dev,
                                            IBV_EVENT_QP_LAST_WQE_REACHED,
                                            ctx->super.qp_num,
                                            &ctx->super.super);
    if (status != UCS_OK) {
        /* not registered for the event: nothing to wait for */
        ucs_callbackq_add_safe(ctx->super.super.cbq, ctx->super.super.cb,
                               ctx, UCS_CALLBACKQ_FLAG_ONESHOT);
    }
}

/*
 * Destroy a lane's QP once the device says it will take nothing more from
 * the SRQ. The primary lane goes through rc/base, which also returns its
 * CQ credits; the standby lane, possibly on another device, waits on that
 * device.
 */
void uct_rc_varuna_lane_destroy(uct_rc_varuna_iface_t *iface,
                                uct_rc_varuna_ep_t *ep, unsigned side,
                                uint16_t cq_credits)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[side];
    uct_rc_varuna_qp_cleanup_ctx_t *ctx;

    if (lane->qp == NULL) {
        return;
    }

    if (side != UCT_RC_VARUNA_SIDE_PRIMARY) {
        uct_rc_varuna_qp_destroy(iface, ep, side, lane->qp);
        lane->qp = NULL;
        return;
    }

    uct_ib_modify_qp(lane->qp, IBV_QPS_ERR);
    ctx = ucs_malloc(sizeof(*ctx), "rc_varuna_qp_cleanup_ctx");
    if (ctx == NULL) {
        /* out of memory: no waiting for LAST_WQE_REACHED, the QP goes now
         * (a receive buffer it still held is lost with it) */
        ucs_warn("rc_varuna: out of memory, qp 0x%x destroyed without "
                 "waiting for its last WQE", lane->qp->qp_num);
        ucs_list_del(&ep->super.list);
        uct_rc_iface_remove_qp(&iface->super, lane->qp->qp_num);
        uct_rc_iface_add_cq_credits(&iface->super, cq_credits);
        uct_ib_device_async_event_unregister(uct_rc_varuna_side_dev(iface,
                                                                    side),
                                             IBV_EVENT_QP_LAST_WQE_REACHED,
                                             lane->qp->qp_num);
        uct_ib_destroy_qp(lane->qp);
        lane->qp = NULL;
        return;
    }
    ctx->qp   = lane->qp;
    ctx->side = side;
    ctx->dev  = uct_rc_varuna_side_dev(iface, side);
    uct_rc_ep_cleanup_qp(&ep->super, &ctx->super, lane->qp->qp_num,
                         cq_credits);
    lane->qp = NULL;
}

/* rc/base's QP cleanup operation: the QP of a primary-device lane */
void uct_rc_varuna_iface_qp_cleanup(uct_rc_iface_qp_cleanup_ctx_t *rc_ctx)
{
    uct_rc_varuna_qp_cleanup_ctx_t *ctx =
            ucs_derived_of(rc_ctx, uct_rc_varuna_qp_cleanup_ctx_t);

    uct_ib_destroy_qp(ctx->qp);
    uct_rc_varuna_qp_cleanup_forget(ctx);
}

void uct_rc_varuna_iface_cleanup_standby_qps(uct_rc_varuna_iface_t *iface)
{
    uct_rc_varuna_qp_cleanup_ctx_t *ctx, *tmp;

    ucs_list_for_each_safe(ctx, tmp, &iface->standby_gc_list, super.list) {
        uct_rc_varuna_standby_qp_cleanup_progress(ctx);
    }
}

/*
 * The address vector of a lane toward the peer's port of that lane (its LID,
 * and its GID when routed globally), sent from our port of the lane. Used
 * for the standby lane at connection and for any lane re-protection
 * connects again.
 */
void uct_rc_varuna_lane_ah(uct_rc_varuna_iface_t *iface,
                           uct_rc_varuna_ep_t *ep, unsigned side,
                           uint16_t lid, const union ibv_gid *peer_gid,
                           struct ibv_ah_attr *ah_attr)
{
    uct_rc_varuna_side_t *s = &iface->side[side];
    union ibv_gid gid;

    if (peer_gid != NULL) {
        gid = *peer_gid;
    } else {
        gid = iface->super.super.gid_info.gid; /* same subnet: no GRH */
    }
    uct_ib_iface_fill_ah_attr_from_gid_lid(&iface->super.super, lid, &gid,
                                           s->gid_index, ep->super.path_index,
                                           ah_attr);
    ah_attr->port_num = s->port_num;
    if (!uct_ib_iface_is_roce(&iface->super.super)) {
        ah_attr->dlid          = lid;
        ah_attr->src_path_bits = 0;
    }
}


/* ------------------------------------------------------------------------
 * Fence
 * ------------------------------------------------------------------------ */

const char *uct_rc_varuna_lane_str(uct_rc_varuna_iface_t *iface,
                                   unsigned side, char *buf,
                                   size_t max)
{
    uct_rc_varuna_md_t *md = uct_rc_varuna_iface_md(iface);
    uct_ib_device_t *dev   = iface->side[side].separate ?
                             &md->standby_md->dev : &md->super.dev;

    ucs_snprintf_zero(buf, max, "%s:%d", uct_ib_device_name(dev),
                      iface->side[side].port_num);
    return buf;
}

const char *uct_rc_varuna_lane_state_str(uct_rc_varuna_lane_state_t state)
{
    static const char *names[] = {
        [UCT_RC_VARUNA_LANE_IDLE]         = "idle",
        [UCT_RC_VARUNA_LANE_ACTIVE]       = "active",
        [UCT_RC_VARUNA_LANE_STANDBY]      = "standby",
        [UCT_RC_VARUNA_LANE_FAILED]       = "failed",
        [UCT_RC_VARUNA_LANE_RECONNECTING] = "reconnecting"
    };

    return (state < ucs_static_array_size(names)) ? names[state] : "unknown";
}

/* The expected PSN of a QP of ours: which of the peer's requests it has
 * executed (section 3.4). Queried after the QP is in ERR, so final. */
int uct_rc_varuna_qp_rq_psn(struct ibv_qp *qp, uint32_t *psn_p)
{
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;

    int ret;

    ret = ibv_query_qp(qp, &attr, IBV_QP_RQ_PSN, &init_attr);
    if (ret != 0) {
        ucs_error("rc_varuna: ibv_query_qp(0x%x) failed: %s; the peer is "
                  "told our expected PSN is unknown", qp->qp_num,
                  strerror(ret));
        return 0;
    }
    *psn_p = attr.rq_psn;
    return 1;
}

void uct_rc_varuna_lane_fence(uct_rc_varuna_ep_t *ep, unsigned side)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[side];

    if ((lane->qp != NULL) && (lane->state != UCT_RC_VARUNA_LANE_FAILED)) {
        uct_ib_modify_qp(lane->qp, IBV_QPS_ERR);
        lane->err_count++;
        lane->err_time = ucs_get_time();
    }
    uct_rc_varuna_lane_set_state(ep, side, UCT_RC_VARUNA_LANE_FAILED);
}
