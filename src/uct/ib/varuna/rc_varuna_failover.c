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
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>

#include <inttypes.h>


/*
 * Failover of an endpoint's active lane (DESIGN.md section 5).
 *
 *   detect    an error completion, PORT_ERR on the lane's port, the peer's
 *             FAILOVER message, the watchdog
 *   fence     new operations wait (the endpoint's send credits are held
 *             back); the failed QP is moved to ERR; a drain marker behind
 *             its requests says when all of their completions are in; a
 *             FAILOVER message tells the peer, over the standby, that our
 *             side of the lane is fenced and what our expected PSN there is
 *   read      once no late request on the failed lane can still execute
 *             (below), an RDMA READ over the standby fetches the log word L
 *             our operations wrote at the peer; unless the peer's FAILOVER
 *             message, sent after its fence, carried it already
 *   classify  sn <= L executed; posted behind a log write > L lost; the
 *             few in between (those after the last log write, one with a
 *             log write behind every operation) decided by the peer's
 *             expected PSN from its FAILOVER message (rc_varuna_classify.c)
 *   recover   executed operations complete (READs are read again; a
 *             fetching atomic whose result died with the link completes
 *             with UCT_RC_VARUNA_STATUS_RESULT_LOST); lost ones are posted
 *             again on the standby, in order, before anything new
 *   promote   the standby is the active lane; when the failed lane's port
 *             is up again it is reset and reconnected as the new standby
 *             (re-protection), off the critical path
 *
 * When can L be trusted? Only when no request sent on the failed lane can
 * still execute at the peer. rc_varuna relies on one of two facts:
 *   - the failure was detected by retry exhaustion: every request was
 *     retransmitted retry_count times, unacknowledged, over timeout x
 *     (retry_count + 1); nothing of it is still on its way;
 *   - the peer has fenced: its FAILOVER message says it moved its own QP of
 *     the failed lane to ERR, so nothing more executes there. The message
 *     also carries that QP's expected PSN, which decides the operations the
 *     log leaves open.
 * With a finite UCX_RC_VARUNA_PEER_TIMEOUT the timeout itself is the third,
 * a guard interval, after which undecided operations fail instead of being
 * resent.
 *
 * No QP is created and no connection is set up on this path (guarantee
 * G4): the verbs calls are posts, polls, the move of the failed QP to ERR
 * and the query of its expected PSN for the peer.
 */

static const char *uct_rc_varuna_cause_names[] = {
    [UCT_RC_VARUNA_CAUSE_NONE]      = "none",
    [UCT_RC_VARUNA_CAUSE_RETRY_EXC] = "retry_exceeded",
    [UCT_RC_VARUNA_CAUSE_WC_ERROR]  = "error_completion",
    [UCT_RC_VARUNA_CAUSE_PORT_ERR]  = "port_error",
    [UCT_RC_VARUNA_CAUSE_PEER]      = "peer_notification",
    [UCT_RC_VARUNA_CAUSE_WATCHDOG]  = "watchdog",
    [UCT_RC_VARUNA_CAUSE_USER]      = "requested",
    [UCT_RC_VARUNA_CAUSE_REFUSED]   = "post_refused",
    [UCT_RC_VARUNA_CAUSE_FAILBACK]  = "failback"
};

/* The cause of a failover the peer's FAILOVER message starts: its failback
 * is ours too */
static uct_rc_varuna_cause_t uct_rc_varuna_peer_cause(uint8_t msg_flags)
{
    return (msg_flags & UCT_RC_VARUNA_CTRL_FLAG_FAILBACK) ?
           UCT_RC_VARUNA_CAUSE_FAILBACK : UCT_RC_VARUNA_CAUSE_PEER;
}

const char *uct_rc_varuna_cause_str(uct_rc_varuna_cause_t cause)
{
    return (cause < UCT_RC_VARUNA_CAUSE_LAST) ?
           uct_rc_varuna_cause_names[cause] : "unknown";
}

static const char *uct_rc_varuna_fo_state_names[] = {
    [UCT_RC_VARUNA_FO_IDLE]       = "idle",
    [UCT_RC_VARUNA_FO_DRAIN]      = "drain",
    [UCT_RC_VARUNA_FO_WAIT_QUIET] = "wait_quiet",
    [UCT_RC_VARUNA_FO_READ_LOG]   = "read_log",
    [UCT_RC_VARUNA_FO_DECIDE]     = "decide",
    [UCT_RC_VARUNA_FO_RESEND]     = "resend",
    [UCT_RC_VARUNA_FO_REPLAYING]  = "replaying",
    [UCT_RC_VARUNA_FO_DEAD]       = "dead"
};

const char *uct_rc_varuna_fo_state_str(uct_rc_varuna_fo_state_t state)
{
    UCS_STATIC_ASSERT(ucs_static_array_size(uct_rc_varuna_fo_state_names) ==
                      UCT_RC_VARUNA_FO_LAST);
    return (state < UCT_RC_VARUNA_FO_LAST) ?
           uct_rc_varuna_fo_state_names[state] : "unknown";
}

/* The only place the failover's state changes */
static void uct_rc_varuna_ep_fo_enter(uct_rc_varuna_ep_t *ep,
                                      uct_rc_varuna_fo_state_t state)
{
    ucs_debug("rc_varuna: ep %p: failover %s -> %s", ep,
              uct_rc_varuna_fo_state_str(ep->fo.state),
              uct_rc_varuna_fo_state_str(state));
    ep->fo.state                 = (uint8_t)state;
    ep->fo.report.t_enter[state] = ucs_get_time();
}


/* ------------------------------------------------------------------------
 * Detection and fence
 * ------------------------------------------------------------------------ */

