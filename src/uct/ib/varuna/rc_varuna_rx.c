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

#include <uct/ib/base/ib_log.h>
#include <ucs/debug/log.h>


/*
 * The receive path (DESIGN.md section 5.3, guarantee G6): the shared
 * receive queues of both sides kept full (a standby device's up to a quota
 * that grows with its traffic), their completions polled, and each SEND
 * handed on: an active message to UCX in the sender's order across a
 * failover (a duplicate dropped, one that overtook an older one held until
 * its turn), a control message to the control channel's dispatcher
 * (rc_varuna_ctrl.c). The interface's progress (rc_varuna_iface.c) polls
 * here; UCP's purge (rc_varuna_purge.c) delivers what has arrived before it
 * answers the peer.
 */


static ucs_mpool_t *uct_rc_varuna_side_rx_mp(uct_rc_varuna_iface_t *iface,
                                             unsigned side)
{
    return iface->side[side].separate ? &iface->side[side].rx_mp :
                                        &iface->super.rx.mp;
}

/* Post up to max receives on a side's SRQ; returns how many. */
static unsigned uct_rc_varuna_iface_post_recv(uct_rc_varuna_iface_t *iface,
                                              unsigned side, unsigned max)
{
    uct_rc_varuna_side_t *s = &iface->side[side];
    struct ibv_recv_wr *bad_wr;
    uct_ib_recv_wr_t *wrs;
    unsigned count;
    int ret;

    if (max == 0) {
        return 0;
    }

    wrs   = ucs_alloca(sizeof(*wrs) * max);
    count = uct_ib_iface_prepare_rx_wrs(&iface->super.super,
                                        uct_rc_varuna_side_rx_mp(iface, side),
                                        wrs, max);
    if (ucs_unlikely(count == 0)) {
        return 0;
    }

    ret = ibv_post_srq_recv(s->srq, &wrs[0].ibwr, &bad_wr);
    if (ret != 0) {
        ucs_fatal("ibv_post_srq_recv() returned %d: %m", ret);
    }

    if (s->separate) {
        s->rx_posted += count;
    } else {
        iface->super.rx.srq.available -= count;
    }
    return count;
}

/*
 * A standby device's receive queue holds UCX_RC_VARUNA_STANDBY_RX_QUEUE_LEN
 * buffers, also after a failover onto it. Raising that to the full queue
 * at the failover made the next progress calls allocate and register the
 * buffer pool's chunks one after the other (15 chunks of 256 buffers, 5 to
 * 7 ms each on softib), which stalled the failed-over traffic for 80 ms
 * (contrib/failover-trace). The quota doubles, up to the queue's length,
 * only when the traffic needs it: when polls that each returned a full
 * batch, one after the other, took three quarters of it. The device had
 * consumed that much before this thread saw it (a receiver busy elsewhere
 * while a burst came, or a rate above one batch a progress call); a few
 * endpoints' steady traffic never does that, as every poll is followed by
 * a refill of a batch.
 */
static void uct_rc_varuna_iface_standby_rx_grow(uct_rc_varuna_iface_t *iface,
                                                uct_rc_varuna_side_t *sb,
                                                unsigned polled)
{
    unsigned quota;

    if (polled < iface->super.super.config.rx_max_poll) {
        sb->rx_run = 0; /* the completion queue is empty */
        return;
    }

    sb->rx_run += polled;
    if ((sb->rx_quota >= sb->rx_max) ||
        ((sb->rx_run * 4) < (sb->rx_quota * 3))) {
        return;
    }

    quota = ucs_min(sb->rx_quota * 2, sb->rx_max);
    ucs_debug("rc_varuna: iface %p: %u receives in full polls, standby "
              "receive quota %u -> %u", iface, sb->rx_run, sb->rx_quota, quota);
    sb->rx_quota = quota;
    sb->rx_run   = 0;
}

/* Keep the shared receive queues full: the primary's in batches, as
 * rc/base accounts it; a standby device's up to its quota. */
