/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Wire format of the software RDMA device.
 *
 * A UDP datagram carries one or more InfiniBand packets, back to back, each
 * laid out as the IBA specifies it (vol. 1, ch. 5 and 9): LRH, optional
 * GRH, BTH, the extended transport headers the opcode calls for, payload
 * padded to four bytes, and ICRC; the LRH packet length delimits them
 * (sib_recv.c). All multi-byte fields are big-endian. Byte swaps happen
 * only in the accessors below; the rest of the device works on host values.
 *
 * One liberty: the ICRC slot carries a CRC over the headers only (not the
 * payload), which is enough to reject foreign datagrams on our sockets
 * without paying a CRC over every byte of a 4 KiB payload.
 */
#ifndef SIB_HDR_H
#define SIB_HDR_H

#include <endian.h>
#include <stdint.h>
#include <string.h>


/* Local Route Header, IBA 7.7 */
struct sib_lrh {
    uint8_t  vl_lver;    /* VL (4) | LVer (4) */
    uint8_t  sl_lnh;     /* SL (4) | reserved (2) | LNH (2) */
    uint16_t dlid;
    uint16_t pktlen;     /* reserved (5) | packet length in 4-byte words (11) */
    uint16_t slid;
} __attribute__((packed));

/* Global Route Header, IBA 8.3 */
struct sib_grh {
    uint32_t ver_tclass_flow;
    uint16_t paylen;
    uint8_t  next_hdr;
    uint8_t  hop_limit;
    uint8_t  sgid[16];
    uint8_t  dgid[16];
} __attribute__((packed));

/* Base Transport Header, IBA 9.2 */
struct sib_bth {
    uint8_t  opcode;
    uint8_t  flags;      /* SE (1) | M (1) | PadCnt (2) | TVer (4) */
    uint16_t pkey;
    uint32_t qpn;        /* reserved (8) | DestQP (24) */
    uint32_t apsn;       /* AckReq (1) | reserved (7) | PSN (24) */
} __attribute__((packed));

/* Datagram Extended Transport Header, IBA 9.3.2 */
struct sib_deth {
    uint32_t qkey;
    uint32_t sqp;        /* reserved (8) | SrcQP (24) */
} __attribute__((packed));

/* RDMA Extended Transport Header, IBA 9.3.3 */
struct sib_reth {
    uint64_t va;
    uint32_t rkey;
    uint32_t len;
} __attribute__((packed));

/* Atomic Extended Transport Header, IBA 9.3.4 */
struct sib_atmeth {
    uint64_t va;
    uint32_t rkey;
    uint64_t swap_add;
    uint64_t comp;
} __attribute__((packed));

/* ACK Extended Transport Header, IBA 9.3.5 */
struct sib_aeth {
    uint32_t smsn;       /* Syndrome (8) | MSN (24) */
} __attribute__((packed));

/* Atomic ACK Extended Transport Header, IBA 9.3.6 */
struct sib_atmack {
    uint64_t orig;
} __attribute__((packed));

/* Immediate Data Extended Transport Header, IBA 9.3.7 */
struct sib_immdt {
    uint32_t imm;
} __attribute__((packed));

/* Invalidate Extended Transport Header, IBA 9.3.8 */
struct sib_ieth {
    uint32_t rkey;
} __attribute__((packed));

_Static_assert(sizeof(struct sib_lrh) == 8, "LRH is 8 bytes");
_Static_assert(sizeof(struct sib_grh) == 40, "GRH is 40 bytes");
_Static_assert(sizeof(struct sib_bth) == 12, "BTH is 12 bytes");
_Static_assert(sizeof(struct sib_deth) == 8, "DETH is 8 bytes");
_Static_assert(sizeof(struct sib_reth) == 16, "RETH is 16 bytes");
_Static_assert(sizeof(struct sib_atmeth) == 28, "AtomicETH is 28 bytes");
_Static_assert(sizeof(struct sib_aeth) == 4, "AETH is 4 bytes");
_Static_assert(sizeof(struct sib_atmack) == 8, "AtomicAckETH is 8 bytes");

