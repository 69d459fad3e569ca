/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef RC_VARUNA_TEST_FAILOVER_HARNESS_H
#define RC_VARUNA_TEST_FAILOVER_HARNESS_H

#include "softib_control.h"

#include <uct/uct_test.h>
#include <common/test_helpers.h>

extern "C" {
#include <uct/ib/varuna/rc_varuna.h>
#include <uct/ib/base/ib_device.h>
#include <ucs/arch/atomic.h>
#include <ucs/sys/string.h>
#include <ucs/datastruct/string_buffer.h>
#include <ucs/vfs/base/vfs_obj.h>
}

#include <pthread.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>


/* what a stalled re-protection leaves behind, for the failure message */
static inline std::string rp_state_of(const uct_rc_varuna_ep_t *ep)
{
    std::ostringstream os;

    os << "active " << (int)ep->active << " lanes " << (int)ep->lane[0].state
       << "/" << (int)ep->lane[1].state << " err " << ep->lane[0].err_count
       << "/" << ep->lane[1].err_count << " fo " << (int)ep->fo.state
       << " initiator " << (int)ep->rp.initiator << " attempt "
       << ep->rp.attempt << " messages waiting " << (int)ep->ctrl.msgq_count
       << " listed " << (int)ep->rp.listed << " grow " << (int)ep->gr.state
       << " credits " << ep->tx.wr_limit;
    return os.str();
}


/*
 * The harness of the failover tests (DESIGN.md section 5, guarantees
 * G1-G6), shared by the fault-injection matrix (test_rc_varuna_failover.cc)
 * and the randomized trials (test_rc_varuna_random.cc).
 *
 * Two endpoints whose four ports are all different: the sender's primary
 * and standby, the receiver's primary and standby. A fault on the primary
 * path is set up with softib before the sender posts a window of
 * operations, so it strikes at a chosen packet:
 *   REQ_PORT_DOWN   the sender's port stops passing anything after packet
 *                   k, then goes down (PORT_ERR at the sender)
 *   RESP_PORT_DOWN  the receiver's port takes nothing after packet k, then
 *                   goes down (PORT_ERR at the receiver, which tells the
 *                   sender)
 *   REQ_DROP        requests after packet k vanish; no event: the sender's
 *                   retries run out
 *   RESP_DROP       only acknowledgements and responses after packet k
 *                   vanish: everything executes, nothing is confirmed
 * Then: more operations after the failure, a flush, and the checks.
 * With reverse traffic (plan_reverse()), the receiver sends too, as in an
 * MPI job (issue 14): after each operation of the plan, one of its own
 * towards the sender, alternately an active message and a fetch-and-add of
 * 1 on a word of the sender's; each must arrive once, in order, and the
 * fetch-adds must return 0, 1, 2, ... A plan
 * (one op_ctx per operation: type, length, target, operands) is simulated
 * in sequence order into a shadow of the receiver's memory, which gives
 * what each operation must leave and return:
 *   G1  the receiver's memory equals the shadow byte for byte (a repeated
 *       WRITE over a later one, an atomic run twice or never, all show);
 *       every active message arrived exactly once, in order (G6), with its
 *       payload intact
 *   G2  every completion fired exactly once, callbacks in posting order,
 *       with UCS_OK (or, for a fetching atomic that executed while its
 *       response was lost, the documented UCT_RC_VARUNA_STATUS_RESULT_LOST);
 *       the flush completed; the endpoint never failed
 *   G3  GET data and fetched results equal the shadow's
 *   G4  no QP was created or connected
 * Each violation is recorded with its guarantee; the caller decides
 * whether it fails the test at once or is counted.
 */
class test_rc_varuna_fo_base : public uct_test {
public:
    enum op_type {
        PUT_SHORT, PUT_BCOPY, PUT_ZCOPY, GET_BCOPY, GET_ZCOPY,
        ADD, FADD, CSWAP, AM_SHORT, AM_BCOPY, AM_ZCOPY,
        OP_LAST,
        MIXED = OP_LAST
    };

    enum fault {
        REQ_PORT_DOWN, RESP_PORT_DOWN, REQ_DROP, RESP_DROP, FAULT_LAST
    };

    /* what a violation breaks */
    enum guarantee {
        G1_ONCE, G2_COMPLETION, G3_RESULT, G4_NO_REBUILD, G_LAST
    };

    static const char *op_name(int t)
    {
        static const char *names[] = {
            "put_short", "put_bcopy", "put_zcopy", "get_bcopy", "get_zcopy",
            "add", "fadd", "cswap", "am_short", "am_bcopy", "am_zcopy",
            "mixed"
        };
        return names[t];
    }