/* The peer fenced its side of the failed lane: nothing sent there executes
 * any more, and its expected PSN (when it could read it) decides. The log
 * word it read after its fence is the one a READ of ours would now return:
 * taken when the READ has not been posted yet, which saves its round
 * trip. */
static void uct_rc_varuna_ep_fo_peer_fenced(uct_rc_varuna_ep_t *ep,
                                            uint8_t msg_flags, uint32_t psn,
                                            uint64_t log_sn)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    ep->fo.flags         |= UCT_RC_VARUNA_FO_PEER_FENCED;
    ep->fo.report.t_peer  = ucs_get_time();
    if ((msg_flags & UCT_RC_VARUNA_CTRL_FLAG_LOG) &&
        iface->config.log_enable &&
        ((ep->fo.state == UCT_RC_VARUNA_FO_DRAIN) ||
         (ep->fo.state == UCT_RC_VARUNA_FO_WAIT_QUIET))) {
        ep->fo.log_sn  = log_sn;
        ep->fo.flags  |= UCT_RC_VARUNA_FO_LOG_DONE |
                         UCT_RC_VARUNA_FO_LOG_NOTICE;
    }
    if (!(msg_flags & UCT_RC_VARUNA_CTRL_FLAG_PSN_UNKNOWN)) {
        ep->fo.flags       |= UCT_RC_VARUNA_FO_PEER_PSN;
        ep->fo.peer_rq_psn  = psn;
    } else {
        ucs_diag("rc_varuna: ep %p: the peer could not read its expected "
                 "PSN", ep);
    }
}

void uct_rc_varuna_ep_failover(uct_rc_varuna_ep_t *ep, unsigned lane,
                               uct_rc_varuna_cause_t cause)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    unsigned other               = uct_rc_varuna_other_lane(lane);
    uct_rc_varuna_lane_t *failed = &ep->lane[lane];
    uct_rc_varuna_ctrl_msg_t *msg;
    char from[64], to[64];
    uint32_t rq_psn;
    int psn_known;

    if ((ep->fo.state == UCT_RC_VARUNA_FO_DEAD) || (failed->qp == NULL)) {
        return;
    }

    if (lane != ep->active) {
        if (uct_rc_varuna_ep_fo_fencing(ep) &&
            (lane == uct_rc_varuna_other_lane(ep->fo.failed_lane))) {
            /* the lane a failover is moving to is lost too, maybe with
             * operations sent again on it: no path is left. Not from
             * here, which may be a loop over the endpoints */
            ucs_diag("rc_varuna: ep %p: lane %s, which the failover was "
                     "moving to, is lost too (%s)", ep,
                     uct_rc_varuna_lane_str(iface, lane, from, sizeof(from)),
                     uct_rc_varuna_cause_str(cause));
            uct_rc_varuna_lane_fence(ep, lane);
            uct_rc_varuna_ep_fail_later(ep, UCS_ERR_ENDPOINT_TIMEOUT);
            return;
        }
        /* the standby (or a lane being reconnected) is lost: nothing in
         * flight on it, the endpoint just loses its protection */
        if ((failed->state == UCT_RC_VARUNA_LANE_STANDBY) ||
            (failed->state == UCT_RC_VARUNA_LANE_RECONNECTING)) {
            ucs_diag("rc_varuna: ep %p: standby lane %s lost (%s)", ep,
                     uct_rc_varuna_lane_str(iface, lane, from, sizeof(from)),
                     uct_rc_varuna_cause_str(cause));
            uct_rc_varuna_lane_fence(ep, lane);
            /* the initiator's side may have seen nothing (its port is
             * another one): it is told once our port is up */
            ep->rp.ask |= !ep->rp.initiator;
            uct_rc_varuna_ep_reprotect_list(ep);
            uct_rc_varuna_ep_grow_arm(ep);
        }
        return;
    }

    if (ep->fo.state != UCT_RC_VARUNA_FO_IDLE) {
        /* the lane we failed over to fails too: its completions take the
         * endpoint down (uct_rc_varuna_ep_handle_failure) */
        uct_rc_varuna_lane_fence(ep, lane);
        return;
    }

    if ((ep->lane[other].state != UCT_RC_VARUNA_LANE_STANDBY) ||
        (ep->super.flags & UCT_RC_EP_FLAG_FLUSH_CANCEL)) {
        /* nowhere to go: the endpoint ends through UCX's error path */
        ucs_diag("rc_varuna: ep %p: lane %s failed (%s) with no standby "
                 "(lane %s %s)", ep,
                 uct_rc_varuna_lane_str(iface, lane, from, sizeof(from)),
                 uct_rc_varuna_cause_str(cause),
                 uct_rc_varuna_lane_str(iface, other, to, sizeof(to)),
                 uct_rc_varuna_lane_state_str(ep->lane[other].state));
        uct_rc_varuna_lane_fence(ep, lane);
        /* a grow under way stops, keeping the QP the peer's token may
         * name (rc_varuna_grow.c) */
        uct_rc_varuna_ep_grow_end(ep);
        if (!(ep->super.flags & UCT_RC_EP_FLAG_FLUSH_CANCEL)) {
            /* at once, not when a flushed request comes back: there may be
             * none. An idle endpoint, or one whose requests the peer has
             * all acknowledged unsignaled (they complete without a
             * completion of their own), heard of its end only at its next
             * operation, or from UCP's keepalive 20 s later, and UCP's
             * lane failover waited that long while the other lane's paths
             * died too (issue 48). Not from here, which may be a loop over
             * the endpoints; a flushed request that comes first ends it
             * the same way, and this then finds it ended */
            uct_rc_varuna_ep_fail_later(ep, UCS_ERR_ENDPOINT_TIMEOUT);
        }
        return;
    }

    /* a grow under way stops: the failover runs on the lane's QP, the one
     * carrying the traffic (rc_varuna_grow.c) */
    uct_rc_varuna_ep_grow_abort(ep, "the lane failed");

    if (cause == UCT_RC_VARUNA_CAUSE_FAILBACK) {
        iface->fo.failbacks++;
    } else {
        iface->fo.failovers++;
    }
    memset(&ep->fo.report, 0, sizeof(ep->fo.report));
    ep->fo.report.t_detect    = ucs_get_time();
    ep->fo.report.cause       = cause;
    ep->fo.report.failed_lane = lane;
    ep->fo.report.new_lane    = other;
    ep->fo.report.in_flight   = (unsigned)(ep->tx.sn - ep->tx.done_sn);

    uct_rc_varuna_ep_fo_enter(ep, UCT_RC_VARUNA_FO_DRAIN);
    ep->fo.cause       = cause;
    ep->fo.failed_lane = lane;
    ep->fo.flags       = 0;
    ep->fo.sn_hi       = ep->tx.sn;
    ep->fo.log_sn      = 0;
    ep->fo.peer_rq_psn = 0;
    if (ep->fo.notice.valid && (ep->fo.notice.epoch == ep->fo.epoch) &&
        (ep->fo.notice.lane == lane)) {
        ucs_debug("rc_varuna: ep %p: the peer had fenced lane %u already",
                  ep, lane);
        uct_rc_varuna_ep_fo_peer_fenced(ep, ep->fo.notice.flags,
                                        ep->fo.notice.psn,
                                        ep->fo.notice.log_sn);
    }
    ep->fo.notice.valid = 0;

    /* fence: new operations wait (no send credits) */
    ep->fo.parked = uct_rc_txqp_available(&ep->super.txqp);
    uct_rc_txqp_available_set(&ep->super.txqp, 0);
    uct_rc_varuna_lane_fence(ep, lane);
    uct_rc_varuna_ep_reprotect_unlist(ep);
    ucs_list_add_tail(&iface->fo.active, &ep->fo.list);

    /* tell the peer, with our expected PSN on the failed lane; one that
     * could not be read travels as unknown: the peer must not take any
     * value for it */
    ep->ctrl.pending = UCS_BIT(UCT_RC_VARUNA_CTRL_WR_DRAIN);
    psn_known = uct_rc_varuna_qp_rq_psn(failed->qp, &rq_psn);
    msg       = uct_rc_varuna_ep_queue_msg(ep, UCT_RC_VARUNA_CTRL_FAILOVER,
                                           lane, psn_known ? rq_psn : 0, 0);
    if (msg == NULL) {
        /* the lanes took no message for two failovers: the peer could
         * never learn of this one */
        ucs_error("rc_varuna: ep %p: %u control messages could not be "
                  "posted, the endpoint fails", ep, ep->ctrl.msgq_count);
        uct_rc_varuna_ep_fail(ep, UCS_ERR_ENDPOINT_TIMEOUT);
        return;
    }
    if (!psn_known) {
        msg->flags |= UCT_RC_VARUNA_CTRL_FLAG_PSN_UNKNOWN;
    }
    /* the failed lane is fenced here: what the peer's operations wrote
     * into our log word over it is all there is */
    msg->log_sn  = *uct_rc_varuna_log_word(ep);
    msg->flags  |= UCT_RC_VARUNA_CTRL_FLAG_LOG;
    if (cause == UCT_RC_VARUNA_CAUSE_FAILBACK) {
        msg->flags |= UCT_RC_VARUNA_CTRL_FLAG_FAILBACK;
    }

    ucs_diag("rc_varuna: ep %p: failing over from %s to %s (%s), %u in "
             "flight", ep,
             uct_rc_varuna_lane_str(iface, lane, from, sizeof(from)),
             uct_rc_varuna_lane_str(iface, other, to, sizeof(to)),
             uct_rc_varuna_cause_str(cause), ep->fo.report.in_flight);

    uct_rc_varuna_ep_failover_progress(ep);
}