#define SIB_ICRC_SIZE        4
#define SIB_LNH_RAW          0    /* control datagrams of the device itself */
#define SIB_LNH_IBA_LOCAL    2    /* LRH + BTH */
#define SIB_LNH_IBA_GLOBAL   3    /* LRH + GRH + BTH */
#define SIB_PSN_MASK         0xffffffu
#define SIB_QPN_MASK         0xffffffu
#define SIB_BTH_ACKREQ       0x80000000u
#define SIB_BTH_SE           0x80
#define SIB_BTH_MIG          0x40
#define SIB_BTH_PAD_MASK     0x30
#define SIB_BTH_PAD_SHIFT    4
#define SIB_MAX_PKT_WORDS    0x7ff


/* AETH syndrome, IBA 9.7.5.1 table 43 */
enum sib_aeth_type {
    SIB_AETH_ACK     = 0x00,
    SIB_AETH_RNR_NAK = 0x20,
    SIB_AETH_NAK     = 0x60,
    SIB_AETH_TYPE_MASK = 0xe0
};

enum sib_aeth_nak_code {
    SIB_NAK_PSN_SEQ_ERROR = 0,
    SIB_NAK_INVALID_REQ   = 1,
    SIB_NAK_REM_ACCESS    = 2,
    SIB_NAK_REM_OP        = 3,
    SIB_NAK_INVALID_RD    = 4
};

/* An ACK carries the credit field; 0x1f means "no flow control credits"
 * (IBA 9.7.7.2.5), which is what an SRQ-attached responder advertises. */
#define SIB_AETH_ACK_UNLIMITED  (SIB_AETH_ACK | 0x1f)


/* Raw accessors: read or write a header given its address. */
static inline unsigned __lrh_lnh(const struct sib_lrh *h)
{
    return h->sl_lnh & 0x3;
}

static inline unsigned __lrh_lver(const struct sib_lrh *h)
{
    return h->vl_lver & 0xf;
}

static inline uint16_t __lrh_dlid(const struct sib_lrh *h)
{
    return be16toh(h->dlid);
}

static inline uint16_t __lrh_slid(const struct sib_lrh *h)
{
    return be16toh(h->slid);
}

static inline unsigned __lrh_pktlen(const struct sib_lrh *h)
{
    return be16toh(h->pktlen) & SIB_MAX_PKT_WORDS;
}

static inline void __lrh_set(struct sib_lrh *h, unsigned sl, unsigned lnh,
                             uint16_t dlid, uint16_t slid, unsigned words)
{
    h->vl_lver = 0;
    h->sl_lnh  = (uint8_t)(((sl & 0xf) << 4) | (lnh & 0x3));
    h->dlid    = htobe16(dlid);
    h->pktlen  = htobe16((uint16_t)(words & SIB_MAX_PKT_WORDS));
    h->slid    = htobe16(slid);
}

static inline uint8_t __bth_opcode(const struct sib_bth *h)
{
    return h->opcode;
}

static inline int __bth_se(const struct sib_bth *h)
{
    return !!(h->flags & SIB_BTH_SE);
}

static inline unsigned __bth_pad(const struct sib_bth *h)
{
    return (h->flags & SIB_BTH_PAD_MASK) >> SIB_BTH_PAD_SHIFT;
}

static inline uint16_t __bth_pkey(const struct sib_bth *h)
{
    return be16toh(h->pkey);
}

static inline uint32_t __bth_qpn(const struct sib_bth *h)
{
    return be32toh(h->qpn) & SIB_QPN_MASK;
}

static inline uint32_t __bth_psn(const struct sib_bth *h)
{
    return be32toh(h->apsn) & SIB_PSN_MASK;
}

static inline int __bth_ackreq(const struct sib_bth *h)
{
    return !!(be32toh(h->apsn) & SIB_BTH_ACKREQ);
}

