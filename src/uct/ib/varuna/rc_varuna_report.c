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
#include <ucs/datastruct/string_buffer.h>
#include <ucs/vfs/base/vfs_cb.h>
#include <ucs/vfs/base/vfs_obj.h>
#include <ucs/time/time.h>

#include <inttypes.h>


/*
 * What a failover tells: one log line per failover (info), one JSON line in
 * the UCX_RC_VARUNA_REPORT file, and the interface's counters, which UCX's
 * VFS shows and which close the report when the interface goes away.
 */


/* A moment of a failover in microseconds after its detection, or null
 * when it did not happen */
static void uct_rc_varuna_report_us(const uct_rc_varuna_report_t *rep,
                                    ucs_time_t t, char *buf, size_t max)
{
    if (t != 0) {
        ucs_snprintf_zero(buf, max, "%.1f",
                          ucs_time_to_usec(t - rep->t_detect));
    } else {
        ucs_strncpy_zero(buf, "null", max);
    }
}

/* Where the time of a failover went: when, after the detection, it entered
 * each of its states (those it went through; the log read is skipped when
 * nothing needs it) */
static void uct_rc_varuna_report_phases(const uct_rc_varuna_report_t *rep,
                                        char *entered, size_t max)
{
    static const uct_rc_varuna_fo_state_t states[] = {
        UCT_RC_VARUNA_FO_WAIT_QUIET, UCT_RC_VARUNA_FO_READ_LOG,
        UCT_RC_VARUNA_FO_DECIDE, UCT_RC_VARUNA_FO_RESEND,
        UCT_RC_VARUNA_FO_REPLAYING
    };
    size_t i, len = 0;
    int ret;

    entered[0] = '\0';
    for (i = 0; i < ucs_static_array_size(states); i++) {
        if (rep->t_enter[states[i]] == 0) {
            continue;
        }
        ret = snprintf(entered + len, max - len, "%s\"%s\":%.1f",
                       (len > 0) ? "," : "",
                       uct_rc_varuna_fo_state_str(states[i]),
                       ucs_time_to_usec(rep->t_enter[states[i]] -
                                        rep->t_detect));
        if ((ret < 0) || ((size_t)ret >= (max - len))) {
            entered[len] = '\0'; /* whole entries only: valid JSON */
            break;
        }
        len += ret;
    }
}

/* The recovery mode's name in the reports */
static const char *uct_rc_varuna_recovery_str(uct_rc_varuna_iface_t *iface)
{
    return (iface->config.recovery == UCT_RC_VARUNA_RECOVERY_VARUNA) ?
           "varuna" : "blanket";
}

