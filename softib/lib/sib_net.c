/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * The network: UDP sockets, packet framing on transmit, port state, and
 * all fault injection. Everything that decides whether a packet reaches
 * the wire is here, and every such decision is counted.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>


static uint32_t sib_crc_table[256];

static void __attribute__((constructor)) sib_crc_init(void)
{
    uint32_t c;
    unsigned n, k;

    for (n = 0; n < 256; n++) {
        c = n;
        for (k = 0; k < 8; k++) {
            c = (c & 1) ? (0xedb88320u ^ (c >> 1)) : (c >> 1);
        }
        sib_crc_table[n] = c;
    }
}

/* CRC-32 over the headers of a packet; stored where the ICRC goes. */
uint32_t sib_hcrc(const uint8_t *buf, uint32_t len)
{
    uint32_t c = 0xffffffffu;

    while (len--) {
        c = sib_crc_table[(c ^ *buf++) & 0xff] ^ (c >> 8);
    }
    return c ^ 0xffffffffu;
}

/* Counters are written only under the engine lock of the owning process,
 * so a relaxed load and store is enough and costs no locked instruction. */
void sib_count(struct sib_context *ctx, enum sib_counter cnt, uint64_t n)
{
    uint64_t *c = &ctx->reg_slot->counters[cnt];

    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n,
                     __ATOMIC_RELAXED);
}

/* Engine lock held. Receive up to budget datagrams from one socket and
 * hand each to sib_recv(). */
void sib_net_poll(struct sib_engine *eng, int fd, unsigned budget)
{
    unsigned batch, i;
    int n;

    while (budget > 0) {
        batch = (budget < SIB_RX_BATCH) ? budget : SIB_RX_BATCH;
        for (i = 0; i < batch; i++) {
            memset(&eng->rx_msg[i].msg_hdr, 0, sizeof(struct msghdr));
            eng->rx_msg[i].msg_hdr.msg_iov    = &eng->rx_iov[i];
            eng->rx_msg[i].msg_hdr.msg_iovlen = 1;
        }

        n = recvmmsg(fd, eng->rx_msg, batch, MSG_DONTWAIT, NULL);
        if (n <= 0) {
            return;
        }

        for (i = 0; i < (unsigned)n; i++) {
            /* a truncated datagram cannot be a softib packet */
            sib_recv(eng, eng->rx_iov[i].iov_base,
                     (eng->rx_msg[i].msg_hdr.msg_flags & MSG_TRUNC) ?
                     0 : eng->rx_msg[i].msg_len);
        }

        budget -= (unsigned)n;
        if ((unsigned)n < batch) {
            return;
        }
    }
}

static uint16_t sib_port_lid(const struct sib_qp *qp)
{
    return sib_registry_lid(qp->ctx->dev->index, qp->port_num);
}

/* Start a packet from qp to (av->dlid, dqpn): LRH, optional GRH, BTH. The
 * caller fills the extended headers through sib_out_hdr() and adds the
 * payload; sib_net_xmit() finishes the framing. */
void sib_out_init(struct sib_out *out, struct sib_qp *qp,
                  const struct ibv_ah_attr *av, uint8_t opcode, uint32_t dqpn,
                  uint32_t psn, int ackreq, int se)
{
    struct sib_grh *grh;
    int global = av->is_global;

    out->opcode    = opcode;
    out->lrh_len   = sizeof(struct sib_lrh) + (global ? sizeof(*grh) : 0);
    out->iovcnt    = 0;
    out->paylen    = 0;
    out->pkt_class = sib_pkt_class(sib_opcode[opcode].mask);
    out->src_qpn   = sib_qp_num(qp);
    out->dlid      = av->dlid;
    out->dqpn      = dqpn;

    __lrh_set((struct sib_lrh*)out->hdr, av->sl,
              global ? SIB_LNH_IBA_GLOBAL : SIB_LNH_IBA_LOCAL, av->dlid,
              sib_port_lid(qp) | av->src_path_bits, 0);
    if (global) {
        grh = (struct sib_grh*)(out->hdr + sizeof(struct sib_lrh));
        memset(grh, 0, sizeof(*grh));
        grh->ver_tclass_flow = htobe32((6u << 28) |
                                       ((uint32_t)av->grh.traffic_class << 20) |
                                       (av->grh.flow_label & 0xfffff));
        grh->next_hdr  = 0x1b;
        grh->hop_limit = av->grh.hop_limit;
        sib_port_gid(qp->ctx->dev->index, qp->port_num, grh->sgid);
        memcpy(grh->dgid, av->grh.dgid.raw, sizeof(grh->dgid));
    }

    memset(sib_out_bth(out), 0, sib_opcode[opcode].hdr_len);
    __bth_set(sib_out_bth(out), opcode, se, 0, SIB_DEFAULT_PKEY, dqpn, ackreq,
              psn);
}

