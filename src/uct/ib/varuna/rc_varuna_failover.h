/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_FAILOVER_H
#define UCT_RC_VARUNA_FAILOVER_H

#include "rc_varuna_classify.h"
#include "rc_varuna_def.h"

#include <uct/api/uct.h>
#include <ucs/time/time.h>


/*
 * The failover (rc_varuna_failover.c: the state machine; rc_varuna_detect.c:
 * what starts one), its control channel (rc_varuna_ctrl.c), re-protection
 * (rc_varuna_reprotect.c), what it reports (rc_varuna_report.c), and what a
 * dead endpoint executed for UCP's failover (rc_varuna_purge.c): the
 * report's type, and the entry points of these files.
 */


/* The failover report of one event (DESIGN.md section 5.4) */
typedef struct uct_rc_varuna_report {
    uint8_t                 cause;
    uint8_t                 failed_lane;
    uint8_t                 new_lane;
    unsigned                in_flight;        /* classified: not completed
                                                 once the failed lane drained */
    unsigned                acked;            /* found completed by the drain
                                                 (acknowledged, unsignaled) */
    uct_rc_varuna_cls_input_t   learned;      /* log word, peer's rq_psn */
    uct_rc_varuna_cls_summary_t decided;      /* the classifier's counts */
    unsigned                results_lost;     /* fetching atomics */
    unsigned                reread;           /* executed READs read again */
    unsigned                resent_ops;
    size_t                  resent_bytes;
    unsigned                resent_posts;     /* ibv_post_send calls (chains)
                                                 that sent them */
    unsigned                blanket_ops;      /* what blanket resends */
    size_t                  blanket_bytes;
    ucs_time_t              t_detect;
    ucs_time_t              t_decided;
    ucs_time_t              t_recovered;
    ucs_time_t              t_peer;           /* the peer's notice came */
    ucs_time_t              t_notice;         /* ours was posted */
    ucs_time_t              t_enter[UCT_RC_VARUNA_FO_LAST]; /* each state,
                                                 where the time goes */
} uct_rc_varuna_report_t;


/* rc_varuna_failover.c: the failover's state machine; each event enters it
 * through one of these */
void uct_rc_varuna_ep_failover(uct_rc_varuna_ep_t *ep, unsigned lane,
                               uct_rc_varuna_cause_t cause);
