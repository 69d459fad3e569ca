/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include "rc_varuna_failover_harness.h"

extern "C" {
#include <uct/api/v2/uct_v2.h>
}


/*
 * What a dead endpoint executed (rc_varuna_purge.c, UCX patch 0007): both
 * paths of the connection die with operations in flight, the error handler
 * takes them over (UCS_INPROGRESS), the sender's TX token goes to the
 * receiver, whose interface derives the RX token, and the purge completes
 * what executed and hands back what did not.
 *
 * The test plays UCP's part: it carries the tokens and "posts" every
 * handed-back operation on another connection by applying it to the
 * receiver's memory directly from the uct_ep_op_info_t it got, and
 * completing it, as a working substitute lane would. So the harness's
 * checks hold exactly when the purge was exact: an executed operation
 * handed back runs twice (memory, counters, AMs show it), a lost one kept
 * never runs, and every operation needs all of its op_info to be replayed.
 * Blanket purge (UCX_RC_VARUNA_RECOVERY=blanket) shows what resending
 * everything does.
 */
class test_rc_varuna_purge : public test_rc_varuna_fo_base {
protected:
    enum {
        WINDOW  = 12,   /* operations that reach the receiver */
        AFTER   = 8,    /* posted after both paths died */
        NUM_OPS = WINDOW + AFTER
    };

    struct purge_result {
        unsigned handed_back;
        unsigned handed_back_with_comp;
        unsigned comp_already_called;   /* must stay 0 */
        int      last_index;            /* posting order of those with comp */
        unsigned out_of_order;          /* must stay 0 */
        unsigned bad_info;              /* must stay 0 */
    };

    char *local(uint64_t remote_addr) const
    {
        return (char*)m_dst->ptr() + (remote_addr - m_dst->addr());
    }

    static size_t iov_copy_out(const uct_iov_t *iov, size_t iovcnt,
                               std::vector<char> &out)
    {
        for (size_t i = 0; i < iovcnt; ++i) {
            const char *p = static_cast<const char*>(iov[i].buffer);
            out.insert(out.end(), p, p + iov[i].length);
        }
        return out.size();
    }

    /* The substitute lane: run the operation on the receiver's memory */
    void replay(const uct_ep_op_info_t *info, purge_result *res)
    {
        std::vector<char> bytes;
        uint64_t *w, old;
        size_t off;

        switch (info->operation) {
        case UCT_EP_OP_PUT_SHORT:
        case UCT_EP_OP_PUT_BCOPY:
            memcpy(local(info->rma.remote_addr), info->data.buffer,
                   info->data.length);
            break;
        case UCT_EP_OP_PUT_ZCOPY:
            iov_copy_out(info->iov, info->iovcnt, bytes);
            memcpy(local(info->rma.remote_addr), bytes.data(), bytes.size());
            break;
        case UCT_EP_OP_GET_BCOPY:
            info->get_bcopy.unpack_cb(info->get_bcopy.arg,
                                      local(info->rma.remote_addr),
                                      info->get_bcopy.length);
            break;
        case UCT_EP_OP_GET_ZCOPY:
            off = 0;
            for (size_t i = 0; i < info->iovcnt; ++i) {
                memcpy(info->iov[i].buffer,
                       local(info->rma.remote_addr) + off,
                       info->iov[i].length);
                off += info->iov[i].length;
            }
            break;
        case UCT_EP_OP_ATOMIC_POST:
        case UCT_EP_OP_ATOMIC_FETCH:
            w   = (uint64_t*)local(info->rma.remote_addr);
            old = *w;
            if (info->atomic.op == UCT_ATOMIC_OP_ADD) {
                *w += info->atomic.value;
            } else if (info->atomic.op == UCT_ATOMIC_OP_CSWAP) {
                if (old == info->atomic.compare) {
                    *w = info->atomic.value;
                }
            } else {
                ++res->bad_info;
            }
            if (info->operation == UCT_EP_OP_ATOMIC_FETCH) {
                *(uint64_t*)info->atomic.result = old;
            }
            break;
        case UCT_EP_OP_AM_BCOPY:
            bytes.assign((const char*)info->data.buffer,
                         (const char*)info->data.buffer + info->data.length);
            am_handler(this, bytes.data(), bytes.size(), 0);
            break;
        case UCT_EP_OP_AM_ZCOPY:
            bytes.assign((const char*)info->am.header,
                         (const char*)info->am.header +
                         info->am.header_length);
            iov_copy_out(info->iov, info->iovcnt, bytes);
            am_handler(this, bytes.data(), bytes.size(), 0);
            break;
        case UCT_EP_OP_FLUSH:
            break;
        default:
            ++res->bad_info;
            return;
        }

        if (info->operation == UCT_EP_OP_AM_BCOPY ||
            info->operation == UCT_EP_OP_AM_ZCOPY) {
            if (!(info->field_mask & UCT_EP_OP_INFO_FIELD_AM) ||
                (info->am.id != AM_ID)) {
                ++res->bad_info;
            }
        }
        if (info->comp != NULL) {
            uct_invoke_completion(info->comp, UCS_OK);
        }
    }

