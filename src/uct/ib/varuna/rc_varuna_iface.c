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

#include <fcntl.h>
#include <math.h>

#include <uct/ib/base/ib_device.h>
#include <uct/ib/base/ib_log.h>
#include <uct/ib/rc/verbs/rc_verbs.h>
#include <ucs/arch/bitops.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>


static uct_rc_iface_ops_t uct_rc_varuna_iface_ops;
static uct_iface_ops_t uct_rc_varuna_iface_tl_ops;

static const char *uct_rc_varuna_recovery_names[] = {
    [UCT_RC_VARUNA_RECOVERY_VARUNA]  = "varuna",
    [UCT_RC_VARUNA_RECOVERY_BLANKET] = "blanket",
    [UCT_RC_VARUNA_RECOVERY_LAST]    = NULL
};

static ucs_config_field_t uct_rc_varuna_iface_config_table[] = {
    /* Detection in milliseconds, not UCX's seconds (DESIGN.md section 5.1):
     * a request unacknowledged for 8 ms is retried, five times. */
    {"RC_", "RC_TIMEOUT=8ms;RC_RETRY_COUNT=5", NULL,
     ucs_offsetof(uct_rc_varuna_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_rc_iface_config_table)},

    {"MAX_AM_HDR", "128",
     "Buffer size to reserve for active message headers. If set to 0, the\n"
     "transport does not support zero-copy active messages.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, max_am_hdr),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"MAX_ZCOPY", "1m",
     "The most bytes one zero-copy put or get moves in one work request\n"
     "(UCP splits larger transfers), and the most bytes posted between two\n"
     "signaled requests. It bounds the time between two completions of a\n"
     "healthy endpoint, which must stay well below WATCHDOG at the slowest\n"
     "bandwidth expected, and what a failover resends for an operation\n"
     "the link cut in the middle.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, max_zcopy),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"LOG", "y",
     "Write completion log entries (an 8-byte inline RDMA WRITE of an\n"
     "operation's sequence number behind it, see LOG_INTERVAL). With 'n', a\n"
     "failover decides every operation in flight by asking the peer instead\n"
     "of reading the log; meant for measuring the log's cost.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, log_enable),
     UCS_CONFIG_TYPE_BOOL},

    {"LOG_INTERVAL", "16",
     "Write a log entry behind one operation in this many (at least 1). A\n"
     "log entry proves that every operation before it executed; a failover\n"
     "decides the ones after the last entry that reached the peer by the\n"
     "peer's expected PSN, as it does one operation with an interval of 1.\n"
     "Larger intervals cost fewer packets and leave more operations to the\n"
     "peer's answer, which a failure needs in most cases anyway.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, log_interval),
     UCS_CONFIG_TYPE_UINT},

    {"RECOVERY", "varuna",
     "How a failover treats the operations in flight:\n"
     " varuna  - complete what executed, recover its results, resend only\n"
     "           what was lost\n"
     " blanket - resend everything in flight, as production systems do\n"
     "           today; a baseline for measurement that may execute an\n"
     "           operation twice",
     ucs_offsetof(uct_rc_varuna_iface_config_t, recovery),
     UCS_CONFIG_TYPE_ENUM(uct_rc_varuna_recovery_names)},

    {"WATCHDOG", "250ms",
     "Fail over when operations are outstanding on the active lane and none\n"
     "has completed for this long (a link can die without any error\n"
     "completion, see DESIGN.md section 5.1). With no standby to fail over\n"
     "to, probe the lane with an empty WRITE instead, and fail the endpoint\n"
     "only when nothing completes for 8 times this long. 0 turns the\n"
     "watchdog off.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, watchdog),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"PEER_TIMEOUT", "inf",
     "How long a failover waits for the peer's answer (its expected PSN) when\n"
     "an operation cannot be decided without it. 'inf' waits: exactly once.\n"
     "After a finite timeout the undecided operation completes with\n"
     "UCS_ERR_TIMED_OUT and is never resent.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, peer_timeout),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"REPROTECT_INTERVAL", "20ms",
     "How often a failed lane whose port is up again is reconnected as the\n"
     "new standby, off the critical path.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, reprotect_interval),
     UCS_CONFIG_TYPE_TIME},

    {"REPROTECT_TIMEOUT", "1s",
     "How long the initiator of a re-protection waits for the peer's answer\n"
     "before it asks again. Each request makes the peer reset its lane, so a\n"
     "timeout shorter than a slow peer's answer keeps the two from ever\n"
     "agreeing (seen at 200 ms on rxe under TCG emulation).",
     ucs_offsetof(uct_rc_varuna_iface_config_t, reprotect_timeout),
     UCS_CONFIG_TYPE_TIME},

    {"QUARANTINE_MAX", "8s",
     "A path whose port is up but whose re-protection probe (a READ that\n"
     "must cross it both ways) fails is quarantined: it is not made the\n"
     "standby, and the next try waits twice as long as the last, from\n"
     "4 times REPROTECT_INTERVAL up to this long.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, quarantine_max),
     UCS_CONFIG_TYPE_TIME},

    {"FAILBACK_HOLD", "5s",
     "After a failover, once the primary lane is the standby again and has\n"
     "stayed so for this long, the traffic goes back to it (the full send\n"
     "queue, the primary port), exactly once as a failover, counted as a\n"
     "failback. The hold-down keeps a flapping port from pulling traffic to\n"
     "and fro. 'inf' turns failback off: the traffic stays where it is.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, failback_hold),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"GROW_AFTER", "100ms",
     "After a failover onto a standby whose send queue is shorter than the\n"
     "primary's (STANDBY_TX_QUEUE_LEN), the traffic moves to a new QP on the\n"
     "same port with the full queue (TX_QUEUE_LEN) this long after, unless\n"
     "the primary is being re-protected by then. It moves exactly once, as a\n"
     "failover does, and is counted as a grow. 'inf' keeps the short queue\n"
     "until a failback.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, grow_after),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"LAST_WQE_TIMEOUT", "100ms",
     "Re-protection resets a failed lane's QP once the device has reported\n"
     "IBV_EVENT_QP_LAST_WQE_REACHED for it (the QP takes nothing more from\n"
     "the shared receive queue), or once the QP has been in the error state\n"
     "for this long: some devices never report it (Linux rxe, kernel 6.1).",
     ucs_offsetof(uct_rc_varuna_iface_config_t, last_wqe_timeout),
     UCS_CONFIG_TYPE_TIME},

    {"REPORT", "",
     "Append one JSON line per failover event to this file, and one with\n"
     "the interface's counters when it closes (empty: only the log lines at\n"
     "info level; the counters are also in UCX's VFS).",
     ucs_offsetof(uct_rc_varuna_iface_config_t, report),
     UCS_CONFIG_TYPE_STRING},

    {"STANDBY_RX_QUEUE_LEN", "256",
     "Receive buffers posted on the shared receive queue of a standby device,\n"
     "also after a failover onto it: the number doubles, up to the queue's\n"
     "length, when the receives outpace the refills by three quarters of it.\n"
     "A standby port of the primary device shares the primary's queue.",
     ucs_offsetof(uct_rc_varuna_iface_config_t, standby_rx_len),
     UCS_CONFIG_TYPE_UINT},

    {"STANDBY_TX_QUEUE_LEN", "64",
     "Send queue length of a standby QP (TX_QUEUE_LEN is the primary's). A\n"
     "standby waits with its queue empty, and a QP's queue cannot grow: after\n"
     "a failover onto it the endpoint has this many send credits (less the\n"
     "four kept for the failover's own requests) until the next failover.\n"
     "Each entry costs memory on every endpoint (on an HCA one or more 64-byte\n"
     "WQE blocks, pinned).",
     ucs_offsetof(uct_rc_varuna_iface_config_t, standby_tx_len),
     UCS_CONFIG_TYPE_UINT},

    {NULL}
};


