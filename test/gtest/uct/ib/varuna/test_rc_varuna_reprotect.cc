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
 * Re-protection at scale (docs/design.md section 5.6): many endpoints on
 * one interface pair through alternating fail/heal cycles, with traffic the
 * way UCP makes it. Each endpoint's traffic is a pending request that posts
 * until the transport says no and stays queued, so the operations take the
 * send CQ credits a progress call frees within that same call (rc/base
 * dispatches the pending queues after the send completions), and the
 * active messages keep the receiver's receive queue busy. Two ways
 * re-protection of many endpoints used to starve there: its control
 * requests found no CQ credit left, and a progress call that found
 * receives never looked at port events or the periodic check.
 *
 * After each heal every endpoint must have its standby back, on both sides,
 * within RECOVERY_BOUND_MS and before the next failure. At the end, the
 * receiver's memory says each add executed exactly once (a counter per
 * endpoint equals the adds posted on it), each slot holds the last put of
 * its endpoint, and each endpoint's active messages arrived once and in
 * order.
 */
class test_rc_varuna_reprotect : public test_rc_varuna_fo_base {
protected:
    enum {
        NUM_EPS           = 64,
        CYCLES            = 20,
        BURST             = 4,  /* put + add + AM, per callback */
        AM_ID_MANY        = 9,
        RECOVERY_BOUND_MS = 5000
    };

    struct ep_traffic {
        uct_pending_req_t        req;
        test_rc_varuna_reprotect *test;
        unsigned                 index;
        bool                     queued;
        uint64_t                 adds;      /* posted with UCS_OK */
        uint64_t                 last_put;  /* the last value put */
        uint64_t                 am_sent;
    };

    test_rc_varuna_reprotect() : m_stop(false), m_am_wrong(0), m_down(NULL) {}

    virtual void cleanup()
    {
        m_words.reset();
        test_rc_varuna_fo_base::cleanup();
    }

    uct_ep_h ep_of(entity *e, unsigned i) const
    {
        return e->ep(i);
    }

    static uct_rc_varuna_ep_t *vep_of(entity *e, unsigned i)
    {
        return ucs_derived_of(e->ep(i), uct_rc_varuna_ep_t);
    }

    uint64_t *counter(unsigned i) const
    {
        return static_cast<uint64_t*>(m_words->ptr()) + i;
    }

    uint64_t *slot(unsigned i) const
    {
        return static_cast<uint64_t*>(m_words->ptr()) + NUM_EPS + i;
    }

    uint64_t remote(const uint64_t *p) const
    {
        return m_words->addr() +
               ((const char*)p - (const char*)m_words->ptr());
    }

    static ucs_status_t am_many(void *arg, void *data, size_t length,
                                unsigned flags)
    {
        test_rc_varuna_reprotect *self =
                reinterpret_cast<test_rc_varuna_reprotect*>(arg);
        uint64_t v;

        memcpy(&v, data, sizeof(v));
        unsigned index = (unsigned)(v >> 40);
        uint64_t seq   = v & ((1ull << 40) - 1);
        if ((index >= NUM_EPS) || (seq != self->m_am_next[index])) {
            ++self->m_am_wrong;
        } else {
            ++self->m_am_next[index];
        }
        return UCS_OK;
    }