/*
 * The active lane's QP refused a new operation (uct_rc_varuna_ep_post_op):
 * the lane has failed. The operation is the last one taken, never sent (or
 * sent without its log write); the failover decides it and sends it again
 * like any other lost one. With no failover to make (no standby, or the
 * lane we failed over to refuses too) the endpoint fails as on any loss of
 * its last lane, from the progress: not inside the user's call that posted
 * the operation, which returns as if it went.
 */
void uct_rc_varuna_ep_post_refused(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_ep_failover(ep, ep->active, UCT_RC_VARUNA_CAUSE_REFUSED);
    if (uct_rc_varuna_ep_fo_fencing(ep) ||
        (ep->fo.state == UCT_RC_VARUNA_FO_DEAD)) {
        return;
    }

    /* failover() fenced the lane */
    uct_rc_varuna_ep_fail_later(ep, UCS_ERR_IO_ERROR);
}

ucs_status_t uct_rc_varuna_ep_fail_lane(uct_ep_h tl_ep)
{
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    unsigned long failovers      = iface->fo.failovers;

    if (ep->fo.state != UCT_RC_VARUNA_FO_IDLE) {
        return UCS_ERR_BUSY;
    }
    uct_rc_varuna_ep_failover(ep, ep->active, UCT_RC_VARUNA_CAUSE_USER);
    return (iface->fo.failovers != failovers) ? UCS_OK : UCS_ERR_UNREACHABLE;
}


/* ------------------------------------------------------------------------
 * Classify and recover
 * ------------------------------------------------------------------------ */

static int uct_rc_varuna_ep_peer_timed_out(uct_rc_varuna_iface_t *iface,
                                           uct_rc_varuna_ep_t *ep)
{
    return (iface->config.peer_timeout != UCS_TIME_INFINITY) &&
           (ucs_get_time() >= ep->fo.report.t_detect +
                              iface->config.peer_timeout);
}

