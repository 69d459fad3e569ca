/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include "softib_control.h"

#include <uct/uct_test.h>
#include <common/test_helpers.h>

extern "C" {
#include <uct/ib/varuna/rc_varuna.h>
#include <uct/ib/base/ib_device.h>
#include <ucs/sys/string.h>
}

#include <algorithm>
#include <dlfcn.h>
#include <set>
#include <sstream>


/*
 * Failover under injected faults (DESIGN.md section 5, guarantees G1-G6).
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
 * Then: more operations after the failure, a flush, and the checks: the
 * receiver's memory holds exactly what each operation should have left
 * (counters incremented exactly once per add), every active message was
 * delivered exactly once and in order, every completion fired exactly once
 * with UCS_OK and the right result, or, for a fetching atomic that
 * executed while its response was lost, with the documented
 * UCT_RC_VARUNA_STATUS_RESULT_LOST, and no QP was created or connected.
 */
class test_rc_varuna_failover : public uct_test {
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

    test_rc_varuna_failover() : m_s(NULL), m_r(NULL), m_rsc(NULL) {}

    virtual void init()
    {
        uct_test::init();
        if (!m_softib.error().empty()) {
            UCS_TEST_SKIP_R("no softib control: " + m_softib.error());
        }
        m_softib.reset();
        ucs_log_push_handler(expected_warns_logger);

        /* detection by retry exhaustion within ~25 ms */
        modify_config("RC_TIMEOUT", "4ms");
        modify_config("RC_RETRY_COUNT", "4");
        modify_config("REPROTECT_INTERVAL", "5ms");
    }

    virtual void cleanup()
    {
        destroy_pair();
        if (m_softib.error().empty()) {
            m_softib.reset();
            ucs_log_pop_handler();
        }
        uct_test::cleanup();
    }

protected:
    static const unsigned WINDOW    = 6;    /* operations before the fault */
    static const unsigned AFTER     = 4;    /* and after it */
    static const unsigned NUM_OPS   = WINDOW + AFTER;
    static const size_t   SLOT      = 8192;
    static const size_t   LARGE     = 6000; /* two packets at MTU 4096 */
    static const uint8_t  AM_ID     = 7;

    struct port {
        std::string dev;
        unsigned    num;

        bool operator==(const port &other) const
        {
            return (dev == other.dev) && (num == other.num);
        }
    };

    /* One operation and what it must produce */
    struct op_ctx {
        uct_completion_t        comp;
        test_rc_varuna_failover *test;
        unsigned                index;
        int                     type;
        unsigned                ordinal;   /* among ops of its atomic word */
        int                     calls;
        ucs_status_t            status;
        uint64_t                result;
    };

    static uct_rc_varuna_ep_t *vep(entity *e)
    {
        return ucs_derived_of(e->ep(0), uct_rc_varuna_ep_t);
    }

    static uct_rc_varuna_iface_t *viface(entity *e)
    {
        return ucs_derived_of(e->iface(), uct_rc_varuna_iface_t);
    }

    static port side_port(entity *e, unsigned side)
    {
        uct_rc_varuna_iface_t *iface = viface(e);
        uct_rc_varuna_md_t *md       = ucs_derived_of(iface->super.super.super.md,
                                                      uct_rc_varuna_md_t);
        uct_ib_device_t *dev         = iface->side[side].separate ?
                                       &md->standby_md->dev : &md->super.dev;
        port p;

        p.dev = uct_ib_device_name(dev);
        p.num = iface->side[side].port_num;
        return p;
    }

    static ucs_status_t err_handler(void *arg, uct_ep_h ep,
                                    ucs_status_t status)
    {
        test_rc_varuna_failover *self =
                reinterpret_cast<test_rc_varuna_failover*>(arg);

        ++self->m_ep_errors;
        return UCS_OK;
    }