    /* Post what the endpoint takes: put, add, active message, until the
     * transport says no; true if it took everything of a burst */
    bool post_some(ep_traffic &t)
    {
        uct_ep_h ep = ep_of(m_s, t.index);
        ucs_status_t status;
        uint64_t value, am;

        for (unsigned n = 0; n < BURST; ++n) {
            value  = t.last_put + 1;
            status = uct_ep_put_short(ep, &value, sizeof(value),
                                      remote(slot(t.index)), m_words->rkey());
            if (status != UCS_OK) {
                EXPECT_EQ(UCS_ERR_NO_RESOURCE, status);
                return false;
            }
            t.last_put = value;

            status = uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, 1,
                                          remote(counter(t.index)),
                                          m_words->rkey());
            if (status != UCS_OK) {
                EXPECT_EQ(UCS_ERR_NO_RESOURCE, status);
                return false;
            }
            ++t.adds;

            am     = ((uint64_t)t.index << 40) | t.am_sent;
            status = uct_ep_am_short(ep, AM_ID_MANY, am, NULL, 0);
            if (status != UCS_OK) {
                EXPECT_EQ(UCS_ERR_NO_RESOURCE, status);
                return false;
            }
            ++t.am_sent;
        }
        return true;
    }

    static ucs_status_t pending_cb(uct_pending_req_t *req)
    {
        ep_traffic *t = ucs_container_of(req, ep_traffic, req);

        if (t->test->m_stop) {
            t->queued = false;
            return UCS_OK;
        }
        /* as UCP's pending requests do: done (queued again by the test's
         * loop), or refused and still queued */
        if (t->test->post_some(*t)) {
            t->queued = false;
            return UCS_OK;
        }
        return UCS_ERR_NO_RESOURCE;
    }

    /* Keep every endpoint's traffic queued as a pending request */
    void queue_traffic()
    {
        for (unsigned i = 0; i < NUM_EPS; ++i) {
            ep_traffic &t = m_traffic[i];
            while (!t.queued && !m_stop) {
                if (post_some(t)) {
                    continue;
                }
                ucs_status_t status = uct_ep_pending_add(ep_of(m_s, i),
                                                         &t.req, 0);
                if (status == UCS_OK) {
                    t.queued = true;
                } else {
                    ASSERT_EQ(UCS_ERR_BUSY, status);
                }
            }
        }
    }

    bool all(bool (*pred)(uct_rc_varuna_ep_t*, unsigned), unsigned arg)
    {
        for (unsigned i = 0; i < NUM_EPS; ++i) {
            if (!pred(vep_of(m_s, i), arg) || !pred(vep_of(m_r, i), arg)) {
                return false;
            }
        }
        return true;
    }

    static bool moved_to(uct_rc_varuna_ep_t *ep, unsigned lane)
    {
        return (ep->active == lane) &&
               (ep->fo.state == UCT_RC_VARUNA_FO_IDLE);
    }

    static bool protected_(uct_rc_varuna_ep_t *ep, unsigned)
    {
        return uct_rc_varuna_ep_has_standby(ep);
    }

    /* The endpoints of both sides for which pred does not hold: how many,
     * and the state of the first few, for a failure message */
    std::string failing(bool (*pred)(uct_rc_varuna_ep_t*, unsigned),
                        unsigned arg, const std::string &what) const
    {
        std::stringstream ss;
        unsigned count = 0;

        for (unsigned i = 0; i < NUM_EPS; ++i) {
            entity *e[2] = {m_s, m_r};
            for (unsigned s = 0; s < 2; ++s) {
                uct_rc_varuna_ep_t *ep = vep_of(e[s], i);
                if (!pred(ep, arg) && (count++ < 4)) {
                    ss << (s ? " receiver" : " sender") << " ep " << i
                       << ": " << rp_state_of(ep) << ";";
                }
            }
        }
        ss << " " << count << " endpoints " << what;
        return ss.str();
    }

    void run_traffic(double ms)
    {
        ucs_time_t until = ucs_get_time() + ucs_time_from_msec(ms);

        while (ucs_get_time() < until) {
            queue_traffic();
            progress();
        }
    }

    /* Progress with the traffic going until pred holds for every endpoint
     * of both sides, or the deadline */
    bool progress_until(bool (*pred)(uct_rc_varuna_ep_t*, unsigned),
                        unsigned arg, ucs_time_t deadline)
    {
        while (!all(pred, arg)) {
            if (ucs_get_time() > deadline) {
                return false;
            }
            queue_traffic();
            progress();
        }
        return true;
    }

    /* every sender endpoint flushed, progressing both sides meanwhile */
    void flush_each(ucs_time_t deadline)
    {
        for (unsigned i = 0; i < NUM_EPS; ++i) {
            ucs_status_t status;
            do {
                progress();
                status = uct_ep_flush(ep_of(m_s, i), 0, NULL);
            } while (((status == UCS_INPROGRESS) ||
                      (status == UCS_ERR_NO_RESOURCE)) &&
                     (ucs_get_time() < deadline));
            ASSERT_UCS_OK(status);
        }
    }

    void flush_all(ucs_time_t deadline)
    {
        m_stop = true;
        for (unsigned i = 0; i < NUM_EPS; ++i) {
            uct_ep_pending_purge(ep_of(m_s, i), NULL, NULL);
            m_traffic[i].queued = false;
        }
        flush_each(deadline);
        /* the last active messages to the receiver's handler */
        while ((ucs_get_time() < deadline) && !ams_all_in()) {
            progress();
        }
    }

    bool ams_all_in() const
    {
        for (unsigned i = 0; i < NUM_EPS; ++i) {
            if (m_am_next[i] < m_traffic[i].am_sent) {
                return false;
            }
        }
        return true;
    }

    /* NUM_EPS endpoint pairs, the receiver's words, the traffic's state */
    void setup_many()
    {
        for (unsigned i = 1; i < NUM_EPS; ++i) {
            m_s->connect(i, *m_r, i);
            m_r->connect(i, *m_s, i);
        }
        uct_iface_set_am_handler(m_r->iface(), AM_ID_MANY, am_many, this, 0);
        m_words.reset(new mapped_buffer(2 * NUM_EPS * sizeof(uint64_t), 0,
                                        *m_r));
        memset(m_words->ptr(), 0, m_words->length());
        m_am_next.assign(NUM_EPS, 0);
        m_traffic.resize(NUM_EPS);
        for (unsigned i = 0; i < NUM_EPS; ++i) {
            memset(&m_traffic[i], 0, sizeof(m_traffic[i]));
            m_traffic[i].req.func = pending_cb;
            m_traffic[i].test     = this;
            m_traffic[i].index    = i;
        }
    }

    /* exactly once, as the receiver's memory says; the adds posted */
    uint64_t expect_exactly_once()
    {
        uint64_t adds = 0;

        for (unsigned i = 0; i < NUM_EPS; ++i) {
            EXPECT_EQ(m_traffic[i].adds, *counter(i))
                    << "ep " << i << ": adds " << ((*counter(i) >
                                                    m_traffic[i].adds) ?
                                                   "executed twice" : "lost");
            EXPECT_EQ(m_traffic[i].last_put, *slot(i)) << "ep " << i;
            EXPECT_EQ(m_traffic[i].am_sent, m_am_next[i]) << "ep " << i;
            adds += m_traffic[i].adds;
        }
        EXPECT_EQ(0u, m_am_wrong)
                << "active messages duplicated or out of order";
        return adds;
    }

    /* the primary port of one side (the sender's by default) down */
    void fail_primary_over(entity *e = NULL)
    {
        m_down    = (e == NULL) ? m_s : e;
        port down = side_port(m_down, UCT_RC_VARUNA_SIDE_PRIMARY);

        run_traffic(20);
        m_softib.link(down.dev, down.num, false);
        ASSERT_TRUE(progress_until(moved_to, UCT_RC_VARUNA_SIDE_STANDBY,
                                   ucs_get_time() + ucs_time_from_sec(20)))
                << "not every endpoint failed over:"
                << failing(moved_to, UCT_RC_VARUNA_SIDE_STANDBY,
                           "not on the standby's lane");
    }

    void heal_primary()
    {
        port down = side_port(m_down, UCT_RC_VARUNA_SIDE_PRIMARY);

        m_softib.link(down.dev, down.num, true);
    }

    bool m_stop;
    unsigned m_am_wrong;
    entity *m_down; /* whose primary port fails (fail_primary_over) */
    std::vector<uint64_t> m_am_next;
    std::vector<ep_traffic> m_traffic;
    ucs::auto_ptr<mapped_buffer> m_words;
};

/* The send CQ far smaller than the endpoints' send queues together:
 * operations alone can take every CQ credit */
