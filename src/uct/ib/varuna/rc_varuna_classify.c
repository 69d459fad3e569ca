/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include "rc_varuna_classify.h"
#include "rc_varuna_psn.h"

#include <string.h>


static void uct_rc_varuna_classify_set(uct_rc_varuna_cls_op_t *op,
                                       uct_rc_varuna_verdict_t verdict,
                                       uct_rc_varuna_basis_t basis)
{
    op->verdict = (uint8_t)verdict;
    op->basis   = (uint8_t)basis;
}

/* Resending it is harmless: a READ reads again; a SEND, when the receiver
 * drops one it already delivered (the same endpoint sends it again, not
 * another one). */
static int uct_rc_varuna_classify_idempotent(const uct_rc_varuna_cls_input_t *in,
                                             const uct_rc_varuna_cls_op_t *op)
{
    return (op->kind == UCT_RC_VARUNA_KIND_READ) ||
           ((op->kind == UCT_RC_VARUNA_KIND_SEND) && in->send_dedup);
}

/* The responder's expected PSN decides a WRITE, an atomic or a SEND
 * another endpoint would send again; anything else needs no decision,
 * resending it is safe. */
static void uct_rc_varuna_classify_one(const uct_rc_varuna_cls_input_t *in,
                                       uct_rc_varuna_cls_op_t *op)
{
    if (in->psn_valid) {
        uct_rc_varuna_classify_set(op,
                                   uct_rc_varuna_psn_executed(op->last_psn,
                                                              in->rq_psn) ?
                                   UCT_RC_VARUNA_VERDICT_EXECUTED :
                                   UCT_RC_VARUNA_VERDICT_LOST,
                                   UCT_RC_VARUNA_BASIS_PSN);
    } else if (uct_rc_varuna_classify_idempotent(in, op)) {
        uct_rc_varuna_classify_set(op, UCT_RC_VARUNA_VERDICT_LOST,
                                   UCT_RC_VARUNA_BASIS_IDEMPOTENT);
    } else {
        uct_rc_varuna_classify_set(op, UCT_RC_VARUNA_VERDICT_UNDECIDED,
                                   UCT_RC_VARUNA_BASIS_NONE);
    }
}

void uct_rc_varuna_classify(const uct_rc_varuna_cls_input_t *in,
                            uct_rc_varuna_cls_op_t *ops, size_t count,
                            uct_rc_varuna_cls_summary_t *summary)
{
    uct_rc_varuna_cls_op_t *op;
    bool delivered;
    size_t i;

    memset(summary, 0, sizeof(*summary));

    for (i = 0; i < count; i++) {
        op = &ops[i];
        if (op->never_sent) {
            uct_rc_varuna_classify_set(op, UCT_RC_VARUNA_VERDICT_LOST,
                                       UCT_RC_VARUNA_BASIS_NEVER_SENT);
            /* nothing can have logged or executed it */
            if ((in->log_valid && (op->sn <= in->log_sn)) ||
                (in->psn_valid &&
                 uct_rc_varuna_psn_executed(op->last_psn, in->rq_psn))) {
                summary->conflicts++;
            }
        } else if (op->numbered && in->delivered_valid) {
            /* the receiver's own word, whichever lane the SEND went on */
            delivered = (int32_t)(op->am_seq - in->delivered_am_seq) <= 0;
            uct_rc_varuna_classify_set(op, delivered ?
                                       UCT_RC_VARUNA_VERDICT_EXECUTED :
                                       UCT_RC_VARUNA_VERDICT_LOST,
                                       UCT_RC_VARUNA_BASIS_DELIVERED);
            /* everything up to L executed, so it arrived; and it was
             * delivered before the receiver answered */
            if (in->log_valid && (op->sn <= in->log_sn) && !delivered) {
                summary->conflicts++;
            }
        } else if (!in->log_valid) {
            uct_rc_varuna_classify_one(in, op);
        } else if (op->sn <= in->log_sn) {
            uct_rc_varuna_classify_set(op, UCT_RC_VARUNA_VERDICT_EXECUTED,
                                       UCT_RC_VARUNA_BASIS_LOG);
            /* the log and the PSN must agree on everything logged */
            if (in->psn_valid &&
                !uct_rc_varuna_psn_executed(op->last_psn, in->rq_psn)) {
                summary->conflicts++;
            }
        } else if (op->log_before > in->log_sn) {
            /* posted behind a log write that never executed */
            uct_rc_varuna_classify_set(op, UCT_RC_VARUNA_VERDICT_LOST,
                                       UCT_RC_VARUNA_BASIS_LOG);
        } else if (uct_rc_varuna_classify_idempotent(in, op)) {
            /* undecided by the log, but resending it is harmless */
            uct_rc_varuna_classify_set(op, UCT_RC_VARUNA_VERDICT_LOST,
                                       UCT_RC_VARUNA_BASIS_IDEMPOTENT);
        } else {
            uct_rc_varuna_classify_one(in, op);
        }

        switch (op->verdict) {
        case UCT_RC_VARUNA_VERDICT_EXECUTED:
            summary->executed++;
            break;
        case UCT_RC_VARUNA_VERDICT_LOST:
            summary->lost++;
            break;
        default:
            summary->undecided++;
            break;
        }
        switch (op->basis) {
        case UCT_RC_VARUNA_BASIS_LOG:
            summary->by_log++;
            break;
        case UCT_RC_VARUNA_BASIS_PSN:
            summary->by_psn++;
            break;
        case UCT_RC_VARUNA_BASIS_IDEMPOTENT:
            summary->by_idempotence++;
            break;
        case UCT_RC_VARUNA_BASIS_NEVER_SENT:
            summary->never_sent++;
            break;
        case UCT_RC_VARUNA_BASIS_DELIVERED:
            summary->by_delivery++;
            break;
        default:
            break;
        }
    }
}
