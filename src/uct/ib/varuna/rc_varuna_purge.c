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
#include <ucs/sys/compiler.h>

#include <inttypes.h>


/* Built empty against a UCX without patch 0007 (contrib/module-build), whose
 * UCT has no tokens and no uct_ep_outstanding_purge: one rule, the
 * header's, says what such a build lacks, for every file alike. */
#if !UCT_RC_VARUNA_STOCK_UCX

/*
 * What a dead endpoint executed, for UCP's failover (DESIGN.md section 7,
 * UCX patch 0007).
 *
 * When both lanes of an endpoint are lost, the transport has no path left
 * to read its completion log or to hear the peer. UCP may still have
 * another connection to the same peer. Over it, UCP carries our TX token
 * (uct_ep_query) to the peer, whose interface derives an RX token from it
 * (uct_iface_derive_rx_token): the peer fences its QPs of the connection,
 * so that nothing sent on them executes any more, and reads what the
 * failover would have asked for: the log word our operations wrote there
 * and each QP's expected PSN. With that token, uct_ep_outstanding_purge
 * decides every operation in flight with the failover's own classifier
 * (rc_varuna_classify.c): executed ones complete here, lost ones go back
 * to UCP, once each, in posting order, to be posted on the other
 * connection. Nothing is sent twice: the peer answered after it fenced.
 *
 * The error handler has to take the operations over first (it returns
 * UCS_INPROGRESS, uct_rc_varuna_ep_fail); otherwise they completed with
 * the error already.
 */

#define UCT_RC_VARUNA_TX_TOKEN_MAGIC 0x76547854u /* "TxTv" */
#define UCT_RC_VARUNA_RX_TOKEN_MAGIC 0x76547852u /* "RxTv" */

enum {
    UCT_RC_VARUNA_RX_TOKEN_PSN = UCS_BIT(0) /* << lane: rq_psn[lane] known */
};

/* Wire: the RX token, what executed on the connection the TX token
 * (rc_varuna_def.h) names, from the peer's side */
typedef struct {
    uint32_t                magic;
    uint32_t                qpn[UCT_RC_VARUNA_NUM_SIDES];   /* the token's */
    uint8_t                 flags;
    uint64_t                log_sn;
    uint32_t                rq_psn[UCT_RC_VARUNA_NUM_SIDES];
    uint32_t                am_seq; /* active messages delivered: all up to
                                       this one, none after */
} UCS_S_PACKED uct_rc_varuna_rx_token_t;

_Static_assert(sizeof(uct_rc_varuna_tx_token_t) <= UCT_EP_TOKEN_MAX_LENGTH,
               "TX token too long");
_Static_assert(sizeof(uct_rc_varuna_rx_token_t) <= UCT_EP_TOKEN_MAX_LENGTH,
               "RX token too long");


static uint32_t uct_rc_varuna_lane_qpn(const uct_rc_varuna_lane_t *lane)
{
    return (lane->qp != NULL) ? lane->qp->qp_num : 0;
}

/* Whether the local port of one of the endpoint's sides is up. UCP's
 * lane failover asks it of a failed endpoint to connect the lane again as
 * soon as a port comes back, not at its next timer: under flapping links
 * the timer's wait was the time in which the other lane died too (issue
 * 48). The interface's ports, not the endpoint's QPs: an endpoint whose
 * lanes both died may keep no QP (a standby destroyed as the failover
 * moved onto it, or for a renewal, and the primary after), and would then
 * never say its ports came back, leaving its lane to the rebuild timer. */
static int uct_rc_varuna_ep_path_up(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    unsigned side;

    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        if (((side == 0) || iface->has_standby) &&
            !uct_rc_varuna_md_port_down(uct_rc_varuna_iface_md(iface), side,
                                        iface->side[side].port_num)) {
            return 1;
        }
    }
    return 0;
}