    static ucs_status_t am_handler(void *arg, void *data, size_t length,
                                   unsigned flags)
    {
        test_rc_varuna_failover *self =
                reinterpret_cast<test_rc_varuna_failover*>(arg);
        uint64_t index;

        memcpy(&index, data, sizeof(index));
        self->m_am_rx.push_back(index);
        return UCS_OK;
    }

    static void comp_cb(uct_completion_t *comp)
    {
        op_ctx *ctx = ucs_container_of(comp, op_ctx, comp);

        ++ctx->calls;
        ctx->status = comp->status;
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
                          const char *message, va_list ap)
    {
        if ((level == UCS_LOG_LEVEL_WARN) &&
            (strstr(message, "results were lost") != NULL)) {
            return UCS_LOG_FUNC_RC_STOP;
        }
        return UCS_LOG_FUNC_RC_CONTINUE;
    }

    entity *new_entity(const resource &rsc)
    {
        uct_iface_params_t params;

        params.field_mask        = UCT_IFACE_PARAM_FIELD_RX_HEADROOM     |
                                   UCT_IFACE_PARAM_FIELD_OPEN_MODE       |
                                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER     |
                                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
        params.rx_headroom       = 0;
        params.open_mode         = UCT_IFACE_OPEN_MODE_DEVICE;
        params.err_handler       = err_handler;
        params.err_handler_arg   = this;
        params.err_handler_flags = 0;
        return new entity(rsc, m_iface_config, &params, m_md_config);
    }

    /* A receiver whose primary and standby ports are neither of the
     * sender's, so a fault on one side's port is that side's alone. */
    bool create_pair()
    {
        std::vector<const resource*> rscs = enum_resources("rc_varuna");

        m_s = new_entity(*GetParam());
        m_entities.push_back(m_s);
        if (!viface(m_s)->has_standby) {
            return false;
        }

        port sp[2] = {side_port(m_s, 0), side_port(m_s, 1)};
        for (size_t i = 0; (m_rsc == NULL) && (i < rscs.size()); ++i) {
            entity *r = new_entity(*rscs[i]);
            port rp[2] = {side_port(r, 0), side_port(r, 1)};
            bool ok    = viface(r)->has_standby;

            for (int a = 0; a < 2; ++a) {
                for (int b = 0; b < 2; ++b) {
                    ok = ok && !(sp[a] == rp[b]);
                }
            }
            delete r;
            if (ok) {
                m_rsc = rscs[i];
            }
        }
        if (m_rsc == NULL) {
            return false;
        }

        m_r = new_entity(*m_rsc);
        m_entities.push_back(m_r);
        m_s->connect(0, *m_r, 0);
        m_r->connect(0, *m_s, 0);
        uct_iface_set_am_handler(m_r->iface(), AM_ID, am_handler, this, 0);
        uct_iface_set_am_handler(m_s->iface(), AM_ID, am_handler, this, 0);

        m_ep_errors = 0;
        m_am_rx.clear();
        m_qp_created[0] = viface(m_s)->fo.qp_created;
        m_qp_created[1] = viface(m_r)->fo.qp_created;
        m_qp_conn[0]    = viface(m_s)->fo.qp_connected;
        m_qp_conn[1]    = viface(m_r)->fo.qp_connected;
        return true;
    }

    void destroy_pair()
    {
        m_dst.reset();
        m_src.reset();
        FOR_EACH_ENTITY(iter) {
            (*iter)->destroy_eps();
        }
        m_entities.clear();
        m_s = m_r = NULL;
    }

    void setup_pair()
    {
        if (!create_pair()) {
            UCS_TEST_SKIP_R("no resource with four distinct ports");
        }

        /* receiver: a slot per operation, a region gets read from, and the
         * three atomic words; sender: zcopy sources and get destinations */
        m_dst.reset(new mapped_buffer(NUM_OPS * SLOT * 2 + 64, 0, *m_r));
        m_src.reset(new mapped_buffer(NUM_OPS * SLOT, 0, *m_s));
        memset(m_dst->ptr(), 0, m_dst->length());
        memset(m_src->ptr(), 0, m_src->length());
        for (unsigned i = 0; i < NUM_OPS; ++i) {
            fill(get_src(i), LARGE, seed(i) ^ 0xabcdef);
        }
    }