static void uct_rc_varuna_op_settle(uct_rc_varuna_ep_t *ep,
                                    uct_rc_varuna_op_t *op,
                                    ucs_status_t status)
{
    op->flags  |= UCT_RC_VARUNA_OP_FLAG_SETTLED;
    op->status  = (int8_t)status;
    ep->tx.settled++;
}

/* What the classification's verdict makes of an operation's record:
 * settled (to complete in order, with its status) or to be sent again */
static void uct_rc_varuna_op_decided(uct_rc_varuna_ep_t *ep,
                                     uct_rc_varuna_op_t *op,
                                     const uct_rc_varuna_cls_op_t *cls)
{
    uct_rc_varuna_report_t *rep = &ep->fo.report;

    switch (cls->verdict) {
    case UCT_RC_VARUNA_VERDICT_EXECUTED:
        if (cls->kind == UCT_RC_VARUNA_KIND_READ) {
            /* its data never arrived: read it again */
            op->flags |= UCT_RC_VARUNA_OP_FLAG_REREAD;
            rep->reread++;
        } else if (op->type == UCT_RC_VARUNA_OP_ATOMIC_FETCH) {
            uct_rc_varuna_op_settle(ep, op, UCT_RC_VARUNA_STATUS_RESULT_LOST);
            rep->results_lost++;
        } else {
            uct_rc_varuna_op_settle(ep, op, UCS_OK);
        }
        break;
    case UCT_RC_VARUNA_VERDICT_LOST:
        op->flags |= UCT_RC_VARUNA_OP_FLAG_RESEND;
        break;
    default:
        /* the peer never answered (finite PEER_TIMEOUT) */
        uct_rc_varuna_op_settle(ep, op, UCT_RC_VARUNA_STATUS_UNDECIDED);
        break;
    }
}

/*
 * Decide every operation still in flight and mark its record: settled (to
 * complete in order, with its status) or to be sent again. Returns 0 when
 * a decision needs the peer's answer that has not come yet.
 */
static int uct_rc_varuna_ep_decide(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep)
{
    size_t count                  = (size_t)(ep->tx.sn - ep->tx.done_sn);
    uct_rc_varuna_report_t *rep   = &ep->fo.report;
    uct_rc_varuna_cls_input_t *in = &rep->learned;
    uct_rc_varuna_cls_op_t *cls;
    uct_rc_varuna_op_t *op;
    size_t i;

    ucs_assert(count <= iface->fo.cls_len); /* the ring bounds it */
    cls = iface->fo.cls;
    for (i = 0; i < count; i++) {
        op           = uct_rc_varuna_ep_op(ep, ep->tx.done_sn + 1 + i);
        uct_rc_varuna_op_cls_input(op, &cls[i]);
    }

    /* classified into the report: a decision not yet final is made again
     * on the next call */
    in->log_valid  = (ep->fo.flags & UCT_RC_VARUNA_FO_LOG_DONE) &&
                     !(ep->fo.flags & UCT_RC_VARUNA_FO_LOG_FAILED);
    in->log_sn     = ep->fo.log_sn;
    in->psn_valid  = !!(ep->fo.flags & UCT_RC_VARUNA_FO_PEER_PSN);
    in->rq_psn     = ep->fo.peer_rq_psn;
    in->send_dedup = 1; /* resent here, the receiver drops duplicates */
    in->delivered_valid = 0; /* the receiver's word comes with a purge */
    uct_rc_varuna_classify(in, cls, count, &rep->decided);

    /* wait while the peer's answer may still decide something: once it has
     * fenced, with its expected PSN or without, nothing more comes */
    if ((iface->config.recovery == UCT_RC_VARUNA_RECOVERY_VARUNA) &&
        (rep->decided.undecided > 0) &&
        !(ep->fo.flags & UCT_RC_VARUNA_FO_PEER_FENCED) &&
        !uct_rc_varuna_ep_peer_timed_out(iface, ep)) {
        return 0;
    }

    rep->in_flight = (unsigned)count;
    if (rep->decided.conflicts > 0) {
        ucs_error("rc_varuna: ep %p: the log (%" PRIu64 ") and the peer's "
                  "expected PSN (0x%x) disagree on %u operations", ep,
                  in->log_sn, in->rq_psn, rep->decided.conflicts);
    }

    /* mark each record, and note the last one to post again and the last
     * one logged: the replay signals and logs only there
     * (uct_rc_varuna_ep_replay) */
    ep->fo.replay_last = 0;
    ep->fo.replay_log  = 0;
    for (i = 0; i < count; i++) {
        op = uct_rc_varuna_ep_op(ep, cls[i].sn);
        op->flags &= ~(UCT_RC_VARUNA_OP_FLAG_RESEND |
                       UCT_RC_VARUNA_OP_FLAG_REREAD);
        rep->blanket_ops++;
        rep->blanket_bytes += op->length;

        if (iface->config.recovery == UCT_RC_VARUNA_RECOVERY_BLANKET) {
            /* today's behaviour: everything again */
            op->flags |= UCT_RC_VARUNA_OP_FLAG_RESEND;
        } else {
            uct_rc_varuna_op_decided(ep, op, &cls[i]);
        }

        if (op->flags & UCT_RC_VARUNA_OP_FLAG_RESEND) {
            ep->fo.replay_log = cls[i].sn;
        }
        if (op->flags & (UCT_RC_VARUNA_OP_FLAG_RESEND |
                         UCT_RC_VARUNA_OP_FLAG_REREAD)) {
            ep->fo.replay_last = cls[i].sn;
        }
    }

    if (rep->results_lost > 0) {
        ucs_warn("rc_varuna: ep %p: %u fetching atomics executed but their "
                 "results were lost with the link; they complete with \"%s\" "
                 "and are not executed again", ep, rep->results_lost,
                 ucs_status_string(UCT_RC_VARUNA_STATUS_RESULT_LOST));
    }
    if ((rep->decided.undecided > 0) &&
        (iface->config.recovery == UCT_RC_VARUNA_RECOVERY_VARUNA)) {
        ucs_warn("rc_varuna: ep %p: %s; %u undecided operations complete "
                 "with \"%s\" and are not sent again", ep,
                 (ep->fo.flags & UCT_RC_VARUNA_FO_PEER_FENCED) ?
                 "the peer's expected PSN is unknown" :
                 "the peer did not answer within PEER_TIMEOUT",
                 rep->decided.undecided,
                 ucs_status_string(UCT_RC_VARUNA_STATUS_UNDECIDED));
    }

    rep->t_decided    = ucs_get_time();
    ep->fo.replay_sn  = ep->tx.done_sn + 1;
    return 1;
}

