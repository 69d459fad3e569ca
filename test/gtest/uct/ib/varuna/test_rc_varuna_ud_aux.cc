/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include <uct/ib/ud_base.h>

#include "softib_control.h"

extern "C" {
#include <uct/ib/ud/verbs/ud_verbs.h>
}

#include <infiniband/verbs.h>


/*
 * The aux UD lane of UCX_TLS=rc_varuna,ud_verbs:aux lives on one port and
 * does not fail over. On Linux rxe its QP enters the error state when a send
 * cannot leave a port that went down, and UCX 1.13.1 aborted the process at
 * the first flushed completion, though rc_varuna had failed over (issue 9).
 * contrib/ucx-patches/0004-* resets such a QP instead. These tests put a
 * ud_verbs QP in the error state, with receives posted and sends in flight,
 * and check that the process lives, the QP comes back ready with the same
 * number, and active messages both ways arrive exactly once afterwards,
 * those dropped meanwhile resent by UD's reliability.
 */
/* What the UD cases below share: an active message that counts itself,
 * and sending them */
class test_rc_varuna_ud : public ud_base_test {
protected:
    static const uint8_t AM_ID = 1;

    static ucs_status_t am_count(void *arg, void *data, size_t length,
                                 unsigned flags)
    {
        ++*static_cast<unsigned*>(arg);
        return UCS_OK;
    }

    /* count active messages from e, retrying while UD has no resources */
    void send(entity *e, unsigned count)
    {
        uint64_t payload = 0x5a5a;
        ucs_time_t deadline;
        ucs_status_t status;
        unsigned i;

        for (i = 0; i < count; i++) {
            deadline = ucs_get_time() + ucs_time_from_sec(10);
            do {
                status = uct_ep_am_short(e->ep(0), AM_ID, i, &payload,
                                         sizeof(payload));
                if (status == UCS_ERR_NO_RESOURCE) {
                    progress();
                }
            } while ((status == UCS_ERR_NO_RESOURCE) &&
                     (ucs_get_time() < deadline));
            ASSERT_UCS_OK(status);
        }
    }
};

class test_rc_varuna_ud_aux : public test_rc_varuna_ud {
public:
    test_rc_varuna_ud_aux() : m_recv1(0), m_recv2(0)
    {
    }

protected:
    void init()
    {
        ud_base_test::init();
        ASSERT_UCS_OK(uct_iface_set_am_handler(m_e1->iface(), AM_ID,
                                               am_count, &m_recv1, 0));
        ASSERT_UCS_OK(uct_iface_set_am_handler(m_e2->iface(), AM_ID,
                                               am_count, &m_recv2, 0));
        connect();
    }

    uct_ud_verbs_iface_t *verbs_iface(entity *e)
    {
        return ucs_derived_of(iface(e), uct_ud_verbs_iface_t);
    }

    enum ibv_qp_state qp_state(entity *e)
    {
        struct ibv_qp_init_attr init_attr;
        struct ibv_qp_attr attr;

        EXPECT_EQ(0, ibv_query_qp(iface(e)->qp, &attr, IBV_QP_STATE,
                                  &init_attr));
        return attr.qp_state;
    }

    void qp_to_error(entity *e)
    {
        struct ibv_qp_attr attr;

        memset(&attr, 0, sizeof(attr));
        attr.qp_state = IBV_QPS_ERR;
        ASSERT_EQ(0, ibv_modify_qp(iface(e)->qp, &attr, IBV_QP_STATE));
    }

    /* progress until the counters reach these values (or 20 s pass) */
    void wait_recv(unsigned recv1, unsigned recv2)
    {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);

        while (((m_recv1 < recv1) || (m_recv2 < recv2)) &&
               (ucs_get_time() < deadline)) {
            progress();
        }
        /* anything more would be a duplicate */
        short_progress_loop(100);
        EXPECT_EQ(recv1, m_recv1);
        EXPECT_EQ(recv2, m_recv2);
    }

    /* progress until e's QP is ready again (or 10 s pass) */
    void wait_ready(entity *e)
    {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(10);

        while ((verbs_iface(e)->qp_err.in_error ||
                (qp_state(e) != IBV_QPS_RTS)) &&
               (ucs_get_time() < deadline)) {
            progress();
        }
        EXPECT_FALSE(verbs_iface(e)->qp_err.in_error);
        EXPECT_EQ(IBV_QPS_RTS, qp_state(e));
    }

    void check_error_and_recovery(entity *failing)
    {
        uint32_t qp_num = iface(failing)->qp->qp_num;
        const unsigned burst = 64;

        send(m_e1, burst);
        send(m_e2, burst);
        wait_recv(burst, burst);

        /* sends in flight both ways, then the QP fails under them; the
         * warnings are caught from before the failure: UD's async thread
         * may see the error as soon as the QP is in it (on rxe it did,
         * before the handler was there) */
        send(m_e1, burst);
        send(m_e2, burst);
        {
            scoped_log_handler wrap_warn(wrap_warns_logger);
            qp_to_error(failing);
            EXPECT_EQ(IBV_QPS_ERR, qp_state(failing));
            wait_ready(failing);
        }
        EXPECT_EQ(qp_num, iface(failing)->qp->qp_num);
        /* the recovery told the user, at warning level */
        EXPECT_GE(m_warnings.size(), 2u);

        /* what was dropped is resent, nothing twice; and fresh traffic */
        send(m_e1, burst);
        send(m_e2, burst);
        wait_recv(3 * burst, 3 * burst);
        EXPECT_UCS_OK(ep_flush_b(m_e1));
        EXPECT_UCS_OK(ep_flush_b(m_e2));
    }

    unsigned m_recv1;
    unsigned m_recv2;
};

