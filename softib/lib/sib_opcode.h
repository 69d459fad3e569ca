/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Opcode table: what each BTH opcode carries and means. The engines test
 * mask bits (SIB_READ_MASK, SIB_END_MASK, ...) instead of switching on
 * opcode values, so a new opcode is one table row.
 */
#ifndef SIB_OPCODE_H
#define SIB_OPCODE_H

#include <stddef.h>
#include <stdint.h>


/* BTH opcode values, IBA 9.2 table 38 */
enum sib_bth_opcode {
    SIB_RC_SEND_FIRST                    = 0x00,
    SIB_RC_SEND_MIDDLE                   = 0x01,
    SIB_RC_SEND_LAST                     = 0x02,
    SIB_RC_SEND_LAST_WITH_IMMEDIATE      = 0x03,
    SIB_RC_SEND_ONLY                     = 0x04,
    SIB_RC_SEND_ONLY_WITH_IMMEDIATE      = 0x05,
    SIB_RC_RDMA_WRITE_FIRST              = 0x06,
    SIB_RC_RDMA_WRITE_MIDDLE             = 0x07,
    SIB_RC_RDMA_WRITE_LAST               = 0x08,
    SIB_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
    SIB_RC_RDMA_WRITE_ONLY               = 0x0a,
    SIB_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
    SIB_RC_RDMA_READ_REQUEST             = 0x0c,
    SIB_RC_RDMA_READ_RESPONSE_FIRST      = 0x0d,
    SIB_RC_RDMA_READ_RESPONSE_MIDDLE     = 0x0e,
    SIB_RC_RDMA_READ_RESPONSE_LAST       = 0x0f,
    SIB_RC_RDMA_READ_RESPONSE_ONLY       = 0x10,
    SIB_RC_ACKNOWLEDGE                   = 0x11,
    SIB_RC_ATOMIC_ACKNOWLEDGE            = 0x12,
    SIB_RC_COMPARE_SWAP                  = 0x13,
    SIB_RC_FETCH_ADD                     = 0x14,
    SIB_RC_SEND_LAST_WITH_INVALIDATE     = 0x16,
    SIB_RC_SEND_ONLY_WITH_INVALIDATE     = 0x17,
    SIB_UD_SEND_ONLY                     = 0x64,
    SIB_UD_SEND_ONLY_WITH_IMMEDIATE      = 0x65,
    SIB_OPCODE_NONE                      = 0xff
};

/* Extended headers, in the order IBA 9.2 places them after the BTH */
enum sib_ext_hdr {
    SIB_DETH,
    SIB_RETH,
    SIB_ATMETH,
    SIB_AETH,
    SIB_ATMACK,
    SIB_IMMDT,
    SIB_IETH,
    SIB_PAYLOAD,
    SIB_NUM_HDR
};

enum sib_opcode_mask {
    SIB_DETH_MASK    = 1u << SIB_DETH,
    SIB_RETH_MASK    = 1u << SIB_RETH,
    SIB_ATMETH_MASK  = 1u << SIB_ATMETH,
    SIB_AETH_MASK    = 1u << SIB_AETH,
    SIB_ATMACK_MASK  = 1u << SIB_ATMACK,
    SIB_IMMDT_MASK   = 1u << SIB_IMMDT,
    SIB_IETH_MASK    = 1u << SIB_IETH,
    SIB_PAYLOAD_MASK = 1u << SIB_PAYLOAD,

    SIB_REQ_MASK     = 1u << 10, /* travels requester -> responder */
    SIB_ACK_MASK     = 1u << 11, /* travels responder -> requester */
    SIB_SEND_MASK    = 1u << 12,
    SIB_WRITE_MASK   = 1u << 13,
    SIB_READ_MASK    = 1u << 14,
    SIB_ATOMIC_MASK  = 1u << 15,
    SIB_RWR_MASK     = 1u << 16, /* consumes a receive WQE */
    SIB_COMP_MASK    = 1u << 17, /* completes a receive WQE */
    SIB_START_MASK   = 1u << 18, /* first packet of a message */
    SIB_MIDDLE_MASK  = 1u << 19,
    SIB_END_MASK     = 1u << 20, /* last packet of a message */
    SIB_UD_MASK      = 1u << 21,
    SIB_RC_MASK      = 1u << 22
};

struct sib_opcode_info {
    const char *name;
    uint32_t    mask;
    unsigned    hdr_len;               /* BTH + extended headers */
    unsigned    offset[SIB_NUM_HDR];   /* from the start of the BTH */
};

extern struct sib_opcode_info sib_opcode[256];

void sib_opcode_init(void);

static inline int sib_opcode_valid(uint8_t opcode)
{
    return sib_opcode[opcode].name != NULL;
}

#endif