void uct_rc_varuna_iface_refill(uct_rc_varuna_iface_t *iface, int fill)
{
    uct_rc_varuna_side_t *sb = &iface->side[UCT_RC_VARUNA_SIDE_STANDBY];
    unsigned batch           = iface->super.super.config.rx_max_batch;

    while ((iface->super.rx.srq.available >= batch) ||
           (fill && (iface->super.rx.srq.available > 0))) {
        if (uct_rc_varuna_iface_post_recv(iface, UCT_RC_VARUNA_SIDE_PRIMARY,
                                          ucs_min(batch,
                                                  iface->super.rx.srq.available))
            == 0) {
            break;
        }
        if (!fill) {
            break;
        }
    }

    if (sb->separate && (sb->rx_posted < sb->rx_quota)) {
        uct_rc_varuna_iface_post_recv(iface, UCT_RC_VARUNA_SIDE_STANDBY,
                                      ucs_min(batch,
                                              sb->rx_quota - sb->rx_posted));
    }
}

/* Hand an active message (or an FC message) to UCX. */
static void uct_rc_varuna_iface_deliver_am(uct_rc_varuna_iface_t *iface,
                                           uct_rc_varuna_ep_t *ep,
                                           uct_rc_hdr_t *hdr, unsigned length,
                                           void *desc, uint32_t imm_data,
                                           uint16_t slid, uint32_t qp_num)
{
    ucs_status_t status;
    void *udesc;

    if (ucs_unlikely(hdr->am_id & UCT_RC_EP_FC_MASK)) {
        /* rc/base finds the endpoint by its primary QP */
        if ((ep != NULL) && (ep->lane[0].qp != NULL)) {
            qp_num = ep->lane[0].qp->qp_num;
        }
        status = uct_rc_iface_fc_handler(&iface->super, qp_num, hdr, length,
                                         imm_data, slid,
                                         UCT_CB_PARAM_FLAG_DESC);
    } else {
        status = uct_iface_invoke_am(&iface->super.super.super, hdr->am_id,
                                     hdr + 1, length, UCT_CB_PARAM_FLAG_DESC);
    }

    if (ucs_likely(status == UCS_OK)) {
        ucs_mpool_put_inline(desc);
    } else {
        udesc = (char*)desc + iface->super.super.config.rx_headroom_offset;
        uct_recv_desc(udesc) = &iface->super.super.release_desc;
    }
}

/* Messages that arrived ahead of their turn go out once it has come. */
static void uct_rc_varuna_iface_deliver_held(uct_rc_varuna_iface_t *iface,
                                             uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_rx_held_t *held;

    while (!ucs_list_is_empty(&ep->rx.held)) {
        held = ucs_list_head(&ep->rx.held, uct_rc_varuna_rx_held_t, list);
        if (held->am_seq != (uint32_t)(ep->rx.am_seq + 1)) {
            break;
        }
        ucs_list_del(&held->list);
        ep->rx.am_seq = held->am_seq;
        uct_rc_varuna_iface_deliver_am(iface, ep, held->hdr, held->length,
                                       held->desc, held->imm_data,
                                       held->slid, 0);
        ucs_mpool_put(held);
    }
}

static ucs_mpool_ops_t uct_rc_varuna_held_mp_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL
};

/* The pool of active messages held until their turn
 * (uct_rc_varuna_rx_held_t) */
ucs_status_t uct_rc_varuna_iface_rx_held_init(uct_rc_varuna_iface_t *iface)
{
    return ucs_mpool_init(&iface->fo.held_mp, 0,
                          sizeof(uct_rc_varuna_rx_held_t), 0,
                          UCS_SYS_CACHE_LINE_SIZE, 32, UINT_MAX,
                          &uct_rc_varuna_held_mp_ops, "rc_varuna_rx_held");
}

void uct_rc_varuna_iface_rx_held_cleanup(uct_rc_varuna_iface_t *iface)
{
    ucs_mpool_cleanup(&iface->fo.held_mp, 1);
}

/* Keep a message that overtook an older one (the older is still in the
 * receive queue of the lane it came on), in sequence order. */