    static uint64_t seed(unsigned i)
    {
        return 0x1000 + i * 0x10001ull;
    }

    static void fill(void *buf, size_t length, uint64_t s)
    {
        uint64_t *p = static_cast<uint64_t*>(buf);

        for (size_t i = 0; i < length / sizeof(uint64_t); ++i) {
            p[i] = s + i * 0x9e3779b97f4a7c15ull;
        }
    }

    static bool check(const void *buf, size_t length, uint64_t s)
    {
        const uint64_t *p = static_cast<const uint64_t*>(buf);

        for (size_t i = 0; i < length / sizeof(uint64_t); ++i) {
            if (p[i] != s + i * 0x9e3779b97f4a7c15ull) {
                return false;
            }
        }
        return true;
    }

    char *dst_slot(unsigned i) const
    {
        return (char*)m_dst->ptr() + i * SLOT;
    }

    char *get_src(unsigned i) const
    {
        return (char*)m_dst->ptr() + (NUM_OPS + i) * SLOT;
    }

    uint64_t *word(unsigned w) const /* 0: add, 1: fadd, 2: cswap */
    {
        return (uint64_t*)((char*)m_dst->ptr() + NUM_OPS * SLOT * 2) + w;
    }

    uint64_t remote(const void *p) const
    {
        return m_dst->addr() + ((const char*)p - (const char*)m_dst->ptr());
    }

    char *src_slot(unsigned i) const
    {
        return (char*)m_src->ptr() + i * SLOT;
    }

    struct pack_arg {
        unsigned index;
        size_t   length;
    };

    static size_t pack_cb(void *dest, void *arg)
    {
        pack_arg *a = static_cast<pack_arg*>(arg);

        fill(dest, a->length, seed(a->index));
        if (a->length == LARGE + sizeof(uint64_t)) {
            /* an AM: the index first */
            uint64_t index = a->index;
            memcpy(dest, &index, sizeof(index));
        }
        return a->length;
    }

    struct unpack_arg {
        char *dest;
    };

    static void unpack_cb(void *arg, const void *data, size_t length)
    {
        memcpy(static_cast<unpack_arg*>(arg)->dest, data, length);
    }

    uct_iov_t iov(void *buffer, size_t length, uct_mem_h memh)
    {
        uct_iov_t v;

        v.buffer = buffer;
        v.length = length;
        v.memh   = memh;
        v.stride = 0;
        v.count  = 1;
        return v;
    }

