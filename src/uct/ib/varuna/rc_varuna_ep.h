/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_EP_H
#define UCT_RC_VARUNA_EP_H

#include "rc_varuna_def.h"
#include "rc_varuna_failover.h"
#include "rc_varuna_iface.h"

#include <uct/ib/rc/base/rc_ep.h>
#include <ucs/datastruct/list.h>
#include <ucs/time/time.h>
#include <ucs/type/class.h>


/*
 * The endpoint: its two lanes, the replay ring of its operations in flight,
 * its failover's, re-protection's and control channel's state, and the
 * peer's side of both lanes (rc_varuna_ep.c; a lane's QP: rc_varuna_lane.c).
 * The three inline accessors below are here, not in rc_varuna_impl.h,
 * because the gtest cases use them (rc_varuna.h).
 */


/* A gather entry of the caller's memory: its handle gives the keys of both
 * devices, and the buffer back to the caller if the operation is handed
 * back (uct_ep_outstanding_purge) */
typedef struct uct_rc_varuna_sge {
    uint64_t                addr;
    uint32_t                length;
    uct_rc_varuna_memh_t    *memh;
} uct_rc_varuna_sge_t;


/*
 * Replay record (DESIGN.md section 3.2): everything needed to post the
 * operation again on another QP, or to complete it, until it completes.
 * Short payloads are copied here because the caller may reuse its buffer
 * as soon as the call returns; bcopy payloads stay in their descriptor.
 */
typedef struct uct_rc_varuna_op {
    uint64_t                sn;
    uint8_t                 type;             /* uct_rc_varuna_op_type_t */
    uint8_t                 ib_opcode;        /* enum ibv_wr_opcode */
    uint8_t                 lane;             /* lane it went out on */
    uint8_t                 num_wr;           /* WRs it took there */
    uint8_t                 num_sge;
    uint8_t                 send_flags;       /* IBV_SEND_SOLICITED etc. */
    uint8_t                 am_id;
    uint8_t                 flags;            /* UCT_RC_VARUNA_OP_FLAG_* */
    int8_t                  status;           /* when SETTLED */
    uint32_t                am_seq;           /* SENDs: order at the receiver */
    uint32_t                length;           /* bytes the request carries */
    uint32_t                desc_len;         /* of them, in the descriptor */
    uint32_t                last_psn;         /* of its own request */
    uint64_t                log_before;       /* sn of the last log write
                                                 posted before it on its
                                                 lane, 0 if none */
    uint64_t                remote_addr;
    uct_rkey_t              rkey;             /* both halves */
    uint64_t                compare_add;
    uint64_t                swap;
    void                    *result;          /* fetching atomics */
    uct_completion_t        *comp;
    uct_completion_t        *flush_comp;      /* a flush that found this
                                                 one the last posted, and
                                                 signaled: it completes
                                                 with it */
    uct_rc_varuna_desc_t    *desc;            /* bcopy/atomic/AM header */
    uct_unpack_callback_t   unpack_cb;        /* get_bcopy */
    void                    *unpack_arg;
    /* max_send_sge gather entries, then max_inline bytes of inline data */
    uct_rc_varuna_sge_t     sge[];
} uct_rc_varuna_op_t;


typedef struct uct_rc_varuna_lane {
    struct ibv_qp           *qp;
    uint32_t                init_psn;         /* first PSN, told to the peer */
    uint32_t                sq_psn;           /* next PSN of a request */
    uint32_t                path_mtu;         /* bytes */
    uint64_t                log_sn;           /* last log write posted on
                                                 this connection, 0: none */
    uint16_t                max_wr;           /* operations its QP's send
                                                 queue takes (the side's
                                                 tx_max_wr, or the
                                                 primary's once grown) */
    uint16_t                moderation;       /* signaled at least every */
    uint8_t                 state;            /* uct_rc_varuna_lane_state_t */
    uint32_t                err_count;        /* moves to ERR by failover */
    uint32_t                lwr_given_up;     /* LAST_WQE_REACHED not waited
                                                 for (lane_reset) */
    ucs_time_t              err_time;         /* last move to ERR */
} uct_rc_varuna_lane_t;