void sib_out_add_payload(struct sib_out *out, const void *addr, uint32_t len)
{
    if (len == 0) {
        return;
    }
    out->iov[1 + out->iovcnt].iov_base = (void*)addr;
    out->iov[1 + out->iovcnt].iov_len  = len;
    out->iovcnt++;
    out->paylen += len;
}

/* Resolve (dlid, dqpn) to the UDP address of the process owning the QP.
 * Returns 0, or -ENOENT for a destination that does not exist. */
static int sib_net_route(struct sib_registry *reg, uint16_t dlid,
                         uint32_t dqpn, struct sockaddr_in *sin,
                         unsigned *ddev_p, unsigned *dport_p)
{
    unsigned ddev, dport, slot = dqpn >> SIB_QPN_SLOT_SHIFT;
    const struct sib_reg_slot *s;

    if ((sib_registry_lid_lookup(reg, dlid, &ddev, &dport) < 0) ||
        (slot == 0) || (slot >= SIB_MAX_SLOTS)) {
        return -ENOENT;
    }

    s = &reg->slot[slot];
    if ((__atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) == 0) ||
        (s->dev != ddev) || (s->udp_port[dport - 1] == 0)) {
        return -ENOENT;
    }

    memset(sin, 0, sizeof(*sin));
    sin->sin_family      = AF_INET;
    sin->sin_port        = htons(s->udp_port[dport - 1]);
    sin->sin_addr.s_addr = reg->dev[ddev].port[dport - 1].ip;
    *ddev_p              = ddev;
    *dport_p             = dport;
    return 0;
}

static int sib_net_sock_fd(struct sib_engine *eng, uint32_t ip)
{
    unsigned i;

    for (i = 0; i < eng->nsock; i++) {
        if (eng->sock[i].ip == ip) {
            return eng->sock[i].fd;
        }
    }
    return -1;
}

static void sib_net_delay(struct sib_engine *eng, struct sib_context *ctx,
                          int fd, const struct sockaddr_in *dst,
                          const struct msghdr *msg, uint32_t len,
                          uint64_t delay_ns)
{
    struct sib_delayed *d, *pos;
    struct sib_list *node;
    uint32_t off = 0;
    size_t i;

    d = malloc(sizeof(*d) + len);
    if (d == NULL) {
        return; /* a lost packet: retransmission recovers */
    }
    for (i = 0; i < msg->msg_iovlen; i++) {
        sib_mem_copy(ctx, d->data + off, msg->msg_iov[i].iov_base,
                     msg->msg_iov[i].iov_len, msg->msg_iov[i].iov_base);
        off += (uint32_t)msg->msg_iov[i].iov_len;
    }
    d->fd     = fd;
    d->dst    = *dst;
    d->len    = len;
    d->due_ns = sib_now_ns() + delay_ns;

    /* keep the list sorted by due time; ties keep their order */
    for (node = eng->delayed.prev; node != &eng->delayed; node = node->prev) {
        pos = sib_list_entry(node, struct sib_delayed, link);
        if (pos->due_ns <= d->due_ns) {
            break;
        }
    }
    sib_list_add_tail(node->next, &d->link);
}

void sib_net_run_delayed(struct sib_engine *eng, uint64_t now)
{
    struct sib_delayed *d;

    while (!sib_list_empty(&eng->delayed)) {
        d = sib_list_entry(eng->delayed.next, struct sib_delayed, link);
        if (d->due_ns > now) {
            return;
        }
        sib_list_del(&d->link);
        sendto(d->fd, d->data, d->len, MSG_DONTWAIT,
               (struct sockaddr*)&d->dst, sizeof(d->dst));
        free(d);
    }
}