void uct_rc_varuna_ep_failover_drained(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_failover_log_read(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_failover_peer_fenced(uct_rc_varuna_ep_t *ep,
                                           const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_failover_noticed(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_failover_progress(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_failover_recovered(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_post_refused(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_tx_resize(uct_rc_varuna_iface_t *iface,
                                uct_rc_varuna_ep_t *ep, unsigned lane);
void uct_rc_varuna_ep_tx_unpark(uct_rc_varuna_iface_t *iface,
                                uct_rc_varuna_ep_t *ep);
/* For tests: fail the active lane of an endpoint as if an error had been
 * detected on it. */
ucs_status_t uct_rc_varuna_ep_fail_lane(uct_ep_h tl_ep);
void uct_rc_varuna_ep_failover_cleanup(uct_rc_varuna_ep_t *ep,
                                       uct_rc_varuna_fo_state_t state);
void uct_rc_varuna_iface_failovers_progress(uct_rc_varuna_iface_t *iface);
ucs_status_t uct_rc_varuna_iface_cls_init(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_iface_cls_cleanup(uct_rc_varuna_iface_t *iface);
const char *uct_rc_varuna_cause_str(uct_rc_varuna_cause_t cause);
const char *uct_rc_varuna_fo_state_str(uct_rc_varuna_fo_state_t state);


/* rc_varuna_detect.c: port events, the watchdog and its probes, the periodic
 * check */
void uct_rc_varuna_iface_detect_init(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_iface_failover_check(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_ep_standby_probed(uct_rc_varuna_ep_t *ep);


/* rc_varuna_ctrl.c: control requests and messages, and the one dispatcher
 * of their completions and of the peer's messages */
uct_rc_varuna_ctrl_msg_t *
uct_rc_varuna_ep_queue_msg(uct_rc_varuna_ep_t *ep,
                           uct_rc_varuna_ctrl_type_t type, unsigned lane,
                           uint32_t psn, uint32_t attempt);
ucs_status_t uct_rc_varuna_iface_ctrl_init(uct_rc_varuna_iface_t *iface);
int uct_rc_varuna_ep_msgq_room(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_ctrl_kick(uct_rc_varuna_ep_t *ep);
int uct_rc_varuna_reprotect_room(uct_rc_varuna_iface_t *iface,
                                 uct_rc_varuna_ep_t *ep, unsigned lane);
ucs_status_t uct_rc_varuna_post_log_read(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         unsigned lane);
ucs_status_t uct_rc_varuna_ep_post_probe(uct_rc_varuna_ep_t *ep);
ucs_status_t uct_rc_varuna_ep_post_standby_probe(uct_rc_varuna_ep_t *ep);
ucs_status_t uct_rc_varuna_ep_post_grow_tail(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_ctrl_completion(uct_rc_varuna_ep_t *ep, unsigned lane,
                                      struct ibv_wc *wc);
void uct_rc_varuna_ep_ctrl_recv(uct_rc_varuna_ep_t *ep, unsigned lane,
                                const uct_rc_varuna_ctrl_msg_t *msg,
                                unsigned length);


/* rc_varuna_reprotect.c: re-protection; the peer's messages about it come
 * from uct_rc_varuna_ep_ctrl_recv */
void uct_rc_varuna_ep_standby_later(uct_rc_varuna_ep_t *ep, const char *why);
void uct_rc_varuna_ep_reprotect_list(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_reprotect_unlist(uct_rc_varuna_ep_t *ep);
int uct_rc_varuna_ep_reprotect_try(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, ucs_time_t now);
void uct_rc_varuna_ep_reprotect_probed(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep, unsigned lane);
void uct_rc_varuna_ep_reprotect_probe_failed(uct_rc_varuna_iface_t *iface,
                                             uct_rc_varuna_ep_t *ep,
                                             unsigned lane,
                                             enum ibv_wc_status status);
void uct_rc_varuna_ep_reprotect_recv_failover(uct_rc_varuna_iface_t *iface,
                                              uct_rc_varuna_ep_t *ep,
                                              unsigned lane);
void uct_rc_varuna_ep_reprotect_recv_req(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_reprotect_recv_ack(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_reprotect_recv_done(uct_rc_varuna_iface_t *iface,
                                          uct_rc_varuna_ep_t *ep,
                                          const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_reprotect_recv_ask(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_reprotect_recv_nack(uct_rc_varuna_iface_t *iface,
                                          uct_rc_varuna_ep_t *ep,
                                          const uct_rc_varuna_ctrl_msg_t *msg);


/* rc_varuna_grow.c: the active lane's short send queue replaced */
void uct_rc_varuna_ep_grow_arm(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_grow_abort(uct_rc_varuna_ep_t *ep, const char *why);
void uct_rc_varuna_ep_grow_end(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_grow_cleanup(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_grow_fence(uct_rc_varuna_ep_t *ep);
struct ibv_qp *uct_rc_varuna_ep_grow_conn_qp(const uct_rc_varuna_ep_t *ep,
                                             unsigned lane, uint32_t qpn,
                                             uint32_t peer_qpn);
void uct_rc_varuna_ep_grow_drained(uct_rc_varuna_ep_t *ep);
int uct_rc_varuna_ep_grow_names_lane(const uct_rc_varuna_ep_t *ep,
                                     unsigned lane);
ucs_status_t uct_rc_varuna_ep_grow_reset_lane(uct_rc_varuna_iface_t *iface,
                                              uct_rc_varuna_ep_t *ep,
                                              unsigned lane);
void uct_rc_varuna_ep_grow_renew_known(uct_rc_varuna_ep_t *ep, unsigned lane);
void uct_rc_varuna_iface_grow_check(uct_rc_varuna_iface_t *iface,
                                    ucs_time_t now);
void uct_rc_varuna_ep_grow_recv_req(uct_rc_varuna_iface_t *iface,
                                    uct_rc_varuna_ep_t *ep,
                                    const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_grow_recv_ack(uct_rc_varuna_iface_t *iface,
                                    uct_rc_varuna_ep_t *ep,
                                    const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_grow_recv_nack(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep,
                                     const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_grow_recv_swap(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep,
                                     const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_grow_recv_swap_ack(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg);

/* rc_varuna_failback.c: traffic back to the primary after a hold-down */
void uct_rc_varuna_ep_failback_arm(uct_rc_varuna_ep_t *ep, unsigned lane);
void uct_rc_varuna_ep_failback_cleanup(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_iface_failback_check(uct_rc_varuna_iface_t *iface,
                                        ucs_time_t now);


/* rc_varuna_report.c */
void uct_rc_varuna_ep_report(uct_rc_varuna_iface_t *iface,
                             uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_report_purge(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, unsigned completed,
                                   unsigned results_lost, unsigned handed_back,
                                   const uct_rc_varuna_cls_summary_t *total,
                                   uint64_t log_sn);
void uct_rc_varuna_ep_report_reprotected(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep, unsigned lane,
                                         const char *lane_name,
                                         ucs_time_t now, ucs_time_t port_up);
void uct_rc_varuna_ep_report_grown(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep,
                                   const char *lane_name, uint32_t old_qpn,
                                   unsigned old_max_wr, ucs_time_t now);
void uct_rc_varuna_ep_report_quarantined(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const char *lane_name,
                                         const char *why, ucs_time_t now,
                                         ucs_time_t wait);
void uct_rc_varuna_iface_count_failover(uct_rc_varuna_iface_t *iface,
                                        const uct_rc_varuna_report_t *rep);
ucs_status_t uct_rc_varuna_iface_report_open(uct_rc_varuna_iface_t *iface,
                                             const char *path);
void uct_rc_varuna_iface_report_close(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_iface_vfs_refresh(uct_iface_h tl_iface);


#if !UCT_RC_VARUNA_STOCK_UCX
/* rc_varuna_purge.c: what a dead endpoint executed, for UCP's failover */
ucs_status_t uct_rc_varuna_ep_query(uct_ep_h tl_ep, uct_ep_attr_t *ep_attr);
ucs_status_t uct_rc_varuna_iface_derive_rx_token(uct_iface_h tl_iface,
                                                 const void *tx_token,
                                                 size_t tx_token_length,
                                                 void *rx_token,
                                                 size_t *rx_token_length_p);
ucs_status_t
uct_rc_varuna_ep_outstanding_purge(uct_ep_h tl_ep,
                                   const uct_ep_outstanding_purge_params_t *params);
#endif

#endif