void uct_rc_varuna_ep_report(uct_rc_varuna_iface_t *iface,
                             uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_report_t *rep             = &ep->fo.report;
    const uct_rc_varuna_cls_summary_t *dec  = &rep->decided;
    const uct_rc_varuna_cls_input_t *learnt = &rep->learned;
    double decide_us, recover_us;
    char from[64], to[64], log_sn[32], peer_rq_psn[16], entered[192];
    char peer_notice[16], notice_sent[16];

    decide_us  = ucs_time_to_usec(rep->t_decided - rep->t_detect);
    recover_us = ucs_time_to_usec(rep->t_recovered - rep->t_detect);
    uct_rc_varuna_lane_str(iface, rep->failed_lane, from, sizeof(from));
    uct_rc_varuna_lane_str(iface, rep->new_lane, to, sizeof(to));

    ucs_info("rc_varuna: ep %p failover %s -> %s (%s, %s): %u in flight, "
             "%u executed, %u lost, %u undecided (log %u, psn %u, "
             "idempotent %u, never sent %u), %u found acknowledged; resent "
             "%u ops %zu bytes in %u posts "
             "(blanket: %u ops %zu bytes); %u results lost; recovered in "
             "%.0f us", ep, from, to, uct_rc_varuna_cause_str(rep->cause),
             uct_rc_varuna_recovery_str(iface), rep->in_flight,
             dec->executed, dec->lost, dec->undecided, dec->by_log,
             dec->by_psn, dec->by_idempotence, dec->never_sent, rep->acked,
             rep->resent_ops, rep->resent_bytes, rep->resent_posts,
             rep->blanket_ops, rep->blanket_bytes, rep->results_lost,
             recover_us);

    if (iface->fo.report == NULL) {
        return;
    }

    /* what the failover could not learn is null, not a made-up number */
    if (learnt->log_valid) {
        ucs_snprintf_zero(log_sn, sizeof(log_sn), "%" PRIu64, learnt->log_sn);
    } else {
        ucs_strncpy_zero(log_sn, "null", sizeof(log_sn));
    }
    uct_rc_varuna_report_phases(rep, entered, sizeof(entered));
    uct_rc_varuna_report_us(rep, rep->t_peer, peer_notice,
                            sizeof(peer_notice));
    uct_rc_varuna_report_us(rep, rep->t_notice, notice_sent,
                            sizeof(notice_sent));
    if (learnt->psn_valid) {
        ucs_snprintf_zero(peer_rq_psn, sizeof(peer_rq_psn), "%u",
                          learnt->rq_psn);
    } else {
        ucs_strncpy_zero(peer_rq_psn, "null", sizeof(peer_rq_psn));
    }

    fprintf(iface->fo.report,
            "{\"event\":\"%s\",\"pid\":%d,\"ep\":\"%p\",\"epoch\":%u,"
            "\"cause\":\"%s\",\"from\":\"%s\",\"to\":\"%s\","
            "\"recovery\":\"%s\",\"log\":%s,\"log_interval\":%u,"
            "\"acked\":%u,\"in_flight\":%u,"
            "\"executed\":%u,\"lost\":%u,\"undecided\":%u,"
            "\"decided_by\":{\"log\":%u,\"psn\":%u,\"idempotent\":%u,"
            "\"never_sent\":%u},"
            "\"conflicts\":%u,\"results_lost\":%u,\"reread\":%u,"
            "\"resent_ops\":%u,\"resent_bytes\":%zu,\"resent_posts\":%u,"
            "\"blanket_ops\":%u,\"blanket_bytes\":%zu,"
            "\"log_sn\":%s,\"log_from\":%s,\"peer_rq_psn\":%s,"
            "\"detected_at_us\":%.1f,"
            "\"detect_to_decided_us\":%.1f,\"detect_to_recovered_us\":%.1f,"
            "\"entered_us\":{%s},\"notice_sent_us\":%s,"
            "\"peer_notice_us\":%s,"
            "\"qp_created\":%lu,\"qp_connected\":%lu}\n",
            (rep->cause == UCT_RC_VARUNA_CAUSE_FAILBACK) ? "failback" :
            "failover", getpid(), ep, ep->fo.epoch,
            uct_rc_varuna_cause_str(rep->cause),
            from, to, uct_rc_varuna_recovery_str(iface),
            iface->config.log_enable ? "true" : "false",
            iface->config.log_interval, rep->acked, rep->in_flight,
            dec->executed, dec->lost, dec->undecided, dec->by_log,
            dec->by_psn, dec->by_idempotence, dec->never_sent,
            dec->conflicts, rep->results_lost, rep->reread, rep->resent_ops,
            rep->resent_bytes, rep->resent_posts, rep->blanket_ops,
            rep->blanket_bytes, log_sn,
            !learnt->log_valid ? "null" :
            (ep->fo.flags & UCT_RC_VARUNA_FO_LOG_NOTICE) ? "\"notice\"" :
                                                         "\"read\"",
            peer_rq_psn, ucs_time_to_usec(rep->t_detect), decide_us,
            recover_us, entered, notice_sent, peer_notice,
            iface->fo.qp_created, iface->fo.qp_connected);
    fflush(iface->fo.report);
}