    static void purge_cb(const uct_ep_op_info_t *info, void *arg)
    {
        test_rc_varuna_purge *self = static_cast<test_rc_varuna_purge*>(arg);
        purge_result *res          = &self->m_purge;
        op_ctx *c;

        ++res->handed_back;
        if (info->comp != NULL) {
            /* ours: the completion is the caller's now, not yet called */
            c = ucs_container_of(info->comp, op_ctx, comp);
            ++res->handed_back_with_comp;
            if (c->calls != 0) {
                ++res->comp_already_called;
            }
            if ((int)c->index <= res->last_index) {
                ++res->out_of_order;
            }
            res->last_index = c->index;
        }
        self->replay(info, res);
    }

    /* Both of the sender's ports go down with a window in flight whose
     * acknowledgements were lost after packet k (executed, unconfirmed),
     * and more operations are posted behind them (never sent). Returns
     * once the sender's error handler took the endpoint over. */
    void kill_both_paths(unsigned k, ucs_time_t deadline)
    {
        setup_pair(NUM_OPS);
        plan(MIXED, NUM_OPS);

        port p0 = side_port(m_s, 0), p1 = side_port(m_s, 1);
        m_err_take_over = true;
        inject(RESP_DROP, k);
        ASSERT_TRUE(post_all(0, WINDOW, deadline));
        m_softib.link(p1.dev, p1.num, false);
        m_softib.link(p0.dev, p0.num, false);
        ASSERT_TRUE(post_all(WINDOW, NUM_OPS, deadline));
        fail_on_problems("posting");

        while ((m_ep_errors == 0) && (ucs_get_time() < deadline)) {
            progress();
        }
        ASSERT_EQ(1u, m_ep_errors) << "no failure reported";
        ASSERT_EQ(UCT_RC_VARUNA_OWNER_CALLER, vep(m_s)->dead.owner);
    }