    static const char *fault_name(int f)
    {
        static const char *names[] = {
            "req_port_down", "resp_port_down", "req_drop", "resp_drop"
        };
        return names[f];
    }

    static const char *guarantee_name(int g)
    {
        static const char *names[] = {"G1", "G2", "G3", "G4"};
        return names[g];
    }

    test_rc_varuna_fo_base() : m_s(NULL), m_r(NULL), m_rsc(NULL),
                               m_num_ops(0), m_rev_posted(0),
                               m_ep_errors(0), m_err_take_over(false),
                               m_sib_qp_created(0),
                               m_sib_qp_connected(0), m_fault(-1),
                               m_results_lost_checked(0),
                               m_resent_checked(0),
                               m_log_interval_set(false),
                               m_failback_hold_set(false),
                               m_peer_thread_running(false),
                               m_peer_thread_stop(false) {}

    /* the test's own settings come first (its constructor), init's
     * defaults after: note which ones it made */
    virtual void set_config(const std::string &config_str = "");

    virtual void init();

    virtual void cleanup();

protected:
    enum {
        SLOT      = 8192,   /* bytes of memory per operation and area */
        LARGE     = 6000,   /* two packets at MTU 4096 */
        NUM_WORDS = 4,      /* atomic words at the receiver */
        AM_ID     = 7,
        AM_ID_REV = 8       /* reverse traffic's active messages */
    };

    /* One operation of the reverse traffic, receiver to sender */
    struct rev_op {
        uct_completion_t        comp;
        int                     type;      /* AM_SHORT or FADD */
        int                     calls;
        ucs_status_t            status;
        uint64_t                result;
    };

    struct port {
        std::string dev;
        unsigned    num;

        bool operator==(const port &other) const
        {
            return (dev == other.dev) && (num == other.num);
        }
    };

    /* One operation, what it does, and what it must produce */
    struct op_ctx {
        uct_completion_t        comp;
        test_rc_varuna_fo_base  *test;
        unsigned                index;
        int                     type;
        size_t                  length;    /* payload bytes */
        unsigned                slot;      /* put: target; get: source */
        size_t                  offset;    /* within the slot */
        unsigned                word;      /* atomics */
        uint64_t                operand;   /* add value, cswap swap value */
        uint64_t                compare;   /* cswap */
        uint64_t                expected;  /* a fetching atomic's result */
        /* where it went: the lane whose PSNs it took when posted (-1:
         * none yet), and those PSNs, its log write's included if it wrote
         * the log (log_psns 1); its sequence number and the last log write
         * posted before it (what the classification knows of it) */
        int                     lane;
        uint32_t                psn_start;
        uint32_t                psn_end;
        unsigned                log_psns;
        uint64_t                sn;
        uint64_t                log_before;
        /* what happened */
        int                     calls;
        ucs_status_t            status;
        uint64_t                result;
    };

    struct outcome {
        unsigned violations[G_LAST];
        unsigned duplicates;   /* extra executions seen (not exact mode) */
        unsigned long am_unordered; /* the receiver's count of active
                                       messages delivered out of sequence
                                       (blanket recovery) */
        unsigned results_lost;
        unsigned failovers;
        unsigned fault_misses; /* a fault without the failover it must
                                  cause (the randomized trials) */

        unsigned total() const
        {
            unsigned sum = 0;
            for (int g = 0; g < G_LAST; ++g) {
                sum += violations[g];
            }
            return sum;
        }
    };

    /* A time of a case that races RC's retries and the watchdog, in ms,
     * scaled by RC_VARUNA_TIME_SCALE (own-gtest-valgrind.sh sets 20:
     * valgrind runs the programs and softib 20 to 50 times slower, and
     * the timeouts must keep their proportions to what the test waits),
     * else by UCX's test time multiplier */
    static double scaled_ms(double ms)
    {
        const char *env = getenv("RC_VARUNA_TIME_SCALE");
        double scale    = (env != NULL) ? atof(env) : 0;

        return ms * ((scale > 0) ? scale : ucs::test_time_multiplier());
    }

    static uct_rc_varuna_ep_t *vep(entity *e)
    {
        return ucs_derived_of(e->ep(0), uct_rc_varuna_ep_t);
    }

    /* A failover of the endpoint is between detection and promotion: new
     * operations wait (the transport's uct_rc_varuna_ep_fo_fencing) */
    static bool fencing(entity *e)
    {
        return (vep(e)->fo.state >= UCT_RC_VARUNA_FO_DRAIN) &&
               (vep(e)->fo.state <= UCT_RC_VARUNA_FO_RESEND);
    }

