/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include <uct/uct_test.h>

extern "C" {
#include <uct/ib/varuna/rc_varuna.h>
}


/*
 * rc_varuna in steady state (DESIGN.md sections 3-4): every endpoint holds
 * a primary and a standby QP, connected and in RTS, on different ports
 * (or devices); a remote key works through either; and behind every
 * operation the responder's completion log word receives its sequence
 * number. Run with UCX_RC_VARUNA_STANDBY=auto (another device) and =same
 * (the other port of the same device).
 */
class test_rc_varuna : public uct_test {
public:
    virtual void init()
    {
        uct_test::init();

        m_e1 = create_entity(0);
        m_entities.push_back(m_e1);
        check_skip_test();
        m_e2 = create_entity(0);
        m_entities.push_back(m_e2);

        m_e1->connect(0, *m_e2, 0);
        m_e2->connect(0, *m_e1, 0);

        m_am_count = 0;
        uct_iface_set_am_handler(m_e2->iface(), AM_ID, am_handler,
                                 &m_am_count, 0);
    }

protected:
    static const uint8_t AM_ID = 5;

    static uct_rc_varuna_ep_t *vep(entity *e)
    {
        return ucs_derived_of(e->ep(0), uct_rc_varuna_ep_t);
    }

    static uct_rc_varuna_iface_t *viface(entity *e)
    {
        return ucs_derived_of(e->iface(), uct_rc_varuna_iface_t);
    }

    static ucs_status_t am_handler(void *arg, void *data, size_t length,
                                   unsigned flags)
    {
        ++*static_cast<unsigned*>(arg);
        return UCS_OK;
    }

    static struct ibv_qp_attr query_qp(struct ibv_qp *qp)
    {
        struct ibv_qp_init_attr init_attr;
        struct ibv_qp_attr attr;

        EXPECT_EQ(0, ibv_query_qp(qp, &attr,
                                  IBV_QP_STATE | IBV_QP_PORT |
                                  IBV_QP_DEST_QPN, &init_attr));
        return attr;
    }

    /* The sequence number the peer's log word holds for our operations */
    static uint64_t peer_log(entity *peer)
    {
        return *uct_rc_varuna_log_word(vep(peer));
    }

    void flush_all()
    {
        flush();
    }

    ucs_status_t put_short(const mapped_buffer &src, const mapped_buffer &dst)
    {
        return uct_ep_put_short(m_e1->ep(0), src.ptr(), sizeof(uint64_t),
                                dst.addr(), dst.rkey());
    }