/* At most this many operations sent again go in one ibv_post_send */
#define UCT_RC_VARUNA_REPLAY_CHAIN 16

/*
 * Post again, in sequence order, what was decided so, as far as CQ entries
 * allow; the send credits come from those the failover held back. Returns
 * 1 once everything is posted.
 *
 * One log write, behind the last operation sent again, covers them all, as
 * one behind a burst of new operations does (RC executes in order); one
 * completion, of the last request posted, completes them all. A replay
 * that must stop for CQ entries or credits signals its last request, whose
 * completion gives them back. Before, every operation sent again had its
 * own log write and completion: twice the requests and packets on the
 * failover's critical path (contrib/failover-bench).
 *
 * The operations go as chains of up to UCT_RC_VARUNA_REPLAY_CHAIN in one
 * ibv_post_send each: one doorbell where a post per operation rang one each
 * (on softib a system call each, 8 us; the failover's critical path waits
 * for the last of them).
 */
static int uct_rc_varuna_ep_replay(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep)
{
    unsigned lane_index = uct_rc_varuna_other_lane(ep->fo.failed_lane);
    struct ibv_sge sge[UCT_RC_VARUNA_REPLAY_CHAIN][UCT_IB_MAX_IOV + 1];
    struct ibv_sge log_sge[UCT_RC_VARUNA_REPLAY_CHAIN];
    struct ibv_send_wr wr[UCT_RC_VARUNA_REPLAY_CHAIN][2], *refused;
    uct_rc_varuna_op_t *chain[UCT_RC_VARUNA_REPLAY_CHAIN];
    uint8_t signaled[UCT_RC_VARUNA_REPLAY_CHAIN];
    uct_rc_varuna_post_pos_t pos;
    uct_rc_varuna_op_t *op;
    unsigned num_wr, wrs, count, i;
    int with_log, signal, room;

    do {
        uct_rc_varuna_post_pos_init(ep, lane_index, &pos);
        count = 0;
        wrs   = 0;
        room  = 1;
        for (; (ep->fo.replay_sn <= ep->fo.sn_hi) &&
               (count < UCT_RC_VARUNA_REPLAY_CHAIN); ep->fo.replay_sn++) {
            op = uct_rc_varuna_ep_op(ep, ep->fo.replay_sn);
            if (!(op->flags & (UCT_RC_VARUNA_OP_FLAG_RESEND |
                               UCT_RC_VARUNA_OP_FLAG_REREAD))) {
                continue;
            }

            /* a READ of something executed is not logged again: the log
             * must only grow (everything up to L executed) */
            with_log = iface->config.log_enable &&
                       (ep->fo.replay_sn == ep->fo.replay_log);
            num_wr   = with_log ? 2 : 1;
            if ((iface->super.tx.cq_available < (int)(wrs + num_wr)) ||
                (ep->fo.parked < wrs + num_wr)) {
                room = 0;
                break;
            }
            /* the last one, or the next one (two requests at most) may
             * not fit */
            signal = (ep->fo.replay_sn == ep->fo.replay_last) ||
                     (iface->super.tx.cq_available <
                      (int)(wrs + num_wr + 2)) ||
                     (ep->fo.parked < wrs + num_wr + 2);

            signaled[count] = uct_rc_varuna_op_prepare(iface, ep, op,
                                                       lane_index, &pos,
                                                       signal, with_log,
                                                       wr[count], sge[count],
                                                       &log_sge[count]);
            if (count > 0) {
                wr[count - 1][chain[count - 1]->num_wr - 1].next =
                        &wr[count][0];
            }
            chain[count++] = op;
            wrs           += num_wr;
        }

        if (count == 0) {
            break;
        }

        refused = uct_rc_varuna_lane_post(iface, &ep->lane[lane_index],
                                          &wr[0][0], NULL);
        ep->fo.report.resent_posts++;
        /* what the QP took is accounted on the credits held back */
        uct_rc_txqp_available_set(&ep->super.txqp, ep->fo.parked);
        for (i = 0; i < count; i++) {
            op = chain[i];
            if (refused == &wr[i][0]) {
                break;
            }
            uct_rc_varuna_op_taken(iface, ep, op, signaled[i],
                                   refused == &wr[i][1]);
            ep->fo.report.resent_ops++;
            ep->fo.report.resent_bytes += op->length;
            if (refused == &wr[i][1]) {
                i++;
                break;
            }
        }
        ep->fo.parked = uct_rc_txqp_available(&ep->super.txqp);
        uct_rc_txqp_available_set(&ep->super.txqp, 0);

        if (refused != NULL) {
            /* the lane we fail over to refuses it: no lane is left */
            for (; i < count; i++) {
                uct_rc_varuna_op_never_sent(chain[i]);
            }
            ucs_error("rc_varuna: ep %p: the standby lane refused an "
                      "operation sent again, the endpoint fails", ep);
            uct_rc_varuna_ep_fail(ep, UCS_ERR_IO_ERROR);
            return 0;
        }
    } while (room && (ep->fo.replay_sn <= ep->fo.sn_hi));

    return room;
}