struct uct_rc_varuna_ep {
    uct_rc_ep_t             super;
    uct_rc_varuna_lane_t    lane[UCT_RC_VARUNA_NUM_SIDES];
    uint8_t                 active;           /* lane carrying the traffic */
    uct_ib_fence_info_t     fi;

    struct {
        uint64_t            sn;               /* last operation posted */
        uint64_t            done_sn;          /* last operation completed */
        uint8_t             *ring;            /* replay records: grows
                                                 from RING_INIT, doubling,
                                                 up to one per send credit
                                                 (uct_rc_varuna_ep_ring_grow) */
        unsigned            ring_mask;
        /* Send credits in circulation: available, parked, and held by
         * requests still on a QP, also on a lane left by a failover. The
         * lane carrying the traffic allows wr_limit (its side's
         * tx_max_wr); after a failover onto a smaller standby queue,
         * credits coming back are retired until wr_owned is down to it
         * (uct_rc_varuna_ep_tx_resize) */
        uint16_t            wr_owned;
        uint16_t            wr_limit;
        uint32_t            am_seq;           /* last SEND numbered */
        unsigned            settled;          /* records SETTLED */
        uint64_t            sig_sn;           /* last posted signaled */
        size_t              unsig_bytes;      /* posted since sig_sn */
        ucs_time_t          last_progress;    /* for the watchdog */
        ucs_list_link_t     watch;            /* in iface->fo.watched */
        uint8_t             watched;
        ucs_time_t          probe_time;       /* last stall probe posted */
        ucs_time_t          standby_proven;   /* last standby probe that
                                                 completed */
    } tx;

    struct {
        uint32_t            am_seq;           /* last SEND delivered */
        ucs_list_link_t     held;             /* arrived ahead, in order */
    } rx;

    /* failover of the active lane (rc_varuna_failover.c) */
    struct {
        uint8_t             state;            /* uct_rc_varuna_fo_state_t */
        uint8_t             cause;            /* uct_rc_varuna_cause_t */
        uint8_t             failed_lane;
        uint8_t             flags;            /* UCT_RC_VARUNA_FO_* */
        uint16_t            epoch;            /* failovers so far */
        uint32_t            peer_rq_psn;
        /* the peer's FAILOVER for a failover we have not started yet (our
         * standby still being connected, or our last failover still
         * replaying): applied when ours starts */
        struct {
            uint8_t         valid;
            uint8_t         lane;
            uint8_t         flags;            /* UCT_RC_VARUNA_CTRL_FLAG_* */
            uint16_t        epoch;
            uint32_t        psn;
            uint64_t        log_sn;
        } notice;
        uint64_t            log_sn;
        uint64_t            sn_hi;            /* last op in flight at start */
        uint64_t            replay_sn;        /* next to resend */
        uint64_t            replay_last;      /* last to resend or read */
        uint64_t            replay_log;       /* last to resend, logged */
        unsigned            parked;           /* tx credits held back */
        uct_rc_varuna_desc_t *log_desc;       /* the READ of L lands here */
        ucs_list_link_t     list;             /* in iface->fo.active */
        uct_rc_varuna_report_t report;
    } fo;

