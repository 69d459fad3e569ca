/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include "rc_varuna_failover_harness.h"


/*
 * Gray failures (issue 33): a path whose port stays ACTIVE while it passes
 * nothing one way. No port event says so; only a request that must cross
 * and come back does. softib drops every packet a port sends (a drop rule,
 * the port up), as link_blackhole does on the rxe VM.
 *
 * An endpoint must never trade a working path for one seen broken: a lossy
 * path is not made the standby until a probe crosses it both ways, and is
 * probed less and less often while it fails (quarantined); the watchdog
 * does not fail a quiet lane over onto a standby that has not answered a
 * probe since the lane went quiet.
 */
class test_rc_varuna_gray : public test_rc_varuna_fo_base {
protected:
    enum {
        WINDOW      = 6,
        AFTER       = 4,
        NUM_OPS     = WINDOW + AFTER,
        WATCHDOG_MS = 40,
        /* the re-protection tries the quarantine allows in 1.5 s: its
         * waits double from 20 ms (4 x REPROTECT_INTERVAL) up to
         * QUARANTINE_MAX, 400 ms, each try ~25 ms (RC's retries): about
         * 6. Without it, some 4 tries every 100 ms. */
        LOSSY_MS    = 1500,
        MAX_PROBES  = 10
    };

    bool wait_for(bool (*cond)(test_rc_varuna_gray*), ucs_time_t deadline)
    {
        while (!cond(this) && (ucs_get_time() < deadline)) {
            progress();
        }
        return cond(this);
    }

    static bool both_failed_over(test_rc_varuna_gray *self)
    {
        return (vep(self->m_s)->active == 1) && (vep(self->m_r)->active == 1) &&
               (vep(self->m_s)->fo.state == UCT_RC_VARUNA_FO_IDLE) &&
               (vep(self->m_r)->fo.state == UCT_RC_VARUNA_FO_IDLE);
    }

    static bool both_protected(test_rc_varuna_gray *self)
    {
        return uct_rc_varuna_ep_has_standby(vep(self->m_s)) &&
               uct_rc_varuna_ep_has_standby(vep(self->m_r));
    }

    static bool sender_unprotected(test_rc_varuna_gray *self)
    {
        return !uct_rc_varuna_ep_has_standby(vep(self->m_s));
    }
};

/*
 * The active lane goes quiet (the sender's requests are dropped for 200 ms,
 * RC's retries outlast that) while the standby passes nothing back (the
 * receiver's standby port sends nothing, its port ACTIVE). The watchdog
 * used to fail over at once: onto the standby, where the failover's notice
 * got no answer and its log READ no response, and the endpoint ended,
 * though the quiet lane was only slow. Now it probes the standby first;
 * the probe fails, the standby is lost, the quiet lane is kept, and when
 * its requests pass again everything completes exactly once, with no
 * failover and nothing sent again.
 */
UCS_TEST_P(test_rc_varuna_gray, quiet_lane_lossy_standby)
{
    ucs_time_t deadline = ucs_get_time() +
                          ucs_time_from_msec(scaled_ms(20000));
    ucs_time_t quiet_end;
    uint32_t rule;

    setup_slow_pair(60, WATCHDOG_MS, NUM_OPS);
    ASSERT_TRUE(uct_rc_varuna_ep_has_standby(vep(m_s)));

    drop(side_port(m_r, 1), SOFTIB_DIR_TX, SOFTIB_CLASS_ALL);
    rule = drop(side_port(m_s, 0), SOFTIB_DIR_TX, SOFTIB_CLASS_REQ);
    ASSERT_TRUE(post_all(0, NUM_OPS, deadline));
    quiet_end = ucs_get_time() + ucs_time_from_msec(scaled_ms(200));
    while (ucs_get_time() < quiet_end) {
        progress();
    }
    EXPECT_GE(viface(m_s)->fo.standby_probes, 1u)
            << "the watchdog did not probe the standby";
    EXPECT_EQ(0u, viface(m_s)->fo.failovers)
            << "failed over onto a standby that had not answered";
    EXPECT_EQ(0u, m_ep_errors);
    m_softib.rule_del(rule);

    if (finish(deadline)) {
        verify(true);
    }
    fail_on_problems("quiet_lane_lossy_standby");
    EXPECT_EQ(0u, viface(m_s)->fo.failovers);
    EXPECT_EQ(0u, viface(m_r)->fo.failovers);
    EXPECT_EQ(0u, viface(m_s)->fo.resent_ops);

    /* the standby's probe fails by RC's retries: the standby is lost */
    EXPECT_TRUE(wait_for(sender_unprotected, deadline))
            << "the standby answered its probe";
    EXPECT_EQ(0u, m_ep_errors);
}

/*
 * The primary path loses everything the receiver sends on it, its ports
 * ACTIVE. Both sides fail over; while the loss lasts the path is never made
 * the standby again (re-protection's probe READ fails), the initiator of
 * re-protection quarantines it once (the "quarantined" counter and report
 * event) and tries it less and less often. When the loss ends, a probe
 * crosses, the path is the standby again on both sides, and it carries the
 * next failover: every operation exactly once.
 */