UCS_TEST_P(test_rc_varuna_reprotect, many_endpoints_alternating_cycles,
           "RC_TX_CQ_LEN=256")
{
    const unsigned cycles = ucs_max(2, CYCLES / ucs::test_time_multiplier());
    std::vector<double> reprotect_ms;

    if (!create_pair()) {
        UCS_TEST_SKIP_R("no resource with four distinct ports");
    }
    setup_many();

    for (unsigned cycle = 0; cycle < cycles; ++cycle) {
        std::string what = "cycle " + ucs::to_string(cycle);
        unsigned active  = vep_of(m_s, 0)->active;
        port down        = side_port(m_s, active);
        ucs_time_t t0;

        /* traffic first: the failure meets operations in flight */
        run_traffic(20);
        m_softib.link(down.dev, down.num, false);
        ASSERT_TRUE(progress_until(moved_to, 1 - active,
                                   ucs_get_time() + ucs_time_from_sec(20)))
                << what << ": not every endpoint failed over:"
                << failing(moved_to, 1 - active,
                           "not on lane " + ucs::to_string(1 - active));
        ASSERT_EQ(0u, m_ep_errors) << what;

        m_softib.link(down.dev, down.num, true);
        t0 = ucs_get_time();
        ASSERT_TRUE(progress_until(protected_, 0,
                                   t0 + ucs_time_from_msec(RECOVERY_BOUND_MS)))
                << what << ": re-protection not done within "
                << RECOVERY_BOUND_MS << " ms of the heal:"
                << failing(protected_, 0, "without a standby");
        reprotect_ms.push_back(ucs_time_to_msec(ucs_get_time() - t0));
    }

    flush_all(ucs_get_time() + ucs_time_from_sec(20));
    EXPECT_EQ(0u, m_ep_errors);
    fail_on_problems("many_endpoints_alternating_cycles");

    uint64_t adds = expect_exactly_once();

    /* every endpoint of both sides failed over and was re-protected in
     * every cycle */
    EXPECT_EQ(cycles * NUM_EPS, viface(m_s)->fo.failovers);
    EXPECT_EQ(cycles * NUM_EPS, viface(m_s)->fo.reprotected);
    EXPECT_EQ(cycles * NUM_EPS, viface(m_r)->fo.reprotected);
    EXPECT_EQ(0u, viface(m_s)->fo.reprotect_late);
    EXPECT_EQ(0u, viface(m_r)->fo.reprotect_late);

    std::sort(reprotect_ms.begin(), reprotect_ms.end());
    UCS_TEST_MESSAGE << NUM_EPS << " endpoints, " << cycles << " cycles, "
                     << adds << " adds: heal to all re-protected median "
                     << reprotect_ms[reprotect_ms.size() / 2] << " ms, max "
                     << reprotect_ms.back() << " ms";
}

/* Failback (issue 49): after a failover and the heal, every endpoint of
 * both sides carries its traffic on the primary lane again once that lane
 * has been the standby for FAILBACK_HOLD (not before), with its full send
 * queue, and the lane it left is the standby again; exactly once through
 * both moves, as the receiver's memory says. With FAILBACK_HOLD=inf the
 * traffic stays on the standby's lane and the case fails where it asserts
 * the lane. */
UCS_TEST_P(test_rc_varuna_reprotect, failback_after_hold_down,
           "RC_TX_CQ_LEN=256", "FAILBACK_HOLD=100ms")
{
    const unsigned primary = UCT_RC_VARUNA_SIDE_PRIMARY;
    const unsigned standby = UCT_RC_VARUNA_SIDE_STANDBY;
    ucs_time_t t0;

    if (!create_pair()) {
        UCS_TEST_SKIP_R("no resource with four distinct ports");
    }
    setup_many();

    fail_primary_over();
    run_traffic(20);

    heal_primary();
    t0 = ucs_get_time();
    /* re-protection comes within ms of the heal; the hold-down after it */
    run_traffic(50);
    EXPECT_TRUE(all(moved_to, standby))
            << "failed back within 50 ms of the heal, before the hold-down:"
            << failing(moved_to, standby, "not on the standby's lane");
    ASSERT_TRUE(progress_until(moved_to, primary,
                               t0 + ucs_time_from_msec(100 +
                                                       RECOVERY_BOUND_MS)))
            << "traffic not back on the primary lane within "
            << 100 + RECOVERY_BOUND_MS << " ms of the heal:"
            << failing(moved_to, primary, "not on the primary lane");
    double back_ms = ucs_time_to_msec(ucs_get_time() - t0);
    ASSERT_TRUE(progress_until(protected_, 0,
                               ucs_get_time() +
                               ucs_time_from_msec(RECOVERY_BOUND_MS)))
            << "the lane left is not the standby again:"
            << failing(protected_, 0, "without a standby");
    run_traffic(20);

    flush_all(ucs_get_time() + ucs_time_from_sec(20));
    EXPECT_EQ(0u, m_ep_errors);
    fail_on_problems("failback_after_hold_down");
    uint64_t adds = expect_exactly_once();

    /* the full send queue again, on both sides */
    for (unsigned i = 0; i < NUM_EPS; ++i) {
        EXPECT_EQ(viface(m_s)->side[primary].tx_max_wr,
                  vep_of(m_s, i)->tx.wr_limit) << "sender ep " << i;
        EXPECT_EQ(viface(m_r)->side[primary].tx_max_wr,
                  vep_of(m_r, i)->tx.wr_limit) << "receiver ep " << i;
    }

    /* one failure, then one failback per pair, started by its initiator;
     * the peer's half counts as one too when the initiator's message
     * starts it (not when its own retries ran out first) */
    unsigned long failbacks = viface(m_s)->fo.failbacks +
                              viface(m_r)->fo.failbacks;
    EXPECT_EQ(NUM_EPS, viface(m_s)->fo.failovers);
    EXPECT_GE(failbacks, (unsigned long)NUM_EPS);
    EXPECT_LE(failbacks, 2ul * NUM_EPS);
    UCS_TEST_MESSAGE << NUM_EPS << " endpoints, " << adds << " adds: "
                     << "all back on the primary lane " << back_ms
                     << " ms after the heal (hold-down 100 ms); failbacks "
                     << viface(m_s)->fo.failbacks << " + "
                     << viface(m_r)->fo.failbacks << ", failovers "
                     << viface(m_s)->fo.failovers << " + "
                     << viface(m_r)->fo.failovers;
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_reprotect, rc_varuna)

