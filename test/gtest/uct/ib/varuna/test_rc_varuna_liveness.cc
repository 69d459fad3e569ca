/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include "rc_varuna_failover_harness.h"


/*
 * Liveness under links that fail and heal (DESIGN.md guarantee G7): no
 * endpoint ends while a path to its peer lives, and one whose last path
 * dies ends at once, so that UCP's lane failover can act.
 *
 *   - A standby lost to a port event while the endpoint pair is idle is
 *     connected again when the port comes back, whichever side initiates
 *     re-protection and whichever side lost it: a side that only receives
 *     sees nothing cross, and the initiator used to wait for that forever
 *     (Open MPI's second lane, which carries little, lost its standby for
 *     good, and the next failure ended the job).
 *   - An endpoint whose last lane dies is failed at once, even when the
 *     peer has acknowledged everything it sent unsignaled: no flushed
 *     request comes back to carry the failure, and it used to be seen only
 *     at the next operation, seconds later.
 *
 * Re-protection is bounded by REPROTECT_TIMEOUT (here 300 ms) after the
 * port's return, and by the same time after the endpoints connected, when
 * nothing has crossed them: only then is the peer's side of the active
 * lane surely connected, for a request to travel on it.
 */
class test_rc_varuna_liveness : public test_rc_varuna_fo_base {
protected:
    enum {
        NUM_OPS           = 8,
        REPROTECT_TIMEOUT_MS = 300
    };

    virtual void init()
    {
        test_rc_varuna_fo_base::init();
        modify_config("REPROTECT_TIMEOUT",
                      ucs::to_string((int)REPROTECT_TIMEOUT_MS) + "ms");
    }

    static bool lane_failed(entity *e, unsigned lane)
    {
        return vep(e)->lane[lane].state == UCT_RC_VARUNA_LANE_FAILED;
    }

    /* progress until cond(), or the deadline; whether cond() held */
    template <typename C>
    bool progress_until(C cond, double ms)
    {
        ucs_time_t deadline = ucs_get_time() +
                              ucs_time_from_msec(ms *
                                                 ucs::test_time_multiplier());

        while (!cond() && (ucs_get_time() < deadline)) {
            progress();
        }
        return cond();
    }

    bool both_protected()
    {
        return uct_rc_varuna_ep_has_standby(vep(m_s)) &&
               uct_rc_varuna_ep_has_standby(vep(m_r));
    }

    /* The standby ports of the entities given go down; their standby lanes
     * must be lost (not failed over onto: it is not the active lane), the
     * ports come back, and both sides must have a standby again within
     * REPROTECT_TIMEOUT of the return, with no endpoint error */
    void standby_lost_and_back(const std::vector<entity*> &losers,
                               const std::string &what)
    {
        unsigned standby = 1 - vep(m_s)->active;
        std::vector<port> ports;

        ASSERT_TRUE(both_protected()) << what << ": no standby to begin with";
        for (size_t i = 0; i < losers.size(); ++i) {
            ports.push_back(side_port(losers[i], standby));
            m_softib.link(ports.back().dev, ports.back().num, false);
        }
        for (size_t i = 0; i < losers.size(); ++i) {
            entity *e = losers[i];
            EXPECT_TRUE(progress_until([&]() {
                            return lane_failed(e, standby);
                        }, 2000))
                << what << ": the standby was not lost; " << rp_state_of(vep(e));
        }
        /* a while down, as a flapping link is */
        progress_until([]() { return false; }, 50);

        for (size_t i = 0; i < ports.size(); ++i) {
            m_softib.link(ports[i].dev, ports[i].num, true);
        }
        /* one REPROTECT_TIMEOUT, twice for a refusal, a round trip and
         * this loaded machine's scheduling */
        EXPECT_TRUE(progress_until([&]() { return both_protected(); },
                                   3 * REPROTECT_TIMEOUT_MS))
            << what << ": not re-protected; sender " << rp_state_of(vep(m_s))
            << "; receiver " << rp_state_of(vep(m_r));
        EXPECT_EQ(0u, m_ep_errors) << what;
        EXPECT_EQ(0u, viface(m_s)->fo.failovers) << what;
        EXPECT_EQ(0u, viface(m_r)->fo.failovers) << what;
    }

    /* A few operations, the first signaled (an idle endpoint signals),
     * the rest not, all acknowledged: the endpoint has nothing left that
     * completes by itself */
    void post_acknowledged_unsignaled()
    {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);

        plan(PUT_SHORT, NUM_OPS);
        ASSERT_TRUE(post_all(0, NUM_OPS, deadline));
        /* the signaled one's completion, then time for the others' ACKs */
        progress_until([&]() {
            return vep(m_s)->tx.done_sn >= vep(m_s)->tx.sig_sn;
        }, 2000);
        progress_until([]() { return false; }, 50);
    }
};