/* ------------------------------------------------------------------------
 * Configuration values: a value out of range is an error that names the
 * variable, the value and the range, and the interface does not open (the
 * transport is not used at all, rather than used with a value that turns
 * off detection or protection: an RC timeout of 0 is "wait forever" in
 * verbs, a log interval of 4294967293 is no log)
 * ------------------------------------------------------------------------ */

#define UCT_RC_VARUNA_LOG_INTERVAL_MAX   65536
#define UCT_RC_VARUNA_STANDBY_RX_MAX     65536
/* the IB local ACK timeout: 4.096 us x 2^n, n = 1 to 31 (0 is infinite) */
#define UCT_RC_VARUNA_RC_TIMEOUT_MIN     8.192e-6
#define UCT_RC_VARUNA_RC_TIMEOUT_MAX     8796.0

static int uct_rc_varuna_config_bad(const char *name, const char *value,
                                    const char *range)
{
    ucs_error("rc_varuna: UCX_RC_VARUNA_%s=%s is out of range (%s): the "
              "transport is not used", name, value, range);
    return 1;
}

/* A time in seconds as "1.5ms" and the like */
static const char *uct_rc_varuna_config_secs(double secs, char *buf,
                                             size_t max)
{
    if (secs == 0) {
        ucs_strncpy_zero(buf, "0", max);
    } else if (secs < 1e-3) {
        ucs_snprintf_zero(buf, max, "%.4gus", secs * 1e6);
    } else if (secs < 1.0) {
        ucs_snprintf_zero(buf, max, "%.4gms", secs * 1e3);
    } else {
        ucs_snprintf_zero(buf, max, "%.6gs", secs);
    }
    return buf;
}

static int uct_rc_varuna_config_secs_bad(const char *name, double secs,
                                         double min, double max,
                                         const char *range)
{
    char value[32];

    if ((secs >= min) && (secs <= max)) {
        return 0;
    }
    return uct_rc_varuna_config_bad(name,
                                    uct_rc_varuna_config_secs(secs, value,
                                                              sizeof(value)),
                                    range);
}

static int uct_rc_varuna_config_uint_bad(const char *name, unsigned long v,
                                         unsigned long min, unsigned long max)
{
    char value[32], range[64];

    if ((v >= min) && (v <= max)) {
        return 0;
    }
    ucs_snprintf_zero(value, sizeof(value), "%lu", v);
    ucs_snprintf_zero(range, sizeof(range), "%lu to %lu", min, max);
    return uct_rc_varuna_config_bad(name, value, range);
}

/* A ucs_time_t setting (TIME_UNITS): auto and inf are what the setting
 * says they mean; a number must be at least min_secs (0: allowed) */
static int uct_rc_varuna_config_time_bad(const char *name, ucs_time_t t,
                                         int zero_ok, double min_secs,
                                         const char *range)
{
    if ((t == UCS_TIME_AUTO) || (t == UCS_TIME_INFINITY) ||
        ((t == 0) && zero_ok)) {
        return 0;
    }
    return uct_rc_varuna_config_secs_bad(name, ucs_time_to_sec(t), min_secs,
                                         HUGE_VAL, range);
}

/* Every value of the interface's configuration that can be out of range;
 * each bad one is said, then the open fails */
static ucs_status_t
uct_rc_varuna_iface_config_check(const uct_rc_varuna_iface_config_t *config)
{
    const uct_rc_iface_common_config_t *rc = &config->super.super;
    int bad = 0;

    /* each queue holds the control requests' entries too; an endpoint's
     * send credits are a 16-bit count (rc/base's txqp) */
    bad |= uct_rc_varuna_config_uint_bad("TX_QUEUE_LEN",
                                         rc->super.tx.queue_len,
                                         2 * UCT_RC_VARUNA_CTRL_WR_RESERVE,
                                         INT16_MAX);
    bad |= uct_rc_varuna_config_uint_bad("STANDBY_TX_QUEUE_LEN",
                                         config->standby_tx_len,
                                         2 * UCT_RC_VARUNA_CTRL_WR_RESERVE,
                                         INT16_MAX);

    bad |= uct_rc_varuna_config_uint_bad("LOG_INTERVAL", config->log_interval,
                                         1, UCT_RC_VARUNA_LOG_INTERVAL_MAX);
    bad |= uct_rc_varuna_config_secs_bad("TIMEOUT", rc->tx.timeout,
                                         UCT_RC_VARUNA_RC_TIMEOUT_MIN,
                                         UCT_RC_VARUNA_RC_TIMEOUT_MAX,
                                         "8.192us to 8796s; 0 would wait "
                                         "forever: no failure detected");
    bad |= uct_rc_varuna_config_uint_bad("RETRY_COUNT", rc->tx.retry_count,
                                         0, 7);
    bad |= uct_rc_varuna_config_time_bad("WATCHDOG", config->watchdog, 1,
                                         1e-3, "0 (off), or at least 1ms");
    bad |= uct_rc_varuna_config_time_bad("PEER_TIMEOUT",
                                         config->peer_timeout, 0, 1e-3,
                                         "inf, or at least 1ms");
    bad |= uct_rc_varuna_config_secs_bad("REPROTECT_INTERVAL",
                                         config->reprotect_interval, 1e-3,
                                         60.0, "1ms to 60s");
    bad |= uct_rc_varuna_config_secs_bad("REPROTECT_TIMEOUT",
                                         config->reprotect_timeout, 1e-3,
                                         600.0, "1ms to 600s");
    bad |= uct_rc_varuna_config_time_bad("FAILBACK_HOLD",
                                         config->failback_hold, 1, 1e-3,
                                         "inf (off), 0, or at least 1ms");
    bad |= uct_rc_varuna_config_time_bad("GROW_AFTER", config->grow_after, 1,
                                         1e-3, "inf (off), 0, or at least 1ms");
    bad |= uct_rc_varuna_config_secs_bad("QUARANTINE_MAX",
                                         config->quarantine_max, 1e-3,
                                         3600.0, "1ms to 3600s");
    bad |= uct_rc_varuna_config_secs_bad("LAST_WQE_TIMEOUT",
                                         config->last_wqe_timeout, 0, 600.0,
                                         "0 to 600s");
    bad |= uct_rc_varuna_config_uint_bad("STANDBY_RX_QUEUE_LEN",
                                         config->standby_rx_len, 1,
                                         UCT_RC_VARUNA_STANDBY_RX_MAX);
    if ((config->max_zcopy != UCS_MEMUNITS_AUTO) &&
        (config->max_zcopy != UCS_MEMUNITS_INF)) {
        bad |= uct_rc_varuna_config_uint_bad("MAX_ZCOPY", config->max_zcopy,
                                             UCS_KBYTE, UCS_GBYTE);
    }
    return bad ? UCS_ERR_INVALID_PARAM : UCS_OK;
}


/* ------------------------------------------------------------------------
 * QP tables: side 0 uses rc/base's, side 1 a hash of its own (QP numbers
 * of two devices may collide).
 * ------------------------------------------------------------------------ */

uct_rc_varuna_ep_t *uct_rc_varuna_iface_lookup_ep(uct_rc_varuna_iface_t *iface,
                                                  unsigned side,
                                                  uint32_t qp_num)
{
    uct_rc_ep_t *rc_ep;
    khiter_t it;

    if (side == UCT_RC_VARUNA_SIDE_PRIMARY) {
        rc_ep = uct_rc_iface_lookup_ep(&iface->super, qp_num);
        if ((rc_ep != NULL) ||
            iface->side[UCT_RC_VARUNA_SIDE_STANDBY].separate) {
            return ucs_derived_of(rc_ep, uct_rc_varuna_ep_t);
        }
        /* the standby port of the same device shares this CQ */
    }

    it = kh_get(uct_rc_varuna_qp, &iface->standby_qps, qp_num);
    return (it == kh_end(&iface->standby_qps)) ? NULL :
           kh_value(&iface->standby_qps, it);
}