uint64_t sib_net_next_delayed(struct sib_engine *eng)
{
    if (sib_list_empty(&eng->delayed)) {
        return UINT64_MAX;
    }
    return sib_list_entry(eng->delayed.next, struct sib_delayed,
                          link)->due_ns;
}

/* The batch gathers payloads from registered memory that the application
 * unmapped (sendmsg failed with EFAULT): send it once more from a copy in
 * which that memory reads as zeros (sib_mem_copy), as pinned pages would
 * still be read by an HCA. */
static int sib_net_send_copy(struct sib_engine *eng)
{
    struct sib_tx_batch *tx = &eng->tx;
    uint32_t i, off = 0;

    for (i = 0; i < tx->niov; i++) {
        sib_mem_copy(tx->ctx, eng->tx_copy + off, tx->iov[i].iov_base,
                     tx->iov[i].iov_len, tx->iov[i].iov_base);
        off += (uint32_t)tx->iov[i].iov_len;
    }
    return (int)sendto(tx->fd, eng->tx_copy, off, MSG_DONTWAIT,
                       (struct sockaddr*)&tx->dst, sizeof(tx->dst));
}

/* Engine lock held. Send the batched packets, if any. Called at the end of
 * every engine pass and of every post_send. */
void sib_net_flush(struct sib_engine *eng)
{
    struct sib_tx_batch *tx = &eng->tx;
    struct msghdr msg;
    ssize_t ret;

    if (tx->npkts == 0) {
        return;
    }

    memset(&msg, 0, sizeof(msg));
    msg.msg_name    = &tx->dst;
    msg.msg_namelen = sizeof(tx->dst);
    msg.msg_iov     = tx->iov;
    msg.msg_iovlen  = tx->niov;
    ret = sendmsg(tx->fd, &msg, MSG_DONTWAIT);
    if ((ret < 0) && (errno == EFAULT)) {
        ret = sib_net_send_copy(eng);
    }
    if (ret < 0) {
        /* lost like on a congested link; the requesters retransmit */
        sib_count(tx->ctx, SIB_CNT_DROP_SEND_ERR, tx->npkts);
        sib_log_debug("sendmsg of %u packets to udp port %u: %m", tx->npkts,
                      ntohs(tx->dst.sin_port));
    }
    tx->npkts = 0;
    tx->bytes = 0;
    tx->niov  = 0;
}

static void sib_net_batch_add(struct sib_engine *eng, struct sib_context *ctx,
                              int fd, const struct sockaddr_in *dst,
                              struct sib_out *out, uint32_t hdr_len,
                              uint32_t total)
{
    struct sib_tx_batch *tx = &eng->tx;
    uint32_t tail_len = (uint32_t)out->iov[1 + out->iovcnt].iov_len;
    uint32_t i;

    if ((tx->npkts > 0) &&
        ((tx->fd != fd) || (tx->dst.sin_port != dst->sin_port) ||
         (tx->dst.sin_addr.s_addr != dst->sin_addr.s_addr) ||
         (tx->bytes + total > SIB_DGRAM_MAX) ||
         (tx->niov + out->iovcnt + 2 > SIB_BATCH_IOV) ||
         (tx->npkts == SIB_BATCH_PKTS) || !eng->batching)) {
        sib_net_flush(eng);
    }
    if (tx->npkts == 0) {
        tx->fd  = fd;
        tx->dst = *dst;
        tx->ctx = ctx;
    }

    memcpy(tx->hdr[tx->npkts], out->hdr, hdr_len);
    memcpy(tx->tail[tx->npkts], out->tail, tail_len);
    tx->iov[tx->niov].iov_base = tx->hdr[tx->npkts];
    tx->iov[tx->niov].iov_len  = hdr_len;
    tx->niov++;
    for (i = 0; i < out->iovcnt; i++) {
        tx->iov[tx->niov++] = out->iov[1 + i];
    }
    tx->iov[tx->niov].iov_base = tx->tail[tx->npkts];
    tx->iov[tx->niov].iov_len  = tail_len;
    tx->niov++;
    tx->npkts++;
    tx->bytes += total;

    if (!eng->batching) {
        sib_net_flush(eng);
    }
}