    /* Post operation i; UCS_ERR_NO_RESOURCE is the caller's to retry */
    ucs_status_t post_op(unsigned i)
    {
        op_ctx &c   = m_ops[i];
        uct_ep_h ep = m_s->ep(0);
        uint64_t value;
        uct_iov_t v;
        ssize_t len;

        c.comp.func   = comp_cb;
        c.comp.count  = 1;
        c.comp.status = UCS_OK;

        switch (c.type) {
        case PUT_SHORT:
            value = seed(i);
            return uct_ep_put_short(ep, &value, sizeof(value),
                                    remote(dst_slot(i)), m_dst->rkey());
        case PUT_BCOPY:
            m_pack[i].index  = i;
            m_pack[i].length = LARGE;
            len = uct_ep_put_bcopy(ep, pack_cb, &m_pack[i],
                                   remote(dst_slot(i)), m_dst->rkey());
            return (len < 0) ? (ucs_status_t)len : UCS_OK;
        case PUT_ZCOPY:
            fill(src_slot(i), LARGE, seed(i));
            v = iov(src_slot(i), LARGE, m_src->memh());
            return uct_ep_put_zcopy(ep, &v, 1, remote(dst_slot(i)),
                                    m_dst->rkey(), &c.comp);
        case GET_BCOPY:
            m_unpack[i].dest = src_slot(i);
            return uct_ep_get_bcopy(ep, unpack_cb, &m_unpack[i], LARGE,
                                    remote(get_src(i)), m_dst->rkey(),
                                    &c.comp);
        case GET_ZCOPY:
            v = iov(src_slot(i), LARGE, m_src->memh());
            return uct_ep_get_zcopy(ep, &v, 1, remote(get_src(i)),
                                    m_dst->rkey(), &c.comp);
        case ADD:
            return uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, 1,
                                        remote(word(0)), m_dst->rkey());
        case FADD:
            return uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 1, &c.result,
                                         remote(word(1)), m_dst->rkey(),
                                         &c.comp);
        case CSWAP:
            return uct_ep_atomic_cswap64(ep, c.ordinal, c.ordinal + 1,
                                         remote(word(2)), m_dst->rkey(),
                                         &c.result, &c.comp);
        case AM_SHORT:
            value = seed(i);
            return uct_ep_am_short(ep, AM_ID, i, &value, sizeof(value));
        case AM_BCOPY:
            m_pack[i].index  = i;
            m_pack[i].length = LARGE + sizeof(uint64_t);
            len = uct_ep_am_bcopy(ep, AM_ID, pack_cb, &m_pack[i], 0);
            return (len < 0) ? (ucs_status_t)len : UCS_OK;
        case AM_ZCOPY:
            value = i;
            fill(src_slot(i), LARGE, seed(i));
            v = iov(src_slot(i), LARGE, m_src->memh());
            m_am_hdr[i] = i;
            return uct_ep_am_zcopy(ep, AM_ID, &m_am_hdr[i], sizeof(uint64_t),
                                   &v, 1, 0, &c.comp);
        default:
            return UCS_ERR_INVALID_PARAM;
        }
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

    void plan(int type)
    {
        unsigned ordinal[3] = {0, 0, 0};

        m_ops.assign(NUM_OPS, op_ctx());
        m_pack.assign(NUM_OPS, pack_arg());
        m_unpack.assign(NUM_OPS, unpack_arg());
        m_am_hdr.assign(NUM_OPS, 0);
        for (unsigned i = 0; i < NUM_OPS; ++i) {
            m_ops[i].test  = this;
            m_ops[i].index = i;
            m_ops[i].type  = (type == MIXED) ? (int)((i * 5 + 3) % OP_LAST) :
                                               type;
            m_ops[i].calls = 0;
            if (m_ops[i].type == ADD) {
                m_ops[i].ordinal = ordinal[0]++;
            } else if (m_ops[i].type == FADD) {
                m_ops[i].ordinal = ordinal[1]++;
            } else if (m_ops[i].type == CSWAP) {
                m_ops[i].ordinal = ordinal[2]++;
            }
        }
        m_num_word[0] = ordinal[0];
        m_num_word[1] = ordinal[1];
        m_num_word[2] = ordinal[2];
    }

    void post_all(unsigned first, unsigned last, ucs_time_t deadline)
    {
        for (unsigned i = first; i < last; ++i) {
            ucs_status_t status;
            do {
                status = post_op(i);
                if (status == UCS_ERR_NO_RESOURCE) {
                    progress();
                }
            } while ((status == UCS_ERR_NO_RESOURCE) &&
                     (ucs_get_time() < deadline));
            ASSERT_FALSE(UCS_STATUS_IS_ERR(status))
                    << op_name(m_ops[i].type) << " #" << i << ": "
                    << ucs_status_string(status);
            if (!has_comp(m_ops[i].type)) {
                /* completes on return: no callback will come */
                m_ops[i].calls  = 1;
                m_ops[i].status = UCS_OK;
            } else if (status == UCS_OK) {
                m_ops[i].calls++;
                m_ops[i].status = UCS_OK;
            }
        }
    }

    /* The fault on the primary path, starting after packet k */
    void inject(int f, unsigned k)
    {
        struct softib_rule rule;
        port sp = side_port(m_s, 0), rp = side_port(m_r, 0);

        memset(&rule, 0, sizeof(rule));
        rule.kind  = SOFTIB_RULE_DROP;
        rule.skip  = k;
        rule.count = SOFTIB_FOREVER;
        switch (f) {
        case REQ_PORT_DOWN:
            rule.dev     = sp.dev.c_str();
            rule.port    = sp.num;
            rule.dir     = SOFTIB_DIR_TX;
            rule.classes = SOFTIB_CLASS_ALL;
            break;
        case RESP_PORT_DOWN:
            rule.dev     = rp.dev.c_str();
            rule.port    = rp.num;
            rule.dir     = SOFTIB_DIR_RX;
            rule.classes = SOFTIB_CLASS_ALL;
            break;
        case REQ_DROP:
            rule.dev     = sp.dev.c_str();
            rule.port    = sp.num;
            rule.dir     = SOFTIB_DIR_TX;
            rule.classes = SOFTIB_CLASS_REQ;
            break;
        case RESP_DROP:
            rule.dev     = rp.dev.c_str();
            rule.port    = rp.num;
            rule.dir     = SOFTIB_DIR_TX;
            rule.classes = SOFTIB_CLASS_RESPONSES;
            break;
        }
        m_softib.rule(rule);
    }

    void take_down(int f)
    {
        if (f == REQ_PORT_DOWN) {
            port p = side_port(m_s, 0);
            m_softib.link(p.dev, p.num, false);
        } else if (f == RESP_PORT_DOWN) {
            port p = side_port(m_r, 0);
            m_softib.link(p.dev, p.num, false);
        }
    }

    /* Flush the sender and wait until every AM has arrived. */
    void finish(ucs_time_t deadline)
    {
        uct_completion_t comp;
        ucs_status_t status;
        size_t num_am = 0;

        for (unsigned i = 0; i < NUM_OPS; ++i) {
            num_am += is_am(m_ops[i].type);
        }

        comp.func   = flush_cb;
        comp.count  = 1;
        comp.status = UCS_OK;
        do {
            status = uct_ep_flush(m_s->ep(0), 0, &comp);
            if (status == UCS_ERR_NO_RESOURCE) {
                progress();
            }
        } while ((status == UCS_ERR_NO_RESOURCE) &&
                 (ucs_get_time() < deadline));
        if (status == UCS_OK) {
            comp.count = 0;
        }
        while ((comp.count > 0) && (ucs_get_time() < deadline)) {
            progress();
        }
        ASSERT_EQ(0, comp.count) << "flush did not complete";
        EXPECT_EQ(UCS_OK, comp.status);

        while ((m_am_rx.size() < num_am) && (ucs_get_time() < deadline)) {
            progress();
        }
        /* a duplicate would come right behind */
        short_progress_loop(5);
    }

    struct outcome {
        unsigned duplicates;   /* extra executions seen */
        unsigned results_lost;
        unsigned failovers;
    };

    /* Everything the receiver holds and every completion, against the
     * plan. With expect_exact, anything else fails the test; without it
     * (blanket), duplicates are counted instead. */
    outcome verify(bool expect_exact, const std::string &what)
    {
        outcome out  = {0, 0, 0};
        unsigned add = 0;

        for (unsigned i = 0; i < NUM_OPS; ++i) {
            op_ctx &c = m_ops[i];
            std::string tag = what + " " + op_name(c.type) + " #" +
                              ucs::to_string(i);

            EXPECT_EQ(1, c.calls) << tag << ": completions";
            if ((c.type == FADD) || (c.type == CSWAP)) {
                if (c.status == UCT_RC_VARUNA_STATUS_RESULT_LOST) {
                    ++out.results_lost;
                } else {
                    EXPECT_EQ(UCS_OK, c.status) << tag;
                    if (expect_exact) {
                        EXPECT_EQ(c.ordinal, c.result) << tag << ": result";
                    } else if (c.result != c.ordinal) {
                        ++out.duplicates;
                    }
                }
            } else {
                EXPECT_EQ(UCS_OK, c.status) << tag;
            }

            switch (c.type) {
            case PUT_SHORT:
                EXPECT_EQ(seed(i), *(uint64_t*)dst_slot(i)) << tag;
                break;
            case PUT_BCOPY:
            case PUT_ZCOPY:
                EXPECT_TRUE(check(dst_slot(i), LARGE, seed(i))) << tag;
                break;
            case GET_BCOPY:
            case GET_ZCOPY:
                EXPECT_TRUE(check(src_slot(i), LARGE, seed(i) ^ 0xabcdef))
                        << tag;
                break;
            case ADD:
                ++add;
                break;
            default:
                break;
            }
        }

        /* each add once */
        for (unsigned w = 0; w < 3; ++w) {
            if (*word(w) != m_num_word[w]) {
                if (expect_exact) {
                    ADD_FAILURE() << what << ": atomic word " << w << " is "
                                  << *word(w) << ", expected "
                                  << m_num_word[w];
                } else if (*word(w) > m_num_word[w]) {
                    out.duplicates += *word(w) - m_num_word[w];
                } else if (w != 2) {
                    ADD_FAILURE() << what << ": atomic word " << w
                                  << " lost an add";
                }
            }
        }

        /* each AM once, in order */
        std::vector<uint64_t> expected_am;
        for (unsigned i = 0; i < NUM_OPS; ++i) {
            if (is_am(m_ops[i].type)) {
                expected_am.push_back(i);
            }
        }
        if (expect_exact) {
            EXPECT_EQ(expected_am, m_am_rx) << what << ": active messages";
        } else {
            std::set<uint64_t> seen(m_am_rx.begin(), m_am_rx.end());
            EXPECT_EQ(expected_am.size(), seen.size()) << what
                                                       << ": an AM was lost";
            out.duplicates += m_am_rx.size() - seen.size();
        }

        EXPECT_EQ(0u, m_ep_errors) << what << ": the endpoint failed";
        EXPECT_EQ(m_qp_created[0], viface(m_s)->fo.qp_created) << what;
        EXPECT_EQ(m_qp_created[1], viface(m_r)->fo.qp_created) << what;
        EXPECT_EQ(m_qp_conn[0], viface(m_s)->fo.qp_connected) << what;
        EXPECT_EQ(m_qp_conn[1], viface(m_r)->fo.qp_connected) << what;
        out.failovers = viface(m_s)->fo.failovers;
        return out;
    }

    /* One trial: a window of operations of a type, a fault after packet k,
     * operations after it, and all the checks. */
    outcome trial(int type, int f, unsigned k, bool expect_exact)
    {
        std::stringstream what;
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);
        outcome out         = {0, 0, 0};

        what << op_name(type) << "/" << fault_name(f) << "@" << k;
        setup_pair();
        plan(type);
        inject(f, k);
        post_all(0, WINDOW, deadline);
        take_down(f);
        post_all(WINDOW, NUM_OPS, deadline);
        finish(deadline);
        if (!HasFailure()) {
            out = verify(expect_exact, what.str());
        }
        if (HasFailure()) {
            ADD_FAILURE() << "in trial " << what.str();
        }
        destroy_pair();
        m_softib.reset();
        return out;
    }

    /* fault positions: every packet of the window, or every n-th
     * (RC_VARUNA_FI_STEP) */
    static unsigned position_step()
    {
        const char *step = getenv("RC_VARUNA_FI_STEP");
        return (step != NULL) ? std::max(1, atoi(step)) : 1;
    }

    void matrix(int type)
    {
        unsigned failovers = 0, results_lost = 0, trials = 0;

        for (int f = 0; f < FAULT_LAST; ++f) {
            for (unsigned k = 0; k <= 3 * WINDOW; k += position_step()) {
                outcome out = trial(type, f, k, true);
                if (HasFailure()) {
                    return;
                }
                failovers    += out.failovers > 0;
                results_lost += out.results_lost;
                ++trials;
            }
        }
        UCS_TEST_MESSAGE << op_name(type) << ": " << trials << " trials, "
                         << failovers << " with a failover, " << results_lost
                         << " atomic results lost";
        /* port-down faults always fail over */
        EXPECT_GE(failovers, trials / 2);
    }

    softib_control                  m_softib;
    entity                          *m_s, *m_r;
    const resource                  *m_rsc;
    ucs::auto_ptr<mapped_buffer>    m_dst, m_src;
    std::vector<op_ctx>             m_ops;
    std::vector<pack_arg>           m_pack;
    std::vector<unpack_arg>         m_unpack;
    std::vector<uint64_t>           m_am_hdr;
    std::vector<uint64_t>           m_am_rx;
    unsigned                        m_num_word[3];
    unsigned                        m_ep_errors;
    unsigned long                   m_qp_created[2], m_qp_conn[2];
};


