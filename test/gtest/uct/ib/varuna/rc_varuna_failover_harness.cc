/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

/* The failover tests' harness: its member functions (the class is in
 * rc_varuna_failover_harness.h) */

#include "rc_varuna_failover_harness.h"


void test_rc_varuna_fo_base::set_config(const std::string &config_str)
{
    if (config_str.compare(0, 13, "LOG_INTERVAL=") == 0) {
        m_log_interval_set = true;
    }
    if (config_str.compare(0, 14, "FAILBACK_HOLD=") == 0) {
        m_failback_hold_set = true;
    }
    uct_test::set_config(config_str);
}

void test_rc_varuna_fo_base::init()
{
    uct_test::init();
    m_softib.require();
    m_softib.reset();
    ucs_log_push_handler(expected_warns_logger);

    /* detection by retry exhaustion within ~25 ms */
    modify_config("RC_TIMEOUT", "4ms");
    modify_config("RC_RETRY_COUNT", "4");
    modify_config("REPROTECT_INTERVAL", "5ms");
    if (!m_failback_hold_set) {
        /* the cases say which lane carries the traffic after a failover
         * and a heal; the failback cases set their own hold-down */
        modify_config("FAILBACK_HOLD", "inf");
    }
    if (!m_log_interval_set) {
        /* a trial posts ~10 operations per side: with the default
         * interval none would write the log; with 3 every failover
         * has operations decided by the log, behind a log write that
         * went and one that did not, and by the PSN. A benchmark
         * (contrib/failover-bench) sets the interval it measures. */
        const char *interval = getenv("RC_VARUNA_LOG_INTERVAL");
        modify_config("LOG_INTERVAL",
                      ((interval != NULL) && (*interval != '\0')) ?
                      interval : "3");
    }
}

void test_rc_varuna_fo_base::cleanup()
{
    destroy_pair();
    if (m_softib.error().empty()) {
        m_softib.reset();
        ucs_log_pop_handler();
    }
    uct_test::cleanup();
}

long test_rc_varuna_fo_base::vfs_counter(entity *e, const char *name)
{
    ucs_string_buffer_t strb = UCS_STRING_BUFFER_INITIALIZER;
    ucs_vfs_path_info_t info;
    char dir[128], path[192];
    long value = -1;

    ucs_snprintf_zero(dir, sizeof(dir), "/uct/worker/%p/iface/%p",
                      e->worker(), e->iface());
    ucs_snprintf_zero(path, sizeof(path), "%s/failover/%s", dir, name);
    /* the interface's directory is filled when it is looked at */
    (void)ucs_vfs_path_get_info(dir, &info);
    if (ucs_vfs_path_read_file(path, &strb) == UCS_OK) {
        value = strtol(ucs_string_buffer_cstr(&strb), NULL, 10);
    }
    ucs_string_buffer_cleanup(&strb);
    return value;
}

test_rc_varuna_fo_base::port
test_rc_varuna_fo_base::side_port(entity *e, unsigned side)
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

ucs_status_t test_rc_varuna_fo_base::err_handler(void *arg, uct_ep_h ep,
                                                 ucs_status_t status)
{
    test_rc_varuna_fo_base *self =
            reinterpret_cast<test_rc_varuna_fo_base*>(arg);

    /* atomically: the receiver may run in a thread of its own */
    ucs_atomic_add32(&self->m_ep_errors, 1);
    self->m_ep_error_status = status; /* the last one reported */
    /* UCS_INPROGRESS: the test takes the endpoint's operations in
     * flight over (uct_ep_outstanding_purge) */
    return self->m_err_take_over ? UCS_INPROGRESS : UCS_OK;
}

ucs_status_t test_rc_varuna_fo_base::am_handler(void *arg, void *data,
                                                size_t length, unsigned flags)
{
    test_rc_varuna_fo_base *self =
            reinterpret_cast<test_rc_varuna_fo_base*>(arg);
    const char *p = static_cast<const char*>(data);
    uint64_t index;

    if (length < sizeof(index)) {
        self->m_am_bad.push_back(UINT64_MAX);
        return UCS_OK;
    }
    memcpy(&index, p, sizeof(index));
    self->m_am_rx.push_back(index);
    if ((index >= self->m_num_ops) ||
        !is_am(self->m_ops[index].type) ||
        (length != sizeof(index) + self->m_ops[index].length) ||
        !check(p + sizeof(index), length - sizeof(index), seed(index))) {
        self->m_am_bad.push_back(index);
    }
    return UCS_OK;
}

ucs_status_t
test_rc_varuna_fo_base::rev_am_handler(void *arg, void *data, size_t length,
                                       unsigned flags)
{
    test_rc_varuna_fo_base *self =
            reinterpret_cast<test_rc_varuna_fo_base*>(arg);
    uint64_t index = UINT64_MAX;

    if (length == sizeof(index)) {
        memcpy(&index, data, sizeof(index));
    }
    self->m_rev_am_rx.push_back(index);
    return UCS_OK;
}

