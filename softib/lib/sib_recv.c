/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Receive: validate a datagram, find the device, port and QP it is for, and
 * hand it to the responder (requests) or the completer (ACKs, responses).
 * A datagram that fails any check is counted and dropped, never trusted:
 * anything can arrive on a UDP socket.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <string.h>


unsigned sib_pkt_class(uint32_t mask)
{
    if (mask & SIB_UD_MASK) {
        return SIB_CLASS_UD;
    }
    if (mask & SIB_REQ_MASK) {
        return SIB_CLASS_REQ;
    }
    if (mask & SIB_READ_MASK) {
        return SIB_CLASS_READ_RESP;
    }
    if (mask & SIB_ATOMIC_MASK) {
        return SIB_CLASS_ATOMIC_RESP;
    }
    return SIB_CLASS_ACK;
}

/* Any context of this engine on that device, to count a drop against */
static struct sib_context *sib_recv_any_ctx(struct sib_engine *eng, int dev)
{
    struct sib_list *node;
    struct sib_context *ctx;

    for (node = eng->contexts.next; node != &eng->contexts;
         node = node->next) {
        ctx = sib_list_entry(node, struct sib_context, link);
        if ((dev < 0) || (ctx->dev->index == (unsigned)dev)) {
            return ctx;
        }
    }
    return NULL;
}

static void sib_recv_drop(struct sib_engine *eng, struct sib_context *ctx,
                          int dev, enum sib_counter cnt)
{
    if (ctx == NULL) {
        ctx = sib_recv_any_ctx(eng, dev);
    }
    if (ctx != NULL) {
        sib_count(ctx, cnt, 1);
    }
}

/* Framing: LRH, GRH, BTH, lengths and the header CRC. 0 or a counter. */
static int sib_recv_parse(struct sib_pkt *pkt)
{
    const struct sib_lrh *lrh = (const struct sib_lrh*)pkt->buf;
    uint32_t off, hdr_len, crc, tail;
    unsigned pad;

    if ((pkt->len < sizeof(*lrh) + sizeof(struct sib_bth) + SIB_ICRC_SIZE) ||
        (__lrh_lver(lrh) != 0) ||
        ((__lrh_lnh(lrh) != SIB_LNH_IBA_LOCAL) &&
         (__lrh_lnh(lrh) != SIB_LNH_IBA_GLOBAL))) {
        return SIB_CNT_DROP_FOREIGN;
    }
    if ((__lrh_pktlen(lrh) * 4u != pkt->len) || (pkt->len & 3)) {
        return SIB_CNT_DROP_MALFORMED;
    }

    off      = sizeof(*lrh);
    pkt->grh = NULL;
    if (__lrh_lnh(lrh) == SIB_LNH_IBA_GLOBAL) {
        pkt->grh = (struct sib_grh*)(pkt->buf + off);
        off     += sizeof(struct sib_grh);
        if (pkt->len < off + sizeof(struct sib_bth) + SIB_ICRC_SIZE) {
            return SIB_CNT_DROP_MALFORMED;
        }
    }

    pkt->bth    = (struct sib_bth*)(pkt->buf + off);
    pkt->opcode = __bth_opcode(pkt->bth);
    if (!sib_opcode_valid(pkt->opcode)) {
        return SIB_CNT_DROP_MALFORMED;
    }

    hdr_len = off + sib_opcode[pkt->opcode].hdr_len;
    pad     = __bth_pad(pkt->bth);
    if (pkt->len < hdr_len + pad + SIB_ICRC_SIZE) {
        return SIB_CNT_DROP_MALFORMED;
    }

    memcpy(&tail, pkt->buf + pkt->len - SIB_ICRC_SIZE, sizeof(tail));
    crc = htobe32(sib_hcrc(pkt->buf, hdr_len));
    if (crc != tail) {
        return SIB_CNT_DROP_MALFORMED;
    }

    pkt->mask    = sib_opcode[pkt->opcode].mask;
    pkt->payload = pkt->buf + hdr_len;
    pkt->paylen  = pkt->len - hdr_len - pad - SIB_ICRC_SIZE;
    if (!(pkt->mask & SIB_PAYLOAD_MASK) && (pkt->paylen != 0)) {
        return SIB_CNT_DROP_MALFORMED;
    }

    pkt->psn  = __bth_psn(pkt->bth);
    pkt->qpn  = __bth_qpn(pkt->bth);
    pkt->slid = __lrh_slid(lrh);
    pkt->dlid = __lrh_dlid(lrh);
    return SIB_CNT_LAST;
}

static int sib_recv_doorbell(struct sib_engine *eng, const uint8_t *buf,
                             uint32_t len)
{
    struct sib_doorbell db;

    if (len != sizeof(db)) {
        return 0;
    }
    memcpy(&db, buf, sizeof(db));
    /* Nothing to do: waking the engine was the point; it re-reads the
     * registry generation at the start of every pass. */
    return (db.magic == SIB_REG_MAGIC) && (db.instance == eng->reg->instance);
}

