/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include <common/test.h>

/* The classifier lives in the rc_varuna module, which UCX loads at run
 * time and the test binary does not link: it has no UCX dependency, so its
 * source is compiled right here. */
extern "C" {
#include <uct/ib/varuna/rc_varuna_classify.c>
}

#include <vector>


/*
 * The plain-C cores of a failover (DESIGN.md sections 3.4 and 5.3): PSN
 * arithmetic and the classification of the operations in flight. The last
 * case simulates streams cut at every packet and checks every verdict
 * against what the responder really executed.
 */
class test_rc_varuna_classify : public ucs::test {
protected:
    typedef uct_rc_varuna_cls_op_t cls_op_t;

    /* by default every operation has its log write behind it, so the one
     * before it is the last log write posted before it */
    static cls_op_t op(uint64_t sn, uct_rc_varuna_kind_t kind,
                       uint32_t last_psn = 0)
    {
        return op(sn, sn - 1, kind, last_psn);
    }

    static cls_op_t op(uint64_t sn, uint64_t log_before,
                       uct_rc_varuna_kind_t kind, uint32_t last_psn)
    {
        cls_op_t o;

        o.sn         = sn;
        o.log_before = log_before;
        o.last_psn   = last_psn;
        o.kind       = kind;
        o.never_sent = 0;
        o.numbered   = 0;
        o.am_seq     = 0;
        o.verdict    = 0xff;
        o.basis      = 0xff;
        return o;
    }

    static uct_rc_varuna_cls_input_t input(bool log_valid, uint64_t log_sn,
                                           bool psn_valid, uint32_t rq_psn)
    {
        uct_rc_varuna_cls_input_t in;

        in.log_valid  = log_valid;
        in.log_sn     = log_sn;
        in.psn_valid  = psn_valid;
        in.rq_psn     = rq_psn;
        in.send_dedup = true;
        in.delivered_valid  = false;
        in.delivered_am_seq = 0;
        return in;
    }

    static uct_rc_varuna_cls_summary_t
    classify(const uct_rc_varuna_cls_input_t &in, std::vector<cls_op_t> &ops)
    {
        uct_rc_varuna_cls_summary_t sum;

        uct_rc_varuna_classify(&in, ops.data(), ops.size(), &sum);
        return sum;
    }
};

UCS_TEST_F(test_rc_varuna_classify, psn_arithmetic_wraps_at_24_bits)
{
    EXPECT_EQ(0u, uct_rc_varuna_psn_add(0xffffff, 1));
    EXPECT_EQ(4u, uct_rc_varuna_psn_add(0xfffffe, 6));
    EXPECT_EQ(0x123456u, uct_rc_varuna_psn_add(0x123456, 0));

    EXPECT_LT(uct_rc_varuna_psn_cmp(0xfffffe, 0x000001), 0);
    EXPECT_GT(uct_rc_varuna_psn_cmp(0x000001, 0xfffffe), 0);
    EXPECT_EQ(0, uct_rc_varuna_psn_cmp(0x7, 0x7));
    EXPECT_LT(uct_rc_varuna_psn_cmp(5, 6), 0);
    /* the window is half the space */
    EXPECT_LT(uct_rc_varuna_psn_cmp(0, 0x7fffff), 0);
    EXPECT_GT(uct_rc_varuna_psn_cmp(0, 0x800001), 0);
}

