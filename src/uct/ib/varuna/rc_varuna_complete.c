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

#include <ucs/debug/log.h>

#include <inttypes.h>


/*
 * The end of an endpoint's operations: completion in sequence order (each
 * gives back its work requests and CQ credits; one a failover settled
 * completes with its status as soon as everything before it has), an error
 * completion on a lane (which starts a failover, or ends the endpoint),
 * and the endpoint's death through UCX's error path (DESIGN.md guarantee
 * G5), with the error handler asked first whether it takes the operations
 * in flight over (rc_varuna_purge.c). The send poll (rc_varuna_iface.c),
 * the failover and UCX's error path come here; new operations are posted
 * in rc_varuna_ep.c.
 */


void uct_rc_varuna_op_complete(uct_rc_varuna_iface_t *iface,
                               uct_rc_varuna_op_t *op, ucs_status_t status)
{
    switch (op->type) {
    case UCT_RC_VARUNA_OP_GET_BCOPY:
        if (status == UCS_OK) {
            op->unpack_cb(op->unpack_arg,
                          uct_rc_varuna_desc_data(op->desc), op->length);
        }
        iface->super.tx.reads_completed += op->length;
        break;
    case UCT_RC_VARUNA_OP_GET_ZCOPY:
        iface->super.tx.reads_completed += op->length;
        break;
    case UCT_RC_VARUNA_OP_ATOMIC_FETCH:
        if (status == UCS_OK) {
            /* verbs returns the value in host order (atomic_arg_sizes_be
             * is 0 for this memory domain) */
            *(uint64_t*)op->result =
                    *(uint64_t*)uct_rc_varuna_desc_data(op->desc);
        }
        break;
    case UCT_RC_VARUNA_OP_FLUSH:
        /* a flush completes even when cancelled (as in rc/base) */
        status = UCS_OK;
        break;
    default:
        break;
    }

    if (op->desc != NULL) {
        ucs_mpool_put(op->desc);
    }
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    if (op->flush_comp != NULL) {
        /* everything up to this one completed; a flush completes even
         * when cancelled */
        uct_invoke_completion(op->flush_comp, UCS_OK);
    }
}

/* Complete one operation in order, returning its work requests and CQ
 * credits (only what it still holds: a settled one gave them back when its
 * lane was flushed). */
static UCS_F_ALWAYS_INLINE unsigned
uct_rc_varuna_ep_complete_next(uct_rc_varuna_iface_t *iface,
                               uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_op_t *op = uct_rc_varuna_ep_op(ep, ++ep->tx.done_sn);

    ucs_trace_poll("rc_varuna ep %p complete sn %" PRIu64 " type %d", ep,
                   op->sn, op->type);
    if (ucs_unlikely(op->flags & UCT_RC_VARUNA_OP_FLAG_SETTLED)) {
        ep->tx.settled--;
        uct_rc_varuna_op_complete(iface, op, (ucs_status_t)op->status);
        return 0;
    }

    uct_rc_varuna_op_complete(iface, op, UCS_OK);
    return op->num_wr;
}

/* After the completion of sn: operations a failover settled complete as
 * soon as everything before them has. */
static void uct_rc_varuna_ep_complete_more(uct_rc_varuna_iface_t *iface,
                                           uct_rc_varuna_ep_t *ep)
{
    while ((ep->tx.settled > 0) && (ep->tx.done_sn < ep->tx.sn) &&
           (uct_rc_varuna_ep_op(ep, ep->tx.done_sn + 1)->flags &
            UCT_RC_VARUNA_OP_FLAG_SETTLED)) {
        uct_rc_varuna_ep_complete_next(iface, ep);
    }
}

static void uct_rc_varuna_ep_completed(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep, unsigned freed)
{
    ep->tx.last_progress = ucs_get_time();
    uct_rc_varuna_ep_tx_credits_add(ep, freed);
    uct_rc_iface_update_reads(&iface->super);
    uct_rc_iface_add_cq_credits(&iface->super, freed);

    if (ucs_unlikely(ep->fo.state == UCT_RC_VARUNA_FO_REPLAYING) &&
        (ep->tx.done_sn >= ep->fo.sn_hi)) {
        uct_rc_varuna_ep_failover_recovered(ep);
    }
}

/* Complete every operation up to sn, in order, and return their work
 * requests and CQ credits. */
