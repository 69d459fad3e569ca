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
#include <ucs/time/time.h>

#include <inttypes.h>


/*
 * Detection (DESIGN.md section 5.1) at the level of the interface: port
 * events, the watchdog with its probes (a stall probe on a quiet lane with
 * no standby, a probe of the standby before failing over to it), a
 * failover whose new lane stalls too, and the periodic check that runs
 * them and re-protection. Each detection enters the failover through
 * uct_rc_varuna_ep_failover() (rc_varuna_failover.c), which keeps the
 * state machine alone; completions with an error come to it from the
 * interface's handle_failure instead (rc_varuna_iface.c).
 */


/* The periodic check's interval: re-protection's, and four checks in a
 * watchdog interval; the port events seen so far */
void uct_rc_varuna_iface_detect_init(uct_rc_varuna_iface_t *iface)
{
    ucs_time_t interval;

    interval = iface->config.reprotect_interval;
    if (iface->config.watchdog != 0) {
        interval = ucs_min(interval, iface->config.watchdog / 4);
    }
    iface->fo.check_interval = ucs_max(interval, ucs_time_from_msec(1));
    iface->fo.next_check     = ucs_get_time() + iface->fo.check_interval;
    iface->fo.port_events    = uct_rc_varuna_iface_md(iface)->port_events;
}

static void uct_rc_varuna_iface_port_events(uct_rc_varuna_iface_t *iface)
{
    uct_rc_varuna_md_t *md = uct_rc_varuna_iface_md(iface);
    int down[UCT_RC_VARUNA_NUM_SIDES];
    uct_rc_varuna_ep_t *ep;
    uct_rc_ep_t *rc_ep, *tmp;
    unsigned side;

    iface->fo.port_events = md->port_events;
    uct_rc_varuna_iface_reprotect_recheck(iface);
    ucs_memory_cpu_load_fence();
    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        down[side] = uct_rc_varuna_md_port_down(md, side,
                                                iface->side[side].port_num);
        if (iface->fo.port_down[side] && !down[side]) {
            /* what re-protection's time is measured from */
            iface->fo.port_up_time[side] = ucs_get_time();
        }
        iface->fo.port_down[side] = down[side];
        if (!down[side] &&
            ((side == UCT_RC_VARUNA_SIDE_PRIMARY) || iface->has_standby)) {
            /* what re-protection sends the peer */
            uct_rc_varuna_iface_side_refresh(iface, side);
        }
    }

    ucs_list_for_each_safe(rc_ep, tmp, &iface->super.ep_list, list) {
        ep = ucs_derived_of(rc_ep, uct_rc_varuna_ep_t);
        for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
            if ((ep->lane[side].qp == NULL) ||
                ((side == UCT_RC_VARUNA_SIDE_STANDBY) && !iface->has_standby)) {
                continue;
            }
            if (down[side] &&
                ((ep->lane[side].state == UCT_RC_VARUNA_LANE_ACTIVE) ||
                 (ep->lane[side].state == UCT_RC_VARUNA_LANE_STANDBY) ||
                 (ep->lane[side].state == UCT_RC_VARUNA_LANE_RECONNECTING))) {
                uct_rc_varuna_ep_failover(ep, side,
                                          UCT_RC_VARUNA_CAUSE_PORT_ERR);
            } else if (!down[side] &&
                       (ep->lane[side].state == UCT_RC_VARUNA_LANE_FAILED)) {
                uct_rc_varuna_ep_reprotect_try(iface, ep, ucs_get_time());
            }
        }
    }
}

/* What a stalled endpoint has outstanding, and what its QP says: enough
 * to tell a lost completion of ours from a lane the stack holds back */
static void uct_rc_varuna_ep_stall_diag(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, ucs_time_t now)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[ep->active];
    uct_rc_varuna_op_t *op     = uct_rc_varuna_ep_op(ep, ep->tx.done_sn + 1);
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;
    char name[64];

    memset(&attr, 0, sizeof(attr));
    if ((lane->qp == NULL) ||
        (ibv_query_qp(lane->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN,
                      &init_attr) != 0)) {
        attr.qp_state = (enum ibv_qp_state)-1;
    }
    ucs_diag("rc_varuna: ep %p: nothing completed for %.0f ms with "
             "operations outstanding on %s (qpn 0x%x, qp state %d, sq psn "
             "0x%x, ours 0x%x): posted %" PRIu64 ", completed %" PRIu64
             ", last signaled %" PRIu64 "; next: type %u opcode %u flags "
             "0x%x lane %u wrs %u am_seq %u psn 0x%x; %u send credits, "
             "%d CQ credits, %u settled; AM seq out %u in %u", ep,
             ucs_time_to_msec(now - ep->tx.last_progress),
             uct_rc_varuna_lane_str(iface, ep->active, name, sizeof(name)),
             (lane->qp != NULL) ? lane->qp->qp_num : 0, (int)attr.qp_state,
             attr.sq_psn, lane->sq_psn, ep->tx.sn, ep->tx.done_sn,
             ep->tx.sig_sn, op->type, op->ib_opcode, op->flags, op->lane,
             op->num_wr, op->am_seq, op->last_psn,
             (unsigned)uct_rc_txqp_available(&ep->super.txqp),
             (int)iface->super.tx.cq_available, ep->tx.settled,
             ep->tx.am_seq, ep->rx.am_seq);
}