/*
 * The short send queue replaced (issue 49, docs/design.md section 5.9): with
 * the primary down and kept down, every endpoint of both sides carries its
 * traffic on a QP with the primary's send queue within a second of the
 * failover, and what moved executed exactly once, as the receiver's memory
 * says. With GROW_AFTER=inf the endpoints keep the standby's short queue
 * and the case fails where it asserts the credits.
 */
class test_rc_varuna_grow : public test_rc_varuna_reprotect {
protected:
    static bool grown(uct_rc_varuna_ep_t *ep, unsigned)
    {
        uct_rc_varuna_iface_t *iface = ucs_derived_of(
                ep->super.super.super.iface, uct_rc_varuna_iface_t);
        uint16_t full = iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].tx_max_wr;

        return (ep->active == UCT_RC_VARUNA_SIDE_STANDBY) &&
               (ep->gr.state == UCT_RC_VARUNA_GROW_IDLE) &&
               (ep->tx.wr_limit == full) &&
               (ep->lane[ep->active].max_wr == full);
    }

    static bool grow_asked(uct_rc_varuna_ep_t *ep, unsigned)
    {
        return ep->gr.state == UCT_RC_VARUNA_GROW_ASKED;
    }

    /* the initiators' side: the one that asks */
    entity *asker() const
    {
        return vep_of(m_s, 0)->rp.initiator ? m_s : m_r;
    }

    /* the end of every case: nothing lost, nothing twice, no error */
    uint64_t finish(const char *what)
    {
        flush_all(ucs_get_time() + ucs_time_from_sec(20));
        EXPECT_EQ(0u, m_ep_errors);
        fail_on_problems(what);
        return expect_exactly_once();
    }

    /* Nothing of the traffic in flight or queued: before one side stops
     * progressing (a side that is not progressed stops answering; its
     * peer's requests then wait, and with them the peer's drain) */
    void quiesce()
    {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(10);

        m_stop = true; /* the pending requests leave when dispatched */
        flush_each(deadline);
        for (unsigned i = 0; i < NUM_EPS; ++i) {
            ASSERT_FALSE(m_traffic[i].queued) << "ep " << i;
        }
        m_stop = false;
    }

    /* progress one side only, until pred holds for want of its endpoints
     * (all by default) or the deadline; how many it holds for */
    unsigned progress_side_until(entity *e,
                                 bool (*pred)(uct_rc_varuna_ep_t*, unsigned),
                                 ucs_time_t deadline,
                                 unsigned want = NUM_EPS)
    {
        unsigned count = 0;

        while ((count < want) && (ucs_get_time() < deadline)) {
            e->progress();
            count = 0;
            for (unsigned i = 0; i < NUM_EPS; ++i) {
                count += pred(vep_of(e, i), 0);
            }
        }
        return count;
    }

    /* The asker's primary port down and the traffic quiet, so that each
     * side can then be progressed alone (a side that is not progressed
     * does not answer the other's requests); the asker, and its peer */
    void fail_asker_quietly(entity **a_p, entity **p_p)
    {
        *a_p = asker();
        *p_p = (*a_p == m_s) ? m_r : m_s;
        fail_primary_over(*a_p);
        quiesce();
    }

    /* The asker alone: as many grows asked for at once as it may; how
     * many */
    unsigned asker_asks(entity *a)
    {
        return progress_side_until(a, grow_asked,
                                   ucs_get_time() + ucs_time_from_sec(1),
                                   ucs_min(NUM_EPS,
                                           UCT_RC_VARUNA_GROW_AT_ONCE));
    }

    /* Each side alone in turn: the asker asks, the peer answers, the asker
     * moves to its new QP; the peer has not heard of it. How many moved */
    unsigned asker_moves_alone(entity *a, entity *p)
    {
        unsigned asked   = asker_asks(a);
        unsigned ready   = progress_side_until(p, grow_ready,
                                               ucs_get_time() +
                                               ucs_time_from_sec(1), asked);
        unsigned swapped = progress_side_until(a, grow_swapped,
                                               ucs_get_time() +
                                               ucs_time_from_sec(1), ready);

        UCS_TEST_MESSAGE << asked << " asked, " << ready << " peers waiting "
                         << "for the asker's word, " << swapped
                         << " askers moved";
        return swapped;
    }

    static bool grow_ready(uct_rc_varuna_ep_t *ep, unsigned)
    {
        return ep->gr.state == UCT_RC_VARUNA_GROW_READY;
    }

    static bool grow_swapped(uct_rc_varuna_ep_t *ep, unsigned)
    {
        return ep->gr.state == UCT_RC_VARUNA_GROW_SWAPPED;
    }

    static bool grow_not_asked(uct_rc_varuna_ep_t *ep, unsigned)
    {
        return ep->gr.state != UCT_RC_VARUNA_GROW_ASKED;
    }

    static bool dead_taken_over(uct_rc_varuna_ep_t *ep)
    {
        return (ep->fo.state == UCT_RC_VARUNA_FO_DEAD) &&
               (ep->dead.owner == UCT_RC_VARUNA_OWNER_CALLER);
    }

    /* progress until the endpoints eps of e died and their operations are
     * the test's (the error handler took them over): both sides, or only
     * the one given */
    bool progress_until_dead(entity *e, const std::vector<unsigned> &eps,
                             ucs_time_t deadline, entity *only = NULL)
    {
        for (;;) {
            bool all_dead = true;
            for (size_t j = 0; j < eps.size(); ++j) {
                all_dead = all_dead && dead_taken_over(vep_of(e, eps[j]));
            }
            if (all_dead) {
                return true;
            }
            if (ucs_get_time() > deadline) {
                return false;
            }
            if (only != NULL) {
                only->progress();
            } else {
                progress();
            }
        }
    }

    /* the TX token of e's endpoint i, as UCP's lane failover takes it */
    std::vector<uint8_t> tx_token(entity *e, unsigned i)
    {
        uint8_t tx[UCT_EP_TOKEN_MAX_LENGTH];
        uct_ep_attr_t attr;

        memset(&attr, 0, sizeof(attr));
        attr.field_mask      = UCT_EP_ATTR_FIELD_TX_TOKEN;
        attr.tx_token        = tx;
        attr.tx_token_length = sizeof(tx);
        EXPECT_UCS_OK(uct_ep_query(e->ep(i), &attr));
        return std::vector<uint8_t>(tx, tx + attr.tx_token_length);
    }

    /* UCP's lane failover's question: a TX token to to's interface; its RX
     * token in rx */
    ucs_status_t derive(const std::vector<uint8_t> &tx, entity *to,
                        std::vector<uint8_t> &rx)
    {
        uint8_t buf[UCT_EP_TOKEN_MAX_LENGTH];
        size_t rx_length = 0;
        ucs_status_t status;

        status = uct_iface_derive_rx_token(to->iface(), tx.data(), tx.size(),
                                           buf, &rx_length);
        rx.assign(buf, buf + rx_length);
        return status;
    }

    /* What the purge hands back runs on the receiver's memory, as on the
     * lane UCP would move it to */
    static void replay_cb(const uct_ep_op_info_t *info, void *arg)
    {
        test_rc_varuna_grow *self = static_cast<test_rc_varuna_grow*>(arg);
        uint64_t *word            = NULL;

        if (info->field_mask & UCT_EP_OP_INFO_FIELD_RMA) {
            word = (uint64_t*)((char*)self->m_words->ptr() +
                               (info->rma.remote_addr -
                                self->m_words->addr()));
        }
        switch (info->operation) {
        case UCT_EP_OP_PUT_SHORT:
            memcpy(word, info->data.buffer, info->data.length);
            break;
        case UCT_EP_OP_ATOMIC_POST:
            EXPECT_EQ(UCT_ATOMIC_OP_ADD, info->atomic.op);
            *word += info->atomic.value;
            break;
        case UCT_EP_OP_AM_BCOPY:
            EXPECT_EQ(AM_ID_MANY, info->am.id);
            am_many(self, (void*)info->data.buffer, info->data.length, 0);
            break;
        case UCT_EP_OP_FLUSH:
            break;
        default:
            ADD_FAILURE() << "handed back an operation the test never "
                             "posted: " << info->operation;
            break;
        }
        if (info->operation != UCT_EP_OP_FLUSH) {
            ++self->m_handed_back;
        }
        if (info->comp != NULL) {
            uct_invoke_completion(info->comp, UCS_OK);
        }
    }

    void purge(entity *e, unsigned i, std::vector<uint8_t> &rx)
    {
        uct_ep_outstanding_purge_params_t params;

        params.field_mask      = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN |
                                 UCT_EP_OUTSTANDING_FIELD_CB |
                                 UCT_EP_OUTSTANDING_FIELD_ARG;
        params.rx_token        = rx.data();
        params.rx_token_length = rx.size();
        params.cb              = replay_cb;
        params.arg             = this;
        ASSERT_UCS_OK(uct_ep_outstanding_purge(e->ep(i), &params));
        EXPECT_EQ(vep_of(e, i)->tx.sn, vep_of(e, i)->tx.done_sn);
    }

    /* A burst on each of eps, unconfirmed (the error handler takes the
     * endpoints over), then e's port of a side down */
    void burst_then_lose(entity *e, unsigned side,
                         const std::vector<unsigned> &eps)
    {
        m_err_take_over = true;
        for (size_t j = 0; j < eps.size(); ++j) {
            post_some(m_traffic[eps[j]]);
        }
        port down = side_port(e, side);
        m_softib.link(down.dev, down.num, false);
    }

    /* The end of a loss of both lanes while the two sides disagree on a
     * lane's QPs: the peer's endpoints end at UCP's question, the token
     * of each at that end is found by the asker's interface, both sides'
     * purges run with the other's answers, and what they hand back runs
     * on the receiver's memory: each operation once */
    void end_and_purge(entity *a, entity *p, const std::vector<unsigned> &eps,
                       std::vector<std::vector<uint8_t> > &rx_at_p,
                       std::vector<std::vector<uint8_t> > &rx_at_a,
                       ucs_time_t deadline, const std::string &what)
    {
        ASSERT_TRUE(progress_until_dead(p, eps, deadline))
                << "the peer's endpoints did not end at the question";
        for (size_t j = 0; j < eps.size(); ++j) {
            unsigned i = eps[j];
            ASSERT_EQ(UCS_OK, derive(tx_token(p, i), a, rx_at_a[i]))
                    << "ep " << i << ": the asker does not find the peer's "
                    << "connection at its end";
        }

        m_handed_back = 0;
        for (size_t j = 0; j < eps.size(); ++j) {
            purge(a, eps[j], rx_at_p[eps[j]]);
            purge(p, eps[j], rx_at_a[eps[j]]);
        }
        short_progress_loop(20);

        fail_on_problems(what);
        uint64_t adds = expect_exactly_once();
        UCS_TEST_MESSAGE << eps.size() << " endpoint pairs " << what
                         << " (the " << ((a == m_s) ? "sender" : "receiver")
                         << " asked), " << adds << " adds, "
                         << m_handed_back << " operations handed back";
    }

    unsigned m_handed_back;
};