void uct_rc_varuna_ep_complete(uct_rc_varuna_ep_t *ep, uint64_t sn)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    unsigned freed               = 0;

    ucs_assertv(sn <= ep->tx.sn, "ep %p sn %" PRIu64 " posted %" PRIu64,
                ep, sn, ep->tx.sn);
    while (ep->tx.done_sn < sn) {
        freed += uct_rc_varuna_ep_complete_next(iface, ep);
    }
    if (ucs_unlikely(ep->tx.settled > 0)) {
        uct_rc_varuna_ep_complete_more(iface, ep);
    }
    uct_rc_varuna_ep_completed(iface, ep, freed);
    if (ucs_unlikely(ep->gr.hold)) {
        uct_rc_varuna_ep_grow_drained(ep);
    }
}

/* Complete what a failover settled at the head of the queue. */
void uct_rc_varuna_ep_complete_settled(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    uct_rc_varuna_ep_complete_more(iface, ep);
    uct_rc_varuna_ep_completed(iface, ep, 0);
}

/* Complete everything outstanding with an error status; the work requests
 * come back through the flushes of the QPs in error. */
void uct_rc_varuna_ep_purge(uct_rc_varuna_ep_t *ep, ucs_status_t status)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    uct_rc_varuna_op_t *op;

    while (ep->tx.done_sn < ep->tx.sn) {
        op = uct_rc_varuna_ep_op(ep, ++ep->tx.done_sn);
        uct_rc_varuna_op_complete(iface, op, status);
    }
    ep->tx.settled = 0;
    uct_rc_iface_update_reads(&iface->super);
}

/* A completion error the caller caused (a key or an address the target
 * does not have, a request the responder cannot take): another path meets
 * it again, so it ends the endpoint as on rc_verbs, not in a failover */
static int uct_rc_varuna_wc_status_is_callers(enum ibv_wc_status status)
{
    switch (status) {
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_LEN_ERR:
        return 1;
    default:
        return 0;
    }
}

/*
 * An error completion on a lane. The first one on a lane carries the cause;
 * every WR posted after the failed one comes back as a flush. Each error
 * CQE gives back one work request and one CQ credit. What completed before
 * the failed request completed silently (RC completes in order), so it
 * completes now with success and gives its credits back.
 *
 * An error on the active lane starts a failover to the standby
 * (rc_varuna_failover.c) when there is one; the lane is then drained
 * here. Without a standby, or for the caller's own error, the endpoint
 * fails through UCX's error path, like rc_verbs.
 */
void uct_rc_varuna_ep_handle_failure(uct_rc_varuna_ep_t *ep, unsigned lane,
                                     struct ibv_wc *wc, ucs_status_t ep_status)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    uint64_t sn                  = wc->wr_id & UCT_RC_VARUNA_WRID_SN_MASK;
    int callers                  = uct_rc_varuna_wc_status_is_callers(
                                           wc->status);
    int first, last_path;

    if ((ep->fo.state == UCT_RC_VARUNA_FO_IDLE) && (lane == ep->active) &&
        !(ep->super.flags & UCT_RC_EP_FLAG_FLUSH_CANCEL) && !callers) {
        uct_rc_varuna_ep_failover(ep, lane,
                                  (wc->status == IBV_WC_RETRY_EXC_ERR) ?
                                  UCT_RC_VARUNA_CAUSE_RETRY_EXC :
                                  UCT_RC_VARUNA_CAUSE_WC_ERROR);
        if (uct_rc_varuna_ep_fo_fencing(ep)) {
            ucs_diag("rc_varuna: ep %p lane %u: send completion with error: "
                     "%s [qpn 0x%x wrid 0x%" PRIx64 " vendor_err 0x%x]", ep,
                     lane, ibv_wc_status_str(wc->status), wc->qp_num,
                     wc->wr_id, wc->vendor_err);
        }
    } else if ((ep->fo.state == UCT_RC_VARUNA_FO_IDLE) && callers) {
        ep->dead.callers = 1;
        ucs_diag("rc_varuna: ep %p lane %u: %s [qpn 0x%x wrid 0x%" PRIx64
                 "]: the operation's own error, no failover", ep, lane,
                 ibv_wc_status_str(wc->status), wc->qp_num, wc->wr_id);
    }

    last_path = 0;
    if (uct_rc_varuna_ep_fo_fencing(ep) &&
        (lane == ep->fo.failed_lane)) {
        first = !(ep->fo.flags & UCT_RC_VARUNA_FO_FIRST_ERR);
        ep->fo.flags |= UCT_RC_VARUNA_FO_FIRST_ERR;
    } else if (uct_rc_varuna_ep_fo_fencing(ep)) {
        /* the lane a failover is moving to failed, with what it sent
         * again on it: the last path is lost. Nothing before this request
         * is known to have executed there (flushed requests of a fenced
         * QP complete with an error too): it is decided by the peer's
         * answer to UCP's lane failover, or completes with the error; it
         * used to complete with UCS_OK (the review of 0aa6934, finding 2) */
        first     = 0;
        last_path = 1;
    } else if (ep->fo.state != UCT_RC_VARUNA_FO_DEAD) {
        /* an error with no failover to make: both lanes are lost */
        first = 1;
    } else {
        first = 0;
    }

    if (first && !(wc->wr_id & UCT_RC_VARUNA_WRID_OP)) {
        /* only its log write failed: the operation itself completed, and
         * this CQE is the last of its work requests */
        uct_rc_varuna_ep_complete(ep, sn);
    } else {
        if (first) {
            /* the operation's own request failed: what precedes it is
             * done */
            uct_rc_varuna_ep_complete(ep, sn - 1);
        }
        /* this CQE's own work request and CQ entry; the request's
         * operation stays in flight while the error handler owns it, and
         * so does its credit (see uct_rc_varuna_ep_fail) */
        if (ucs_unlikely(ep->dead.owner == UCT_RC_VARUNA_OWNER_CALLER)) {
            ep->fo.parked += uct_rc_varuna_ep_tx_repay(ep, 1);
        } else {
            uct_rc_varuna_ep_tx_credits_add(ep, 1);
        }
        uct_rc_iface_add_cq_credits(&iface->super, 1);
    }
    /* resources came back: what the user left pending (say, a flush after
     * a cancelling one) may go now */
    ucs_arbiter_group_schedule(&iface->super.tx.arbiter, &ep->super.arb_group);

    if ((first && !uct_rc_varuna_ep_fo_fencing(ep)) || last_path) {
        if ((ep_status == UCS_ERR_CANCELED) &&
            !(ep->super.flags & UCT_RC_EP_FLAG_FLUSH_CANCEL)) {
            /* flushed because we fenced the lane for a failure (its port
             * went down, the watchdog fired) with no lane left: the peer
             * is out of reach */
            ep_status = UCS_ERR_ENDPOINT_TIMEOUT;
        }
        uct_rc_varuna_ep_fail(ep, ep_status);
    }
}