ucs_log_func_rc_t test_rc_varuna_fo_base::expected_warns_logger(
        const char *file, unsigned line, const char *function,
        ucs_log_level_t level, const ucs_log_component_config_t *comp_conf,
        const char *message, va_list ap)
{
    if ((level == UCS_LOG_LEVEL_WARN) &&
        (strstr(message, "results were lost") != NULL)) {
        return UCS_LOG_FUNC_RC_STOP;
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

test_rc_varuna_fo_base::entity *
test_rc_varuna_fo_base::new_entity(const resource &rsc)
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

bool test_rc_varuna_fo_base::create_pair(bool connect)
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
    if (connect) {
        m_s->connect(0, *m_r, 0);
        m_r->connect(0, *m_s, 0);
    } else {
        /* the case connects them (connect_eps()) */
        m_s->create_ep(0);
        m_r->create_ep(0);
    }
    uct_iface_set_am_handler(m_r->iface(), AM_ID, am_handler, this, 0);
    uct_iface_set_am_handler(m_s->iface(), AM_ID, am_handler, this, 0);
    uct_iface_set_am_handler(m_s->iface(), AM_ID_REV, rev_am_handler,
                             this, 0);

    m_ep_errors     = 0;
    m_ep_error_status = UCS_OK;
    note_baseline();
    return true;
}

std::pair<ucs_status_t, ucs_status_t> test_rc_varuna_fo_base::connect_eps()
{
    ucs_status_t status[2];
    entity *side[2] = {m_s, m_r};

    for (int i = 0; i < 2; ++i) {
        entity *self  = side[i], *other = side[1 - i];
        std::vector<char> dev_addr(other->iface_attr().device_addr_len);
        std::vector<char> ep_addr(other->iface_attr().ep_addr_len);

        status[i] = uct_iface_get_device_address(
                other->iface(), (uct_device_addr_t*)dev_addr.data());
        if (status[i] == UCS_OK) {
            status[i] = uct_ep_get_address(other->ep(0),
                                           (uct_ep_addr_t*)ep_addr.data());
        }
        if (status[i] == UCS_OK) {
            status[i] = uct_ep_connect_to_ep(
                    self->ep(0), (const uct_device_addr_t*)dev_addr.data(),
                    (const uct_ep_addr_t*)ep_addr.data());
        }
    }
    return std::make_pair(status[0], status[1]);
}

void test_rc_varuna_fo_base::note_baseline()
{
    m_cq_avail[0]   = viface(m_s)->super.tx.cq_available;
    m_cq_avail[1]   = viface(m_r)->super.tx.cq_available;
    /* QPs made on a path a failover could take: not a grow's (verify) */
    m_qp_created[0] = viface(m_s)->fo.qp_created - viface(m_s)->fo.grow_qps;
    m_qp_created[1] = viface(m_r)->fo.qp_created - viface(m_r)->fo.grow_qps;
    m_qp_conn[0]    = viface(m_s)->fo.qp_connected;
    m_qp_conn[1]    = viface(m_r)->fo.qp_connected;
    /* and as the device counts them: a QP created or taken to RTR by
     * any path of the transport, not only the ones it counts itself;
     * less a grow's, which verify takes off too */
    m_sib_qp_created   = m_softib.counter(NULL, "qp_created") -
                         viface(m_s)->fo.grow_qps - viface(m_r)->fo.grow_qps;
    m_sib_qp_connected = m_softib.counter(NULL, "qp_connected") -
                         viface(m_s)->fo.grow_qps - viface(m_r)->fo.grow_qps;
}

unsigned test_rc_varuna_fo_base::progress() const
{
    unsigned count = 0;

    FOR_EACH_ENTITY(iter) {
        if (!m_peer_thread_running || (*iter != m_r)) {
            count += (*iter)->progress();
        }
    }
    return count;
}

void test_rc_varuna_fo_base::peer_thread_start()
{
    ASSERT_FALSE(m_peer_thread_running);
    m_peer_thread_stop = false;
    ASSERT_EQ(0, pthread_create(&m_peer_thread, NULL, peer_thread_main,
                                this));
    m_peer_thread_running = true;
}

void test_rc_varuna_fo_base::peer_thread_stop()
{
    if (!m_peer_thread_running) {
        return;
    }
    m_peer_thread_stop = true;
    pthread_join(m_peer_thread, NULL);
    m_peer_thread_running = false;
}

void *test_rc_varuna_fo_base::peer_thread_main(void *arg)
{
    test_rc_varuna_fo_base *self =
            reinterpret_cast<test_rc_varuna_fo_base*>(arg);

    while (!self->m_peer_thread_stop) {
        self->m_r->progress();
    }
    return NULL;
}

void test_rc_varuna_fo_base::destroy_pair()
{
    peer_thread_stop();
    m_dst.reset();
    m_src.reset();
    m_rev_word.reset();
    m_rev.clear();
    FOR_EACH_ENTITY(iter) {
        (*iter)->destroy_eps();
    }
    m_entities.clear();
    m_s = m_r = NULL;
}

void test_rc_varuna_fo_base::setup_pair(unsigned num_ops, bool connect)
{
    if (!create_pair(connect)) {
        UCS_TEST_SKIP_R("no resource with four distinct ports");
    }

    m_num_ops = num_ops;
    m_dst.reset(new mapped_buffer(dst_length(), 0, *m_r));
    m_src.reset(new mapped_buffer(num_ops * SLOT, 0, *m_s));
    clear_memory();
}

void test_rc_varuna_fo_base::setup_slow_pair(double rc_timeout_ms,
                                             double watchdog_ms,
                                             unsigned num_ops)
{
    modify_config("RC_TIMEOUT",
                  ucs::to_string(scaled_ms(rc_timeout_ms)) + "ms");
    modify_config("WATCHDOG", ucs::to_string(scaled_ms(watchdog_ms)) +
                              "ms");
    modify_config("RC_RETRY_COUNT", "7");
    setup_pair(num_ops);
    plan(MIXED, num_ops);
}

void test_rc_varuna_fo_base::clear_memory()
{
    memset(m_dst->ptr(), 0, m_dst->length());
    memset(m_src->ptr(), 0, m_src->length());
    for (unsigned i = 0; i < m_num_ops; ++i) {
        fill(get_src(i), SLOT, seed(i) ^ 0xabcdef);
    }
}

void test_rc_varuna_fo_base::fill(void *buf, size_t length, uint64_t s)
{
    char *p = static_cast<char*>(buf);
    uint64_t v;

    for (size_t i = 0; i < length; i += sizeof(v)) {
        v = s + (i / sizeof(v)) * 0x9e3779b97f4a7c15ull;
        memcpy(p + i, &v, std::min(sizeof(v), length - i));
    }
}

bool test_rc_varuna_fo_base::check(const void *buf, size_t length, uint64_t s)
{
    std::vector<char> expected(length);

    fill(expected.data(), length, s);
    return (length == 0) || !memcmp(buf, expected.data(), length);
}

size_t test_rc_varuna_fo_base::pack_cb(void *dest, void *arg)
{
    pack_arg *a = static_cast<pack_arg*>(arg);
    uint64_t index;

    if (!a->am) {
        fill(dest, a->length, seed(a->index));
        return a->length;
    }
    index = a->index;
    memcpy(dest, &index, sizeof(index));
    fill((char*)dest + sizeof(index), a->length, seed(a->index));
    return sizeof(index) + a->length;
}

uct_iov_t test_rc_varuna_fo_base::iov(void *buffer, size_t length,
                                      uct_mem_h memh)
{
    uct_iov_t v;

    v.buffer = buffer;
    v.length = length;
    v.memh   = memh;
    v.stride = 0;
    v.count  = 1;
    return v;
}

ucs_status_t test_rc_varuna_fo_base::post_op(unsigned i)
{
    op_ctx &c    = m_ops[i];
    uct_ep_h ep  = m_s->ep(0);
    uint64_t rva = remote(target(c));
    uct_rkey_t rkey = m_dst->rkey();
    uct_iov_t v;
    ssize_t len;

    c.comp.func   = comp_cb;
    c.comp.count  = 1;
    c.comp.status = UCS_OK;

    switch (c.type) {
    case PUT_SHORT:
        return uct_ep_put_short(ep, src_slot(i), c.length, rva, rkey);
    case PUT_BCOPY:
        m_pack[i].index  = i;
        m_pack[i].length = c.length;
        m_pack[i].am     = false;
        len = uct_ep_put_bcopy(ep, pack_cb, &m_pack[i], rva, rkey);
        return (len < 0) ? (ucs_status_t)len : UCS_OK;
    case PUT_ZCOPY:
        v = iov(src_slot(i), c.length, m_src->memh());
        return uct_ep_put_zcopy(ep, &v, 1, rva, rkey, &c.comp);
    case GET_BCOPY:
        m_unpack[i].dest = src_slot(i);
        return uct_ep_get_bcopy(ep, unpack_cb, &m_unpack[i], c.length,
                                rva, rkey, &c.comp);
    case GET_ZCOPY:
        v = iov(src_slot(i), c.length, m_src->memh());
        return uct_ep_get_zcopy(ep, &v, 1, rva, rkey, &c.comp);
    case ADD:
        return uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, c.operand,
                                    remote(word(c.word)), rkey);
    case FADD:
        return uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, c.operand,
                                     &c.result, remote(word(c.word)),
                                     rkey, &c.comp);
    case CSWAP:
        return uct_ep_atomic_cswap64(ep, c.compare, c.operand,
                                     remote(word(c.word)), rkey,
                                     &c.result, &c.comp);
    case AM_SHORT:
        return uct_ep_am_short(ep, AM_ID, i, src_slot(i), c.length);
    case AM_BCOPY:
        m_pack[i].index  = i;
        m_pack[i].length = c.length;
        m_pack[i].am     = true;
        len = uct_ep_am_bcopy(ep, AM_ID, pack_cb, &m_pack[i], 0);
        return (len < 0) ? (ucs_status_t)len : UCS_OK;
    case AM_ZCOPY:
        v = iov(src_slot(i), c.length, m_src->memh());
        m_am_hdr[i] = i;
        return uct_ep_am_zcopy(ep, AM_ID, &m_am_hdr[i], sizeof(uint64_t),
                               &v, 1, 0, &c.comp);
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}