/* The endpoint's active lane has had operations outstanding and nothing
 * completed for a watchdog interval */
static int uct_rc_varuna_ep_quiet(uct_rc_varuna_iface_t *iface,
                                  uct_rc_varuna_ep_t *ep, ucs_time_t now)
{
    return (ep->tx.done_sn < ep->tx.sig_sn) &&
           (now > ep->tx.last_progress + iface->config.watchdog);
}

/*
 * The watchdog found nothing completed for its interval with operations
 * outstanding. A quiet lane is taken for dead only against evidence that
 * the other one lives: with a standby, probe it first (an empty WRITE,
 * uct_rc_varuna_ep_post_standby_probe) and fail over once it crossed and
 * back, if the active lane is still quiet then; a standby that fails its
 * probe is lost and the active lane kept (issue 33: failing over a slow
 * lane onto a path that passes nothing ended endpoints that would have
 * lost nothing). With no standby (the other port is down, or the standby
 * is not connected again yet), failing over would only end the endpoint,
 * and a quiet lane is not always dead: on rxe a QP in RTS on a healthy
 * link stops retrying now and then. Probe it (an empty WRITE behind what
 * is outstanding, one at a time, at most once an interval) and end the
 * endpoint only when it stays quiet for UCT_RC_VARUNA_STALL_PROBES
 * intervals; a lane really cut ends before, in RC's retry exhaustion.
 */
static void uct_rc_varuna_ep_stalled(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep, ucs_time_t now)
{
    int first = (ep->tx.probe_time <= ep->tx.last_progress);
    ucs_status_t status;

    if (first) {
        uct_rc_varuna_ep_stall_diag(iface, ep, now);
    }

    if (uct_rc_varuna_ep_has_standby(ep)) {
        if (ep->tx.standby_proven > ep->tx.last_progress) {
            /* the standby crossed since the lane went quiet */
            uct_rc_varuna_ep_failover(ep, ep->active,
                                      UCT_RC_VARUNA_CAUSE_WATCHDOG);
        } else if (!ep->ctrl.standby_probe) {
            if (uct_rc_varuna_ep_post_standby_probe(ep) == UCS_OK) {
                ucs_diag("rc_varuna: ep %p: probing the standby before "
                         "failing over", ep);
            } else if (now > ep->tx.last_progress +
                             UCT_RC_VARUNA_STALL_PROBES *
                             iface->config.watchdog) {
                /* no room for the probe all that time: fail over
                 * unproven rather than wait on a lane that may never
                 * move again */
                uct_rc_varuna_ep_failover(ep, ep->active,
                                          UCT_RC_VARUNA_CAUSE_WATCHDOG);
            }
        }
        /* else the probe's completion decides: a lane that is really cut
         * ends in RC's retry exhaustion meanwhile */
        return;
    }

    if (now > ep->tx.last_progress +
              UCT_RC_VARUNA_STALL_PROBES * iface->config.watchdog) {
        uct_rc_varuna_ep_failover(ep, ep->active,
                                  UCT_RC_VARUNA_CAUSE_WATCHDOG);
        return;
    }

    if (ep->ctrl.stall_probe ||
        (!first && (now < ep->tx.probe_time + iface->config.watchdog))) {
        /* one at a time: its ACK covers everything before it */
        return;
    }

    status = uct_rc_varuna_ep_post_probe(ep);
    if (status == UCS_OK) {
        ep->tx.probe_time    = now;
        ep->ctrl.stall_probe = 1;
    }
    ucs_diag("rc_varuna: ep %p: no standby to fail over to: %s", ep,
             (status == UCS_OK) ? "probing the lane" :
             "no room for a probe, waiting");
}

/* The standby's probe came back: fail over now if the active lane is
 * still quiet; if it moved meanwhile, it was slow, not dead */