/*
 * The endpoint's send credits follow the send queue of the lane that will
 * carry the traffic: a standby's queue is shorter than the primary's by
 * default (UCX_RC_VARUNA_STANDBY_TX_QUEUE_LEN), and the other way round
 * after a failover back. Credits beyond the new queue's share are retired
 * from those held back now and, for the rest, as the failed lane's requests
 * give theirs back (uct_rc_varuna_ep_tx_repay); a longer queue adds credits
 * at once. Before the resend, which posts on the new lane with the credits
 * held back (a resend larger than the queue goes in parts, each signaled at
 * its end, see uct_rc_varuna_ep_replay).
 */
void uct_rc_varuna_ep_tx_resize(uct_rc_varuna_iface_t *iface,
                                uct_rc_varuna_ep_t *ep, unsigned lane)
{
    uint16_t limit = ep->lane[lane].max_wr;

    ep->tx.wr_limit = limit;
    if (ep->tx.wr_owned < limit) {
        ep->fo.parked  += limit - ep->tx.wr_owned;
        ep->tx.wr_owned = limit;
    } else {
        /* the held-back credits pay as returned ones do */
        ep->fo.parked = uct_rc_varuna_ep_tx_repay(ep, ep->fo.parked);
    }
}

/* New operations may go again, with the credits parked meanwhile (by a
 * failover, or by a grow's drain, rc_varuna_grow.c). rc/base runs the
 * pending queues only after send completions, and a failover that ends on
 * the peer's notice (in the receive path) or in the periodic check, with
 * nothing resent, may be followed by none: the end of this progress call
 * runs them, outside of any loop over endpoints that a pending callback
 * could change. */
void uct_rc_varuna_ep_tx_unpark(uct_rc_varuna_iface_t *iface,
                                uct_rc_varuna_ep_t *ep)
{
    uct_rc_txqp_available_add(&ep->super.txqp, ep->fo.parked);
    ep->fo.parked = 0;
    ucs_arbiter_group_schedule(&iface->super.tx.arbiter, &ep->super.arb_group);
    iface->fo.dispatch = 1;
}

/* The standby carries the traffic now; new operations may go. A lane
 * lost meanwhile is no place for them: the endpoint fails instead. */
static void uct_rc_varuna_ep_promote(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep)
{
    unsigned lane            = uct_rc_varuna_other_lane(ep->fo.failed_lane);

    if (ep->lane[lane].state != UCT_RC_VARUNA_LANE_STANDBY) {
        uct_rc_varuna_ep_fail(ep, UCS_ERR_ENDPOINT_TIMEOUT);
        return;
    }

    uct_rc_varuna_ep_fo_enter(ep, UCT_RC_VARUNA_FO_REPLAYING);
    ep->active             = (uint8_t)lane;
    uct_rc_varuna_lane_set_state(ep, lane, UCT_RC_VARUNA_LANE_ACTIVE);
    uct_rc_varuna_ep_tx_unpark(iface, ep);
    uct_rc_varuna_ep_grow_arm(ep);
    uct_rc_varuna_ep_complete_settled(ep);
}

/* A failover needs the log word when something is still in flight and the
 * log decides (UCX_RC_VARUNA_LOG=y, varuna recovery) */
static int uct_rc_varuna_ep_fo_needs_log(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep)
{
    return (ep->tx.done_sn < ep->tx.sn) &&
           (iface->config.recovery == UCT_RC_VARUNA_RECOVERY_VARUNA) &&
           iface->config.log_enable;
}

/* No request sent on the failed lane can still execute at the peer: the
 * log word is final (see the top of this file) */
static int uct_rc_varuna_ep_fo_quiet(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep)
{
    return (ep->fo.cause == UCT_RC_VARUNA_CAUSE_RETRY_EXC) ||
           (ep->fo.flags & UCT_RC_VARUNA_FO_PEER_FENCED) ||
           uct_rc_varuna_ep_peer_timed_out(iface, ep);
}

/* One step of the failover from its current state; returns 0 when it must
 * wait for an event (a completion, the peer's message, CQ room, time) */
static int uct_rc_varuna_ep_fo_step(uct_rc_varuna_iface_t *iface,
                                    uct_rc_varuna_ep_t *ep)
{
    switch (ep->fo.state) {
    case UCT_RC_VARUNA_FO_DRAIN:
        if (!(ep->fo.flags & UCT_RC_VARUNA_FO_DRAINED)) {
            return 0;
        }
        uct_rc_varuna_ep_fo_enter(ep, uct_rc_varuna_ep_fo_needs_log(iface, ep) ?
                                      UCT_RC_VARUNA_FO_WAIT_QUIET :
                                      UCT_RC_VARUNA_FO_DECIDE);
        return 1;
    case UCT_RC_VARUNA_FO_WAIT_QUIET:
        if (!uct_rc_varuna_ep_fo_quiet(iface, ep)) {
            return 0;
        }
        if (ep->fo.flags & UCT_RC_VARUNA_FO_LOG_DONE) {
            /* the peer's FAILOVER told it */
            uct_rc_varuna_ep_fo_enter(ep, UCT_RC_VARUNA_FO_DECIDE);
            return 1;
        }
        uct_rc_varuna_ep_fo_enter(ep, UCT_RC_VARUNA_FO_READ_LOG);
        ep->ctrl.pending |= UCS_BIT(UCT_RC_VARUNA_CTRL_WR_LOG_READ);
        uct_rc_varuna_ep_ctrl_kick(ep);
        return 1;
    case UCT_RC_VARUNA_FO_READ_LOG:
        if (!(ep->fo.flags & UCT_RC_VARUNA_FO_LOG_DONE)) {
            return 0;
        }
        uct_rc_varuna_ep_fo_enter(ep, UCT_RC_VARUNA_FO_DECIDE);
        return 1;
    case UCT_RC_VARUNA_FO_DECIDE:
        if (!uct_rc_varuna_ep_decide(iface, ep)) {
            return 0; /* the peer's expected PSN is needed */
        }
        uct_rc_varuna_ep_tx_resize(iface, ep,
                                   uct_rc_varuna_other_lane(ep->fo.failed_lane));
        uct_rc_varuna_ep_fo_enter(ep, UCT_RC_VARUNA_FO_RESEND);
        return 1;
    case UCT_RC_VARUNA_FO_RESEND:
        if (!uct_rc_varuna_ep_replay(iface, ep)) {
            return 0; /* no CQ entries: continued from the progress */
        }
        /* enters REPLAYING, and IDLE at once if nothing is left in
         * flight */
        uct_rc_varuna_ep_promote(iface, ep);
        return 1;
    default:
        return 0;
    }
}

