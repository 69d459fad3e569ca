/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */
#include "sib_opcode.h"
#include "sib_hdr.h"

#include <stddef.h>


#define SIB_RC_SEND_START  (SIB_RC_MASK | SIB_REQ_MASK | SIB_SEND_MASK | \
                            SIB_PAYLOAD_MASK | SIB_RWR_MASK)
#define SIB_RC_WRITE_BASE  (SIB_RC_MASK | SIB_REQ_MASK | SIB_WRITE_MASK | \
                            SIB_PAYLOAD_MASK)
#define SIB_RC_READ_RESP   (SIB_RC_MASK | SIB_ACK_MASK | SIB_READ_MASK | \
                            SIB_PAYLOAD_MASK)

/* Masks only; names and offsets are filled in below. A row without a name
 * is an opcode the device does not accept (UC, RD, XRC, ...). */
struct sib_opcode_info sib_opcode[256] = {
    [SIB_RC_SEND_FIRST] = {
        .name = "RC_SEND_FIRST",
        .mask = SIB_RC_SEND_START | SIB_START_MASK
    },
    [SIB_RC_SEND_MIDDLE] = {
        .name = "RC_SEND_MIDDLE",
        .mask = SIB_RC_MASK | SIB_REQ_MASK | SIB_SEND_MASK |
                SIB_PAYLOAD_MASK | SIB_MIDDLE_MASK
    },
    [SIB_RC_SEND_LAST] = {
        .name = "RC_SEND_LAST",
        .mask = SIB_RC_MASK | SIB_REQ_MASK | SIB_SEND_MASK |
                SIB_PAYLOAD_MASK | SIB_COMP_MASK | SIB_END_MASK
    },
    [SIB_RC_SEND_LAST_WITH_IMMEDIATE] = {
        .name = "RC_SEND_LAST_WITH_IMMEDIATE",
        .mask = SIB_RC_MASK | SIB_REQ_MASK | SIB_SEND_MASK |
                SIB_PAYLOAD_MASK | SIB_IMMDT_MASK | SIB_COMP_MASK |
                SIB_END_MASK
    },
    [SIB_RC_SEND_ONLY] = {
        .name = "RC_SEND_ONLY",
        .mask = SIB_RC_SEND_START | SIB_COMP_MASK | SIB_START_MASK |
                SIB_END_MASK
    },
    [SIB_RC_SEND_ONLY_WITH_IMMEDIATE] = {
        .name = "RC_SEND_ONLY_WITH_IMMEDIATE",
        .mask = SIB_RC_SEND_START | SIB_IMMDT_MASK | SIB_COMP_MASK |
                SIB_START_MASK | SIB_END_MASK
    },
    [SIB_RC_RDMA_WRITE_FIRST] = {
        .name = "RC_RDMA_WRITE_FIRST",
        .mask = SIB_RC_WRITE_BASE | SIB_RETH_MASK | SIB_START_MASK
    },
    [SIB_RC_RDMA_WRITE_MIDDLE] = {
        .name = "RC_RDMA_WRITE_MIDDLE",
        .mask = SIB_RC_WRITE_BASE | SIB_MIDDLE_MASK
    },
    [SIB_RC_RDMA_WRITE_LAST] = {
        .name = "RC_RDMA_WRITE_LAST",
        .mask = SIB_RC_WRITE_BASE | SIB_END_MASK
    },
    [SIB_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE] = {
        .name = "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        .mask = SIB_RC_WRITE_BASE | SIB_IMMDT_MASK | SIB_RWR_MASK |
                SIB_COMP_MASK | SIB_END_MASK
    },
    [SIB_RC_RDMA_WRITE_ONLY] = {
        .name = "RC_RDMA_WRITE_ONLY",
        .mask = SIB_RC_WRITE_BASE | SIB_RETH_MASK | SIB_START_MASK |
                SIB_END_MASK
    },
    [SIB_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE] = {
        .name = "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        .mask = SIB_RC_WRITE_BASE | SIB_RETH_MASK | SIB_IMMDT_MASK |
                SIB_RWR_MASK | SIB_COMP_MASK | SIB_START_MASK | SIB_END_MASK
    },
    [SIB_RC_RDMA_READ_REQUEST] = {
        .name = "RC_RDMA_READ_REQUEST",
        .mask = SIB_RC_MASK | SIB_REQ_MASK | SIB_READ_MASK | SIB_RETH_MASK |
                SIB_START_MASK | SIB_END_MASK
    },
    [SIB_RC_RDMA_READ_RESPONSE_FIRST] = {
        .name = "RC_RDMA_READ_RESPONSE_FIRST",
        .mask = SIB_RC_READ_RESP | SIB_AETH_MASK | SIB_START_MASK
    },
    [SIB_RC_RDMA_READ_RESPONSE_MIDDLE] = {
        .name = "RC_RDMA_READ_RESPONSE_MIDDLE",
        .mask = SIB_RC_READ_RESP | SIB_MIDDLE_MASK
    },
    [SIB_RC_RDMA_READ_RESPONSE_LAST] = {
        .name = "RC_RDMA_READ_RESPONSE_LAST",
        .mask = SIB_RC_READ_RESP | SIB_AETH_MASK | SIB_END_MASK
    },
    [SIB_RC_RDMA_READ_RESPONSE_ONLY] = {
        .name = "RC_RDMA_READ_RESPONSE_ONLY",
        .mask = SIB_RC_READ_RESP | SIB_AETH_MASK | SIB_START_MASK |
                SIB_END_MASK
    },
    [SIB_RC_ACKNOWLEDGE] = {
        .name = "RC_ACKNOWLEDGE",
        .mask = SIB_RC_MASK | SIB_ACK_MASK | SIB_AETH_MASK | SIB_START_MASK |
                SIB_END_MASK
    },
    [SIB_RC_ATOMIC_ACKNOWLEDGE] = {
        .name = "RC_ATOMIC_ACKNOWLEDGE",
        .mask = SIB_RC_MASK | SIB_ACK_MASK | SIB_ATOMIC_MASK | SIB_AETH_MASK |
                SIB_ATMACK_MASK | SIB_START_MASK | SIB_END_MASK
    },
    [SIB_RC_COMPARE_SWAP] = {
        .name = "RC_COMPARE_SWAP",
        .mask = SIB_RC_MASK | SIB_REQ_MASK | SIB_ATOMIC_MASK |
                SIB_ATMETH_MASK | SIB_START_MASK | SIB_END_MASK
    },
    [SIB_RC_FETCH_ADD] = {
        .name = "RC_FETCH_ADD",
        .mask = SIB_RC_MASK | SIB_REQ_MASK | SIB_ATOMIC_MASK |
                SIB_ATMETH_MASK | SIB_START_MASK | SIB_END_MASK
    },
    [SIB_RC_SEND_LAST_WITH_INVALIDATE] = {
        .name = "RC_SEND_LAST_WITH_INVALIDATE",
        .mask = SIB_RC_MASK | SIB_REQ_MASK | SIB_SEND_MASK |
                SIB_PAYLOAD_MASK | SIB_IETH_MASK | SIB_COMP_MASK |
                SIB_END_MASK
    },
    [SIB_RC_SEND_ONLY_WITH_INVALIDATE] = {
        .name = "RC_SEND_ONLY_WITH_INVALIDATE",
        .mask = SIB_RC_SEND_START | SIB_IETH_MASK | SIB_COMP_MASK |
                SIB_START_MASK | SIB_END_MASK
    },
    [SIB_UD_SEND_ONLY] = {
        .name = "UD_SEND_ONLY",
        .mask = SIB_UD_MASK | SIB_REQ_MASK | SIB_SEND_MASK | SIB_DETH_MASK |
                SIB_PAYLOAD_MASK | SIB_RWR_MASK | SIB_COMP_MASK |
                SIB_START_MASK | SIB_END_MASK
    },
    [SIB_UD_SEND_ONLY_WITH_IMMEDIATE] = {
        .name = "UD_SEND_ONLY_WITH_IMMEDIATE",
        .mask = SIB_UD_MASK | SIB_REQ_MASK | SIB_SEND_MASK | SIB_DETH_MASK |
                SIB_IMMDT_MASK | SIB_PAYLOAD_MASK | SIB_RWR_MASK |
                SIB_COMP_MASK | SIB_START_MASK | SIB_END_MASK
    },
};

static const unsigned sib_ext_hdr_size[SIB_NUM_HDR] = {
    [SIB_DETH]    = sizeof(struct sib_deth),
    [SIB_RETH]    = sizeof(struct sib_reth),
    [SIB_ATMETH]  = sizeof(struct sib_atmeth),
    [SIB_AETH]    = sizeof(struct sib_aeth),
    [SIB_ATMACK]  = sizeof(struct sib_atmack),
    [SIB_IMMDT]   = sizeof(struct sib_immdt),
    [SIB_IETH]    = sizeof(struct sib_ieth),
    [SIB_PAYLOAD] = 0
};

/* Lay out every opcode's headers in IBA order; the payload offset is the
 * header length. Idempotent, called once from the library constructor. */
void sib_opcode_init(void)
{
    unsigned op, h, off;

    for (op = 0; op < 256; op++) {
        if (sib_opcode[op].name == NULL) {
            continue;
        }

        off = sizeof(struct sib_bth);
        for (h = 0; h < SIB_NUM_HDR; h++) {
            sib_opcode[op].offset[h] = off;
            if (sib_opcode[op].mask & (1u << h)) {
                off += sib_ext_hdr_size[h];
            }
        }
        sib_opcode[op].hdr_len = off;
    }
}