    /* re-protection of a failed lane (rc_varuna_reprotect.c) */
    struct {
        ucs_list_link_t     list;             /* in iface->fo.reprotect */
        uint8_t             initiator;        /* we start re-protection */
        uint8_t             self;             /* connected to itself (a
                                                 process's endpoint to its
                                                 own worker): it is both
                                                 sides, and re-protects
                                                 alone */
        uint8_t             lane;             /* lane to reconnect */
        uint8_t             listed;
        uint8_t             probing;          /* probe READ in flight */
        uint8_t             probe_wait;       /* probe READ to post when
                                                 there is room */
        uint8_t             done_pending;     /* DONE to send */
        uint8_t             late_said;        /* reprotect_late counted */
        uint32_t            psn;              /* our new sq_psn there */
        uint32_t            probes_failed;    /* in a row, on this lane:
                                                 quarantined while > 0 */
        uint32_t            attempt;
        uint32_t            peer_attempt;     /* the peer's, last answered */
        ucs_time_t          backoff;          /* the peer said no: wait
                                                 this long before asking
                                                 again (0: it did not) */
        ucs_time_t          sent;             /* the last request posted */
        ucs_time_t          next_try;         /* quarantined: no request
                                                 before this */
        uint8_t             ask;              /* our side of the standby
                                                 failed alone (it could not
                                                 be connected): the peer
                                                 is to be told */
        ucs_time_t          asked;            /* the last REPROTECT_ASK
                                                 queued (0: none) */
        ucs_time_t          unprotected;      /* since when the endpoint
                                                 has no standby (0: it has
                                                 one) */
        ucs_time_t          connected;        /* when its primary lane was
                                                 connected to the peer's */
        uint8_t             heard;            /* a control message of the
                                                 peer's came */
    } rp;

    /* failback to the primary lane (rc_varuna_failback.c) */
    struct {
        ucs_list_link_t     list;             /* in iface->fo.failback */
        uint8_t             listed;
        ucs_time_t          since;            /* the primary the standby
                                                 again */
    } fb;

    /* the replacement of the active lane's short send queue by a full one
     * (rc_varuna_grow.c) */
    struct {
        uint8_t             state;            /* uct_rc_varuna_grow_state_t */
        uint8_t             listed;
        uint8_t             hold;             /* new operations held back:
                                                 their credits parked in
                                                 fo.parked */
        uint8_t             lane;             /* the lane whose QP grows */
        uint8_t             say;              /* a message of ours to say
                                                 again (no room), 0: none */
        uint8_t             swap_acked;       /* both sides moved: the old
                                                 QP may go */
        uint8_t             tail_posted;      /* GROW_TAIL in flight */
        uint8_t             counted;          /* in fo.grows_asked */
        uint8_t             fenced;           /* qp is in the error state:
                                                 the endpoint ended */
        uint64_t            tail_sn;          /* ... behind this op */
        uint32_t            attempt;
        struct ibv_qp       *qp;              /* the new QP until the swap,
                                                 the old one after it until
                                                 it is destroyed */
        uint32_t            psn;              /* the new QP's first PSN */
        uint32_t            peer_qpn;         /* the peer's QP that qp is
                                                 connected to */
        ucs_time_t          since;            /* the state entered */
        ucs_time_t          held;             /* new operations held back
                                                 since (DRAIN) */
        ucs_time_t          next_try;         /* not before (the peer said
                                                 no, or did not answer) */
        ucs_list_link_t     list;             /* in iface->fo.grow */
    } gr;

    /* control requests on the lanes (rc_varuna_ctrl.c) */
    struct {
        uint8_t             pending;          /* bits of ctrl_wr_t to post */
        uint8_t             inflight[UCT_RC_VARUNA_NUM_SIDES];
        /* messages to post, oldest first (msgq_head); entries are kept
         * for FAILOVER, so no message is ever dropped */
        uct_rc_varuna_ctrl_msg_t msgq[UCT_RC_VARUNA_CTRL_MSGQ_LEN];
        uint8_t             msgq_head;
        uint8_t             msgq_count;
        uint8_t             stall_probe;      /* one in flight on the
                                                 active lane */
        uint8_t             standby_probe;    /* one in flight on the
                                                 standby */
        ucs_time_t          progress;         /* the last control request
                                                 completed, or posted on
                                                 a lane with none in
                                                 flight */
    } ctrl;

    /* the peer's side of both lanes, to connect them again */
    struct {
        uint32_t            qpn[UCT_RC_VARUNA_NUM_SIDES];
        struct ibv_ah_attr  ah[UCT_RC_VARUNA_NUM_SIDES];
        enum ibv_mtu        path_mtu;
    } peer;

    /* where our operations are logged: the peer's word, its keys */
    struct {
        uint64_t            addr;
        uint32_t            rkey[UCT_RC_VARUNA_NUM_SIDES];
    } peer_log;