UCS_TEST_P(test_rc_varuna_failover, put_short)  { matrix(PUT_SHORT); }
UCS_TEST_P(test_rc_varuna_failover, put_bcopy)  { matrix(PUT_BCOPY); }
UCS_TEST_P(test_rc_varuna_failover, put_zcopy)  { matrix(PUT_ZCOPY); }
UCS_TEST_P(test_rc_varuna_failover, get_bcopy)  { matrix(GET_BCOPY); }
UCS_TEST_P(test_rc_varuna_failover, get_zcopy)  { matrix(GET_ZCOPY); }
UCS_TEST_P(test_rc_varuna_failover, add)        { matrix(ADD); }
UCS_TEST_P(test_rc_varuna_failover, fadd)       { matrix(FADD); }
UCS_TEST_P(test_rc_varuna_failover, cswap)      { matrix(CSWAP); }
UCS_TEST_P(test_rc_varuna_failover, am_short)   { matrix(AM_SHORT); }
UCS_TEST_P(test_rc_varuna_failover, am_bcopy)   { matrix(AM_BCOPY); }
UCS_TEST_P(test_rc_varuna_failover, am_zcopy)   { matrix(AM_ZCOPY); }
UCS_TEST_P(test_rc_varuna_failover, mixed)      { matrix(MIXED); }