UCS_TEST_P(test_rc_varuna_grow, while_primary_down, "RC_TX_CQ_LEN=256")
{
    const unsigned standby = UCT_RC_VARUNA_SIDE_STANDBY;
    uint16_t full, short_len;
    ucs_time_t t0;

    if (!create_pair()) {
        UCS_TEST_SKIP_R("no resource with four distinct ports");
    }
    setup_many();
    full      = viface(m_s)->side[UCT_RC_VARUNA_SIDE_PRIMARY].tx_max_wr;
    short_len = viface(m_s)->side[standby].tx_max_wr;
    ASSERT_LT(short_len, full) << "the standby's queue is not shorter";

    fail_primary_over();
    t0 = ucs_get_time();
    ASSERT_TRUE(progress_until(grown, 0, t0 + ucs_time_from_sec(1)))
            << "not every endpoint on the full send queue within 1 s of "
               "the failover:"
            << failing(grown, 0, "still short or moving");
    double grown_ms = ucs_time_to_msec(ucs_get_time() - t0);
    run_traffic(50);

    /* the primary's port back: re-protected as the standby, the traffic
     * stays (failback off) on the full queue */
    heal_primary();
    ASSERT_TRUE(progress_until(protected_, 0,
                               ucs_get_time() +
                               ucs_time_from_msec(RECOVERY_BOUND_MS)))
            << failing(protected_, 0, "without a standby");
    run_traffic(20);
    EXPECT_TRUE(all(grown, 0)) << failing(grown, 0, "not on the full queue");

    uint64_t adds = finish("grow while_primary_down");
    EXPECT_EQ((unsigned long)NUM_EPS, viface(m_s)->fo.grows);
    EXPECT_EQ((unsigned long)NUM_EPS, viface(m_r)->fo.grows);
    EXPECT_EQ((unsigned long)NUM_EPS, viface(m_s)->fo.failovers);
    EXPECT_EQ(NUM_EPS, vfs_counter(m_s, "grows"));
    UCS_TEST_MESSAGE << NUM_EPS << " endpoints, " << adds << " adds: all on "
                     << full << " send credits (from " << short_len << ") "
                     << grown_ms << " ms after the failover";
}