UCS_TEST_F(test_rc_varuna_classify, psn_count_per_request)
{
    EXPECT_EQ(1u, uct_rc_varuna_psn_count(UCT_RC_VARUNA_KIND_WRITE, 0, 4096));
    EXPECT_EQ(1u, uct_rc_varuna_psn_count(UCT_RC_VARUNA_KIND_WRITE, 1, 4096));
    EXPECT_EQ(1u, uct_rc_varuna_psn_count(UCT_RC_VARUNA_KIND_WRITE, 4096,
                                          4096));
    EXPECT_EQ(2u, uct_rc_varuna_psn_count(UCT_RC_VARUNA_KIND_WRITE, 4097,
                                          4096));
    EXPECT_EQ(3u, uct_rc_varuna_psn_count(UCT_RC_VARUNA_KIND_SEND, 2500,
                                          1024));
    /* a READ's PSNs are its response packets */
    EXPECT_EQ(4u, uct_rc_varuna_psn_count(UCT_RC_VARUNA_KIND_READ, 16384,
                                          4096));
    EXPECT_EQ(1u, uct_rc_varuna_psn_count(UCT_RC_VARUNA_KIND_READ, 0, 4096));
    /* an atomic is one packet, whatever the operand */
    EXPECT_EQ(1u, uct_rc_varuna_psn_count(UCT_RC_VARUNA_KIND_ATOMIC, 8,
                                          256));
}

UCS_TEST_F(test_rc_varuna_classify, psn_executed_is_strictly_below_rq_psn)
{
    EXPECT_TRUE(uct_rc_varuna_psn_executed(9, 10));
    EXPECT_FALSE(uct_rc_varuna_psn_executed(10, 10));
    EXPECT_FALSE(uct_rc_varuna_psn_executed(11, 10));
    EXPECT_TRUE(uct_rc_varuna_psn_executed(0xffffff, 0));
    EXPECT_FALSE(uct_rc_varuna_psn_executed(0, 0xffffff));
}

/* With the log only: everything up to L executed, L + 1 decided only when
 * resending it is harmless, the rest lost. */
UCS_TEST_F(test_rc_varuna_classify, log_decides_all_but_one)
{
    std::vector<cls_op_t> ops;
    uct_rc_varuna_kind_t kinds[] = {UCT_RC_VARUNA_KIND_WRITE,
                                    UCT_RC_VARUNA_KIND_ATOMIC,
                                    UCT_RC_VARUNA_KIND_READ,
                                    UCT_RC_VARUNA_KIND_SEND};

    for (unsigned k = 0; k < 4; ++k) {
        ops.clear();
        for (uint64_t sn = 10; sn < 16; ++sn) {
            ops.push_back(op(sn, (sn == 13) ? kinds[k] :
                                              UCT_RC_VARUNA_KIND_WRITE));
        }

        uct_rc_varuna_cls_summary_t sum = classify(input(true, 12, false, 0),
                                                   ops);
        for (size_t i = 0; i < ops.size(); ++i) {
            if (ops[i].sn <= 12) {
                EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[i].verdict);
                EXPECT_EQ(UCT_RC_VARUNA_BASIS_LOG, ops[i].basis);
            } else if (ops[i].sn > 13) {
                EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[i].verdict);
                EXPECT_EQ(UCT_RC_VARUNA_BASIS_LOG, ops[i].basis);
            }
        }

        cls_op_t &next = ops[3];
        if ((kinds[k] == UCT_RC_VARUNA_KIND_READ) ||
            (kinds[k] == UCT_RC_VARUNA_KIND_SEND)) {
            EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, next.verdict);
            EXPECT_EQ(UCT_RC_VARUNA_BASIS_IDEMPOTENT, next.basis);
            EXPECT_EQ(0u, sum.undecided);
        } else {
            EXPECT_EQ(UCT_RC_VARUNA_VERDICT_UNDECIDED, next.verdict);
            EXPECT_EQ(UCT_RC_VARUNA_BASIS_NONE, next.basis);
            EXPECT_EQ(1u, sum.undecided);
        }
        EXPECT_EQ(3u, sum.executed);
        /* 10-12 executed, 14-15 lost */
        EXPECT_EQ(5u, sum.by_log);
        EXPECT_EQ(0u, sum.conflicts);
    }
}