    /* the word the peer logs its operations into, here */
    uct_rc_varuna_log_word_t *log;

    /* after both lanes failed: who completes the operations in flight
     * (rc_varuna_purge.c) */
    struct {
        uint8_t             owner;            /* uct_rc_varuna_owner_t */
        int8_t              status;           /* of the failure */
        uint8_t             callers;          /* the caller's own error
                                                 ended it, not the lanes */
    } dead;
};


UCS_CLASS_DECLARE(uct_rc_varuna_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_rc_varuna_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_rc_varuna_ep_t, uct_ep_t);


/* The endpoint has a lane to fail over to: the one not carrying the traffic
 * is connected and idle. The lane states say it; nothing else keeps it. */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_ep_has_standby(const uct_rc_varuna_ep_t *ep)
{
    return ep->lane[UCT_RC_VARUNA_NUM_SIDES - 1 - ep->active].state ==
           UCT_RC_VARUNA_LANE_STANDBY;
}

static UCS_F_ALWAYS_INLINE uct_rc_varuna_op_t *
uct_rc_varuna_ep_op(uct_rc_varuna_ep_t *ep, uint64_t sn)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                                  uct_rc_varuna_iface_t);

    return (uct_rc_varuna_op_t*)(ep->tx.ring +
                                 (sn & ep->tx.ring_mask) *
                                 iface->config.op_size);
}


/* The word the peer logs its operations into, here */
static UCS_F_ALWAYS_INLINE uint64_t *
uct_rc_varuna_log_word(uct_rc_varuna_ep_t *ep)
{
    return &ep->log->sn;
}


/* rc_varuna_ep.c: operations */
ucs_status_t uct_rc_varuna_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey);
ssize_t uct_rc_varuna_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr,
                                   uct_rkey_t rkey);
ucs_status_t uct_rc_varuna_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_get_bcopy(uct_ep_h tl_ep,
                                        uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                       uint64_t hdr, const void *buffer,
                                       unsigned length);
ucs_status_t uct_rc_varuna_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                           const uct_iov_t *iov,
                                           size_t iovcnt);
ssize_t uct_rc_varuna_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                  uct_pack_callback_t pack_cb, void *arg,
                                  unsigned flags);
ucs_status_t uct_rc_varuna_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                       const void *header,
                                       unsigned header_length,
                                       const uct_iov_t *iov, size_t iovcnt,
                                       unsigned flags, uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                             uint64_t swap,
                                             uint64_t remote_addr,
                                             uct_rkey_t rkey, uint64_t *result,
                                             uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                            uint64_t value,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey);