/* After the grow the failback: the traffic back on the primary lane with
 * its full queue, and the lane it left the standby again, made short again
 * at its re-protection: on each side a new QP of the standby's length,
 * connected to the peer's, the grown QPs gone (design.md 5.9). A second
 * failure then moves the traffic onto it, exactly once. */
UCS_TEST_P(test_rc_varuna_grow, then_failback, "RC_TX_CQ_LEN=256",
           "FAILBACK_HOLD=100ms")
{
    const unsigned primary = UCT_RC_VARUNA_SIDE_PRIMARY;
    const unsigned standby = UCT_RC_VARUNA_SIDE_STANDBY;

    if (!create_pair()) {
        UCS_TEST_SKIP_R("no resource with four distinct ports");
    }
    setup_many();
    entity *e[2] = {m_s, m_r};

    fail_primary_over();
    ASSERT_TRUE(progress_until(grown, 0,
                               ucs_get_time() + ucs_time_from_sec(1)))
            << failing(grown, 0, "still short or moving");
    std::vector<uint32_t> grown_qpn[2];
    for (unsigned i = 0; i < NUM_EPS; ++i) {
        for (unsigned s = 0; s < 2; ++s) {
            grown_qpn[s].push_back(
                    vep_of(e[s], i)->lane[standby].qp->qp_num);
        }
    }
    run_traffic(20);

    heal_primary();
    ASSERT_TRUE(progress_until(moved_to, primary,
                               ucs_get_time() +
                               ucs_time_from_msec(100 + RECOVERY_BOUND_MS)))
            << failing(moved_to, primary, "not on the primary lane");
    ASSERT_TRUE(progress_until(protected_, 0,
                               ucs_get_time() +
                               ucs_time_from_msec(RECOVERY_BOUND_MS)))
            << failing(protected_, 0, "without a standby");
    run_traffic(20);

    for (unsigned i = 0; i < NUM_EPS; ++i) {
        for (unsigned s = 0; s < 2; ++s) {
            uct_rc_varuna_ep_t *ep   = vep_of(e[s], i);
            uct_rc_varuna_ep_t *peer = vep_of(e[1 - s], i);
            const char *who          = s ? "receiver" : "sender";

            EXPECT_EQ(viface(e[s])->side[primary].tx_max_wr, ep->tx.wr_limit)
                    << who << " ep " << i;
            EXPECT_EQ(viface(e[s])->side[standby].tx_max_wr,
                      ep->lane[standby].max_wr)
                    << who << " ep " << i << ": the standby has the grown "
                    << "queue still";
            EXPECT_NE(grown_qpn[s][i], ep->lane[standby].qp->qp_num)
                    << who << " ep " << i << ": the standby is the grown QP";
            EXPECT_EQ(peer->lane[standby].qp->qp_num, ep->peer.qpn[standby])
                    << who << " ep " << i << ": not connected to the "
                    << "peer's new QP";
            EXPECT_EQ(UCT_RC_VARUNA_GROW_IDLE, ep->gr.state)
                    << who << " ep " << i;
            EXPECT_TRUE(ep->gr.qp == NULL)
                    << who << " ep " << i << ": the grown QP kept";
        }
    }
    EXPECT_EQ((unsigned long)NUM_EPS, viface(m_s)->fo.renewed);
    EXPECT_EQ((unsigned long)NUM_EPS, viface(m_r)->fo.renewed);
    EXPECT_EQ(NUM_EPS, vfs_counter(m_s, "renewed"));

    /* the short standby carries the traffic at the next failure */
    fail_primary_over();
    run_traffic(20);
    finish("grow then_failback");
    EXPECT_EQ(2ul * NUM_EPS, viface(m_s)->fo.failovers);
}

/* The primary's port back while the grow is asked for (the peer, not
 * progressed, has not answered): the grow gives way to re-protection,
 * nothing moves (the peer drops its new QP at the re-protection request),
 * and the endpoints are protected again, exactly once throughout */