static ucs_status_t uct_rc_varuna_ep_tx_token(uct_rc_varuna_ep_t *ep,
                                              uct_ep_attr_t *ep_attr)
{
    uct_rc_varuna_tx_token_t token;
    unsigned lane;

    if ((ep_attr->tx_token == NULL) ||
        (ep_attr->tx_token_length < sizeof(token))) {
        return UCS_ERR_INVALID_PARAM;
    }

    memset(&token, 0, sizeof(token));
    token.magic = UCT_RC_VARUNA_TX_TOKEN_MAGIC;
    for (lane = 0; lane < UCT_RC_VARUNA_NUM_SIDES; lane++) {
        token.qpn[lane]      = uct_rc_varuna_lane_qpn(&ep->lane[lane]);
        /* none named on a lane whose renewed QP the peer may not know
         * (rc_varuna_grow.c): the peer finds the endpoint by the other */
        token.peer_qpn[lane] = ((token.qpn[lane] != 0) &&
                                uct_rc_varuna_ep_grow_names_lane(ep, lane)) ?
                               ep->peer.qpn[lane] : 0;
        if (token.peer_qpn[lane] == 0) {
            continue;
        }
        token.peer_lid[lane] = ep->peer.ah[lane].dlid;
        if (ep->peer.ah[lane].is_global) {
            token.peer_global |= UCS_BIT(lane);
            memcpy(token.peer_gid[lane], ep->peer.ah[lane].grh.dgid.raw,
                   sizeof(token.peer_gid[lane]));
        }
    }
    memcpy(ep_attr->tx_token, &token, sizeof(token));
    ep_attr->tx_token_length = sizeof(token);
    return UCS_OK;
}

ucs_status_t uct_rc_varuna_ep_query(uct_ep_h tl_ep, uct_ep_attr_t *ep_attr)
{
    uct_rc_varuna_ep_t *ep = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    ucs_status_t status;

    if (ep_attr->field_mask & ~(UCT_EP_ATTR_FIELD_TX_TOKEN |
                                UCT_EP_ATTR_FIELD_PATH_UP)) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (ep_attr->field_mask & UCT_EP_ATTR_FIELD_TX_TOKEN) {
        status = uct_rc_varuna_ep_tx_token(ep, ep_attr);
        if (status != UCS_OK) {
            return status;
        }
    }
    if (ep_attr->field_mask & UCT_EP_ATTR_FIELD_PATH_UP) {
        ep_attr->path_up = uct_rc_varuna_ep_path_up(ep);
    }
    return UCS_OK;
}

/* The token's lane ends at this interface's port of that side */
static int uct_rc_varuna_iface_token_port(uct_rc_varuna_iface_t *iface,
                                          const uct_rc_varuna_tx_token_t *token,
                                          unsigned lane)
{
    const uct_rc_varuna_side_t *s = &iface->side[lane];

    if (token->peer_global & UCS_BIT(lane)) {
        return !memcmp(token->peer_gid[lane], s->gid.raw,
                       sizeof(token->peer_gid[lane]));
    }
    return token->peer_lid[lane] == s->lid;
}

/* Our endpoint of the connection the peer's token names, and on each lane
 * our QP of that connection */
static uct_rc_varuna_ep_t *
uct_rc_varuna_iface_token_ep(uct_rc_varuna_iface_t *iface,
                             const uct_rc_varuna_tx_token_t *token,
                             struct ibv_qp *named[UCT_RC_VARUNA_NUM_SIDES])
{
    uct_rc_varuna_ep_t *ep = NULL;
    unsigned lane;

    /* another interface's connection, whatever its QP numbers */
    for (lane = 0; lane < UCT_RC_VARUNA_NUM_SIDES; lane++) {
        if ((token->peer_qpn[lane] != 0) &&
            !uct_rc_varuna_iface_token_port(iface, token, lane)) {
            return NULL;
        }
    }

    for (lane = 0; (lane < UCT_RC_VARUNA_NUM_SIDES) && (ep == NULL); lane++) {
        if (token->peer_qpn[lane] != 0) {
            ep = uct_rc_varuna_iface_find_ep(iface, lane,
                                             token->peer_qpn[lane]);
        }
    }
    if (ep == NULL) {
        return NULL;
    }

    /* the same connection, not a later one that reuses a QP number: on
     * each lane the pair the token names, the lane's or, while a grow
     * moves the lane to a new QP, the other one (rc_varuna_grow.c) */
    for (lane = 0; lane < UCT_RC_VARUNA_NUM_SIDES; lane++) {
        if (token->peer_qpn[lane] == 0) {
            /* the peer had no connection on the lane */
            named[lane] = ep->lane[lane].qp;
            continue;
        }
        named[lane] = uct_rc_varuna_ep_grow_conn_qp(ep, lane,
                                                    token->peer_qpn[lane],
                                                    token->qpn[lane]);
        if (named[lane] == NULL) {
            return NULL;
        }
    }
    return ep;
}