ucs_status_t uct_rc_varuna_ep_atomic64_fetch(uct_ep_h tl_ep,
                                             uct_atomic_op_t opcode,
                                             uint64_t value, uint64_t *result,
                                             uint64_t remote_addr,
                                             uct_rkey_t rkey,
                                             uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_fence(uct_ep_h tl_ep, unsigned flags);
void uct_rc_varuna_ep_post_check(uct_ep_h tl_ep);
ucs_status_t uct_rc_varuna_ep_fc_ctrl(uct_ep_t *tl_ep, unsigned op,
                                      uct_rc_pending_req_t *req);
ucs_status_t uct_rc_varuna_ep_get_address(uct_ep_h tl_ep,
                                          uct_ep_addr_t *addr);
ucs_status_t uct_rc_varuna_ep_connect_to_ep(uct_ep_h tl_ep,
                                            const uct_device_addr_t *dev_addr,
                                            const uct_ep_addr_t *ep_addr);
ucs_status_t uct_rc_varuna_ep_invalidate(uct_ep_h tl_ep, unsigned flags);
void uct_rc_varuna_ep_vfs_populate(uct_rc_ep_t *rc_ep);
ucs_status_t uct_rc_varuna_ep_pending_add(uct_ep_h tl_ep,
                                          uct_pending_req_t *req,
                                          unsigned flags);
ucs_status_t uct_rc_varuna_ep_ring_grow(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep);


/* rc_varuna_complete.c */
/* completion of everything up to sn; called by the iface progress */
void uct_rc_varuna_ep_complete(uct_rc_varuna_ep_t *ep, uint64_t sn);
void uct_rc_varuna_ep_complete_settled(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_purge(uct_rc_varuna_ep_t *ep, ucs_status_t status);
void uct_rc_varuna_op_complete(uct_rc_varuna_iface_t *iface,
                               uct_rc_varuna_op_t *op, ucs_status_t status);
void uct_rc_varuna_ep_fail(uct_rc_varuna_ep_t *ep, ucs_status_t status);
void uct_rc_varuna_ep_fail_later(uct_rc_varuna_ep_t *ep, ucs_status_t status);
void uct_rc_varuna_ep_fail_cancel(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_dead_complete(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_handle_failure(uct_rc_varuna_ep_t *ep, unsigned lane,
                                     struct ibv_wc *wc, ucs_status_t status);


/* rc_varuna_lane.c */
void uct_rc_varuna_lane_set_state(uct_rc_varuna_ep_t *ep, unsigned side,
                                  uct_rc_varuna_lane_state_t state);
ucs_status_t uct_rc_varuna_lane_create(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep, unsigned side);
void uct_rc_varuna_lane_destroy(uct_rc_varuna_iface_t *iface,
                                uct_rc_varuna_ep_t *ep, unsigned side,
                                uint16_t cq_credits);
ucs_status_t uct_rc_varuna_lane_reset(uct_rc_varuna_iface_t *iface,
                                      uct_rc_varuna_ep_t *ep, unsigned side);
ucs_status_t uct_rc_varuna_lane_connect(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, unsigned side,
                                        uint32_t dest_qpn, uint32_t rq_psn,
                                        struct ibv_ah_attr *ah_attr,
                                        enum ibv_mtu path_mtu);
void uct_rc_varuna_iface_qp_cleanup(uct_rc_iface_qp_cleanup_ctx_t *rc_ctx);
void uct_rc_varuna_iface_cleanup_standby_qps(uct_rc_varuna_iface_t *iface);
uint32_t uct_rc_varuna_lane_new_psn(uct_rc_varuna_lane_t *lane);
void uct_rc_varuna_lane_ah(uct_rc_varuna_iface_t *iface,
                           uct_rc_varuna_ep_t *ep, unsigned side,
                           uint16_t lid, const union ibv_gid *peer_gid,
                           struct ibv_ah_attr *ah_attr);
const char *uct_rc_varuna_lane_str(uct_rc_varuna_iface_t *iface,
                                   unsigned side, char *buf, size_t max);
const char *uct_rc_varuna_lane_state_str(uct_rc_varuna_lane_state_t state);
int uct_rc_varuna_qp_rq_psn(struct ibv_qp *qp, uint32_t *psn_p);
ucs_status_t uct_rc_varuna_lane_renew(uct_rc_varuna_iface_t *iface,
                                      uct_rc_varuna_ep_t *ep, unsigned side,
                                      struct ibv_qp **old_qp_p);
void uct_rc_varuna_lane_fence(uct_rc_varuna_ep_t *ep, unsigned side);
ucs_status_t uct_rc_varuna_qp_create(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep, unsigned side,
                                     unsigned qp_len, struct ibv_qp **qp_p);
ucs_status_t uct_rc_varuna_qp_connect(uct_rc_varuna_iface_t *iface,
                                      struct ibv_qp *qp, uint32_t dest_qpn,
                                      uint32_t rq_psn, uint32_t sq_psn,
                                      struct ibv_ah_attr *ah_attr,
                                      enum ibv_mtu path_mtu);
void uct_rc_varuna_qp_destroy(uct_rc_varuna_iface_t *iface,
                              uct_rc_varuna_ep_t *ep, unsigned side,
                              struct ibv_qp *qp);
void uct_rc_varuna_lane_set_len(uct_rc_varuna_lane_t *lane,
                                const uct_rc_varuna_side_t *len);

#endif