UCS_TEST_P(test_rc_varuna_ud_aux, qp_in_error_is_reset)
{
    check_error_and_recovery(m_e2);
}

/*
 * The review of 0aa6934 (finding 5): a reset that fails (a transition
 * refused, as with a port still down) was promised a retry every 100 ms,
 * but the retry ran only after a poll that found completions, and once
 * every flushed receive was back none came. softib makes the QP's first
 * transition of the reset fail; the QP must still come back.
 */
UCS_TEST_P(test_rc_varuna_ud_aux, failed_reset_is_tried_again)
{
    struct softib_rule rule;
    softib_control softib;

    softib.require();

    std::string dev = uct_ib_device_name(uct_ib_iface_device(
                                                 &iface(m_e2)->super));
    if (softib.counter(dev.c_str(), "qp_created") < 0) {
        /* the real stack (the udqp scenario on rxe): no softib rules */
        UCS_TEST_SKIP_R(dev + " is not a softib device");
    }
    memset(&rule, 0, sizeof(rule));
    rule.kind  = SOFTIB_RULE_FAIL;
    rule.dev   = dev.c_str();
    rule.verbs = SOFTIB_VERB_MODIFY_QP;
    rule.qpn   = iface(m_e2)->qp->qp_num;
    rule.skip  = 1;   /* the move to the error state below */
    rule.count = 1;   /* the reset's first transition */
    uint32_t id = softib.rule(rule);
    check_error_and_recovery(m_e2);
    softib.rule_del(id);
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_ud_aux, ud_verbs)


/*
 * A UD endpoint that UD made for a peer's connection request (CREQ) must
 * resend its reply (CREP) when the reply is lost, even when the interface's
 * progress is disabled: UCP disables it when its last endpoint on the
 * interface is gone, which the endpoints UD makes for requests are not.
 * UCX 1.13.1 removed UD's async timer with the progress, the reply was
 * never resent and the requester never connected: a client that opened 256
 * endpoints at once over rc_varuna,ud_verbs:aux hung at start-up, the
 * replies of its last endpoints dropped by its receive queue (6 of 40
 * runs). contrib/ucx-patches/0011-* keeps the timer while an endpoint
 * waits for an acknowledgement.
 */
class test_rc_varuna_ud_creq : public test_rc_varuna_ud {
protected:
    void init()
    {
        ud_base_test::init();
        ASSERT_UCS_OK(uct_iface_set_am_handler(m_e2->iface(), AM_ID,
                                               am_count, &m_recv, 0));
        m_softib.require();
        m_dev = uct_ib_device_name(uct_ib_iface_device(&iface(m_e2)->super));
        if (m_softib.counter(m_dev.c_str(), "qp_created") < 0) {
            UCS_TEST_SKIP_R(m_dev + " is not a softib device");
        }
    }

    void cleanup()
    {
        if (m_softib.error().empty()) {
            m_softib.reset();
        }
        ud_base_test::cleanup();
    }

    softib_control m_softib;
    std::string    m_dev;
    unsigned       m_recv = 0;
};

UCS_TEST_P(test_rc_varuna_ud_creq, lost_reply_resent_with_progress_disabled)
{
    struct softib_rule rule;
    ucs_time_t deadline;
    uint32_t rule_id;
    int64_t dropped;

    /* every datagram the peer's QP sends, its connection reply first,
     * until its progress is disabled */
    memset(&rule, 0, sizeof(rule));
    rule.kind    = SOFTIB_RULE_DROP;
    rule.dev     = m_dev.c_str();
    rule.port    = iface(m_e2)->super.config.port_num;
    rule.dir     = SOFTIB_DIR_TX;
    rule.classes = SOFTIB_CLASS_UD;
    rule.qpn     = iface(m_e2)->qp->qp_num;
    rule.count   = SOFTIB_FOREVER;
    dropped      = m_softib.counter(m_dev.c_str(), "drop_rule");
    rule_id      = m_softib.rule(rule);

    /* to the peer's interface address: a connection request */
    m_e1->connect_to_iface(0, *m_e2);
    deadline = ucs_get_time() + ucs_time_from_sec(10);
    while ((m_softib.counter(m_dev.c_str(), "drop_rule") == dropped) &&
           (ucs_get_time() < deadline)) {
        progress();
    }
    ASSERT_LT(dropped, m_softib.counter(m_dev.c_str(), "drop_rule"))
            << "the peer's reply was not sent";
    ASSERT_EQ(UCT_UD_EP_NULL_ID, ep(m_e1)->dest_ep_id);

    /* as UCP does when it has no endpoint left on the interface; the
     * path works again */
    uct_iface_progress_disable(m_e2->iface(),
                               UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    m_softib.rule_del(rule_id);
    deadline = ucs_get_time() + ucs_time_from_sec(5);
    while ((ep(m_e1)->dest_ep_id == UCT_UD_EP_NULL_ID) &&
           (ucs_get_time() < deadline)) {
        progress();
    }
    ASSERT_NE(UCT_UD_EP_NULL_ID, ep(m_e1)->dest_ep_id)
            << "the lost connection reply was never sent again";

    /* and the connection carries an active message */
    uct_iface_progress_enable(m_e2->iface(),
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    send(m_e1, 1);
    EXPECT_UCS_OK(ep_flush_b(m_e1));
    EXPECT_EQ(1u, m_recv) << "the active message, once";
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_ud_creq, ud_verbs)