void test_rc_varuna_fo_base::plan_reset(unsigned num_ops)
{
    m_ops.assign(num_ops, op_ctx());
    m_flush_reqs.clear();
    m_pack.assign(num_ops, pack_arg());
    m_unpack.assign(num_ops, unpack_arg());
    m_am_hdr.assign(num_ops, 0);
    for (unsigned i = 0; i < num_ops; ++i) {
        m_ops[i].test  = this;
        m_ops[i].index = i;
        m_ops[i].slot  = i;
        m_ops[i].lane  = -1;
    }
}

void test_rc_varuna_fo_base::plan(int type, unsigned num_ops)
{
    unsigned cswaps = 0;

    plan_reset(num_ops);
    for (unsigned i = 0; i < num_ops; ++i) {
        op_ctx &c = m_ops[i];

        c.type   = (type == MIXED) ? (int)((i * 5 + 3) % OP_LAST) : type;
        c.length = ((c.type == PUT_SHORT) || (c.type == AM_SHORT)) ?
                   sizeof(uint64_t) : (size_t)LARGE;
        c.word   = (c.type == ADD) ? 0 : (c.type == FADD) ? 1 : 2;
        c.operand = 1;
        if (c.type == CSWAP) {
            c.compare = cswaps;
            c.operand = ++cswaps;
        }
    }
    plan_finish();
}