/* The same for a QP number from elsewhere (a peer's token), which may be no
 * QP of ours: rc/base's table has rows only where it has QPs */
uct_rc_varuna_ep_t *uct_rc_varuna_iface_find_ep(uct_rc_varuna_iface_t *iface,
                                                unsigned side,
                                                uint32_t qp_num)
{
    if ((qp_num == 0) || (qp_num >= UCS_BIT(UCT_IB_QPN_ORDER))) {
        return NULL;
    }
    if (side == UCT_RC_VARUNA_SIDE_PRIMARY) {
        if (iface->super.eps[qp_num >> UCT_RC_QP_TABLE_ORDER] != NULL) {
            return uct_rc_varuna_iface_lookup_ep(iface, side, qp_num);
        }
        if (iface->side[UCT_RC_VARUNA_SIDE_STANDBY].separate) {
            return NULL;
        }
    }
    /* the standby side's hash, which also has the QPs of a standby port
     * of the primary device */
    return uct_rc_varuna_iface_lookup_ep(iface, UCT_RC_VARUNA_SIDE_STANDBY,
                                         qp_num);
}

ucs_status_t uct_rc_varuna_iface_add_qp(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, unsigned side,
                                        uint32_t qp_num)
{
    khiter_t it;
    int ret;

    if (side == UCT_RC_VARUNA_SIDE_PRIMARY) {
        uct_rc_iface_add_qp(&iface->super, &ep->super, qp_num);
        return UCS_OK;
    }

    it = kh_put(uct_rc_varuna_qp, &iface->standby_qps, qp_num, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        return UCS_ERR_NO_MEMORY;
    }
    kh_value(&iface->standby_qps, it) = ep;
    return UCS_OK;
}

void uct_rc_varuna_iface_remove_qp(uct_rc_varuna_iface_t *iface,
                                   unsigned side, uint32_t qp_num)
{
    khiter_t it;

    if (side == UCT_RC_VARUNA_SIDE_PRIMARY) {
        return; /* rc/base removes it with the QP's cleanup */
    }

    it = kh_get(uct_rc_varuna_qp, &iface->standby_qps, qp_num);
    if (it != kh_end(&iface->standby_qps)) {
        kh_del(uct_rc_varuna_qp, &iface->standby_qps, it);
    }
}


/* ------------------------------------------------------------------------
 * Send completions
 * ------------------------------------------------------------------------ */

/* A send completion with an error, and the side whose CQ gave it (QP
 * numbers are only unique per device) */
typedef struct {
    struct ibv_wc *wc;
    unsigned      side;
} uct_rc_varuna_wc_error_t;

/* The interface's handle_failure (uct_ib_iface_ops_t), which poll_tx calls
 * for every error completion, as rc_verbs does: a failed control request
 * goes to its own handler, a failed operation to the endpoint's, which
 * starts the failover (rc_varuna_failover.c) or, with no path left, UCX's
 * error path. */
static void uct_rc_varuna_iface_handle_failure(uct_ib_iface_t *ib_iface,
                                               void *arg,
                                               ucs_status_t ep_status)
{
    uct_rc_varuna_iface_t *iface      = ucs_derived_of(ib_iface,
                                                       uct_rc_varuna_iface_t);
    const uct_rc_varuna_wc_error_t *e = arg;
    uct_rc_varuna_ep_t *ep;
    unsigned lane;

    ep = uct_rc_varuna_iface_lookup_ep(iface, e->side, e->wc->qp_num);
    if (ep == NULL) {
        return; /* an endpoint already destroyed */
    }
    lane = uct_rc_varuna_iface_wc_lane(iface, e->side, ep, e->wc->qp_num);

    if (e->wc->wr_id & UCT_RC_VARUNA_WRID_CTRL) {
        uct_rc_varuna_ep_ctrl_completion(ep, lane, e->wc);
    } else {
        uct_rc_varuna_ep_handle_failure(ep, lane, e->wc, ep_status);
    }
}

/* The status UCX's error path gets for an error completion: rc_verbs' own
 * choice (UCX patch 0006 exports it), so that UCP treats a dead rc_varuna
 * endpoint as a dead rc_verbs one. Without the patch, the same choice made
 * here: a peer that stopped answering is an endpoint timeout, one that
 * refused the operation a reset connection, a flushed request cancelled. */
static ucs_status_t uct_rc_varuna_wc_status(enum ibv_wc_status wc_status)
{
#if UCT_RC_VARUNA_STOCK_UCX
    switch (wc_status) {
    case IBV_WC_SUCCESS:
        return UCS_OK;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_REM_ABORT_ERR:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_OP_ERR:
        return UCS_ERR_CONNECTION_RESET;
    case IBV_WC_WR_FLUSH_ERR:
        return UCS_ERR_CANCELED;
    default:
        return UCS_ERR_IO_ERROR;
    }
#else
    return uct_rc_verbs_wc_to_ucs_status(wc_status);
#endif
}

static unsigned uct_rc_varuna_iface_poll_tx(uct_rc_varuna_iface_t *iface,
                                            unsigned side)
{
    unsigned num_wcs = iface->super.super.config.tx_max_poll;
    struct ibv_wc wc[num_wcs];
    uct_rc_varuna_wc_error_t error;
    uct_rc_varuna_ep_t *ep;
    ucs_status_t status;
    unsigned i, lane;

    status = uct_ib_poll_cq(iface->side[side].cq[UCT_IB_DIR_TX], &num_wcs, wc);
    if (status != UCS_OK) {
        return 0;
    }

    for (i = 0; i < num_wcs; i++) {
        ep = uct_rc_varuna_iface_lookup_ep(iface, side, wc[i].qp_num);
        if (ucs_unlikely(ep == NULL)) {
            /* an endpoint already destroyed: rc/base took its credits */
            continue;
        }
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS)) {
            error.wc   = &wc[i];
            error.side = side;
            iface->super.super.ops->handle_failure(
                    &iface->super.super, &error,
                    uct_rc_varuna_wc_status(wc[i].status));
            continue;
        }

        if (ucs_unlikely(wc[i].wr_id & UCT_RC_VARUNA_WRID_CTRL)) {
            lane = uct_rc_varuna_iface_wc_lane(iface, side, ep,
                                               wc[i].qp_num);
            uct_rc_varuna_ep_ctrl_completion(ep, lane, &wc[i]);
            continue;
        }

        ucs_trace_poll("rc_varuna iface %p tx_wc wrid 0x%" PRIx64 " ep %p "
                       "qpn 0x%x", iface, wc[i].wr_id, ep, wc[i].qp_num);
        uct_rc_varuna_ep_complete(ep, wc[i].wr_id &
                                      UCT_RC_VARUNA_WRID_SN_MASK);
        ucs_arbiter_group_schedule(&iface->super.tx.arbiter,
                                   &ep->super.arb_group);
    }

    if (ucs_unlikely(!ucs_list_is_empty(&iface->fo.active))) {
        /* failovers first: their resends wait for CQ credits, and the
         * pending queues dispatched below take every credit these
         * completions gave back. Seen: with 64 busy endpoints, 9 stayed
         * in RESEND for good while the others' traffic flowed. */
        uct_rc_varuna_iface_failovers_progress(iface);
    }
    uct_rc_iface_arbiter_dispatch(&iface->super);
    UCS_STATS_UPDATE_COUNTER(iface->super.super.stats,
                             UCT_IB_IFACE_STAT_TX_COMPLETION, num_wcs);
    return num_wcs;
}