/* The log switched off: every operation in flight is decided by the
 * peer's expected PSN. */
UCS_TEST_P(test_rc_varuna_failover, mixed_without_log, "LOG=n")
{
    matrix(MIXED);
}

/*
 * Today's behaviour as the baseline: resending everything in flight after
 * acknowledgements were lost executes operations twice. That the checks
 * above see it proves they can see a duplicate.
 */
UCS_TEST_P(test_rc_varuna_failover, blanket_executes_twice,
           "RECOVERY=blanket")
{
    static const int types[] = {FADD, ADD, AM_SHORT, MIXED};
    unsigned duplicates      = 0;

    for (size_t t = 0; t < ucs_static_array_size(types); ++t) {
        unsigned dup = 0;
        for (unsigned k = 0; k < 2 * WINDOW; k += 2) {
            outcome out = trial(types[t], RESP_DROP, k, false);
            ASSERT_FALSE(HasFailure());
            dup += out.duplicates;
        }
        UCS_TEST_MESSAGE << op_name(types[t]) << ": " << dup
                         << " duplicate executions under blanket recovery";
        EXPECT_GT(dup, 0u) << op_name(types[t]);
        duplicates += dup;
    }
    EXPECT_GT(duplicates, 0u);
}

/* Requested through the test hook: the peer is asked, the standby takes
 * over, nothing is created. */