UCS_TEST_P(test_rc_varuna_grow, heal_while_asked, "RC_TX_CQ_LEN=256")
{
    if (!create_pair()) {
        UCS_TEST_SKIP_R("no resource with four distinct ports");
    }
    setup_many();

    /* the asker's own port: its grow does not wait for the peer's word on
     * a re-protection */
    entity *a, *p;
    ASSERT_NO_FATAL_FAILURE(fail_asker_quietly(&a, &p));
    unsigned asked = asker_asks(a);
    UCS_TEST_MESSAGE << asked << " of " << NUM_EPS << " endpoints asked to "
                     << "grow at the heal";
    ASSERT_GT(asked, 0u) << failing(grow_asked, 0, "not asking");

    /* the heal seen by the asker first: it gives up before the answers */
    heal_primary();
    ASSERT_EQ((unsigned)NUM_EPS,
              progress_side_until(a, grow_not_asked,
                                  ucs_get_time() + ucs_time_from_sec(5)))
            << failing(grow_asked, 0, "asking still");
    ASSERT_TRUE(progress_until(protected_, 0,
                               ucs_get_time() +
                               ucs_time_from_msec(RECOVERY_BOUND_MS)))
            << failing(protected_, 0, "without a standby");
    run_traffic(50);
    finish("grow heal_while_asked");
    EXPECT_EQ(0ul, viface(m_s)->fo.grows);
    EXPECT_EQ(0ul, viface(m_r)->fo.grows);
    for (unsigned i = 0; i < NUM_EPS; ++i) {
        EXPECT_EQ(UCT_RC_VARUNA_GROW_IDLE, vep_of(m_s, i)->gr.state);
        EXPECT_EQ(UCT_RC_VARUNA_GROW_IDLE, vep_of(m_r, i)->gr.state);
        EXPECT_TRUE(vep_of(m_r, i)->gr.qp == NULL) << "ep " << i;
        EXPECT_TRUE(vep_of(m_s, i)->gr.qp == NULL) << "ep " << i;
    }
}

/* The primary's port back while the asker has moved to its new QP and its
 * peer has not (it is not progressed from its answer to the heal): the
 * re-protection waits for the grow, which completes; the traffic, going
 * again, executes exactly once, and both sides agree on the lane's QPs */
UCS_TEST_P(test_rc_varuna_grow, heal_while_swapping, "RC_TX_CQ_LEN=256")
{
    if (!create_pair()) {
        UCS_TEST_SKIP_R("no resource with four distinct ports");
    }
    setup_many();

    entity *a, *p;
    ASSERT_NO_FATAL_FAILURE(fail_asker_quietly(&a, &p));
    unsigned swapped = asker_moves_alone(a, p);
    ASSERT_GT(swapped, 0u) << failing(grow_swapped, 0, "not moved");

    heal_primary();
    ASSERT_TRUE(progress_until(protected_, 0,
                               ucs_get_time() +
                               ucs_time_from_msec(RECOVERY_BOUND_MS)))
            << failing(protected_, 0, "without a standby");
    run_traffic(50);
    finish("grow heal_while_swapping");
    EXPECT_EQ(viface(a)->fo.grows, viface(p)->fo.grows);
    EXPECT_GE(viface(a)->fo.grows, (unsigned long)swapped);
    for (unsigned i = 0; i < NUM_EPS; ++i) {
        EXPECT_EQ(vep_of(a, i)->peer.qpn[1],
                  vep_of(p, i)->lane[1].qp->qp_num) << "ep " << i;
        EXPECT_EQ(vep_of(p, i)->peer.qpn[1],
                  vep_of(a, i)->lane[1].qp->qp_num) << "ep " << i;
    }
}

/*
 * Both lanes lost while the asker has moved to its new QP and its peer has
 * not (design.md 5.9): the two sides' TX tokens name different connections
 * of the lane, the asker's its new one, the peer's its old one. Each
 * interface finds the connection named among the QPs it kept, fences them
 * and answers the expected PSN of the named QP; the purge then hands back
 * exactly what did not execute. The sender's burst, posted on its
 * connection (whichever side it is) just before the loss and never
 * confirmed, runs once, as the receiver's memory says. Without the other
 * connection kept and looked up, the interfaces answer that they have no
 * such connection (NO_ELEM), and UCP's lane failover ends the endpoint.
 */
UCS_TEST_P(test_rc_varuna_grow, lost_while_swapping, "RC_TX_CQ_LEN=256")
{
    const unsigned standby = UCT_RC_VARUNA_SIDE_STANDBY;
    ucs_time_t deadline;

    if (!create_pair()) {
        UCS_TEST_SKIP_R("no resource with four distinct ports");
    }
    setup_many();

    entity *a, *p;
    ASSERT_NO_FATAL_FAILURE(fail_asker_quietly(&a, &p));
    asker_moves_alone(a, p);

    std::vector<unsigned> moving; /* the asker moved, its peer not */
    for (unsigned i = 0; i < NUM_EPS; ++i) {
        if (grow_swapped(vep_of(a, i), 0) && grow_ready(vep_of(p, i), 0)) {
            moving.push_back(i);
        }
    }
    ASSERT_FALSE(moving.empty()) << failing(grow_swapped, 0, "not moved");

    /* a burst on each such pair's connection, unconfirmed, then the lane
     * carrying the traffic lost: no lane left */
    burst_then_lose(a, standby, moving);
    deadline = ucs_get_time() + ucs_time_from_sec(20);
    /* the asker alone: its peer stays as it was at the loss, not moved */
    ASSERT_TRUE(progress_until_dead(a, moving, deadline, a))
            << "the asker's endpoints did not end";

    /* UCP's question, both ways: the asker's token names its new
     * connection, the peer's its old one */
    std::vector<std::vector<uint8_t> > rx_at_p(NUM_EPS), rx_at_a(NUM_EPS);
    std::vector<std::vector<uint8_t> > old_token(NUM_EPS);
    for (size_t j = 0; j < moving.size(); ++j) {
        unsigned i = moving[j];
        ASSERT_TRUE(grow_ready(vep_of(p, i), 0)) << "ep " << i;
        old_token[i] = tx_token(p, i);
    }
    for (size_t j = 0; j < moving.size(); ++j) {
        unsigned i = moving[j];
        ASSERT_EQ(UCS_OK, derive(tx_token(a, i), p, rx_at_p[i]))
                << "ep " << i << ": the peer does not find the asker's new "
                << "connection (qp 0x" << std::hex
                << vep_of(a, i)->lane[standby].qp->qp_num << ")";
        ASSERT_EQ(UCS_OK, derive(old_token[i], a, rx_at_a[i]))
                << "ep " << i << ": the asker does not find the peer's old "
                << "connection (qp 0x" << std::hex
                << vep_of(p, i)->lane[standby].qp->qp_num << ")";
    }
    /* the peer's endpoints end at the question; what UCP carries is the
     * token at that end (the peer may have moved meanwhile: the asker's
     * word was in its receive queue) */
    end_and_purge(a, p, moving, rx_at_p, rx_at_a, deadline,
                  "lost mid-switch");
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_grow, rc_varuna)