/*
 * A standby device has CQs of its own, empty in steady state: only a
 * failover, the peer's control messages and endpoints running on their
 * standby lane after a failover use them. Polling an empty CQ is cheap on
 * an HCA but not on a software device (softib runs a pass of its engine, a
 * system call, for each): polling them at every call took put_lat from
 * 2 to 8 such calls per iteration, and put_lat +10 % over rc_verbs
 * (standby "same": +4 %; contrib/bench). So they are
 * polled at every call while a failover is under way or while they gave
 * something within the last UCT_RC_VARUNA_SB_POLL_BUSY_MS, and otherwise
 * at every UCT_RC_VARUNA_SB_POLL_SPARSE-th call: what arrives there waits
 * at most that many calls. Nothing is lost meanwhile: CQ credits bound the
 * send completions, and a full receive queue makes the sender retry (RNR).
 */
#define UCT_RC_VARUNA_SB_POLL_SPARSE  16
#define UCT_RC_VARUNA_SB_POLL_BUSY_MS 10

static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_iface_poll_standby(uct_rc_varuna_iface_t *iface)
{
    if (!iface->side[UCT_RC_VARUNA_SIDE_STANDBY].separate) {
        return 0;
    }
    if (ucs_unlikely(iface->wakeup.sb_armed)) {
        /* the first call after uct_iface_event_arm(): the worker may have
         * slept, and woken for the standby's completions */
        iface->wakeup.sb_armed = 0;
        return 1;
    }
    if (ucs_unlikely(iface->wakeup.sb_arming)) {
        /* an arm refused for a call that skipped them: UCP arms every
         * interface after one progress call of the worker, and with two
         * rc_varuna interfaces the sparse polling of one or the other
         * refused it up to UCT_RC_VARUNA_SB_POLL_SPARSE times in a row */
        return 1;
    }
    if (++iface->sb_poll.calls == UCT_RC_VARUNA_SB_POLL_SPARSE) {
        iface->sb_poll.calls = 0;
        return 1;
    }
    return !ucs_list_is_empty(&iface->fo.active) ||
           ((ucs_get_time() - iface->sb_poll.last_busy) <
            iface->sb_poll.busy_interval);
}

/*
 * Port events, a failover under way or the periodic check (the watchdog,
 * re-protection) to run in this call. Looked at in every call, also one
 * that found receives: rc/base skips the send completions then (receives
 * come first), and a process whose peer keeps its receive queue busy (UCP
 * emulates atomics with active messages: a server of fetch-adds from many
 * endpoints always has some) would never see its port come back, nor
 * re-protect. Seen: 64 endpoints, the port up again for 2 s, and no
 * re-protection request sent; the next failure ended every endpoint.
 */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_iface_failover_due(uct_rc_varuna_iface_t *iface)
{
    return !ucs_list_is_empty(&iface->fo.active) ||
           uct_rc_varuna_iface_port_events_new(iface) ||
           (ucs_get_time() >= iface->fo.next_check);
}

static unsigned uct_rc_varuna_iface_progress(void *arg)
{
    uct_rc_varuna_iface_t *iface = arg;
    int standby                  = uct_rc_varuna_iface_poll_standby(iface);
    unsigned sb_count            = 0;
    unsigned count, sb_tx;
    int failover_due;

    iface->sb_poll.polled = standby;
    count = uct_rc_varuna_iface_poll_rx(iface, UCT_RC_VARUNA_SIDE_PRIMARY);
    if (standby) {
        sb_count = uct_rc_varuna_iface_poll_rx(iface,
                                               UCT_RC_VARUNA_SIDE_STANDBY);
        count   += sb_count;
    }
    /* also when nothing came: buffers the user kept may be back in the
     * pool since the last refill found it empty */
    uct_rc_varuna_iface_refill(iface, 0);
    failover_due = uct_rc_varuna_iface_failover_due(iface);
    if (!uct_rc_iface_poll_tx(&iface->super, count) &&
        ucs_likely(!failover_due)) {
        goto out;
    }

    count += uct_rc_varuna_iface_poll_tx(iface, UCT_RC_VARUNA_SIDE_PRIMARY);
    if (standby) {
        sb_tx     = uct_rc_varuna_iface_poll_tx(iface,
                                                UCT_RC_VARUNA_SIDE_STANDBY);
        sb_count += sb_tx;
        count    += sb_tx;
    }

    /* port events, failovers under way, the watchdog, re-protection,
     * after the send completions (the watchdog judges by them). Not
     * counted: a worker in wakeup mode does not sleep while any of them
     * is due (uct_rc_varuna_iface_work_due makes event_arm refuse) */
    if (ucs_unlikely(failover_due)) {
        uct_rc_varuna_iface_failover_check(iface);
    }

out:
    if (count > 0) {
        iface->wakeup.armed = 0;          /* arm again before sleeping */
    }
    if (ucs_unlikely(sb_count > 0)) {
        iface->sb_poll.last_busy = ucs_get_time();
    }
    if (ucs_unlikely(iface->fo.dispatch)) {
        iface->fo.dispatch = 0;
        uct_rc_iface_arbiter_dispatch(&iface->super);
    }
    return count;
}

static void uct_rc_varuna_iface_progress_enable(uct_iface_h tl_iface,
                                                unsigned flags)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_rc_varuna_iface_t);
    unsigned count;

    if (flags & UCT_PROGRESS_RECV) {
        /* hand the remaining quota of receives to the primary SRQ */
        count                          = iface->super.rx.srq.quota;
        iface->super.rx.srq.available += count;
        iface->super.rx.srq.quota     -= count;
        uct_rc_varuna_iface_refill(iface, 1);
    }

    uct_base_iface_progress_enable_cb(&iface->super.super.super,
                                      iface->super.progress, flags);
}


/* ------------------------------------------------------------------------
 * Interface
 * ------------------------------------------------------------------------ */

static ucs_status_t uct_rc_varuna_iface_query(uct_iface_h tl_iface,
                                              uct_iface_attr_t *iface_attr)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_rc_varuna_iface_t);
    ucs_status_t status;

    status = uct_rc_iface_query(&iface->super, iface_attr,
                                iface->config.max_inline,
                                iface->config.max_inline,
                                iface->config.short_desc_size,
                                iface->config.max_send_sge - 1,
                                sizeof(uct_rc_hdr_t),
                                iface->config.max_send_sge);
    if (status != UCS_OK) {
        return status;
    }

    iface_attr->cap.flags         |= UCT_IFACE_FLAG_EP_CHECK;
#if !UCT_RC_VARUNA_STOCK_UCX
    iface_attr->cap.flags         |= UCT_IFACE_FLAG_EP_OUTSTANDING_PURGE;
#endif
    iface_attr->cap.put.max_zcopy  = ucs_min(iface_attr->cap.put.max_zcopy,
                                             iface->config.max_zcopy);
    iface_attr->latency.m  += 1e-9;  /* per extra QP, as rc_verbs */
    /* software overhead, plus posting a log write every LOG_INTERVAL */
    iface_attr->overhead    = 75e-9 +
                              (iface->config.log_enable ?
                               (10e-9 / iface->config.log_interval) : 0);
    iface_attr->ep_addr_len = sizeof(uct_rc_varuna_ep_addr_t) +
                              (iface->side[UCT_RC_VARUNA_SIDE_STANDBY].is_global ?
                               sizeof(union ibv_gid) : 0);
    return UCS_OK;
}

static ucs_status_t
uct_rc_varuna_iface_init_rx(uct_rc_iface_t *rc_iface,
                            const uct_rc_iface_common_config_t *config)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(rc_iface,
                                                  uct_rc_varuna_iface_t);

    return uct_rc_iface_init_rx(rc_iface, config,
                                &iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].srq);
}

static void uct_rc_varuna_iface_cleanup_rx(uct_rc_iface_t *rc_iface)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(rc_iface,
                                                  uct_rc_varuna_iface_t);

    uct_ib_destroy_srq(iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].srq);
}