/*
 * The peer of a dead endpoint asks what executed here. Our QPs of the
 * connection go to the error state first: from then on nothing sent on
 * them executes, and the log word and expected PSNs are final. Active
 * messages that arrived before that are delivered before we answer, so
 * that anything the peer sends again on another connection comes after
 * them, and the answer says up to which one they were delivered: that,
 * not a PSN, decides an active message (one may have gone on both lanes,
 * see rc_varuna_classify.h). This endpoint is dead too now, and fails
 * through the error path from the progress (not inside the caller, which
 * is handling a message).
 */
ucs_status_t uct_rc_varuna_iface_derive_rx_token(uct_iface_h tl_iface,
                                                 const void *tx_token,
                                                 size_t tx_token_length,
                                                 void *rx_token,
                                                 size_t *rx_token_length_p)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_tx_token_t tx;
    uct_rc_varuna_rx_token_t rx;
    struct ibv_qp *named[UCT_RC_VARUNA_NUM_SIDES];
    uct_rc_varuna_ep_t *ep;
    uint32_t rq_psn;
    unsigned lane;

    if (tx_token_length != sizeof(tx)) {
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(&tx, tx_token, sizeof(tx));
    if (tx.magic != UCT_RC_VARUNA_TX_TOKEN_MAGIC) {
        return UCS_ERR_INVALID_PARAM;
    }

    ep = uct_rc_varuna_iface_token_ep(iface, &tx, named);
    if (ep == NULL) {
        /* UCP asks each interface in turn: it says when none was ours */
        ucs_debug("rc_varuna: iface %p: no endpoint of the connection of "
                  "peer QPs 0x%x/0x%x", iface, tx.qpn[0], tx.qpn[1]);
        return UCS_ERR_NO_ELEM;
    }

    memset(&rx, 0, sizeof(rx));
    rx.magic = UCT_RC_VARUNA_RX_TOKEN_MAGIC;
    uct_rc_varuna_ep_grow_fence(ep);
    for (lane = 0; lane < UCT_RC_VARUNA_NUM_SIDES; lane++) {
        rx.qpn[lane] = tx.qpn[lane];
        uct_rc_varuna_lane_fence(ep, lane);
        /* from the QP the token's requests went to */
        if ((named[lane] != NULL) &&
            uct_rc_varuna_qp_rq_psn(named[lane], &rq_psn)) {
            rx.rq_psn[lane]  = rq_psn;
            rx.flags        |= UCT_RC_VARUNA_RX_TOKEN_PSN << lane;
        }
    }

    uct_rc_varuna_iface_deliver_arrived(iface, ep);
    rx.log_sn = *uct_rc_varuna_log_word(ep);
    rx.am_seq = ep->rx.am_seq;

    ucs_diag("rc_varuna: ep %p: the peer's endpoint of this connection "
             "failed; fenced, log word %" PRIu64 ", active messages "
             "delivered up to %u, expected PSNs 0x%x%s 0x%x%s", ep,
             rx.log_sn, rx.am_seq, rx.rq_psn[0],
             (rx.flags & UCT_RC_VARUNA_RX_TOKEN_PSN) ? "" : "(unknown)",
             rx.rq_psn[1],
             (rx.flags & (UCT_RC_VARUNA_RX_TOKEN_PSN << 1)) ? "" :
             "(unknown)");

    if (ep->fo.state != UCT_RC_VARUNA_FO_DEAD) {
        uct_rc_varuna_ep_fail_later(ep, UCS_ERR_ENDPOINT_TIMEOUT);
    }

    memcpy(rx_token, &rx, sizeof(rx));
    *rx_token_length_p = sizeof(rx);
    return UCS_OK;
}


/* ------------------------------------------------------------------------
 * Purge
 * ------------------------------------------------------------------------ */