    /* Retry while the QP is full: the test only needs the op posted */
    template <typename F>
    void post(F func)
    {
        ucs_status_t status;

        do {
            status = func();
            if (status == UCS_ERR_NO_RESOURCE) {
                progress();
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        ASSERT_FALSE(UCS_STATUS_IS_ERR(status)) << ucs_status_string(status);
    }

    entity   *m_e1, *m_e2;
    unsigned m_am_count;
};


UCS_TEST_P(test_rc_varuna, lanes_connected_on_two_ports)
{
    entity *ents[] = {m_e1, m_e2};

    for (unsigned i = 0; i < 2; ++i) {
        uct_rc_varuna_ep_t *ep       = vep(ents[i]);
        uct_rc_varuna_ep_t *peer     = vep(ents[1 - i]);
        uct_rc_varuna_iface_t *iface = viface(ents[i]);

        ASSERT_TRUE(iface->has_standby);
        ASSERT_TRUE(uct_rc_varuna_ep_has_standby(ep));
        EXPECT_EQ(UCT_RC_VARUNA_SIDE_PRIMARY, ep->active);

        for (unsigned side = 0; side < UCT_RC_VARUNA_NUM_SIDES; ++side) {
            ASSERT_TRUE(ep->lane[side].qp != NULL);
            struct ibv_qp_attr attr = query_qp(ep->lane[side].qp);

            EXPECT_EQ(IBV_QPS_RTS, attr.qp_state) << "lane " << side;
            EXPECT_EQ(iface->side[side].port_num, attr.port_num);
            /* lane i of one side connects to lane i of the other */
            EXPECT_EQ(peer->lane[side].qp->qp_num, attr.dest_qp_num);
        }

        struct ibv_context *ctx0 = ep->lane[0].qp->context;
        struct ibv_context *ctx1 = ep->lane[1].qp->context;
        bool same_device         = !strcmp(ctx0->device->name,
                                           ctx1->device->name);

        EXPECT_EQ(same_device, !iface->side[1].separate);
        if (same_device) {
            EXPECT_NE(iface->side[0].port_num, iface->side[1].port_num);
        }
        UCS_TEST_MESSAGE << ctx0->device->name << ":"
                         << (int)iface->side[0].port_num << " + standby "
                         << ctx1->device->name << ":"
                         << (int)iface->side[1].port_num;
    }
}

/* The packed remote key carries a key for each device: a put through
 * either lane lands in the same bytes, and so does the log write behind
 * it. */
UCS_TEST_P(test_rc_varuna, rkey_works_through_both_lanes, "LOG_INTERVAL=1")
{
    mapped_buffer src(4096, 0, *m_e1), dst(4096, 0, *m_e2);
    uct_rc_varuna_ep_t *ep = vep(m_e1);
    uint8_t saved          = ep->active;

    for (unsigned lane = 0; lane < UCT_RC_VARUNA_NUM_SIDES; ++lane) {
        src.pattern_fill(lane + 1);
        dst.memset(0);

        ep->active = lane;
        post([&]() {
            return uct_ep_put_zcopy(m_e1->ep(0), src.iov(), 1, dst.addr(),
                                    dst.rkey(), NULL);
        });
        flush_all();
        ep->active = saved;

        dst.pattern_check(lane + 1);
        /* the log write behind it went through the same lane */
        EXPECT_EQ(ep->tx.sn, peer_log(m_e2)) << "lane " << lane;
    }
}

/* With a log write behind every operation (LOG_INTERVAL=1), behind every
 * kind of operation the responder's log word holds the sequence number of
 * the last one. */
UCS_TEST_P(test_rc_varuna, log_word_follows_every_operation, "LOG_INTERVAL=1")
{
    static const unsigned count = 20;
    mapped_buffer src(4096, 1, *m_e1), dst(4096, 2, *m_e2);
    mapped_buffer res(sizeof(uint64_t), 0, *m_e1);
    mapped_buffer var(sizeof(uint64_t), 0, *m_e2);
    uct_rc_varuna_ep_t *ep = vep(m_e1);
    uint64_t hdr = 0, result;
    uct_completion_t comp;

    *(uint64_t*)var.ptr() = 0;
    std::vector<std::pair<std::string, std::function<ucs_status_t()>>> ops = {
        {"put_short", [&]() { return put_short(src, dst); }},
        {"put_bcopy", [&]() -> ucs_status_t {
            ssize_t len = uct_ep_put_bcopy(m_e1->ep(0), mapped_buffer::pack,
                                           &src, dst.addr(), dst.rkey());
            return (len < 0) ? (ucs_status_t)len : UCS_OK;
        }},
        {"put_zcopy", [&]() {
            return uct_ep_put_zcopy(m_e1->ep(0), src.iov(), 1, dst.addr(),
                                    dst.rkey(), NULL);
        }},
        {"get_bcopy", [&]() {
            return uct_ep_get_bcopy(m_e1->ep(0),
                                    (uct_unpack_callback_t)memcpy, src.ptr(),
                                    64, dst.addr(), dst.rkey(), NULL);
        }},
        {"get_zcopy", [&]() {
            return uct_ep_get_zcopy(m_e1->ep(0), src.iov(), 1, dst.addr(),
                                    dst.rkey(), NULL);
        }},
        {"am_short", [&]() {
            return uct_ep_am_short(m_e1->ep(0), AM_ID, hdr, src.ptr(), 8);
        }},
        {"am_bcopy", [&]() -> ucs_status_t {
            ssize_t len = uct_ep_am_bcopy(m_e1->ep(0), AM_ID,
                                          mapped_buffer::pack, &src, 0);
            return (len < 0) ? (ucs_status_t)len : UCS_OK;
        }},
        {"am_zcopy", [&]() {
            return uct_ep_am_zcopy(m_e1->ep(0), AM_ID, &hdr, sizeof(hdr),
                                   src.iov(), 1, 0, NULL);
        }},
        {"atomic_add", [&]() {
            return uct_ep_atomic64_post(m_e1->ep(0), UCT_ATOMIC_OP_ADD, 1,
                                        var.addr(), var.rkey());
        }},
        {"atomic_fadd", [&]() {
            comp.count  = 1;
            comp.status = UCS_OK;
            comp.func   = (uct_completion_callback_t)ucs_empty_function;
            return uct_ep_atomic64_fetch(m_e1->ep(0), UCT_ATOMIC_OP_ADD, 1,
                                         &result, var.addr(), var.rkey(),
                                         &comp);
        }},
        {"atomic_cswap", [&]() {
            comp.count  = 1;
            comp.status = UCS_OK;
            comp.func   = (uct_completion_callback_t)ucs_empty_function;
            return uct_ep_atomic_cswap64(m_e1->ep(0), 0, 0, var.addr(),
                                         var.rkey(), &result, &comp);
        }},
    };

    unsigned am_sent = 0;
    uint64_t adds    = 0; /* the value var holds after what was posted */
    for (auto &op : ops) {
        uint64_t sn_before = ep->tx.sn;

        for (unsigned i = 0; i < count; ++i) {
            result = UINT64_MAX;
            post(op.second);
            if (op.first.compare(0, 3, "am_") == 0) {
                ++am_sent;
            }
            if (op.first == "atomic_fadd" || op.first == "atomic_cswap") {
                /* one completion object: wait for it before reusing it */
                wait_for_value(&comp.count, 0, true);
                EXPECT_EQ(UCS_OK, comp.status) << op.first << " #" << i;
                /* fetch-adds see every add before them; a compare-swap
                 * of 0 with 0 leaves the sum and returns it */
                EXPECT_EQ(adds, result) << op.first << " #" << i;
            }
            if (op.first == "atomic_add" || op.first == "atomic_fadd") {
                ++adds;
            }
        }
        flush_all();

        /* each operation took one sequence number, the flush at most one
         * more */
        EXPECT_GE(ep->tx.sn, sn_before + count) << op.first;
        EXPECT_LE(ep->tx.sn, sn_before + count + 1) << op.first;
        EXPECT_EQ(ep->tx.sn, peer_log(m_e2)) << op.first;
    }

    wait_for_value(&m_am_count, am_sent, true);
    EXPECT_EQ(am_sent, m_am_count);
    /* add + fadd: 2 * count increments; cswap(0 -> 0) never matched */
    EXPECT_EQ(2ull * count, *(uint64_t*)var.ptr());
}

/*
 * LOG_INTERVAL=4: one log write in four operations. Of 40 puts posted back
 * to back, every fourth wrote the log (each one remembers the last log
 * write posted before it, so the next one tells), and after a flush the
 * responder's log word holds the last log write posted, at most three
 * operations behind.
 */
UCS_TEST_P(test_rc_varuna, log_word_every_interval, "LOG_INTERVAL=4")
{
    static const unsigned count = 40, interval = 4;
    mapped_buffer src(64, 1, *m_e1), dst(64, 2, *m_e2);
    uct_rc_varuna_ep_t *ep = vep(m_e1);
    uint64_t first         = ep->tx.sn + 1;
    std::vector<uint64_t> logged;

    ASSERT_EQ(interval, viface(m_e1)->config.log_interval);
    for (unsigned i = 0; i < count; ++i) {
        post([&]() { return put_short(src, dst); });
    }
    ASSERT_EQ(first + count - 1, ep->tx.sn);

    for (uint64_t sn = first; sn < first + count; ++sn) {
        uint64_t next_before = (sn == ep->tx.sn) ?
                               ep->lane[ep->active].log_sn :
                               uct_rc_varuna_ep_op(ep, sn + 1)->log_before;
        EXPECT_LE(sn - uct_rc_varuna_ep_op(ep, sn)->log_before, interval)
                << "sn " << sn;
        if (next_before == sn) {
            logged.push_back(sn);
        }
    }
    ASSERT_EQ(count / interval, logged.size());
    EXPECT_LT(logged.front() - first, interval);
    for (size_t i = 1; i < logged.size(); ++i) {
        EXPECT_EQ(interval, logged[i] - logged[i - 1]);
    }

    flush_all();
    EXPECT_EQ(ep->lane[ep->active].log_sn, peer_log(m_e2));
    EXPECT_LT(ep->tx.sn - peer_log(m_e2), interval);
    EXPECT_EQ(*(uint64_t*)src.ptr(), *(uint64_t*)dst.ptr());
}

/* UCX_RC_VARUNA_LOG=n: no log writes at all */
UCS_TEST_P(test_rc_varuna, no_log_when_disabled, "LOG=n")
{
    mapped_buffer src(64, 1, *m_e1), dst(64, 2, *m_e2);

    for (unsigned i = 0; i < 10; ++i) {
        post([&]() { return put_short(src, dst); });
    }
    flush_all();
    EXPECT_EQ(0ull, peer_log(m_e2));
    EXPECT_GE(vep(m_e1)->tx.sn, 10ull);
}

/*
 * A large transfer on a healthy link is not a dead link: the watchdog
 * fails over when nothing completes for its interval, so no work request
 * may be larger than MAX_ZCOPY and a completion is requested at least every
 * MAX_ZCOPY bytes. 64 MB of unsignaled puts under a 100 ms watchdog would
 * otherwise have one completion, at the end (found by UCX's
 * test_ucp_tag_match_rndv.bidir_multi_exp_post: 128 MB rendezvous).
 */
UCS_TEST_P(test_rc_varuna, large_transfer_is_not_a_failure, "WATCHDOG=100ms")
{
    static const unsigned count = 64;
    const uct_iface_attr_t &attr = m_e1->iface_attr();
    uct_rc_varuna_iface_t *iface = viface(m_e1);
    size_t max_zcopy             = iface->config.max_zcopy;

    EXPECT_EQ(UCS_MBYTE, max_zcopy); /* the default */
    EXPECT_LE(attr.cap.put.max_zcopy, max_zcopy);
    EXPECT_LE(attr.cap.get.max_zcopy, max_zcopy);

    mapped_buffer src(max_zcopy, 0, *m_e1), dst(max_zcopy, 0, *m_e2);
    uct_rc_varuna_ep_t *ep = vep(m_e1);
    uint64_t sn_before     = ep->tx.sn;

    /* unsignaled, back to back: only the byte count asks for completions
     * before the flush */
    src.pattern_fill(7);
    for (unsigned i = 0; i < count; ++i) {
        post([&]() {
            return uct_ep_put_zcopy(m_e1->ep(0), src.iov(), 1, dst.addr(),
                                    dst.rkey(), NULL);
        });
        /* never more than MAX_ZCOPY bytes behind the last signaled
         * request: with 1 MB puts, every second one is signaled */
        ASSERT_LE(ep->tx.unsig_bytes, max_zcopy) << "put " << i;
        ASSERT_LE(ep->tx.sn - ep->tx.sig_sn, 1ul) << "put " << i;
    }
    flush_all();
    dst.pattern_check(7);

    EXPECT_EQ(0ul, iface->fo.failovers);
    EXPECT_EQ(0ul, viface(m_e2)->fo.failovers);
    EXPECT_EQ(UCT_RC_VARUNA_SIDE_PRIMARY, ep->active);
    /* the log write of one put in LOG_INTERVAL went through */
    EXPECT_LT(ep->tx.sn - peer_log(m_e2), iface->config.log_interval);
    EXPECT_GE(ep->tx.sn, sn_before + count);

    /* a put larger than MAX_ZCOPY is refused, not split */
    mapped_buffer big(max_zcopy + 1, 0, *m_e1);
    scoped_log_handler wrap_err(wrap_errors_logger);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_zcopy(m_e1->ep(0), big.iov(), 1, dst.addr(),
                               dst.rkey(), NULL));
}

/*
 * Issue 28: every setting of the interface that can be out of range, fed
 * its bad values one at a time. Each must fail the interface's open with
 * UCS_ERR_INVALID_PARAM and one error naming the variable and the value:
 * an RC timeout of 0 (wait forever in verbs: no failure is ever detected)
 * or a log interval of -3 (4294967293: no log) used to be taken silently.
 * The same open with the defaults succeeds, so the failures are about the
 * values.
 */
UCS_TEST_P(test_rc_varuna, bad_config_values)
{
    static const struct {
        const char *name;  /* in the table; RC_ settings are inherited */
        const char *value;
        const char *said;  /* in the error, after UCX_RC_VARUNA_<name>=,
                              without RC_ (UCX_RC_VARUNA_TIMEOUT) */
    } bad[] = {
        {"LOG_INTERVAL",         "0",       "0"},
        {"LOG_INTERVAL",         "-3",      "4294967293"},
        {"LOG_INTERVAL",         "1000000", "1000000"},
        {"RC_TIMEOUT",           "0",       "0"},
        {"RC_TIMEOUT",           "10000s",  "10000s"},
        {"RC_RETRY_COUNT",       "8",       "8"},
        {"WATCHDOG",             "10us",    "10us"},
        {"PEER_TIMEOUT",         "0",       "0"},
        {"REPROTECT_INTERVAL",   "0",       "0"},
        {"REPROTECT_INTERVAL",   "120s",    "120s"},
        {"REPROTECT_TIMEOUT",    "0",       "0"},
        {"LAST_WQE_TIMEOUT",     "700s",    "700s"},
        {"STANDBY_RX_QUEUE_LEN", "0",       "0"},
        {"STANDBY_RX_QUEUE_LEN", "100000",  "100000"},
        {"MAX_ZCOPY",            "512",     "512"},
        {"MAX_ZCOPY",            "2g",      "2147483648"}
    };
    uct_iface_params_t params = {};
    uct_iface_config_t *config;
    uct_iface_h iface;
    ucs_status_t status;

    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE   |
                                  UCT_IFACE_PARAM_FIELD_DEVICE      |
                                  UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                                  UCT_IFACE_PARAM_FIELD_CPU_MASK;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = GetParam()->tl_name.c_str();
    params.mode.device.dev_name = GetParam()->dev_name.c_str();
    params.rx_headroom          = 0;
    UCS_CPU_ZERO(&params.cpu_mask);

    /* the control: the defaults open */
    ASSERT_UCS_OK(uct_md_iface_config_read(m_e1->md(), "rc_varuna", NULL,
                                           NULL, &config));
    ASSERT_UCS_OK(uct_iface_open(m_e1->md(), m_e1->worker(), &params,
                                 config, &iface));
    uct_iface_close(iface);
    uct_config_release(config);

    for (size_t i = 0; i < ucs_static_array_size(bad); ++i) {
        std::string name = bad[i].name;
        if (name.compare(0, 3, "RC_") == 0) {
            name = name.substr(3);
        }
        std::string what = "UCX_RC_VARUNA_" + name + "=" + bad[i].value;
        std::string said = "UCX_RC_VARUNA_" + name + "=" + bad[i].said +
                           " is out of range";

        ASSERT_UCS_OK(uct_md_iface_config_read(m_e1->md(), "rc_varuna", NULL,
                                               NULL, &config));
        ASSERT_EQ(UCS_OK, uct_config_modify(config, bad[i].name,
                                            bad[i].value)) << what;
        m_errors.clear();
        {
            scoped_log_handler wrap_err(wrap_errors_logger);
            status = uct_iface_open(m_e1->md(), m_e1->worker(), &params,
                                    config, &iface);
        }
        uct_config_release(config);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, status) << what;
        if (status == UCS_OK) {
            uct_iface_close(iface);
            continue;
        }
        ASSERT_EQ(1u, m_errors.size()) << what;
        EXPECT_NE(std::string::npos, m_errors[0].find(said))
            << what << ": " << m_errors[0];
    }
}

/* A standby port the standby device does not have is an error too, and no
 * memory domain of rc_varuna is offered (issue 28: softib0:9 was taken) */
UCS_TEST_P(test_rc_varuna, standby_port_that_does_not_exist)
{
    std::string dev = GetParam()->dev_name.substr(
                              0, GetParam()->dev_name.find(':'));
    std::string standby = dev + ":9";
    uct_component_h component = GetParam()->component;
    uct_component_attr_t attr = {};

    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    {
        ucs::scoped_setenv env("UCX_RC_VARUNA_STANDBY", standby.c_str());
        scoped_log_handler wrap_err(wrap_errors_logger);
        m_errors.clear();
        EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_component_query(component, &attr));
    }
    ASSERT_EQ(1u, m_errors.size());
    EXPECT_NE(std::string::npos,
              m_errors[0].find("UCX_RC_VARUNA_STANDBY=" + standby +
                               ": device '" + dev + "' has no port 9"))
        << m_errors[0];
}

_UCT_INSTANTIATE_TEST_CASE(test_rc_varuna, rc_varuna)