    /* Issue 34's interleaving: the receiver's primary port acknowledges
     * nothing, takes nothing after packet k and goes down; the failover
     * sends the window again on the standby, where every request the
     * sender sends is lost, until the standby's retries run out. A SEND that executed on the primary after
     * the last log write that got there is sent again as harmless (the
     * receiver would drop the copy), and that copy never arrives: the
     * purge must take the receiver's word that it delivered the original,
     * not the standby's PSN, which says the copy did not execute. Returns
     * once the sender's error handler took the endpoint over. */
    void resend_then_lose_standby(unsigned k, ucs_time_t deadline)
    {
        setup_pair(WINDOW);
        plan(AM_SHORT, WINDOW);
        port rp0 = side_port(m_r, 0), rp1 = side_port(m_r, 1);

        m_err_take_over = true;
        /* nothing is confirmed: the whole window stays in flight */
        drop(rp0, SOFTIB_DIR_TX, SOFTIB_CLASS_RESPONSES);
        /* nothing the sender sends on the standby arrives */
        drop(rp1, SOFTIB_DIR_RX, SOFTIB_CLASS_REQ);
        inject(RESP_PORT_DOWN, k);
        ASSERT_TRUE(post_all(0, WINDOW, deadline));
        /* the first k are delivered before the port goes down (softib
         * sends in the background: a port taken down at once could take
         * them with it) */
        while ((m_am_rx.size() < k) && (ucs_get_time() < deadline)) {
            progress();
        }
        ASSERT_EQ(k, m_am_rx.size()) << "fault after packet " << k;
        take_down(RESP_PORT_DOWN);
        fail_on_problems("posting");

        while ((m_ep_errors == 0) && (ucs_get_time() < deadline)) {
            progress();
        }
        ASSERT_EQ(1u, m_ep_errors) << "no failure reported";
        ASSERT_EQ(UCT_RC_VARUNA_OWNER_CALLER, vep(m_s)->dead.owner);
        /* the interleaving happened: the failover of the primary sent the
         * window again on the standby */
        ASSERT_EQ(1u, viface(m_s)->fo.failovers);
        ASSERT_GT(vep(m_s)->fo.report.resent_ops, 0u);
    }

    /* UCP's part: TX token here, RX token there, purge here */
    void exchange_and_purge()
    {
        uint8_t tx[UCT_EP_TOKEN_MAX_LENGTH], rx[UCT_EP_TOKEN_MAX_LENGTH];
        uct_ep_outstanding_purge_params_t params;
        size_t rx_length = 0;
        uct_ep_attr_t attr;

        memset(&attr, 0, sizeof(attr));
        attr.field_mask      = UCT_EP_ATTR_FIELD_TX_TOKEN;
        attr.tx_token        = tx;
        attr.tx_token_length = sizeof(tx);
        ASSERT_UCS_OK(uct_ep_query(m_s->ep(0), &attr));
        ASSERT_UCS_OK(uct_iface_derive_rx_token(m_r->iface(), tx,
                                                attr.tx_token_length, rx,
                                                &rx_length));
        m_delivered_before_purge = m_am_rx.size();

        memset(&m_purge, 0, sizeof(m_purge));
        m_purge.last_index = -1;
        m_outstanding      = vep(m_s)->tx.sn - vep(m_s)->tx.done_sn;
        params.field_mask      = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN |
                                 UCT_EP_OUTSTANDING_FIELD_CB |
                                 UCT_EP_OUTSTANDING_FIELD_ARG;
        params.rx_token        = rx;
        params.rx_token_length = rx_length;
        params.cb              = purge_cb;
        params.arg             = this;
        ASSERT_UCS_OK(uct_ep_outstanding_purge(m_s->ep(0), &params));
        EXPECT_EQ(vep(m_s)->tx.sn, vep(m_s)->tx.done_sn);

        /* once only */
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  uct_ep_outstanding_purge(m_s->ep(0), &params));
    }

    /* the receiver was told: its endpoint of the connection fails too */
    void wait_receiver_failed(ucs_time_t deadline)
    {
        while ((m_ep_errors < 2) && (ucs_get_time() < deadline)) {
            progress();
        }
        EXPECT_EQ(2u, m_ep_errors);
        short_progress_loop(20);
    }

    /* the whole exchange, then the harness's checks of every operation */
    outcome purge_and_check(bool exact)
    {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);
        outcome out;

        memset(&out, 0, sizeof(out));
        kill_both_paths(4, deadline);
        if (HasFatalFailure()) {
            return out;
        }
        exchange_and_purge();
        if (HasFatalFailure()) {
            return out;
        }
        wait_receiver_failed(deadline);
        verify_completions(exact, out);
        verify_memory(exact, out);
        verify_am(exact, out);
        return out;
    }

    purge_result m_purge;
    uint64_t     m_outstanding;
    size_t       m_delivered_before_purge;
};