UCS_TEST_P(test_rc_varuna_failover, fail_lane_hook)
{
    setup_pair();
    plan(MIXED);
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);

    /* the module is loaded by UCX, not linked to the test */
    void *module = dlopen("libuct_varuna.so.0", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_TRUE(module != NULL) << dlerror();
    typedef ucs_status_t (*fail_lane_func_t)(uct_ep_h);
    fail_lane_func_t fail_lane = reinterpret_cast<fail_lane_func_t>(
            dlsym(module, "uct_rc_varuna_ep_fail_lane"));
    ASSERT_TRUE(fail_lane != NULL);

    post_all(0, WINDOW, deadline);
    ASSERT_UCS_OK(fail_lane(m_s->ep(0)));
    dlclose(module);
    post_all(WINDOW, NUM_OPS, deadline);
    finish(deadline);
    verify(true, "fail_lane");
    EXPECT_EQ(1u, viface(m_s)->fo.failovers);
    EXPECT_EQ(1u, viface(m_r)->fo.failovers);
    EXPECT_EQ(UCT_RC_VARUNA_SIDE_STANDBY, vep(m_s)->active);
    EXPECT_EQ(UCT_RC_VARUNA_SIDE_STANDBY, vep(m_r)->active);
}

/*
 * 100 failures and restorations on one pair of endpoints, alternating
 * which port fails: each time the failed lane is re-protected before the
 * next failure, and nothing is lost or executed twice.
 */