/* What a dead endpoint's purge decided (uct_ep_outstanding_purge): the log
 * line and, with UCX_RC_VARUNA_REPORT, the JSON line */
void uct_rc_varuna_ep_report_purge(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, unsigned completed,
                                   unsigned results_lost, unsigned handed_back,
                                   const uct_rc_varuna_cls_summary_t *total,
                                   uint64_t log_sn)
{
    ucs_diag("rc_varuna: ep %p: purged: %u completed as executed (%u "
             "fetched results lost), %u handed back to be sent on another "
             "connection; decided by log %u, psn %u, delivery %u, "
             "idempotence %u, never sent %u", ep, completed, results_lost,
             handed_back, total->by_log, total->by_psn, total->by_delivery,
             total->by_idempotence, total->never_sent);

    if (iface->fo.report == NULL) {
        return;
    }

    fprintf(iface->fo.report,
            "{\"event\":\"purge\",\"pid\":%d,\"ep\":\"%p\","
            "\"recovery\":\"%s\",\"completed\":%u,"
            "\"results_lost\":%u,\"handed_back\":%u,"
            "\"decided_by\":{\"log\":%u,\"psn\":%u,\"delivered\":%u,"
            "\"idempotent\":%u,\"never_sent\":%u},"
            "\"conflicts\":%u,\"log_sn\":%" PRIu64 "}\n", getpid(), ep,
            uct_rc_varuna_recovery_str(iface), completed, results_lost,
            handed_back, total->by_log, total->by_psn, total->by_delivery,
            total->by_idempotence, total->never_sent, total->conflicts,
            log_sn);
    fflush(iface->fo.report);
}

/* A lane that is the standby again: the JSON line. How long the endpoint
 * was without a standby, and how long of that with the lane's port up
 * (re-protection's own time: a few round trips, unless something failed);
 * its QP and send credits, which say whether a standby left long by a grow
 * was made short again. */
void uct_rc_varuna_ep_report_reprotected(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep, unsigned lane,
                                         const char *lane_name,
                                         ucs_time_t now, ucs_time_t port_up)
{
    const uct_rc_varuna_lane_t *standby = &ep->lane[lane];

    if (iface->fo.report == NULL) {
        return;
    }

    fprintf(iface->fo.report,
            "{\"event\":\"reprotected\",\"pid\":%d,\"ep\":\"%p\","
            "\"epoch\":%u,\"lane\":\"%s\",\"initiator\":%s,"
            "\"request\":%u,\"failed_probes\":%u,\"unprotected_ms\":%.3f,"
            "\"port_up_to_reprotected_ms\":%.3f,\"qp\":\"0x%x\","
            "\"send_credits\":%u,\"at_us\":%.1f}\n",
            getpid(), ep, ep->fo.epoch, lane_name,
            ep->rp.initiator ? "true" : "false",
            ep->rp.initiator ? ep->rp.attempt : ep->rp.peer_attempt,
            ep->rp.probes_failed,
            (ep->rp.unprotected == 0) ? 0.0 :
            ucs_time_to_msec(now - ep->rp.unprotected),
            ucs_time_to_msec(port_up), standby->qp->qp_num, standby->max_wr,
            ucs_time_to_usec(now));
    fflush(iface->fo.report);
}

/* A lane moved to a QP with the full send queue (rc_varuna_grow.c): the
 * JSON line, on each side. held_ms: how long new operations waited for our
 * requests on the old QP to complete. */