UCS_TEST_P(test_rc_varuna_purge, capability)
{
    setup_pair(NUM_OPS);
    EXPECT_TRUE(m_s->iface_attr().cap.flags &
                UCT_IFACE_FLAG_EP_OUTSTANDING_PURGE);
}

/* Executed operations complete, lost ones are handed back once, in order,
 * with everything needed to post them again: after the replay the
 * receiver's memory, counters and active messages are exactly what one
 * execution of each operation leaves. */
UCS_TEST_P(test_rc_varuna_purge, hands_back_only_lost)
{
    ASSERT_NO_FATAL_FAILURE(purge_and_check(true));
    fail_on_problems("purge");

    EXPECT_EQ(0u, m_purge.comp_already_called);
    EXPECT_EQ(0u, m_purge.out_of_order);
    EXPECT_EQ(0u, m_purge.bad_info);
    /* the operations posted after the failure never left: handed back;
     * the window executed (its acknowledgements were lost after packet
     * 4): completed by the purge, not handed back */
    EXPECT_GE(m_purge.handed_back, (unsigned)AFTER);
    EXPECT_LT(m_purge.handed_back, m_outstanding)
        << "nothing in flight was found executed";
}

/* Issue 34: active messages that executed on the primary, were sent again
 * on the standby by its failover (harmless there: the receiver drops a
 * copy) and whose copies died with the standby are not handed back: the
 * receiver says which it delivered. Each fault position leaves a different
 * SEND executed after the last log write that got there (none yet, one
 * after every 3 operations). Before the fix the standby's PSN handed them back and
 * they arrived twice. */
UCS_TEST_P(test_rc_varuna_purge, sent_again_then_standby_lost)
{
    /* packets 1 to 3 are three SENDs (the log write follows the third) */
    for (unsigned k = 1; k <= 3; ++k) {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);
        outcome out;

        memset(&out, 0, sizeof(out));
        ASSERT_NO_FATAL_FAILURE(resend_then_lose_standby(k, deadline))
            << "fault after packet " << k;
        ASSERT_NO_FATAL_FAILURE(exchange_and_purge());
        /* the first k packets, k active messages, were delivered, with
         * the whole window in flight */
        ASSERT_EQ(k, m_delivered_before_purge) << "fault after packet " << k;
        EXPECT_EQ((unsigned)WINDOW, m_outstanding);
        wait_receiver_failed(deadline);
        verify_completions(true, out);
        verify_am(true, out);
        fail_on_problems("fault after packet " + ucs::to_string(k));
        EXPECT_EQ(0u, m_purge.comp_already_called);
        EXPECT_EQ(0u, m_purge.out_of_order);
        EXPECT_EQ(0u, m_purge.bad_info);
        EXPECT_EQ(WINDOW - k, m_purge.handed_back)
            << "fault after packet " << k;
        destroy_pair();
        m_softib.reset();
        m_ep_errors = 0;
        if (HasFailure()) {
            break;
        }
    }
}

/* While the handler holds the operations (UCP's lane failover asks the
 * peer), they are in flight, not failed: a flush of the interface (UCP's
 * worker flush) waits, and succeeds once the purge has decided them. It
 * returned the endpoint's error before (the review of 0aa6934, finding
 * 3): MPI_Win_flush_all or shmem_quiet failed in a recovered failure. */
UCS_TEST_P(test_rc_varuna_purge, iface_flush_waits_for_the_purge)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);
    outcome out;

    memset(&out, 0, sizeof(out));
    ASSERT_NO_FATAL_FAILURE(kill_both_paths(4, deadline));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(m_s->ep(0), 0, NULL));
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(m_s->iface(), 0, NULL));
    ASSERT_NO_FATAL_FAILURE(exchange_and_purge());
    EXPECT_UCS_OK(uct_ep_flush(m_s->ep(0), 0, NULL));
    EXPECT_UCS_OK(uct_iface_flush(m_s->iface(), 0, NULL));
    wait_receiver_failed(deadline);
    verify_completions(true, out);
    verify_am(true, out);
    fail_on_problems("purge");
}