void test_rc_varuna_fo_base::plan_finish()
{
    uint64_t *words;

    /* as clear_memory() leaves it */
    m_shadow.assign(m_dst->length(), 0);
    for (unsigned i = 0; i < m_num_ops; ++i) {
        fill(&m_shadow[(m_num_ops + i) * SLOT], SLOT, seed(i) ^ 0xabcdef);
    }
    words = (uint64_t*)&m_shadow[m_num_ops * SLOT * 2];

    for (unsigned i = 0; i < m_ops.size(); ++i) {
        op_ctx &c   = m_ops[i];
        uint64_t *w = &words[c.word];

        c.calls  = 0;
        c.status = UCS_OK;
        c.result = UINT64_MAX;
        if (is_put(c.type) || is_am(c.type)) {
            fill(src_slot(i), c.length, seed(i));
        } else if (is_get(c.type)) {
            memset(src_slot(i), 0, c.length);
        }

        switch (c.type) {
        case PUT_SHORT:
        case PUT_BCOPY:
        case PUT_ZCOPY:
            fill(&m_shadow[target(c) - (char*)m_dst->ptr()], c.length,
                 seed(i));
            break;
        case ADD:
            *w += c.operand;
            break;
        case FADD:
            c.expected = *w;
            *w        += c.operand;
            break;
        case CSWAP:
            c.expected = *w;
            if (*w == c.compare) {
                *w = c.operand;
            }
            break;
        default:
            break;
        }
    }
    m_am_rx.clear();
    m_am_bad.clear();
    m_comp_order.clear();
    m_problems.clear();
    memset(&m_found, 0, sizeof(m_found));
}

void test_rc_varuna_fo_base::fail_on_problems(const std::string &what)
{
    for (size_t i = 0; i < m_problems.size(); ++i) {
        ADD_FAILURE() << what << ": " << m_problems[i];
    }
}

void test_rc_varuna_fo_base::plan_reverse(unsigned count)
{
    m_rev.assign(count, rev_op());
    for (unsigned j = 0; j < count; ++j) {
        m_rev[j].type   = (j % 2) ? FADD : AM_SHORT;
        m_rev[j].result = UINT64_MAX;
    }
    m_rev_posted = 0;
    m_rev_am_rx.clear();
    m_rev_word.reset(new mapped_buffer(sizeof(uint64_t), 0, *m_s));
    memset(m_rev_word->ptr(), 0, sizeof(uint64_t));
}

ucs_status_t test_rc_varuna_fo_base::post_reverse_op(unsigned j)
{
    rev_op &op  = m_rev[j];
    uint64_t id = j;

    op.comp.func   = rev_comp_cb;
    op.comp.count  = 1;
    op.comp.status = UCS_OK;
    if (op.type == AM_SHORT) {
        return uct_ep_am_short(m_r->ep(0), AM_ID_REV, id, NULL, 0);
    }
    return uct_ep_atomic64_fetch(m_r->ep(0), UCT_ATOMIC_OP_ADD, 1,
                                 &op.result, m_rev_word->addr(),
                                 m_rev_word->rkey(), &op.comp);
}

bool test_rc_varuna_fo_base::post_reverse(unsigned count, ucs_time_t deadline)
{
    for (; m_rev_posted < std::min<size_t>(count, m_rev.size());
         ++m_rev_posted) {
        rev_op &op = m_rev[m_rev_posted];
        ucs_status_t status;

        do {
            status = post_reverse_op(m_rev_posted);
            if (status == UCS_ERR_NO_RESOURCE) {
                progress();
            }
        } while ((status == UCS_ERR_NO_RESOURCE) &&
                 (ucs_get_time() < deadline));
        if (UCS_STATUS_IS_ERR(status)) {
            problem(G2_COMPLETION, "posting reverse " +
                    std::string(op_name(op.type)) + " #" +
                    ucs::to_string(m_rev_posted) + ": " +
                    ucs_status_string(status));
            return false;
        }
        if ((op.type == AM_SHORT) || (status == UCS_OK)) {
            /* completes on return: no callback will come */
            op.calls++;
            op.status = UCS_OK;
        }
    }
    return true;
}

ucs_status_t test_rc_varuna_fo_base::post_op_noted(unsigned i)
{
    uint32_t psn[UCT_RC_VARUNA_NUM_SIDES];
    uint64_t log_sn[UCT_RC_VARUNA_NUM_SIDES];
    ucs_status_t status;

    for (unsigned l = 0; l < UCT_RC_VARUNA_NUM_SIDES; ++l) {
        psn[l]    = vep(m_s)->lane[l].sq_psn;
        log_sn[l] = vep(m_s)->lane[l].log_sn;
    }
    status = post_op(i);
    for (unsigned l = 0; l < UCT_RC_VARUNA_NUM_SIDES; ++l) {
        if (!UCS_STATUS_IS_ERR(status) &&
            (vep(m_s)->lane[l].sq_psn != psn[l])) {
            note_posted(m_s, l, psn[l], log_sn[l], m_ops[i]);
        }
    }
    return status;
}

bool test_rc_varuna_fo_base::post_all(unsigned first, unsigned last,
                                      ucs_time_t deadline)
{
    for (unsigned i = first; i < last; ++i) {
        ucs_status_t status;
        do {
            status = post_op_noted(i);
            if (status == UCS_ERR_NO_RESOURCE) {
                progress();
            }
        } while ((status == UCS_ERR_NO_RESOURCE) &&
                 (ucs_get_time() < deadline));
        if (UCS_STATUS_IS_ERR(status)) {
            problem(G2_COMPLETION, std::string("posting ") +
                    op_name(m_ops[i].type) + " #" + ucs::to_string(i) +
                    ": " + ucs_status_string(status));
            return false;
        }
        if (!has_comp(m_ops[i].type)) {
            /* completes on return: no callback will come */
            m_ops[i].calls  = 1;
            m_ops[i].status = UCS_OK;
        } else if (status == UCS_OK) {
            m_ops[i].calls++;
            m_ops[i].status = UCS_OK;
        }
        if (!post_reverse(i + 1, deadline)) {
            return false;
        }
    }
    return true;
}