/* The peer's expected PSN settles L + 1 either way. */
UCS_TEST_F(test_rc_varuna_classify, psn_settles_the_undecided_one)
{
    for (int executed = 0; executed <= 1; ++executed) {
        std::vector<cls_op_t> ops;

        ops.push_back(op(5, UCT_RC_VARUNA_KIND_WRITE, 100));
        ops.push_back(op(6, UCT_RC_VARUNA_KIND_ATOMIC, 102));
        ops.push_back(op(7, UCT_RC_VARUNA_KIND_WRITE, 104));
        /* the log write of sn 5 is PSN 101; sn 6 is 102, its log 103 */
        uct_rc_varuna_cls_summary_t sum =
                classify(input(true, 5, true, executed ? 103 : 102), ops);

        EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[0].verdict);
        EXPECT_EQ(executed ? UCT_RC_VARUNA_VERDICT_EXECUTED :
                             UCT_RC_VARUNA_VERDICT_LOST, ops[1].verdict);
        EXPECT_EQ(UCT_RC_VARUNA_BASIS_PSN, ops[1].basis);
        EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[2].verdict);
        EXPECT_EQ(0u, sum.undecided);
        EXPECT_EQ(1u, sum.by_psn);
        EXPECT_EQ(0u, sum.conflicts);
    }
}

/*
 * A log write behind every fourth operation (UCX_RC_VARUNA_LOG_INTERVAL=4):
 * sn 12 and 16 wrote the log, L = 12 reached it. Up to 12 executed; 13-16
 * went behind the log write of 12, so only the PSN can tell; 17-20 went
 * behind the log write of 16, which never executed: lost.
 */
UCS_TEST_F(test_rc_varuna_classify, coalesced_log_leaves_the_rest_to_psn)
{
    for (int with_psn = 0; with_psn <= 1; ++with_psn) {
        std::vector<cls_op_t> ops;

        for (uint64_t sn = 10; sn <= 20; ++sn) {
            uint64_t log_before = (sn <= 12) ? 8 : (sn <= 16) ? 12 : 16;
            ops.push_back(op(sn, log_before, (sn == 15) ?
                                             UCT_RC_VARUNA_KIND_SEND :
                                             UCT_RC_VARUNA_KIND_WRITE,
                             (uint32_t)(100 + sn)));
        }
        /* the request of sn 14 executed, 15 did not */
        uct_rc_varuna_cls_summary_t sum =
                classify(input(true, 12, with_psn, 115), ops);

        for (size_t i = 0; i < ops.size(); ++i) {
            uint64_t sn = ops[i].sn;
            if (sn <= 12) {
                EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[i].verdict);
                EXPECT_EQ(UCT_RC_VARUNA_BASIS_LOG, ops[i].basis);
            } else if (sn > 16) {
                EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[i].verdict) << sn;
                EXPECT_EQ(UCT_RC_VARUNA_BASIS_LOG, ops[i].basis) << sn;
            } else if (sn == 15) {
                /* a SEND: resent, the receiver drops a duplicate */
                EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[i].verdict);
                EXPECT_EQ(UCT_RC_VARUNA_BASIS_IDEMPOTENT, ops[i].basis);
            } else if (with_psn) {
                EXPECT_EQ((sn <= 14) ? UCT_RC_VARUNA_VERDICT_EXECUTED :
                                       UCT_RC_VARUNA_VERDICT_LOST,
                          ops[i].verdict) << sn;
                EXPECT_EQ(UCT_RC_VARUNA_BASIS_PSN, ops[i].basis) << sn;
            } else {
                EXPECT_EQ(UCT_RC_VARUNA_VERDICT_UNDECIDED, ops[i].verdict)
                        << sn;
            }
        }
        EXPECT_EQ(with_psn ? 0u : 3u, sum.undecided);
        EXPECT_EQ(with_psn ? 3u : 0u, sum.by_psn);
        EXPECT_EQ(7u, sum.by_log);
        EXPECT_EQ(0u, sum.conflicts);
    }
}

/*
 * A SEND another endpoint would send again (the purge hands it back to
 * UCP, which sends it on another lane) is not dropped by the receiver as a
 * duplicate: left open by the log, it is decided by the PSN like a WRITE,
 * or stays undecided. A READ stays idempotent.
 */