    static uct_rc_varuna_iface_t *viface(entity *e)
    {
        return ucs_derived_of(e->iface(), uct_rc_varuna_iface_t);
    }

    /* A counter of the interface as a user reads it: the file
     * uct/worker/W/iface/I/failover/NAME of UCX's VFS (ucx_vfs mounts the
     * same tree); -1 if it is not there */
    static long vfs_counter(entity *e, const char *name);

    static port side_port(entity *e, unsigned side);

    static ucs_status_t err_handler(void *arg, uct_ep_h ep,
                                    ucs_status_t status);

    /* data: the operation's index, then its payload */
    static ucs_status_t am_handler(void *arg, void *data, size_t length,
                                   unsigned flags);

    /* reverse traffic: data is the operation's index */
    static ucs_status_t rev_am_handler(void *arg, void *data, size_t length,
                                       unsigned flags);

    static void rev_comp_cb(uct_completion_t *comp)
    {
        rev_op *op = ucs_container_of(comp, rev_op, comp);

        ++op->calls;
        op->status = comp->status;
    }

    static void comp_cb(uct_completion_t *comp)
    {
        op_ctx *ctx = ucs_container_of(comp, op_ctx, comp);

        ++ctx->calls;
        ctx->status = comp->status;
        ctx->test->m_comp_order.push_back(ctx->index);
    }

    static void flush_cb(uct_completion_t *comp)
    {
    }

    /* A failover that finds fetching atomics executed with their responses
     * lost warns about them: expected here, they are checked one by one. */
    static ucs_log_func_rc_t
    expected_warns_logger(const char *file, unsigned line,
                          const char *function, ucs_log_level_t level,
                          const ucs_log_component_config_t *comp_conf,
                          const char *message, va_list ap);

    entity *new_entity(const resource &rsc);

    /* A receiver whose primary and standby ports are neither of the
     * sender's, so a fault on one side's port is that side's alone. */
    bool create_pair(bool connect = true);

    /* Connect endpoints 0 of a pair made by create_pair(false): the
     * status of each side's uct_ep_connect_to_ep, sender's first */
    std::pair<ucs_status_t, ucs_status_t> connect_eps();

    /* What verify() compares the transport's and softib's QP counts and
     * the CQ credits against: as they are now */
    void note_baseline();

    /* Progress every entity, but the receiver while its own thread does
     * (peer_thread_start()) */
    unsigned progress() const;

    /* The receiver progressed by a thread of its own, as a peer process
     * would be: from here to peer_thread_stop() the sender's loops leave it
     * alone, so the receiver's part of a failover runs beside the sender's
     * instead of inside the sender's progress calls. The receiver's
     * callbacks write only what the receiver owns (the AM records; the
     * endpoint error count, atomically), which the test reads after
     * peer_thread_stop(). softib serializes its engine itself. */
    void peer_thread_start();

    void peer_thread_stop();

    static void *peer_thread_main(void *arg);

    void destroy_pair();

    /* Receiver: a put area and a get area of num_ops slots each, then the
     * atomic words; sender: a slot per operation for its source or its
     * GET destination. */
    void setup_pair(unsigned num_ops, bool connect = true);

    /* A pair for the cases that race RC's retries and the watchdog: RC's
     * retries rc_timeout_ms apart, 7 of them, the watchdog every
     * watchdog_ms (both scaled, see scaled_ms()); num_ops operations of
     * the mixed plan */
    void setup_slow_pair(double rc_timeout_ms, double watchdog_ms,
                         unsigned num_ops);

    size_t dst_length() const
    {
        return m_num_ops * SLOT * 2 + NUM_WORDS * sizeof(uint64_t);
    }

    /* The receiver's memory as before any operation */
    void clear_memory();

    static uint64_t seed(uint64_t i)
    {
        return 0x1000 + i * 0x10001ull;
    }

    /* A pattern that differs at every 8-byte word, any length */
    static void fill(void *buf, size_t length, uint64_t s);

    static bool check(const void *buf, size_t length, uint64_t s);

    char *dst_slot(unsigned i) const
    {
        return (char*)m_dst->ptr() + i * SLOT;
    }

    char *get_src(unsigned i) const
    {
        return (char*)m_dst->ptr() + (m_num_ops + i) * SLOT;
    }

    uint64_t *word(unsigned w) const
    {
        return (uint64_t*)((char*)m_dst->ptr() + m_num_ops * SLOT * 2) + w;
    }