static void uct_rc_varuna_iface_hold_am(uct_rc_varuna_ep_t *ep,
                                        uint32_t am_seq, uct_rc_hdr_t *hdr,
                                        unsigned length, void *desc,
                                        struct ibv_wc *wc)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    uct_rc_varuna_rx_held_t *held, *next;

    held = ucs_mpool_get(&iface->fo.held_mp);
    if (held == NULL) {
        /* out of memory: the message can neither wait nor go ahead of an
         * older one; the endpoint fails rather than break the order */
        ucs_error("rc_varuna: ep %p: out of memory holding active message "
                  "%u", ep, am_seq);
        ucs_mpool_put_inline(desc);
        uct_rc_varuna_ep_fail(ep, UCS_ERR_NO_MEMORY);
        return;
    }
    held->am_seq   = am_seq;
    held->length   = length;
    held->hdr      = hdr;
    held->desc     = desc;
    held->imm_data = wc->imm_data;
    held->slid     = wc->slid;

    ucs_list_for_each(next, &ep->rx.held, list) {
        if (UCS_CIRCULAR_COMPARE32(am_seq, <, next->am_seq)) {
            ucs_list_insert_before(&next->list, &held->list);
            return;
        }
    }
    ucs_list_add_tail(&ep->rx.held, &held->list);
}

void uct_rc_varuna_ep_rx_held_release(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_rx_held_t *held, *tmp;

    ucs_list_for_each_safe(held, tmp, &ep->rx.held, list) {
        ucs_list_del(&held->list);
        ucs_mpool_put_inline(held->desc);
        ucs_mpool_put(held);
    }
}

/*
 * Blanket recovery delivers what comes, as today's systems do: a message
 * sent again after a failover arrives twice, one that came on the new lane
 * first overtakes an older one. Only counted (am_unordered) and logged, to
 * show what goes wrong there: a UCP request matched by an old message
 * (docs/openmpi.md, "What blanket recovery does to OpenSHMEM").
 */
static void uct_rc_varuna_iface_blanket_seq(uct_rc_varuna_iface_t *iface,
                                            uct_rc_varuna_ep_t *ep,
                                            uint32_t seq)
{
    if (seq == (uint32_t)(ep->rx.am_seq + 1)) {
        ep->rx.am_seq = seq;
        return;
    }

    iface->fo.am_unordered++;
    ucs_debug("rc_varuna: ep %p delivers message %u out of sequence (%u "
              "expected, blanket recovery)", ep, seq, ep->rx.am_seq + 1);
    if (UCS_CIRCULAR_COMPARE32(seq, >, ep->rx.am_seq)) {
        ep->rx.am_seq = seq;
    }
}

/*
 * A received SEND. An active message carries its place in the sender's
 * order as immediate data (section 5.3, guarantee G6): across a failover
 * it may come again (it had arrived, its log write had not) and is
 * dropped (am_dropped), or come on the new lane before an older one
 * waiting in the old lane's receive queue, and waits for it. Control
 * messages of the failover carry no immediate data.
 */
static UCS_F_ALWAYS_INLINE void
uct_rc_varuna_iface_handle_am(uct_rc_varuna_iface_t *iface, unsigned side,
                              struct ibv_wc *wc, uct_rc_hdr_t *hdr,
                              uct_ib_iface_recv_desc_t *desc)
{
    unsigned length = wc->byte_len - sizeof(*hdr);
    uct_rc_varuna_ep_t *ep;
    unsigned lane;
    uint32_t seq, next;

    ep = uct_rc_varuna_iface_lookup_ep(iface, side, wc->qp_num);

    if (ucs_unlikely(hdr->am_id == UCT_RC_VARUNA_CTRL_AM_ID)) {
        if (ep != NULL) {
            lane = uct_rc_varuna_iface_wc_lane(iface, side, ep, wc->qp_num);
            uct_rc_varuna_ep_ctrl_recv(ep, lane,
                                       (uct_rc_varuna_ctrl_msg_t*)hdr,
                                       wc->byte_len);
        }
        ucs_mpool_put_inline(desc);
        return;
    }

    if ((ep != NULL) && (wc->wc_flags & IBV_WC_WITH_IMM)) {
        seq  = be32toh(wc->imm_data);
        next = ep->rx.am_seq + 1;
        if (ucs_unlikely(iface->config.recovery !=
                         UCT_RC_VARUNA_RECOVERY_VARUNA)) {
            uct_rc_varuna_iface_blanket_seq(iface, ep, seq);
        } else if (ucs_unlikely(seq != next)) {
            if (UCS_CIRCULAR_COMPARE32(seq, <, next)) {
                ucs_debug("rc_varuna: ep %p drops duplicate message %u", ep,
                          seq);
                iface->fo.am_dropped++;
                ucs_mpool_put_inline(desc);
            } else {
                ucs_debug("rc_varuna: ep %p holds message %u until %u", ep,
                          seq, ep->rx.am_seq + 1);
                uct_rc_varuna_iface_hold_am(ep, seq, hdr, length, desc, wc);
            }
            return;
        } else {
            ep->rx.am_seq = seq;
        }
        uct_rc_varuna_iface_deliver_am(iface, ep, hdr, length, desc,
                                       wc->imm_data, wc->slid, wc->qp_num);
        if (ucs_unlikely(!ucs_list_is_empty(&ep->rx.held))) {
            uct_rc_varuna_iface_deliver_held(iface, ep);
        }
        return;
    }

    uct_rc_varuna_iface_deliver_am(iface, ep, hdr, length, desc, wc->imm_data,
                                   wc->slid, wc->qp_num);
}