/* Run the failover as far as it can go now. Every event of a failover ends
 * here, and so does the interface's check (control requests waiting for
 * room, CQ entries for the resend, the peer's timeout). */
void uct_rc_varuna_ep_failover_progress(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    if (!uct_rc_varuna_ep_fo_fencing(ep)) {
        return;
    }

    uct_rc_varuna_ep_ctrl_kick(ep);
    while (uct_rc_varuna_ep_fo_fencing(ep) &&
           uct_rc_varuna_ep_fo_step(iface, ep)) {
    }
}

/* Everything that was in flight has completed: the failover is over. */
void uct_rc_varuna_ep_failover_recovered(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    ep->fo.report.t_recovered = ucs_get_time();
    ep->fo.epoch++;
    uct_rc_varuna_iface_count_failover(iface, &ep->fo.report);
    uct_rc_varuna_ep_report(iface, ep);

    uct_rc_varuna_ep_fo_enter(ep, UCT_RC_VARUNA_FO_IDLE);
    ep->fo.replay_sn = 0;
    ep->fo.flags     = 0;
    ucs_list_del(&ep->fo.list);
    if (ep->fo.log_desc != NULL) {
        ucs_mpool_put(ep->fo.log_desc);
        ep->fo.log_desc = NULL;
    }
    uct_rc_varuna_ep_reprotect_list(ep);
    uct_rc_varuna_ep_failover_noticed(ep);
}

/* A failover the peer announced before ours could start: start it now if
 * it can (we are idle, on the lane it is about, with a standby). Called
 * when a failover ends and when a lane becomes the standby again. */
void uct_rc_varuna_ep_failover_noticed(uct_rc_varuna_ep_t *ep)
{
    if (!ep->fo.notice.valid) {
        return;
    }
    if (ep->fo.notice.epoch != ep->fo.epoch) {
        if (UCS_CIRCULAR_COMPARE16(ep->fo.notice.epoch, <, ep->fo.epoch)) {
            ep->fo.notice.valid = 0; /* about a failover that is over */
        }
        return;
    }
    if ((ep->fo.state == UCT_RC_VARUNA_FO_IDLE) &&
        (ep->fo.notice.lane == ep->active) &&
        uct_rc_varuna_ep_has_standby(ep)) {
        uct_rc_varuna_ep_failover(ep, ep->active,
                                  uct_rc_varuna_peer_cause(ep->fo.notice.flags));
    }
}

/* Leave the failover machinery: the endpoint dies (DEAD) or goes away
 * (IDLE). */
void uct_rc_varuna_ep_failover_cleanup(uct_rc_varuna_ep_t *ep,
                                       uct_rc_varuna_fo_state_t state)
{
    /* held back by a failover, or by an error handler that took the
     * operations over (uct_rc_varuna_ep_fail) */
    uct_rc_txqp_available_add(&ep->super.txqp, ep->fo.parked);
    ep->fo.parked = 0;
    if (uct_rc_varuna_ep_fo_fencing(ep) ||
        (ep->fo.state == UCT_RC_VARUNA_FO_REPLAYING)) {
        ucs_list_del(&ep->fo.list);
    }
    uct_rc_varuna_ep_fo_enter(ep, state);
    uct_rc_varuna_ep_failback_cleanup(ep);
    uct_rc_varuna_ep_grow_cleanup(ep);
    ep->fo.notice.valid = 0;
    ep->fo.flags        = 0;
    ep->ctrl.pending    = 0;
    ep->ctrl.msgq_count = 0;
    ep->fo.replay_sn    = 0;
    if (ep->fo.log_desc != NULL) {
        ucs_mpool_put(ep->fo.log_desc);
        ep->fo.log_desc = NULL;
    }
    uct_rc_varuna_ep_reprotect_unlist(ep);
}


/*
 * Every completion of the failed lane is in: the drain marker was posted
 * behind its last request. A request still queued when the lane was fenced
 * came back flushed, and the first of those completed everything before it
 * (uct_rc_varuna_ep_handle_failure); the rest gave back their work requests
 * one by one. If none came back, nothing was queued any more: every request
 * had completed successfully, acknowledged by the peer, before the fence,
 * and most of them were unsignaled, so no completion will ever tell. They
 * executed; they are not in flight but done, with their results (a READ's
 * data, a fetched value) in place. Complete them now, which also gives back
 * their work requests and CQ entries: settling them as "executed" instead
 * would keep those forever, and once an endpoint has no more credits than
 * one CQ moderation interval of unsignaled requests, nothing it posts is
 * ever signaled again and it stalls (issue 14).
 *
 * Blanket recovery resends everything whose completion it has not seen, as
 * today's systems do, so these stay in flight there; only their work
 * requests and CQ entries come back.
 */