    uint64_t remote(const void *p) const
    {
        return m_dst->addr() + ((const char*)p - (const char*)m_dst->ptr());
    }

    char *src_slot(unsigned i) const
    {
        return (char*)m_src->ptr() + i * SLOT;
    }

    /* where a put writes or a get reads */
    char *target(const op_ctx &c) const
    {
        return (is_get(c.type) ? get_src(c.slot) : dst_slot(c.slot)) +
               c.offset;
    }

    static bool has_comp(int type)
    {
        return (type == PUT_ZCOPY) || (type == GET_BCOPY) ||
               (type == GET_ZCOPY) || (type == FADD) || (type == CSWAP) ||
               (type == AM_ZCOPY);
    }

    static bool is_am(int type)
    {
        return (type == AM_SHORT) || (type == AM_BCOPY) || (type == AM_ZCOPY);
    }

    static bool is_get(int type)
    {
        return (type == GET_BCOPY) || (type == GET_ZCOPY);
    }

    static bool is_put(int type)
    {
        return (type == PUT_SHORT) || (type == PUT_BCOPY) ||
               (type == PUT_ZCOPY);
    }

    static bool is_atomic(int type)
    {
        return (type == ADD) || (type == FADD) || (type == CSWAP);
    }

    struct pack_arg {
        unsigned index;
        size_t   length;   /* of the payload */
        bool     am;       /* the index first */
    };

    static size_t pack_cb(void *dest, void *arg);

    struct unpack_arg {
        char *dest;
    };

    static void unpack_cb(void *arg, const void *data, size_t length)
    {
        memcpy(static_cast<unpack_arg*>(arg)->dest, data, length);
    }

    uct_iov_t iov(void *buffer, size_t length, uct_mem_h memh);

    /* Post operation i; UCS_ERR_NO_RESOURCE is the caller's to retry */
    ucs_status_t post_op(unsigned i);

    /* m_ops sized for num_ops, nothing planned yet */
    void plan_reset(unsigned num_ops);

    /* The matrix's plan: num_ops operations of one type (or a fixed mix),
     * each on its own slot, adds of 1, a chain of compare-and-swaps. */
    void plan(int type, unsigned num_ops);

    /* Run the plan in sequence order on a shadow of the receiver's memory
     * as clear_memory() leaves it: what it must hold in the end, and each
     * fetching atomic's result. Fills the sources of puts and AMs. */
    void plan_finish();

    /* A violation of guarantee g (counted; see report_problems()) */
    void problem(int g, const std::string &msg)
    {
        m_found.violations[g]++;
        m_problems.push_back(std::string(guarantee_name(g)) + ": " + msg);
    }

    /* Every violation found so far, each as a test failure */
    void fail_on_problems(const std::string &what);

    /* Reverse traffic: count operations from the receiver, alternately an
     * active message and a fetch-and-add of 1 on a word of the sender's.
     * Call after plan(); post_all() posts them, one after each of the
     * plan's. */
    void plan_reverse(unsigned count);

    ucs_status_t post_reverse_op(unsigned j);

    /* Post reverse operations until count of them are out */
    bool post_reverse(unsigned count, ucs_time_t deadline);

    /* Post operation i as post_op does, and note the PSNs it took on the
     * lane it went out on (verify_resent) */
    ucs_status_t post_op_noted(unsigned i);

    /* Post operations [first, last). Returns false (a G2 problem) if an
     * operation could not be posted before the deadline or failed. */
    bool post_all(unsigned first, unsigned last, ucs_time_t deadline);

    /* Drop the packets of these classes that pass port p in direction
     * dir (of one QP there, or any with qpn 0), after the first skip of
     * them; returns the rule's id */
    uint32_t drop(const port &p, unsigned dir, unsigned classes,
                  uint64_t skip = 0, uint32_t qpn = 0);

    /* The fault on the primary path, starting after packet k */
    void inject(int f, unsigned k);

    void take_down(int f);

    /* Flush the sender and wait until every AM has arrived. Returns false
     * (a G2 problem) if the flush did not complete: the pair must not be
     * used any more. */
    bool finish(ucs_time_t deadline);

    /* Where the request just posted on lane l of e went: its PSNs, and
     * whether it wrote the log (the lane's last log write moved) */
    static void note_posted(entity *e, unsigned l, uint32_t psn_before,
                            uint64_t log_sn_before, op_ctx &c);

    /* Flush one side's endpoint and wait for it. Returns false (a G2
     * problem) if the flush did not complete: the pair must not be used
     * any more. */
    bool flush_ep(entity *e, const std::string &what, ucs_time_t deadline);