unsigned uct_rc_varuna_iface_poll_rx(uct_rc_varuna_iface_t *iface,
                                     unsigned side)
{
    unsigned num_wcs = iface->super.super.config.rx_max_poll;
    struct ibv_wc wc[num_wcs];
    uct_ib_iface_recv_desc_t *desc;
    uct_rc_hdr_t *hdr;
    ucs_status_t status;
    unsigned i;

    status = uct_ib_poll_cq(iface->side[side].cq[UCT_IB_DIR_RX], &num_wcs, wc);
    if (status != UCS_OK) {
        iface->side[side].rx_run = 0; /* see ..._standby_rx_grow() */
        return 0;
    }

    for (i = 0; i < num_wcs; i++) {
        desc = (uct_ib_iface_recv_desc_t*)(uintptr_t)wc[i].wr_id;
        hdr  = (uct_rc_hdr_t*)uct_ib_iface_recv_desc_hdr(&iface->super.super,
                                                         desc);
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS)) {
            if ((wc[i].status == IBV_WC_WR_FLUSH_ERR) ||
                (wc[i].status == IBV_WC_REM_ABORT_ERR)) {
                /* receives flushed by a QP leaving the SRQ */
                ucs_mpool_put_inline(desc);
                continue;
            }
            UCT_IB_IFACE_VERBS_COMPLETION_ERR("receive", &iface->super.super,
                                              i, wc);
        }

        VALGRIND_MAKE_MEM_DEFINED(hdr, wc[i].byte_len);
        uct_ib_log_recv_completion(&iface->super.super, &wc[i], hdr,
                                   wc[i].byte_len, uct_rc_ep_packet_dump);
        uct_rc_varuna_iface_handle_am(iface, side, &wc[i], hdr, desc);
    }

    if (iface->side[side].separate) {
        iface->side[side].rx_posted -= num_wcs;
        uct_rc_varuna_iface_standby_rx_grow(iface, &iface->side[side],
                                            num_wcs);
    } else {
        iface->super.rx.srq.available += num_wcs;
    }
    UCS_STATS_UPDATE_COUNTER(iface->super.super.stats,
                             UCT_IB_IFACE_STAT_RX_COMPLETION, num_wcs);
    return num_wcs;
}


/*
 * Deliver every message of an endpoint that has arrived, before the peer
 * is told what executed here (uct_rc_varuna_iface_derive_rx_token): what
 * it sends again on another connection must come after them. The
 * endpoint's QPs are fenced, so the receive queues hold all there will
 * be. Messages held for an older one that never came are not delivered:
 * the answer says that everything after the last one delivered in order
 * did not arrive, so the peer sends them again, the missing one first.
 */
void uct_rc_varuna_iface_deliver_arrived(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep)
{
    unsigned side;

    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        if ((side == UCT_RC_VARUNA_SIDE_PRIMARY) ||
            iface->side[side].separate) {
            while (uct_rc_varuna_iface_poll_rx(iface, side) > 0) {
            }
        }
    }
    uct_rc_varuna_iface_refill(iface, 0);

    if (!ucs_list_is_empty(&ep->rx.held)) {
        ucs_diag("rc_varuna: ep %p: active messages held for %u, which "
                 "never came, are dropped: the peer sends them again", ep,
                 ep->rx.am_seq + 1);
        uct_rc_varuna_ep_rx_held_release(ep);
    }
}