/* A descriptor of our pools knows its keys on both devices. */
static void uct_rc_varuna_desc_init(uct_iface_h tl_iface, void *obj,
                                    uct_mem_h memh)
{
    uct_rc_varuna_desc_t *desc = obj;
    uct_rc_varuna_memh_t *m    = memh;

    desc->lkey[0] = m->lkey[0];
    desc->lkey[1] = m->lkey[1];
}

/* Receive buffers of a standby device carry its key. */
static void uct_rc_varuna_standby_rx_desc_init(uct_iface_h tl_iface,
                                               void *obj, uct_mem_h memh)
{
    uct_ib_iface_recv_desc_t *desc = obj;

    desc->lkey = ((uct_rc_varuna_memh_t*)memh)->lkey[1];
}

/*
 * The address of a side's port as it is now: a port that was down when the
 * interface opened may have had no LID yet (InfiniBand gives one when the
 * port comes up), so re-protection refreshes it before it sends it.
 */
void uct_rc_varuna_iface_side_refresh(uct_rc_varuna_iface_t *iface,
                                      unsigned side)
{
    uct_rc_varuna_side_t *s = &iface->side[side];
    struct ibv_port_attr port_attr;

    if (ibv_query_port(s->ibv_context, s->port_num, &port_attr) != 0) {
        ucs_debug("rc_varuna: ibv_query_port(%s:%d) failed: %m",
                  ibv_get_device_name(s->ibv_context->device), s->port_num);
        return;
    }
    s->lid       = port_attr.lid;
    s->gid_index = iface->super.super.gid_info.gid_index;
    s->is_global = (port_attr.link_layer == IBV_LINK_LAYER_ETHERNET);
    if (ibv_query_gid(s->ibv_context, s->port_num, s->gid_index, &s->gid)) {
        memset(&s->gid, 0, sizeof(s->gid));
    }
}