/* Can this QP accept this packet in its current state (IBA 10.3.1)? */
static int sib_recv_state_ok(const struct sib_qp *qp, uint32_t mask)
{
    switch (sib_qp_state(qp)) {
    case IBV_QPS_RTR:
        return !!(mask & SIB_REQ_MASK);
    case IBV_QPS_RTS:
    case IBV_QPS_SQD:
    case IBV_QPS_SQE:
        return 1;
    default:
        return 0;
    }
}

/* Engine lock held. One packet. */
static void sib_recv_one(struct sib_engine *eng, uint8_t *buf, uint32_t len)
{
    struct sib_registry *reg = eng->reg;
    struct sib_reg_rule *rule;
    struct sib_context *ctx;
    struct sib_pkt pkt;
    struct sib_qp *qp;
    unsigned slot;
    int cnt;

    pkt.buf = buf;
    pkt.len = len;

    cnt = sib_recv_parse(&pkt);
    if (cnt != SIB_CNT_LAST) {
        sib_recv_drop(eng, NULL, -1, cnt);
        return;
    }

    if (sib_registry_lid_lookup(reg, pkt.dlid, &pkt.dev, &pkt.port) < 0) {
        sib_recv_drop(eng, NULL, -1, SIB_CNT_DROP_NO_ROUTE);
        return;
    }

    slot = pkt.qpn >> SIB_QPN_SLOT_SHIFT;
    ctx  = (slot < SIB_MAX_SLOTS) ? eng->slot_ctx[slot] : NULL;
    if ((ctx == NULL) || (ctx->dev->index != pkt.dev)) {
        sib_recv_drop(eng, NULL, (int)pkt.dev, SIB_CNT_DROP_NO_QP);
        return;
    }

    /* The link into the port: a packet cannot arrive on a dead port. */
    if (__atomic_load_n(&reg->dev[pkt.dev].port[pkt.port - 1].state,
                        __ATOMIC_ACQUIRE) != SIB_PORT_ACTIVE) {
        sib_count(ctx, SIB_CNT_DROP_PORT_DOWN, 1);
        return;
    }

    if (__atomic_load_n(&reg->num_rules, __ATOMIC_ACQUIRE) != 0) {
        /* delay rules act on transmit only (sib_registry_rule_add) */
        rule = sib_registry_rule_match(reg, SIB_DIR_RX, pkt.dev, pkt.port,
                                       pkt.qpn, sib_pkt_class(pkt.mask));
        if (rule != NULL) {
            sib_log_debug("rule %u drops %s psn 0x%x to qp 0x%x", rule->id,
                          sib_opcode[pkt.opcode].name, pkt.psn, pkt.qpn);
            sib_count(ctx, SIB_CNT_DROP_RULE, 1);
            return;
        }
    }

    sib_count(ctx, SIB_CNT_RX_PKTS, 1);
    sib_count(ctx, SIB_CNT_RX_BYTES, len);

    qp = ctx->qp_table[pkt.qpn & (SIB_QPS_PER_SLOT - 1)];
    if ((qp == NULL) || (sib_qp_num(qp) != pkt.qpn) ||
        (qp->port_num != pkt.port) ||
        (!!(pkt.mask & SIB_UD_MASK) != (qp->type == IBV_QPT_UD))) {
        sib_count(ctx, SIB_CNT_DROP_NO_QP, 1);
        return;
    }

    if (!sib_recv_state_ok(qp, pkt.mask)) {
        sib_count(ctx, SIB_CNT_DROP_QP_STATE, 1);
        return;
    }

    pkt.ctx = ctx;
    pkt.qp  = qp;
    sib_log_trace("qp 0x%x rx %s psn 0x%x len %u", pkt.qpn,
                  sib_opcode[pkt.opcode].name, pkt.psn, pkt.paylen);

    if (pkt.mask & SIB_REQ_MASK) {
        sib_resp_pkt(qp, &pkt);
    } else {
        sib_comp_pkt(qp, &pkt);
    }
}

/* Engine lock held. A datagram: a doorbell, or one or more packets one
 * after the other, each delimited by its LRH packet length. */
void sib_recv(struct sib_engine *eng, uint8_t *buf, uint32_t len)
{
    uint32_t pktlen;

    if ((len >= sizeof(struct sib_lrh)) &&
        (__lrh_lnh((struct sib_lrh*)buf) == SIB_LNH_RAW) &&
        sib_recv_doorbell(eng, buf, len)) {
        return;
    }

    do {
        pktlen = (len >= sizeof(struct sib_lrh)) ?
                 __lrh_pktlen((struct sib_lrh*)buf) * 4 : 0;
        if ((pktlen == 0) || (pktlen > len)) {
            pktlen = len; /* the rest is one bad packet */
        }
        sib_recv_one(eng, buf, pktlen);
        buf += pktlen;
        len -= pktlen;
    } while (len > 0);
}