/* Complete what a dead endpoint has in flight with the failure's status,
 * unless the error handler took it over or is deciding (the handler itself
 * may flush the endpoint, with UCT_FLUSH_FLAG_CANCEL, to discard it: then
 * everything completes before the flush, as if the handler had not been
 * asked first). */
void uct_rc_varuna_ep_dead_complete(uct_rc_varuna_ep_t *ep)
{
    if ((ep->dead.owner == UCT_RC_VARUNA_OWNER_TRANSPORT) ||
        (ep->dead.owner == UCT_RC_VARUNA_OWNER_IN_HANDLER)) {
        ep->dead.owner = UCT_RC_VARUNA_OWNER_TRANSPORT;
        uct_rc_varuna_ep_purge(ep, (ucs_status_t)ep->dead.status);
    }
}

/*
 * Both lanes are lost (or there never was a standby, or the user cancelled
 * everything): report the endpoint to UCX's error path once (DESIGN.md
 * guarantee G5) and complete what is outstanding with the error.
 *
 * The handler is asked first, as upstream UCX's transports with
 * uct_ep_outstanding_purge do: when it returns UCS_INPROGRESS it takes the
 * operations in flight over (UCP's failover moves them to another lane,
 * rc_varuna_purge.c) and they are kept, uncompleted, until it purges them
 * or destroys the endpoint. Any other answer leaves them to us, and they
 * complete here with the error, as before.
 */
/* The endpoint's end in the log: why, and on which QP (a caller's error
 * names the lane it failed on; lost lanes the endpoint's first QP) */
static void uct_rc_varuna_ep_log_dead(uct_rc_varuna_ep_t *ep,
                                      ucs_log_level_t log_lvl,
                                      ucs_status_t ep_status, const char *then)
{
    struct ibv_qp *qp = ep->lane[ep->dead.callers ? ep->active : 0].qp;

    ucs_log(log_lvl, "rc_varuna: ep %p: %s, %s (qpn 0x%x%s)%s", ep,
            ucs_status_string(ep_status),
            ep->dead.callers ? "an operation's own error" :
                               "no path left to the peer",
            (qp != NULL) ? qp->qp_num : 0,
            (ep->dead.callers || uct_rc_varuna_ep_has_standby(ep)) ?
            "" : ", no standby", then);
}