UCS_TEST_P(test_rc_varuna_gray, one_way_loss_quarantined,
           "QUARANTINE_MAX=400ms")
{
    ucs_time_t deadline = ucs_get_time() +
                          ucs_time_from_msec(scaled_ms(20000));
    ucs_time_t lossy_end;
    bool standby_seen = false;
    entity *init;
    uint32_t rule;
    port p1;

    setup_pair(NUM_OPS);
    plan(MIXED, NUM_OPS);
    init = vep(m_s)->rp.initiator ? m_s : m_r;

    rule = drop(side_port(m_r, 0), SOFTIB_DIR_TX, SOFTIB_CLASS_ALL);
    ASSERT_TRUE(post_all(0, WINDOW, deadline));
    ASSERT_TRUE(wait_for(both_failed_over, deadline))
            << "no failover on both sides";

    lossy_end = ucs_get_time() + ucs_time_from_msec(scaled_ms(LOSSY_MS));
    while (ucs_get_time() < lossy_end) {
        progress();
        standby_seen |= uct_rc_varuna_ep_has_standby(vep(m_s)) ||
                        uct_rc_varuna_ep_has_standby(vep(m_r));
    }
    EXPECT_FALSE(standby_seen) << "the lossy path was made the standby";
    /* meanwhile the grow gives the standby's lane the full queue, once:
     * re-protection, held back by the quarantine, does not stop it */
    EXPECT_EQ(1ul, viface(init)->fo.grows);
    EXPECT_LE(viface(m_s)->fo.grow_qps, 1ul) << "grows started again and "
                                                "again";
    EXPECT_LE(viface(m_r)->fo.grow_qps, 1ul) << "grows started again and "
                                                "again";
    EXPECT_EQ(1, vfs_counter(init, "quarantined"));
    EXPECT_GE(viface(init)->fo.probes_failed, 2u);
    EXPECT_LE(viface(init)->fo.probes_failed, (unsigned long)MAX_PROBES)
            << "the lossy path was not tried less and less often";
    EXPECT_EQ(0u, m_ep_errors);

    /* the loss ends: the path earns the standby role back */
    m_softib.rule_del(rule);
    EXPECT_TRUE(wait_for(both_protected, deadline))
            << "the healed path is not the standby again";
    EXPECT_EQ(0u, vep(init)->rp.probes_failed);

    /* and carries the next failover */
    p1 = side_port(m_s, 1);
    m_softib.link(p1.dev, p1.num, false);
    ASSERT_TRUE(post_all(WINDOW, NUM_OPS, deadline));
    if (finish(deadline)) {
        verify(true);
    }
    fail_on_problems("one_way_loss_quarantined");
    EXPECT_EQ(0u, vep(m_s)->active) << "not back on the healed path";
    EXPECT_EQ(0u, m_ep_errors);
}

/*
 * The same loss with a peer slow to answer (progressed every 50 ms, as a
 * starved guest on rxe): while the path is quarantined the initiator asks
 * for a grow and waits for the answer; re-protection, which the quarantine
 * holds back, must not stop that grow at every periodic check (each stop
 * destroyed its QP and the next check made another: 1,182 in 20 s on rxe,
 * until the guest ran out of memory). Then the loss ends and the path is
 * the standby again: every operation exactly once.
 */
UCS_TEST_P(test_rc_varuna_gray, quarantine_slow_peer_grows_once,
           "QUARANTINE_MAX=400ms")
{
    ucs_time_t deadline = ucs_get_time() +
                          ucs_time_from_msec(scaled_ms(20000));
    ucs_time_t slow_end, peer_next = 0;
    entity *init, *peer;
    uint32_t rule;

    setup_pair(NUM_OPS);
    plan(MIXED, NUM_OPS);
    init = vep(m_s)->rp.initiator ? m_s : m_r;
    peer = (init == m_s) ? m_r : m_s;

    rule = drop(side_port(m_r, 0), SOFTIB_DIR_TX, SOFTIB_CLASS_ALL);
    ASSERT_TRUE(post_all(0, WINDOW, deadline));
    ASSERT_TRUE(wait_for(both_failed_over, deadline))
            << "no failover on both sides";
    while ((vep(init)->rp.probes_failed == 0) &&
           (ucs_get_time() < deadline)) {
        progress();
    }
    ASSERT_GT(vep(init)->rp.probes_failed, 0u) << "not quarantined";

    slow_end = ucs_get_time() + ucs_time_from_msec(scaled_ms(1000));
    while (ucs_get_time() < slow_end) {
        init->progress();
        if (ucs_get_time() >= peer_next) {
            peer->progress();
            peer_next = ucs_get_time() + ucs_time_from_msec(50);
        }
    }
    EXPECT_LE(viface(init)->fo.grow_qps, 2ul)
            << "the grow was stopped and started again "
            << viface(init)->fo.grow_qps << " times";

    m_softib.rule_del(rule);
    EXPECT_TRUE(wait_for(both_protected, deadline))
            << "the healed path is not the standby again";
    ASSERT_TRUE(post_all(WINDOW, NUM_OPS, deadline));
    if (finish(deadline)) {
        verify(true);
    }
    fail_on_problems("quarantine_slow_peer_grows_once");
    EXPECT_EQ(0u, m_ep_errors);
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_gray, rc_varuna)