void uct_rc_varuna_ep_standby_probed(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    ucs_time_t now               = ucs_get_time();

    ep->tx.standby_proven = now;
    if ((ep->fo.state != UCT_RC_VARUNA_FO_IDLE) ||
        !uct_rc_varuna_ep_has_standby(ep) || (iface->config.watchdog == 0)) {
        return;
    }
    if (uct_rc_varuna_ep_quiet(iface, ep, now)) {
        uct_rc_varuna_ep_failover(ep, ep->active,
                                  UCT_RC_VARUNA_CAUSE_WATCHDOG);
        return;
    }
    iface->fo.watchdog_spared++;
    ucs_diag("rc_varuna: ep %p: the active lane moved while the standby was "
             "probed: slow, not dead; no failover", ep);
}

/*
 * A failover whose new lane takes its control requests (the FAILOVER
 * notice, the log READ) and completes none for UCT_RC_VARUNA_STALL_PROBES
 * watchdog intervals: that lane is taken for dead, as the watchdog takes a
 * quiet active lane (review of 0aa6934, risk 7). RC's retries end a dead
 * lane too, but a QP that stops retrying (seen on rxe) would hold the
 * failover, and every operation of the endpoint, for ever. What the
 * failover waits for from the peer alone (its notice, with PEER_TIMEOUT
 * inf) is not bounded here: that wait is the exactly-once rule.
 */
static void uct_rc_varuna_ep_fo_stalled(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, ucs_time_t now)
{
    unsigned lane = uct_rc_varuna_other_lane(ep->fo.failed_lane);
    char name[64];

    if (!uct_rc_varuna_ep_fo_fencing(ep) || (ep->ctrl.inflight[lane] == 0) ||
        (ep->lane[lane].state == UCT_RC_VARUNA_LANE_FAILED) ||
        (now <= ep->ctrl.progress +
                UCT_RC_VARUNA_STALL_PROBES * iface->config.watchdog)) {
        return;
    }

    ucs_diag("rc_varuna: ep %p: lane %s, which the failover (%s) moves to, "
             "completed none of its %u control requests for %.0f ms: taken "
             "for dead", ep,
             uct_rc_varuna_lane_str(iface, lane, name, sizeof(name)),
             uct_rc_varuna_fo_state_str(ep->fo.state),
             ep->ctrl.inflight[lane],
             ucs_time_to_msec(now - ep->ctrl.progress));
    uct_rc_varuna_lane_fence(ep, lane);
    uct_rc_varuna_ep_fail_later(ep, UCS_ERR_ENDPOINT_TIMEOUT);
}

static void uct_rc_varuna_iface_periodic(uct_rc_varuna_iface_t *iface,
                                         ucs_time_t now)
{
    uct_rc_varuna_ep_t *ep, *tmp_ep;

    iface->fo.next_check = now + iface->fo.check_interval;

    /* Only the endpoints that awaited a completion since the last check
     * (issue 31: every endpoint of the interface was looked at, every 20
     * ms, idle or not); one that awaits none now leaves the list, and a
     * signaled request posted with nothing awaited puts it back
     * (uct_rc_varuna_op_taken) */
    ucs_list_for_each_safe(ep, tmp_ep, &iface->fo.watched, tx.watch) {
        if ((ep->tx.done_sn >= ep->tx.sig_sn) ||
            (ep->fo.state == UCT_RC_VARUNA_FO_DEAD)) {
            uct_rc_varuna_ep_unwatch(ep);
        } else if ((iface->config.watchdog != 0) &&
                   ((ep->fo.state == UCT_RC_VARUNA_FO_IDLE) ||
                    (ep->fo.state == UCT_RC_VARUNA_FO_REPLAYING)) &&
                   uct_rc_varuna_ep_quiet(iface, ep, now)) {
            uct_rc_varuna_ep_stalled(iface, ep, now);
        }
    }
    if (iface->config.watchdog != 0) {
        ucs_list_for_each_safe(ep, tmp_ep, &iface->fo.active, fo.list) {
            uct_rc_varuna_ep_fo_stalled(iface, ep, now);
        }
    }

    /* what the listed endpoints wait for now: the wakeup timer comes for
     * them only if one of them waits for time to pass */
    iface->fo.reprotect_timed = 0;
    ucs_list_for_each_safe(ep, tmp_ep, &iface->fo.reprotect, rp.list) {
        iface->fo.reprotect_timed |= uct_rc_varuna_ep_reprotect_try(iface,
                                                                    ep, now);
    }

    uct_rc_varuna_iface_failback_check(iface, now);
    uct_rc_varuna_iface_grow_check(iface, now);
}

void uct_rc_varuna_iface_failover_check(uct_rc_varuna_iface_t *iface)
{
    ucs_time_t now;

    if (uct_rc_varuna_iface_port_events_new(iface)) {
        uct_rc_varuna_iface_port_events(iface);
    }

    uct_rc_varuna_iface_failovers_progress(iface);

    now = ucs_get_time();
    if (now >= iface->fo.next_check) {
        uct_rc_varuna_iface_periodic(iface, now);
    }
}