/* The operation as UCP would post it again */
static void uct_rc_varuna_op_info(uct_rc_varuna_iface_t *iface,
                                  uct_rc_varuna_op_t *op,
                                  uct_ep_op_info_t *info, uct_iov_t *iov)
{
    uct_rc_hdr_t *rch;
    unsigned i;

    memset(info, 0, sizeof(*info));
    info->comp = op->comp;
    if (op->comp != NULL) {
        info->field_mask |= UCT_EP_OP_INFO_FIELD_COMP;
    }

    for (i = 0; i < op->num_sge; i++) {
        iov[i].buffer = (void*)(uintptr_t)op->sge[i].addr;
        iov[i].length = op->sge[i].length;
        iov[i].memh   = op->sge[i].memh;
        iov[i].stride = 0;
        iov[i].count  = 1;
    }
    if (op->num_sge > 0) {
        info->field_mask |= UCT_EP_OP_INFO_FIELD_IOV;
        info->iov         = iov;
        info->iovcnt      = op->num_sge;
    }

    if (op->type != UCT_RC_VARUNA_OP_AM_SHORT &&
        op->type != UCT_RC_VARUNA_OP_AM_BCOPY &&
        op->type != UCT_RC_VARUNA_OP_AM_ZCOPY &&
        op->type != UCT_RC_VARUNA_OP_FLUSH) {
        info->field_mask      |= UCT_EP_OP_INFO_FIELD_RMA;
        info->rma.remote_addr  = op->remote_addr;
        info->rma.rkey         = op->rkey;
    }

    switch (op->type) {
    case UCT_RC_VARUNA_OP_PUT_SHORT:
        info->operation        = UCT_EP_OP_PUT_SHORT;
        info->field_mask      |= UCT_EP_OP_INFO_FIELD_DATA;
        info->data.buffer      = uct_rc_varuna_op_inl(iface, op);
        info->data.length      = op->length;
        break;
    case UCT_RC_VARUNA_OP_PUT_BCOPY:
        info->operation        = UCT_EP_OP_PUT_BCOPY;
        info->field_mask      |= UCT_EP_OP_INFO_FIELD_DATA;
        info->data.buffer      = uct_rc_varuna_desc_data(op->desc);
        info->data.length      = op->desc_len;
        break;
    case UCT_RC_VARUNA_OP_PUT_ZCOPY:
        info->operation        = UCT_EP_OP_PUT_ZCOPY;
        break;
    case UCT_RC_VARUNA_OP_GET_BCOPY:
        info->operation            = UCT_EP_OP_GET_BCOPY;
        info->field_mask          |= UCT_EP_OP_INFO_FIELD_GET_BCOPY;
        info->get_bcopy.unpack_cb  = op->unpack_cb;
        info->get_bcopy.arg        = op->unpack_arg;
        info->get_bcopy.length     = op->length;
        break;
    case UCT_RC_VARUNA_OP_GET_ZCOPY:
        info->operation        = UCT_EP_OP_GET_ZCOPY;
        break;
    case UCT_RC_VARUNA_OP_AM_SHORT:
        /* the peer's handler sees the 64-bit header and the payload as one
         * buffer: a buffered AM of those bytes is the same message */
        rch                    = uct_rc_varuna_op_inl(iface, op);
        info->operation        = UCT_EP_OP_AM_BCOPY;
        info->field_mask      |= UCT_EP_OP_INFO_FIELD_DATA |
                                 UCT_EP_OP_INFO_FIELD_AM;
        info->data.buffer      = rch + 1;
        info->data.length      = op->length - sizeof(*rch);
        info->am.id            = op->am_id & ~UCT_RC_EP_FC_MASK;
        break;
    case UCT_RC_VARUNA_OP_AM_BCOPY:
        rch                    = uct_rc_varuna_desc_data(op->desc);
        info->operation        = UCT_EP_OP_AM_BCOPY;
        info->field_mask      |= UCT_EP_OP_INFO_FIELD_DATA |
                                 UCT_EP_OP_INFO_FIELD_AM;
        info->data.buffer      = rch + 1;
        info->data.length      = op->desc_len - sizeof(*rch);
        info->am.id            = op->am_id & ~UCT_RC_EP_FC_MASK;
        break;
    case UCT_RC_VARUNA_OP_AM_ZCOPY:
        rch                    = uct_rc_varuna_desc_data(op->desc);
        info->operation        = UCT_EP_OP_AM_ZCOPY;
        info->field_mask      |= UCT_EP_OP_INFO_FIELD_AM;
        info->am.id            = op->am_id & ~UCT_RC_EP_FC_MASK;
        info->am.header        = rch + 1;
        info->am.header_length = op->desc_len - sizeof(*rch);
        break;
    case UCT_RC_VARUNA_OP_ATOMIC_POST:
    case UCT_RC_VARUNA_OP_ATOMIC_FETCH:
        info->operation        = (op->type == UCT_RC_VARUNA_OP_ATOMIC_POST) ?
                                 UCT_EP_OP_ATOMIC_POST : UCT_EP_OP_ATOMIC_FETCH;
        info->field_mask      |= UCT_EP_OP_INFO_FIELD_ATOMIC;
        info->atomic.size      = sizeof(uint64_t);
        info->atomic.result    = op->result;
        if (op->ib_opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
            info->atomic.op      = UCT_ATOMIC_OP_CSWAP;
            info->atomic.compare = op->compare_add;
            info->atomic.value   = op->swap;
        } else {
            info->atomic.op      = UCT_ATOMIC_OP_ADD;
            info->atomic.value   = op->compare_add;
        }
        break;
    case UCT_RC_VARUNA_OP_FLUSH:
        info->operation        = UCT_EP_OP_FLUSH;
        info->field_mask      |= UCT_EP_OP_INFO_FIELD_FLAGS;
        info->flags            = UCT_FLUSH_FLAG_LOCAL;
        break;
    default:
        ucs_fatal("rc_varuna: op type %d is not the caller's", op->type);
    }
}