void uct_rc_varuna_ep_fail(uct_rc_varuna_ep_t *ep, ucs_status_t ep_status)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    char took_over[96];
    ucs_status_t status;
    unsigned side;

    uct_rc_varuna_ep_failover_cleanup(ep, UCT_RC_VARUNA_FO_DEAD);
    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        if ((ep->lane[side].qp != NULL) &&
            (ep->lane[side].state != UCT_RC_VARUNA_LANE_FAILED)) {
            uct_ib_modify_qp(ep->lane[side].qp, IBV_QPS_ERR);
            uct_rc_varuna_lane_set_state(ep, side, UCT_RC_VARUNA_LANE_FAILED);
        }
    }

    ucs_arbiter_group_purge(&iface->super.tx.arbiter, &ep->super.arb_group,
                            uct_rc_ep_arbiter_purge_internal_cb, NULL);
    ucs_arbiter_group_schedule(&iface->super.tx.arbiter, &ep->super.arb_group);

    if (ep->dead.owner == UCT_RC_VARUNA_OWNER_TRANSPORT) {
        ep->dead.status = (int8_t)ep_status;
    }
    if (ep->super.flags & (UCT_RC_EP_FLAG_ERR_HANDLER_INVOKED |
                           UCT_RC_EP_FLAG_FLUSH_CANCEL)) {
        uct_rc_varuna_ep_dead_complete(ep);
        return;
    }

    ep->super.flags |= UCT_RC_EP_FLAG_ERR_HANDLER_INVOKED;
    uct_rc_fc_restore_wnd(&iface->super, &ep->super.fc);

    ep->dead.owner = UCT_RC_VARUNA_OWNER_IN_HANDLER;
    status         = uct_iface_handle_ep_err(&iface->super.super.super.super,
                                             &ep->super.super.super,
                                             ep_status);
    if ((status == UCS_INPROGRESS) &&
        (ep->dead.owner == UCT_RC_VARUNA_OWNER_IN_HANDLER)) {
        /* the records stay until the purge: new operations must not take
         * their place in the ring, so the endpoint has no send credits
         * (those of flushed requests are parked too, until the purge) */
        ep->dead.owner  = UCT_RC_VARUNA_OWNER_CALLER;
        ep->fo.parked  += uct_rc_txqp_available(&ep->super.txqp);
        uct_rc_txqp_available_set(&ep->super.txqp, 0);
        /* diag, not debug: the endpoint is gone, and the user's log should
         * say why even when UCP handles it (a run on rxe lost an endpoint
         * with nothing of it at info or diag level) */
        ucs_snprintf_zero(took_over, sizeof(took_over), "; the error handler "
                          "took over the %" PRIu64 " operations in flight",
                          ep->tx.sn - ep->tx.done_sn);
        uct_rc_varuna_ep_log_dead(ep, UCS_LOG_LEVEL_DIAG, ep_status,
                                  took_over);
        return;
    }

    uct_rc_varuna_ep_dead_complete(ep);
    uct_rc_varuna_ep_log_dead(ep,
                              uct_base_iface_failure_log_level(
                                      &iface->super.super.super, status,
                                      ep_status),
                              ep_status, "");
}

static unsigned uct_rc_varuna_ep_fail_progress(void *arg)
{
    uct_rc_varuna_ep_t *ep = arg;

    if (ep->fo.state != UCT_RC_VARUNA_FO_DEAD) {
        uct_rc_varuna_ep_fail(ep, (ucs_status_t)ep->dead.status);
    }
    return 1;
}

static int uct_rc_varuna_ep_fail_progress_of(const ucs_callbackq_elem_t *elem,
                                             void *arg)
{
    return (elem->cb == uct_rc_varuna_ep_fail_progress) &&
           (elem->arg == arg);
}

/* The endpoint has lost its last lane, found in a context that must not
 * call the error handler (inside the user's call that posted an operation,
 * or a peer's query about the connection): it fails from the progress. */
void uct_rc_varuna_ep_fail_later(uct_rc_varuna_ep_t *ep, ucs_status_t status)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    ep->dead.status = (int8_t)status;
    ucs_callbackq_add_safe(&iface->super.super.super.worker->super.progress_q,
                           uct_rc_varuna_ep_fail_progress, ep,
                           UCS_CALLBACKQ_FLAG_ONESHOT);
}

/* The endpoint goes away: a failure scheduled for it must not run */
void uct_rc_varuna_ep_fail_cancel(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    ucs_callbackq_remove_if(&iface->super.super.super.worker->super.progress_q,
                            uct_rc_varuna_ep_fail_progress_of, ep);
}