static void uct_rc_varuna_ep_drained(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep)
{
    uint64_t last = ep->fo.sn_hi;
    unsigned count, num_wr;
    uint64_t sn;

    if ((last > ep->tx.done_sn) &&
        (uct_rc_varuna_ep_op(ep, last)->flags &
         UCT_RC_VARUNA_OP_FLAG_NEVER_SENT)) {
        /* the one the QP refused, which started the failover: not among
         * what completed */
        last--;
    }
    count = (unsigned)(last - ep->tx.done_sn);
    if ((ep->fo.flags & UCT_RC_VARUNA_FO_FIRST_ERR) || (count == 0)) {
        return;
    }

    ucs_debug("rc_varuna: ep %p: the %u operations in flight on the failed "
              "lane had all completed", ep, count);
    if (iface->config.recovery == UCT_RC_VARUNA_RECOVERY_VARUNA) {
        ep->fo.report.acked = count;
        uct_rc_varuna_ep_complete(ep, last);
        return;
    }

    num_wr = 0;
    for (sn = ep->tx.done_sn + 1; sn <= last; sn++) {
        num_wr += uct_rc_varuna_ep_op(ep, sn)->num_wr;
    }
    uct_rc_varuna_ep_tx_credits_add(ep, num_wr);
    uct_rc_iface_add_cq_credits(&iface->super, num_wr);
}


/* The drain marker came back: every completion of the failed lane is in */
void uct_rc_varuna_ep_failover_drained(uct_rc_varuna_ep_t *ep)
{
    if (!uct_rc_varuna_ep_fo_fencing(ep)) {
        return;
    }
    ep->fo.flags |= UCT_RC_VARUNA_FO_DRAINED;
    uct_rc_varuna_ep_drained(uct_rc_varuna_ep_iface(ep), ep);
    uct_rc_varuna_ep_failover_progress(ep);
}

/* The READ of our log word at the peer completed */
void uct_rc_varuna_ep_failover_log_read(uct_rc_varuna_ep_t *ep)
{
    if (ep->fo.state == UCT_RC_VARUNA_FO_READ_LOG) {
        ep->fo.log_sn  = *(uint64_t*)uct_rc_varuna_desc_data(ep->fo.log_desc);
        ep->fo.flags  |= UCT_RC_VARUNA_FO_LOG_DONE;
        ucs_debug("rc_varuna: ep %p: log word at the peer is %" PRIu64, ep,
                  ep->fo.log_sn);
    }
    uct_rc_varuna_ep_failover_progress(ep);
}

/* The peer's FAILOVER message: it fenced its side of a lane. The peer's
 * failovers and ours are the same events, counted by both (epoch), but
 * its message may come before ours can start (our standby is still being
 * connected: its REPROTECT_DONE travels on the other lane, or was lost
 * with it) or while our last failover still replays; then it is kept
 * (fo.notice) and applied when ours starts. Dropping it would leave ours
 * waiting for a fence the peer has announced already. */
void uct_rc_varuna_ep_failover_peer_fenced(uct_rc_varuna_ep_t *ep,
                                           const uct_rc_varuna_ctrl_msg_t *msg)
{
    unsigned about = msg->lane;

    if ((about >= UCT_RC_VARUNA_NUM_SIDES) ||
        UCS_CIRCULAR_COMPARE16(msg->epoch, <, ep->fo.epoch)) {
        return; /* about a failover both sides have finished */
    }

    if ((msg->epoch == ep->fo.epoch) &&
        (ep->fo.state == UCT_RC_VARUNA_FO_IDLE) && (about == ep->active)) {
        uct_rc_varuna_ep_failover(ep, about,
                                  uct_rc_varuna_peer_cause(msg->flags));
    }
    if ((msg->epoch == ep->fo.epoch) && uct_rc_varuna_ep_fo_fencing(ep) &&
        (about == ep->fo.failed_lane)) {
        uct_rc_varuna_ep_fo_peer_fenced(ep, msg->flags, msg->psn,
                                        msg->log_sn);
        uct_rc_varuna_ep_failover_progress(ep);
        return;
    }

    ucs_diag("rc_varuna: ep %p: the peer fenced lane %u (failover %u) "
             "before ours could start; kept for it", ep, about, msg->epoch);
    ep->fo.notice.valid = 1;
    ep->fo.notice.lane  = (uint8_t)about;
    ep->fo.notice.flags = msg->flags;
    ep->fo.notice.epoch = msg->epoch;
    ep->fo.notice.psn    = msg->psn;
    ep->fo.notice.log_sn = msg->log_sn;
}


/* ------------------------------------------------------------------------
 * Interface: the failovers under way
 * ------------------------------------------------------------------------ */

/* The failovers under way, as far as they can go now: control requests
 * waiting for room, CQ entries for the resend, the peer's timeout */
void uct_rc_varuna_iface_failovers_progress(uct_rc_varuna_iface_t *iface)
{
    uct_rc_varuna_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &iface->fo.active, fo.list) {
        uct_rc_varuna_ep_failover_progress(ep);
    }
}

/* The classification's working array (uct_rc_varuna_ep_decide): as many
 * entries as an endpoint can have operations in flight, allocated once */
ucs_status_t uct_rc_varuna_iface_cls_init(uct_rc_varuna_iface_t *iface)
{
    iface->fo.cls_len = ucs_roundup_pow2(iface->config.tx_max_wr);
    iface->fo.cls     = ucs_calloc(iface->fo.cls_len, sizeof(*iface->fo.cls),
                                   "rc_varuna_cls");
    if (iface->fo.cls == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

void uct_rc_varuna_iface_cls_cleanup(uct_rc_varuna_iface_t *iface)
{
    ucs_free(iface->fo.cls);
}