void sib_net_free_delayed(struct sib_engine *eng)
{
    struct sib_delayed *d;

    while (!sib_list_empty(&eng->delayed)) {
        d = sib_list_entry(eng->delayed.next, struct sib_delayed, link);
        sib_list_del(&d->link);
        free(d);
    }
}

/* Engine lock held. Finish framing and send. A packet that the link, a
 * rule or the routing swallows is not an error for the caller: on a real
 * network it would simply be lost, and the protocol recovers. */
void sib_net_xmit(struct sib_qp *qp, struct sib_out *out)
{
    struct sib_context *ctx  = qp->ctx;
    struct sib_engine *eng   = ctx->eng;
    struct sib_registry *reg = eng->reg;
    unsigned dev = ctx->dev->index, port = qp->port_num, ddev, dport;
    uint32_t hdr_len = out->lrh_len + sib_opcode[out->opcode].hdr_len;
    uint32_t pad     = (-out->paylen) & 3;
    uint32_t total   = hdr_len + out->paylen + pad + SIB_ICRC_SIZE;
    struct sib_bth *bth = sib_out_bth(out);
    struct sib_reg_rule *rule = NULL;
    struct sockaddr_in dst;
    struct msghdr msg;
    uint32_t crc;
    int fd;

    bth->flags = (uint8_t)((bth->flags & ~SIB_BTH_PAD_MASK) |
                           (pad << SIB_BTH_PAD_SHIFT));
    ((struct sib_lrh*)out->hdr)->pktlen = htobe16((uint16_t)(total / 4));
    if (out->lrh_len > sizeof(struct sib_lrh)) {
        ((struct sib_grh*)(out->hdr + sizeof(struct sib_lrh)))->paylen =
                htobe16((uint16_t)(total - out->lrh_len));
    }

    memset(out->tail, 0, pad);
    crc = htobe32(sib_hcrc(out->hdr, hdr_len));
    memcpy(out->tail + pad, &crc, sizeof(crc));

    if (__atomic_load_n(&reg->dev[dev].port[port - 1].state,
                        __ATOMIC_ACQUIRE) != SIB_PORT_ACTIVE) {
        sib_count(ctx, SIB_CNT_DROP_PORT_DOWN, 1);
        return;
    }

    if (__atomic_load_n(&reg->num_rules, __ATOMIC_ACQUIRE) != 0) {
        rule = sib_registry_rule_match(reg, SIB_DIR_TX, dev, port,
                                       out->src_qpn, out->pkt_class);
        if ((rule != NULL) && (rule->kind == SIB_RULE_DROP)) {
            sib_log_debug("rule %u drops %s psn 0x%x from qp 0x%x", rule->id,
                          sib_opcode[out->opcode].name, __bth_psn(bth),
                          out->src_qpn);
            sib_count(ctx, SIB_CNT_DROP_RULE, 1);
            return;
        }
    }

    if (sib_net_route(reg, out->dlid, out->dqpn, &dst, &ddev, &dport) < 0) {
        sib_count(ctx, SIB_CNT_DROP_NO_ROUTE, 1);
        return;
    }

    fd = sib_net_sock_fd(eng, reg->dev[dev].port[port - 1].ip);
    if (fd < 0) {
        sib_count(ctx, SIB_CNT_DROP_NO_ROUTE, 1);
        return;
    }

    out->iov[0].iov_base          = out->hdr;
    out->iov[0].iov_len           = hdr_len;
    out->iov[1 + out->iovcnt].iov_base = out->tail;
    out->iov[1 + out->iovcnt].iov_len  = pad + SIB_ICRC_SIZE;

    sib_count(ctx, SIB_CNT_TX_PKTS, 1);
    sib_count(ctx, SIB_CNT_TX_BYTES, total);
    if (sib_opcode[out->opcode].mask & SIB_ACK_MASK) {
        sib_count(ctx, SIB_CNT_TX_RESPONSES, 1);
    }

    if (rule != NULL) {
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov    = out->iov;
        msg.msg_iovlen = out->iovcnt + 2;
        sib_count(ctx, SIB_CNT_DELAY_RULE, 1);
        sib_net_delay(eng, ctx, fd, &dst, &msg, total, rule->delay_ns);
        return;
    }

    sib_net_batch_add(eng, ctx, fd, &dst, out, hdr_len, total);
}