void uct_rc_varuna_ep_report_grown(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep,
                                   const char *lane_name, uint32_t old_qpn,
                                   unsigned old_max_wr, ucs_time_t now)
{
    const uct_rc_varuna_lane_t *lane = &ep->lane[ep->gr.lane];

    if (iface->fo.report == NULL) {
        return;
    }

    fprintf(iface->fo.report,
            "{\"event\":\"grown\",\"pid\":%d,\"ep\":\"%p\","
            "\"epoch\":%u,\"lane\":\"%s\",\"initiator\":%s,"
            "\"request\":%u,\"qp\":\"0x%x\",\"old_qp\":\"0x%x\","
            "\"send_credits\":%u,\"old_send_credits\":%u,"
            "\"held_ms\":%.3f,\"at_us\":%.1f}\n",
            getpid(), ep, ep->fo.epoch, lane_name,
            ep->rp.initiator ? "true" : "false", ep->gr.attempt,
            lane->qp->qp_num, old_qpn, lane->max_wr, old_max_wr,
            ucs_time_to_msec(now - ep->gr.held), ucs_time_to_usec(now));
    fflush(iface->fo.report);
}

/* A path quarantined (its port up, its probe failed): the JSON line, once
 * per run of failed probes. The initiator of re-protection says it; its
 * peer only sees requests stop coming. */
void uct_rc_varuna_ep_report_quarantined(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const char *lane_name,
                                         const char *why, ucs_time_t now,
                                         ucs_time_t wait)
{
    if (iface->fo.report == NULL) {
        return;
    }

    fprintf(iface->fo.report,
            "{\"event\":\"quarantined\",\"pid\":%d,\"ep\":\"%p\","
            "\"epoch\":%u,\"lane\":\"%s\",\"why\":\"probe failed: %s\","
            "\"failover_cause\":\"%s\",\"next_try_ms\":%.3f,"
            "\"at_us\":%.1f}\n", getpid(), ep, ep->fo.epoch, lane_name, why,
            uct_rc_varuna_cause_str(ep->fo.cause),
            ucs_time_to_msec(wait), ucs_time_to_usec(now));
    fflush(iface->fo.report);
}

/* A failover's numbers into the interface's counters */
void uct_rc_varuna_iface_count_failover(uct_rc_varuna_iface_t *iface,
                                        const uct_rc_varuna_report_t *rep)
{
    if (rep->cause != UCT_RC_VARUNA_CAUSE_FAILBACK) {
        iface->fo.recovered++; /* of a failure */
    }
    iface->fo.in_flight    += rep->in_flight;
    iface->fo.resent_ops   += rep->resent_ops;
    iface->fo.resent_bytes += rep->resent_bytes;
    iface->fo.reread       += rep->reread;
    iface->fo.results_lost += rep->results_lost;
    if (iface->config.recovery == UCT_RC_VARUNA_RECOVERY_VARUNA) {
        iface->fo.undecided += rep->decided.undecided;
    }
    /* resent_ops counts executed READs read again too */
    if (rep->blanket_ops > rep->resent_ops) {
        iface->fo.spared_ops += rep->blanket_ops - rep->resent_ops;
    }
}


/* The interface's counters, by name: UCX's VFS shows them (the "failover"
 * directory of the interface, e.g. through ucx_vfs), the report ends with
 * them, and tests read them there. */