static inline void __bth_set(struct sib_bth *h, uint8_t opcode, int se,
                             unsigned pad, uint16_t pkey, uint32_t qpn,
                             int ackreq, uint32_t psn)
{
    h->opcode = opcode;
    h->flags  = (uint8_t)((se ? SIB_BTH_SE : 0) | SIB_BTH_MIG |
                          ((pad << SIB_BTH_PAD_SHIFT) & SIB_BTH_PAD_MASK));
    h->pkey   = htobe16(pkey);
    h->qpn    = htobe32(qpn & SIB_QPN_MASK);
    h->apsn   = htobe32((psn & SIB_PSN_MASK) | (ackreq ? SIB_BTH_ACKREQ : 0));
}

static inline uint32_t __deth_qkey(const struct sib_deth *h)
{
    return be32toh(h->qkey);
}

static inline uint32_t __deth_sqp(const struct sib_deth *h)
{
    return be32toh(h->sqp) & SIB_QPN_MASK;
}

static inline void __deth_set(struct sib_deth *h, uint32_t qkey, uint32_t sqp)
{
    h->qkey = htobe32(qkey);
    h->sqp  = htobe32(sqp & SIB_QPN_MASK);
}

static inline uint64_t __reth_va(const struct sib_reth *h)
{
    return be64toh(h->va);
}

static inline uint32_t __reth_rkey(const struct sib_reth *h)
{
    return be32toh(h->rkey);
}

static inline uint32_t __reth_len(const struct sib_reth *h)
{
    return be32toh(h->len);
}

static inline void __reth_set(struct sib_reth *h, uint64_t va, uint32_t rkey,
                              uint32_t len)
{
    h->va   = htobe64(va);
    h->rkey = htobe32(rkey);
    h->len  = htobe32(len);
}

static inline uint64_t __atmeth_va(const struct sib_atmeth *h)
{
    return be64toh(h->va);
}

static inline uint32_t __atmeth_rkey(const struct sib_atmeth *h)
{
    return be32toh(h->rkey);
}

static inline uint64_t __atmeth_swap_add(const struct sib_atmeth *h)
{
    return be64toh(h->swap_add);
}

static inline uint64_t __atmeth_comp(const struct sib_atmeth *h)
{
    return be64toh(h->comp);
}

static inline void __atmeth_set(struct sib_atmeth *h, uint64_t va,
                                uint32_t rkey, uint64_t swap_add,
                                uint64_t comp)
{
    h->va       = htobe64(va);
    h->rkey     = htobe32(rkey);
    h->swap_add = htobe64(swap_add);
    h->comp     = htobe64(comp);
}

static inline uint8_t __aeth_syn(const struct sib_aeth *h)
{
    return (uint8_t)(be32toh(h->smsn) >> 24);
}

static inline uint32_t __aeth_msn(const struct sib_aeth *h)
{
    return be32toh(h->smsn) & 0xffffff;
}

static inline void __aeth_set(struct sib_aeth *h, uint8_t syn, uint32_t msn)
{
    h->smsn = htobe32(((uint32_t)syn << 24) | (msn & 0xffffff));
}

static inline uint64_t __atmack_orig(const struct sib_atmack *h)
{
    return be64toh(h->orig);
}

static inline void __atmack_set(struct sib_atmack *h, uint64_t orig)
{
    h->orig = htobe64(orig);
}

/* Immediate data travels as the application gave it (already big-endian
 * in ibv_send_wr.imm_data and ibv_wc.imm_data), so no swap here. */
static inline uint32_t __immdt_imm(const struct sib_immdt *h)
{
    return h->imm;
}

static inline void __immdt_set(struct sib_immdt *h, uint32_t imm_be)
{
    h->imm = imm_be;
}

static inline uint32_t __ieth_rkey(const struct sib_ieth *h)
{
    return be32toh(h->rkey);
}

/* 24-bit serial-number comparison (IBA 9.7.1): negative if a precedes b,
 * zero if equal, positive if a follows b. Every PSN comparison in the
 * device goes through here. */
static inline int32_t sib_psn_compare(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t sib_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & SIB_PSN_MASK;
}

#endif