/* Operations of the transport's own, which the caller never posted */
static int uct_rc_varuna_op_is_internal(const uct_rc_varuna_op_t *op)
{
    return (op->type == UCT_RC_VARUNA_OP_CHECK) ||
           (op->type == UCT_RC_VARUNA_OP_FC_GRANT);
}

/* Hand back a flush that waited for an operation (uct_rc_varuna_ep_flush)
 * as a flush of its own, right after that operation's entry, whatever
 * became of it: UCP posts what it is handed back in order, so the flush
 * completes after everything before it that goes out again. */
static void
uct_rc_varuna_purge_flush(const uct_ep_outstanding_purge_params_t *params,
                          void *arg, uct_completion_t *flush_comp)
{
    uct_ep_op_info_t info;

    memset(&info, 0, sizeof(info));
    info.field_mask = UCT_EP_OP_INFO_FIELD_COMP;
    info.operation  = UCT_EP_OP_FLUSH;
    info.comp       = flush_comp;
    params->cb(&info, arg);
}

static int
uct_rc_varuna_rx_token_check(const uct_rc_varuna_ep_t *ep,
                             const uct_ep_outstanding_purge_params_t *params,
                             uct_rc_varuna_rx_token_t *rx)
{
    unsigned lane;

    if (params->rx_token_length != sizeof(*rx)) {
        return 0;
    }
    memcpy(rx, params->rx_token, sizeof(*rx));
    if (rx->magic != UCT_RC_VARUNA_RX_TOKEN_MAGIC) {
        return 0;
    }
    for (lane = 0; lane < UCT_RC_VARUNA_NUM_SIDES; lane++) {
        if (rx->qpn[lane] != uct_rc_varuna_lane_qpn(&ep->lane[lane])) {
            return 0;
        }
    }
    return 1;
}