/* The standby's own CQs, SRQ and receive buffers, on its own device */
static ucs_status_t
uct_rc_varuna_iface_init_standby_device(uct_rc_varuna_iface_t *iface,
                                        const uct_rc_varuna_iface_config_t *config,
                                        const uct_iface_params_t *params)
{
    const uct_ib_iface_config_t *ib_config = &config->super.super.super;
    uct_rc_varuna_side_t *sb = &iface->side[UCT_RC_VARUNA_SIDE_STANDBY];
    struct ibv_srq_init_attr srq_attr;
    size_t alignment, align_offset;
    ucs_status_t status;

    /* a channel of the standby device, for UCX's wakeup mode */
    iface->wakeup.sb_channel = ibv_create_comp_channel(sb->ibv_context);
    if (iface->wakeup.sb_channel == NULL) {
        ucs_error("rc_varuna: failed to create the standby completion "
                  "channel: %m");
        return UCS_ERR_IO_ERROR;
    }
    status = ucs_sys_fcntl_modfl(iface->wakeup.sb_channel->fd, O_NONBLOCK,
                                 0);
    if (status != UCS_OK) {
        goto err_destroy_channel;
    }

    sb->cq[UCT_IB_DIR_TX] = ibv_create_cq(sb->ibv_context,
                                          config->super.tx_cq_len, NULL,
                                          iface->wakeup.sb_channel, 0);
    sb->cq[UCT_IB_DIR_RX] = ibv_create_cq(sb->ibv_context,
                                          ib_config->rx.queue_len, NULL,
                                          iface->wakeup.sb_channel, 0);
    if ((sb->cq[UCT_IB_DIR_TX] == NULL) || (sb->cq[UCT_IB_DIR_RX] == NULL)) {
        ucs_error("rc_varuna: failed to create standby CQs: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_cqs;
    }

    memset(&srq_attr, 0, sizeof(srq_attr));
    srq_attr.attr.max_wr  = ib_config->rx.queue_len;
    srq_attr.attr.max_sge = 1;
    sb->srq = ibv_create_srq(sb->pd, &srq_attr);
    if (sb->srq == NULL) {
        ucs_error("rc_varuna: failed to create the standby SRQ: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_cqs;
    }

    status = uct_iface_param_am_alignment(params,
                                          iface->super.super.config.seg_size,
                                          iface->super.super.config.rx_hdr_offset,
                                          iface->super.super.config.rx_payload_offset,
                                          &alignment, &align_offset);
    if (status != UCS_OK) {
        goto err_destroy_srq;
    }

    status = uct_iface_mpool_init(&iface->super.super.super, &sb->rx_mp,
                                  iface->super.super.config.rx_payload_offset +
                                  iface->super.super.config.seg_size,
                                  align_offset, alignment, &ib_config->rx.mp,
                                  ucs_max(config->standby_rx_len, 128),
                                  uct_rc_varuna_standby_rx_desc_init,
                                  "rc_varuna_standby_rx");
    if (status != UCS_OK) {
        goto err_destroy_srq;
    }

    sb->rx_quota  = ucs_min(config->standby_rx_len, ib_config->rx.queue_len);
    sb->rx_max    = ib_config->rx.queue_len;
    sb->rx_posted = 0;
    sb->rx_run    = 0;
    return UCS_OK;

err_destroy_srq:
    ibv_destroy_srq(sb->srq);
err_destroy_cqs:
    if (sb->cq[UCT_IB_DIR_RX] != NULL) {
        ibv_destroy_cq(sb->cq[UCT_IB_DIR_RX]);
    }
    if (sb->cq[UCT_IB_DIR_TX] != NULL) {
        ibv_destroy_cq(sb->cq[UCT_IB_DIR_TX]);
    }
err_destroy_channel:
    ibv_destroy_comp_channel(iface->wakeup.sb_channel);
    iface->wakeup.sb_channel = NULL;
    return status;
}

/* Pair the interface's port with its standby (DESIGN.md section 3.1). */
static ucs_status_t
uct_rc_varuna_iface_init_sides(uct_rc_varuna_iface_t *iface,
                               const uct_rc_varuna_iface_config_t *config,
                               const uct_iface_params_t *params)
{
    uct_rc_varuna_md_t *md   = ucs_derived_of(iface->super.super.super.md,
                                              uct_rc_varuna_md_t);
    uct_rc_varuna_side_t *sp = &iface->side[UCT_RC_VARUNA_SIDE_PRIMARY];
    uct_rc_varuna_side_t *sb = &iface->side[UCT_RC_VARUNA_SIDE_STANDBY];
    uct_ib_device_t *standby_dev;
    ucs_status_t status;
    uint8_t port;
    int port_up;

    sp->separate              = 0;
    sp->port_num              = iface->super.super.config.port_num;
    sp->pkey_index            = iface->super.super.pkey_index;
    sp->ibv_context           = md->super.dev.ibv_context;
    sp->pd                    = md->super.pd;
    sp->cq[UCT_IB_DIR_TX]     = iface->super.super.cq[UCT_IB_DIR_TX];
    sp->cq[UCT_IB_DIR_RX]     = iface->super.super.cq[UCT_IB_DIR_RX];
    uct_rc_varuna_iface_side_refresh(iface, UCT_RC_VARUNA_SIDE_PRIMARY);

    status = uct_rc_varuna_md_standby_port(md, sp->port_num, &port,
                                           &port_up);
    if (status != UCS_OK) {
        if (md->require_standby) {
            ucs_error("rc_varuna: %s:%d has no standby port "
                      "(UCX_RC_VARUNA_REQUIRE_STANDBY=y)",
                      uct_ib_device_name(&md->super.dev), sp->port_num);
            return UCS_ERR_NO_DEVICE;
        }
        ucs_diag("rc_varuna: %s:%d has no standby port, endpoints on it "
                 "have no failover", uct_ib_device_name(&md->super.dev),
                 sp->port_num);
        iface->has_standby = 0;
        return UCS_OK;
    }

    sb->port_num   = port;
    sb->pkey_index = sp->pkey_index;
    if (md->standby_md != NULL) {
        standby_dev     = &md->standby_md->dev;
        sb->separate    = 1;
        sb->ibv_context = standby_dev->ibv_context;
        sb->pd          = md->standby_md->pd;
        status = uct_rc_varuna_iface_init_standby_device(iface, config,
                                                         params);
        if (status != UCS_OK) {
            return status;
        }
    } else {
        standby_dev = &md->super.dev;
        sb->separate    = 0;
        sb->ibv_context = sp->ibv_context;
        sb->pd          = sp->pd;
        sb->cq[UCT_IB_DIR_TX] = sp->cq[UCT_IB_DIR_TX];
        sb->cq[UCT_IB_DIR_RX] = sp->cq[UCT_IB_DIR_RX];
        sb->srq               = sp->srq;
    }
    uct_rc_varuna_iface_side_refresh(iface, UCT_RC_VARUNA_SIDE_STANDBY);

    iface->has_standby = 1;
    if (port_up) {
        ucs_debug("rc_varuna: %s:%d paired with standby %s:%d",
                  uct_ib_device_name(&md->super.dev), sp->port_num,
                  uct_ib_device_name(standby_dev), sb->port_num);
    } else {
        ucs_diag("rc_varuna: %s:%d paired with standby %s:%d, which is down: "
                 "endpoints get their standby lane when it comes up",
                 uct_ib_device_name(&md->super.dev), sp->port_num,
                 uct_ib_device_name(standby_dev), sb->port_num);
    }
    return UCS_OK;
}

static void uct_rc_varuna_iface_cleanup_standby(uct_rc_varuna_iface_t *iface)
{
    uct_rc_varuna_side_t *sb = &iface->side[UCT_RC_VARUNA_SIDE_STANDBY];

    if (!sb->separate) {
        return;
    }
    uct_ib_destroy_srq(sb->srq);
    ibv_destroy_cq(sb->cq[UCT_IB_DIR_RX]);
    ibv_destroy_cq(sb->cq[UCT_IB_DIR_TX]);
    ibv_destroy_comp_channel(iface->wakeup.sb_channel);
    /* buffers still posted went away with the SRQ */
    ucs_mpool_cleanup(&sb->rx_mp, 0);
}

/*
 * A side's send queue length, and what an endpoint may post on it. The
 * control requests' entries come out of the queue, not on top of it: a
 * device rounds a send queue up to a power of two (softib and mlx5 do), and
 * 256 + 4 entries made a queue of 512, twice rc_verbs'. A request is
 * signaled at least every quarter of the operations' share: with no more
 * credits than one moderation interval of unsignaled requests nothing is
 * ever signaled again (issue 14), and a standby queue is shorter.
 */
static void uct_rc_varuna_iface_init_tx_len(uct_rc_varuna_iface_t *iface,
                                            unsigned side, unsigned qp_len,
                                            unsigned cq_moderation)
{
    uct_rc_varuna_side_t *s = &iface->side[side];

    s->tx_qp_len     = qp_len;
    s->tx_max_wr     = qp_len - UCT_RC_VARUNA_CTRL_WR_RESERVE;
    s->tx_moderation = ucs_max(1, ucs_min(cq_moderation, s->tx_max_wr / 4));
}

/* Learn max_inline and max_send_sge from a QP the device really creates */
static ucs_status_t uct_rc_varuna_iface_probe_qp(uct_rc_varuna_iface_t *iface)
{
    uct_ib_qp_attr_t attr = {};
    struct ibv_qp *qp;
    ucs_status_t status;

    status = uct_rc_iface_qp_create(&iface->super, &qp, &attr,
                                    iface->super.config.tx_qp_len,
                                    iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].srq);
    if (status != UCS_OK) {
        return status;
    }
    uct_ib_destroy_qp(qp);

    iface->config.max_inline   = attr.cap.max_inline_data;
    iface->config.max_send_sge = ucs_min(UCT_IB_MAX_IOV,
                                         attr.cap.max_send_sge);
    if ((iface->config.max_send_sge < 2) ||
        (iface->config.max_inline < sizeof(uct_rc_varuna_ctrl_msg_t))) {
        /* an AM header needs a gather entry; the log write takes 8 inline
         * bytes, a control message its size */
        ucs_error("rc_varuna: device has max_send_sge %zu, max_inline %zu",
                  iface->config.max_send_sge, iface->config.max_inline);
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

/*
 * The configuration as the interface keeps it (iface->config, and what
 * rc/base reads of ours): the one place a setting is converted, after
 * uct_rc_varuna_iface_config_check() has said it is in range. WATCHDOG
 * and PEER_TIMEOUT are ucs_time_t already, their auto and inf taken as they
 * say (off, wait); the other times are seconds.
 */
static void
uct_rc_varuna_iface_config_init(uct_rc_varuna_iface_t *iface,
                                const uct_rc_varuna_iface_config_t *config)
{
    const uct_ib_iface_config_t *ib_config = &config->super.super.super;

    uct_rc_varuna_iface_init_tx_len(iface, UCT_RC_VARUNA_SIDE_PRIMARY,
                                    iface->super.config.tx_qp_len,
                                    config->super.tx_cq_moderation);
    uct_rc_varuna_iface_init_tx_len(iface, UCT_RC_VARUNA_SIDE_STANDBY,
                                    config->standby_tx_len,
                                    config->super.tx_cq_moderation);
    iface->config.tx_max_wr           =
            ucs_max(iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].tx_max_wr,
                    iface->side[UCT_RC_VARUNA_SIDE_STANDBY].tx_max_wr);
    iface->config.log_enable          = config->log_enable;
    iface->config.log_interval        = config->log_interval;
    iface->config.recovery            = (uct_rc_varuna_recovery_t)
                                        config->recovery;
    /* near the end of the CQ credits (uct_rc_varuna_ep_check_res) */
    iface->super.config.tx_moderation =
            iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].tx_moderation;
    iface->super.config.fence_mode    =
            (config->super.super.fence_mode == UCT_RC_FENCE_MODE_NONE) ?
            UCT_RC_FENCE_MODE_NONE : UCT_RC_FENCE_MODE_WEAK;
    iface->super.super.config.sl      = uct_ib_iface_config_select_sl(
                                                ib_config);
    iface->config.short_desc_size     = ucs_max(sizeof(uct_rc_hdr_t),
                                                config->max_am_hdr);
    iface->config.short_desc_size     = ucs_max(UCT_IB_MAX_ATOMIC_SIZE,
                                                iface->config.short_desc_size);

    /* A completion at least every max_zcopy bytes: the watchdog counts
     * from the last one, and must not take a large transfer on a slow
     * link for a dead link (a 64 MB WRITE takes over 250 ms at 250 MB/s). */
    if ((config->max_zcopy == UCS_MEMUNITS_AUTO) ||
        (config->max_zcopy == UCS_MEMUNITS_INF)) {
        iface->config.max_zcopy = UCS_MBYTE;
    } else {
        iface->config.max_zcopy = ucs_max(config->max_zcopy, UCS_KBYTE);
    }
    iface->super.config.max_get_zcopy =
            ucs_min(iface->super.config.max_get_zcopy,
                    iface->config.max_zcopy);

    if ((config->watchdog == UCS_TIME_AUTO) ||
        (config->watchdog == UCS_TIME_INFINITY)) {
        iface->config.watchdog = 0;
    } else {
        iface->config.watchdog = config->watchdog;
    }
    iface->config.peer_timeout       = (config->peer_timeout ==
                                        UCS_TIME_AUTO) ? UCS_TIME_INFINITY :
                                       config->peer_timeout;
    iface->config.reprotect_interval = ucs_time_from_sec(
                                               config->reprotect_interval);
    iface->config.last_wqe_timeout   = ucs_time_from_sec(
                                               config->last_wqe_timeout);
    iface->config.reprotect_timeout  = ucs_time_from_sec(
                                               config->reprotect_timeout);
    iface->config.quarantine_max     = ucs_time_from_sec(
                                               config->quarantine_max);
    iface->config.failback_hold      = (config->failback_hold ==
                                        UCS_TIME_AUTO) ? UCS_TIME_INFINITY :
                                       config->failback_hold;
    iface->config.grow_after         = (config->grow_after ==
                                        UCS_TIME_AUTO) ? UCS_TIME_INFINITY :
                                       config->grow_after;
}

static UCS_CLASS_INIT_FUNC(uct_rc_varuna_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_rc_varuna_iface_config_t *config =
            ucs_derived_of(tl_config, uct_rc_varuna_iface_config_t);
    uct_ib_iface_config_t *ib_config     = &config->super.super.super;
    uct_ib_md_t *ib_md                   = ucs_derived_of(tl_md, uct_ib_md_t);
    uct_ib_iface_init_attr_t init_attr   = {};
    ucs_status_t status;

    init_attr.fc_req_size           = sizeof(uct_rc_pending_req_t);
    init_attr.rx_hdr_len            = sizeof(uct_rc_hdr_t);
    init_attr.qp_type               = IBV_QPT_RC;
    init_attr.cq_len[UCT_IB_DIR_RX] = ib_config->rx.queue_len;
    init_attr.cq_len[UCT_IB_DIR_TX] = config->super.tx_cq_len;
    init_attr.seg_size              = ib_config->seg_size;
    init_attr.max_rd_atomic         = IBV_DEV_ATTR(&ib_md->dev,
                                                   max_qp_rd_atom);

    /* before anything is created, and before rc/base, which would clamp a
     * retry count with a warning of its own */
    status = uct_rc_varuna_iface_config_check(config);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_rc_iface_t, &uct_rc_varuna_iface_tl_ops,
                              &uct_rc_varuna_iface_ops, tl_md, worker, params,
                              &config->super.super, &init_attr);

    /* rc/base's init_rx already created the primary SRQ in side[0] */
    memset(&self->side[UCT_RC_VARUNA_SIDE_STANDBY], 0,
           sizeof(self->side[UCT_RC_VARUNA_SIDE_STANDBY]));
    self->has_standby = 0;
    kh_init_inplace(uct_rc_varuna_qp, &self->standby_qps);
    ucs_list_head_init(&self->standby_gc_list);
    memset(&self->fo, 0, sizeof(self->fo));
    ucs_list_head_init(&self->fo.active);
    ucs_list_head_init(&self->fo.reprotect);
    ucs_list_head_init(&self->fo.failback);
    ucs_list_head_init(&self->fo.grow);
    ucs_list_head_init(&self->fo.watched);
    uct_rc_varuna_iface_reprotect_recheck(self);
    self->fo.next_check = UCS_TIME_INFINITY;
    memset(&self->wakeup, 0, sizeof(self->wakeup));
    self->wakeup.epfd           = -1;
    self->wakeup.timer_id       = -1;
    self->wakeup.efd            = -1;
    self->sb_poll.polled        = 0;
    self->sb_poll.calls         = 0;
    self->sb_poll.last_busy     = 0;
    self->sb_poll.busy_interval =
            ucs_time_from_msec(UCT_RC_VARUNA_SB_POLL_BUSY_MS);

    uct_rc_varuna_iface_config_init(self, config);
    self->super.progress = uct_rc_varuna_iface_progress;

    status = uct_rc_init_fc_thresh(&config->super, &self->super);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_rc_varuna_iface_probe_qp(self);
    if (status != UCS_OK) {
        goto err;
    }
    self->config.op_size = ucs_align_up(sizeof(uct_rc_varuna_op_t) +
                                        (self->config.max_send_sge *
                                         sizeof(uct_rc_varuna_sge_t)) +
                                        self->config.max_inline,
                                        sizeof(uint64_t));

    status = uct_iface_mpool_init(&self->super.super.super, &self->tx_mp,
                                  sizeof(uct_rc_varuna_desc_t) +
                                  self->super.super.config.seg_size,
                                  sizeof(uct_rc_varuna_desc_t),
                                  UCS_SYS_CACHE_LINE_SIZE, &ib_config->tx.mp,
                                  self->super.config.tx_qp_len,
                                  uct_rc_varuna_desc_init, "rc_varuna_tx_desc");
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_iface_mpool_init(&self->super.super.super,
                                  &self->short_desc_mp,
                                  sizeof(uct_rc_varuna_desc_t) +
                                  self->config.short_desc_size,
                                  sizeof(uct_rc_varuna_desc_t),
                                  UCS_SYS_CACHE_LINE_SIZE, &ib_config->tx.mp,
                                  self->super.config.tx_qp_len,
                                  uct_rc_varuna_desc_init,
                                  "rc_varuna_short_desc");
    if (status != UCS_OK) {
        goto err_cleanup_tx_mp;
    }

    status = uct_rc_varuna_log_init(self, ib_config);
    if (status != UCS_OK) {
        goto err_cleanup_short_mp;
    }

    status = uct_rc_varuna_iface_init_sides(self, config, params);
    if (status != UCS_OK) {
        goto err_cleanup_log;
    }

    status = uct_rc_varuna_iface_ctrl_init(self);
    if (status != UCS_OK) {
        goto err_cleanup_sides;
    }

    status = uct_rc_varuna_iface_cls_init(self);
    if (status != UCS_OK) {
        goto err_cleanup_sides;
    }

    status = uct_rc_varuna_iface_rx_held_init(self);
    if (status != UCS_OK) {
        goto err_cleanup_cls;
    }

    uct_rc_varuna_iface_detect_init(self);
    status = uct_rc_varuna_iface_report_open(self, config->report);
    if (status != UCS_OK) {
        goto err_cleanup_rx_held;
    }

    status = uct_rc_varuna_iface_wakeup_init(self, params);
    if (status != UCS_OK) {
        goto err_close_report;
    }

    return UCS_OK;

err_close_report:
    uct_rc_varuna_iface_report_close(self);
err_cleanup_rx_held:
    uct_rc_varuna_iface_rx_held_cleanup(self);
err_cleanup_cls:
    uct_rc_varuna_iface_cls_cleanup(self);
err_cleanup_sides:
    uct_rc_varuna_iface_cleanup_standby(self);
err_cleanup_log:
    uct_rc_varuna_log_cleanup(self);
err_cleanup_short_mp:
    ucs_mpool_cleanup(&self->short_desc_mp, 1);
err_cleanup_tx_mp:
    ucs_mpool_cleanup(&self->tx_mp, 1);
err:
    kh_destroy_inplace(uct_rc_varuna_qp, &self->standby_qps);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_rc_varuna_iface_t)
{
    uct_base_iface_progress_disable(&self->super.super.super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_rc_iface_cleanup_qps(&self->super);
    uct_rc_varuna_iface_cleanup_standby_qps(self);
    uct_rc_varuna_iface_wakeup_cleanup(self);
    uct_rc_varuna_iface_report_close(self);
    uct_rc_varuna_iface_rx_held_cleanup(self);
    uct_rc_varuna_iface_cls_cleanup(self);
    uct_rc_varuna_iface_cleanup_standby(self);
    uct_rc_varuna_log_cleanup(self);
    ucs_mpool_cleanup(&self->short_desc_mp, 1);
    ucs_mpool_cleanup(&self->tx_mp, 1);
    kh_destroy_inplace(uct_rc_varuna_qp, &self->standby_qps);
}

UCS_CLASS_DEFINE(uct_rc_varuna_iface_t, uct_rc_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_rc_varuna_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_rc_varuna_iface_t, uct_iface_t);

static uct_iface_ops_t uct_rc_varuna_iface_tl_ops = {
    .ep_am_short              = uct_rc_varuna_ep_am_short,
    .ep_am_short_iov          = uct_rc_varuna_ep_am_short_iov,
    .ep_am_bcopy              = uct_rc_varuna_ep_am_bcopy,
    .ep_am_zcopy              = uct_rc_varuna_ep_am_zcopy,
    .ep_put_short             = uct_rc_varuna_ep_put_short,
    .ep_put_bcopy             = uct_rc_varuna_ep_put_bcopy,
    .ep_put_zcopy             = uct_rc_varuna_ep_put_zcopy,
    .ep_get_bcopy             = uct_rc_varuna_ep_get_bcopy,
    .ep_get_zcopy             = uct_rc_varuna_ep_get_zcopy,
    .ep_atomic_cswap64        = uct_rc_varuna_ep_atomic_cswap64,
    .ep_atomic64_post         = uct_rc_varuna_ep_atomic64_post,
    .ep_atomic64_fetch        = uct_rc_varuna_ep_atomic64_fetch,
    .ep_atomic_cswap32        = (uct_ep_atomic_cswap32_func_t)
                                        ucs_empty_function_return_unsupported,
    .ep_atomic32_post         = (uct_ep_atomic32_post_func_t)
                                        ucs_empty_function_return_unsupported,
    .ep_atomic32_fetch        = (uct_ep_atomic32_fetch_func_t)
                                        ucs_empty_function_return_unsupported,
    .ep_pending_add           = uct_rc_varuna_ep_pending_add,
    .ep_pending_purge         = uct_rc_ep_pending_purge,
    .ep_flush                 = uct_rc_varuna_ep_flush,
    .ep_fence                 = uct_rc_varuna_ep_fence,
    .ep_check                 = uct_rc_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_rc_varuna_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_rc_varuna_ep_t),
    .ep_get_address           = uct_rc_varuna_ep_get_address,
    .ep_connect_to_ep         = uct_rc_varuna_ep_connect_to_ep,
    .iface_flush              = uct_rc_iface_flush,
    .iface_fence              = uct_rc_iface_fence,
    .iface_progress_enable    = uct_rc_varuna_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_rc_iface_do_progress,
    .iface_event_fd_get       = uct_rc_varuna_iface_event_fd_get,
    .iface_event_arm          = uct_rc_varuna_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_rc_varuna_iface_t),
    .iface_query              = uct_rc_varuna_iface_query,
    .iface_get_address        = ucs_empty_function_return_success,
    .iface_get_device_address = uct_ib_iface_get_device_address,
    .iface_is_reachable       = uct_ib_iface_is_reachable
};