UCS_TEST_F(test_rc_varuna_classify, send_without_dedup_needs_psn)
{
    for (int with_psn = 0; with_psn <= 1; ++with_psn) {
        std::vector<cls_op_t> ops;

        ops.push_back(op(13, 12, UCT_RC_VARUNA_KIND_SEND, 100));
        ops.push_back(op(14, 12, UCT_RC_VARUNA_KIND_READ, 101));
        ops.push_back(op(15, 12, UCT_RC_VARUNA_KIND_SEND, 102));
        uct_rc_varuna_cls_input_t in = input(true, 12, with_psn, 102);
        in.send_dedup                = false;
        uct_rc_varuna_cls_summary_t sum = classify(in, ops);

        if (with_psn) {
            EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[0].verdict);
            EXPECT_EQ(UCT_RC_VARUNA_BASIS_PSN, ops[0].basis);
            EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[2].verdict);
            EXPECT_EQ(UCT_RC_VARUNA_BASIS_PSN, ops[2].basis);
            EXPECT_EQ(0u, sum.undecided);
        } else {
            EXPECT_EQ(UCT_RC_VARUNA_VERDICT_UNDECIDED, ops[0].verdict);
            EXPECT_EQ(UCT_RC_VARUNA_VERDICT_UNDECIDED, ops[2].verdict);
            EXPECT_EQ(2u, sum.undecided);
        }
        EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[1].verdict);
        EXPECT_EQ(UCT_RC_VARUNA_BASIS_IDEMPOTENT, ops[1].basis);
        EXPECT_EQ(0u, sum.conflicts);
    }
}

/*
 * Issue 34: a purge knows up to which active message the receiver
 * delivered, and that decides every numbered SEND, whatever the PSN of the
 * lane its record names says: one that executed on the failed primary and
 * went again on the standby (whose copy never arrived) carries the
 * standby's PSNs. Anything else is decided as before; a SEND the log says
 * executed and the receiver did not deliver is a conflict.
 */
UCS_TEST_F(test_rc_varuna_classify, receiver_decides_numbered_sends)
{
    std::vector<cls_op_t> ops;

    /* sn 13: the SEND delivered on the primary, sent again on the
     * standby (PSN 200 there, the standby expects 200: "not executed");
     * sn 14: a WRITE on the standby, not executed; sn 15: a SEND never
     * delivered; sn 16, an unnumbered SEND (a grant), by the PSN */
    ops.push_back(op(13, 12, UCT_RC_VARUNA_KIND_SEND, 200));
    ops.back().numbered = 1;
    ops.back().am_seq   = 7;
    ops.push_back(op(14, 12, UCT_RC_VARUNA_KIND_WRITE, 201));
    ops.push_back(op(15, 12, UCT_RC_VARUNA_KIND_SEND, 202));
    ops.back().numbered = 1;
    ops.back().am_seq   = 8;
    ops.push_back(op(16, 12, UCT_RC_VARUNA_KIND_SEND, 199));
    uct_rc_varuna_cls_input_t in = input(true, 12, true, 200);
    in.send_dedup       = false;
    in.delivered_valid  = true;
    in.delivered_am_seq = 7;
    uct_rc_varuna_cls_summary_t sum = classify(in, ops);

    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[0].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_BASIS_DELIVERED, ops[0].basis);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[1].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_BASIS_PSN, ops[1].basis);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[2].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_BASIS_DELIVERED, ops[2].basis);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[3].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_BASIS_PSN, ops[3].basis);
    EXPECT_EQ(2u, sum.by_delivery);
    EXPECT_EQ(2u, sum.by_psn);
    EXPECT_EQ(0u, sum.conflicts);

    /* sequence numbers wrap: 0xfffffffe was delivered, 1 was not */
    ops[0].am_seq       = 0xfffffffeu;
    ops[2].am_seq       = 1;
    in.delivered_am_seq = 0xffffffffu;
    classify(in, ops);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[0].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[2].verdict);

    /* the log says sn 15 executed; the receiver never delivered it */
    in.log_sn           = 15;
    in.psn_valid        = false;
    in.delivered_am_seq = 0xfffffffeu;
    EXPECT_EQ(1u, classify(in, ops).conflicts);

    /* without the receiver's word, the standby's PSN hands the delivered
     * SEND back: what happened before issue 34's fix */
    in.log_sn          = 12;
    in.psn_valid       = true;
    in.delivered_valid = false;
    sum                = classify(in, ops);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[0].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_BASIS_PSN, ops[0].basis);
    EXPECT_EQ(0u, sum.by_delivery);
}