/* What blanket retransmission would do with the same failure: hand back
 * everything in flight. The replay then runs executed operations again,
 * and the checks see it. */
UCS_TEST_P(test_rc_varuna_purge, blanket_runs_twice, "RECOVERY=blanket")
{
    outcome out = purge_and_check(false);

    ASSERT_FALSE(HasFatalFailure());
    m_problems.clear();
    EXPECT_EQ(m_outstanding, m_purge.handed_back);
    EXPECT_GT(out.duplicates + out.violations[G1_ONCE], 0u)
        << "resending everything in flight went unnoticed";
}

/* The handler takes the operations over and the endpoint is destroyed
 * without a purge: every operation still completes once, with an error. */
UCS_TEST_P(test_rc_varuna_purge, destroyed_without_purge)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);

    ASSERT_NO_FATAL_FAILURE(kill_both_paths(4, deadline));
    uint64_t kept = vep(m_s)->tx.sn - vep(m_s)->tx.done_sn;
    EXPECT_GT(kept, 0u);
    m_s->destroy_ep(0);
    for (unsigned i = 0; i < NUM_OPS; ++i) {
        EXPECT_EQ(1, m_ops[i].calls) << op_name(m_ops[i].type) << " #" << i;
    }
}

/* A flush that cancels gives the operations back to the transport: they
 * complete with the failure's error, as without a handler that takes
 * them (UCP's discard of a lane it could not move). */
UCS_TEST_P(test_rc_varuna_purge, cancel_gives_back)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);

    ASSERT_NO_FATAL_FAILURE(kill_both_paths(4, deadline));
    EXPECT_UCS_OK(uct_ep_flush(m_s->ep(0), UCT_FLUSH_FLAG_CANCEL, NULL));
    EXPECT_EQ(vep(m_s)->tx.sn, vep(m_s)->tx.done_sn);
    unsigned failed = 0;
    for (unsigned i = 0; i < NUM_OPS; ++i) {
        EXPECT_EQ(1, m_ops[i].calls) << op_name(m_ops[i].type) << " #" << i;
        failed += has_comp(m_ops[i].type) &&
                  UCS_STATUS_IS_ERR(m_ops[i].status);
    }
    EXPECT_GT(failed, 0u);
}

/* Tokens that are not about the connection are refused, and a purge
 * without a take-over is not allowed. */
UCS_TEST_P(test_rc_varuna_purge, bad_tokens)
{
    uint8_t tx[UCT_EP_TOKEN_MAX_LENGTH], rx[UCT_EP_TOKEN_MAX_LENGTH];
    uct_ep_outstanding_purge_params_t params;
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);
    size_t rx_length;
    uct_ep_attr_t attr;

    setup_pair(NUM_OPS);
    memset(&attr, 0, sizeof(attr));
    attr.field_mask      = UCT_EP_ATTR_FIELD_TX_TOKEN;
    attr.tx_token        = tx;
    attr.tx_token_length = 4;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_query(m_s->ep(0), &attr));
    attr.tx_token_length = sizeof(tx);
    ASSERT_UCS_OK(uct_ep_query(m_s->ep(0), &attr));

    /* not a token */
    memset(rx, 0, sizeof(rx));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_derive_rx_token(m_r->iface(), rx,
                                        attr.tx_token_length, rx,
                                        &rx_length));
    {
        /* a token of the receiver's own endpoint names no connection of
         * the sender's interface */
        scoped_log_handler slh(hide_errors_logger);
        EXPECT_EQ(UCS_ERR_NO_ELEM,
                  uct_iface_derive_rx_token(m_s->iface(), tx,
                                            attr.tx_token_length, rx,
                                            &rx_length));
    }

    /* a live endpoint was not taken over */
    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN |
                             UCT_EP_OUTSTANDING_FIELD_CB;
    params.rx_token        = rx;
    params.rx_token_length = sizeof(rx);
    params.cb              = purge_cb;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_outstanding_purge(m_s->ep(0), &params));
    params.field_mask = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_outstanding_purge(m_s->ep(0), &params));

    destroy_pair();
    m_softib.reset();
    m_ep_errors = 0;

    /* taken over, then a token of another connection */
    ASSERT_NO_FATAL_FAILURE(kill_both_paths(4, deadline));
    memset(rx, 0, sizeof(rx));
    params.field_mask = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN |
                        UCT_EP_OUTSTANDING_FIELD_CB;
    {
        scoped_log_handler slh(hide_errors_logger);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_outstanding_purge(m_s->ep(0), &params));
    }
    EXPECT_EQ(UCT_RC_VARUNA_OWNER_CALLER, vep(m_s)->dead.owner);
}