/*
 * UCP runs its keepalive on the lane whose transport scores best, weighting
 * each by how many endpoints can have work in flight at once (1.13.1 reads
 * max_inflight_eps only there, ucp/wireup/select.c). rc/base answers
 * tx_cq_len / tx_qp_len, 16 by default, so UCP always picked the aux UD
 * lane, and that lane stays on the port it was opened on: after a failover
 * UCP kept probing the peer through the dead port and failed the endpoint
 * 20 to 50 s later (issue 9). rc_varuna's check is one empty WRITE on the
 * endpoint's active lane, which fails over with the lane; it needs one CQ
 * entry, and when none is free the check waits for the next round
 * (uct_rc_varuna_ep_post_check). So any number of endpoints can be
 * checked, and UCP chooses rc_varuna for keepalive when it is a lane.
 */
static ucs_status_t
uct_rc_varuna_iface_estimate_perf(uct_iface_h tl_iface,
                                  uct_perf_attr_t *perf_attr)
{
    ucs_status_t status;

    status = uct_rc_iface_estimate_perf(tl_iface, perf_attr);
    if (status != UCS_OK) {
        return status;
    }

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS) {
        perf_attr->max_inflight_eps = SIZE_MAX;
    }
    return UCS_OK;
}

static uct_rc_iface_ops_t uct_rc_varuna_iface_ops = {
    .super = {
        .super = {
            .iface_estimate_perf = uct_rc_varuna_iface_estimate_perf,
            .iface_vfs_refresh   = uct_rc_varuna_iface_vfs_refresh,
#if UCT_RC_VARUNA_STOCK_UCX
            .ep_query              = (uct_ep_query_func_t)
                                     ucs_empty_function_return_unsupported,
            .ep_invalidate         = uct_rc_varuna_ep_invalidate
#else
            .ep_query              = uct_rc_varuna_ep_query,
            .ep_invalidate         = uct_rc_varuna_ep_invalidate,
            .iface_derive_rx_token = uct_rc_varuna_iface_derive_rx_token,
            .ep_outstanding_purge  = uct_rc_varuna_ep_outstanding_purge
#endif
        },
        .create_cq      = uct_ib_verbs_create_cq,
        .arm_cq         = uct_ib_iface_arm_cq,
        .event_cq       = (uct_ib_iface_event_cq_func_t)ucs_empty_function,
        .handle_failure = uct_rc_varuna_iface_handle_failure
    },
    .init_rx         = uct_rc_varuna_iface_init_rx,
    .cleanup_rx      = uct_rc_varuna_iface_cleanup_rx,
    .fc_ctrl         = uct_rc_varuna_ep_fc_ctrl,
    .fc_handler      = uct_rc_iface_fc_handler,
    .cleanup_qp      = uct_rc_varuna_iface_qp_cleanup,
    .ep_post_check   = uct_rc_varuna_ep_post_check,
    .ep_vfs_populate = uct_rc_varuna_ep_vfs_populate
};

