/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_CLASSIFY_H
#define UCT_RC_VARUNA_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc_varuna_psn.h"

/*
 * Classification of the operations in flight on a failed QP
 * (DESIGN.md section 5.3).
 *
 * The completion log word L at the responder is the sequence number of the
 * last log write that executed: that operation executed, and every smaller
 * one too (RC executes in order, and a failover resends in sn order before
 * anything new). Not every operation writes the log (UCX_RC_VARUNA_LOG_
 * INTERVAL), so each one carries the sn of the last log write posted
 * before it on its QP, B (0: none since the QP took the traffic). So:
 *   sn <= L      executed
 *   B  >  L      lost: a log write posted before it never executed
 *   otherwise    undecided: its request may have executed while no log
 *                write behind it did.
 * With a log write behind every operation, B = sn - 1 and the undecided one
 * is L + 1 alone. An undecided one is settled by what it is: a READ is
 * simply read again, a SEND resent by the same endpoint is dropped by the
 * receiver if it was a duplicate (by its sequence number); a WRITE, an
 * atomic, or a SEND another endpoint would resend (send_dedup false) needs
 * the responder's expected PSN, which says exactly which requests executed
 * (section 3.4). Without a
 * log every operation is decided that way. An operation its QP refused to
 * take (ibv_post_send failed) never left: lost, whatever the rest says.
 *
 * A dead endpoint's purge (rc_varuna_purge.c) has one more witness: the
 * receiver says up to which sequence number it delivered the numbered
 * SENDs (active messages) of the connection, in order, none after it.
 * That decides every active message, whichever lane it went on: a SEND
 * that executed on the failed primary and was sent again on the standby
 * (harmless there: the receiver drops the copy) has the standby's PSNs in
 * its record, and when the standby dies too the copy's PSN says "not
 * executed" of a message that was delivered (issue 34).
 *
 * Plain C, no UCX types: unit-tested on its own.
 */

typedef enum {
    UCT_RC_VARUNA_VERDICT_EXECUTED,  /* executed at the responder */
    UCT_RC_VARUNA_VERDICT_LOST,      /* must be sent again */
    UCT_RC_VARUNA_VERDICT_UNDECIDED  /* needs the responder's expected PSN */
} uct_rc_varuna_verdict_t;

/* What decided the verdict (for the failover report) */
typedef enum {
    UCT_RC_VARUNA_BASIS_LOG,         /* the completion log */
    UCT_RC_VARUNA_BASIS_PSN,         /* the responder's expected PSN */
    UCT_RC_VARUNA_BASIS_IDEMPOTENT,  /* resending is harmless: READ/SEND */
    UCT_RC_VARUNA_BASIS_NEVER_SENT,  /* its QP refused it */
    UCT_RC_VARUNA_BASIS_DELIVERED,   /* the receiver's delivered SENDs */
    UCT_RC_VARUNA_BASIS_NONE         /* undecided */
} uct_rc_varuna_basis_t;

typedef struct {
    /* input */
    uint64_t sn;
    uint64_t log_before;     /* B: the last log write before it, or 0 */
    uint32_t last_psn;       /* last PSN of the operation's request */
    uint8_t  kind;           /* uct_rc_varuna_kind_t */
    uint8_t  never_sent;     /* its QP refused it: nothing of it left */
    uint8_t  numbered;       /* a SEND with its place in the receiver's
                                order (am_seq) */
    uint32_t am_seq;         /* that place */
    /* output */
    uint8_t  verdict;        /* uct_rc_varuna_verdict_t */
    uint8_t  basis;          /* uct_rc_varuna_basis_t */
} uct_rc_varuna_cls_op_t;

typedef struct {
    bool     log_valid;      /* the log word was read */
    uint64_t log_sn;         /* its value, L */
    bool     psn_valid;      /* the responder reported its expected PSN */
    uint32_t rq_psn;
    /* a SEND sent again is dropped by the receiver if it delivered it:
     * true when the same endpoint resends (a failover), false when
     * another one does (the purge hands operations back to UCP) */
    bool     send_dedup;
    /* the receiver delivered every numbered SEND up to delivered_am_seq
     * and none after it (a purge: the peer's RX token) */
    bool     delivered_valid;
    uint32_t delivered_am_seq;
} uct_rc_varuna_cls_input_t;

typedef struct {
    unsigned executed;
    unsigned lost;
    unsigned undecided;
    unsigned by_log;
    unsigned by_psn;
    unsigned by_idempotence;
    unsigned never_sent;
    unsigned by_delivery;
    /* the log and the PSN (or the receiver's delivered SENDs) disagree:
     * must never happen */
    unsigned conflicts;
} uct_rc_varuna_cls_summary_t;


/* rc_varuna_classify.c */

/* Classify ops[0..count), given in increasing sn order. */
void uct_rc_varuna_classify(const uct_rc_varuna_cls_input_t *in,
                            uct_rc_varuna_cls_op_t *ops, size_t count,
                            uct_rc_varuna_cls_summary_t *summary);

#endif