/* A token names its connection by the QP numbers and by the ports: each
 * device numbers its QPs on its own (rxe from 0x11 up on every device), so
 * another interface of the peer can have an endpoint with the same four
 * numbers, and fencing that one, answering with its log word and PSNs,
 * ended UCP's other lane (rxe, scenario lane2). softib's QP numbers carry
 * the device's slot, so the case makes the coincidence: the receiver's
 * own connection, with the port of one lane changed, is another's. */
UCS_TEST_P(test_rc_varuna_purge, token_of_another_port)
{
    uct_rc_varuna_tx_token_t tx, forged;
    uint8_t rx[UCT_EP_TOKEN_MAX_LENGTH];
    size_t rx_length;
    uct_ep_attr_t attr;
    unsigned lane;

    setup_pair(NUM_OPS);
    memset(&attr, 0, sizeof(attr));
    attr.field_mask      = UCT_EP_ATTR_FIELD_TX_TOKEN;
    attr.tx_token        = &tx;
    attr.tx_token_length = sizeof(tx);
    ASSERT_UCS_OK(uct_ep_query(m_s->ep(0), &attr));
    ASSERT_EQ(sizeof(tx), attr.tx_token_length);

    for (lane = 0; lane < UCT_RC_VARUNA_NUM_SIDES; ++lane) {
        if (tx.peer_qpn[lane] == 0) {
            continue;
        }
        forged = tx;
        if (forged.peer_global & UCS_BIT(lane)) {
            forged.peer_gid[lane][15] ^= 0x5a;
        } else {
            forged.peer_lid[lane] ^= 0x5a;
        }
        scoped_log_handler slh(hide_errors_logger);
        EXPECT_EQ(UCS_ERR_NO_ELEM,
                  uct_iface_derive_rx_token(m_r->iface(), &forged,
                                            sizeof(forged), rx, &rx_length))
                << "lane " << lane << " at another port";
    }

    /* nothing of the receiver's was fenced: its active lane is as it was,
     * no failover began, no endpoint error */
    EXPECT_NE(UCT_RC_VARUNA_FO_DEAD, vep(m_r)->fo.state);
    EXPECT_EQ(UCT_RC_VARUNA_LANE_ACTIVE,
              vep(m_r)->lane[vep(m_r)->active].state);
    EXPECT_EQ(0u, vep(m_r)->lane[vep(m_r)->active].err_count);
    EXPECT_EQ(0u, m_ep_errors);

    /* the token as it is names the receiver's endpoint */
    ASSERT_UCS_OK(uct_iface_derive_rx_token(m_r->iface(), &tx, sizeof(tx),
                                            rx, &rx_length));
    EXPECT_EQ(UCT_RC_VARUNA_LANE_FAILED,
              vep(m_r)->lane[vep(m_r)->active].state);
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_purge, rc_varuna)
