/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_PSN_H
#define UCT_RC_VARUNA_PSN_H

#include <stdbool.h>
#include <stdint.h>

/*
 * PSN bookkeeping (DESIGN.md section 3.4). rc_varuna chooses the initial
 * PSNs of its QPs, so it knows the PSN range every work request occupies:
 * a SEND or WRITE of L bytes takes max(1, ceil(L / path_mtu)) PSNs, a READ
 * as many for its response packets, an atomic and the 8-byte log write one
 * each (IBA 9.7.1). The responder's expected PSN then says which requests
 * it has executed: those whose last PSN precedes it.
 *
 * Plain C, no UCX types: unit-tested on its own.
 */

#define UCT_RC_VARUNA_PSN_MASK  0xffffffu


/* What an operation's request is, as far as its PSNs and its failover
 * handling go */
typedef enum {
    UCT_RC_VARUNA_KIND_WRITE,        /* puts, flush, keepalive */
    UCT_RC_VARUNA_KIND_SEND,         /* active messages, FC grants */
    UCT_RC_VARUNA_KIND_READ,
    UCT_RC_VARUNA_KIND_ATOMIC        /* fetching or not */
} uct_rc_varuna_kind_t;


/* a + n in 24-bit PSN space */
static inline uint32_t uct_rc_varuna_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & UCT_RC_VARUNA_PSN_MASK;
}


/* 24-bit serial comparison: < 0 if a precedes b, 0 if equal, > 0 if a
 * follows b. Valid while the two are less than 2^23 apart. */
static inline int32_t uct_rc_varuna_psn_cmp(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}


/* Number of PSNs a work request of this kind and length occupies. */
static inline uint32_t uct_rc_varuna_psn_count(uct_rc_varuna_kind_t kind,
                                               uint64_t length,
                                               uint32_t path_mtu)
{
    if ((kind == UCT_RC_VARUNA_KIND_ATOMIC) || (length == 0)) {
        return 1;
    }
    return (uint32_t)((length + path_mtu - 1) / path_mtu);
}


/* Has a request whose last PSN is last_psn executed at a responder whose
 * expected PSN is rq_psn? A partly received request counts as not executed
 * (it is resent whole). */
static inline bool uct_rc_varuna_psn_executed(uint32_t last_psn,
                                              uint32_t rq_psn)
{
    return uct_rc_varuna_psn_cmp(last_psn, rq_psn) < 0;
}

#endif
