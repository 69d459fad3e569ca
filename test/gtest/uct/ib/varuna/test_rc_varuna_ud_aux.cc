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
class test_rc_varuna_ud_aux : public ud_base_test {
public:
    test_rc_varuna_ud_aux() : m_recv1(0), m_recv2(0)
    {
    }

protected:
    static const uint8_t AM_ID = 1;

    static ucs_status_t am_count(void *arg, void *data, size_t length,
                                 unsigned flags)
    {
        ++*static_cast<unsigned*>(arg);
        return UCS_OK;
    }

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