static ucs_status_t
uct_rc_varuna_query_tl_devices(uct_md_h md,
                               uct_tl_device_resource_t **tl_devices_p,
                               unsigned *num_tl_devices_p)
{
    uct_ib_md_t *ib_md = ucs_derived_of(md, uct_ib_md_t);

    return uct_ib_device_query_ports(&ib_md->dev, 0, tl_devices_p,
                                     num_tl_devices_p);
}

UCT_TL_DEFINE_ENTRY(&uct_rc_varuna_component, rc_varuna,
                    uct_rc_varuna_query_tl_devices, uct_rc_varuna_iface_t,
                    "RC_VARUNA_", uct_rc_varuna_iface_config_table,
                    uct_rc_varuna_iface_config_t);

/*
 * uct_query_components() dlopen()s libuct_varuna ("varuna" is in
 * uct_MODULES) before it walks the component list, so registering from
 * the library constructor is enough.
 */
UCS_F_CTOR void uct_rc_varuna_init(void)
{
    /* which build this is, and what it lacks (docs/packages.md) */
#if UCT_RC_VARUNA_STOCK_UCX
    ucs_info("rc_varuna: module for an unmodified UCX (preloaded): no UCP "
             "lane failover (needs UCX patches 0007 to 0010), port events "
             "from a device context of its own, re-protection without "
             "LAST_WQE_REACHED (waits UCX_RC_VARUNA_LAST_WQE_TIMEOUT), the "
             "aux ud_verbs lane not reset when its QP fails (patch 0004)");
#else
    ucs_info("rc_varuna: module of a UCX with its patches: UCP lane "
             "failover, port event watcher, aux ud_verbs lane reset");
#endif
    uct_component_register(&uct_rc_varuna_component);
    uct_tl_register(&uct_rc_varuna_component, &UCT_TL_NAME(rc_varuna));
}

UCS_F_DTOR void uct_rc_varuna_cleanup(void)
{
    uct_tl_unregister(&UCT_TL_NAME(rc_varuna));
    uct_component_unregister(&uct_rc_varuna_component);
}