/* Nothing ever crossed the pair; both sides lose the standby */
UCS_TEST_P(test_rc_varuna_liveness, idle_standby_lost_both_sides)
{
    setup_pair(NUM_OPS);
    standby_lost_and_back({m_s, m_r}, "both sides");
}

/* Only the sender's standby port fails (the receiver's lane looks fine
 * to the receiver): whichever of the two initiates, the lane is connected
 * again, twice, once for each side losing it alone */
UCS_TEST_P(test_rc_varuna_liveness, idle_standby_lost_one_side)
{
    setup_pair(NUM_OPS);
    standby_lost_and_back({m_s}, "the sender's side");
    standby_lost_and_back({m_r}, "the receiver's side");
}

/* Traffic one way only: the receiver sees operations execute, nothing
 * else (the shape of an MPI job's lightly used lane); both sides lose the
 * standby, twice */
UCS_TEST_P(test_rc_varuna_liveness, one_way_standby_lost_both_sides)
{
    setup_pair(NUM_OPS);
    post_acknowledged_unsignaled();
    standby_lost_and_back({m_s, m_r}, "first");
    standby_lost_and_back({m_s, m_r}, "second");
}

/* The standby is lost, then the active port dies with the endpoint's
 * requests all acknowledged but not completed (unsignaled): the endpoint
 * must fail now, once, every operation completing once */
UCS_TEST_P(test_rc_varuna_liveness, last_path_death_seen_at_once)
{
    setup_pair(NUM_OPS);
    post_acknowledged_unsignaled();
    ASSERT_LT(vep(m_s)->tx.done_sn, vep(m_s)->tx.sn)
        << "every operation completed: nothing unsignaled is left";

    port active  = side_port(m_s, vep(m_s)->active);
    port standby = side_port(m_s, 1 - vep(m_s)->active);

    m_softib.link(standby.dev, standby.num, false);
    ASSERT_TRUE(progress_until([&]() {
                    return lane_failed(m_s, 1 - vep(m_s)->active);
                }, 2000)) << rp_state_of(vep(m_s));
    m_softib.link(active.dev, active.num, false);
    /* no operation after the failure: nothing else could bring it out */
    EXPECT_TRUE(progress_until([&]() { return m_ep_errors > 0; }, 500))
        << "the dead endpoint was not reported; " << rp_state_of(vep(m_s));
    short_progress_loop(20);
    EXPECT_EQ(1u, m_ep_errors);
    for (unsigned i = 0; i < NUM_OPS; ++i) {
        EXPECT_EQ(1, m_ops[i].calls) << "put #" << i;
    }
}

/* An endpoint connected to itself: a process's endpoint to its own worker
 * (Open MPI's, with no self transport in UCX_TLS). It is both sides of its
 * pair, so by the address order neither side was the initiator, and its
 * standby, once lost, never came back: with 90 s of slow flapping an Open
 * MPI job aborted at the next failure of its primary. It re-protects
 * alone; then a failure of its active port is a failover, not its end. */
UCS_TEST_P(test_rc_varuna_liveness, self_connected_standby_lost)
{
    setup_pair(NUM_OPS);
    m_s->connect(1, *m_s, 1);
    uct_rc_varuna_ep_t *self = ucs_derived_of(m_s->ep(1), uct_rc_varuna_ep_t);
    unsigned standby         = 1 - self->active;
    port lost                = side_port(m_s, standby);
    port active              = side_port(m_s, self->active);

    ASSERT_TRUE(progress_until([&]() {
                    return uct_rc_varuna_ep_has_standby(self);
                }, 2000)) << "no standby to begin with; " << rp_state_of(self);
    m_softib.link(lost.dev, lost.num, false);
    ASSERT_TRUE(progress_until([&]() {
                    return self->lane[standby].state ==
                           UCT_RC_VARUNA_LANE_FAILED;
                }, 2000)) << "the standby was not lost; " << rp_state_of(self);
    progress_until([]() { return false; }, 50);
    m_softib.link(lost.dev, lost.num, true);
    EXPECT_TRUE(progress_until([&]() {
                    return uct_rc_varuna_ep_has_standby(self);
                }, 3 * REPROTECT_TIMEOUT_MS))
        << "not re-protected; " << rp_state_of(self);
    /* the pair's endpoints lost their standby with it: theirs back too,
     * or the active port's failure below ends them */
    EXPECT_TRUE(progress_until([&]() { return both_protected(); },
                               3 * REPROTECT_TIMEOUT_MS))
        << "the pair not re-protected; sender " << rp_state_of(vep(m_s))
        << "; receiver " << rp_state_of(vep(m_r));

    m_softib.link(active.dev, active.num, false);
    EXPECT_TRUE(progress_until([&]() {
                    return (self->active == standby) &&
                           (self->fo.state == UCT_RC_VARUNA_FO_IDLE);
                }, 2000)) << "no failover onto its standby; "
                          << rp_state_of(self);
    EXPECT_EQ(0u, m_ep_errors);
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_liveness, rc_varuna)