UCS_TEST_P(test_rc_varuna_failover, cycles_alternating_ports)
{
    const unsigned cycles = ucs_max(2, 100 / ucs::test_time_multiplier());

    setup_pair();
    for (unsigned cycle = 0; cycle < cycles; ++cycle) {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);
        unsigned active     = vep(m_s)->active;
        port down           = side_port(m_s, active);
        std::string what    = "cycle " + ucs::to_string(cycle);

        plan(MIXED);
        memset(m_dst->ptr(), 0, NUM_OPS * SLOT);
        memset(word(0), 0, 3 * sizeof(uint64_t));
        m_am_rx.clear();

        post_all(0, WINDOW, deadline);
        m_softib.link(down.dev, down.num, false);
        post_all(WINDOW, NUM_OPS, deadline);
        finish(deadline);
        ASSERT_EQ(1 - active, vep(m_s)->active) << what;
        verify(true, what);
        ASSERT_FALSE(HasFailure()) << what;

        /* back up: both sides reconnect it as their standby */
        m_softib.link(down.dev, down.num, true);
        while ((!vep(m_s)->has_standby || !vep(m_r)->has_standby) &&
               (ucs_get_time() < deadline)) {
            progress();
        }
        ASSERT_TRUE(vep(m_s)->has_standby && vep(m_r)->has_standby)
                << what << ": not re-protected";
    }
    EXPECT_EQ(cycles, viface(m_s)->fo.failovers);
    EXPECT_EQ(cycles, viface(m_s)->fo.reprotected);
}

/* Both paths dead: the endpoint fails through UCX's error path, every
 * operation completes (with an error), nothing hangs. */
UCS_TEST_P(test_rc_varuna_failover, both_paths_down)
{
    setup_pair();
    plan(MIXED);
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);
    port p0 = side_port(m_s, 0), p1 = side_port(m_s, 1);

    post_all(0, WINDOW, deadline);
    m_softib.link(p1.dev, p1.num, false);
    m_softib.link(p0.dev, p0.num, false);
    /* operations after the failure meet two dead lanes */
    post_all(WINDOW, NUM_OPS, deadline);

    while ((m_ep_errors == 0) && (ucs_get_time() < deadline)) {
        progress();
    }
    ASSERT_EQ(1u, m_ep_errors) << "no peer failure reported";
    short_progress_loop(20);
    for (unsigned i = 0; i < NUM_OPS; ++i) {
        EXPECT_EQ(1, m_ops[i].calls) << op_name(m_ops[i].type) << " #" << i;
    }
    EXPECT_EQ(1u, m_ep_errors);
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna_failover, rc_varuna)