/* A log that claims more than the responder's PSN allows is a conflict. */
UCS_TEST_F(test_rc_varuna_classify, log_and_psn_disagreeing_is_counted)
{
    std::vector<cls_op_t> ops;

    ops.push_back(op(1, UCT_RC_VARUNA_KIND_WRITE, 10));
    ops.push_back(op(2, UCT_RC_VARUNA_KIND_WRITE, 12));
    uct_rc_varuna_cls_summary_t sum = classify(input(true, 2, true, 11), ops);

    EXPECT_EQ(1u, sum.conflicts);
}

/* An operation its QP refused (ibv_post_send failed) is lost whatever the
 * log and the PSN would say of an operation at its place: the undecided
 * one, with and without the peer's PSN, and without the log. Anything that
 * says it executed is a conflict. */
UCS_TEST_F(test_rc_varuna_classify, never_sent_is_lost)
{
    for (int known = 0; known < 4; ++known) {
        std::vector<cls_op_t> ops;

        ops.push_back(op(5, UCT_RC_VARUNA_KIND_WRITE, 100));
        ops.push_back(op(6, UCT_RC_VARUNA_KIND_ATOMIC, 102));
        ops.back().never_sent = 1;
        uct_rc_varuna_cls_summary_t sum =
                classify(input(known & 1, 5, known & 2, 102), ops);

        EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[1].verdict) << known;
        EXPECT_EQ(UCT_RC_VARUNA_BASIS_NEVER_SENT, ops[1].basis) << known;
        EXPECT_EQ(1u, sum.never_sent) << known;
        EXPECT_EQ(0u, sum.conflicts) << known;
    }

    std::vector<cls_op_t> ops;
    ops.push_back(op(6, UCT_RC_VARUNA_KIND_ATOMIC, 102));
    ops.back().never_sent = 1;
    EXPECT_EQ(1u, classify(input(true, 6, false, 0), ops).conflicts);
    EXPECT_EQ(1u, classify(input(false, 0, true, 103), ops).conflicts);
}

/* Without a log (UCX_RC_VARUNA_LOG=n) the PSN decides everything, and
 * without it only what is idempotent can go. */
UCS_TEST_F(test_rc_varuna_classify, without_log)
{
    std::vector<cls_op_t> ops;

    ops.push_back(op(1, UCT_RC_VARUNA_KIND_WRITE, 0xfffffe));
    ops.push_back(op(2, UCT_RC_VARUNA_KIND_READ, 0xffffff));
    ops.push_back(op(3, UCT_RC_VARUNA_KIND_SEND, 0x000001));

    uct_rc_varuna_cls_summary_t sum = classify(input(false, 0, true, 0), ops);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[0].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_EXECUTED, ops[1].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[2].verdict);
    EXPECT_EQ(3u, sum.by_psn);

    sum = classify(input(false, 0, false, 0), ops);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_UNDECIDED, ops[0].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[1].verdict);
    EXPECT_EQ(UCT_RC_VARUNA_BASIS_IDEMPOTENT, ops[1].basis);
    EXPECT_EQ(UCT_RC_VARUNA_VERDICT_LOST, ops[2].verdict);
    EXPECT_EQ(1u, sum.undecided);
}

/*
 * Random streams of requests, each followed by its 1-packet log write or,
 * in streams with a log interval of 2 to 5 or random log writes, only some
 * of them, with random sizes, a random initial PSN (the 24-bit wrap
 * included), cut after every possible packet: the responder executed
 * exactly the packets before the cut. The log word is the sn of the last
 * log write before the cut (or the one before the stream), the expected
 * PSN the PSN of the first packet after it. Every verdict must be the
 * truth, with no conflict and nothing undecided.
 */