    /* The reverse traffic: each active message once and in order, each
     * fetch-add once, returning how many ran before it (or the documented
     * status when its response was lost with the link), the word exact. */
    void verify_reverse(bool expect_exact, outcome &out);

    void verify_completions(bool expect_exact, outcome &out);

    /* The receiver's memory against the shadow, area by area */
    void verify_memory(bool expect_exact, outcome &out);

    /* the puts that cover byte b of put slot s */
    std::string writers(unsigned s, size_t b) const;

    bool only_ones(unsigned w) const;

    bool only_cswaps(unsigned w) const;

    /* each AM once, in order, intact */
    void verify_am(bool expect_exact, outcome &out);

    /* Work requests of one side's operations not completed yet */
    static unsigned op_wrs(entity *e);

    /* Every work request gives back its send credit and its CQ entry
     * exactly once, however it ended (completed, flushed, acknowledged
     * without a completion of its own before a failover). A leak is
     * silent until an endpoint or interface runs dry and stalls (issue
     * 14), so it is checked here, on both sides, once they are quiet:
     * operations take send credits, they and control requests take CQ
     * entries. */
    void verify_credits(entity *e, int side, const char *who);

    /*
     * Resend only what was lost: what the failover sent again must be
     * exactly the requests the receiver never executed on the failed
     * lane, plus executed READs read again. The truth is the receiver's
     * QP: its expected PSN once fenced (in the error state, so final) says
     * how far it executed; the receiver reads it from its QP when it fences
     * and sends it over (the QP itself may be reset by re-protection by
     * the time the test looks). Each operation's PSNs were noted when it
     * was posted, so this does not use the transport's classification.
     * Checked for one failover of the primary lane after any fault.
     */
    bool lost_on_primary(const op_ctx &c, uint32_t rq_psn);

    /* One failover of the primary lane after an injected fault, with the
     * receiver's expected PSN known: what verify_resent() and
     * verify_results_lost() judge by */
    bool one_primary_failover_with_psn() const;

    void verify_resent();

    /* A fetched result is given up (UCT_RC_VARUNA_STATUS_RESULT_LOST)
     * only for a fetching atomic the receiver executed on the failed lane,
     * whose response never came: not for one it never executed, which is
     * sent again and fetches its result on the standby, nor for one sent
     * on the standby (test audit item 7: any RESULT_LOST was accepted).
     * Judged by the receiver's expected PSN, as verify_resent(). */
    void verify_results_lost(const outcome &out);

    /* Everything the receiver holds and every completion, against the
     * plan. With expect_exact, anything else is a violation; without it
     * (blanket), duplicates are counted instead. */
    outcome verify(bool expect_exact);

    softib_control                  m_softib;
    entity                          *m_s, *m_r;
    const resource                  *m_rsc;
    unsigned                        m_num_ops;
    ucs::auto_ptr<mapped_buffer>    m_dst, m_src;
    std::vector<op_ctx>             m_ops;
    std::vector<pack_arg>           m_pack;
    std::vector<unpack_arg>         m_unpack;
    std::vector<uint64_t>           m_am_hdr;
    std::vector<uint64_t>           m_am_rx;
    std::vector<uint64_t>           m_am_bad;
    std::vector<rev_op>             m_rev;
    size_t                          m_rev_posted;
    std::vector<uint64_t>           m_rev_am_rx;
    ucs::auto_ptr<mapped_buffer>    m_rev_word;
    std::vector<unsigned>           m_comp_order;
    std::vector<char>               m_shadow;
    std::vector<std::string>        m_problems;
    outcome                         m_found;
    uint32_t                        m_ep_errors;
    volatile ucs_status_t           m_ep_error_status;
    bool                            m_err_take_over;
    unsigned long                   m_qp_created[2], m_qp_conn[2];
    int64_t                         m_sib_qp_created, m_sib_qp_connected;
    int                             m_fault;
    uct_completion_t                m_flush_comp[2]; /* sender, receiver */
    std::vector<op_ctx>             m_flush_reqs;  /* the sender's flush
                                                      requests (lane, PSNs) */
    unsigned                        m_results_lost_checked; /* trials
                                        whose given-up results were judged */
    unsigned                        m_resent_checked; /* trials whose
                                                         resends were
                                                         checked */
    int                             m_cq_avail[2];
    bool                            m_log_interval_set;
    bool                            m_failback_hold_set;
    pthread_t                       m_peer_thread;
    bool                            m_peer_thread_running;
    volatile bool                   m_peer_thread_stop;
};

#endif