ucs_status_t
uct_rc_varuna_ep_outstanding_purge(uct_ep_h tl_ep,
                                   const uct_ep_outstanding_purge_params_t *params)
{
    uct_rc_varuna_ep_t *ep       = ucs_derived_of(tl_ep, uct_rc_varuna_ep_t);
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    uct_iov_t iov[iface->config.max_send_sge];
    void *arg = (params->field_mask & UCT_EP_OUTSTANDING_FIELD_ARG) ?
                params->arg : NULL;
    uct_rc_varuna_cls_summary_t summary, total;
    uct_rc_varuna_cls_input_t in;
    uct_rc_varuna_rx_token_t rx;
    uct_rc_varuna_cls_op_t cls;
    unsigned handed_back, completed, results_lost;
    uct_completion_t *flush_comp;
    uct_ep_op_info_t info;
    uct_rc_varuna_op_t *op;
    ucs_status_t status;

    if (ep->dead.owner != UCT_RC_VARUNA_OWNER_CALLER) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (!uct_rc_varuna_rx_token_check(ep, params, &rx)) {
        ucs_error("rc_varuna: ep %p: the RX token is not about this "
                  "endpoint's connection", ep);
        return UCS_ERR_INVALID_PARAM;
    }

    memset(&total, 0, sizeof(total));
    handed_back  = 0;
    completed    = 0;
    results_lost = 0;
    in.log_valid  = iface->config.log_enable;
    in.log_sn     = rx.log_sn;
    /* UCP sends what it gets back on another endpoint, whose active
     * messages the receiver does not check against this one's: the
     * receiver's own word decides them */
    in.send_dedup       = 0;
    in.delivered_valid  = 1;
    in.delivered_am_seq = rx.am_seq;

    while (ep->tx.done_sn < ep->tx.sn) {
        op             = uct_rc_varuna_ep_op(ep, ++ep->tx.done_sn);
        flush_comp     = op->flush_comp;
        op->flush_comp = NULL;
        if (op->flags & UCT_RC_VARUNA_OP_FLAG_SETTLED) {
            /* a failover had decided it before the last lane failed */
            uct_rc_varuna_op_complete(iface, op, (ucs_status_t)op->status);
            completed++;
            goto next;
        }

        uct_rc_varuna_op_cls_input(op, &cls);
        in.psn_valid   = !!(rx.flags & (UCT_RC_VARUNA_RX_TOKEN_PSN <<
                                        op->lane));
        in.rq_psn      = rx.rq_psn[op->lane];
        uct_rc_varuna_classify(&in, &cls, 1, &summary);
        total.by_log         += summary.by_log;
        total.by_psn         += summary.by_psn;
        total.by_idempotence += summary.by_idempotence;
        total.never_sent     += summary.never_sent;
        total.by_delivery    += summary.by_delivery;
        total.conflicts      += summary.conflicts;

        if (iface->config.recovery == UCT_RC_VARUNA_RECOVERY_BLANKET) {
            /* for comparison: what today's systems resend */
            cls.verdict = UCT_RC_VARUNA_VERDICT_LOST;
        } else if ((cls.verdict == UCT_RC_VARUNA_VERDICT_EXECUTED) &&
                   (cls.kind == UCT_RC_VARUNA_KIND_READ) &&
                   (op->type != UCT_RC_VARUNA_OP_ATOMIC_FETCH)) {
            /* its data never arrived: reading it again is harmless */
            cls.verdict = UCT_RC_VARUNA_VERDICT_LOST;
        }

        if (uct_rc_varuna_op_is_internal(op)) {
            uct_rc_varuna_op_complete(iface, op, UCS_OK);
            goto next;
        }

        switch (cls.verdict) {
        case UCT_RC_VARUNA_VERDICT_EXECUTED:
            if (op->type == UCT_RC_VARUNA_OP_ATOMIC_FETCH) {
                status = UCT_RC_VARUNA_STATUS_RESULT_LOST;
                results_lost++;
            } else {
                status = UCS_OK;
            }
            uct_rc_varuna_op_complete(iface, op, status);
            completed++;
            break;
        case UCT_RC_VARUNA_VERDICT_LOST:
            uct_rc_varuna_op_info(iface, op, &info, iov);
            params->cb(&info, arg);
            /* the completion is the caller's now; the record's own
             * descriptor is not */
            if (op->desc != NULL) {
                ucs_mpool_put(op->desc);
            }
            handed_back++;
            break;
        default:
            uct_rc_varuna_op_complete(iface, op,
                                      UCT_RC_VARUNA_STATUS_UNDECIDED);
            completed++;
            break;
        }
next:
        if (flush_comp != NULL) {
            uct_rc_varuna_purge_flush(params, arg, flush_comp);
            handed_back++;
        }
    }
    /* done: what the endpoint still meets is the transport's, as on any
     * dead endpoint */
    ep->tx.settled = 0;
    ep->dead.owner = UCT_RC_VARUNA_OWNER_TRANSPORT;
    uct_rc_txqp_available_add(&ep->super.txqp, ep->fo.parked);
    ep->fo.parked  = 0;
    uct_rc_iface_update_reads(&iface->super);

    /* under blanket recovery an executed operation may have been sent
     * again on the other lane, where it did not execute: the PSN of the
     * lane it went out on last disagrees, as it must */
    if ((total.conflicts > 0) &&
        (iface->config.recovery == UCT_RC_VARUNA_RECOVERY_VARUNA)) {
        ucs_error("rc_varuna: ep %p: the log (%" PRIu64 ") and the peer's "
                  "expected PSNs disagree on %u operations", ep, rx.log_sn,
                  total.conflicts);
    }
    uct_rc_varuna_ep_report_purge(iface, ep, completed, results_lost,
                                  handed_back, &total, rx.log_sn);
    return UCS_OK;
}

#endif /* !UCT_RC_VARUNA_STOCK_UCX */