UCS_TEST_F(test_rc_varuna_classify, every_cut_of_random_streams)
{
    static const uint32_t mtu = 1024;
    unsigned trials           = 0;

    for (unsigned stream = 0; stream < 200; ++stream) {
        unsigned count = 1 + ucs::rand() % 12;
        uint32_t psn0  = (stream % 4 == 0) ?
                         (0xffffff - ucs::rand() % 8) :
                         (ucs::rand() & UCT_RC_VARUNA_PSN_MASK);
        /* 0: random log writes; 1: every operation; 2-5: an interval */
        unsigned interval = stream % 6;
        std::vector<cls_op_t> ops;
        std::vector<unsigned> last_packet; /* of the request */
        std::vector<int> log_packet;       /* of its log write, or -1 */
        uint64_t log_before = 99;          /* written before the stream */
        unsigned packets    = 0;

        for (unsigned i = 0; i < count; ++i) {
            uct_rc_varuna_kind_t kind = (uct_rc_varuna_kind_t)(ucs::rand() % 4);
            uint32_t length           = ucs::rand() % (3 * mtu + 1);
            uint32_t npsn = uct_rc_varuna_psn_count(kind, length, mtu);
            uint64_t sn               = 100 + i;
            bool logged = (interval == 0) ? (ucs::rand() % 2) :
                          ((sn - log_before) >= interval);

            packets += npsn;
            ops.push_back(op(sn, log_before, kind,
                             uct_rc_varuna_psn_add(psn0, packets - 1)));
            last_packet.push_back(packets - 1);
            log_packet.push_back(logged ? (int)packets++ : -1);
            if (logged) {
                log_before = sn;
            }
        }

        for (unsigned cut = 0; cut <= packets; ++cut) {
            uint64_t log_sn = 99;
            for (unsigned i = 0; i < count; ++i) {
                if ((log_packet[i] >= 0) && ((unsigned)log_packet[i] < cut)) {
                    log_sn = ops[i].sn;
                }
            }

            /* in every other stream SENDs are not deduplicated (the
             * purge): they must then be judged exactly, as WRITEs */
            bool dedup                   = (stream / 6) % 2;
            std::vector<cls_op_t> cls    = ops;
            uct_rc_varuna_cls_input_t in = input(true, log_sn, true,
                                                 uct_rc_varuna_psn_add(psn0,
                                                                       cut));
            in.send_dedup                = dedup;
            uct_rc_varuna_cls_summary_t sum = classify(in, cls);
            ASSERT_EQ(0u, sum.conflicts) << "stream " << stream << " cut "
                                         << cut;
            ASSERT_EQ(0u, sum.undecided);
            for (unsigned i = 0; i < count; ++i) {
                /* executed: its last request packet is before the cut */
                bool executed = last_packet[i] < cut;
                if ((cls[i].kind == UCT_RC_VARUNA_KIND_READ) ||
                    ((cls[i].kind == UCT_RC_VARUNA_KIND_SEND) && dedup)) {
                    /* resending is allowed for these even when executed:
                     * but never called lost by the log if it executed */
                    if (cls[i].basis == UCT_RC_VARUNA_BASIS_LOG) {
                        ASSERT_EQ(executed, cls[i].verdict ==
                                            UCT_RC_VARUNA_VERDICT_EXECUTED);
                    }
                    continue;
                }
                ASSERT_EQ(executed ? UCT_RC_VARUNA_VERDICT_EXECUTED :
                                     UCT_RC_VARUNA_VERDICT_LOST,
                          cls[i].verdict)
                        << "stream " << stream << " cut " << cut << " op "
                        << i << " kind " << (int)cls[i].kind;
            }
            ++trials;
        }
    }
    UCS_TEST_MESSAGE << trials << " cuts checked";
}