static const struct {
    const char *name;
    size_t     offset;
} uct_rc_varuna_iface_counters[] = {
#define UCT_RC_VARUNA_COUNTER(_name) \
    {#_name, ucs_offsetof(uct_rc_varuna_iface_t, fo._name)}
    UCT_RC_VARUNA_COUNTER(failovers),
    UCT_RC_VARUNA_COUNTER(recovered),
    UCT_RC_VARUNA_COUNTER(failbacks),
    UCT_RC_VARUNA_COUNTER(grows),
    UCT_RC_VARUNA_COUNTER(grow_qps),
    UCT_RC_VARUNA_COUNTER(renewed),
    UCT_RC_VARUNA_COUNTER(reprotected),
    UCT_RC_VARUNA_COUNTER(reprotect_late),
    UCT_RC_VARUNA_COUNTER(in_flight),
    UCT_RC_VARUNA_COUNTER(resent_ops),
    UCT_RC_VARUNA_COUNTER(resent_bytes),
    UCT_RC_VARUNA_COUNTER(spared_ops),
    UCT_RC_VARUNA_COUNTER(reread),
    UCT_RC_VARUNA_COUNTER(results_lost),
    UCT_RC_VARUNA_COUNTER(undecided),
    UCT_RC_VARUNA_COUNTER(stall_probes),
    UCT_RC_VARUNA_COUNTER(standby_probes),
    UCT_RC_VARUNA_COUNTER(watchdog_spared),
    UCT_RC_VARUNA_COUNTER(quarantined),
    UCT_RC_VARUNA_COUNTER(probes_failed),
    UCT_RC_VARUNA_COUNTER(am_dropped),
    UCT_RC_VARUNA_COUNTER(am_unordered),
    UCT_RC_VARUNA_COUNTER(qp_created),
    UCT_RC_VARUNA_COUNTER(qp_connected)
#undef UCT_RC_VARUNA_COUNTER
};

static unsigned long *
uct_rc_varuna_iface_counter(uct_rc_varuna_iface_t *iface, unsigned i)
{
    return UCS_PTR_BYTE_OFFSET(iface, uct_rc_varuna_iface_counters[i].offset);
}

void uct_rc_varuna_iface_vfs_refresh(uct_iface_h tl_iface)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_rc_varuna_iface_t);
    unsigned i;

    uct_rc_iface_vfs_refresh(tl_iface);
    ucs_vfs_obj_add_dir(iface, &iface->fo, "failover");
    for (i = 0; i < ucs_static_array_size(uct_rc_varuna_iface_counters);
         i++) {
        ucs_vfs_obj_add_ro_file(&iface->fo, ucs_vfs_show_primitive,
                                uct_rc_varuna_iface_counter(iface, i),
                                UCS_VFS_TYPE_ULONG, "%s",
                                uct_rc_varuna_iface_counters[i].name);
    }
}

/* The counters when the interface closes: in the report, and in the log
 * (info) if anything failed over */
static void uct_rc_varuna_iface_report_totals(uct_rc_varuna_iface_t *iface)
{
    ucs_string_buffer_t strb = UCS_STRING_BUFFER_INITIALIZER;
    unsigned i;

    for (i = 0; i < ucs_static_array_size(uct_rc_varuna_iface_counters);
         i++) {
        ucs_string_buffer_appendf(&strb, "%s\"%s\":%lu", (i == 0) ? "" : ",",
                                  uct_rc_varuna_iface_counters[i].name,
                                  *uct_rc_varuna_iface_counter(iface, i));
    }
    if ((iface->fo.failovers > 0) || (iface->fo.failbacks > 0)) {
        ucs_info("rc_varuna: iface %p closes: %s", iface,
                 ucs_string_buffer_cstr(&strb));
    }
    if (iface->fo.report != NULL) {
        fprintf(iface->fo.report, "{\"event\":\"totals\",\"pid\":%d,"
                "\"iface\":\"%p\",%s}\n", getpid(), iface,
                ucs_string_buffer_cstr(&strb));
        fflush(iface->fo.report);
    }
    ucs_string_buffer_cleanup(&strb);
}

/* UCX_RC_VARUNA_REPORT: the file the JSON lines are appended to, if any */
ucs_status_t uct_rc_varuna_iface_report_open(uct_rc_varuna_iface_t *iface,
                                             const char *path)
{
    if ((path != NULL) && (path[0] != '\0')) {
        iface->fo.report = fopen(path, "a");
        if (iface->fo.report == NULL) {
            ucs_error("rc_varuna: cannot open UCX_RC_VARUNA_REPORT file "
                      "'%s': %m", path);
            return UCS_ERR_INVALID_PARAM;
        }
    }
    return UCS_OK;
}

/* The interface closes: its totals, then the file */
void uct_rc_varuna_iface_report_close(uct_rc_varuna_iface_t *iface)
{
    uct_rc_varuna_iface_report_totals(iface);
    if (iface->fo.report != NULL) {
        fclose(iface->fo.report);
        iface->fo.report = NULL;
    }
}