uint32_t test_rc_varuna_fo_base::drop(const port &p, unsigned dir,
                                      unsigned classes, uint64_t skip,
                                      uint32_t qpn)
{
    struct softib_rule rule;

    memset(&rule, 0, sizeof(rule));
    rule.kind    = SOFTIB_RULE_DROP;
    rule.dev     = p.dev.c_str();
    rule.port    = p.num;
    rule.dir     = dir;
    rule.classes = classes;
    rule.qpn     = qpn;
    rule.skip    = skip;
    rule.count   = SOFTIB_FOREVER;
    return m_softib.rule(rule);
}

void test_rc_varuna_fo_base::inject(int f, unsigned k)
{
    m_fault = f;
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

void test_rc_varuna_fo_base::take_down(int f)
{
    if (f == REQ_PORT_DOWN) {
        port p = side_port(m_s, 0);
        m_softib.link(p.dev, p.num, false);
    } else if (f == RESP_PORT_DOWN) {
        port p = side_port(m_r, 0);
        m_softib.link(p.dev, p.num, false);
    }
}

bool test_rc_varuna_fo_base::finish(ucs_time_t deadline)
{
    size_t num_am = 0, num_rev_am = 0;

    for (unsigned i = 0; i < m_ops.size(); ++i) {
        num_am += is_am(m_ops[i].type);
    }
    for (unsigned j = 0; j < m_rev.size(); ++j) {
        num_rev_am += m_rev[j].type == AM_SHORT;
    }

    if (!flush_ep(m_s, "flush", deadline)) {
        return false;
    }
    /* the receiver's records are read from here, in this thread */
    peer_thread_stop();
    if (!m_rev.empty() && (!post_reverse(m_rev.size(), deadline) ||
                           !flush_ep(m_r, "reverse flush", deadline))) {
        return false;
    }

    while (((m_am_rx.size() < num_am) ||
            (m_rev_am_rx.size() < num_rev_am)) &&
           (ucs_get_time() < deadline)) {
        progress();
    }
    /* a duplicate would come right behind */
    short_progress_loop(5);
    return true;
}

void test_rc_varuna_fo_base::note_posted(entity *e, unsigned l,
                                         uint32_t psn_before,
                                         uint64_t log_sn_before, op_ctx &c)
{
    uct_rc_varuna_ep_t *ep = vep(e);

    c.lane       = (int)l;
    c.psn_start  = psn_before;
    c.psn_end    = ep->lane[l].sq_psn;
    c.log_psns   = (ep->lane[l].log_sn != log_sn_before) ? 1 : 0;
    c.sn         = ep->tx.sn;
    c.log_before = uct_rc_varuna_ep_op(ep, ep->tx.sn)->log_before;
}

bool test_rc_varuna_fo_base::flush_ep(entity *e, const std::string &what,
                                      ucs_time_t deadline)
{
    /* outlives this call: a flush that does not complete here is
     * completed, with an error, when the endpoint is destroyed */
    uct_completion_t &comp = m_flush_comp[(e == m_s) ? 0 : 1];
    ucs_status_t status;

    op_ctx flush = op_ctx();
    uint32_t psn[UCT_RC_VARUNA_NUM_SIDES];
    uint64_t log_sn[UCT_RC_VARUNA_NUM_SIDES];

    comp.func   = flush_cb;
    comp.count  = 1;
    comp.status = UCS_OK;
    for (unsigned l = 0; l < UCT_RC_VARUNA_NUM_SIDES; ++l) {
        psn[l]    = vep(e)->lane[l].sq_psn;
        log_sn[l] = vep(e)->lane[l].log_sn;
    }
    do {
        status = uct_ep_flush(e->ep(0), 0, &comp);
        if (status == UCS_ERR_NO_RESOURCE) {
            progress();
        }
    } while ((status == UCS_ERR_NO_RESOURCE) &&
             (ucs_get_time() < deadline));
    /* the sender's flush posts a request of its own, which a failover
     * treats as any operation (verify_resent) */
    for (unsigned l = 0; (e == m_s) && (l < UCT_RC_VARUNA_NUM_SIDES);
         ++l) {
        if (vep(e)->lane[l].sq_psn != psn[l]) {
            note_posted(e, l, psn[l], log_sn[l], flush);
            m_flush_reqs.push_back(flush);
        }
    }
    if (status == UCS_OK) {
        comp.count = 0;
    } else if (status != UCS_INPROGRESS) {
        problem(G2_COMPLETION, what + ": " + ucs_status_string(status));
        return false;
    }
    while ((comp.count > 0) && (ucs_get_time() < deadline)) {
        progress();
    }
    if (comp.count > 0) {
        problem(G2_COMPLETION, what + " did not complete");
        return false;
    }
    if (comp.status != UCS_OK) {
        problem(G2_COMPLETION, what + " completed with " +
                ucs_status_string(comp.status));
    }
    return true;
}

void test_rc_varuna_fo_base::verify_reverse(bool expect_exact, outcome &out)
{
    std::vector<uint64_t> expected_am;
    uint64_t adds = 0;

    for (unsigned j = 0; j < m_rev.size(); ++j) {
        const rev_op &op = m_rev[j];
        std::string tag  = "reverse " + std::string(op_name(op.type)) +
                           " #" + ucs::to_string(j);

        if (op.calls != 1) {
            problem(G2_COMPLETION, tag + ": " + ucs::to_string(op.calls) +
                    " completions");
        }
        if (op.type == AM_SHORT) {
            expected_am.push_back(j);
            continue;
        }
        if (op.status == UCT_RC_VARUNA_STATUS_RESULT_LOST) {
            ++out.results_lost;
        } else if (op.status != UCS_OK) {
            problem(G2_COMPLETION, tag + ": " +
                    ucs_status_string(op.status));
        } else if (op.result != adds) {
            if (expect_exact) {
                problem(G3_RESULT, tag + ": result " +
                        ucs::to_string(op.result) + ", expected " +
                        ucs::to_string(adds));
            } else {
                ++out.duplicates;
            }
        }
        ++adds;
    }

    if (*(uint64_t*)m_rev_word->ptr() != adds) {
        if (!expect_exact && (*(uint64_t*)m_rev_word->ptr() > adds)) {
            out.duplicates += *(uint64_t*)m_rev_word->ptr() - adds;
        } else {
            problem(G1_ONCE, "reverse fetch-add word is " +
                    ucs::to_string(*(uint64_t*)m_rev_word->ptr()) +
                    " after " + ucs::to_string(adds) + " adds");
        }
    }
    if (m_rev_am_rx != expected_am) {
        if (!expect_exact && (m_rev_am_rx.size() > expected_am.size())) {
            out.duplicates += m_rev_am_rx.size() - expected_am.size();
        } else {
            problem(G1_ONCE, "reverse active messages: " +
                    ucs::to_string(m_rev_am_rx.size()) + " arrived of " +
                    ucs::to_string(expected_am.size()) +
                    ", or out of order");
        }
    }
}

void
test_rc_varuna_fo_base::verify_completions(bool expect_exact, outcome &out)
{
    for (unsigned i = 0; i < m_ops.size(); ++i) {
        op_ctx &c = m_ops[i];
        std::string tag = std::string(op_name(c.type)) + " #" +
                          ucs::to_string(i);

        if (c.calls != 1) {
            problem(G2_COMPLETION, tag + ": " + ucs::to_string(c.calls) +
                    " completions");
        }
        if ((c.type == FADD) || (c.type == CSWAP)) {
            if (c.status == UCT_RC_VARUNA_STATUS_RESULT_LOST) {
                ++out.results_lost;
            } else if (c.status != UCS_OK) {
                problem(G2_COMPLETION, tag + ": " +
                        ucs_status_string(c.status));
            } else if (c.result != c.expected) {
                if (expect_exact) {
                    problem(G3_RESULT, tag + ": result " +
                            ucs::to_string(c.result) + ", expected " +
                            ucs::to_string(c.expected));
                } else {
                    ++out.duplicates;
                }
            }
        } else if (c.status != UCS_OK) {
            problem(G2_COMPLETION, tag + ": " +
                    ucs_status_string(c.status));
        }

        if (is_get(c.type) &&
            memcmp(src_slot(i), &m_shadow[target(c) - (char*)m_dst->ptr()],
                   c.length)) {
            problem(G3_RESULT, tag + ": wrong data read");
        }
    }

    /* RC completes an endpoint's operations in order */
    for (size_t n = 1; n < m_comp_order.size(); ++n) {
        if (m_comp_order[n] <= m_comp_order[n - 1]) {
            problem(G2_COMPLETION, "completion of #" +
                    ucs::to_string(m_comp_order[n]) + " after #" +
                    ucs::to_string(m_comp_order[n - 1]));
            break;
        }
    }
}

void test_rc_varuna_fo_base::verify_memory(bool expect_exact, outcome &out)
{
    const char *mem   = (const char*)m_dst->ptr();
    const uint64_t *w = (const uint64_t*)&m_shadow[m_num_ops * SLOT * 2];

    for (unsigned s = 0; s < 2 * m_num_ops; ++s) {
        size_t off = (size_t)s * SLOT;
        if (memcmp(mem + off, &m_shadow[off], SLOT)) {
            size_t b = 0;
            while (mem[off + b] == m_shadow[off + b]) {
                ++b;
            }
            problem(G1_ONCE, std::string((s < m_num_ops) ? "put" : "get") +
                    " slot " + ucs::to_string(s % m_num_ops) +
                    " differs from byte " + ucs::to_string(b) +
                    " (written by" + writers(s, b) + ")");
        }
    }

    for (unsigned i = 0; i < NUM_WORDS; ++i) {
        if (*word(i) == w[i]) {
            continue;
        }
        if (!expect_exact && (*word(i) > w[i])) {
            /* adds of 1 tell how many ran again; else at least one */
            out.duplicates += only_ones(i) ? (*word(i) - w[i]) : 1;
        } else if (expect_exact || !only_cswaps(i)) {
            problem(G1_ONCE, "atomic word " + ucs::to_string(i) + " is " +
                    ucs::to_string(*word(i)) + ", expected " +
                    ucs::to_string(w[i]));
        }
    }
}

std::string test_rc_varuna_fo_base::writers(unsigned s, size_t b) const
{
    std::string list;

    for (unsigned i = 0; i < m_ops.size(); ++i) {
        const op_ctx &c = m_ops[i];
        if (is_put(c.type) && (c.slot == s) && (c.offset <= b) &&
            (b < c.offset + c.length)) {
            list += " #" + ucs::to_string(i);
        }
    }
    return list.empty() ? " nothing" : list;
}

bool test_rc_varuna_fo_base::only_ones(unsigned w) const
{
    for (unsigned i = 0; i < m_ops.size(); ++i) {
        if (((m_ops[i].type == ADD) || (m_ops[i].type == FADD)) &&
            (m_ops[i].word == w) && (m_ops[i].operand != 1)) {
            return false;
        }
    }
    return true;
}

bool test_rc_varuna_fo_base::only_cswaps(unsigned w) const
{
    for (unsigned i = 0; i < m_ops.size(); ++i) {
        if (is_atomic(m_ops[i].type) && (m_ops[i].word == w) &&
            (m_ops[i].type != CSWAP)) {
            return false;
        }
    }
    return true;
}

void test_rc_varuna_fo_base::verify_am(bool expect_exact, outcome &out)
{
    std::vector<uint64_t> expected_am;

    for (unsigned i = 0; i < m_ops.size(); ++i) {
        if (is_am(m_ops[i].type)) {
            expected_am.push_back(i);
        }
    }
    for (size_t n = 0; n < m_am_bad.size(); ++n) {
        problem(G1_ONCE, "AM #" + ucs::to_string(m_am_bad[n]) +
                " arrived with a wrong payload");
    }
    if (expect_exact) {
        if (expected_am != m_am_rx) {
            std::string got;
            for (size_t n = 0; n < m_am_rx.size(); ++n) {
                got += " " + ucs::to_string(m_am_rx[n]);
            }
            problem(G1_ONCE, "active messages arrived as" + got + " (" +
                    ucs::to_string(expected_am.size()) + " sent)");
        }
    } else {
        std::set<uint64_t> seen(m_am_rx.begin(), m_am_rx.end());
        if (expected_am.size() != seen.size()) {
            problem(G1_ONCE, "an AM was lost");
        }
        out.duplicates += m_am_rx.size() - seen.size();
    }
}

unsigned test_rc_varuna_fo_base::op_wrs(entity *e)
{
    uct_rc_varuna_ep_t *ep = vep(e);
    unsigned wrs           = 0;

    for (uint64_t sn = ep->tx.done_sn + 1; sn <= ep->tx.sn; ++sn) {
        wrs += uct_rc_varuna_ep_op(ep, sn)->num_wr;
    }
    return wrs;
}

void test_rc_varuna_fo_base::verify_credits(entity *e, int side,
                                            const char *who)
{
    uct_rc_varuna_iface_t *iface = viface(e);
    uct_rc_varuna_ep_t *ep       = vep(e);
    ucs_time_t deadline          = ucs_get_time() +
                                   ucs_time_from_sec(2);
    int credits, ctrl, cq_ok, ep_ok, limit;

    /* the send credits follow the queue of the lane that carries the
     * traffic (the standby's is shorter by default, until a grow gives
     * that lane a full one); credits of a longer queue left behind are
     * all retired once idle */
    do {
        limit   = ep->lane[ep->active].max_wr;
        credits = uct_rc_txqp_available(&ep->super.txqp);
        ctrl    = ep->ctrl.inflight[0] + ep->ctrl.inflight[1];
        ep_ok   = ((credits + (int)op_wrs(e)) == limit) &&
                  (ep->tx.wr_owned == limit) &&
                  (ep->tx.wr_limit == limit);
        cq_ok   = (iface->super.tx.cq_available + (int)op_wrs(e) +
                   ctrl) == m_cq_avail[side];
        if ((ep->fo.state == UCT_RC_VARUNA_FO_IDLE) && ep_ok && cq_ok) {
            return;
        }
        progress();
    } while (ucs_get_time() < deadline);

    if (!ep_ok) {
        problem(G2_COMPLETION, std::string(who) + ": send credits " +
                ucs::to_string(credits) + " + work requests posted " +
                ucs::to_string(op_wrs(e)) + " (in circulation " +
                ucs::to_string(ep->tx.wr_owned) + ", limit " +
                ucs::to_string(ep->tx.wr_limit) + ") != " +
                ucs::to_string(limit) + ", lane " +
                ucs::to_string((int)ep->active) + "'s share");
    }
    if (!cq_ok) {
        problem(G2_COMPLETION, std::string(who) + ": CQ credits " +
                ucs::to_string(iface->super.tx.cq_available) +
                " + work requests posted " +
                ucs::to_string(op_wrs(e) + ctrl) + " != " +
                ucs::to_string(m_cq_avail[side]));
    }
}

bool test_rc_varuna_fo_base::lost_on_primary(const op_ctx &c, uint32_t rq_psn)
{
    /* the PSN after the request's own packets (its log write, if any,
     * follows): executed iff the receiver expects that or a later one */
    uint32_t next = (c.psn_end - c.log_psns) & UCT_RC_VARUNA_PSN_MASK;

    return (c.lane == 0) &&
           (((rq_psn - next) & UCT_RC_VARUNA_PSN_MASK) >= UCS_BIT(23));
}

bool test_rc_varuna_fo_base::one_primary_failover_with_psn() const
{
    const uct_rc_varuna_report_t &rep = vep(m_s)->fo.report;

    return (m_fault >= 0) && (viface(m_s)->fo.failovers == 1) &&
           (m_ep_errors == 0) && (rep.failed_lane == 0) &&
           rep.learned.psn_valid;
}

void test_rc_varuna_fo_base::verify_resent()
{
    const uct_rc_varuna_report_t &rep = vep(m_s)->fo.report;
    unsigned lost = 0, idempotent_executed = 0, sent_again;

    if (!one_primary_failover_with_psn()) {
        return;
    }

    for (unsigned i = 0; i < m_ops.size(); ++i) {
        const op_ctx &c = m_ops[i];

        if (lost_on_primary(c, rep.learned.rq_psn)) {
            ++lost;
        } else if ((c.lane == 0) && (is_get(c.type) || is_am(c.type)) &&
                   rep.learned.log_valid &&
                   (c.sn > rep.learned.log_sn) &&
                   (c.log_before <= rep.learned.log_sn)) {
            /* executed, and no log write the log holds is behind it */
            ++idempotent_executed;
        }
    }
    for (unsigned i = 0; i < m_flush_reqs.size(); ++i) {
        lost += lost_on_primary(m_flush_reqs[i], rep.learned.rq_psn);
    }
    /* every lost request is sent again and nothing executed is, but
     * the READs and SENDs the log leaves open (after the last log write
     * that reached the peer; one with a log write behind every
     * operation): sent again rather than decided by the PSN (DESIGN.md
     * section 5.3: read again, or dropped by the receiver as a
     * duplicate, which verify_am checks) */
    ++m_resent_checked;
    sent_again = rep.resent_ops - std::min(rep.resent_ops, rep.reread);
    if ((rep.resent_ops < rep.reread) || (sent_again < lost) ||
        (sent_again > lost + idempotent_executed)) {
        problem(G1_ONCE, "sent again " + ucs::to_string(rep.resent_ops) +
                " operations (" + ucs::to_string(rep.reread) +
                " executed READs read again among them); the receiver "
                "had not executed " + ucs::to_string(lost) + " (and " +
                ucs::to_string(idempotent_executed) + " READs or SENDs "
                "it had executed were on the failed lane)");
    }
}

void test_rc_varuna_fo_base::verify_results_lost(const outcome &out)
{
    const uct_rc_varuna_report_t &rep = vep(m_s)->fo.report;

    if ((out.results_lost == 0) || !one_primary_failover_with_psn()) {
        return;
    }
    ++m_results_lost_checked;
    for (unsigned i = 0; i < m_ops.size(); ++i) {
        const op_ctx &c = m_ops[i];

        if (((c.type != FADD) && (c.type != CSWAP)) ||
            (c.status != UCT_RC_VARUNA_STATUS_RESULT_LOST)) {
            continue;
        }
        if (c.lane != 0) {
            problem(G3_RESULT, std::string(op_name(c.type)) + " #" +
                    ucs::to_string(i) + ": result given up, sent on "
                    "lane " + ucs::to_string(c.lane));
        } else if (lost_on_primary(c, rep.learned.rq_psn)) {
            problem(G3_RESULT, std::string(op_name(c.type)) + " #" +
                    ucs::to_string(i) + ": result given up, but the "
                    "receiver never executed it (to send again)");
        }
    }
}

test_rc_varuna_fo_base::outcome
test_rc_varuna_fo_base::verify(bool expect_exact)
{
    outcome out;

    memset(&out, 0, sizeof(out));
    verify_completions(expect_exact, out);
    verify_memory(expect_exact, out);
    verify_am(expect_exact, out);
    if (!m_rev.empty()) {
        verify_reverse(expect_exact, out);
    }

    if (m_ep_errors != 0) {
        problem(G2_COMPLETION, "the endpoint failed");
    } else {
        verify_credits(m_s, 0, "sender");
        verify_credits(m_r, 1, "receiver");
    }
    /* the QPs made after a failover, off its path: by a grow (the full
     * send queue during an outage, design.md 5.9) */
    unsigned long off_path[2] = {viface(m_s)->fo.grow_qps,
                                 viface(m_r)->fo.grow_qps};
    if ((m_qp_created[0] + off_path[0] != viface(m_s)->fo.qp_created) ||
        (m_qp_created[1] + off_path[1] != viface(m_r)->fo.qp_created) ||
        (m_qp_conn[0] != viface(m_s)->fo.qp_connected) ||
        (m_qp_conn[1] != viface(m_r)->fo.qp_connected)) {
        problem(G4_NO_REBUILD, "a QP was created or connected");
    }
    /* and as softib counts them: no QP created by any path but those; a
     * QP connected (taken to RTR) only by re-protection, after the
     * failover, when the failed lane's port works (a drop): each
     * attempt connects the peer's lane and, once acknowledged, the
     * initiator's; and by a grow, each of its QPs once */
    int64_t sib_created   = m_softib.counter(NULL, "qp_created") -
                            m_sib_qp_created;
    int64_t sib_connected = m_softib.counter(NULL, "qp_connected") -
                            m_sib_qp_connected;
    int64_t rp_attempts   = vep(m_s)->rp.attempt +
                            vep(m_r)->rp.attempt;
    sib_created   -= off_path[0] + off_path[1];
    sib_connected -= viface(m_s)->fo.grow_qps + viface(m_r)->fo.grow_qps;
    if (sib_created != 0) {
        problem(G4_NO_REBUILD, "softib counted " +
                ucs::to_string(sib_created) + " QPs created");
    }
    if (sib_connected > 2 * rp_attempts) {
        problem(G4_NO_REBUILD, "softib counted " +
                ucs::to_string(sib_connected) + " QP connections, " +
                ucs::to_string(rp_attempts) +
                " re-protection attempts");
    }
    if (expect_exact) {
        verify_resent();
        verify_results_lost(out);
    }
    /* read as a user reads it; it must say what the transport did */
    out.failovers = (unsigned)vfs_counter(m_s, "failovers");
    if ((long)out.failovers != (long)viface(m_s)->fo.failovers) {
        problem(G2_COMPLETION, "the VFS counter says " +
                ucs::to_string((long)out.failovers) + " failovers, " +
                ucs::to_string(viface(m_s)->fo.failovers) +
                " happened");
    }
    for (int g = 0; g < G_LAST; ++g) {
        out.violations[g] = m_found.violations[g];
    }
    return out;
}