/*
 * Both lanes lost while the standby is being made short again after a
 * failback: the asker has renewed its QP of the lane and asked, and its
 * peer has not heard (or has renewed and answered, and the asker has not
 * heard). The asker's token names no connection on that lane, the peer's
 * its old one (or none): each interface finds the endpoint, fences it and
 * answers; the purge then hands back exactly what did not execute. A token
 * naming the asker's new QP would find no such connection at the peer
 * (NO_ELEM), and UCP's lane failover would end the endpoint.
 */
class test_rc_varuna_renew : public test_rc_varuna_grow {
protected:
    static bool renewed(uct_rc_varuna_ep_t *ep, unsigned)
    {
        return ep->gr.state == UCT_RC_VARUNA_GROW_RENEWED;
    }

    void lost_while_renewing(bool peer_renewed)
    {
        const unsigned primary = UCT_RC_VARUNA_SIDE_PRIMARY;
        const unsigned standby = UCT_RC_VARUNA_SIDE_STANDBY;
        ucs_time_t deadline;

        if (!create_pair()) {
            UCS_TEST_SKIP_R("no resource with four distinct ports");
        }
        setup_many();

        entity *a = asker();
        entity *p = (a == m_s) ? m_r : m_s;
        fail_primary_over(a);
        ASSERT_TRUE(progress_until(grown, 0,
                                   ucs_get_time() + ucs_time_from_sec(1)))
                << failing(grown, 0, "still short or moving");
        quiesce();

        /* the failback on both sides, with no traffic (a side progressed
         * alone must not wait for the other's acknowledgements); then the
         * asker alone renews the standby it left and asks the peer */
        m_stop = true;
        heal_primary();
        ASSERT_TRUE(progress_until(moved_to, primary,
                                   ucs_get_time() +
                                   ucs_time_from_msec(100 +
                                                      RECOVERY_BOUND_MS)))
                << failing(moved_to, primary, "not on the primary lane");
        progress_side_until(a, renewed, ucs_get_time() +
                            ucs_time_from_sec(1));
        std::vector<unsigned> window; /* the asker renewed */
        for (unsigned i = 0; i < NUM_EPS; ++i) {
            if (renewed(vep_of(a, i), 0)) {
                window.push_back(i);
            }
        }
        m_stop = false;
        ASSERT_FALSE(window.empty()) << failing(renewed, 0, "not renewed");

        /* a burst on each such pair's primary, unconfirmed, then the
         * primary lost: no lane left. The peer's answer, if any, comes
         * after the loss: it never reaches the asker (an answer that
         * did would give the asker its standby back, and the loss would
         * be a failover) */
        burst_then_lose(a, primary, window);
        deadline = ucs_get_time() + ucs_time_from_sec(20);

        unsigned heard = 0;
        if (peer_renewed) {
            /* the peer alone: it renews too, and answers in vain (a peer
             * that saw the loss first does not) */
            ucs_time_t until = ucs_get_time() + ucs_time_from_sec(1);
            while ((heard < window.size()) && (ucs_get_time() < until)) {
                p->progress();
                heard = 0;
                for (size_t j = 0; j < window.size(); ++j) {
                    heard += renewed(vep_of(p, window[j]), 0);
                }
            }
        } else {
            for (size_t j = 0; j < window.size(); ++j) {
                EXPECT_EQ(UCT_RC_VARUNA_LANE_FAILED,
                          vep_of(p, window[j])->lane[standby].state)
                        << "ep " << window[j] << ": the peer heard";
            }
        }
        UCS_TEST_MESSAGE << window.size() << " askers renewed, " << heard
                         << " of their peers too";
        if (peer_renewed) {
            ASSERT_GT(heard, 0u) << "no peer renewed";
        }
        ASSERT_TRUE(progress_until_dead(a, window, deadline, a))
                << "the asker's endpoints did not end";

        std::vector<std::vector<uint8_t> > rx_at_p(NUM_EPS), rx_at_a(NUM_EPS);
        std::vector<std::vector<uint8_t> > first_token(NUM_EPS);
        for (size_t j = 0; j < window.size(); ++j) {
            first_token[window[j]] = tx_token(p, window[j]);
        }
        for (size_t j = 0; j < window.size(); ++j) {
            unsigned i = window[j];
            ASSERT_EQ(UCS_OK, derive(tx_token(a, i), p, rx_at_p[i]))
                    << "ep " << i << ": the peer does not find the asker's "
                    << "connection (standby qp 0x" << std::hex
                    << vep_of(a, i)->lane[standby].qp->qp_num << ", the "
                    << "peer's 0x" << vep_of(p, i)->lane[standby].qp->qp_num
                    << ")";
            ASSERT_EQ(UCS_OK, derive(first_token[i], a, rx_at_a[i]))
                    << "ep " << i << ": the asker does not find the peer's "
                    << "connection";
        }
        end_and_purge(a, p, window, rx_at_p, rx_at_a, deadline,
                      "lost while renewing");
    }
};

UCS_TEST_P(test_rc_varuna_renew, lost_before_the_peer_heard,
           "RC_TX_CQ_LEN=256", "FAILBACK_HOLD=100ms")
{
    lost_while_renewing(false);
}

UCS_TEST_P(test_rc_varuna_renew, lost_before_the_answer_came,
           "RC_TX_CQ_LEN=256", "FAILBACK_HOLD=100ms")
{
    lost_while_renewing(true);
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_renew, rc_varuna)


